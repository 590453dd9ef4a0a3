/* for, schedule(runtime): the schedule comes from OMP_SCHEDULE (the
 * runner sets e.g. "dynamic,4" or "guided,2"), with uneven work (cost
 * ~ i % 17): every iteration exactly once, the sums right, in a combined
 * parallel for and in a for inside a region (twice). */
#include "omp_test.h"

#define N 1500
static int count[N];

int main(void)
{
    long expect = 0;
    for (int i = 0; i < N; i++)
        expect += work_value(i) + i;
    long a = 0, b = 0, c = 0;
#pragma omp parallel for schedule(runtime) reduction(+ : a)
    for (int i = 0; i < N; i++) {
        count[i]++;
        a += work(i) + i;
    }
    check_once_each(count, N, "parallel for runtime");
    CHECK(a == expect, "parallel for runtime: sum %ld, expected %ld", a, expect);
    printf("parallel for schedule(runtime): %d iterations once each, sum %ld\n", N, a);
#pragma omp parallel
    {
#pragma omp for schedule(runtime) reduction(+ : b)
        for (int i = 0; i < N; i++) {
            count[i]++;
            b += work(i) + i;
        }
#pragma omp master
        check_once_each(count, N, "for runtime (1)");
#pragma omp barrier
#pragma omp for schedule(runtime) reduction(+ : c)
        for (int i = N - 1; i >= 0; i--) {
            count[i]++;
            c += work(i) + i;
        }
    }
    check_once_each(count, N, "for runtime (2)");
    CHECK(b == expect && c == expect, "for runtime: sums %ld, %ld, expected %ld", b, c, expect);
    printf("for schedule(runtime) twice in a region: sums %ld, %ld\n", b, c);
    return OK();
}
