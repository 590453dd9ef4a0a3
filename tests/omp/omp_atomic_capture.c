/* atomic capture: v = x++ hands out tickets 0..N-1 (each once), {x += 2;
 * v = x;} hands out the even numbers 2..2N, v = x-- counts down, a
 * double capture {v = d; d += 0.5;}; every value captured exactly once. */
#include "omp_test.h"

#define N 1500
static int seen[2 * N + 2], seen_down[N], seen_d[N];

int main(void)
{
    int x = 0, y = 0, z = N;
    double d = 0;
#pragma omp parallel for schedule(dynamic, 5)
    for (int i = 0; i < N; i++) {
        int v, w, u;
        double dv;
#pragma omp atomic capture
        v = x++;
#pragma omp atomic capture
        {
            y += 2;
            w = y;
        }
#pragma omp atomic capture
        u = z--;
#pragma omp atomic capture
        {
            dv = d;
            d += 0.5;
        }
        if (v >= 0 && v < N)
#pragma omp atomic
            seen[v]++;
        if (w >= 0 && w <= 2 * N)
#pragma omp atomic
            seen[w] += 10;
        if (u >= 1 && u <= N)
#pragma omp atomic
            seen_down[u - 1]++;
        int di = (int)(dv * 2);
        if (di >= 0 && di < N && di == dv * 2)
#pragma omp atomic
            seen_d[di]++;
    }
    CHECK(x == N && y == 2 * N && z == 0 && d == N / 2.0, "x %d y %d z %d d %g", x, y, z, d);
    for (int k = 0; k <= 2 * N; k++) {
        int e = (k < N ? 1 : 0) + (k > 0 && k % 2 == 0 ? 10 : 0);
        CHECK(seen[k] == e, "value %d captured %d (x++: ones, y += 2: tens), expected %d", k, seen[k], e);
    }
    for (int k = 0; k < N; k++)
        CHECK(seen_down[k] == 1 && seen_d[k] == 1, "value %d: x-- %d times, d += 0.5 %d times", k, seen_down[k], seen_d[k]);
    printf("v = x++: tickets 0..%d each once; {x += 2; v = x}: 2..%d each once\n", N - 1, 2 * N);
    printf("v = x--: %d..1 each once; {v = d; d += 0.5}: 0..%g each once\n", N, (N - 1) / 2.0);
    printf("final: %d %d %d %g\n", x, y, z, d);
    return OK();
}
