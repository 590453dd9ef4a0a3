/* A module whose constructor takes the fault signals back to their
 * default handling and raises SIGSEGV: where it runs, later faults of
 * other modules must still be contained (tests/job/test_hostile.sh). */
#include <signal.h>

#include "knit/module.h"

__attribute__((constructor)) static void grab(void)
{
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    raise(SIGSEGV);
}

static int32_t init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    (void)m, (void)svc;
    return KNIT_MOD_OK;
}

static void request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    (void)m, (void)req, (void)args;
}

static const knit_mod_descriptor_t desc = {
    .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(desc), .name = "ctor_signal",
    .init = init, .on_request = request,
};
KNIT_MODULE(desc)
