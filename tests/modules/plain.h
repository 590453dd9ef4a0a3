/* The rest of a test module whose point is elsewhere (a constructor, say):
 * an init that accepts and a request handler that does nothing.
 *   PLAIN_MODULE("name") */
#ifndef KN_TESTS_MODULES_PLAIN_H
#define KN_TESTS_MODULES_PLAIN_H

#include "knit/module.h"

static int32_t plain_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    (void)m, (void)svc;
    return KNIT_MOD_OK;
}

static void plain_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    (void)m, (void)req, (void)args;
}

#define PLAIN_MODULE(nm)                                                                        \
    static const knit_mod_descriptor_t plain_desc = {                                          \
        .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(plain_desc), .name = (nm),         \
        .init = plain_init, .on_request = plain_request,                                       \
    };                                                                                         \
    KNIT_MODULE(plain_desc)

#endif
