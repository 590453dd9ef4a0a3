/*
 * overlap: how much of a nonblocking allreduce a rank can hide behind its
 * own computing, measured as the OSU micro-benchmarks measure it
 * (osu_iallreduce): for each size
 *   pure     Iallreduce then Wait, averaged over the iterations;
 *   overlap  Iallreduce, computing for `pure` (a loop reading the clock,
 *            no library call), then Wait;
 *   overlap % = 100 * max(0, 1 - (total - compute) / pure),
 * each averaged over the ranks (OSU's average).  100 %: the collective
 * finished while the rank computed; 0 %: it moved only in Wait.  One
 * buffer pair for every iteration of a size, as OSU does; the result of
 * every call is checked.
 *
 * Output: "result overlap <size> overlap <pct> %" (and "pure ... us",
 * "total ... us") per batch median, then a table.  Built for knit (with
 * bp_knit.c) and for each MPI by bench/overlap.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bp.h"
#include "common.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Computing for `sec` without calling the library. */
static double compute(double sec)
{
    double t0 = now(), t;
    volatile double x = 1.0;
    do {
        for (int i = 0; i < 64; i++)
            x = x * 1.0000001 + 1e-9;
        t = now();
    } while (t - t0 < sec);
    return t - t0;
}

typedef struct run {
    double *in, *out;
    size_t count;
    int rank, size;
} run_t;

static double val(int r, size_t i, long it)
{
    return (double)((r + 1) * 3 + (long)(i % 97) + it % 5);
}

static void fill(run_t *r, long it)
{
    for (size_t i = 0; i < r->count; i++)
        r->in[i] = val(r->rank, i, it);
}

static void check(const run_t *r, long it)
{
    for (size_t i = 0; i < r->count; i++) {
        double want = 0;
        for (int k = 0; k < r->size; k++)
            want += val(k, i, it);
        if (r->out[i] != want) {
            char msg[160];
            snprintf(msg, sizeof(msg), "overlap: allreduce of %zu doubles, element %zu: %g, expected %g", r->count, i,
                     r->out[i], want);
            bp_abort(msg);
        }
    }
}

/* n calls; the mean seconds of one, and (comp) of its computing. */
static double calls(run_t *r, long n, double work, double *comp)
{
    double total = 0, c = 0;
    for (long i = 0; i < n; i++) {
        bp_req_t q;
        double t0 = now();
        bp_iallreduce(r->in, r->out, r->count, &q);
        if (work > 0)
            c += compute(work);
        bp_wait_coll(&q);
        total += now() - t0;
    }
    if (comp)
        *comp = c / (double)n;
    return total / (double)n;
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_pair_t p;
    bp_init(&argc, &argv);
    bench_parse(argc, argv, "overlap", "overlap of a nonblocking allreduce with computing (OSU's method)", 0, &o);
    bench_pair(&p);
    bench_header(&o, &p, "overlap");
    run_t r = {.rank = bp_rank(), .size = bp_size()};
    size_t maxs = o.sizes[o.nsizes - 1] < sizeof(double) ? sizeof(double) : o.sizes[o.nsizes - 1];
    r.in = bench_alloc(maxs);
    r.out = bench_alloc(maxs);
    long iters = o.iters > 0 ? o.iters : 100;
    for (int si = 0; si < o.nsizes; si++) {
        size_t s = o.sizes[si];
        if (s < sizeof(double))
            continue;
        r.count = s / sizeof(double);
        fill(&r, 1);
        bp_barrier();
        calls(&r, iters / 10 + 2, 0, NULL); /* warm up */
        check(&r, 1);
        double ov[BENCH_MAX_BATCHES], pure[BENCH_MAX_BATCHES], tot[BENCH_MAX_BATCHES];
        for (int b = 0; b < o.batches; b++) {
            fill(&r, 2 + b);
            bp_barrier();
            double tp = bench_mean_all(calls(&r, iters, 0, NULL));
            bp_barrier();
            double comp;
            double tt = calls(&r, iters, tp, &comp);
            check(&r, 2 + b);
            double o1 = 1.0 - (tt - comp) / tp;
            ov[b] = bench_mean_all(100.0 * (o1 < 0 ? 0 : o1));
            pure[b] = tp * 1e6;
            tot[b] = bench_mean_all(tt) * 1e6;
        }
        if (p.report) {
            bench_result("overlap", s, "overlap", "%", ov, o.batches, iters);
            bench_result("overlap-pure", s, "latency", "us", pure, o.batches, iters);
            bench_result("overlap-total", s, "latency", "us", tot, o.batches, iters);
        }
    }
    if (p.report)
        bench_table("overlap", "overlap", "%");
    bp_barrier();
    bench_free(r.in, maxs);
    bench_free(r.out, maxs);
    bp_finalize();
    return 0;
}
