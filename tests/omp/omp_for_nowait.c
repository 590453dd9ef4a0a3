/* for ... nowait: two static loops of the same shape (the same thread
 * owns the same iterations, so the second may read what the first wrote
 * without a barrier), a dynamic nowait loop, then a barrier and a loop
 * that reads what other threads wrote. */
#include "omp_test.h"

#define N 1200
static long a[N], b[N], c[N], d[N];

int main(void)
{
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (int i = 0; i < N; i++)
            a[i] = 2L * i + work(i) - work_value(i);
#pragma omp for schedule(static) nowait
        for (int i = 0; i < N; i++)
            b[i] = a[i] + 1;
#pragma omp for schedule(dynamic, 5) nowait
        for (int i = 0; i < N; i++)
            c[i] = 3L * i + work(i);
#pragma omp barrier
#pragma omp for schedule(dynamic, 3) nowait
        for (int i = 0; i < N; i++)
            d[i] = b[N - 1 - i] + c[(i * 7) % N];
    }
    long sum = 0;
    for (int i = 0; i < N; i++) {
        long e = 2L * (N - 1 - i) + 1 + 3L * ((i * 7) % N) + work_value((i * 7) % N);
        CHECK(d[i] == e, "d[%d] = %ld, expected %ld", i, d[i], e);
        sum += d[i];
    }
    printf("static nowait, static nowait (same schedule), dynamic nowait, barrier, dynamic nowait: sum %ld\n", sum);
    return OK();
}
