/*
 * The agents' one-sided module (modules/builtin/rma.c): requests from
 * ranks and messages from other agents may say anything.  The module is
 * compiled in here and run by a stand-in for the agent: node 0 of 2, ranks
 * 0 and 1 local (each with 64 KiB of memory the stand-in reads and writes
 * with bounds checks), ranks 2 and 3 on node 1.  The input is a script:
 *   0  a request from local rank (u8 % 2): args of u16 bytes
 *   1  a message from agent (u8 % 2, or the switch): u16 bytes
 *   2  deliver what the module sent to itself (node 0), oldest first
 * Properties: the module reaches rank memory only inside it and only for
 * local ranks (a stand-in that would fault says so); it completes every
 * token at most once, and only tokens it was given; it frees only what it
 * allocated.
 */
#include "fuzz.h"

#include "../../modules/builtin/rma.c"
#include "standin.h"

#define MEM (64u << 10)
#define BASE 0x10000000ull

static struct {
    uint8_t mem[2][MEM];
    void *blocks[4096];
    int nblocks;
} Z;

static const knit_mod_geometry_t G = {.size = sizeof(G), .module_id = 1, .nranks = 4, .nnodes = 2, .self = 0,
                                      .self_kind = KNIT_MOD_AT_AGENT, .placement = KNIT_MOD_AT_AGENT,
                                      .first_local = 0, .local_size = 2, .nswitches = 1, .fanin = 32};

static const knit_mod_geometry_t *z_geometry(knit_mod_ctx_t *m)
{
    (void)m;
    return &G;
}

static int32_t z_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    (void)m;
    KN_FUZZ_CHECK(dest >= 0 && dest < 2); /* the module talks to agents only */
    KN_FUZZ_CHECK(len <= (64u << 20)); /* a daemon message at most */
    if (dest == 0) /* (node 1's: gone) */
        z_queue(msg, len, NULL, 0);
    return KNIT_MOD_OK;
}

/* a rank's memory: where the agent's cross-memory attach would fail, RANGE */
static uint8_t *at(int32_t rank, uint64_t addr, uint64_t len)
{
    KN_FUZZ_CHECK(rank == 0 || rank == 1); /* local ranks only */
    if (addr < BASE || len > MEM || addr - BASE > MEM - len)
        return NULL;
    return Z.mem[rank] + (addr - BASE);
}

static int32_t z_read(knit_mod_ctx_t *m, int32_t rank, void *dst, uint64_t addr, uint64_t len)
{
    (void)m;
    uint8_t *p = at(rank, addr, len);
    if (!p)
        return KNIT_MOD_ERR_RANGE;
    memcpy(dst, p, len);
    return KNIT_MOD_OK;
}

static int32_t z_write(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, const void *src, uint64_t len)
{
    (void)m;
    uint8_t *p = at(rank, addr, len);
    if (!p)
        return KNIT_MOD_ERR_RANGE;
    memcpy(p, src, len);
    return KNIT_MOD_OK;
}

static int32_t z_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *result, uint64_t len)
{
    (void)m, (void)status, (void)result;
    KN_FUZZ_CHECK(token < MAXTOK && zs.done[token] == 1); /* given, not completed yet */
    KN_FUZZ_CHECK(len <= 8);
    zs.done[token] = 2;
    return KNIT_MOD_OK;
}

static void *z_alloc(knit_mod_ctx_t *m, uint64_t size)
{
    (void)m;
    if (size > (64u << 20) || Z.nblocks == (int)(sizeof(Z.blocks) / sizeof(Z.blocks[0])))
        return NULL;
    void *p = calloc(1, size ? size : 1);
    if (p)
        Z.blocks[Z.nblocks++] = p;
    return p;
}

static void z_free(knit_mod_ctx_t *m, void *p)
{
    (void)m;
    if (!p)
        return;
    for (int i = 0; i < Z.nblocks; i++)
        if (Z.blocks[i] == p) {
            free(p);
            Z.blocks[i] = Z.blocks[--Z.nblocks];
            return;
        }
    KN_FUZZ_CHECK(!"freed a block it did not allocate");
}

static const knit_mod_services_t S_ = {
    .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(S_), .geometry = z_geometry, .send = z_send,
    .read_rank = z_read, .write_rank = z_write, .complete = z_complete, .alloc = z_alloc, .free = z_free,
    .set_state = z_set_state, .state = z_state, .log = z_log,
};

static int32_t from_agent_or_switch(int i)
{
    return i == 2 ? KNIT_MOD_SWITCH : i;
}

KN_FUZZ_TARGET(rmamod)
{
    kn_fz_t f = {data, size};
    memset(&Z, 0, sizeof(Z));
    memset(&zs, 0, sizeof(zs));
    knit_mod_ctx_t *m = (knit_mod_ctx_t *)&Z; /* opaque to the module */
    KN_FUZZ_CHECK(rma_init(m, &S_) == KNIT_MOD_OK);
    z_script(&f, m, rma_request, rma_message, 3, from_agent_or_switch);
    while (Z.nblocks)
        z_free(m, Z.blocks[0]);
    return 0;
}
