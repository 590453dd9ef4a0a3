/* bad_abi: claims an ABI version this knit does not have (a load test:
 * it must be refused, naming the version). */
#include "knit/module.h"

static int32_t bad_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    (void)m, (void)svc;
    return KNIT_MOD_OK;
}

static void bad_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    (void)m, (void)req, (void)args;
}

static const knit_mod_descriptor_t bad = {
    .abi_version = 99,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "bad_abi",
    .init = bad_init,
    .on_request = bad_request,
};

KNIT_MODULE(bad)
