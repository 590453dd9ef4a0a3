/* threadprivate: a global int, a static array and a function's static
 * counter, copyin from the master's values, each thread's copy its own,
 * values kept from one region to the next (same team size, no dynamic
 * adjustment), the master's copy is the serial code's variable. */
#include "omp_test.h"

#define MAXT 4096
int tp = 7;
static double tparr[4] = {1, 2, 3, 4};
#pragma omp threadprivate(tp, tparr)

static int bump(void)
{
    static int calls;
#pragma omp threadprivate(calls)
    return ++calls;
}

int main(void)
{
    tp = 100;
    tparr[2] = 0.5;
    int n = 0;
#pragma omp parallel copyin(tp, tparr)
    {
        int id = omp_get_thread_num();
        FLAG(tp == 100 && tparr[0] == 1 && tparr[2] == 0.5 && tparr[3] == 4);
        tp += id;
        tparr[1] = id * 0.5;
        for (int k = 0; k < 3; k++)
            bump();
#pragma omp master
        n = omp_get_num_threads();
    }
    REPORT("copyin");
    CHECK(tp == 100 && tparr[1] == 0, "the master's copy after the region: %d %g", tp, tparr[1]);
    printf("copyin: every thread starts from the master's values (100, 0.5)\n");
#pragma omp parallel
    {
        int id = omp_get_thread_num();
        FLAG(tp == 100 + id);
        FLAG(tparr[1] == id * 0.5);
        FLAG(bump() == 4);
        tp = -id;
    }
    REPORT("threadprivate kept");
    CHECK(tp == 0, "the master's copy after the second region: %d", tp);
    printf("each thread's copy kept from one region to the next: yes\n");
    long s = 0;
#pragma omp parallel reduction(+ : s)
    s += tp + omp_get_thread_num();
    CHECK(s == 0, "third region: %ld", s);
    printf("a function's static threadprivate counter: 3 calls then the 4th in the next region\n");
    CHECK(n >= 1 && n <= MAXT, "team of %d", n);
    return OK();
}
