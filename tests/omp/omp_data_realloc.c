/* data: realloc and free of shared memory by the master between regions:
 * an array grown (its first part kept, the rest filled by a region), shrunk,
 * freed and another allocated; 200 small blocks allocated by the master,
 * read by the threads, freed; a strdup'd string the threads read. */
#include "omp_test.h"
#include <string.h>

int main(void)
{
    int n = 1000;
    int *a = malloc(n * sizeof *a);
    CHECK(a, "malloc");
#pragma omp parallel for
    for (int i = 0; i < n; i++)
        a[i] = i * 2;
    for (int step = 0; step < 4; step++) {
        int m = n * 4;
        int *b = realloc(a, m * sizeof *b);
        CHECK(b, "realloc to %d ints", m);
        a = b;
        int bad = 0;
#pragma omp parallel for reduction(+ : bad)
        for (int i = 0; i < m; i++) {
            if (i < n)
                bad += a[i] != i * 2;
            else
                a[i] = i * 2;
        }
        CHECK(bad == 0, "after realloc to %d: %d old values lost", m, bad);
        n = m;
    }
    long s = 0;
    for (int i = 0; i < n; i++)
        s += a[i];
    printf("grown by realloc 4 times to %d ints (old values kept, new ones by the threads): sum %ld\n", n, s);
    a = realloc(a, 100 * sizeof *a);
    CHECK(a, "realloc down");
    long t = 0;
#pragma omp parallel for reduction(+ : t)
    for (int i = 0; i < 100; i++)
        t += a[i];
    CHECK(t == 9900, "shrunk: %ld", t);
    printf("shrunk to 100 ints: sum %ld\n", t);
    free(a);

    double *d = malloc(50000 * sizeof *d);
    CHECK(d, "malloc");
#pragma omp parallel for
    for (int i = 0; i < 50000; i++)
        d[i] = i * 0.5;
    double ds = 0;
    for (int i = 0; i < 50000; i++)
        ds += d[i];
    free(d);
    printf("freed, a new block filled by the threads: sum %.17g\n", ds);

    long *blk[200];
    for (int k = 0; k < 200; k++) {
        blk[k] = malloc((k + 1) * sizeof(long));
        CHECK(blk[k], "malloc");
        for (int j = 0; j <= k; j++)
            blk[k][j] = k + j;
    }
    long bs = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : bs)
    for (int k = 0; k < 200; k++)
        for (int j = 0; j <= k; j++)
            bs += blk[k][j];
    for (int k = 0; k < 200; k++)
        free(blk[k]);
    printf("200 small blocks of the master read by the threads: sum %ld\n", bs);

    char *str = strdup("the quick brown fox jumps over the lazy dog");
    CHECK(str, "strdup");
    int len = (int)strlen(str), hits = 0;
#pragma omp parallel for reduction(+ : hits)
    for (int i = 0; i < len; i++)
        hits += str[i] == 'o';
    free(str);
    printf("a strdup'd string read by the threads: %d o's\n", hits);
    return OK();
}
