/* abi1: echo, as a module built for ABI 1 (before the tree of switches)
 * declares itself: it must load and answer at every placement, on a star
 * and on a tree (tests/job/test_offload.sh). */
#include "knit/module.h"

static const knit_mod_services_t *K;

static int32_t abi1_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    (void)m;
    K = svc;
    return KNIT_MOD_OK;
}

static void abi1_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    K->complete(m, req->token, KNIT_MOD_OK, args, req->len);
}

static const knit_mod_descriptor_t abi1 = {
    .abi_version = 1,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "abi1",
    .init = abi1_init,
    .on_request = abi1_request,
};

KNIT_MODULE(abi1)
