/*
 * The cost model behind KNIT_RMA_AUTO (docs/rma.md, "Choosing a method"),
 * measured in this process the first time it is needed (about 2 ms):
 *   ts_cma  one cross-memory-attach call (the per-block cost of every
 *           method that walks blocks: the rank's direct copies within a
 *           node, the agents' reads and writes)
 *   tn_cma  its cost per byte
 *   tm      memcpy per byte (packing)
 * Within a node the direct method moves up to 1024 blocks a call
 * (process_vm_writev with both sides' pieces): no other method does
 * fewer calls or copies, so auto takes it.  Between nodes the agents
 * carry the data (the direct method would need the target's progress
 * with a manual-progress provider): the agent method reads each origin
 * block with one call, the pack method packs them (memcpy) and the agent
 * reads one buffer; the target agent writes the blocks either way, so
 *   T_agent - T_pack = (k - 1) * ts_cma - N * tm
 * and auto packs when that is positive.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rma/rma.h"
#include "util/time.h"

static kn_rma_model_t M;
static int measured;

static double per_call(size_t len, int reps, char *a, char *b)
{
    struct iovec l = {a, len}, r = {b, len};
    pid_t me = getpid();
    double best = 1e18;
    for (int t = 0; t < 3; t++) {
        uint64_t t0 = kn_time_ns();
        for (int i = 0; i < reps; i++)
            if (process_vm_readv(me, &l, 1, &r, 1, 0) < 0)
                return 0;
        double d = (double)(kn_time_ns() - t0) / reps;
        if (d < best)
            best = d;
    }
    return best;
}

static void measure(void)
{
    const size_t big = 1u << 20;
    char *a = malloc(big), *b = malloc(big);
    if (!a || !b) {
        free(a);
        free(b);
        M.ts_cma = 500, M.tn_cma = 0.1, M.tm = 0.1; /* no memory to measure with: typical values */
        measured = 1;
        return;
    }
    memset(a, 1, big);
    memset(b, 2, big);
    M.ts_cma = per_call(8, 200, a, b);
    double t_big = per_call(big, 4, a, b);
    M.tn_cma = t_big > M.ts_cma ? (t_big - M.ts_cma) / (double)big : 0;
    double best = 1e18;
    for (int t = 0; t < 3; t++) {
        uint64_t t0 = kn_time_ns();
        memcpy(a, b, big);
        __asm__ volatile("" ::"r"(a) : "memory");
        double d = (double)(kn_time_ns() - t0);
        if (d < best)
            best = d;
    }
    M.tm = best / (double)big;
    free(a);
    free(b);
    measured = 1;
}

const kn_rma_model_t *kn_rma_model(void)
{
    if (!measured)
        measure();
    return &M;
}

unsigned kn_rma_auto(int same_node, size_t bsize, size_t nblocks)
{
    if (same_node)
        return KNIT_RMA_DIRECT;
    const kn_rma_model_t *m = kn_rma_model();
    double n = (double)bsize * (double)nblocks;
    return nblocks > 1 && (double)(nblocks - 1) * m->ts_cma > n * m->tm ? KNIT_RMA_PACK : KNIT_RMA_AGENT;
}
