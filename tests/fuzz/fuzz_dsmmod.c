/*
 * The agents' dsm module (modules/builtin/dsm.c, dsm_lockmgr.c): requests
 * from ranks and messages from other agents may say anything.  The module
 * is compiled in here and run by a stand-in for node 0's agent of 3 nodes
 * (ranks 0 and 1 local), its replica 16 pages of memory here.  The input
 * starts with the protocol (u8 % 2: update, invalidate) and the home
 * block (u8 % 4 + 1 pages), then standin.h's script (messages from agents
 * 0-2).
 * Properties: the module reads and writes only inside its replica (the
 * sanitizers watch), sends only to agents and completes each token of a
 * request at most once (a token named by a message from another agent is
 * refused, as the daemon refuses it); at fini it frees what it holds.
 */
#include "fuzz.h"

/* (the module's exported names, beside the other targets' in one program) */
#define knit_module kn_fuzz_dsm_module
#define K kn_fuzz_dsm_services
#include "../../modules/builtin/dsm.c"
#include "../../modules/builtin/dsm_lockmgr.c"
#include "standin.h"

#define PAGES 16u

static const knit_mod_geometry_t G = {.size = sizeof(G), .module_id = 1, .nranks = 6, .nnodes = 3, .self = 0,
                                      .self_kind = KNIT_MOD_AT_AGENT, .placement = KNIT_MOD_AT_AGENT,
                                      .first_local = 0, .local_size = 2, .nswitches = 1, .fanin = 32};

static const knit_mod_geometry_t *z_geometry(knit_mod_ctx_t *m)
{
    (void)m;
    return &G;
}

static int32_t z_send_hdr(knit_mod_ctx_t *m, int32_t dest, const void *hdr, uint64_t hlen, const void *payload,
                          uint64_t plen)
{
    (void)m;
    KN_FUZZ_CHECK(dest >= 0 && dest < 3); /* the module talks to agents only */
    KN_FUZZ_CHECK(hlen + plen <= (64u << 20));
    if (dest == 0) /* (another node's: gone) */
        z_queue(hdr, hlen, payload, plen);
    return KNIT_MOD_OK;
}

static int32_t z_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    return z_send_hdr(m, dest, NULL, 0, msg, len);
}

static int32_t z_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *result, uint64_t len)
{
    (void)m, (void)status;
    KN_FUZZ_CHECK(len <= (64u << 20) && (!len || result));
    if (token >= MAXTOK || zs.done[token] != 1)
        return KNIT_MOD_ERR_NOT_FOUND; /* the daemon's answer to a token it does not hold */
    zs.done[token] = 2;
    return KNIT_MOD_OK;
}

static const knit_mod_services_t S_ = {
    .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(S_), .geometry = z_geometry, .send = z_send,
    .complete = z_complete, .set_state = z_set_state, .state = z_state, .log = z_log, .send_hdr = z_send_hdr,
};

static int32_t any_agent(int i)
{
    return i;
}

KN_FUZZ_TARGET(dsmmod)
{
    kn_fz_t f = {data, size};
    memset(&zs, 0, sizeof(zs));
    knit_mod_ctx_t *m = (knit_mod_ctx_t *)&zs; /* opaque to the module */
    KN_FUZZ_CHECK(dsm_init(m, &S_) == KNIT_MOD_OK);
    /* the replica, as the node's lowest rank makes it */
    uint64_t bytes = PAGES * KN_DSM_PAGE, mlen = kn_dsm_meta_bytes(PAGES);
    char *rdata = calloc(1, bytes), *rtwin = calloc(1, bytes);
    kn_dsm_meta_t *meta = calloc(1, mlen);
    KN_FUZZ_CHECK(rdata && rtwin && meta);
    meta->magic = KN_DSM_MAGIC;
    meta->size = bytes;
    meta->npages = PAGES;
    kn_dsm_init_t in = {.size = bytes, .window = 64u << 10, .frame = 8192, .protocol = kn_fz_u8(&f) % 2,
                        .home_pages = kn_fz_u8(&f) % 4 + 1, .migrate = 1};
    KN_FUZZ_CHECK(replica_setup(S(m), &in, rdata, rtwin, meta) == KNIT_MOD_OK);
    z_script(&f, m, dsm_request, dsm_message, 3, any_agent);
    state_t *s = S(m);
    s->data = s->twin = NULL; /* (ours: not the module's to unmap) */
    s->meta = NULL;
    dsm_fini(m);
    free(rdata);
    free(rtwin);
    free(meta);
    return 0;
}
