/* for with schedule modifiers: nonmonotonic:dynamic (chunk 1 and 5),
 * nonmonotonic:guided, monotonic:dynamic,3 (each thread's chunks come in
 * increasing order), monotonic:static; uneven work, each iteration once,
 * sums right. */
#include "omp_test.h"

#define N 1500
#define MAXT 4096
static int count[N];
static int last[MAXT];

int main(void)
{
    long expect = 0;
    for (int i = 0; i < N; i++)
        expect += work_value(i) + i;
    long s[5] = {0, 0, 0, 0, 0};
#pragma omp parallel for schedule(nonmonotonic : dynamic) reduction(+ : s[0])
    for (int i = 0; i < N; i++) {
        count[i]++;
        s[0] += work(i) + i;
    }
    check_once_each(count, N, "nonmonotonic:dynamic");
    printf("schedule(nonmonotonic: dynamic): each once, sum %ld\n", s[0]);
#pragma omp parallel
    {
#pragma omp for schedule(nonmonotonic : dynamic, 5) reduction(+ : s[1])
        for (int i = 0; i < N; i++) {
            count[i]++;
            s[1] += work(i) + i;
        }
#pragma omp master
        check_once_each(count, N, "nonmonotonic:dynamic,5");
#pragma omp barrier
#pragma omp for schedule(nonmonotonic : guided) reduction(+ : s[2])
        for (int i = 0; i < N; i++) {
            count[i]++;
            s[2] += work(i) + i;
        }
    }
    printf("schedule(nonmonotonic: dynamic, 5): each once, sum %ld\n", s[1]);
    check_once_each(count, N, "nonmonotonic:guided");
    printf("schedule(nonmonotonic: guided): each once, sum %ld\n", s[2]);
    for (int t = 0; t < MAXT; t++)
        last[t] = -1;
#pragma omp parallel for schedule(monotonic : dynamic, 3) reduction(+ : s[3])
    for (int i = 0; i < N; i++) {
        int t = omp_get_thread_num();
        FLAG(t < MAXT && i > last[t]);
        if (t < MAXT)
            last[t] = i;
        count[i]++;
        s[3] += work(i) + i;
    }
    REPORT("monotonic:dynamic,3");
    check_once_each(count, N, "monotonic:dynamic,3");
    printf("schedule(monotonic: dynamic, 3): each once, each thread's iterations increasing, sum %ld\n", s[3]);
#pragma omp parallel for schedule(monotonic : static) reduction(+ : s[4])
    for (int i = 0; i < N; i++) {
        count[i]++;
        s[4] += work(i) + i;
    }
    check_once_each(count, N, "monotonic:static");
    printf("schedule(monotonic: static): each once, sum %ld\n", s[4]);
    for (int k = 0; k < 5; k++)
        CHECK(s[k] == expect, "loop %d: sum %ld, expected %ld", k, s[k], expect);
    return OK();
}
