/*
 * Collective tests, run by tests/job/test_coll.sh through knitrun.
 *   coll_test suite MAXBYTES   every collective on the world and on
 *                              sub-communicators, sizes up to MAXBYTES
 *   coll_test user             non-commutative (2x2 matrix product) and
 *                              commutative user ops
 *   coll_test determinism      floating point: same bits everywhere
 *   coll_test nb               nonblocking, overlapped with p2p traffic
 *   coll_test late MAXSEC      one rank arrives 20 ms late, in turn, at
 *                              barriers, small allreduces, 160 KB
 *                              broadcasts and 40 KB-a-rank allgathers
 *                              while the others sleep: all done
 *                              within MAXSEC (a lost wake-up costs a waiter
 *                              a whole second)
 *   coll_test errors           invalid arguments are refused
 *   coll_test bench [ITERS]    median latencies (rank 0 prints a table)
 *   coll_test comms            three communicators' nonblocking collectives interleaved
 *   coll_test choose           10 each of a few collectives (KNIT_COLL_OFFLOAD=auto)
 *   coll_test killagent [N]    allreduces until the job ends; the last
 *                              rank kills its agent after N of them
 * Every result is checked against a reference computed locally.  Prints
 * "ok CASE" on rank 0 when every rank passed; exits nonzero otherwise.
 */
#include <complex.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knit.h"

static knit_ctx_t *ctx;
static int wrank, wsize;
static const char *what = "";

#define CHECK_RANK wrank
#define CHECK_WHAT what
#include "check.h"

static const knit_op_t SUM = {.kind = KNIT_OP_SUM};
static const knit_op_t MAX = {.kind = KNIT_OP_MAX};

static uint32_t val(int r, size_t i)
{
    return (uint32_t)r * 2654435761u + (uint32_t)i * 40503u + 17u;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    CHECK(p, "out of memory (%zu bytes)", n);
    return p;
}

static void expect_u32(const uint32_t *got, size_t n, uint32_t (*ref)(size_t, void *), void *arg,
                       const char *name)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t e = ref(i, arg);
        CHECK(got[i] == e, "%s: element %zu of %zu is %u, expected %u", name, i, n, got[i], e);
    }
}

/* ------------------------------------------------------------ suite */

typedef struct {
    knit_comm_t *c;
    int r, p;
    int root;
    size_t n;
} env_t;

static uint32_t ref_sum(size_t i, void *a)
{
    env_t *e = a;
    uint32_t s = 0;
    for (int q = 0; q < e->p; q++)
        s += val(q, i);
    return s;
}

static uint32_t ref_max(size_t i, void *a)
{
    env_t *e = a;
    int32_t m = INT32_MIN;
    for (int q = 0; q < e->p; q++)
        if ((int32_t)val(q, i) > m)
            m = (int32_t)val(q, i);
    return (uint32_t)m;
}

static uint32_t ref_root(size_t i, void *a)
{
    return val(((env_t *)a)->root, i);
}

static void fill(uint32_t *b, size_t n, int r, size_t base)
{
    for (size_t i = 0; i < n; i++)
        b[i] = val(r, base + i);
}

static size_t vcount(size_t n, int j, int p)
{
    /* varied per-rank counts, some zero */
    return n == 0 ? 0 : (n * (size_t)((j * 7 + 3) % (p + 2))) / (size_t)(p + 1);
}

static void t_barrier(knit_comm_t *c)
{
    what = "barrier";
    for (int i = 0; i < 5; i++)
        OK(knit_barrier(c));
}

static void t_bcast(env_t *e, int roots_all)
{
    what = "bcast";
    uint32_t *b = xmalloc(e->n * 4);
    for (int root = 0; root < e->p; root++) {
        if (!roots_all && root != 0 && root != e->p - 1)
            continue;
        e->root = root;
        if (e->r == root)
            fill(b, e->n, root, 0);
        else
            memset(b, 0xee, e->n * 4);
        OK(knit_bcast(e->c, b, e->n, KNIT_UINT32, root));
        expect_u32(b, e->n, ref_root, e, "bcast");
    }
    free(b);
}

static void t_reduce(env_t *e, int roots_all)
{
    what = "reduce";
    uint32_t *s = xmalloc(e->n * 4), *d = xmalloc(e->n * 4);
    for (int root = 0; root < e->p; root++) {
        if (!roots_all && root != 0 && root != e->p - 1)
            continue;
        for (int inplace = 0; inplace < 2; inplace++) {
            fill(s, e->n, e->r, 0);
            memset(d, 0xee, e->n * 4);
            const void *sb = s;
            if (inplace && e->r == root) {
                memcpy(d, s, e->n * 4);
                sb = KNIT_IN_PLACE;
            }
            OK(knit_reduce(e->c, sb, d, e->n, KNIT_UINT32, &SUM, root));
            if (e->r == root)
                expect_u32(d, e->n, ref_sum, e, "reduce sum");
        }
    }
    free(s);
    free(d);
}

static void t_allreduce(env_t *e)
{
    what = "allreduce";
    uint32_t *s = xmalloc(e->n * 4), *d = xmalloc(e->n * 4);
    fill(s, e->n, e->r, 0);
    OK(knit_allreduce(e->c, s, d, e->n, KNIT_UINT32, &SUM));
    expect_u32(d, e->n, ref_sum, e, "allreduce sum");
    OK(knit_allreduce(e->c, s, d, e->n, KNIT_INT32, &MAX));
    expect_u32(d, e->n, ref_max, e, "allreduce max");
    memcpy(d, s, e->n * 4);
    OK(knit_allreduce(e->c, KNIT_IN_PLACE, d, e->n, KNIT_UINT32, &SUM));
    expect_u32(d, e->n, ref_sum, e, "allreduce in place");
    /* doubles with exact values */
    double *x = xmalloc(e->n * 8), *y = xmalloc(e->n * 8);
    for (size_t i = 0; i < e->n; i++)
        x[i] = (double)(e->r + 1) * (double)(i % 1000);
    OK(knit_allreduce(e->c, x, y, e->n, KNIT_DOUBLE, &SUM));
    double tri = (double)e->p * (e->p + 1) / 2;
    for (size_t i = 0; i < e->n; i++)
        CHECK(y[i] == tri * (double)(i % 1000), "double sum at %zu: %g", i, y[i]);
    free(x);
    free(y);
    free(s);
    free(d);
}

static void t_gather_scatter(env_t *e, int roots_all)
{
    size_t n = e->n, p = (size_t)e->p;
    uint32_t *s = xmalloc(n * 4), *all = xmalloc(n * 4 * p);
    for (int root = 0; root < e->p; root++) {
        if (!roots_all && root != 0 && root != e->p - 1)
            continue;
        for (int inplace = 0; inplace < 2; inplace++) {
            what = "gather";
            fill(s, n, e->r, 0);
            memset(all, 0xee, n * 4 * p);
            const void *sb = s;
            if (inplace && e->r == root) {
                memcpy(all + (size_t)root * n, s, n * 4);
                sb = KNIT_IN_PLACE;
            }
            OK(knit_gather(e->c, sb, all, n, KNIT_UINT32, root));
            if (e->r == root)
                for (int q = 0; q < e->p; q++)
                    for (size_t i = 0; i < n; i++)
                        CHECK(all[(size_t)q * n + i] == val(q, i), "gather block %d elem %zu", q, i);
            what = "scatter";
            if (e->r == root)
                for (int q = 0; q < e->p; q++)
                    fill(all + (size_t)q * n, n, q, 100);
            memset(s, 0xee, n * 4);
            void *rb = inplace && e->r == root ? KNIT_IN_PLACE : (void *)s;
            OK(knit_scatter(e->c, all, rb, n, KNIT_UINT32, root));
            if (rb != KNIT_IN_PLACE)
                for (size_t i = 0; i < n; i++)
                    CHECK(s[i] == val(e->r, 100 + i), "scatter elem %zu", i);
        }
    }
    free(s);
    free(all);
}

static void t_allgather(env_t *e)
{
    what = "allgather";
    size_t n = e->n, p = (size_t)e->p;
    uint32_t *s = xmalloc(n * 4), *all = xmalloc(n * 4 * p);
    for (int inplace = 0; inplace < 2; inplace++) {
        fill(s, n, e->r, 0);
        memset(all, 0xee, n * 4 * p);
        if (inplace)
            memcpy(all + (size_t)e->r * n, s, n * 4);
        OK(knit_allgather(e->c, inplace ? KNIT_IN_PLACE : s, all, n, KNIT_UINT32));
        for (int q = 0; q < e->p; q++)
            for (size_t i = 0; i < n; i++)
                CHECK(all[(size_t)q * n + i] == val(q, i), "block %d elem %zu is %u", q, i,
                      all[(size_t)q * n + i]);
    }
    free(s);
    free(all);
}

static void t_alltoall(env_t *e)
{
    what = "alltoall";
    size_t n = e->n, p = (size_t)e->p;
    uint32_t *s = xmalloc(n * 4 * p), *d = xmalloc(n * 4 * p);
    for (int inplace = 0; inplace < 2; inplace++) {
        for (int q = 0; q < e->p; q++)
            fill(s + (size_t)q * n, n, e->r, (size_t)q * 100000);
        memset(d, 0xee, n * 4 * p);
        if (inplace)
            memcpy(d, s, n * 4 * p);
        OK(knit_alltoall(e->c, inplace ? KNIT_IN_PLACE : s, d, n, KNIT_UINT32));
        for (int q = 0; q < e->p; q++)
            for (size_t i = 0; i < n; i++)
                CHECK(d[(size_t)q * n + i] == val(q, (size_t)e->r * 100000 + i), "from %d elem %zu", q, i);
    }
    free(s);
    free(d);
}

/* v-forms: rank j's block has vcount(n, j) elements; blocks laid out in
 * reverse order with a gap of one element. */
static void layout(size_t n, int p, size_t *cnt, size_t *dsp, size_t *total, int (*cf)(int, int), int me)
{
    size_t at = 0;
    for (int j = p - 1; j >= 0; j--) {
        cnt[j] = vcount(n, cf ? cf(me, j) : j, p);
        dsp[j] = at;
        at += cnt[j] + 1;
    }
    *total = at;
}

/* alltoallv: what rank a sends to rank b */
static int pair(int a, int b) { return a * 3 + b; }

static void t_vforms(env_t *e)
{
    size_t n = e->n;
    int p = e->p, r = e->r;
    size_t *cnt = xmalloc(sizeof(size_t) * (size_t)p), *dsp = xmalloc(sizeof(size_t) * (size_t)p), total;
    layout(n, p, cnt, dsp, &total, NULL, 0);
    uint32_t *s = xmalloc((vcount(n, r, p) + 1) * 4), *all = xmalloc(total * 4);
    for (int root = 0; root < p; root += (p > 3 ? p - 1 : 1)) {
        what = "gatherv";
        fill(s, cnt[r], r, 7);
        memset(all, 0xee, total * 4);
        OK(knit_gatherv(e->c, s, cnt[r], all, cnt, dsp, KNIT_UINT32, root));
        if (r == root)
            for (int q = 0; q < p; q++)
                for (size_t i = 0; i < cnt[q]; i++)
                    CHECK(all[dsp[q] + i] == val(q, 7 + i), "gatherv from %d elem %zu", q, i);
        what = "scatterv";
        if (r == root)
            for (int q = 0; q < p; q++)
                fill(all + dsp[q], cnt[q], q, 9);
        memset(s, 0xee, cnt[r] * 4);
        OK(knit_scatterv(e->c, all, cnt, dsp, s, cnt[r], KNIT_UINT32, root));
        for (size_t i = 0; i < cnt[r]; i++)
            CHECK(s[i] == val(r, 9 + i), "scatterv elem %zu", i);
    }
    what = "allgatherv";
    for (int inplace = 0; inplace < 2; inplace++) {
        memset(all, 0xee, total * 4);
        fill(s, cnt[r], r, 11);
        if (inplace)
            memcpy(all + dsp[r], s, cnt[r] * 4);
        OK(knit_allgatherv(e->c, inplace ? KNIT_IN_PLACE : s, all, cnt, dsp, KNIT_UINT32));
        for (int q = 0; q < p; q++)
            for (size_t i = 0; i < cnt[q]; i++)
                CHECK(all[dsp[q] + i] == val(q, 11 + i), "allgatherv from %d elem %zu", q, i);
    }
    /* alltoallv: a sends vcount(n, pair(a, b)) elements to b */
    what = "alltoallv";
    size_t *sc = xmalloc(sizeof(size_t) * (size_t)p), *sd = xmalloc(sizeof(size_t) * (size_t)p);
    size_t *rc = xmalloc(sizeof(size_t) * (size_t)p), *rd = xmalloc(sizeof(size_t) * (size_t)p);
    size_t st = 0, rt = 0;
    for (int b = p - 1; b >= 0; b--) {
        sc[b] = vcount(n, pair(r, b), p);
        sd[b] = st;
        st += sc[b] + 2;
        rc[b] = vcount(n, pair(b, r), p);
        rd[b] = rt;
        rt += rc[b] + 1;
    }
    uint32_t *sv = xmalloc(st * 4), *rv = xmalloc((rt > st ? rt : st) * 4);
    for (int b = 0; b < p; b++)
        fill(sv + sd[b], sc[b], r, (size_t)b * 1000);
    memset(rv, 0xee, rt * 4);
    OK(knit_alltoallv(e->c, sv, sc, sd, rv, rc, rd, KNIT_UINT32));
    for (int a = 0; a < p; a++)
        for (size_t i = 0; i < rc[a]; i++)
            CHECK(rv[rd[a] + i] == val(a, (size_t)r * 1000 + i), "alltoallv from %d elem %zu", a, i);
    /* alltoallw in bytes: the same exchange */
    what = "alltoallw";
    for (int b = 0; b < p; b++) {
        sc[b] *= 4;
        sd[b] *= 4;
        rc[b] *= 4;
        rd[b] *= 4;
    }
    memset(rv, 0xee, rt * 4);
    OK(knit_alltoallw(e->c, sv, sc, sd, rv, rc, rd));
    for (int a = 0; a < p; a++)
        for (size_t i = 0; i < rc[a] / 4; i++)
            CHECK(rv[rd[a] / 4 + i] == val(a, (size_t)r * 1000 + i), "alltoallw from %d elem %zu", a, i);
    /* in place (symmetric counts): a sends vcount(n, a + b) to b */
    what = "alltoallv in place";
    rt = 0;
    for (int b = 0; b < p; b++) {
        rc[b] = vcount(n, r + b, p);
        rd[b] = rt;
        rt += rc[b];
    }
    free(rv);
    rv = xmalloc(rt * 4);
    for (int b = 0; b < p; b++)
        fill(rv + rd[b], rc[b], r, (size_t)b * 1000);
    OK(knit_alltoallv(e->c, KNIT_IN_PLACE, NULL, NULL, rv, rc, rd, KNIT_UINT32));
    for (int a = 0; a < p; a++)
        for (size_t i = 0; i < rc[a]; i++)
            CHECK(rv[rd[a] + i] == val(a, (size_t)r * 1000 + i), "from %d elem %zu", a, i);
    free(sv);
    free(rv);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(s);
    free(all);
    free(cnt);
    free(dsp);
}

static void t_reduce_scatter(env_t *e)
{
    size_t n = e->n;
    int p = e->p, r = e->r;
    size_t *rc = xmalloc(sizeof(size_t) * (size_t)p), total = 0, mine = 0;
    for (int q = 0; q < p; q++) {
        rc[q] = vcount(n, q, p);
        if (q < r)
            mine += rc[q];
        total += rc[q];
    }
    uint32_t *s = xmalloc((total > n * (size_t)p ? total : n * (size_t)p) * 4);
    uint32_t *d = xmalloc((total > n * (size_t)p ? total : n * (size_t)p) * 4);
    for (int inplace = 0; inplace < 2; inplace++) {
        what = "reduce_scatter";
        fill(s, total, r, 0);
        memset(d, 0xee, total * 4);
        if (inplace)
            memcpy(d, s, total * 4);
        OK(knit_reduce_scatter(e->c, inplace ? KNIT_IN_PLACE : s, d, rc, KNIT_UINT32, &SUM));
        for (size_t i = 0; i < rc[r]; i++)
            CHECK(d[i] == ref_sum(mine + i, e), "reduce_scatter elem %zu", i);
        what = "reduce_scatter_block";
        fill(s, n * (size_t)p, r, 0);
        if (inplace)
            memcpy(d, s, n * (size_t)p * 4);
        OK(knit_reduce_scatter_block(e->c, inplace ? KNIT_IN_PLACE : s, d, n, KNIT_UINT32, &SUM));
        for (size_t i = 0; i < n; i++)
            CHECK(d[i] == ref_sum((size_t)r * n + i, e), "reduce_scatter_block elem %zu", i);
    }
    free(s);
    free(d);
    free(rc);
}

static void t_scan(env_t *e)
{
    size_t n = e->n;
    uint32_t *s = xmalloc(n * 4), *d = xmalloc(n * 4);
    for (int ex = 0; ex < 2; ex++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            what = ex ? "exscan" : "scan";
            fill(s, n, e->r, 0);
            memset(d, 0xee, n * 4);
            if (inplace)
                memcpy(d, s, n * 4);
            const void *sb = inplace ? KNIT_IN_PLACE : s;
            OK(ex ? knit_exscan(e->c, sb, d, n, KNIT_UINT32, &SUM) : knit_scan(e->c, sb, d, n, KNIT_UINT32, &SUM));
            if (ex && e->r == 0)
                continue;
            for (size_t i = 0; i < n; i++) {
                uint32_t ref = 0;
                for (int q = 0; q < e->r + !ex; q++)
                    ref += val(q, i);
                CHECK(d[i] == ref, "%s elem %zu: %u, expected %u", what, i, d[i], ref);
            }
        }
    }
    free(s);
    free(d);
}

/* element counts (4-byte elements): small, odd, and around the default
 * switches, then powers of two up to max bytes */
static size_t counts(size_t *out, size_t maxbytes)
{
    static const size_t base[] = {0, 1, 2, 3, 5, 7, 8, 31, 64, 63, 255, 256, 257, 1000, 4095, 4096, 4097,
                                  16383, 16384, 16385, 65535, 65537, 131071, 131073};
    size_t k = 0;
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        if (base[i] * 4 <= maxbytes)
            out[k++] = base[i];
    for (size_t b = 1 << 20; b <= maxbytes; b <<= 2)
        out[k++] = b / 4 + 1;
    return k;
}

static void run_suite(knit_comm_t *c, size_t maxbytes, int big_rank_limit)
{
    env_t e = {.c = c, .r = knit_comm_rank(c), .p = knit_comm_size(c)};
    if (e.r < 0)
        return;
    size_t cs[64];
    size_t k = counts(cs, maxbytes);
    t_barrier(c);
    for (size_t i = 0; i < k; i++) {
        e.n = cs[i];
        int small = e.n <= 4096;
        size_t per_rank_bytes = e.n * 4 * (size_t)e.p;
        t_bcast(&e, small);
        t_reduce(&e, small);
        t_allreduce(&e);
        t_scan(&e);
        if (per_rank_bytes <= maxbytes * (size_t)big_rank_limit) {
            t_gather_scatter(&e, small);
            t_allgather(&e);
            t_alltoall(&e);
            t_vforms(&e);
            t_reduce_scatter(&e);
        }
    }
    t_barrier(c);
}

/* Sub-communicators: reversed world, odd ranks, ranks 0 and up by 3,
 * every rank but 0 in a scrambled order. */
static void sub_comms(size_t maxbytes)
{
    int *rk = xmalloc(sizeof(int) * (size_t)wsize);
    knit_comm_t *c;
    for (int i = 0; i < wsize; i++)
        rk[i] = wsize - 1 - i;
    OK(knit_comm_create(ctx, rk, wsize, 11, &c));
    CHECK(knit_comm_rank(c) == wsize - 1 - wrank, "rank in reversed comm");
    run_suite(c, maxbytes, 1);
    knit_comm_destroy(c);
    int n = 0;
    for (int i = 1; i < wsize; i += 2)
        rk[n++] = i;
    if (n) {
        OK(knit_comm_create(ctx, rk, n, 12, &c));
        CHECK(knit_comm_rank(c) == (wrank % 2 ? wrank / 2 : -1), "rank in odd comm");
        run_suite(c, maxbytes, 1);
        knit_comm_destroy(c);
    }
    n = 0;
    for (int i = 0; i < wsize; i += 3)
        rk[n++] = i;
    OK(knit_comm_create(ctx, rk, n, 13, &c));
    run_suite(c, maxbytes, 1);
    knit_comm_destroy(c);
    n = 0;
    for (int i = 1; i < wsize; i++)
        rk[n++] = (i * 5) % wsize ? (i * 5) % wsize : i; /* a permutation when gcd(5, size) = 1 */
    int okperm = 1;
    for (int i = 0; i < n && okperm; i++)
        for (int j = 0; j < i; j++)
            okperm &= rk[i] != rk[j] && rk[i] != 0;
    if (n && okperm) {
        OK(knit_comm_create(ctx, rk, n, 14, &c));
        run_suite(c, maxbytes, 1);
        knit_comm_destroy(c);
    }
    free(rk);
}

/* ------------------------------------------------------------ user ops */

typedef struct { uint32_t a, b, c, d; } mat_t; /* 2x2, row major, arithmetic mod 2^32 */

static mat_t mul(mat_t x, mat_t y)
{
    return (mat_t){x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}

static int user_calls;

/* inout = in * inout (MPI's order) */
static void matmul_fn(const void *in, void *inout, size_t n, knit_dtype_t t, void *arg)
{
    (void)arg;
    if (t != KNIT_DOUBLE_COMPLEX)
        abort();
    const mat_t *x = in;
    mat_t *y = inout;
    for (size_t i = 0; i < n; i++)
        y[i] = mul(x[i], y[i]);
    user_calls++;
}

static void usum_fn(const void *in, void *inout, size_t n, knit_dtype_t t, void *arg)
{
    (void)t;
    (void)arg;
    const uint32_t *x = in;
    uint32_t *y = inout;
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

static mat_t mat_of(int r, size_t i)
{
    return (mat_t){val(r, i) | 1, val(r, i + 1) >> 3, val(r, i + 2) >> 5, val(r, i + 3) | 3};
}

static mat_t ref_prod(int from, int to, size_t i) /* M_from * ... * M_to-1 */
{
    mat_t m = {1, 0, 0, 1};
    for (int q = from; q < to; q++)
        m = mul(m, mat_of(q, i));
    return m;
}

static void check_mat(const mat_t *got, size_t n, int from, int to, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        mat_t e = ref_prod(from, to, i);
        CHECK(!memcmp(&got[i], &e, sizeof(e)), "%s: matrix %zu wrong (ranks %d..%d)", name, i, from, to - 1);
    }
}

static void user_suite(knit_comm_t *c)
{
    int r = knit_comm_rank(c), p = knit_comm_size(c);
    if (r < 0)
        return;
    knit_op_t mm = {.kind = KNIT_OP_USER, .fn = matmul_fn, .commutative = 0};
    knit_op_t us = {.kind = KNIT_OP_USER, .fn = usum_fn, .commutative = 1};
    static const size_t ns[] = {1, 3, 17, 1000, 70001};
    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        size_t n = ns[k];
        mat_t *s = xmalloc(n * sizeof(mat_t) * (size_t)p), *d = xmalloc(n * sizeof(mat_t) * (size_t)p);
        for (size_t i = 0; i < n; i++)
            s[i] = mat_of(r, i);
        what = "user allreduce";
        OK(knit_allreduce(c, s, d, n, KNIT_DOUBLE_COMPLEX, &mm));
        check_mat(d, n, 0, p, what);
        what = "user reduce";
        for (int root = 0; root < p; root++) {
            memset(d, 0, n * sizeof(mat_t));
            OK(knit_reduce(c, s, d, n, KNIT_DOUBLE_COMPLEX, &mm, root));
            if (r == root)
                check_mat(d, n, 0, p, what);
        }
        what = "user scan";
        OK(knit_scan(c, s, d, n, KNIT_DOUBLE_COMPLEX, &mm));
        check_mat(d, n, 0, r + 1, what);
        what = "user exscan";
        OK(knit_exscan(c, s, d, n, KNIT_DOUBLE_COMPLEX, &mm));
        if (r > 0)
            check_mat(d, n, 0, r, what);
        what = "user reduce_scatter_block";
        for (int q = 0; q < p; q++)
            for (size_t i = 0; i < n; i++)
                s[(size_t)q * n + i] = mat_of(r, (size_t)q * n + i);
        OK(knit_reduce_scatter_block(c, s, d, n, KNIT_DOUBLE_COMPLEX, &mm));
        for (size_t i = 0; i < n; i++) {
            mat_t e = ref_prod(0, p, (size_t)r * n + i);
            CHECK(!memcmp(&d[i], &e, sizeof(e)), "%s: matrix %zu", what, i);
        }
        what = "user commutative allreduce";
        uint32_t *u = (uint32_t *)s, *v = (uint32_t *)d;
        fill(u, 4 * n, r, 0);
        OK(knit_allreduce(c, u, v, 4 * n, KNIT_UINT32, &us));
        env_t e = {.c = c, .r = r, .p = p};
        expect_u32(v, 4 * n, ref_sum, &e, what);
        free(s);
        free(d);
    }
}

/* ------------------------------------------------------------ determinism */

static double rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(*s >> 11) / 9007199254740992.0 - 0.5) * 1e3;
}

static void determinism(knit_comm_t *c)
{
    int r = knit_comm_rank(c), p = knit_comm_size(c);
    static const size_t ns[] = {1, 7, 1000, 5000, 100001};
    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        size_t n = ns[k];
        double *x = xmalloc(n * 8), *y = xmalloc(n * 8), *z = xmalloc(n * 8), *all = xmalloc(n * 8 * (size_t)p);
        uint64_t seed = 1234 + (uint64_t)r * 77;
        for (size_t i = 0; i < n; i++)
            x[i] = rnd(&seed);
        what = "determinism";
        OK(knit_allreduce(c, x, y, n, KNIT_DOUBLE, &SUM));
        for (int rep = 0; rep < 3; rep++) {
            OK(knit_allreduce(c, x, z, n, KNIT_DOUBLE, &SUM));
            CHECK(!memcmp(y, z, n * 8), "allreduce of doubles differs between runs (n %zu)", n);
        }
        OK(knit_allgather(c, y, all, n, KNIT_DOUBLE));
        for (int q = 0; q < p; q++)
            CHECK(!memcmp(all + (size_t)q * n, y, n * 8), "rank %d's allreduce result differs (n %zu)", q, n);
        OK(knit_reduce(c, x, z, n, KNIT_DOUBLE, &SUM, p - 1));
        free(x);
        free(y);
        free(z);
        free(all);
    }
}

/* ------------------------------------------------------------ nonblocking */

static void nonblocking(knit_comm_t *c, int iters)
{
    int r = knit_comm_rank(c), p = knit_comm_size(c);
    uint32_t id = 0; /* the world's p2p context: its traffic shares the communicator */
    const size_t n = 5000;
    uint32_t *s = xmalloc(n * 4), *d = xmalloc(n * 4), *b = xmalloc(n * 4), *g = xmalloc(n * 4 * (size_t)p);
    uint32_t *a2 = xmalloc(n * 4 * (size_t)p), *a3 = xmalloc(n * 4 * (size_t)p);
    env_t e = {.c = c, .r = r, .p = p, .n = n};
    for (int it = 0; it < iters; it++) {
        what = "nonblocking";
        int root = it % p;
        e.root = root;
        fill(s, n, r, 0);
        if (r == root)
            fill(b, n, root, 0);
        else
            memset(b, 0, n * 4);
        for (int q = 0; q < p; q++)
            fill(a2 + (size_t)q * n, n, r, (size_t)q * 100000);
        knit_coll_request_t *rq[6];
        OK(knit_ibarrier(c, &rq[0]));
        OK(knit_iallreduce(c, s, d, n, KNIT_UINT32, &SUM, &rq[1]));
        OK(knit_ibcast(c, b, n, KNIT_UINT32, root, &rq[2]));
        OK(knit_iallgather(c, s, g, n, KNIT_UINT32, &rq[3]));
        OK(knit_ialltoall(c, a2, a3, n, KNIT_UINT32, &rq[4]));
        OK(knit_ibarrier(c, &rq[5]));
        /* point-to-point around a ring on the same communicator id, with
         * tags the collectives could use if they leaked into p2p space */
        for (int k = 0; k < 20; k++) {
            uint32_t out[64], in[64];
            for (int i = 0; i < 64; i++)
                out[i] = (uint32_t)(r * 1000 + k * 64 + i);
            knit_request_t *pr[2];
            OK(knit_irecv(ctx, in, sizeof(in), knit_comm_job_rank(c, (r - 1 + p) % p), k, id, &pr[0]));
            OK(knit_isend(ctx, out, sizeof(out), knit_comm_job_rank(c, (r + 1) % p), k, id, &pr[1]));
            OK(knit_waitall(2, pr, NULL));
            int from = (r - 1 + p) % p;
            for (int i = 0; i < 64; i++)
                CHECK(in[i] == (uint32_t)(from * 1000 + k * 64 + i), "p2p word %d from %d", i, from);
        }
        /* finish in a scrambled order, by test and by wait */
        int left = 6;
        while (left) {
            for (int i = 5; i >= 0; i--) {
                if (!rq[i])
                    continue;
                int done;
                OK(knit_coll_test(&rq[i], &done));
                if (done) {
                    CHECK(!rq[i], "request not cleared");
                    left--;
                }
            }
        }
        expect_u32(d, n, ref_sum, &e, "iallreduce");
        expect_u32(b, n, ref_root, &e, "ibcast");
        for (int q = 0; q < p; q++)
            for (size_t i = 0; i < n; i++)
                CHECK(g[(size_t)q * n + i] == val(q, i), "iallgather");
        for (int q = 0; q < p; q++)
            for (size_t i = 0; i < n; i++)
                CHECK(a3[(size_t)q * n + i] == val(q, (size_t)r * 100000 + i), "ialltoall");
        /* progress through unrelated calls only: the collectives finish while
         * this rank waits on a p2p exchange that needs them done elsewhere */
        knit_coll_request_t *q1, *q2, *q3;
        OK(knit_ireduce(c, s, d, n, KNIT_UINT32, &SUM, root, &q1));
        OK(knit_igather(c, s, g, n, KNIT_UINT32, root, &q2));
        OK(knit_iscatter(c, a2, b, n, KNIT_UINT32, root, &q3));
        while (!knit_coll_done(q1) || !knit_coll_done(q2) || !knit_coll_done(q3))
            OK(knit_progress(ctx));
        OK(knit_coll_wait(&q1));
        OK(knit_coll_wait(&q2));
        OK(knit_coll_wait(&q3));
        if (r == root)
            expect_u32(d, n, ref_sum, &e, "ireduce");
    }
    free(s);
    free(d);
    free(b);
    free(g);
    free(a2);
    free(a3);
}

/* ------------------------------------------------------------ late */

static double now_us(void)
{
    return check_now() * 1e6;
}

#define LATE_BCAST_N 40000 /* elements: 2 pieces of a staged bcast at 5 ranks */
#define LATE_GATHER_N 10000 /* elements: 3 pieces of a staged allgather */

static void late(knit_comm_t *c, double max_sec)
{
    int p = knit_comm_size(c), r = knit_comm_rank(c), rounds = 2 * p + 6;
    uint32_t *big = xmalloc(LATE_BCAST_N * 4), *gathered = xmalloc((size_t)p * LATE_GATHER_N * 4);
    OK(knit_barrier(c));
    double t0 = now_us();
    for (int i = 0; i < rounds; i++) {
        if (i % p == r)
            nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
        what = "late barrier";
        OK(knit_barrier(c));
        if (i % p == r)
            nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
        uint64_t v = (uint64_t)r + (uint64_t)i, sum = 0;
        what = "late allreduce";
        OK(knit_allreduce(c, &v, &sum, 1, KNIT_UINT64, &SUM));
        CHECK(sum == (uint64_t)p * (uint64_t)(p - 1) / 2 + (uint64_t)p * (uint64_t)i,
              "allreduce %d: %llu", i, (unsigned long long)sum);
        /* a broadcast of several pieces (staged), the late rank its root
         * in every other pass over the ranks, a reader otherwise */
        int root = (i / p) % 2 ? i % p : (i + 1) % p;
        if (i % p == r)
            nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
        for (size_t j = 0; j < LATE_BCAST_N; j++)
            big[j] = r == root ? (uint32_t)(i * 7919 + (int)j) : 0;
        what = "late bcast";
        OK(knit_bcast(c, big, LATE_BCAST_N, KNIT_UINT32, root));
        for (size_t j = 0; j < LATE_BCAST_N; j++)
            CHECK(big[j] == (uint32_t)(i * 7919 + (int)j), "bcast %d from %d: element %zu is %u", i, root, j,
                  big[j]);
        /* an allgather of several pieces a rank, the late one last in */
        if (i % p == r)
            nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
        for (size_t j = 0; j < LATE_GATHER_N; j++)
            big[j] = (uint32_t)(r * 31 + i + (int)j);
        what = "late allgather";
        OK(knit_allgather(c, big, gathered, LATE_GATHER_N, KNIT_UINT32));
        for (int q = 0; q < p; q++)
            for (size_t j = 0; j < LATE_GATHER_N; j++)
                CHECK(gathered[(size_t)q * LATE_GATHER_N + j] == (uint32_t)(q * 31 + i + (int)j),
                      "allgather %d: rank %d's element %zu is %u", i, q, j, gathered[(size_t)q * LATE_GATHER_N + j]);
    }
    free(big);
    free(gathered);
    double t = (now_us() - t0) / 1e6;
    what = "late";
    CHECK(t < max_sec, "%d late arrivals of 20 ms took %.2f s (more than %.2f: a lost wake-up?)", 4 * rounds, t,
          max_sec);
}

/* ------------------------------------------------------------ two communicators */

/* Three communicators' collectives in flight together, started and
 * finished in different orders: the world (sum), the world reversed (max,
 * 64 KiB: segments), the even ranks (bcast from their last). */
static void two_comms(knit_comm_t *w)
{
    enum { N = 16384 };
    int *rk = xmalloc(sizeof(int) * (size_t)wsize), ne = 0;
    knit_comm_t *rev, *even = NULL;
    for (int i = 0; i < wsize; i++)
        rk[i] = wsize - 1 - i;
    OK(knit_comm_create(ctx, rk, wsize, 21, &rev));
    for (int i = 0; i < wsize; i += 2)
        rk[ne++] = i;
    OK(knit_comm_create(ctx, rk, ne, 22, &even));
    float *a = xmalloc(N * sizeof(float)), *b = xmalloc(N * sizeof(float));
    int32_t x, sum, bc;
    for (int k = 0; k < 20; k++) {
        knit_coll_request_t *q[3] = {NULL, NULL, NULL};
        x = wrank + k;
        for (int i = 0; i < N; i++)
            a[i] = (float)((wrank * 7 + i + k) % 101);
        bc = knit_comm_rank(even) == ne - 1 ? 1000 + k : -1;
        OK(knit_iallreduce(w, &x, &sum, 1, KNIT_INT32, &SUM, &q[0]));
        OK(knit_iallreduce(rev, a, b, N, KNIT_FLOAT, &MAX, &q[1]));
        if (knit_comm_rank(even) >= 0)
            OK(knit_ibcast(even, &bc, 1, KNIT_INT32, ne - 1, &q[2]));
        for (int j = 0; j < 3; j++) { /* finished in another order each time */
            int i = (j + k) % 3;
            if (q[i])
                OK(knit_coll_wait(&q[i]));
        }
        CHECK(sum == wsize * (wsize - 1) / 2 + wsize * k, "sum %d", sum);
        for (int i = 0; i < N; i += 997) {
            int best = -1;
            for (int r = 0; r < wsize; r++)
                best = (r * 7 + i + k) % 101 > best ? (r * 7 + i + k) % 101 : best;
            CHECK(b[i] == (float)best, "max at %d: %g, want %d", i, b[i], best);
        }
        CHECK(knit_comm_rank(even) < 0 || bc == 1000 + k, "bcast %d", bc);
    }
    knit_comm_destroy(rev);
    knit_comm_destroy(even);
    free(rk);
    free(a);
    free(b);
}

/* ------------------------------------------------------------ choosing */

/* 10 each of: allreduce of 8 B, allreduce of 64 KiB, barrier, bcast of
 * 8 B, bcast of 4 KiB; each result checked.  With KNIT_STATS the agents
 * count the ones that were offloaded (tests/job/test_coll.sh: auto). */
static void choose(knit_comm_t *c)
{
    enum { N = 16384 };
    float *a = xmalloc(N * sizeof(float)), *b = xmalloc(N * sizeof(float));
    char *m = xmalloc(4096);
    int p = knit_comm_size(c), r = knit_comm_rank(c);
    for (int i = 0; i < N; i++)
        a[i] = (float)(r + 1);
    for (int k = 0; k < 10; k++) {
        OK(knit_allreduce(c, a, b, 2, KNIT_FLOAT, &SUM));
        CHECK(b[0] == (float)(p * (p + 1) / 2), "allreduce of 8 B");
        OK(knit_allreduce(c, a, b, N, KNIT_FLOAT, &SUM));
        CHECK(b[N - 1] == (float)(p * (p + 1) / 2), "allreduce of 64 KiB");
        OK(knit_barrier(c));
        for (size_t len = 8; len <= 4096; len *= 512) {
            memset(m, r ? 0 : 'a' + k, len);
            OK(knit_bcast(c, m, len, KNIT_BYTE, 0));
            CHECK(m[len - 1] == 'a' + k, "bcast of %zu", len);
        }
    }
    free(a);
    free(b);
    free(m);
}

/* ------------------------------------------------------------ an agent dies */

/* Allreduces (1 KiB and 256 KiB, in turn) until the job ends; the last
 * rank kills its node's agent after `after` of them, while the others are
 * inside theirs.  The job must end, naming the agent (knitrun). */
static void kill_agent(knit_comm_t *c, int after)
{
    enum { N = 64 << 10 };
    float *a = xmalloc(N * sizeof(float)), *b = xmalloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        a[i] = 1.0f;
    for (int i = 0;; i++) {
        if (i == after && wrank == wsize - 1) {
            knit_agent_info_t info;
            OK(knit_agent_info(ctx, &info));
            kill(info.pid, SIGKILL);
        }
        OK(knit_allreduce(c, a, b, i % 2 ? N : 256, KNIT_FLOAT, &SUM));
    }
}

/* ------------------------------------------------------------ errors */

static void errors(knit_comm_t *c)
{
    what = "errors";
    knit_op_t band = {.kind = KNIT_OP_BAND}, user0 = {.kind = KNIT_OP_USER};
    double x = 1, y;
    CHECK(knit_allreduce(c, &x, &y, 1, KNIT_DOUBLE, &band) == KNIT_ERR_INVAL, "BAND on double accepted");
    CHECK(knit_allreduce(c, &x, &y, 1, KNIT_DOUBLE, &user0) == KNIT_ERR_INVAL, "user op without fn");
    CHECK(knit_allreduce(c, &x, &y, 1, KNIT_DOUBLE, NULL) == KNIT_ERR_INVAL, "NULL op");
    CHECK(knit_bcast(c, &x, 1, KNIT_DOUBLE, knit_comm_size(c)) == KNIT_ERR_INVAL, "root out of range");
    CHECK(knit_bcast(c, &x, 1, KNIT_DTYPE_COUNT, 0) == KNIT_ERR_INVAL, "bad dtype");
    CHECK(knit_bcast(NULL, &x, 1, KNIT_DOUBLE, 0) == KNIT_ERR_INVAL, "NULL comm");
    CHECK(knit_ibarrier(c, NULL) == KNIT_ERR_INVAL, "NULL request");
    int other = wsize > 1 ? (wrank + 1) % wsize : -1;
    if (other >= 0) {
        knit_comm_t *nm;
        OK(knit_comm_create(ctx, &other, 1, 21, &nm));
        CHECK(knit_comm_rank(nm) == -1, "not a member");
        CHECK(knit_barrier(nm) == KNIT_ERR_INVAL, "collective on a communicator without me");
        knit_comm_destroy(nm);
    }
    int dup[2] = {0, 0};
    knit_comm_t *bad;
    CHECK(knit_comm_create(ctx, dup, 2, 22, &bad) == KNIT_ERR_INVAL, "duplicate ranks accepted");
    CHECK(knit_comm_create(ctx, dup, 1, KNIT_COLL_CTX_BIT, &bad) == KNIT_ERR_INVAL, "id with the coll bit");
    OK(knit_barrier(c)); /* still in step */
}

/* ------------------------------------------------------------ bench */

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void bench(knit_comm_t *c, int iters)
{
    int p = knit_comm_size(c), r = knit_comm_rank(c);
    static const size_t sizes[] = {8, 1024, 65536, 1 << 20};
    const char *names[] = {"barrier", "bcast", "allreduce", "reduce", "allgather", "alltoall"};
    char *a = xmalloc((1 << 20) * (size_t)p), *b = xmalloc((1 << 20) * (size_t)p);
    memset(a, 1, (1 << 20) * (size_t)p);
    double *t = xmalloc(sizeof(double) * (size_t)iters);
    if (r == 0)
        printf("# knit collectives, %d ranks, median of %d (us)\n%-10s %10s %10s %10s %10s\n", p, iters,
               "op", "8", "1k", "64k", "1m");
    for (int op = 0; op < 6; op++) {
        if (r == 0)
            printf("%-10s", names[op]);
        for (size_t si = 0; si < 4; si++) {
            size_t sz = sizes[si];
            if (op == 0 && si)
                break;
            int it = sz >= (1 << 20) ? (iters / 10 > 5 ? iters / 10 : 5) : iters;
            OK(knit_barrier(c));
            for (int i = -it / 10 - 1; i < it; i++) {
                double t0 = now_us();
                switch (op) {
                case 0: OK(knit_barrier(c)); break;
                case 1: OK(knit_bcast(c, a, sz, KNIT_BYTE, 0)); break;
                case 2: OK(knit_allreduce(c, a, b, sz / 4, KNIT_FLOAT, &SUM)); break;
                case 3: OK(knit_reduce(c, a, b, sz / 4, KNIT_FLOAT, &SUM, 0)); break;
                case 4: OK(knit_allgather(c, a, b, sz, KNIT_BYTE)); break;
                case 5: OK(knit_alltoall(c, a, b, sz, KNIT_BYTE)); break;
                }
                if (i >= 0)
                    t[i] = now_us() - t0;
            }
            /* the slowest rank's median */
            qsort(t, (size_t)it, sizeof(double), cmpd);
            double med = t[it / 2], mx;
            OK(knit_allreduce(c, &med, &mx, 1, KNIT_DOUBLE, &MAX));
            if (r == 0)
                printf(" %10.2f", mx);
        }
        if (r == 0)
            printf("\n");
    }
    free(a);
    free(b);
    free(t);
}

/* ------------------------------------------------------------ async */

static void compute_ms(double ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

/* Asynchronous progress: start a collective, compute 10 ms without any
 * knit call, then test once: offloaded, the agent has completed it
 * meanwhile.  Rank 0 prints how many of them every rank found complete
 * at that first test (the tests compare it with the hosts' algorithms,
 * which move only inside knit calls). */
static void async_progress(knit_comm_t *c, int iters)
{
    int r = knit_comm_rank(c), p = knit_comm_size(c);
    const size_t ns[2] = {2, 16384}; /* 8 B, 64 KiB */
    size_t nmax = ns[1];
    uint32_t *s = xmalloc(nmax * 4), *d = xmalloc(nmax * 4);
    env_t e = {.c = c, .r = r, .p = p};
    uint64_t first = 0, total = 0;
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < 4; k++) {
            for (int z = 0; z < 2; z++) {
                e.n = ns[z];
                e.root = (it + k) % p;
                knit_coll_request_t *rq;
                fill(s, e.n, r, 0);
                memset(d, 0, e.n * 4);
                OK(knit_barrier(c)); /* every member starts within microseconds */
                switch (k) {
                case 0:
                    what = "async iallreduce";
                    OK(knit_iallreduce(c, s, d, e.n, KNIT_UINT32, &SUM, &rq));
                    break;
                case 1:
                    what = "async ibcast";
                    if (r == e.root)
                        fill(d, e.n, r, 0);
                    OK(knit_ibcast(c, d, e.n, KNIT_UINT32, e.root, &rq));
                    break;
                case 2:
                    what = "async ireduce";
                    OK(knit_ireduce(c, s, d, e.n, KNIT_UINT32, &SUM, e.root, &rq));
                    break;
                default:
                    what = "async ibarrier";
                    OK(knit_ibarrier(c, &rq));
                    break;
                }
                compute_ms(10);
                int done;
                OK(knit_coll_test(&rq, &done));
                first += (uint64_t)done;
                total++;
                if (!done)
                    OK(knit_coll_wait(&rq));
                if (k == 0)
                    expect_u32(d, e.n, ref_sum, &e, "iallreduce");
                else if (k == 1)
                    expect_u32(d, e.n, ref_root, &e, "ibcast");
                else if (k == 2 && r == e.root)
                    expect_u32(d, e.n, ref_sum, &e, "ireduce");
            }
        }
    }
    uint64_t in[2] = {first, total}, out[2];
    OK(knit_allreduce(c, in, out, 2, KNIT_UINT64, &SUM));
    if (r == 0)
        printf("async: %llu of %llu complete at the first test\n", (unsigned long long)out[0],
               (unsigned long long)out[1]);
    free(s);
    free(d);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: coll_test suite MAXBYTES | user | determinism | nb | async [ITERS] | late MAXSEC | errors | bench [ITERS]\n");
        return 2;
    }
    OK(knit_init(&argc, &argv, &ctx));
    wrank = knit_rank(ctx);
    wsize = knit_size(ctx);
    knit_comm_t *w = knit_comm_world(ctx);
    CHECK(w && knit_comm_size(w) == wsize && knit_comm_rank(w) == wrank, "world communicator");
    const char *cs = argv[1];
    if (!strcmp(cs, "suite")) {
        size_t max = argc > 2 ? parse_size(argv[2]) : 65536;
        run_suite(w, max, 4);
    } else if (!strcmp(cs, "sub")) {
        sub_comms(argc > 2 ? parse_size(argv[2]) : 16384);
    } else if (!strcmp(cs, "user")) {
        user_suite(w);
        int n = 0, *rk = xmalloc(sizeof(int) * (size_t)wsize);
        for (int i = wsize - 1; i >= 0; i -= 2)
            rk[n++] = i;
        knit_comm_t *c;
        OK(knit_comm_create(ctx, rk, n, 31, &c));
        user_suite(c);
        knit_comm_destroy(c);
        free(rk);
    } else if (!strcmp(cs, "determinism")) {
        determinism(w);
    } else if (!strcmp(cs, "nb")) {
        nonblocking(w, argc > 2 ? atoi(argv[2]) : 20);
    } else if (!strcmp(cs, "async")) {
        async_progress(w, argc > 2 ? atoi(argv[2]) : 3);
    } else if (!strcmp(cs, "late")) {
        late(w, argc > 2 ? atof(argv[2]) : 5.0);
    } else if (!strcmp(cs, "errors")) {
        errors(w);
    } else if (!strcmp(cs, "comms")) {
        two_comms(w);
    } else if (!strcmp(cs, "choose")) {
        choose(w);
    } else if (!strcmp(cs, "killagent")) {
        kill_agent(w, argc > 2 ? atoi(argv[2]) : 200);
    } else if (!strcmp(cs, "bench")) {
        bench(w, argc > 2 ? atoi(argv[2]) : 1000);
    } else {
        fprintf(stderr, "unknown case %s\n", cs);
        return 2;
    }
    OK(knit_barrier(w));
    if (wrank == 0 && strcmp(cs, "bench"))
        printf("ok %s\n", cs);
    OK(knit_finalize(ctx));
    return 0;
}
