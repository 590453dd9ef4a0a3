/* bad_init: init refuses (a load test: the load fails everywhere with
 * the status, and nothing of it stays loaded). */
#include "knit/module.h"

static int32_t bad_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    const knit_mod_geometry_t *g = svc->geometry(m);
    /* refuse in the last agent only: the others must unload again */
    return g->self == g->nnodes - 1 ? KNIT_MOD_ERR_NOT_SUPPORTED : KNIT_MOD_OK;
}

static void bad_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    (void)m, (void)req, (void)args;
}

static const knit_mod_descriptor_t bad = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "bad_init",
    .init = bad_init,
    .on_request = bad_request,
};

KNIT_MODULE(bad)
