/*
 * The cost model behind KNIT_RMA_AUTO (docs/rma.md, "Choosing a method"),
 * measured in this process the first time it is needed (about 2 ms):
 *   ts_cma  one cross-memory-attach call: what a block costs where it
 *           must be reached that way
 *   tn_cma  cross-memory attach per byte
 *   ts_cp   one small memcpy (a block in memory mapped here: the peer's
 *           or the rank's shared heap, which the agents map too)
 *   tm      memcpy per byte
 * Within a node the direct method moves a window in the peer's shared
 * heap with plain copies and anything else with up to 1024 blocks a
 * call: no other method does fewer calls or copies, so auto takes it.
 * Between nodes the agents carry the data (the direct method would need
 * the target's progress with a manual-progress provider); the target's
 * agent writes the blocks either way, so the two differ at the origin:
 *   agent   its agent reads the k blocks:   k * c + N * n
 *   pack    the rank packs them, its agent reads one buffer:
 *           k * ts_cp + N * tm + c + N * n
 * with c, n = ts_cp, tm for an origin buffer in the rank's shared heap,
 * ts_cma, tn_cma otherwise; auto takes the cheaper (agent on a tie: the
 * rank is free at once).
 *
 * The measurements are kept per host in a small text file
 * (KNIT_RMA_MODEL_CACHE): a process reads them instead of measuring;
 * knit-info --rma measures again and rewrites the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rma/rma.h"
#include "util/config.h"
#include "util/log.h"
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
    /* small copies, one call each (8 bytes, strided as a block walk is) */
    best = 1e18;
    for (int t = 0; t < 3; t++) {
        uint64_t t0 = kn_time_ns();
        for (size_t i = 0; i < 4096; i++)
            memcpy(a + i * 64, b + i * 128, 8);
        __asm__ volatile("" ::"r"(a) : "memory");
        double d = (double)(kn_time_ns() - t0) / 4096;
        if (d < best)
            best = d;
    }
    M.ts_cp = best;
    free(a);
    free(b);
    measured = 1;
}

#define CACHE_MAGIC "knit-rma-model 1"

/* The cache file's name (KNIT_RMA_MODEL_CACHE); 0: none. */
static int cache_path(char *buf, size_t len)
{
    const char *c = kn_cfg.rma_model_cache;
    if (!c || !strcmp(c, "off"))
        return 0;
    if (strcmp(c, "auto")) {
        snprintf(buf, len, "%s", c);
        return 1;
    }
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, len, "%s/knit/rma-model-%s", xdg, host);
    else if (home && *home)
        snprintf(buf, len, "%s/.cache/knit/rma-model-%s", home, host);
    else
        return 0;
    return 1;
}

static int cache_read(const char *path, kn_rma_model_t *m)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char magic[32] = "";
    int ok = fgets(magic, sizeof(magic), f) && !strncmp(magic, CACHE_MAGIC, strlen(CACHE_MAGIC)) &&
             fscanf(f, " ts_cma %lf tn_cma %lf ts_cp %lf tm %lf", &m->ts_cma, &m->tn_cma, &m->ts_cp, &m->tm) == 4 &&
             m->ts_cma > 0 && m->tn_cma >= 0 && m->ts_cp > 0 && m->tm > 0;
    fclose(f);
    return ok;
}

/* Write it (the directories too); a failure only costs the next process
 * its 2 ms. */
static void cache_write(const char *path, const kn_rma_model_t *m)
{
    char dir[512], tmp[540];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return;
        *p = '/';
    }
    snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, CACHE_MAGIC "\nts_cma %.3f\ntn_cma %.6f\nts_cp %.3f\ntm %.6f\n", m->ts_cma, m->tn_cma, m->ts_cp, m->tm);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

const kn_rma_model_t *kn_rma_model_measure(int fresh, const char **from)
{
    char path[512];
    int cached = cache_path(path, sizeof(path));
    if (!fresh && measured) {
        if (from)
            *from = "this process";
        return &M;
    }
    if (!fresh && cached && cache_read(path, &M)) {
        measured = 1;
        if (from)
            *from = "the cache";
        return &M;
    }
    measure();
    if (cached)
        cache_write(path, &M);
    if (from)
        *from = "measured now";
    return &M;
}

const kn_rma_model_t *kn_rma_model(void)
{
    return kn_rma_model_measure(0, NULL);
}

int kn_rma_model_cache_path(char *buf, size_t len)
{
    return cache_path(buf, len);
}

double kn_rma_cost(unsigned method, size_t bsize, size_t nblocks, int local_mapped)
{
    const kn_rma_model_t *m = kn_rma_model();
    double k = (double)nblocks, n = (double)bsize * k;
    double c = local_mapped ? m->ts_cp : m->ts_cma, per = local_mapped ? m->tm : m->tn_cma;
    if (method == KNIT_RMA_PACK)
        return k * m->ts_cp + n * m->tm + c + n * per;
    return k * c + n * per;
}

unsigned kn_rma_auto(int same_node, size_t bsize, size_t nblocks, int local_mapped)
{
    if (same_node)
        return KNIT_RMA_DIRECT;
    return kn_rma_cost(KNIT_RMA_PACK, bsize, nblocks, local_mapped) <
                   kn_rma_cost(KNIT_RMA_AGENT, bsize, nblocks, local_mapped)
               ? KNIT_RMA_PACK
               : KNIT_RMA_AGENT;
}
