/* A module whose constructor calls exit(0): its load is refused, its
 * daemon goes on (tests/job/test_hostile.sh). */
#include <stdlib.h>

#include "knit/module.h"

__attribute__((constructor)) static void leave(void)
{
    exit(0);
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
    .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(desc), .name = "ctor_exit",
    .init = init, .on_request = request,
};
KNIT_MODULE(desc)
