/* fault: a module that misbehaves on request, for the protection tests.
 * Request byte: 'o' ok (completes "ok"), 'n' writes through a null
 * pointer (SIGSEGV), 'd' divides by zero (SIGFPE), 'i' executes an
 * illegal instruction (SIGILL), 'l' loops forever (time budget), 'w'
 * completes after a 200 ms timer (slow, for requests left in flight). */
#include "knit/module.h"

static const knit_mod_services_t *K;

static int32_t fault_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    (void)m;
    K = svc;
    return KNIT_MOD_OK;
}

static void fault_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    char op = req->len ? *(const char *)args : 'o';
    switch (op) {
    case 'n': {
        volatile int *volatile p = 0;
        *p = 42;
        break;
    }
    case 'd': {
        volatile int zero = 0, x = 7;
        x = x / zero;
        (void)x;
        break;
    }
    case 'i':
        __builtin_trap();
        break;
    case 'l':
        for (volatile unsigned long i = 0;; i++)
            ;
    case 'w':
        K->timer(m, 200000000ull, req->token);
        return;
    }
    K->complete(m, req->token, KNIT_MOD_OK, "ok", 3);
}

static void fault_timer(knit_mod_ctx_t *m, uint64_t token)
{
    K->complete(m, token, KNIT_MOD_OK, "late", 5);
}

static const knit_mod_descriptor_t fault = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "fault",
    .init = fault_init,
    .on_request = fault_request,
    .on_timer = fault_timer,
};

KNIT_MODULE(fault)
