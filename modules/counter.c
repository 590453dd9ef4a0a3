/* counter: a 64-bit counter kept in the instance (one per agent, so the
 * ranks of a node share it).  Request: an int64 to add (8 bytes), or
 * nothing to read it; result: the value after the request (8 bytes). */
#include "knit/module.h"

static const knit_mod_services_t *K;

static int32_t counter_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    K = svc;
    int64_t *value = K->alloc(m, sizeof(*value)); /* zeroed */
    if (!value)
        return KNIT_MOD_ERR_NOMEM;
    K->set_state(m, value);
    return KNIT_MOD_OK;
}

static void counter_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    int64_t *value = K->state(m);
    if (req->len == sizeof(int64_t)) {
        int64_t delta;
        __builtin_memcpy(&delta, args, sizeof(delta));
        *value += delta;
    } else if (req->len != 0) {
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, 0, 0);
        return;
    }
    K->complete(m, req->token, KNIT_MOD_OK, value, sizeof(*value));
}

static const knit_mod_descriptor_t counter = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "counter",
    .init = counter_init,
    .on_request = counter_request,
};

KNIT_MODULE(counter)
