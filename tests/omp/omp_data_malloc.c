/* data: an array malloc'd by the master (1 MiB of doubles), filled in a
 * parallel for, summed by the master after and by a reduction; a calloc'd
 * array the threads read (zeros) and write; the master writes, the region
 * reads and scales, the master checks. */
#include "omp_test.h"

#define N (128 * 1024)

int main(void)
{
    double *a = malloc(N * sizeof *a);
    int *z = calloc(N, sizeof *z);
    CHECK(a && z, "malloc");
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        a[i] = (i % 100) * 0.25;
    double s = 0;
    for (int i = 0; i < N; i++)
        s += a[i];
    double e = 0;
    for (int i = 0; i < N; i++)
        e += (i % 100) * 0.25;
    CHECK(s == e, "the master's sum %.17g, expected %.17g", s, e);
    printf("malloc'd by the master, filled by a parallel for, summed by the master: %.17g\n", s);
    double r = 0;
#pragma omp parallel for schedule(dynamic, 1000) reduction(+ : r)
    for (int i = N - 1; i >= 0; i--)
        r += a[i];
    CHECK(r == e, "reduction over the array: %.17g", r);
    printf("summed again by a reduction: %.17g\n", r);
    int nonzero = 0;
#pragma omp parallel for reduction(+ : nonzero)
    for (int i = 0; i < N; i++) {
        nonzero += z[i] != 0;
        z[i] = i % 7;
    }
    long zs = 0;
    for (int i = 0; i < N; i++)
        zs += z[i];
    CHECK(nonzero == 0, "calloc'd memory: %d nonzero ints seen by the threads", nonzero);
    printf("calloc'd: zeros seen by the threads, then written: sum %ld\n", zs);
    for (int i = 0; i < N; i++)
        a[i] = i;
#pragma omp parallel for schedule(guided)
    for (int i = 0; i < N; i++)
        a[i] = a[i] * 2 + z[i];
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 2.0 * i + i % 7, "a[%d] = %g", i, a[i]);
    printf("written by the master, rewritten by the threads: a[%d] = %g\n", N - 1, a[N - 1]);
    free(a);
    free(z);
    return OK();
}
