#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bp.h"
#include "common.h"

#define KIB 1024ul
#define MIB (1024ul * 1024ul)

static void usage(FILE *f, const char *prog, const char *what, int uses_window)
{
    fprintf(f,
            "usage: %s [options]   (%s)\n"
            "  --min-size N      smallest size of the sweep (default %s)\n"
            "  --max-size N      largest size of the sweep (default 4m)\n"
            "  --sizes a,b,c     exactly these sizes instead of the sweep\n"
            "  --thresholds a,b  add t-1, t, t+1 for each threshold t (protocol switch points)\n"
            "  --iters N         fixed iterations per batch (default: adapted per size)\n"
            "  --batches N       timed batches per size, median reported (default 5, quick 3)\n"
            "  --batch-time S    seconds per batch when adapting (default 0.02, quick 0.005)\n"
            "%s"
            "  --bind core|none  pin rank r to cpu r mod cpus (default core)\n"
            "  --quick           reduced sweep: 0, 1, 8, 64, 512, 4k, 16k, 64k, 256k, 1m, 4m\n"
            "sizes take k/m/g suffixes (KiB, MiB, GiB).  Output: lines\n"
            "  result <benchmark> <size> <metric> <value> <unit>\n"
            "then a table.  Data are checked for every size; a mismatch exits nonzero.\n",
            prog, what, uses_window ? "1" : "0",
            uses_window ? "  --window N        messages in flight (default 64)\n" : "");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = KIB, end++;
    else if (*end == 'm' || *end == 'M')
        mul = MIB, end++;
    else if (*end == 'g' || *end == 'G')
        mul = MIB * KIB, end++;
    if (*end || v > (1ull << 40) / mul)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static void add_size(bench_opts_t *o, size_t s)
{
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] == s)
            return;
    if (o->nsizes == BENCH_MAX_SIZES)
        bp_abort("bench: too many sizes");
    int i = o->nsizes++;
    while (i > 0 && o->sizes[i - 1] > s) {
        o->sizes[i] = o->sizes[i - 1];
        i--;
    }
    o->sizes[i] = s;
}

static void bad(const char *prog, const char *what, int uses_window, const char *fmt,
                const char *arg)
{
    if (bp_rank() == 0) {
        fprintf(stderr, "%s: ", prog);
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n");
        usage(stderr, prog, what, uses_window);
    }
    bp_finalize();
    exit(2);
}

void bench_parse(int argc, char **argv, const char *prog, const char *what, int uses_window,
                 bench_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    /* a bandwidth of 0-byte messages says nothing: the windowed programs start at 1 */
    size_t min_size = uses_window ? 1 : 0, max_size = 4 * MIB;
    const char *sizes = NULL, *thresholds = NULL;
    int batches = 0, bind = 1;
    double batch_time = 0;
    o->window = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (bp_rank() == 0)
                usage(stdout, prog, what, uses_window);
            bp_finalize();
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            o->quick = 1;
            continue;
        }
        if (!v)
            bad(prog, what, uses_window, "unknown option or missing value: %s", a);
        i++;
        if (!strcmp(a, "--min-size")) {
            if (parse_size(v, &min_size))
                bad(prog, what, uses_window, "bad size: %s", v);
        } else if (!strcmp(a, "--max-size")) {
            if (parse_size(v, &max_size))
                bad(prog, what, uses_window, "bad size: %s", v);
        } else if (!strcmp(a, "--sizes")) {
            sizes = v;
        } else if (!strcmp(a, "--thresholds")) {
            thresholds = v;
        } else if (!strcmp(a, "--iters")) {
            o->iters = atol(v);
            if (o->iters < 1)
                bad(prog, what, uses_window, "bad --iters: %s", v);
        } else if (!strcmp(a, "--batches")) {
            batches = atoi(v);
            if (batches < 1 || batches > BENCH_MAX_BATCHES)
                bad(prog, what, uses_window, "--batches must be 1..31, not %s", v);
        } else if (!strcmp(a, "--batch-time")) {
            batch_time = atof(v);
            if (!(batch_time > 0 && batch_time < 100))
                bad(prog, what, uses_window, "bad --batch-time: %s", v);
        } else if (!strcmp(a, "--window") && uses_window) {
            o->window = atoi(v);
            if (o->window < 1 || o->window > 4096)
                bad(prog, what, uses_window, "--window must be 1..4096, not %s", v);
        } else if (!strcmp(a, "--bind")) {
            if (strcmp(v, "core") && strcmp(v, "none"))
                bad(prog, what, uses_window, "--bind takes core or none, not %s", v);
            bind = !strcmp(v, "core");
        } else {
            bad(prog, what, uses_window, "unknown option: %s", a);
        }
    }
    if (min_size > max_size)
        bad(prog, what, uses_window, "--min-size is larger than --max-size%s", "");
    o->batches = batches ? batches : o->quick ? 3 : 5;
    o->batch_time = batch_time > 0 ? batch_time : o->quick ? 0.005 : 0.02;
    o->bind = bind;

    if (sizes) {
        char *copy = strdup(sizes), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            size_t s;
            if (parse_size(t, &s))
                bad(prog, what, uses_window, "bad size in --sizes: %s", t);
            add_size(o, s);
        }
        free(copy);
    } else {
        if (min_size == 0)
            add_size(o, 0);
        if (o->quick) {
            /* 1, 8, 64, 512, 4k, then x4: 16k, 64k, 256k, 1m, 4m */
            for (size_t s = 1; s <= max_size; s = s == 1 ? 8 : s < 4 * KIB ? s * 8 : s * 4)
                if (s >= min_size)
                    add_size(o, s);
        } else {
            for (size_t s = 1; s <= max_size; s *= 2)
                if (s >= min_size)
                    add_size(o, s);
        }
        if (max_size >= min_size && max_size > 0)
            add_size(o, max_size);
    }
    if (thresholds) {
        char *copy = strdup(thresholds), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            size_t s;
            if (parse_size(t, &s))
                bad(prog, what, uses_window, "bad size in --thresholds: %s", t);
            for (size_t d = s ? s - 1 : 0; d <= s + 1; d++)
                add_size(o, d);
        }
        free(copy);
    }
    if (o->nsizes == 0)
        bad(prog, what, uses_window, "no sizes to run%s", "");

    if (o->bind) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof(set), &set) == 0) {
            int n = CPU_COUNT(&set), want = bp_rank() % n, k = 0;
            for (int c = 0; c < CPU_SETSIZE; c++) {
                if (!CPU_ISSET(c, &set))
                    continue;
                if (k++ == want) {
                    cpu_set_t one;
                    CPU_ZERO(&one);
                    CPU_SET(c, &one);
                    if (sched_setaffinity(0, sizeof(one), &one))
                        perror("bench: sched_setaffinity");
                    break;
                }
            }
        }
    }
}

void bench_pair(bench_pair_t *p)
{
    int rank = bp_rank(), size = bp_size();
    p->npairs = size / 2;
    p->report = rank == 0;
    if (size < 2)
        bp_abort("bench: needs at least 2 ranks");
    if (rank < p->npairs) {
        p->peer = rank + p->npairs;
        p->leader = 1;
    } else if (rank < 2 * p->npairs) {
        p->peer = rank - p->npairs;
        p->leader = 0;
    } else {
        p->peer = -1;
        p->leader = 0;
    }
}

void bench_pair_sync(const bench_pair_t *p)
{
    if (p->peer < 0)
        return;
    char c = 0;
    if (p->leader) {
        bp_send(&c, 0, p->peer, TAG_SYNC);
        bp_recv(&c, 0, p->peer, TAG_SYNC);
    } else {
        bp_recv(&c, 0, p->peer, TAG_SYNC);
        bp_send(&c, 0, p->peer, TAG_SYNC);
    }
}

long bench_agree_iters(const bench_opts_t *o, const bench_pair_t *p, bench_kernel_t k, void *arg)
{
    const long max_iters = 1000000;
    long n = 1;
    /* ctl[0]: iterations of the next calibration run, 0 when done;
     * ctl[1]: the final count */
    int64_t ctl[2];
    for (;;) {
        bench_pair_sync(p);
        double t = k(arg, n);
        if (p->leader) {
            ctl[0] = ctl[1] = 0;
            if (o->iters > 0) {
                ctl[1] = o->iters; /* fixed count: the run above was the warm-up */
            } else if (t >= o->batch_time / 4 || n >= max_iters) {
                double want = t > 0 ? (double)n * o->batch_time / t : (double)max_iters;
                ctl[1] = want < 2 ? 2 : want > max_iters ? max_iters : (long)want;
            } else {
                ctl[0] = t < o->batch_time / 64 ? n * 8 : n * 2;
            }
            bp_send(ctl, sizeof(ctl), p->peer, TAG_CTRL);
        } else {
            if (bp_recv_len(ctl, sizeof(ctl), p->peer, TAG_CTRL) != sizeof(ctl))
                bp_abort("bench: short control message");
        }
        if (ctl[0] == 0)
            break;
        n = (long)ctl[0];
    }
    /* a short warm-up at the final count's pace */
    bench_pair_sync(p);
    k(arg, ctl[1] / 8 + 1);
    return (long)ctl[1];
}

/* Every rank's v combined at rank 0 (the maximum, or the mean), the
 * result sent back to all. */
static double combine_all(double v, int mean)
{
    int rank = bp_rank(), size = bp_size();
    if (rank == 0) {
        double sum = v;
        for (int r = 1; r < size; r++) {
            double x;
            if (bp_recv_len(&x, sizeof(x), r, TAG_CTRL) != sizeof(x))
                bp_abort("bench: short control message");
            sum += x;
            if (x > v)
                v = x;
        }
        if (mean)
            v = sum / size;
        for (int r = 1; r < size; r++)
            bp_send(&v, sizeof(v), r, TAG_CTRL);
    } else {
        bp_send(&v, sizeof(v), 0, TAG_CTRL);
        if (bp_recv_len(&v, sizeof(v), 0, TAG_CTRL) != sizeof(v))
            bp_abort("bench: short control message");
    }
    return v;
}

double bench_max_all(double v)
{
    return combine_all(v, 0);
}

double bench_mean_all(double v)
{
    return combine_all(v, 1);
}

long bench_agree_iters_all(const bench_opts_t *o, bench_kernel_t k, void *arg)
{
    const long max_iters = 1000000;
    long n = 1, final;
    for (;;) {
        bp_barrier();
        /* every rank gets the same maximum, so every rank decides the same */
        double t = bench_max_all(k(arg, n));
        if (o->iters > 0) {
            final = o->iters;
            break;
        }
        if (t >= o->batch_time / 4 || n >= max_iters) {
            double want = t > 0 ? (double)n * o->batch_time / t : (double)max_iters;
            final = want < 1 ? 1 : want > max_iters ? max_iters : (long)want;
            break;
        }
        n = t < o->batch_time / 64 ? n * 8 : n * 2;
    }
    bp_barrier();
    k(arg, final / 8 + 1); /* a short warm-up at the final count's pace */
    return final;
}

/* The pattern: 64-bit words from a counter-based generator seeded by
 * (size, iter), so every size and iteration has different bytes. */
static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
}

static uint64_t seed_of(size_t size, uint64_t iter)
{
    return mix((uint64_t)size * 0x9e3779b97f4a7c15ull + iter * 0xc2b2ae3d27d4eb4full + 1);
}

static inline uint8_t pattern_byte(uint64_t seed, size_t i)
{
    return (uint8_t)(mix(seed + (i >> 3)) >> ((i & 7) * 8));
}

static void fill_with(void *buf, size_t len, size_t size, uint64_t iter, uint64_t flip)
{
    uint64_t seed = seed_of(size, iter);
    unsigned char *b = buf;
    size_t words = len / 8;
    for (size_t w = 0; w < words; w++) {
        uint64_t v = mix(seed + w) ^ flip;
        memcpy(b + w * 8, &v, 8);
    }
    for (size_t i = words * 8; i < len; i++)
        b[i] = pattern_byte(seed, i) ^ (uint8_t)flip;
}

void bench_fill(void *buf, size_t len, size_t size, uint64_t iter)
{
    fill_with(buf, len, size, iter, 0);
}

void bench_poison(void *buf, size_t len, size_t size, uint64_t iter)
{
    fill_with(buf, len, size, iter, ~0ull);
}

void bench_verify(const void *buf, size_t len, size_t size, uint64_t iter, const char *bench,
                  const char *where)
{
    uint64_t seed = seed_of(size, iter);
    const unsigned char *b = buf;
    size_t words = len / 8, bad = len;
    for (size_t w = 0; w < words && bad == len; w++) {
        uint64_t v = mix(seed + w), got;
        memcpy(&got, b + w * 8, 8);
        if (got != v)
            for (size_t i = w * 8; i < w * 8 + 8; i++)
                if (b[i] != pattern_byte(seed, i)) {
                    bad = i;
                    break;
                }
    }
    for (size_t i = words * 8; i < len && bad == len; i++)
        if (b[i] != pattern_byte(seed, i))
            bad = i;
    if (bad == len)
        return;
    size_t nbad = 0;
    for (size_t i = bad; i < len; i++)
        nbad += b[i] != pattern_byte(seed, i);
    char msg[256];
    snprintf(msg, sizeof(msg),
             "*** DATA ERROR *** %s (%s) rank %d, %s: message of %zu bytes, iteration %llu: "
             "byte %zu is 0x%02x, expected 0x%02x (%zu of %zu bytes wrong)",
             bench, bp_impl_name(), bp_rank(), where, size, (unsigned long long)iter, bad, b[bad],
             pattern_byte(seed, bad), nbad, len);
    bp_abort(msg);
}

/* Page-aligned from malloc, as the common benchmarks allocate (OSU:
 * posix_memalign): each library's allocator is part of what it gives
 * its users (knit's puts large blocks in its shared heap). */
void *bench_alloc(size_t len)
{
    size_t l = len ? len : 1;
    void *p = NULL;
    if (posix_memalign(&p, 4096, l) != 0)
        bp_abort("bench: out of memory");
    memset(p, 0, l);
    return p;
}

void bench_free(void *p, size_t len)
{
    (void)len;
    free(p);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* rows kept for the closing table */
struct trow {
    size_t size;
    double med, min, max;
    long iters;
};
static struct trow trows[BENCH_MAX_SIZES];
static int ntrows;

void bench_header(const bench_opts_t *o, const bench_pair_t *p, const char *bench)
{
    if (!p->report)
        return;
    printf("# %s: impl %s (%s), %d ranks, %d pair(s), %d sizes, %d batches per size, %s, %s\n",
           bench, bp_impl_name(), bp_impl_version(), bp_size(), p->npairs, o->nsizes, o->batches,
           o->iters ? "fixed iterations" : "iterations adapted per size",
           o->bind ? "ranks pinned" : "ranks not pinned");
    fflush(stdout);
}

static const char *fmt(double v, char *buf, size_t n)
{
    snprintf(buf, n, v >= 1000 ? "%.1f" : v >= 10 ? "%.3f" : "%.4f", v);
    return buf;
}

void bench_result(const char *bench, size_t size, const char *metric, const char *unit,
                  double *per_batch, int nbatches, long iters)
{
    double med = bench_median(per_batch, nbatches);
    char b[32];
    printf("result %s %zu %s %s %s\n", bench, size, metric, fmt(med, b, sizeof(b)), unit);
    fflush(stdout);
    if (ntrows < BENCH_MAX_SIZES)
        trows[ntrows++] = (struct trow){size, med, per_batch[0], per_batch[nbatches - 1], iters};
}

void bench_table(const char *bench, const char *metric, const char *unit)
{
    char h[48];
    snprintf(h, sizeof(h), "%s (%s)", metric, unit);
    printf("\n%s, %s: median / min / max over the timed batches\n", bench, bp_impl_name());
    printf("%10s %16s %12s %12s %10s\n", "size", h, "min", "max", "iters");
    for (int i = 0; i < ntrows; i++) {
        char a[32], b[32], c[32];
        printf("%10zu %16s %12s %12s %10ld\n", trows[i].size, fmt(trows[i].med, a, 32),
               fmt(trows[i].min, b, 32), fmt(trows[i].max, c, 32), trows[i].iters);
    }
    ntrows = 0;
    fflush(stdout);
}

void bench_window_check(const bench_pair_t *p, size_t size, int window, int both_ways,
                        const char *bench)
{
    if (p->peer < 0)
        return;
    size_t k = (size_t)window;
    if (size && k * size > 8 * MIB)
        k = 8 * MIB / size < 2 ? 2 : 8 * MIB / size;
    int sends = p->leader || both_ways, recvs = !p->leader || both_ways;
    uint64_t base_out = p->leader ? 1000 : 5000, base_in = p->leader ? 5000 : 1000;
    char *sb = sends ? bench_alloc(k * size) : NULL;
    char *rb = recvs ? bench_alloc(k * size) : NULL;
    bp_req_t *reqs = calloc(2 * k, sizeof(*reqs));
    if (!reqs)
        bp_abort("bench: out of memory");
    int n = 0;
    for (size_t i = 0; sends && i < k; i++)
        bench_fill(sb + i * size, size, size, base_out + i);
    for (size_t i = 0; recvs && i < k; i++) {
        bench_poison(rb + i * size, size, size, base_in + i);
        bp_irecv(rb + i * size, size, p->peer, TAG_CHECK, &reqs[n++]);
    }
    bench_pair_sync(p); /* every receive is posted before the first send */
    for (size_t i = 0; sends && i < k; i++)
        bp_isend(sb + i * size, size, p->peer, TAG_CHECK, &reqs[n++]);
    bp_waitall(n, reqs);
    for (size_t i = 0; recvs && i < k; i++)
        bench_verify(rb + i * size, size, size, base_in + i, bench, "window check");
    free(reqs);
    if (sb)
        bench_free(sb, k * size);
    if (rb)
        bench_free(rb, k * size);
    bench_pair_sync(p);
}

bench_window_t bench_window_new(const bench_opts_t *o, const bench_pair_t *p, int per_slot, const char *bench)
{
    size_t maxs = o->sizes[o->nsizes - 1];
    bench_window_t r = {p, bench_alloc(maxs), bench_alloc(maxs), 0, o->window,
                        calloc((size_t)per_slot * (size_t)o->window, sizeof(bp_req_t))};
    if (!r.reqs) {
        char msg[96];
        snprintf(msg, sizeof(msg), "%s: out of memory", bench);
        bp_abort(msg);
    }
    return r;
}

void bench_window_free(bench_window_t *r, const bench_opts_t *o)
{
    size_t maxs = o->sizes[o->nsizes - 1];
    free(r->reqs);
    bench_free(r->sbuf, maxs);
    bench_free(r->rbuf, maxs);
}

double bench_window_kernel(void *arg, long n)
{
    bench_window_t *r = arg;
    int peer = r->p->peer, w = r->window;
    char ack[4] = {0};
    if (peer < 0)
        return 0; /* the rank left over with an odd count only waits */
    double t0 = bp_time();
    if (r->p->leader) {
        for (long i = 0; i < n; i++) {
            for (int j = 0; j < w; j++)
                bp_isend(r->sbuf, r->size, peer, TAG_DATA, &r->reqs[j]);
            bp_waitall(w, r->reqs);
            bp_recv(ack, sizeof(ack), peer, TAG_ACK);
        }
    } else {
        for (long i = 0; i < n; i++) {
            for (int j = 0; j < w; j++)
                bp_irecv(r->rbuf, r->size, peer, TAG_DATA, &r->reqs[j]);
            bp_waitall(w, r->reqs);
            bp_send(ack, sizeof(ack), peer, TAG_ACK);
        }
    }
    return bp_time() - t0;
}
