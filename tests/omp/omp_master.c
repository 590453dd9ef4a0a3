/* master: only thread 0 runs it, each time (10 times in a loop), with no
 * barrier of its own (a barrier after it publishes what it wrote); master
 * inside a for loop's region. */
#include "omp_test.h"

int main(void)
{
    int runs = 0, by = -1, seen_ok = 0, arrivals = 0;
#pragma omp parallel
    {
        for (int r = 0; r < 10; r++) {
#pragma omp master
            {
                runs++;
                by = omp_get_thread_num();
            }
        }
#pragma omp barrier
        FLAG(runs == 10 && by == 0);
#pragma omp atomic
        arrivals++;
#pragma omp barrier
#pragma omp master
        seen_ok = arrivals == omp_get_num_threads();
    }
    REPORT("master");
    CHECK(runs == 10 && by == 0, "master ran %d times, by thread %d", runs, by);
    CHECK(seen_ok, "the master did not see every thread's increment after a barrier");
    printf("master: %d runs, all by thread %d\n", runs, by);
    long s = 0;
#pragma omp parallel
    {
#pragma omp for reduction(+ : s)
        for (int i = 0; i < 100; i++)
            s += i;
#pragma omp master
        s += 1000000;
    }
    CHECK(s == 1004950, "sum %ld", s);
    printf("for reduction then master: %ld\n", s);
    return OK();
}
