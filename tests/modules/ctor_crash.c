/* A module whose constructor writes through a null pointer: its load is
 * refused, nothing else happens (tests/job/test_hostile.sh). */
#include "knit/module.h"

__attribute__((constructor)) static void boom(void)
{
    volatile int *volatile p = 0;
    *p = 1;
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
    .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(desc), .name = "ctor_crash",
    .init = init, .on_request = request,
};
KNIT_MODULE(desc)
