/* echo: completes every request with its own arguments.  The smallest
 * module there is (docs/modules.md walks through it). */
#include "knit/module.h"

static const knit_mod_services_t *K;

static int32_t echo_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    (void)m;
    K = svc;
    return KNIT_MOD_OK;
}

static void echo_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    K->complete(m, req->token, KNIT_MOD_OK, args, req->len);
}

static const knit_mod_descriptor_t echo = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "echo",
    .init = echo_init,
    .on_request = echo_request,
};

KNIT_MODULE(echo)
