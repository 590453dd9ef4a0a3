/*
 * The replicated region (include/knit/dsm.h) measured, run by bench/dsm.py
 * (docs/benchmarks.md, "Replicated region"):
 *   dsm release ITERS     rank 0 writes one byte of a page and releases it
 *                         (knit_dsm_flush: back once every replica has it,
 *                         or under invalidate its home, node 1);
 *                         the same with knit_dsm_barrier on every rank;
 *                         beside knit_bcast of 4 KiB from rank 0 and
 *                         knit_barrier on the same layout (microseconds,
 *                         the median over rounds of the slowest rank's
 *                         time, rounds separated by a barrier)
 *   dsm bw SIZE REPS      rank 0 rewrites SIZE bytes, then releases them
 *                         (knit_dsm_flush): GB/s of the release and of
 *                         write + release; beside knit's point-to-point
 *                         bandwidth from rank 0 to the first rank of the
 *                         last node (SIZE bytes, sent and answered)
 *   dsm pattern NAME REPS the protocols' three access patterns (median ms
 *                         per round):
 *                           onewriter  rank 0 writes 4 MiB, barrier, every
 *                                      rank reads it all, barrier (every
 *                                      word gets a new value: val())
 *                           blocks     each rank writes its 1 MiB block,
 *                                      barrier, every rank reads all blocks
 *                           migratory  16 KiB under one lock, each rank in
 *                                      turn reads and rewrites it, 8 passes
 * One line "key value ..." per result on rank 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knit.h"
#include "knit/dsm.h"

static knit_ctx_t *ctx;
static knit_comm_t *world;
static int rank, size;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void ok(knit_status_t st, const char *what)
{
    if (st != KNIT_OK) {
        fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, what, knit_strerror(st), knit_dsm_last_error());
        exit(1);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* the slowest rank's time of each round, the median of those */
static double rounds_median(double *t, int n)
{
    knit_op_t max = {.kind = KNIT_OP_MAX};
    ok(knit_allreduce(world, KNIT_IN_PLACE, t, (size_t)n, KNIT_DOUBLE, &max), "allreduce");
    return median(t, n);
}

/* What one round of the release latency does (i: the round). */
enum { R_FLUSH, R_DSM_BARRIER, R_BCAST, R_BARRIER };

static void round_op(int what, int i, char *buf)
{
    /* rank 0 writes a byte: pages 16-23, in the second home block of the
     * default 64 KiB, whose home under invalidate is node 1 */
    volatile char *a = knit_dsm_base();
    if (what <= R_DSM_BARRIER && rank == 0)
        a[(16 + (i & 7)) * 4096 + 64] = (char)i;
    if (what == R_FLUSH && rank == 0)
        ok(knit_dsm_flush(), "flush"); /* back once the update is in every replica (or home) */
    else if (what == R_DSM_BARRIER)
        ok(knit_dsm_barrier(), "barrier");
    else if (what == R_BCAST)
        ok(knit_bcast(world, buf, 4096, KNIT_BYTE, 0), "bcast"); /* the last receiver's time counts */
    else if (what == R_BARRIER)
        ok(knit_barrier(world), "barrier");
}

/* iters rounds of what (20 more first, untimed), separated by a barrier
 * (untimed), as OSU's latency tests do: the median of the slowest rank's
 * time per round */
static double rounds(int what, int iters, double *t, char *buf)
{
    for (int i = -20; i < iters; i++) {
        ok(knit_barrier(world), "barrier");
        double t0 = now();
        round_op(what, i, buf);
        if (i >= 0)
            t[i] = now() - t0;
    }
    return rounds_median(t, iters);
}

static void release(int iters)
{
    double *t = calloc((size_t)iters, sizeof(double));
    char *buf = calloc(1, 4096);
    double rel = rounds(R_FLUSH, iters, t, buf), relbar = rounds(R_DSM_BARRIER, iters, t, buf);
    double bc = rounds(R_BCAST, iters, t, buf), bar = rounds(R_BARRIER, iters, t, buf);
    if (rank == 0)
        printf("release_us %.2f dsm_barrier_us %.2f bcast4k_us %.2f barrier_us %.2f\n", rel * 1e6, relbar * 1e6,
               bc * 1e6, bar * 1e6);
    free(t);
    free(buf);
}

static void bw(size_t n, int reps)
{
    char *a = knit_dsm_base();
    double *tr = calloc((size_t)reps, sizeof(double)), *tw = calloc((size_t)reps, sizeof(double));
    for (int r = -1; r < reps; r++) {
        ok(knit_dsm_barrier(), "barrier");
        double t0 = now(), t1 = t0, t2 = t0;
        if (rank == 0) {
            memset(a, r + 2, n);
            t1 = now();
            ok(knit_dsm_flush(), "flush");
            t2 = now();
        }
        if (r >= 0) {
            tr[r] = t2 - t1;
            tw[r] = t2 - t0;
        }
    }
    ok(knit_dsm_barrier(), "barrier");
    double rel = median(tr, reps), all = median(tw, reps);
    /* knit's point-to-point between the same nodes (on one node: rank 0 and
     * rank 1; alone: none, and no number) */
    int peer = -1;
    for (int r = size - 1; r > 0; r--)
        if (knit_node_of(ctx, r) == knit_nnodes(ctx) - 1)
            peer = r;
    char *buf = malloc(n), ack = 0;
    memset(buf, 1, n);
    for (int r = -1; r < reps; r++) {
        ok(knit_barrier(world), "barrier");
        double t0 = now();
        if (rank == 0 && peer > 0) {
            ok(knit_send(ctx, buf, n, peer, 1, 0), "send");
            ok(knit_recv(ctx, &ack, 1, peer, 2, 0, NULL), "recv");
        } else if (rank == peer) {
            ok(knit_recv(ctx, buf, n, 0, 1, 0, NULL), "recv");
            ok(knit_send(ctx, &ack, 1, 0, 2, 0), "send");
        }
        if (r >= 0)
            tr[r] = now() - t0;
    }
    double p2p = median(tr, reps);
    if (rank == 0)
        printf("release_gbs %.3f write_release_gbs %.3f p2p_gbs %.3f release_ms %.2f\n", n / rel * 1e-9,
               n / all * 1e-9, peer > 0 ? n / p2p * 1e-9 : 0.0, rel * 1e3);
    free(buf);
    free(tr);
    free(tw);
}

/* a new value for every word in every round (every byte changes, as
 * doubles of a computation mostly do) */
static inline uint64_t val(size_t i, int r)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + (uint64_t)r * 0xff51afd7ed558ccdull + 1;
    return x ^ (x >> 29) ^ 0x8080808080808080ull;
}

static void pattern(const char *name, int reps)
{
    double *t = calloc((size_t)reps, sizeof(double));
    volatile uint64_t *a = knit_dsm_base();
    uint64_t sink = 0;
    for (int r = -1; r < reps; r++) {
        ok(knit_dsm_barrier(), "barrier");
        double t0 = now();
        if (!strcmp(name, "onewriter")) {
            size_t n = (4u << 20) / 8;
            if (rank == 0)
                for (size_t i = 0; i < n; i++)
                    a[i] = val(i, r);
            ok(knit_dsm_barrier(), "barrier");
            for (size_t i = 0; i < n; i++)
                sink += a[i];
        } else if (!strcmp(name, "blocks")) {
            size_t n = (1u << 20) / 8;
            for (size_t i = 0; i < n; i++)
                a[(size_t)rank * n + i] = val(i, r);
            ok(knit_dsm_barrier(), "barrier");
            for (size_t i = 0; i < n * (size_t)size; i++)
                sink += a[i];
        } else { /* migratory */
            size_t n = (16u << 10) / 8;
            for (int pass = 0; pass < 8; pass++)
                for (int turn = 0; turn < size; turn++) {
                    if (turn == rank) {
                        ok(knit_dsm_lock(1), "lock");
                        for (size_t i = 0; i < n; i++)
                            a[i] = a[i] + 1;
                        ok(knit_dsm_unlock(1), "unlock");
                    }
                    ok(knit_barrier(world), "barrier");
                }
        }
        ok(knit_dsm_barrier(), "barrier");
        if (r >= 0)
            t[r] = now() - t0;
    }
    double m = rounds_median(t, reps);
    if (rank == 0)
        printf("%s_ms %.3f\n", name, m * 1e3);
    if (sink == 42)
        printf(" \n");
    free(t);
}

int main(int argc, char **argv)
{
    ok(knit_init(&argc, &argv, &ctx), "init");
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    world = knit_comm_world(ctx);
    const char *what = argc > 1 ? argv[1] : "release";
    ok(knit_dsm_init(ctx, 256u << 20), "knit_dsm_init");
    if (!strcmp(what, "release"))
        release(argc > 2 ? atoi(argv[2]) : 200);
    else if (!strcmp(what, "bw"))
        bw(argc > 2 ? strtoull(argv[2], NULL, 0) : (64u << 20), argc > 3 ? atoi(argv[3]) : 5);
    else if (!strcmp(what, "pattern"))
        pattern(argc > 2 ? argv[2] : "onewriter", argc > 3 ? atoi(argv[3]) : 5);
    ok(knit_dsm_finalize(ctx), "finalize");
    ok(knit_finalize(ctx), "finalize");
    return 0;
}
