/* The runtime's queries: omp_get_wtime() never goes back (2000 reads in
 * each thread) and measures a 20 ms sleep, omp_get_wtick() > 0,
 * omp_get_max_threads() is the default team's size, omp_in_parallel()
 * (0 outside and in a one-thread region, 1 in a team of more),
 * omp_get_level() (0, 1, 2 nested), omp_get_thread_num() and
 * omp_get_num_threads() outside. */
#include "omp_test.h"
#include <time.h>

int main(void)
{
    double tick = omp_get_wtick();
    CHECK(tick > 0 && tick < 1, "omp_get_wtick() %g", tick);
    printf("omp_get_wtick() in (0, 1): yes\n");

    double t0 = omp_get_wtime();
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    double t1 = omp_get_wtime();
    CHECK(t1 - t0 >= 0.019 && t1 - t0 < 10, "a 20 ms sleep measured as %g s", t1 - t0);
    printf("omp_get_wtime() measures a 20 ms sleep: yes\n");

    int n = 0, in_team = -1;
#pragma omp parallel
    {
        double last = omp_get_wtime();
        for (int i = 0; i < 2000; i++) {
            double t = omp_get_wtime();
            FLAG(t >= last);
            last = t;
        }
        FLAG(omp_get_level() == 1);
        if (omp_get_thread_num() == 0) {
            n = omp_get_num_threads();
            in_team = omp_in_parallel();
        }
    }
    REPORT("omp_get_wtime");
    printf("omp_get_wtime() never goes back in any thread: yes\n");
    CHECK(n == omp_get_max_threads(), "a team of %d, omp_get_max_threads() %d", n, omp_get_max_threads());
    printf("omp_get_max_threads() is the default team's size: yes\n");
    CHECK(in_team == (n > 1), "omp_in_parallel() %d in a team of %d", in_team, n);
    printf("omp_in_parallel() outside: %d\n", omp_in_parallel());
    printf("omp_in_parallel() in the default team: 1 if it has more than one thread: yes\n");

    int one_in = -1, one_level = -1, nested_level = -1, nested_in = -1;
#pragma omp parallel num_threads(1)
    {
        one_in = omp_in_parallel();
        one_level = omp_get_level();
    }
    printf("omp_in_parallel() in a num_threads(1) region: %d\n", one_in);
    printf("omp_get_level(): outside %d, in a num_threads(1) region %d\n", omp_get_level(), one_level);
#pragma omp parallel num_threads(2)
    {
        int outer = omp_get_thread_num();
#pragma omp parallel num_threads(1)
        {
            if (outer == 0) {
                nested_level = omp_get_level();
                nested_in = omp_in_parallel();
            }
        }
    }
    printf("omp_get_level() nested: %d, omp_in_parallel() nested in a team of 2: %d\n", nested_level, nested_in);
    printf("outside again: omp_get_thread_num() %d, omp_get_num_threads() %d, omp_in_parallel() %d\n",
           omp_get_thread_num(), omp_get_num_threads(), omp_in_parallel());
    return OK();
}
