/* Shared by the OpenMP programs of tests/omp (see test_omp.sh): checks and
 * deterministic busy work.  Every program prints only from the master
 * outside parallel regions, prints the same lines whatever the number of
 * threads (omp_nthreads.c excepted), and ends with "ok"; a failed check
 * prints "FAIL ..." and exits 1. */
#ifndef OMP_TEST_H
#define OMP_TEST_H
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* In serial code (the master, outside parallel regions). */
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("FAIL line %d: ", __LINE__);                            \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

/* In a parallel region (any thread): remembers a failing line; REPORT()
 * (serial code) ends the program if one did. */
static int omp_test_bad __attribute__((unused));
#define FLAG(cond)                                                         \
    do {                                                                   \
        if (!(cond)) {                                                     \
            _Pragma("omp atomic write") omp_test_bad = __LINE__;           \
        }                                                                  \
    } while (0)
#define REPORT(what)                                                       \
    CHECK(omp_test_bad == 0, "%s: the check at line %d failed in a thread", \
          what, omp_test_bad)

/* Busy work whose cost grows with i % 17 (uneven iterations) and whose
 * result depends only on i. */
static inline long work(long i)
{
    volatile long x = 0;
    long n = (i < 0 ? -i : i) % 17;
    for (long k = 0; k < n * 40; k++)
        x += k & 3;
    return x;
}
/* What work(i) returns, without the work. */
static inline long work_value(long i)
{
    long n = ((i < 0 ? -i : i) % 17) * 40, x = 0;
    for (long k = 0; k < n; k++)
        x += k & 3;
    return x;
}

/* Serial code, after a loop that counted its iterations in count[0..n):
 * each ran exactly once.  The counts go back to 0 for the next loop. */
static inline void check_once_each(int *count, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        CHECK(count[i] == 1, "%s: iteration %d ran %d times", what, i, count[i]);
        count[i] = 0;
    }
}

#define OK() (puts("ok"), 0)
#endif
