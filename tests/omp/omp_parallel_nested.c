/* nested parallel: each thread of the outer team opens an inner region
 * (whatever its size: one thread where nesting is off) whose loop and
 * reduction give the right sums, with omp_get_level() 2 inside and 1 back
 * in the outer region; an inner region opened from a function; an inner
 * num_threads(2). */
#include "omp_test.h"

#define MAXT 4096
static long outer_sum[MAXT];

static long inner_region(int base)
{
    long s = 0;
#pragma omp parallel reduction(+ : s)
    {
        int id = omp_get_thread_num(), nt = omp_get_num_threads();
        FLAG(id >= 0 && id < nt);
        FLAG(omp_get_level() == 2);
#pragma omp for schedule(dynamic, 4)
        for (int i = 0; i < 200; i++)
            s += i + base + work(i) - work_value(i);
    }
    return s;
}

int main(void)
{
    int n = 0;
#pragma omp parallel
    {
        int outer = omp_get_thread_num();
        if (outer == 0)
            n = omp_get_num_threads();
        FLAG(omp_get_level() == 1);
        long s = 0;
#pragma omp parallel reduction(+ : s)
        {
            FLAG(omp_get_level() == 2);
            FLAG(omp_get_thread_num() < omp_get_num_threads());
#pragma omp for
            for (int i = 0; i < 100; i++)
                s += i + outer;
        }
        FLAG(omp_get_level() == 1);
        FLAG(s == 4950 + 100L * outer);
        long t = inner_region(outer);
        FLAG(t == 19900 + 200L * outer);
        long u = 0;
#pragma omp parallel num_threads(2) reduction(+ : u)
        {
            FLAG(omp_get_num_threads() <= 2);
            u += 1000 * omp_get_thread_num() + 1;
        }
        FLAG(u == 1 || u == 1002);
        if (outer < MAXT)
            outer_sum[outer] = s + t;
    }
    REPORT("nested parallel");
    long total = 0;
    for (int i = 0; i < n && i < MAXT; i++)
        total += outer_sum[i] - 300L * i;
    CHECK(total == (4950 + 19900) * (long)n, "total %ld, %d outer threads", total, n);
    printf("inner loops: sum 0..99 = 4950, dynamic,4 sum 0..199 = 19900, in every outer thread\n");
    printf("omp_get_level(): 1 in the outer region, 2 in the inner ones\n");
    printf("omp_get_level() after: %d\n", omp_get_level());
    return OK();
}
