/* EP, the "embarrassingly parallel" kernel of the NAS Parallel Benchmarks,
 * written from the NPB 3 specification for OpenMP.
 *
 * 2^(M+1) uniform deviates r_1, r_2, ... in (0,1) come from the linear
 * congruential generator x_{k+1} = a * x_k mod 2^46, r_k = x_k / 2^46, with
 * a = 5^13 and x_0 = 271828183.  They are taken in pairs
 * (x, y) = (2 r_{2j-1} - 1, 2 r_{2j} - 1); a pair with t = x^2 + y^2 <= 1
 * gives the two Gaussian deviates X = x sqrt(-2 ln t / t), Y = y sqrt(...)
 * (Marsaglia's polar method).  The kernel sums X and Y and counts the pairs
 * in each square annulus l <= max(|X|,|Y|) < l+1, l = 0..9.
 *
 * The pairs are cut into 2^(M-16) batches of 2^16 pairs; batch b starts
 * from the seed x_0 * a^(2 * 2^16 * b), found by repeated squaring, so the
 * batches are independent and the batch loop is the parallel loop.
 *
 * usage: ep [S|W|A|B]   (default S)
 *
 * Plain C11 + OpenMP: gcc -O2 -fopenmp ep.c -lm */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MK 16              /* log2 of the pairs in a batch */
#define NQ 10              /* annuli counted */
#define SEED 271828183ULL
#define MULT 1220703125ULL /* 5^13 */
#define MASK46 ((1ULL << 46) - 1)
#define MASK23 ((1ULL << 23) - 1)
#define EPSILON 1.0e-8

/* a * x mod 2^46 for a, x < 2^46, exactly, in 64-bit integers: with
 * a = a1 2^23 + a0 and x = x1 2^23 + x0 the a1 x1 2^46 term vanishes. */
static inline uint64_t mulmod46(uint64_t a, uint64_t x)
{
    uint64_t a1 = a >> 23, a0 = a & MASK23, x1 = x >> 23, x0 = x & MASK23;
    uint64_t mid = (a1 * x0 + a0 * x1) & MASK23;
    return ((mid << 23) + a0 * x0) & MASK46;
}

/* a^e mod 2^46 by repeated squaring */
static uint64_t powmod46(uint64_t a, uint64_t e)
{
    uint64_t r = 1;
    while (e) {
        if (e & 1)
            r = mulmod46(r, a);
        a = mulmod46(a, a);
        e >>= 1;
    }
    return r;
}

struct epclass {
    char name;
    int m;
    double sx, sy;         /* published verification sums */
};

static const struct epclass classes[] = {
    {'S', 24, -3.247834652034740e+3, -6.958407078382297e+3},
    {'W', 25, -2.863319731645753e+3, -6.320053679109499e+3},
    {'A', 28, -4.295875165629892e+3, -1.580732573678431e+4},
    {'B', 30, 4.033815542441498e+4, -2.660669192809235e+4},
};

int main(int argc, char **argv)
{
    const struct epclass *cl = NULL;
    char want = argc > 1 ? argv[1][0] : 'S';
    if (want >= 'a' && want <= 'z')
        want = (char)(want - 'a' + 'A');
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (classes[i].name == want && (argc < 2 || strlen(argv[1]) == 1))
            cl = &classes[i];
    if (!cl) {
        fprintf(stderr, "usage: %s [S|W|A|B]\n", argv[0]);
        return 2;
    }

    const long nbatch = 1L << (cl->m - MK);
    const long npairs = 1L << MK;
    /* a^(2 * 2^MK): how far the generator moves in one batch */
    const uint64_t batch_jump = powmod46(MULT, 2ULL << MK);
    const double r46 = 1.0 / (double)(1ULL << 46);

    printf("NPB EP (OpenMP), class %c, M = %d, threads %d\n", cl->name, cl->m,
           omp_get_max_threads());

    double sx = 0.0, sy = 0.0;
    long q[NQ] = {0};

    double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) reduction(+ : sx, sy) reduction(+ : q[:NQ])
    for (long b = 0; b < nbatch; b++) {
        uint64_t x = mulmod46(SEED, powmod46(batch_jump, (uint64_t)b));
        for (long j = 0; j < npairs; j++) {
            x = mulmod46(MULT, x);
            double u = 2.0 * ((double)x * r46) - 1.0;
            x = mulmod46(MULT, x);
            double v = 2.0 * ((double)x * r46) - 1.0;
            double t = u * u + v * v;
            if (t <= 1.0) {
                double f = sqrt(-2.0 * log(t) / t);
                double gx = u * f, gy = v * f;
                double ax = fabs(gx), ay = fabs(gy);
                int l = (int)(ax > ay ? ax : ay);
                if (l < NQ) /* always, for the generator's actual values */
                    q[l]++;
                sx += gx;
                sy += gy;
            }
        }
    }
    double time = omp_get_wtime() - t0;

    long gc = 0;
    for (int l = 0; l < NQ; l++)
        gc += q[l];
    double ex = fabs((sx - cl->sx) / cl->sx), ey = fabs((sy - cl->sy) / cl->sy);
    int ok = ex <= EPSILON && ey <= EPSILON;

    printf("pairs generated %ld, Gaussian pairs %ld\n", nbatch * npairs, gc);
    /* ten significant digits: the verification needs eight, and the
     * reduction's summation order (it varies with the team) only shows
     * some five digits further down */
    printf("sx = %.9e\n", sx);
    printf("sy = %.9e\n", sy);
    for (int l = 0; l < NQ; l++)
        printf("q[%d] = %ld\n", l, q[l]);
    printf("Verification: %s\n", ok ? "SUCCESSFUL" : "FAILED");
    if (!ok)
        printf("reference sx = %.15e, sy = %.15e, relative errors %.3e %.3e\n", cl->sx,
               cl->sy, ex, ey);
    printf("time %.3f s\n", time);
    printf("Mop/s %.2f\n", (double)(2 * nbatch * npairs) / time / 1e6);
    return ok ? 0 : 1;
}
