/* barrier: 20 phases; in each every thread writes its slot, a barrier,
 * then reads every other thread's slot (it must see this phase's
 * values), a barrier before the next phase's writes; a barrier in a
 * function called from the region. */
#include "omp_test.h"

#define MAXT 4096
static long slot[MAXT];
static long seen_sum[MAXT];

static void sync_all(void)
{
#pragma omp barrier
}

int main(void)
{
    int n = 0;
#pragma omp parallel
    {
        int id = omp_get_thread_num(), nt = omp_get_num_threads();
        FLAG(nt <= MAXT);
#pragma omp master
        n = nt;
        for (int p = 0; p < 20 && nt <= MAXT; p++) {
            slot[id] = p * 100000L + id + work(id + p) - work_value(id + p);
#pragma omp barrier
            long s = 0;
            for (int k = 0; k < nt; k++) {
                FLAG(slot[k] == p * 100000L + k);
                s += slot[k] - p * 100000L;
            }
            seen_sum[id] += s;
            if (p % 2)
                sync_all();
            else {
#pragma omp barrier
            }
        }
    }
    REPORT("barrier");
    long e = 20L * n * (n - 1) / 2;
    for (int k = 0; k < n; k++)
        CHECK(seen_sum[k] == e, "thread %d saw %ld, expected %ld", k, seen_sum[k], e);
    printf("20 phases: write own slot, barrier, read all slots: every thread saw every write of the phase\n");
    return OK();
}
