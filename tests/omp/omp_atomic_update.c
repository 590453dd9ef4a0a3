/* atomic update: int ++ and +=, long +=, unsigned *= and ^= and |=,
 * double += and *= (exact: quarters, powers of two), long double +=
 * (through GOMP_atomic_start/end), a min and a max with atomic compare;
 * over a loop of 1200 iterations and per thread. */
#include "omp_test.h"

#define N 1200

int main(void)
{
    int ci = 0, ai = 0, bits = 0;
    long al = 0;
    unsigned um = 1, ux = 0;
    double ad = 0, pd = 1;
    long double ld = 0;
    double mn = 1e9, mx = -1e9;
    int per_thread = 0, n = 0;
#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 13)
        for (int i = 0; i < N; i++) {
#pragma omp atomic
            ci++;
#pragma omp atomic
            ai += i % 7 - 3;
#pragma omp atomic update
            al += (long)i << 24;
#pragma omp atomic
            um *= (i % 3 == 0) ? 3u : 1u;
#pragma omp atomic
            ux ^= (unsigned)i * 2654435761u;
#pragma omp atomic
            bits |= 1 << (i % 31);
#pragma omp atomic
            ad += (i % 9) * 0.25;
#pragma omp atomic
            pd *= (i % 100 == 0) ? 2.0 : (i % 100 == 50) ? 0.5 : (i % 300 == 7) ? 4.0 : 1.0;
#pragma omp atomic
            ld += 0.5L;
            double v = ((i * 41) % 1013) * 0.5 - 100;
#pragma omp atomic compare
            if (v < mn) { mn = v; }
#pragma omp atomic compare
            if (v > mx) { mx = v; }
        }
#pragma omp atomic
        per_thread += 1;
#pragma omp master
        n = omp_get_num_threads();
    }
    int eai = 0;
    long eal = 0;
    unsigned eum = 1, eux = 0;
    double ead = 0, emn = 1e9, emx = -1e9;
    for (int i = 0; i < N; i++) {
        eai += i % 7 - 3;
        eal += (long)i << 24;
        eum *= (i % 3 == 0) ? 3u : 1u;
        eux ^= (unsigned)i * 2654435761u;
        ead += (i % 9) * 0.25;
        double v = ((i * 41) % 1013) * 0.5 - 100;
        emn = v < emn ? v : emn;
        emx = v > emx ? v : emx;
    }
    CHECK(ci == N && ai == eai && al == eal, "int ++ %d, int += %d, long += %ld", ci, ai, al);
    CHECK(um == eum && ux == eux && bits == 0x7fffffff, "unsigned *= %u ^= %u, |= %#x", um, ux, bits);
    CHECK(ad == ead && pd == 0x1p8 && ld == N / 2, "double += %g *= %a, long double += %Lg", ad, pd, ld);
    CHECK(mn == emn && mx == emx, "compare: min %g max %g, expected %g %g", mn, mx, emn, emx);
    CHECK(per_thread == n, "one per thread: %d, team of %d", per_thread, n);
    printf("int: ++ %d, += %d; long += %ld\n", ci, ai, al);
    printf("unsigned: *= %u, ^= %u, |= %#x\n", um, ux, (unsigned)bits);
    printf("double: += %g, *= %a; long double += %Lg\n", ad, pd, ld);
    printf("atomic compare: min %g, max %g\n", mn, mx);
    printf("one update per thread: the team size\n");
    return OK();
}
