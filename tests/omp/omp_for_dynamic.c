/* for, schedule(dynamic) (chunk 1 by default), schedule(dynamic, 1) and
 * schedule(dynamic, 7) with uneven work (cost ~ i % 17): every iteration
 * runs exactly once, the sums are right, a chunk of 7 (from a multiple of
 * 7) runs in one thread; two dynamic loops in one region. */
#include "omp_test.h"

#define N 1500
static int count[N], owner[N];

static void reset(void)
{
    for (int i = 0; i < N; i++)
        count[i] = 0, owner[i] = -1;
}

int main(void)
{
    long expect = 0;
    for (int i = 0; i < N; i++)
        expect += work_value(i) + 2 * i;

    long s0 = 0, s1 = 0, s7 = 0;
    reset();
#pragma omp parallel for schedule(dynamic) reduction(+ : s0)
    for (int i = 0; i < N; i++) {
        count[i]++;
        s0 += work(i) + 2 * i;
    }
    check_once_each(count, N, "dynamic");
    CHECK(s0 == expect, "dynamic: sum %ld, expected %ld", s0, expect);
    printf("schedule(dynamic): %d iterations once each, sum %ld\n", N, s0);

#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 1) reduction(+ : s1)
        for (int i = 0; i < N; i++) {
            count[i]++;
            s1 += work(i) + 2 * i;
        }
#pragma omp master
        check_once_each(count, N, "dynamic,1");
#pragma omp barrier
#pragma omp for schedule(dynamic, 7) reduction(+ : s7)
        for (int i = 0; i < N; i++) {
            count[i]++;
            owner[i] = omp_get_thread_num();
            s7 += work(i) + 2 * i;
        }
    }
    CHECK(s1 == expect, "dynamic,1: sum %ld, expected %ld", s1, expect);
    printf("schedule(dynamic, 1): %d iterations once each, sum %ld\n", N, s1);
    check_once_each(count, N, "dynamic,7");
    CHECK(s7 == expect, "dynamic,7: sum %ld, expected %ld", s7, expect);
    for (int i = 0; i < N; i++)
        CHECK(owner[i] == owner[i - i % 7], "dynamic,7: iteration %d by thread %d, its chunk's first by %d", i, owner[i], owner[i - i % 7]);
    printf("schedule(dynamic, 7): %d iterations once each, sum %ld, chunks of 7 in one thread\n", N, s7);
    return OK();
}
