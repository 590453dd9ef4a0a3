/* for, schedule(guided) and schedule(guided, 5) with uneven work (cost
 * ~ i % 17): every iteration exactly once, the sums right; a guided loop
 * with a negative step. */
#include "omp_test.h"

#define N 2000
static int count[N];

int main(void)
{
    long expect = 0;
    for (int i = 0; i < N; i++)
        expect += work_value(i) + i;
    long g = 0, g5 = 0, gneg = 0;
#pragma omp parallel for schedule(guided) reduction(+ : g)
    for (int i = 0; i < N; i++) {
        count[i]++;
        g += work(i) + i;
    }
    check_once_each(count, N, "guided");
    CHECK(g == expect, "guided: sum %ld, expected %ld", g, expect);
    printf("schedule(guided): %d iterations once each, sum %ld\n", N, g);
#pragma omp parallel for schedule(guided, 5) reduction(+ : g5)
    for (int i = 0; i < N; i++) {
        count[i]++;
        g5 += work(i) + i;
    }
    check_once_each(count, N, "guided,5");
    CHECK(g5 == expect, "guided,5: sum %ld, expected %ld", g5, expect);
    printf("schedule(guided, 5): %d iterations once each, sum %ld\n", N, g5);
#pragma omp parallel for schedule(guided, 2) reduction(+ : gneg)
    for (int i = N - 1; i >= 0; i -= 3) {
        count[i]++;
        gneg += work(i) + i;
    }
    long en = 0;
    for (int i = N - 1; i >= 0; i -= 3) {
        CHECK(count[i] == 1, "guided,2 step -3: iteration %d ran %d times", i, count[i]);
        count[i] = 0;
        en += work_value(i) + i;
    }
    for (int i = 0; i < N; i++)
        CHECK(count[i] == 0, "guided,2 step -3: iteration %d (not in the loop) ran", i);
    CHECK(gneg == en, "guided step -3: sum %ld, expected %ld", gneg, en);
    printf("schedule(guided, 2), from %d down by 3: sum %ld\n", N - 1, gneg);
    return OK();
}
