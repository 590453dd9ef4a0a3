/* A Himeno-style benchmark for OpenMP, written from the published
 * description of the Himeno benchmark (RIKEN): Jacobi iteration for the
 * 3-D Poisson equation with the general 19-point stencil
 *
 *   s0 = a0 p[i+1][j][k] + a1 p[i][j+1][k] + a2 p[i][j][k+1]
 *      + b0 (p[i+1][j+1][k] - p[i+1][j-1][k] - p[i-1][j+1][k] + p[i-1][j-1][k])
 *      + b1 (p[i][j+1][k+1] - p[i][j-1][k+1] - p[i][j+1][k-1] + p[i][j-1][k-1])
 *      + b2 (p[i+1][j][k+1] - p[i-1][j][k+1] - p[i+1][j][k-1] + p[i-1][j][k-1])
 *      + c0 p[i-1][j][k] + c1 p[i][j-1][k] + c2 p[i][j][k-1] + wrk1
 *   ss = (s0 a3 - p) bnd,   gosa += ss^2,   wrk2 = p + omega ss
 *
 * over the interior points, then p = wrk2 on the interior; omega = 0.8,
 * a0 = a1 = a2 = 1, a3 = 1/6, b = 0, c = 1, bnd = 1, wrk1 = 0 and initially
 * p[i][j][k] = k^2 / (kmax-1)^2.  The arrays are double (the original uses
 * float) and one flat heap block each; a grid of imax x jmax x kmax points
 * has (imax-2)(jmax-2)(kmax-2) interior points, 34 flops each.
 *
 * Check: the same iterations are run again in this process by a plain
 * serial loop (no OpenMP) on arrays of its own, sharing only the read-only
 * coefficients; the final p must agree point by point (to 1e-12, in
 * practice bit for bit: every point is computed by the same expression) and
 * gosa to a relative 1e-6 (it differs only by the order of summation).  The
 * serial run costs as much again as a one-thread run, untimed.  With
 * "nocheck" it is left out and the program checks only what the mathematics
 * guarantees: the iteration is a convex combination of neighbours (p stays
 * within [0, 1]) and a symmetric contraction (gosa never grows from one
 * iteration to the next).  Much weaker (a loop that skips points passes
 * it), and so labelled.
 *
 * usage: himeno [XS|S|M] [iterations] [check|nocheck]   (default S 100)
 *
 * Plain C11 + OpenMP: gcc -O2 -fopenmp himeno.c */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OMEGA 0.8
#define GOSA_TOL 1.0e-6
#define P_TOL 1.0e-12

struct size {
    const char *name;
    int imax, jmax, kmax;
};

static const struct size sizes[] = {
    {"XS", 32, 32, 64},
    {"S", 64, 64, 128},
    {"M", 128, 128, 256},
};

struct grid {
    int imax, jmax, kmax;
    long si, sj, n;        /* strides of i and j; points in the grid */
    double *a, *b, *c;     /* 4, 3 and 3 planes of n */
    double *bnd, *wrk1;
};

/* ASCII case-insensitive equality (strcasecmp is POSIX, not C) */
static int same_name(const char *s, const char *t)
{
    for (; *s && *t; s++, t++) {
        char a = *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;
        char b = *t >= 'a' && *t <= 'z' ? (char)(*t - 'a' + 'A') : *t;
        if (a != b)
            return 0;
    }
    return *s == *t;
}

static double *alloc(long n)
{
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        fprintf(stderr, "himeno: out of memory\n");
        exit(2);
    }
    return v;
}

static void init_p(const struct grid *g, double *p)
{
    double d = (double)(g->kmax - 1) * (double)(g->kmax - 1);
    for (long i = 0; i < g->imax; i++)
        for (long j = 0; j < g->jmax; j++)
            for (long k = 0; k < g->kmax; k++)
                p[i * g->si + j * g->sj + k] = (double)(k * k) / d;
}

/* one interior point x: writes wrk2[x], returns ss^2 */
static inline double point(const struct grid *g, const double *p, double *wrk2, long x)
{
    const long n = g->n, si = g->si, sj = g->sj;
    const double *a = g->a, *b = g->b, *c = g->c;
    double s0 = a[x] * p[x + si] + a[n + x] * p[x + sj] + a[2 * n + x] * p[x + 1]
                + b[x] * (p[x + si + sj] - p[x + si - sj] - p[x - si + sj] + p[x - si - sj])
                + b[n + x] * (p[x + sj + 1] - p[x - sj + 1] - p[x + sj - 1] + p[x - sj - 1])
                + b[2 * n + x] * (p[x + si + 1] - p[x - si + 1] - p[x + si - 1] + p[x - si - 1])
                + c[x] * p[x - si] + c[n + x] * p[x - sj] + c[2 * n + x] * p[x - 1]
                + g->wrk1[x];
    double ss = (s0 * a[3 * n + x] - p[x]) * g->bnd[x];
    wrk2[x] = p[x] + OMEGA * ss;
    return ss * ss;
}

/* nn iterations in parallel; gosa of each one into hist[0..nn-1]; returns
 * the last gosa */
static double jacobi_omp(const struct grid *g, int nn, double *p, double *wrk2, double *hist)
{
    const int imax = g->imax, jmax = g->jmax, kmax = g->kmax;
    const long si = g->si, sj = g->sj;
    double gosa = 0.0;
    for (int it = 0; it < nn; it++) {
        gosa = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : gosa)
        for (int i = 1; i < imax - 1; i++)
            for (int j = 1; j < jmax - 1; j++)
                for (int k = 1; k < kmax - 1; k++)
                    gosa += point(g, p, wrk2, i * si + j * sj + k);
#pragma omp parallel for schedule(static)
        for (int i = 1; i < imax - 1; i++)
            for (int j = 1; j < jmax - 1; j++)
                for (int k = 1; k < kmax - 1; k++)
                    p[i * si + j * sj + k] = wrk2[i * si + j * sj + k];
        hist[it] = gosa;
    }
    return gosa;
}

/* the same, serially: the reference */
static double jacobi_serial(const struct grid *g, int nn, double *p, double *wrk2)
{
    double gosa = 0.0;
    for (int it = 0; it < nn; it++) {
        gosa = 0.0;
        for (long i = 1; i < g->imax - 1; i++)
            for (long j = 1; j < g->jmax - 1; j++)
                for (long k = 1; k < g->kmax - 1; k++)
                    gosa += point(g, p, wrk2, i * g->si + j * g->sj + k);
        for (long i = 1; i < g->imax - 1; i++)
            for (long j = 1; j < g->jmax - 1; j++)
                for (long k = 1; k < g->kmax - 1; k++)
                    p[i * g->si + j * g->sj + k] = wrk2[i * g->si + j * g->sj + k];
    }
    return gosa;
}

int main(int argc, char **argv)
{
    const struct size *sz = NULL;
    const char *want = argc > 1 ? argv[1] : "S";
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (same_name(sizes[i].name, want))
            sz = &sizes[i];
    int nn = 100;
    if (argc > 2) {
        char *end;
        long v = strtol(argv[2], &end, 10);
        nn = (*end || v < 1 || v > 1000000) ? -1 : (int)v;
    }
    int check = 1;
    if (argc > 3) {
        if (!strcmp(argv[3], "check"))
            check = 1;
        else if (!strcmp(argv[3], "nocheck"))
            check = 0;
        else
            nn = -1;
    }
    if (!sz || nn < 0 || argc > 4) {
        fprintf(stderr, "usage: %s [XS|S|M] [iterations] [check|nocheck]\n", argv[0]);
        return 2;
    }

    struct grid g;
    g.imax = sz->imax;
    g.jmax = sz->jmax;
    g.kmax = sz->kmax;
    g.sj = g.kmax;
    g.si = (long)g.jmax * g.kmax;
    g.n = (long)g.imax * g.si;
    const long n = g.n;

    printf("Himeno-style Jacobi (OpenMP), size %s (%dx%dx%d), %d iterations, threads %d\n",
           sz->name, g.imax, g.jmax, g.kmax, nn, omp_get_max_threads());

    /* every array on the master's heap */
    g.a = alloc(4 * n);
    g.b = alloc(3 * n);
    g.c = alloc(3 * n);
    g.bnd = alloc(n);
    g.wrk1 = alloc(n);
    double *p = alloc(n), *wrk2 = alloc(n), *hist = alloc(nn);
    for (long x = 0; x < n; x++) {
        g.a[x] = g.a[n + x] = g.a[2 * n + x] = 1.0;
        g.a[3 * n + x] = 1.0 / 6.0;
        g.b[x] = g.b[n + x] = g.b[2 * n + x] = 0.0;
        g.c[x] = g.c[n + x] = g.c[2 * n + x] = 1.0;
        g.bnd[x] = 1.0;
        g.wrk1[x] = 0.0;
        wrk2[x] = 0.0;
    }
    init_p(&g, p);

    double t0 = omp_get_wtime();
    double gosa = jacobi_omp(&g, nn, p, wrk2, hist);
    double time = omp_get_wtime() - t0;

    /* ten significant digits: the reduction's order (it varies with the
     * team) moves gosa some four digits further down */
    printf("gosa = %.9e\n", gosa);

    int ok = isfinite(gosa) && gosa > 0.0;
    if (check) {
        double *pr = alloc(n), *wr = alloc(n);
        memset(wr, 0, (size_t)n * sizeof *wr);
        init_p(&g, pr);
        double gref = jacobi_serial(&g, nn, pr, wr);
        double dmax = 0.0;
        for (long x = 0; x < n; x++) {
            double d = fabs(p[x] - pr[x]);
            if (!(d <= dmax)) /* NaN counts too */
                dmax = isnan(d) ? INFINITY : d;
        }
        double gerr = fabs(gosa - gref) / gref;
        printf("Check: serial reference, gosa = %.9e\n", gref);
        int pok = dmax <= P_TOL, gok = gerr <= GOSA_TOL;
        if (pok)
            printf("p agrees with the reference at every point\n");
        else
            printf("p differs from the reference by up to %.3e\n", dmax);
        if (!gok)
            printf("gosa differs from the reference by a relative %.3e\n", gerr);
        ok = ok && pok && gok;
        free(pr);
        free(wr);
    } else {
        int mono = 1, bounded = 1;
        for (int it = 1; it < nn; it++)
            if (!(hist[it] <= hist[it - 1]))
                mono = 0;
        for (long x = 0; x < n; x++)
            if (!(p[x] >= 0.0 && p[x] <= 1.0))
                bounded = 0;
        printf("Check: invariants only (no serial reference): gosa %s, p %s\n",
               mono ? "never grows" : "GROWS", bounded ? "within [0, 1]" : "OUTSIDE [0, 1]");
        ok = ok && mono && bounded;
    }
    printf("Verification: %s\n", ok ? "SUCCESSFUL" : "FAILED");
    printf("time %.3f s\n", time);
    double flops = 34.0 * (g.imax - 2) * (g.jmax - 2) * (double)(g.kmax - 2) * nn;
    printf("Mop/s %.2f\n", flops / time / 1e6);

    free(g.a);
    free(g.b);
    free(g.c);
    free(g.bnd);
    free(g.wrk1);
    free(p);
    free(wrk2);
    free(hist);
    return ok ? 0 : 1;
}
