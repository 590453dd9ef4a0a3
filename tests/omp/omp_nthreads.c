/* Deliberately about thread counts: its lines depend on the team size
 * (compare with libgomp at OMP_NUM_THREADS = nodes x threads per node):
 * omp_get_max_threads(), the size of the default team, the sum of the
 * ids, how many threads a schedule(static) loop of 1000 iterations keeps
 * busy. */
#include "omp_test.h"

#define MAXT 4096
static int per_thread[MAXT];

int main(void)
{
    int max = omp_get_max_threads(), n = 0;
    long idsum = 0;
#pragma omp parallel reduction(+ : idsum)
    {
        idsum += omp_get_thread_num();
#pragma omp single
        n = omp_get_num_threads();
    }
    printf("omp_get_max_threads() %d\n", max);
    printf("default team %d, ids sum to %ld\n", n, idsum);
    CHECK(n <= MAXT, "a team of %d", n);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 1000; i++)
        per_thread[omp_get_thread_num()]++;
    int busy = 0, total = 0;
    for (int i = 0; i < n; i++) {
        busy += per_thread[i] > 0;
        total += per_thread[i];
    }
    CHECK(total == 1000, "%d iterations ran", total);
    printf("schedule(static), 1000 iterations: %d threads got some\n", busy);
    CHECK(n == max, "team %d, max %d", n, max);
    return OK();
}
