/* for, schedule(static) and schedule(static, 3), with uneven work
 * (cost ~ i % 17): every iteration runs exactly once (a count array), the
 * sums are right, static gives each thread one contiguous block in thread
 * order, static,3 hands the chunks out round robin ((i / 3) % n); a loop
 * shorter than the team and an empty one. */
#include "omp_test.h"

#define N 1000
static int count[N], owner[N];

static void reset(void)
{
    for (int i = 0; i < N; i++)
        count[i] = 0, owner[i] = -1;
}

int main(void)
{
    long sum = 0, expect = 0;
    int n = 0;
    for (int i = 0; i < N; i++)
        expect += work_value(i) + i;

    reset();
#pragma omp parallel reduction(+ : sum)
    {
#pragma omp single
        n = omp_get_num_threads();
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            count[i]++;
            owner[i] = omp_get_thread_num();
            sum += work(i) + i;
        }
    }
    check_once_each(count, N, "static");
    CHECK(sum == expect, "static: sum %ld, expected %ld", sum, expect);
    for (int i = 1; i < N; i++)
        CHECK(owner[i] >= owner[i - 1] && owner[i] < n, "static: iteration %d by thread %d after %d by %d", i, owner[i], i - 1, owner[i - 1]);
    printf("schedule(static): %d iterations once each, sum %ld, contiguous blocks in thread order\n", N, sum);

    reset();
    sum = 0;
#pragma omp parallel for schedule(static, 3) reduction(+ : sum)
    for (int i = 0; i < N; i++) {
        count[i]++;
        owner[i] = omp_get_thread_num();
        sum += work(i) + i;
    }
    check_once_each(count, N, "static,3");
    CHECK(sum == expect, "static,3: sum %ld, expected %ld", sum, expect);
    for (int i = 0; i < N; i++)
        CHECK(owner[i] == (i / 3) % n, "static,3: iteration %d by thread %d, not %d", i, owner[i], (i / 3) % n);
    printf("schedule(static, 3): %d iterations once each, sum %ld, chunk k by thread k %% n\n", N, sum);

    /* fewer iterations than threads, none at all, a loop by a stride */
    reset();
    int small = 0, none = 0;
    long strided = 0;
#pragma omp parallel
    {
#pragma omp for schedule(static) reduction(+ : small)
        for (int i = 0; i < 3; i++) {
            count[i]++;
            small += i + 1;
        }
#pragma omp for schedule(static, 3) reduction(+ : none)
        for (int i = 5; i < 5; i++)
            none++;
#pragma omp for schedule(static) reduction(+ : strided)
        for (int i = 7; i < N; i += 13)
            strided += i;
    }
    check_once_each(count, 3, "static, 3 iterations");
    CHECK(count[3] == 0, "static: iteration 3 of 3 ran");
    CHECK(small == 6 && none == 0, "small %d, none %d", small, none);
    long es = 0;
    for (int i = 7; i < N; i += 13)
        es += i;
    CHECK(strided == es, "strided %ld, expected %ld", strided, es);
    printf("3 iterations: sum %d; 0 iterations: %d; stride 13 from 7: sum %ld\n", small, none, strided);
    return OK();
}
