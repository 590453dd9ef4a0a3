/*
 * One-sided operations (include/knit/rma.h), run by tests/job/test_rma.sh:
 *   rma_test sweep METHOD    put, get and accumulate of every shape of the
 *                            table (levels 0-3, blocks of 1 B to 1 MiB,
 *                            1 to 4096 blocks, overlapping source ranges,
 *                            the I/O-vector form), to the next rank and
 *                            to oneself, blocking and nonblocking
 *   rma_test atomics         fetch-and-add counters from every rank (each
 *                            value handed out once), swap, compare-and-swap;
 *                            accumulates from every rank into one region
 *                            at once (element-wise atomic)
 *   rma_test passive METHOD  rank 1 computes for 2 s without knit calls while
 *                            rank 0 puts, gets, accumulates and fetch-adds
 *                            to it: each completes within the 2 s
 *   rma_test alltoall METHOD every rank puts a strided block into every
 *                            other rank's window, then one fence: each
 *                            must be in place (a put is complete at its
 *                            target, not only gone from the origin)
 *   rma_test many METHOD     2000 nonblocking puts in flight, tested now and
 *                            then while more are issued (more than the
 *                            agent's queue holds)
 *   rma_test local METHOD    puts and accumulates that complete locally
 *                            (KNIT_RMA_LOCAL): the source is overwritten as
 *                            soon as a call returns, and after the fence the
 *                            target holds what was there at the call
 *   rma_test model WANT      the method auto picks for 1024 blocks of 8 B
 *                            from a small buffer to another node is WANT
 *                            (the test gives it a cost model file)
 *   rma_test errors          bad descriptors and calls return errors
 *   rma_test subcomm         a window over the even ranks only, made before
 *                            any over the whole job: put and get work;
 *                            accumulates need KNIT_RMA_LOAD=init (else they
 *                            must say why they cannot)
 *   rma_test held [small]    puts to other nodes that complete locally
 *                            under auto are held until the window's next
 *                            synchronization: not at the target before
 *                            it; in place after knit_rma_barrier (the
 *                            barrier's messages) and after a fence (the
 *                            agents); a get from anyone right after the
 *                            barrier finds them, a get behind a held put
 *                            finds it, knit_win_free delivers them, and a
 *                            fence returns while the target computes
 *                            (small: KNIT_RMA_DEFER_MAX is small, and what
 *                            a target holds is sent on as it fills)
 *   rma_test killagent       rank 0 keeps putting to the last rank through
 *                            the agents; the last rank kills its node's
 *                            agent mid-transfer (the job must end with
 *                            knitrun's verdict, not hang)
 * Every transfer is checked against a reference computed here with a
 * plain loop.  Prints "ok CASE" on rank 0 when every rank passed.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "knit.h"
#include "knit/rma.h"

static knit_ctx_t *ctx;
static int rank, size;
static char what[160];

#define CHECK_WHAT what
#include "check.h"

#define WIN (6u << 20)
static knit_win_t *win;
static unsigned char *mine;   /* my window */
static unsigned char *src;    /* my source buffer */
static unsigned char *ref;    /* the expected window / result */

typedef struct shape {
    int levels;
    int64_t count[4];
    int64_t sgap, dgap;        /* strides: the level below's extent plus a gap; sgap < 0: overlap */
} shape_t;

/* levels 0-3, 1 B .. 1 MiB blocks, 1 .. 4096 blocks */
static const shape_t shapes[] = {
    {0, {1}, 0, 0},           {0, {8}, 0, 0},           {0, {1000}, 0, 0},        {0, {65536}, 0, 0},
    {0, {1 << 20}, 0, 0},     {1, {1, 4096}, 3, 5},     {1, {8, 1024}, 8, 0},     {1, {8, 4096}, 0, 8},
    {1, {100, 37}, 1, 29},    {1, {4096, 16}, 64, 0},   {1, {65536, 8}, 0, 100},  {1, {1 << 20, 2}, 8, 8},
    {1, {16, 64}, -8, 16},    {2, {8, 16, 16}, 4, 8},   {2, {3, 5, 7}, 1, 2},     {2, {512, 4, 8}, 0, 64},
    {3, {4, 4, 4, 4}, 4, 0},  {3, {16, 8, 4, 2}, 0, 16}, {3, {1, 2, 3, 4}, 1, 1}, {3, {8, 8, 8, 8}, -4, 8},
};

static void strides(const shape_t *s, int64_t *ss, int64_t *ds, int64_t elem)
{
    int64_t se = s->count[0], de = s->count[0];
    for (int i = 0; i < s->levels; i++) {
        ss[i] = se + s->sgap * elem;
        if (ss[i] < elem)
            ss[i] = elem; /* overlapping, but not backwards */
        ds[i] = de + s->dgap * elem;
        se = ss[i] * s->count[i + 1];
        de = ds[i] * s->count[i + 1];
    }
}

/* The reference walk: calls fn(src offset, dst offset, bytes) per block. */
static void walk(const shape_t *s, const int64_t *ss, const int64_t *ds,
                 void (*fn)(int64_t so, int64_t d, int64_t n, void *arg), void *arg)
{
    int64_t idx[4] = {0};
    int64_t nb = 1;
    for (int i = 1; i <= s->levels; i++)
        nb *= s->count[i];
    for (int64_t b = 0; b < nb; b++) {
        int64_t rem = b, so = 0, d = 0;
        for (int i = 1; i <= s->levels; i++) {
            idx[i] = rem % s->count[i];
            rem /= s->count[i];
            so += idx[i] * ss[i - 1];
            d += idx[i] * ds[i - 1];
        }
        fn(so, d, s->count[0], arg);
    }
}

static int64_t extent(const shape_t *s, const int64_t *st)
{
    int64_t e = s->count[0];
    for (int i = 1; i <= s->levels; i++)
        e += (s->count[i] - 1) * st[i - 1];
    return e;
}

static unsigned char fval(int r, size_t i)
{
    return (unsigned char)(r * 131 + i * 7 + (i >> 9));
}

static unsigned char gval(int r, size_t i)
{
    return (unsigned char)(r * 17 + i * 3 + 1 + (i >> 11));
}

/* "direct", "agent", "pack"; anything else: auto */
static unsigned method_of(const char *name)
{
    return !strcmp(name, "direct") ? KNIT_RMA_DIRECT : !strcmp(name, "agent") ? KNIT_RMA_AGENT
           : !strcmp(name, "pack") ? KNIT_RMA_PACK : KNIT_RMA_AUTO;
}

/* ------------------------------------------------------------ put / get */

typedef struct cp {
    unsigned char *dst;
    const unsigned char *src;
    int64_t doff, soff;
} cp_t;

static void copy_block(int64_t so, int64_t d, int64_t n, void *arg)
{
    cp_t *c = arg;
    memcpy(c->dst + c->doff + d, c->src + c->soff + so, (size_t)n);
}

static void fill_window(void)
{
    for (size_t i = 0; i < WIN; i++)
        mine[i] = fval(rank, i);
}

static void fill_src(void)
{
    for (size_t i = 0; i < WIN; i++)
        src[i] = gval(rank, i);
}

static void expect_same(const unsigned char *got, const unsigned char *want, size_t n, const char *where)
{
    if (!memcmp(got, want, n))
        return;
    size_t i = 0;
    while (got[i] == want[i])
        i++;
    CHECK(0, "%s: byte %zu is %u, expected %u", where, i, got[i], want[i]);
}

/* The blocks of a shape as I/O-vector lists: sp[i] = sbase + source
 * offset of block i, dp[i] = dbase + its destination offset (malloc'ed;
 * returns the number of blocks). */
typedef struct vec {
    void **sp, **dp;
    const unsigned char *sbase, *dbase;
    int64_t k;
} vec_t;

static void vec_block(int64_t so, int64_t d, int64_t n, void *arg)
{
    (void)n;
    vec_t *v = arg;
    v->sp[v->k] = (void *)(v->sbase + so);
    v->dp[v->k++] = (void *)(v->dbase + d);
}

static int64_t blocks_of(const shape_t *s, const int64_t *ss, const int64_t *ds, const void *sbase, const void *dbase,
                         void ***sp, void ***dp)
{
    int64_t nb = 1;
    for (int i = 1; i <= s->levels; i++)
        nb *= s->count[i];
    vec_t v = {malloc((size_t)nb * sizeof(void *)), malloc((size_t)nb * sizeof(void *)), sbase, dbase, 0};
    CHECK(v.sp && v.dp, "no memory");
    walk(s, ss, ds, vec_block, &v);
    *sp = v.sp;
    *dp = v.dp;
    return nb;
}

/* Nonblocking when nb, else blocking. */
static void do_put(const shape_t *s, int target, unsigned method, int nb, int vec)
{
    int64_t ss[3], ds[3];
    strides(s, ss, ds, 1);
    int64_t doff = 4096 + 13; /* unaligned on purpose */
    int64_t soff = 77;
    unsigned char *dst = (unsigned char *)knit_win_base(win, target) + doff;
    knit_rma_req_t *req = NULL;
    if (!vec) {
        OK(knit_put_strided(win, src + soff, ss, dst, ds, s->count, s->levels, target, method, nb ? &req : NULL));
    } else { /* the same blocks as a vector: two descriptors of half the blocks each */
        void **sp, **dp;
        int64_t nb_ = blocks_of(s, ss, ds, src + soff, dst, &sp, &dp);
        knit_rma_iov_t iov[2] = {{sp, dp, nb_ / 2, s->count[0]}, {sp + nb_ / 2, dp + nb_ / 2, nb_ - nb_ / 2, s->count[0]}};
        OK(knit_put_vector(win, iov, 2, target, method, nb ? &req : NULL));
        if (req)
            OK(knit_rma_wait(&req));
        free(sp);
        free(dp);
    }
    if (req) {
        int done = 0;
        OK(knit_rma_test(&req, &done));
        if (!done)
            OK(knit_rma_wait(&req));
    }
}

static void check_put(const shape_t *s, int origin)
{
    int64_t ss[3], ds[3];
    strides(s, ss, ds, 1);
    for (size_t i = 0; i < WIN; i++)
        ref[i] = fval(rank, i);
    unsigned char *osrc = malloc(WIN);
    CHECK(osrc, "no memory");
    for (size_t i = 0; i < WIN; i++)
        osrc[i] = gval(origin, i);
    cp_t c = {ref, osrc, 4096 + 13, 77};
    walk(s, ss, ds, copy_block, &c);
    expect_same(mine, ref, WIN, "window after put");
    free(osrc);
}

static void do_get(const shape_t *s, int target, unsigned method, int nb, int vec)
{
    /* get reads the target's window with the destination strides swapped in: the
     * remote side uses ss, the local side ds */
    int64_t ss[3], ds[3];
    strides(s, ss, ds, 1);
    const unsigned char *rsrc = (const unsigned char *)knit_win_base(win, target) + 333;
    memset(src, 0xEE, WIN);
    knit_rma_req_t *req = NULL;
    if (!vec) {
        OK(knit_get_strided(win, src + 5, ds, rsrc, ss, s->count, s->levels, target, method, nb ? &req : NULL));
    } else {
        void **sp, **dp;
        int64_t nb_ = blocks_of(s, ss, ds, rsrc, src + 5, &sp, &dp);
        knit_rma_iov_t iov = {sp, dp, nb_, s->count[0]};
        OK(knit_get_vector(win, &iov, 1, target, method, nb ? &req : NULL));
        if (req)
            OK(knit_rma_wait(&req));
        free(sp);
        free(dp);
    }
    if (req)
        OK(knit_rma_wait(&req));
    memset(ref, 0xEE, WIN);
    unsigned char *tw = malloc(WIN);
    CHECK(tw, "no memory");
    for (size_t i = 0; i < WIN; i++)
        tw[i] = fval(target, i);
    cp_t c = {ref, tw, 5, 333};
    walk(s, ss, ds, copy_block, &c);
    expect_same(src, ref, WIN, "buffer after get");
    free(tw);
}

/* ------------------------------------------------------------ accumulate */

typedef struct ac {
    int32_t *dst;
    const int32_t *src;
    int32_t scale;
} ac_t;

static void acc_block(int64_t so, int64_t d, int64_t n, void *arg)
{
    ac_t *a = arg;
    for (int64_t i = 0; i < n / 4; i++)
        a->dst[d / 4 + i] += a->scale * a->src[so / 4 + i];
}

static int agents; /* the job has node agents (accumulates to others need them) */

static void do_acc(const shape_t *s0, int target, unsigned method, int nb)
{
    if (!agents && target != rank)
        return;
    shape_t s = *s0; /* whole int32 elements */
    s.count[0] = (s.count[0] + 3) / 4 * 4;
    int64_t ss[3], ds[3];
    strides(&s, ss, ds, 4);
    if (extent(&s, ds) + 4096 > (int64_t)WIN || extent(&s, ss) + 4096 > (int64_t)WIN)
        return;
    int32_t *w = (int32_t *)mine, *sv = (int32_t *)src;
    for (size_t i = 0; i < WIN / 4; i++) {
        w[i] = rank * 1000 + (int32_t)i;
        sv[i] = (int32_t)(i % 17) + rank;
    }
    OK(knit_barrier(knit_comm_world(ctx)));
    int32_t scale = 3;
    knit_rma_acc_t acc = {KNIT_INT32, KNIT_OP_SUM, &scale};
    knit_rma_req_t *req = NULL;
    OK(knit_acc_strided(win, &acc, sv + 4, ss, (int32_t *)knit_win_base(win, target) + 1024, ds, s.count, s.levels,
                        target, method, nb ? &req : NULL));
    if (req)
        OK(knit_rma_wait(&req));
    OK(knit_rma_barrier(win));
    int origin = target == rank ? rank : (rank + size - 1) % size;
    int32_t *want = (int32_t *)ref, *osrc = malloc(WIN);
    CHECK(osrc, "no memory");
    for (size_t i = 0; i < WIN / 4; i++) {
        want[i] = rank * 1000 + (int32_t)i;
        osrc[i] = (int32_t)(i % 17) + origin;
    }
    ac_t a = {want + 1024, osrc + 4, scale};
    walk(&s, ss, ds, acc_block, &a);
    expect_same(mine, ref, WIN, "window after accumulate");
    free(osrc);
}

static void sweep(const char *mname)
{
    unsigned method = method_of(mname);
    knit_comm_t *world = knit_comm_world(ctx);
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        const shape_t *s = &shapes[k];
        int64_t ss[3], ds[3];
        strides(s, ss, ds, 1);
        if (extent(s, ds) + 4096 + 13 > (int64_t)WIN || extent(s, ss) + 333 > (int64_t)WIN)
            continue;
        for (int self = 0; self < 2; self++) {
            int target = self ? rank : (rank + 1) % size;
            int origin = self ? rank : (rank + size - 1) % size;
            for (int nb = 0; nb < 2; nb++) {
                int vec = k % 4 == 1 && nb;
                snprintf(what, sizeof(what), "%s put shape %zu%s%s%s", mname, k, self ? " self" : "",
                         nb ? " nonblocking" : "", vec ? " vector" : "");
                fill_window();
                fill_src();
                OK(knit_barrier(world));
                do_put(s, target, method, nb, vec);
                OK(knit_rma_barrier(win));
                check_put(s, origin);
                OK(knit_barrier(world));
                snprintf(what, sizeof(what), "%s get shape %zu%s%s%s", mname, k, self ? " self" : "",
                         nb ? " nonblocking" : "", vec ? " vector" : "");
                fill_window();
                OK(knit_barrier(world));
                do_get(s, target, method, nb, vec);
                OK(knit_barrier(world));
            }
            snprintf(what, sizeof(what), "%s accumulate shape %zu%s", mname, k, self ? " self" : "");
            do_acc(s, target, method, k % 2);
            OK(knit_barrier(world));
        }
    }
}

/* ------------------------------------------------------------ atomics */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void atomics(void)
{
    knit_comm_t *world = knit_comm_world(ctx);
    const int iters = 200;
    int64_t *got = malloc(iters * sizeof(int64_t));
    CHECK(got, "no memory");
    memset(mine, 0, 4096);
    OK(knit_barrier(world));
    /* a 64-bit and a 32-bit counter at rank 0 */
    int64_t *c64 = knit_win_base(win, 0);
    int32_t *c32 = (int32_t *)((char *)knit_win_base(win, 0) + 64);
    snprintf(what, sizeof(what), "fetch-and-add");
    for (int i = 0; i < iters; i++) {
        int64_t one = 1, old;
        OK(knit_rma_atomic(win, KNIT_RMA_FETCH_ADD, KNIT_INT64, c64, &one, NULL, &old, 0));
        got[i] = old;
        int32_t two = 2, old32;
        OK(knit_rma_atomic(win, KNIT_RMA_FETCH_ADD, KNIT_INT32, c32, &two, NULL, &old32, 0));
        CHECK(old32 % 2 == 0 && old32 >= 0 && old32 < 2 * iters * size, "32-bit counter handed out %d", old32);
    }
    int64_t *all = rank == 0 ? malloc((size_t)iters * size * sizeof(int64_t)) : NULL;
    OK(knit_gather(world, got, all, iters, KNIT_INT64, 0));
    OK(knit_rma_barrier(win));
    if (rank == 0) {
        CHECK(*c64 == (int64_t)iters * size, "the counter is %lld", (long long)*c64);
        CHECK(*c32 == 2 * iters * size, "the 32-bit counter is %d", *c32);
        qsort(all, (size_t)iters * size, sizeof(int64_t), cmp_i64);
        for (int64_t i = 0; i < (int64_t)iters * size; i++)
            CHECK(all[i] == i, "value %lld handed out %s", (long long)i, all[i] < i ? "twice" : "never");
    }
    free(all);
    /* swap and compare-and-swap: a lock word passed around */
    snprintf(what, sizeof(what), "compare-and-swap lock");
    int64_t *lockw = (int64_t *)((char *)knit_win_base(win, 0) + 128);
    int64_t *shared = (int64_t *)((char *)knit_win_base(win, 0) + 192);
    for (int i = 0; i < 50; i++) {
        int64_t zero = 0, me = rank + 1, old;
        for (;;) {
            OK(knit_rma_atomic(win, KNIT_RMA_CAS, KNIT_INT64, lockw, &me, &zero, &old, 0));
            if (old == 0)
                break;
            usleep(10);
        }
        int64_t v;
        OK(knit_get(win, &v, shared, sizeof(v), 0, KNIT_RMA_DEFAULT, NULL));
        v++;
        OK(knit_put(win, &v, shared, sizeof(v), 0, KNIT_RMA_DEFAULT, NULL));
        OK(knit_rma_atomic(win, KNIT_RMA_SWAP, KNIT_INT64, lockw, &zero, NULL, &old, 0));
        CHECK(old == me, "the lock held %lld, not me", (long long)old);
    }
    OK(knit_rma_barrier(win));
    if (rank == 0)
        CHECK(*shared == 50 * size, "the counter under the lock is %lld", (long long)*shared);
    /* accumulates from every rank into one region of rank 0, at once */
    snprintf(what, sizeof(what), "concurrent accumulates");
    double *region = (double *)((char *)knit_win_base(win, 0) + 8192);
    const int n = 4096, reps = 20;
    double *v = malloc(n * sizeof(double));
    CHECK(v, "no memory");
    if (rank == 0)
        memset(mine + 8192, 0, n * sizeof(double));
    OK(knit_barrier(world));
    for (int i = 0; i < n; i++)
        v[i] = (double)(i % 7 + 1);
    knit_rma_acc_t acc = {KNIT_DOUBLE, KNIT_OP_SUM, NULL};
    knit_rma_req_t *reqs[20];
    for (int r = 0; r < reps; r++)
        OK(knit_acc(win, &acc, v, region, n * sizeof(double), 0, KNIT_RMA_DEFAULT, &reqs[r]));
    OK(knit_rma_waitall(reps, reqs));
    OK(knit_rma_barrier(win));
    if (rank == 0)
        for (int i = 0; i < n; i++)
            CHECK(region[i] == (double)(i % 7 + 1) * reps * size, "element %d is %g", i, region[i]);
    free(v);
    free(got);
}

/* ------------------------------------------------------------ passive target */

static void passive(const char *mname)
{
    unsigned method = method_of(mname);
    knit_comm_t *world = knit_comm_world(ctx);
    memset(mine, 0, 1 << 20);
    OK(knit_barrier(world));
    if (rank == 1) { /* compute, no knit calls */
        double t0 = check_now();
        volatile uint64_t x = 0;
        while (check_now() - t0 < 2.0)
            x++;
    } else if (rank == 0) {
        unsigned char *buf = malloc(1 << 16);
        CHECK(buf, "no memory");
        for (int i = 0; i < 1 << 16; i++)
            buf[i] = (unsigned char)(i * 5 + 1);
        unsigned char *t = knit_win_base(win, 1);
        double t0 = check_now();
        int64_t count[2] = {16, 1024}, ss[1] = {32}, ds[1] = {48};
        snprintf(what, sizeof(what), "passive %s put", mname);
        OK(knit_put_strided(win, buf, ss, t, ds, count, 1, 1, method, NULL));
        double t1 = check_now();
        unsigned char *back = malloc(1 << 16);
        CHECK(back, "no memory");
        snprintf(what, sizeof(what), "passive %s get", mname);
        OK(knit_get_strided(win, back, ss, t, ds, count, 1, 1, method, NULL));
        for (int b = 0; b < 1024; b++)
            CHECK(!memcmp(back + b * 32, buf + b * 32, 16), "block %d read back differs", b);
        double t2 = check_now();
        snprintf(what, sizeof(what), "passive accumulate and atomic");
        int64_t one = 5, old;
        knit_rma_acc_t acc = {KNIT_INT64, KNIT_OP_SUM, NULL};
        OK(knit_acc(win, &acc, &one, t + 65536, 8, 1, method, NULL));
        OK(knit_rma_atomic(win, KNIT_RMA_FETCH_ADD, KNIT_INT64, t + 65536, &one, NULL, &old, 1));
        CHECK(old == 5, "fetch-and-add found %lld", (long long)old);
        double t3 = check_now();
        printf("passive %s: put %.1f ms, get %.1f ms, acc+atomic %.1f ms while the target computed\n", mname,
               (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3);
        CHECK(t3 - t0 < 1.5, "the operations took %.2f s: they waited for the target", t3 - t0);
        free(back);
        free(buf);
    }
    OK(knit_rma_barrier(win));
    if (rank == 1) {
        for (int b = 0; b < 1024; b++)
            for (int i = 0; i < 16; i++)
                CHECK(mine[b * 48 + i] == (unsigned char)((b * 32 + i) * 5 + 1), "block %d byte %d", b, i);
        CHECK(*(int64_t *)(mine + 65536) == 10, "the counter is %lld", (long long)*(int64_t *)(mine + 65536));
    }
}

/* ------------------------------------------------------------ all to all */

static void alltoall(const char *mname)
{
    unsigned method = method_of(mname);
    const int64_t count[2] = {8, 2048}, ss[1] = {16}, ds[1] = {24};
    const size_t span = 24 * 2048;
    snprintf(what, sizeof(what), "%s: all to all", mname);
    for (int round = 0; round < 20; round++) {
        memset(mine, 0, (size_t)size * span);
        uint64_t *sv = (uint64_t *)src;
        for (int i = 0; i < 2 * 2048; i++)
            sv[i] = (uint64_t)rank << 40 | (uint64_t)round << 32 | (uint64_t)i;
        OK(knit_barrier(knit_comm_world(ctx)));
        for (int k = 1; k < size; k++) {
            int t = (rank + k) % size;
            OK(knit_put_strided(win, sv, ss, (char *)knit_win_base(win, t) + (size_t)rank * span, ds, count, 1, t,
                                method, NULL));
        }
        OK(knit_rma_barrier(win));
        for (int o = 0; o < size; o++) {
            if (o == rank)
                continue;
            for (int b = 0; b < 2048; b++) {
                uint64_t got;
                memcpy(&got, mine + (size_t)o * span + (size_t)b * 24, 8);
                CHECK(got == ((uint64_t)o << 40 | (uint64_t)round << 32 | (uint64_t)(2 * b)),
                      "round %d: block %d from rank %d is %#llx", round, b, o, (unsigned long long)got);
            }
        }
    }
}

/* ------------------------------------------------------------ many in flight */

static void many(const char *mname)
{
    unsigned method = method_of(mname);
    const int n = 2000;
    int t = (rank + 1) % size, from = (rank + size - 1) % size;
    double *sv = malloc(n * sizeof(double));
    knit_rma_req_t **reqs = calloc(n, sizeof(*reqs));
    CHECK(sv && reqs, "no memory");
    memset(mine, 0, n * sizeof(double));
    OK(knit_barrier(knit_comm_world(ctx)));
    double *dt = knit_win_base(win, t);
    snprintf(what, sizeof(what), "%s: many in flight", mname);
    for (int k = 0; k < n; k++) {
        sv[k] = k * 0.5 + rank;
        OK(knit_put(win, &sv[k], dt + k, sizeof(double), t, method, &reqs[k]));
        if (k % 256 == 255)
            for (int j = 0; j <= k; j++)
                if (reqs[j]) {
                    int done = 0;
                    OK(knit_rma_test(&reqs[j], &done));
                    CHECK(done == (reqs[j] == NULL), "test said %d", done);
                }
    }
    OK(knit_rma_waitall(n, reqs));
    OK(knit_rma_barrier(win));
    const double *got = (const double *)mine;
    for (int k = 0; k < n; k++)
        CHECK(got[k] == k * 0.5 + from, "element %d is %g", k, got[k]);
    free(sv);
    free(reqs);
}

/* ------------------------------------------------------------ local completion */

static void local_completion(const char *mname)
{
    unsigned method = method_of(mname) | KNIT_RMA_LOCAL;
    int t = (rank + 1) % size, from = (rank + size - 1) % size;
    const int rounds = 200, n = 64;
    int64_t *buf = malloc(n * sizeof(int64_t));
    CHECK(buf, "no memory");
    memset(mine, 0, (size_t)(rounds + 1) * n * 8);
    OK(knit_barrier(knit_comm_world(ctx)));
    int64_t *dst = knit_win_base(win, t);
    snprintf(what, sizeof(what), "%s: local completion", mname);
    double t0 = check_now();
    knit_rma_acc_t acc = {KNIT_INT64, KNIT_OP_SUM, NULL};
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++)
            buf[i] = (int64_t)rank << 32 | (r * n + i);
        int64_t count[2] = {8, n / 2}, st[1] = {16};
        OK(knit_put_strided(win, buf, st, dst + (size_t)r * n, st, count, 1, t, method, NULL));
        memset(buf, 0xff, n * sizeof(int64_t)); /* ours again at once */
        int64_t one = r + 1;
        OK(knit_acc(win, &acc, &one, dst + (size_t)rounds * n, 8, t, method, NULL));
        one = -1;
    }
    double t1 = check_now();
    OK(knit_rma_barrier(win));
    const int64_t *got = (const int64_t *)mine;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i += 2)
            CHECK(got[r * n + i] == ((int64_t)from << 32 | (r * n + i)), "round %d element %d is %llx", r, i,
                  (unsigned long long)got[r * n + i]);
    CHECK(got[rounds * n] == (int64_t)rounds * (rounds + 1) / 2, "the accumulated sum is %lld",
          (long long)got[rounds * n]);
    if (rank == 0)
        printf("local %s: %.1f us a put and an accumulate\n", mname, (t1 - t0) / rounds * 1e6);
    /* a put that completed early and then failed at its target: the fence
     * says so (every rank's window: two pages, the second unmapped after) */
    if (strcmp(mname, "direct")) {
        long pg = sysconf(_SC_PAGESIZE);
        char *two = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(two != MAP_FAILED, "mmap");
        knit_win_t *w2;
        OK(knit_win_create(knit_comm_world(ctx), two, 2 * (size_t)pg, &w2));
        munmap(two + pg, (size_t)pg);
        OK(knit_barrier(knit_comm_world(ctx)));
        char *there = (char *)knit_win_base(w2, t) + pg;
        knit_status_t st = knit_put(w2, buf, there, 64, t, method_of(mname) | KNIT_RMA_LOCAL, NULL);
        knit_status_t fst = knit_rma_fence_all(w2);
        CHECK(st == KNIT_OK ? fst == KNIT_ERR_PEER_FAULT : st == KNIT_ERR_PEER_FAULT,
              "a failed early put: the call said %s, the fence %s", knit_strerror(st), knit_strerror(fst));
        CHECK(knit_rma_fence_all(w2) == KNIT_OK, "the error is told once");
        OK(knit_barrier(knit_comm_world(ctx)));
        OK(knit_win_free(w2));
        munmap(two, (size_t)pg);
    }
    free(buf);
}

/* ------------------------------------------------------------ held puts */

#define HREG (64 << 10) /* bytes of each origin's region in every window */
static uint64_t hval(int round, int o, int i)
{
    return (uint64_t)round << 48 | (uint64_t)o << 32 | (uint64_t)i;
}

/* Each origin's round in its region of t's memory base (strided, list and
 * contiguous puts). */
static void held_puts(knit_win_t *w, int t, int round, uint64_t *buf)
{
    char *r = (char *)knit_win_base(w, t) + (size_t)rank * HREG;
    unsigned how = KNIT_RMA_AUTO | KNIT_RMA_LOCAL;
    for (int i = 0; i < 512; i++)
        buf[i] = hval(round, rank, i);
    int64_t count[2] = {8, 512}, ss[1] = {8}, ds[1] = {16};
    OK(knit_put_strided(w, buf, ss, r, ds, count, 1, t, how, NULL));
    memset(buf, 0xee, 512 * 8); /* ours again at once */
    for (int i = 0; i < 3; i++)
        buf[i] = hval(round, rank, 1000 + i);
    knit_rma_seg_t segs[3] = {{(uint64_t)(uintptr_t)&buf[0], (uint64_t)(uintptr_t)(r + 9000), 8},
                              {(uint64_t)(uintptr_t)&buf[1], (uint64_t)(uintptr_t)(r + 9100), 8},
                              {(uint64_t)(uintptr_t)&buf[2], (uint64_t)(uintptr_t)(r + 9016), 8}};
    OK(knit_put_list(w, segs, 3, t, how, NULL));
    memset(buf, 0xee, 3 * 8);
    for (int i = 0; i < 16; i++)
        buf[i] = hval(round, rank, 2000 + i);
    OK(knit_put(w, buf, r + 20000, 16 * 8, t, how, NULL));
    memset(buf, 0xee, 16 * 8);
}

/* Whether origin o's round is in region (one origin's part of a window). */
static int held_in_place(const char *region, int round, int o, char *why, size_t whylen)
{
    uint64_t v;
    for (int i = 0; i < 512; i++) {
        memcpy(&v, region + 16 * i, 8);
        if (v != hval(round, o, i))
            return snprintf(why, whylen, "strided block %d is %#llx", i, (unsigned long long)v), 0;
    }
    static const int at[3] = {9000, 9100, 9016};
    for (int i = 0; i < 3; i++) {
        memcpy(&v, region + at[i], 8);
        if (v != hval(round, o, 1000 + i))
            return snprintf(why, whylen, "list piece %d is %#llx", i, (unsigned long long)v), 0;
    }
    for (int i = 0; i < 16; i++) {
        memcpy(&v, region + 20000 + 8 * i, 8);
        if (v != hval(round, o, 2000 + i))
            return snprintf(why, whylen, "contiguous word %d is %#llx", i, (unsigned long long)v), 0;
    }
    return 1;
}

static int remote(int r)
{
    return knit_node_of(ctx, r) != knit_node(ctx);
}

static void held(const char *variant)
{
    int small = variant && !strcmp(variant, "small");
    knit_comm_t *world = knit_comm_world(ctx);
    uint64_t *buf = malloc(4096 * 8);
    unsigned char *back = malloc(HREG);
    char why[160];
    CHECK(buf && back && (size_t)size * HREG <= WIN, "no memory");
    memset(mine, 0, (size_t)size * HREG);
    OK(knit_barrier(world));
    for (int round = 1; round <= 6; round++) {
        snprintf(what, sizeof(what), "held: round %d", round);
        for (int k = 1; k < size; k++)
            held_puts(win, (rank + k) % size, round, buf);
        if (round == 1 && !small) { /* nothing of it has left for the other node yet */
            OK(knit_barrier(world));
            for (int o = 0; o < size; o++)
                if (o != rank && remote(o))
                    CHECK(!held_in_place((char *)mine + (size_t)o * HREG, round, o, why, sizeof(why)),
                          "rank %d's puts are here before any synchronization: not held", o);
            OK(knit_barrier(world));
        }
        if (round % 2) { /* the barrier's messages */
            OK(knit_rma_barrier(win));
        } else { /* the agents, then everyone's are in */
            OK(knit_rma_fence_all(win));
            OK(knit_barrier(world));
        }
        for (int o = 0; o < size; o++)
            if (o != rank)
                CHECK(held_in_place((char *)mine + (size_t)o * HREG, round, o, why, sizeof(why)),
                      "from rank %d: %s", o, why);
        /* right after: every other member's memory, read as a whole (the
         * get does not wait for anyone's barrier to end but its target's
         * own applying) */
        for (int k = 1; k < size; k++) {
            int t = (rank + k) % size, o = (t + 1) % size == rank ? (t + 2) % size : (t + 1) % size;
            if (o == t)
                continue;
            OK(knit_get(win, back, (char *)knit_win_base(win, t) + (size_t)o * HREG, HREG, t, KNIT_RMA_AUTO, NULL));
            CHECK(held_in_place((char *)back, round, o, why, sizeof(why)), "rank %d's region of rank %d, read "
                  "after the barrier: %s", o, t, why);
        }
        OK(knit_barrier(world));
    }
    /* a get behind a held put to the same place finds it */
    snprintf(what, sizeof(what), "held: put then get");
    int t = (rank + size / 2) % size;
    uint64_t x = 0x1234500000000000ull | (uint64_t)rank, y = 0;
    char *spot = (char *)knit_win_base(win, t) + (size_t)rank * HREG + 30000;
    OK(knit_put(win, &x, spot, 8, t, KNIT_RMA_AUTO | KNIT_RMA_LOCAL, NULL));
    x = 0;
    OK(knit_get(win, &y, spot, 8, t, KNIT_RMA_AUTO, NULL));
    CHECK(y == (0x1234500000000000ull | (uint64_t)rank), "the get found %#llx", (unsigned long long)y);
    OK(knit_rma_barrier(win));
    /* knit_win_free delivers what its window held */
    snprintf(what, sizeof(what), "held: knit_win_free");
    char *mem2 = calloc((size_t)size, HREG);
    knit_win_t *w2;
    CHECK(mem2, "no memory");
    OK(knit_win_create(world, mem2, (size_t)size * HREG, &w2));
    for (int k = 1; k < size; k++)
        held_puts(w2, (rank + k) % size, 7, buf);
    OK(knit_win_free(w2));
    for (int o = 0; o < size; o++)
        if (o != rank)
            CHECK(held_in_place(mem2 + (size_t)o * HREG, 7, o, why, sizeof(why)), "from rank %d: %s", o, why);
    free(mem2);
    /* a fence sends them through the agents: it returns while the target
     * computes without knit calls */
    snprintf(what, sizeof(what), "held: fence, target computing");
    int last = size - 1;
    OK(knit_barrier(world));
    if (rank == last) {
        double t0 = check_now();
        volatile uint64_t spin = 0;
        while (check_now() - t0 < 1.5)
            spin++;
    } else if (rank == 0 && remote(last)) {
        double t0 = check_now();
        held_puts(win, last, 8, buf);
        OK(knit_rma_fence(win, last));
        double dt = check_now() - t0;
        CHECK(dt < 1.0, "the fence took %.2f s: it waited for the target", dt);
    }
    OK(knit_barrier(world));
    if (rank == last && remote(0))
        CHECK(held_in_place((char *)mine, 8, 0, why, sizeof(why)), "from rank 0: %s", why);
    free(buf);
    free(back);
}

/* ------------------------------------------------------------ model */

static void model(const char *want)
{
    char small[64];
    int other = knit_node_of(ctx, size - 1) != knit_node(ctx) ? size - 1 : -1;
    snprintf(what, sizeof(what), "model");
    if (rank == 0 && other >= 0) {
        unsigned m = knit_rma_method_of(win, KNIT_RMA_AUTO, other, small, 8, 1024);
        CHECK(!strcmp(knit_rma_method_name(m), want), "auto picked %s", knit_rma_method_name(m));
        CHECK(knit_rma_method_of(win, KNIT_RMA_AUTO, rank, small, 8, 1024) == KNIT_RMA_DIRECT, "not direct within a node");
        CHECK(knit_rma_method_of(win, KNIT_RMA_PACK, other, small, 8, 1024) == KNIT_RMA_PACK, "the flag not obeyed");
    }
}

/* ------------------------------------------------------------ errors */

static void errors(void)
{
    int t = (rank + 1) % size;
    char *base = knit_win_base(win, t);
    char buf[64];
    int64_t count[9] = {8, 2, 2, 2, 2, 2, 2, 2, 2}, st[8] = {16, 64, 256, 1024, 4096, 16384, 65536, 1 << 18};
    snprintf(what, sizeof(what), "errors");
    CHECK(knit_put_strided(win, buf, st, base, st, count, 8, t, 0, NULL) == KNIT_ERR_INVAL, "8 levels");
    CHECK(knit_put_strided(win, buf, st, base, st, count, -1, t, 0, NULL) == KNIT_ERR_INVAL, "-1 levels");
    int64_t neg[2] = {8, -2};
    CHECK(knit_put_strided(win, buf, st, base, st, neg, 1, t, 0, NULL) == KNIT_ERR_INVAL, "negative count");
    int64_t nst[1] = {-16};
    CHECK(knit_get_strided(win, buf, st, base, nst, count, 1, t, 0, NULL) == KNIT_ERR_INVAL, "negative stride");
    CHECK(knit_put(win, buf, base + WIN - 4, 8, t, 0, NULL) == KNIT_ERR_RANGE, "past the window");
    CHECK(knit_get(win, buf, base - 8, 8, t, 0, NULL) == KNIT_ERR_RANGE, "before the window");
    CHECK(knit_put(win, buf, buf, 8, t, 0, NULL) == KNIT_ERR_RANGE, "not in the window");
    int64_t big[2] = {8, 1 << 20}, bst[1] = {4096};
    CHECK(knit_put_strided(win, buf, bst, base, bst, big, 1, t, 0, NULL) == KNIT_ERR_RANGE, "strides past the window");
    CHECK(knit_put(win, buf, base, 8, size, 0, NULL) == KNIT_ERR_INVAL, "rank out of range");
    CHECK(knit_put(NULL, buf, base, 8, t, 0, NULL) == KNIT_ERR_INVAL, "no window");
    knit_rma_acc_t bad = {KNIT_DOUBLE, KNIT_OP_BAND, NULL};
    CHECK(knit_acc(win, &bad, buf, base, 8, t, 0, NULL) == KNIT_ERR_INVAL, "BAND on double");
    knit_rma_acc_t odd = {KNIT_INT32, KNIT_OP_SUM, NULL};
    CHECK(knit_acc(win, &odd, buf, base, 6, t, 0, NULL) == KNIT_ERR_INVAL, "not whole elements");
    double d = 1;
    CHECK(knit_rma_atomic(win, KNIT_RMA_FETCH_ADD, KNIT_DOUBLE, base, &d, NULL, &d, t) == KNIT_ERR_INVAL,
          "atomic on double");
    knit_rma_iov_t iov = {NULL, NULL, -1, 8};
    CHECK(knit_put_vector(win, &iov, 1, t, 0, NULL) == KNIT_ERR_INVAL, "negative vector length");
    /* a local buffer that is not there: the call fails, the job goes on */
    for (unsigned m = KNIT_RMA_DIRECT; m <= KNIT_RMA_PACK; m++) {
        knit_status_t s = knit_get(win, (void *)16, base, 8, t, m, NULL);
        CHECK(s == KNIT_ERR_FAULT, "get into an unmapped buffer (%s): %s", knit_rma_method_name(m), knit_strerror(s));
        int64_t count[2] = {8, 4}, st2[1] = {16};
        s = knit_put_strided(win, (void *)16, st2, base, st2, count, 1, t, m, NULL);
        CHECK(s == KNIT_ERR_FAULT, "put from an unmapped buffer (%s): %s", knit_rma_method_name(m), knit_strerror(s));
    }
    CHECK(knit_put(win, buf, base, 0, t, 0, NULL) == KNIT_OK, "zero bytes");
}

/* ------------------------------------------------------------ subcomm */

static void subcomm(void)
{
    int n = (size + 1) / 2, *ranks = malloc((size_t)n * sizeof(int));
    CHECK(ranks, "no memory");
    for (int i = 0; i < n; i++)
        ranks[i] = 2 * i;
    knit_comm_t *half = NULL;
    OK(knit_comm_create(ctx, ranks, n, 7, &half));
    snprintf(what, sizeof(what), "subcomm");
    if (rank % 2 == 0) {
        knit_win_t *w;
        int64_t cell[4] = {0};
        OK(knit_win_create(half, cell, sizeof(cell), &w));
        int me = knit_comm_rank(half), t = (me + 1) % n;
        int64_t v = me + 1;
        OK(knit_put(w, &v, (int64_t *)knit_win_base(w, t), 8, t, KNIT_RMA_DIRECT, NULL));
        knit_rma_acc_t acc = {KNIT_INT64, KNIT_OP_SUM, NULL};
        knit_status_t st = knit_acc(w, &acc, &v, (int64_t *)knit_win_base(w, t) + 1, 8, t, 0, NULL);
        const char *load = getenv("KNIT_RMA_LOAD");
        int init = load && !strcmp(load, "init");
        CHECK(st == (init ? KNIT_OK : KNIT_ERR_NOT_SUPPORTED), "accumulate on a window of part of the job: %s",
              knit_strerror(st));
        OK(knit_rma_barrier(w));
        int from = (me + n - 1) % n;
        CHECK(cell[0] == from + 1, "the put brought %lld", (long long)cell[0]);
        CHECK(cell[1] == (init ? from + 1 : 0), "the accumulate brought %lld", (long long)cell[1]);
        OK(knit_win_free(w));
    }
    knit_comm_destroy(half);
    free(ranks);
}

/* ------------------------------------------------------------ killagent */

static void killagent(void)
{
    if (rank == size - 1) {
        usleep(300000);
        knit_agent_info_t ai;
        OK(knit_agent_info(ctx, &ai));
        fprintf(stderr, "rank %d: killing the agent of node %d (pid %d)\n", rank, ai.node, ai.pid);
        kill(ai.pid, SIGKILL);
    }
    if (rank == 0)
        for (;;) { /* put through the agent until the job ends */
            int64_t count[2] = {64, 4096}, ss[1] = {64}, ds[1] = {128};
            knit_status_t s = knit_put_strided(win, src, ss, knit_win_base(win, size - 1), ds, count, 1,
                                               size - 1, KNIT_RMA_AGENT, NULL);
            if (s != KNIT_OK) {
                fprintf(stderr, "rank 0: put failed: %s\n", knit_strerror(s));
                exit(3);
            }
        }
    for (;;)
        knit_progress(ctx), usleep(1000);
}

int main(int argc, char **argv)
{
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    const char *cs = argc > 1 ? argv[1] : "sweep";
    knit_agent_info_t ai;
    agents = knit_agent_info(ctx, &ai) == KNIT_OK;
    knit_comm_t *world = knit_comm_world(ctx);
    if (!strcmp(cs, "subcomm")) { /* before any window over the whole job */
        subcomm();
        OK(knit_barrier(world));
        if (rank == 0)
            printf("ok %s\n", cs);
        OK(knit_finalize(ctx));
        return 0;
    }
    OK(knit_mem_alloc(world, WIN, &win));
    mine = knit_win_base(win, rank);
    src = malloc(WIN);
    ref = malloc(WIN);
    CHECK(src && ref, "no memory");
    if (!strcmp(cs, "sweep"))
        sweep(argc > 2 ? argv[2] : "auto");
    else if (!strcmp(cs, "atomics"))
        atomics();
    else if (!strcmp(cs, "passive"))
        passive(argc > 2 ? argv[2] : "auto");
    else if (!strcmp(cs, "errors"))
        errors();
    else if (!strcmp(cs, "local"))
        local_completion(argc > 2 ? argv[2] : "auto");
    else if (!strcmp(cs, "model"))
        model(argc > 2 ? argv[2] : "agent");
    else if (!strcmp(cs, "alltoall"))
        alltoall(argc > 2 ? argv[2] : "auto");
    else if (!strcmp(cs, "many"))
        many(argc > 2 ? argv[2] : "auto");
    else if (!strcmp(cs, "held"))
        held(argc > 2 ? argv[2] : NULL);
    else if (!strcmp(cs, "killagent"))
        killagent();
    else {
        fprintf(stderr, "unknown case %s\n", cs);
        return 2;
    }
    OK(knit_win_free(win));
    OK(knit_barrier(world));
    if (rank == 0)
        printf("ok %s\n", cs);
    free(src);
    free(ref);
    OK(knit_finalize(ctx));
    return 0;
}
