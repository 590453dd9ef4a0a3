/*
 * The soak job (make soak, tests/soak/soak.sh): for SECONDS, rounds that
 * mix what a long job does, every result checked:
 *
 *   point-to-point   a ring exchange of every size from 0 B to 4 MiB
 *                    (nonblocking, both ways at once), and a burst of
 *                    small messages to every rank
 *   collectives      barrier, bcast, reduce, allreduce, gather, scatter,
 *                    allgather, alltoall, reduce_scatter, scan, at sizes
 *                    from 8 B to 1 MiB per rank, and nonblocking ones
 *                    (ibarrier, iallreduce) overlapping point-to-point
 *   modules          echo at the agent and counter at the switch, every
 *                    round; and every FAULT_EVERY seconds a module that
 *                    faults (modules/fault.so, a null write): loaded,
 *                    faulted, its fault checked, unloaded
 *
 *   soak MODDIR SECONDS FAULT_EVERY
 *
 * Rank 0 prints "round N at T s" lines and, at the end, "ok soak" with the
 * counts.  Any wrong result ends the job (status 1).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knit.h"

static int rank;
#define CHECK_WHAT what
static const char *what = "start";
#include "check.h"

static knit_ctx_t *ctx;
static knit_comm_t *world;
static int size;

#define MAXB (4u << 20)
static unsigned char *sbuf, *rbuf, *tmp;

static unsigned char pat(int from, size_t i, unsigned round)
{
    return (unsigned char)(from * 7 + i * 13 + round * 3);
}

static void p2p_ring(unsigned round)
{
    what = "p2p ring";
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static const size_t sizes[] = {0, 1, 8, 28, 29, 1000, 16384, 16385, 65536, 262144, 1u << 20, MAXB};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(*sizes); k++) {
        size_t n = sizes[k];
        for (size_t i = 0; i < n; i++)
            sbuf[i] = pat(rank, i, round);
        knit_request_t *r[2];
        OK(knit_irecv(ctx, rbuf, n, left, 100 + (int)k, 0, &r[0]));
        OK(knit_isend(ctx, sbuf, n, right, 100 + (int)k, 0, &r[1]));
        OK(knit_waitall(2, r, NULL));
        for (size_t i = 0; i < n; i++)
            CHECK(rbuf[i] == pat(left, i, round), "%zu bytes from %d: byte %zu", n, left, i);
    }
    /* a burst of small messages to every rank, any order of arrival */
    what = "p2p burst";
    enum { BURST = 16 };
    static knit_request_t *rq[2 * BURST * 256];
    static uint64_t in[BURST * 256], out[BURST * 256];
    int nr = 0;
    for (int p = 0; p < size && p < 256; p++)
        for (int b = 0; b < BURST; b++) {
            out[p * BURST + b] = (uint64_t)rank << 32 | (uint64_t)round << 8 | (uint64_t)b;
            OK(knit_irecv(ctx, &in[p * BURST + b], 8, p, 200 + b, 0, &rq[nr++]));
            OK(knit_isend(ctx, &out[p * BURST + b], 8, p, 200 + b, 0, &rq[nr++]));
        }
    OK(knit_waitall((size_t)nr, rq, NULL));
    for (int p = 0; p < size && p < 256; p++)
        for (int b = 0; b < BURST; b++)
            CHECK(in[p * BURST + b] == ((uint64_t)p << 32 | (uint64_t)round << 8 | (uint64_t)b), "burst from %d", p);
}

static const knit_op_t sum = {.kind = KNIT_OP_SUM};

static void collectives(unsigned round)
{
    static const size_t counts[] = {1, 128, 8192, 131072}; /* int64: 8 B .. 1 MiB per rank */
    size_t c = counts[round % 4];
    int64_t *s = (int64_t *)sbuf, *r = (int64_t *)rbuf, *t = (int64_t *)tmp;
    what = "barrier";
    OK(knit_barrier(world));
    what = "bcast";
    int root = (int)(round % (unsigned)size);
    for (size_t i = 0; i < c; i++)
        s[i] = rank == root ? (int64_t)(i * 3 + round) : -1;
    OK(knit_bcast(world, s, c, KNIT_INT64, root));
    for (size_t i = 0; i < c; i++)
        CHECK(s[i] == (int64_t)(i * 3 + round), "element %zu", i);
    what = "allreduce";
    for (size_t i = 0; i < c; i++)
        s[i] = rank + (int64_t)i;
    OK(knit_allreduce(world, s, r, c, KNIT_INT64, &sum));
    int64_t ranks = (int64_t)size * (size - 1) / 2;
    for (size_t i = 0; i < c; i++)
        CHECK(r[i] == ranks + (int64_t)size * (int64_t)i, "element %zu", i);
    what = "reduce";
    OK(knit_reduce(world, s, r, c, KNIT_INT64, &sum, root));
    if (rank == root)
        for (size_t i = 0; i < c; i++)
            CHECK(r[i] == ranks + (int64_t)size * (int64_t)i, "element %zu", i);
    size_t pc = c / (size_t)size ? c / (size_t)size : 1; /* per rank for the rooted/all-to-all ones */
    what = "gather";
    for (size_t i = 0; i < pc; i++)
        s[i] = rank * 1000 + (int64_t)i;
    OK(knit_gather(world, s, r, pc, KNIT_INT64, root));
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < pc; i++)
                CHECK(r[(size_t)p * pc + i] == p * 1000 + (int64_t)i, "from %d element %zu", p, i);
    what = "scatter";
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < pc; i++)
                t[(size_t)p * pc + i] = p * 7 + (int64_t)i + round;
    OK(knit_scatter(world, t, r, pc, KNIT_INT64, root));
    for (size_t i = 0; i < pc; i++)
        CHECK(r[i] == rank * 7 + (int64_t)i + round, "element %zu", i);
    what = "allgather";
    OK(knit_allgather(world, s, r, pc, KNIT_INT64));
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < pc; i++)
            CHECK(r[(size_t)p * pc + i] == p * 1000 + (int64_t)i, "from %d element %zu", p, i);
    what = "alltoall";
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < pc; i++)
            s[(size_t)p * pc + i] = rank * 100000 + p * 100 + (int64_t)(i % 100);
    OK(knit_alltoall(world, s, r, pc, KNIT_INT64));
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < pc; i++)
            CHECK(r[(size_t)p * pc + i] == p * 100000 + rank * 100 + (int64_t)(i % 100), "from %d element %zu", p, i);
    what = "reduce_scatter";
    for (size_t i = 0; i < pc * (size_t)size; i++)
        s[i] = (int64_t)i;
    OK(knit_reduce_scatter_block(world, s, r, pc, KNIT_INT64, &sum));
    for (size_t i = 0; i < pc; i++)
        CHECK(r[i] == (int64_t)size * (int64_t)((size_t)rank * pc + i), "element %zu", i);
    what = "scan";
    int64_t one = rank + 1, pre = 0;
    OK(knit_scan(world, &one, &pre, 1, KNIT_INT64, &sum));
    CHECK(pre == (int64_t)(rank + 1) * (rank + 2) / 2, "prefix %lld", (long long)pre);
    /* nonblocking, overlapping point-to-point */
    what = "nonblocking";
    knit_coll_request_t *cr[2];
    int64_t a = rank, ar = 0;
    OK(knit_ibarrier(world, &cr[0]));
    OK(knit_iallreduce(world, &a, &ar, 1, KNIT_INT64, &sum, &cr[1]));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    uint64_t x = round, y = 0;
    knit_request_t *pr[2];
    OK(knit_irecv(ctx, &y, 8, left, 300, 0, &pr[0]));
    OK(knit_isend(ctx, &x, 8, right, 300, 0, &pr[1]));
    OK(knit_waitall(2, pr, NULL));
    OK(knit_coll_wait(&cr[0]));
    OK(knit_coll_wait(&cr[1]));
    CHECK(y == round && ar == ranks, "p2p %llu, allreduce %lld", (unsigned long long)y, (long long)ar);
}

static knit_status_t call(knit_module_t *m, const void *args, size_t len, void *res, size_t cap, size_t *rl)
{
    knit_mreq_t *r;
    knit_status_t st = knit_module_request(m, args, len, &r);
    return st == KNIT_OK ? knit_request_wait(&r, res, cap, rl) : st;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: soak MODDIR SECONDS FAULT_EVERY\n");
        return 2;
    }
    const char *moddir = argv[1];
    double seconds = atof(argv[2]), fault_every = atof(argv[3]);
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    world = knit_comm_world(ctx);
    sbuf = malloc(MAXB);
    rbuf = malloc(MAXB);
    tmp = malloc(MAXB);
    CHECK(sbuf && rbuf && tmp, "out of memory");
    char path[1024];
    knit_module_t *echo, *counter;
    snprintf(path, sizeof(path), "%s/echo.so", moddir);
    OK(knit_module_load(ctx, path, KNIT_MODULE_AGENT, &echo));
    snprintf(path, sizeof(path), "%s/counter.so", moddir);
    OK(knit_module_load(ctx, path, KNIT_MODULE_SWITCH, &counter));
    double t0 = check_now(), next_fault = fault_every, next_print = 0;
    unsigned round = 0, faults = 0;
    int64_t added = 0;
    for (int go = 1; go; round++) {
        p2p_ring(round);
        collectives(round);
        what = "modules";
        char res[64], args[32];
        size_t rl = 0;
        snprintf(args, sizeof(args), "r%d.%u", rank, round);
        OK(call(echo, args, strlen(args) + 1, res, sizeof(res), &rl));
        CHECK(rl == strlen(args) + 1 && !strcmp(res, args), "echo '%s'", res);
        int64_t one = 1, v = 0;
        OK(call(counter, &one, sizeof(one), &v, sizeof(v), &rl));
        added++;
        CHECK(v >= added, "counter %lld after %lld of ours", (long long)v, (long long)added);
        /* rank 0 decides, for everyone, whether a fault is due and whether to go on */
        double now = check_now() - t0;
        int flags[2] = {now >= next_fault, now < seconds};
        OK(knit_bcast(world, flags, 2, KNIT_INT32, 0));
        if (flags[0]) {
            what = "faulting module";
            knit_module_t *f;
            snprintf(path, sizeof(path), "%s/fault.so", moddir);
            OK(knit_module_load(ctx, path, KNIT_MODULE_AGENT, &f));
            OK(knit_barrier(world)); /* every rank loaded before one faults it */
            knit_status_t st = call(f, "n", 1, res, sizeof(res), &rl);
            CHECK(st == KNIT_ERR_MODULE_FAULT && strstr(res, "SIGSEGV"), "fault: %s '%.60s'", knit_strerror(st), res);
            OK(knit_module_unload(f));
            faults++;
            next_fault += fault_every;
        }
        go = flags[1];
        if (rank == 0 && now >= next_print) {
            printf("round %u at %.0f s\n", round, now);
            fflush(stdout);
            next_print += 10;
        }
    }
    what = "end";
    OK(knit_module_unload(counter));
    OK(knit_module_unload(echo));
    OK(knit_finalize(ctx));
    if (rank == 0)
        printf("ok soak: %u rounds, %u module faults, %.0f s\n", round, faults, check_now() - t0);
    free(sbuf);
    free(rbuf);
    free(tmp);
    return 0;
}
