/*
 * coll: the collectives, one after another in one job (--op picks some).
 *
 *   barrier    no data (reported at size 0)
 *   bcast      size = message bytes; the root rotates (iteration i: root
 *              i mod ranks), so that back-to-back calls cannot pipeline
 *              behind one fixed root (as IMB does)
 *   reduce     size = vector bytes, doubles added (MPI_SUM of MPI_DOUBLE);
 *              the root rotates as in bcast; sizes below 8 B are skipped
 *   allreduce  the same without a root
 *   allgather  size = bytes each rank contributes
 *   alltoall   size = bytes each rank sends to each rank
 *
 * Time: every rank runs the same number of back-to-back calls; its time per
 * call is its batch time / iterations; the value of a batch is the maximum
 * of that over the ranks (IMB's t_max, the usual definition); the median
 * over the batches is printed, in microseconds.  --osu measures as the OSU
 * micro-benchmarks do instead (see osu below).  The iteration count is
 * adapted per size (the slowest rank decides), after an untimed check and
 * a warm-up.
 *
 * Data: an untimed check per size with two different roots, every rank's
 * contribution distinct, receive buffers first filled with a pattern that
 * cannot pass; and after every timed batch the results of its last call are
 * checked again.  Reductions use small integers in doubles, so every sum is
 * exact whatever the order of additions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp.h"
#include "common.h"

enum op { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, NOPS };
static const char *const OPS[NOPS] = {"barrier", "bcast", "reduce", "allreduce", "allgather",
                                      "alltoall"};

struct run {
    enum op op;
    size_t size;  /* bytes as defined above */
    size_t count; /* doubles (reductions) */
    int rank, nranks;
    char *in, *out; /* in: size x ranks (alltoall); out: size x ranks */
};

/* --osu: the method of the OSU micro-benchmarks: the root is always rank
 * 0, every call is timed on its own with a barrier after it (untimed), a
 * rank's latency is its mean over the calls, and the value of a batch is
 * the mean of that over the ranks (OSU's "Avg Latency"); barriers are
 * timed back to back, as osu_barrier does. */
static int osu;

static int root_of(const struct run *r, long i)
{
    return osu ? 0 : (int)(i % r->nranks);
}

static void one_call(struct run *r, long i)
{
    switch (r->op) {
    case BARRIER:
        bp_barrier();
        break;
    case BCAST:
        bp_bcast(r->out, r->size, root_of(r, i));
        break;
    case REDUCE:
        bp_reduce((const double *)r->in, (double *)r->out, r->count, root_of(r, i));
        break;
    case ALLREDUCE:
        bp_allreduce((const double *)r->in, (double *)r->out, r->count);
        break;
    case ALLGATHER:
        bp_allgather(r->in, r->out, r->size);
        break;
    case ALLTOALL:
        bp_alltoall(r->in, r->out, r->size);
        break;
    default:
        break;
    }
}

static double kernel(void *arg, long n)
{
    struct run *r = arg;
    if (osu && r->op != BARRIER) {
        double t = 0;
        for (long i = 0; i < n; i++) {
            double t0 = bp_time();
            one_call(r, i);
            t += bp_time() - t0;
            bp_barrier();
        }
        return t;
    }
    double t0 = bp_time();
    for (long i = 0; i < n; i++)
        one_call(r, i);
    return bp_time() - t0;
}

/* ------------------------------------------------------------ data */

/* element i of rank r's contribution: a small integer, so sums are exact */
static inline double val(int r, size_t i, uint64_t it)
{
    return (double)((i * 2654435761u + (uint64_t)r * 40503u + it * 977u) % 65536u);
}

static void fill_reduce(struct run *r, uint64_t it)
{
    double *in = (double *)r->in, *out = (double *)r->out;
    for (size_t i = 0; i < r->count; i++) {
        in[i] = val(r->rank, i, it);
        out[i] = -1.0; /* no sum of non-negative values is negative */
    }
}

static void verify_reduce(struct run *r, uint64_t it, const char *where)
{
    const double *out = (const double *)r->out;
    for (size_t i = 0; i < r->count; i++) {
        double want = 0;
        for (int k = 0; k < r->nranks; k++)
            want += val(k, i, it);
        if (out[i] != want) {
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "*** DATA ERROR *** %s (%s) rank %d, %s: %zu bytes: element %zu is %.17g, "
                     "expected %.17g",
                     OPS[r->op], bp_impl_name(), r->rank, where, r->size, i, out[i], want);
            bp_abort(msg);
        }
    }
}

/* pattern keys of the byte collectives: distinct per sender, receiver, round */
static uint64_t key_gather(uint64_t it, int from)
{
    return it * 1000 + (uint64_t)from;
}

static uint64_t key_a2a(uint64_t it, int from, int to)
{
    return it * 1000000 + (uint64_t)from * 1000 + (uint64_t)to;
}

/* Prepares the buffers of one round (it); for bcast `src` is the rank that
 * holds the data first. */
static void prepare(struct run *r, uint64_t it, int src)
{
    size_t s = r->size;
    switch (r->op) {
    case BCAST:
        if (r->rank == src)
            bench_fill(r->out, s, s, it);
        else
            bench_poison(r->out, s, s, it);
        break;
    case REDUCE:
    case ALLREDUCE:
        fill_reduce(r, it);
        break;
    case ALLGATHER:
        bench_fill(r->in, s, s, key_gather(it, r->rank));
        for (int k = 0; k < r->nranks; k++)
            bench_poison(r->out + (size_t)k * s, s, s, key_gather(it, k));
        break;
    case ALLTOALL:
        for (int k = 0; k < r->nranks; k++) {
            bench_fill(r->in + (size_t)k * s, s, s, key_a2a(it, r->rank, k));
            bench_poison(r->out + (size_t)k * s, s, s, key_a2a(it, k, r->rank));
        }
        break;
    default:
        break;
    }
}

/* Checks the result of the last call of round it; root: the last root. */
static void verify(struct run *r, uint64_t it, int root, const char *where)
{
    size_t s = r->size;
    switch (r->op) {
    case BCAST:
        bench_verify(r->out, s, s, it, OPS[r->op], where);
        break;
    case REDUCE:
        if (r->rank == root)
            verify_reduce(r, it, where);
        break;
    case ALLREDUCE:
        verify_reduce(r, it, where);
        break;
    case ALLGATHER:
        for (int k = 0; k < r->nranks; k++)
            bench_verify(r->out + (size_t)k * s, s, s, key_gather(it, k), OPS[r->op], where);
        break;
    case ALLTOALL:
        for (int k = 0; k < r->nranks; k++)
            bench_verify(r->out + (size_t)k * s, s, s, key_a2a(it, k, r->rank), OPS[r->op],
                         where);
        break;
    default:
        break;
    }
}

/* Untimed: one call with root 0 and one with the last rank as root. */
static void check_size(struct run *r)
{
    int roots[2] = {0, r->nranks - 1};
    for (int k = 0; k < 2; k++) {
        uint64_t it = 1 + (uint64_t)k;
        prepare(r, it, roots[k]);
        bp_barrier();
        switch (r->op) {
        case BCAST:
            bp_bcast(r->out, r->size, roots[k]);
            break;
        case REDUCE:
            bp_reduce((const double *)r->in, (double *)r->out, r->count, roots[k]);
            break;
        default:
            kernel(r, 1);
            break;
        }
        verify(r, it, roots[k], "check call");
    }
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    int want[NOPS] = {0}, nwant = 0;
    /* take --op and --osu out of argv; the common options are the rest */
    int n = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--osu")) {
            osu = 1;
        } else if (!strcmp(argv[i], "--op") && i + 1 < argc) {
            char *copy = strdup(argv[++i]), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int k = 0;
                while (k < NOPS && strcmp(t, OPS[k]))
                    k++;
                if (k == NOPS && strcmp(t, "all")) {
                    fprintf(stderr, "coll: unknown --op %s (barrier, bcast, reduce, allreduce, "
                                    "allgather, alltoall, all)\n", t);
                    return 2;
                }
                for (int j = 0; j < NOPS; j++)
                    if (j == k || k == NOPS)
                        want[j] = 1, nwant++;
            }
            free(copy);
        } else {
            argv[n++] = argv[i];
        }
    }
    argc = n;
    argv[argc] = NULL;
    if (!nwant)
        for (int j = 0; j < NOPS; j++)
            want[j] = 1;

    bench_opts_t o;
    bench_pair_t p;
    bp_init(&argc, &argv);
    bench_parse(argc, argv, "coll",
                "collectives (--op barrier,bcast,reduce,allreduce,allgather,alltoall; --osu: timed as the OSU benchmarks do)", 0, &o);
    bench_pair(&p);
    bench_header(&o, &p, "coll");

    struct run r = {.rank = bp_rank(), .nranks = bp_size()};
    size_t maxs = o.sizes[o.nsizes - 1];
    size_t blen = maxs * (size_t)r.nranks;
    r.in = bench_alloc(blen);
    r.out = bench_alloc(blen);

    for (int op = 0; op < NOPS; op++) {
        if (!want[op])
            continue;
        r.op = op;
        for (int si = 0; si < o.nsizes; si++) {
            size_t s = o.sizes[si];
            if (op == BARRIER && si > 0)
                break;
            if (op == BARRIER)
                s = 0;
            else if (s == 0)
                continue; /* a 0-byte collective says nothing */
            if ((op == REDUCE || op == ALLREDUCE) && s < sizeof(double))
                continue;
            r.size = (op == REDUCE || op == ALLREDUCE) ? s / sizeof(double) * sizeof(double) : s;
            r.count = r.size / sizeof(double);
            bp_barrier();
            double t0 = bp_time();
            check_size(&r);
            /* where one call already lasts a whole batch (MPICH with more
             * ranks than cpus: tens of ms), the check calls were the
             * warm-up, and one call per batch is enough */
            double tcall = bench_max_all((bp_time() - t0) / 2);
            long iters = o.iters == 0 && tcall >= o.batch_time
                             ? 1
                             : bench_agree_iters_all(&o, kernel, &r);
            double lat[BENCH_MAX_BATCHES];
            for (int b = 0; b < o.batches; b++) {
                uint64_t it = 100 + (uint64_t)b;
                prepare(&r, it, 0);
                bp_barrier();
                double t = kernel(&r, iters);
                lat[b] = (osu ? bench_mean_all : bench_max_all)(t / (double)iters) * 1e6;
                verify(&r, it, root_of(&r, iters - 1), "timed batch");
            }
            if (p.report)
                bench_result(OPS[op], r.size, "latency", "us", lat, o.batches, iters);
        }
        if (p.report)
            bench_table(OPS[op], "latency", "us");
    }
    bp_barrier();
    bench_free(r.in, blen);
    bench_free(r.out, blen);
    bp_finalize();
    return 0;
}
