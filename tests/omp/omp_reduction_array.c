/* reduction on array sections (a histogram with reduction(+: hist[:16]),
 * a whole array with max) and a user-defined reduction (declare
 * reduction on a struct, with an initializer). */
#include "omp_test.h"
#include <string.h>

#define N 3000
struct stats {
    long n, sum, sumsq;
    int lo, hi;
};

static void merge(struct stats *out, const struct stats *in)
{
    out->n += in->n;
    out->sum += in->sum;
    out->sumsq += in->sumsq;
    if (in->lo < out->lo)
        out->lo = in->lo;
    if (in->hi > out->hi)
        out->hi = in->hi;
}
#pragma omp declare reduction(merge : struct stats : merge(&omp_out, &omp_in)) \
    initializer(omp_priv = (struct stats){0, 0, 0, 1 << 30, -(1 << 30)})

int main(void)
{
    long hist[16];
    int top[8];
    memset(hist, 0, sizeof hist);
    for (int k = 0; k < 8; k++)
        top[k] = -1;
#pragma omp parallel for schedule(dynamic, 11) reduction(+ : hist[:16]) reduction(max : top)
    for (int i = 0; i < N; i++) {
        int v = (i * 7919) % 1000;
        hist[v % 16] += 1 + (v & 1);
        if (v > top[i % 8])
            top[i % 8] = v;
    }
    long ehist[16] = {0};
    int etop[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < N; i++) {
        int v = (i * 7919) % 1000;
        ehist[v % 16] += 1 + (v & 1);
        if (v > etop[i % 8])
            etop[i % 8] = v;
    }
    printf("hist:");
    for (int k = 0; k < 16; k++) {
        CHECK(hist[k] == ehist[k], "hist[%d] %ld, expected %ld", k, hist[k], ehist[k]);
        printf(" %ld", hist[k]);
    }
    printf("\ntop:");
    for (int k = 0; k < 8; k++) {
        CHECK(top[k] == etop[k], "top[%d] %d, expected %d", k, top[k], etop[k]);
        printf(" %d", top[k]);
    }
    printf("\n");

    struct stats st = {0, 0, 0, 1 << 30, -(1 << 30)};
#pragma omp parallel for reduction(merge : st)
    for (int i = 0; i < N; i++) {
        int v = (i * 31) % 577 - 200;
        struct stats one = {1, v, (long)v * v, v, v};
        merge(&st, &one);
    }
    struct stats e = {0, 0, 0, 1 << 30, -(1 << 30)};
    for (int i = 0; i < N; i++) {
        int v = (i * 31) % 577 - 200;
        struct stats one = {1, v, (long)v * v, v, v};
        merge(&e, &one);
    }
    CHECK(st.n == e.n && st.sum == e.sum && st.sumsq == e.sumsq && st.lo == e.lo && st.hi == e.hi,
          "declare reduction: %ld %ld %ld %d %d", st.n, st.sum, st.sumsq, st.lo, st.hi);
    printf("declare reduction: n %ld, sum %ld, sum of squares %ld, min %d, max %d\n", st.n, st.sum, st.sumsq, st.lo, st.hi);
    return OK();
}
