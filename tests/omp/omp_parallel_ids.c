/* parallel: every thread of the team has its own id in 0..n-1 (each seen
 * exactly once, recorded in a shared array), every thread sees the same
 * omp_get_num_threads(), the team is omp_get_max_threads() strong, and
 * omp_get_num_threads() is 1 outside; three regions in a row. */
#include "omp_test.h"

#define MAXT 4096
static int seen[MAXT];
static int view[MAXT];

int main(void)
{
    int outside = omp_get_num_threads();
    int outside_id = omp_get_thread_num();
    CHECK(outside == 1 && outside_id == 0, "outside a region: %d threads, id %d", outside, outside_id);
    int max = omp_get_max_threads();
    for (int round = 0; round < 3; round++) {
        int n = 0, arrived = 0;
        for (int i = 0; i < MAXT; i++)
            seen[i] = view[i] = 0;
#pragma omp parallel
        {
            int id = omp_get_thread_num(), nt = omp_get_num_threads();
            FLAG(nt >= 1 && nt <= MAXT && id >= 0 && id < nt);
            if (id >= 0 && id < MAXT) {
                seen[id]++;
                view[id] = nt;
            }
#pragma omp atomic
            arrived++;
            if (id == 0)
                n = nt;
        }
        REPORT("parallel");
        CHECK(n == max, "round %d: a team of %d, omp_get_max_threads() %d", round, n, max);
        CHECK(arrived == n, "round %d: %d threads arrived in a team of %d", round, arrived, n);
        for (int i = 0; i < MAXT; i++) {
            CHECK(seen[i] == (i < n), "round %d: id %d seen %d times (team of %d)", round, i, seen[i], n);
            CHECK(i >= n || view[i] == n, "round %d: thread %d saw a team of %d, not %d", round, i, view[i], n);
        }
    }
    printf("outside a region: omp_get_num_threads() 1, omp_get_thread_num() 0\n");
    printf("3 regions: ids 0..n-1 each once, n == omp_get_max_threads(), the same n seen by all\n");
    printf("after the regions: omp_get_num_threads() %d\n", omp_get_num_threads());
    return OK();
}
