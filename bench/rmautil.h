/*
 * What the one-sided benchmarks share (bench/rma.c, cma_limit.c,
 * halo3d.c, srumma.c): the clock, a median's sort, lists of sizes and a
 * method's name.  Header only: cma_limit links nothing of knit's.
 */
#ifndef BENCH_RMAUTIL_H
#define BENCH_RMAUTIL_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double ru_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* for qsort of doubles */
static inline int ru_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "8,64,4k,1m" into out (at most max); returns how many */
static inline size_t ru_parse_list(const char *s, size_t *out, size_t max)
{
    size_t n = 0;
    while (*s && n < max) {
        char *end;
        size_t v = strtoull(s, &end, 10);
        if (end == s)
            break;
        if (*end == 'k' || *end == 'K')
            v <<= 10, end++;
        else if (*end == 'm' || *end == 'M')
            v <<= 20, end++;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* "direct", "agent", "pack", "auto" as KNIT_RMA_DIRECT .. KNIT_RMA_AUTO;
 * anything else 0, the default (numbers: bench/rma.c's MPI builds do not
 * see knit/rma.h) */
static inline unsigned ru_method(const char *name)
{
    return !strcmp(name, "direct") ? 1 : !strcmp(name, "agent") ? 2 : !strcmp(name, "pack") ? 3
           : !strcmp(name, "auto") ? 4 : 0;
}
#ifdef KNIT_RMA_H
_Static_assert(KNIT_RMA_DIRECT == 1 && KNIT_RMA_AGENT == 2 && KNIT_RMA_PACK == 3 && KNIT_RMA_AUTO == 4,
               "ru_method's numbers are knit/rma.h's");
#endif

#endif
