/* CG, the conjugate gradient kernel of the NAS Parallel Benchmarks, written
 * from the NPB 3 specification for OpenMP.
 *
 * The smallest eigenvalue of a sparse symmetric positive definite matrix A
 * is estimated by inverse power iteration: NITER times, solve A z = x
 * approximately by 25 unpreconditioned conjugate gradient iterations, take
 * zeta = SHIFT + 1 / (x . z), and restart from x = z / ||z||.
 *
 * A is built as NPB prescribes: with the generator of the benchmarks
 * (x_{k+1} = 5^13 x_k mod 2^46, r_k = x_k / 2^46, seed 314159265), NA
 * sparse vectors v_i are drawn, each with NONZER random elements (value r,
 * position from the next r) and element i set to 0.5; then
 *     A = sum_i ratio^i v_i v_i^T + (RCOND - SHIFT) I,
 * ratio = RCOND^(1/NA), RCOND = 0.1, equal positions summed in the order
 * they were generated.  The matrix is built serially by the master thread;
 * the CG iterations run in one parallel region per solve, with statically
 * scheduled loops and reductions for the dot products.
 *
 * usage: cg [S|W|A|B]   (default S)
 *
 * Plain C11 + OpenMP: gcc -O2 -fopenmp cg.c -lm */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CGITMAX 25
#define RCOND 0.1
#define EPSILON 1.0e-10

struct cgclass {
    char name;
    int na, nonzer, niter;
    double shift, zeta;    /* zeta: published verification value */
};

static const struct cgclass classes[] = {
    {'S', 1400, 7, 15, 10.0, 8.5971775078648},
    {'W', 7000, 8, 15, 12.0, 10.362595087124},
    {'A', 14000, 11, 15, 20.0, 17.130235054029},
    {'B', 75000, 13, 75, 60.0, 22.712745482631},
};

/* ---- the NPB random number generator, in exact 64-bit integers ---- */

#define MASK46 ((1ULL << 46) - 1)
#define MASK23 ((1ULL << 23) - 1)
#define AMULT 1220703125ULL /* 5^13 */

static uint64_t ran_state = 314159265ULL;

/* the next deviate: state = 5^13 state mod 2^46, returned as state / 2^46 */
static double ran_next(void)
{
    uint64_t a1 = AMULT >> 23, a0 = AMULT & MASK23;
    uint64_t x1 = ran_state >> 23, x0 = ran_state & MASK23;
    uint64_t mid = (a1 * x0 + a0 * x1) & MASK23;
    ran_state = ((mid << 23) + a0 * x0) & MASK46;
    return (double)ran_state / (double)(1ULL << 46);
}

/* ---- matrix generation (serial) ---- */

/* the sparse vector of outer product i: nonzer distinct random positions in
 * 0..n-1 with random values, then position i set to 0.5 (appended if it was
 * not drawn).  Positions come from r * nn, nn the power of two at or above n;
 * those beyond n are drawn again.  Returns the element count. */
static int random_vector(int n, int nonzer, int i, int *pos, double *val)
{
    int nn = 1;
    do
        nn *= 2;
    while (nn < n);
    int cnt = 0;
    while (cnt < nonzer) {
        double value = ran_next();
        int p = (int)(nn * ran_next());
        if (p >= n)
            continue;
        int seen = 0;
        for (int e = 0; e < cnt; e++)
            if (pos[e] == p)
                seen = 1;
        if (seen)
            continue;
        pos[cnt] = p;
        val[cnt] = value;
        cnt++;
    }
    int e;
    for (e = 0; e < cnt; e++)
        if (pos[e] == i)
            break;
    if (e == cnt)
        pos[cnt++] = i;
    val[e] = 0.5;
    return cnt;
}

/* Builds A in compressed rows: rowstr[0..n], colidx and a of rowstr[n]
 * entries, columns ascending within a row.  The arrays come sized for the
 * worst case (n (nonzer+1)^2 entries). */
static void make_matrix(int n, int nonzer, double shift, int *rowstr, int *colidx,
                        double *a)
{
    int w = nonzer + 1;
    int *vcnt = malloc((size_t)n * sizeof *vcnt);
    int *vpos = malloc((size_t)n * w * sizeof *vpos);
    double *vval = malloc((size_t)n * w * sizeof *vval);
    int *fill = malloc((size_t)n * sizeof *fill);
    if (!vcnt || !vpos || !vval || !fill) {
        fprintf(stderr, "cg: out of memory\n");
        exit(2);
    }

    for (int i = 0; i < n; i++)
        vcnt[i] = random_vector(n, nonzer, i, vpos + (size_t)i * w, vval + (size_t)i * w);

    /* row r receives vcnt[i] entries from each vector i holding r */
    memset(rowstr, 0, (size_t)(n + 1) * sizeof *rowstr);
    for (int i = 0; i < n; i++)
        for (int e = 0; e < vcnt[i]; e++)
            rowstr[vpos[(size_t)i * w + e] + 1] += vcnt[i];
    for (int r = 0; r < n; r++)
        rowstr[r + 1] += rowstr[r];
    memcpy(fill, rowstr, (size_t)n * sizeof *fill);

    /* the entries of every outer product, in generation order */
    double ratio = pow(RCOND, 1.0 / (double)n), size = 1.0;
    for (int i = 0; i < n; i++) {
        const int *pos = vpos + (size_t)i * w;
        const double *val = vval + (size_t)i * w;
        for (int er = 0; er < vcnt[i]; er++) {
            int r = pos[er];
            double scale = size * val[er];
            for (int ec = 0; ec < vcnt[i]; ec++) {
                double v = val[ec] * scale;
                if (pos[ec] == r && r == i)
                    v = v + RCOND - shift;
                colidx[fill[r]] = pos[ec];
                a[fill[r]] = v;
                fill[r]++;
            }
        }
        size *= ratio;
    }

    /* per row: a stable insertion sort by column, then equal columns summed
     * (in generation order) and the rows packed to the front */
    int out = 0;
    for (int r = 0; r < n; r++) {
        int lo = rowstr[r], hi = rowstr[r + 1];
        for (int k = lo + 1; k < hi; k++) {
            int c = colidx[k];
            double v = a[k];
            int m = k;
            while (m > lo && colidx[m - 1] > c) {
                colidx[m] = colidx[m - 1];
                a[m] = a[m - 1];
                m--;
            }
            colidx[m] = c;
            a[m] = v;
        }
        rowstr[r] = out;
        for (int k = lo; k < hi; k++) {
            if (k > lo && colidx[k] == colidx[out - 1]) {
                a[out - 1] += a[k];
            } else {
                colidx[out] = colidx[k];
                a[out] = a[k];
                out++;
            }
        }
    }
    rowstr[n] = out;

    free(vcnt);
    free(vpos);
    free(vval);
    free(fill);
}

/* ---- the solver ---- */

/* 25 CG iterations for A z = x from z = 0; returns ||x - A z||.  One
 * parallel region; every loop is statically scheduled, so a thread touches
 * the same rows in every loop. */
static double conj_grad(int n, const int *rowstr, const int *colidx, const double *a,
                        const double *x, double *z, double *p, double *q, double *r)
{
    double rho = 0.0, rho_new = 0.0, pq = 0.0, resid = 0.0;

#pragma omp parallel
    {
#pragma omp for schedule(static) reduction(+ : rho)
        for (int j = 0; j < n; j++) {
            q[j] = 0.0;
            z[j] = 0.0;
            r[j] = x[j];
            p[j] = x[j];
            rho += x[j] * x[j];
        }

        for (int it = 0; it < CGITMAX; it++) {
            /* q = A p */
#pragma omp for schedule(static)
            for (int j = 0; j < n; j++) {
                double s = 0.0;
                for (int k = rowstr[j]; k < rowstr[j + 1]; k++)
                    s += a[k] * p[colidx[k]];
                q[j] = s;
            }
#pragma omp for schedule(static) reduction(+ : pq)
            for (int j = 0; j < n; j++)
                pq += p[j] * q[j];
            /* pq is complete after the loop's barrier */
            double alpha = rho / pq;
#pragma omp for schedule(static) reduction(+ : rho_new)
            for (int j = 0; j < n; j++) {
                z[j] += alpha * p[j];
                r[j] -= alpha * q[j];
                rho_new += r[j] * r[j];
            }
            double beta = rho_new / rho;
#pragma omp for schedule(static)
            for (int j = 0; j < n; j++)
                p[j] = r[j] + beta * p[j];
            /* everyone has read rho, rho_new and pq: ready them for the
             * next round (the single's barrier publishes them) */
#pragma omp single
            {
                rho = rho_new;
                rho_new = 0.0;
                pq = 0.0;
            }
        }

        /* the residual ||x - A z||, with r as scratch */
#pragma omp for schedule(static) reduction(+ : resid)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = rowstr[j]; k < rowstr[j + 1]; k++)
                s += a[k] * z[colidx[k]];
            r[j] = s;
            resid += (x[j] - s) * (x[j] - s);
        }
    }
    return sqrt(resid);
}

/* x . z and z . z, then x = z / ||z||; returns x . z (before the update) */
static double normalize(int n, double *x, const double *z)
{
    double xz = 0.0, zz = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : xz, zz)
    for (int j = 0; j < n; j++) {
        xz += x[j] * z[j];
        zz += z[j] * z[j];
    }
    double inv = 1.0 / sqrt(zz);
#pragma omp parallel for schedule(static)
    for (int j = 0; j < n; j++)
        x[j] = inv * z[j];
    return xz;
}

int main(int argc, char **argv)
{
    const struct cgclass *cl = NULL;
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
    const int n = cl->na;
    const size_t maxnz = (size_t)n * (cl->nonzer + 1) * (cl->nonzer + 1);

    printf("NPB CG (OpenMP), class %c, NA = %d, NONZER = %d, NITER = %d, SHIFT = %g, "
           "threads %d\n",
           cl->name, n, cl->nonzer, cl->niter, cl->shift, omp_get_max_threads());

    /* every big array on the master's heap */
    int *rowstr = malloc((size_t)(n + 1) * sizeof *rowstr);
    int *colidx = malloc(maxnz * sizeof *colidx);
    double *a = malloc(maxnz * sizeof *a);
    double *x = malloc((size_t)n * sizeof *x);
    double *z = malloc((size_t)n * sizeof *z);
    double *p = malloc((size_t)n * sizeof *p);
    double *q = malloc((size_t)n * sizeof *q);
    double *r = malloc((size_t)n * sizeof *r);
    if (!rowstr || !colidx || !a || !x || !z || !p || !q || !r) {
        fprintf(stderr, "cg: out of memory\n");
        return 2;
    }

    (void)ran_next(); /* NPB draws one deviate before building the matrix */
    make_matrix(n, cl->nonzer, cl->shift, rowstr, colidx, a);
    printf("matrix: %d nonzeros\n", rowstr[n]);

    /* one untimed solve, as NPB does, to touch every array once */
    for (int j = 0; j < n; j++)
        x[j] = 1.0;
    (void)conj_grad(n, rowstr, colidx, a, x, z, p, q, r);
    (void)normalize(n, x, z);

    for (int j = 0; j < n; j++)
        x[j] = 1.0;
    double zeta = 0.0, rnorm = 0.0;
    double t0 = omp_get_wtime();
    for (int it = 1; it <= cl->niter; it++) {
        rnorm = conj_grad(n, rowstr, colidx, a, x, z, p, q, r);
        double xz = normalize(n, x, z);
        zeta = cl->shift + 1.0 / xz;
        /* eleven significant digits: the reductions' order (it varies with
         * the team) moves zeta some three digits further down */
        printf("iteration %3d  zeta %.10e\n", it, zeta);
    }
    double time = omp_get_wtime() - t0;

    double err = fabs(zeta - cl->zeta) / cl->zeta;
    int ok = err <= EPSILON;
    /* the residual is rounding noise (some 1e-13), so only its size shows */
    printf("final residual %s 1e-10\n", rnorm < 1e-10 ? "below" : "ABOVE");
    printf("zeta = %.10e (reference %.13f)\n", zeta, cl->zeta);
    printf("Verification: %s\n", ok ? "SUCCESSFUL" : "FAILED");
    if (!ok)
        printf("relative error %.3e, epsilon %.1e\n", err, EPSILON);
    printf("time %.3f s\n", time);
    double nz1 = (double)cl->nonzer * (cl->nonzer + 1);
    double flops = 2.0 * cl->niter * n * (3.0 + nz1 + 25.0 * (5.0 + nz1) + 3.0);
    printf("Mop/s %.2f\n", flops / time / 1e6);

    free(rowstr);
    free(colidx);
    free(a);
    free(x);
    free(z);
    free(p);
    free(q);
    free(r);
    return ok ? 0 : 1;
}
