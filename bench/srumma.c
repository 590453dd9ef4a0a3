/*
 * SRUMMA (shared and remote-memory-access based matrix multiplication):
 * C = A * B for N x N doubles on a q x q grid of ranks (q*q = ranks),
 * each rank holding one nb x nb block (nb = N / q) of A, B and C in its
 * window, row-major.  Rank (i, j) computes C(i, j) = sum_k A(i, k) B(k, j):
 * it gets the blocks it needs with nonblocking one-sided gets, the next
 * pair in flight while OpenBLAS's cblas_dgemm multiplies the current one
 * (double buffering), starting at k = (i + j) mod q so that the ranks do
 * not all read the same block at once.  The blocks are fetched as strided
 * gets of nb rows of 8*nb bytes (the layout of a block inside a row-major
 * global matrix, as GA stores them: one level, a row of the global matrix
 * apart) out of the owner's whole stripe, so the methods have something to
 * choose between.
 *
 *   srumma [--n 512] [--reps 3] [--method direct|agent|pack|auto]
 *
 * Checks C against the product computed from A's and B's formulas (every
 * element of rank 0's block and a sample of the others') and prints the
 * median time of one multiplication, the time spent waiting for gets,
 * and GFLOP/s.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "knit.h"
#include "knit/rma.h"
#include "rmautil.h"

static knit_ctx_t *ctx;

#define OK(call)                                                                                       \
    do {                                                                                               \
        knit_status_t st_ = (call);                                                                    \
        if (st_ != KNIT_OK) {                                                                          \
            fprintf(stderr, "srumma: %s: %s\n", #call, knit_strerror(st_));                           \
            knit_abort(ctx, 1, #call);                                                                 \
        }                                                                                              \
    } while (0)

static double aval(long i, long j)
{
    return (double)((i * 7 + j * 3) % 11) - 5.0;
}

static double bval(long i, long j)
{
    return (double)((i * 5 + j * 13) % 7) - 3.0;
}

int main(int argc, char **argv)
{
    int n = 512, reps = 3;
    unsigned method = KNIT_RMA_DEFAULT;
    const char *mname = "default";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--method")) {
            mname = argv[i + 1];
            method = ru_method(mname);
        }
    }
    OK(knit_init(&argc, &argv, &ctx));
    int rank = knit_rank(ctx), size = knit_size(ctx);
    int q = (int)lround(sqrt((double)size));
    if (q * q != size || n % q) {
        if (rank == 0)
            fprintf(stderr, "srumma: needs a square number of ranks dividing n (%d ranks, n %d)\n", size, n);
        knit_finalize(ctx);
        return 2;
    }
    int nb = n / q, bi = rank / q, bj = rank % q;
    size_t blk = (size_t)nb * nb;
    /* the window: my blocks of A and B, each stored as the rows of a
     * block-row stripe would be (a row of the stripe is q blocks wide);
     * only my own nb columns of it are filled: a remote block is nb rows of
     * 8*nb bytes, 8*n apart */
    size_t stripe = (size_t)nb * n;
    knit_win_t *win;
    OK(knit_mem_alloc(knit_comm_world(ctx), 2 * stripe * sizeof(double), &win));
    double *mine = knit_win_base(win, rank), *A = mine, *B = mine + stripe;
    for (int r = 0; r < nb; r++)
        for (int c = 0; c < nb; c++) {
            A[(size_t)r * n + (size_t)bj * nb + c] = aval((long)bi * nb + r, (long)bj * nb + c);
            B[(size_t)r * n + (size_t)bj * nb + c] = bval((long)bi * nb + r, (long)bj * nb + c);
        }
    double *C = malloc(blk * sizeof(double)), *buf[2][2];
    for (int b = 0; b < 2; b++)
        for (int m = 0; m < 2; m++)
            buf[b][m] = malloc(blk * sizeof(double));
    OK(knit_barrier(knit_comm_world(ctx)));
    double *total = malloc((size_t)reps * sizeof(double)), *waited = malloc((size_t)reps * sizeof(double));
    const int64_t count[2] = {(int64_t)nb * 8, nb}, rstride[1] = {(int64_t)n * 8}, lstride[1] = {(int64_t)nb * 8};
    for (int rep = 0; rep < reps; rep++) {
        memset(C, 0, blk * sizeof(double));
        knit_rma_req_t *req[2][2] = {{NULL, NULL}, {NULL, NULL}};
        double t0 = ru_now(), w = 0;
        /* get A(bi, k) from rank (bi, k) and B(k, bj) from rank (k, bj) into buffer b */
#define FETCH(step, b)                                                                                  \
    do {                                                                                               \
        int k_ = (bi + bj + (step)) % q, ra_ = bi * q + k_, rb_ = k_ * q + bj;                       \
        const double *sa_ = (const double *)knit_win_base(win, ra_) + (size_t)k_ * nb;                \
        const double *sb_ = (const double *)knit_win_base(win, rb_) + stripe + (size_t)bj * nb;       \
        OK(knit_get_strided(win, buf[b][0], lstride, sa_, rstride, count, 1, ra_, method, &req[b][0])); \
        OK(knit_get_strided(win, buf[b][1], lstride, sb_, rstride, count, 1, rb_, method, &req[b][1])); \
    } while (0)
        FETCH(0, 0);
        for (int s = 0; s < q; s++) {
            int b = s % 2;
            if (s + 1 < q)
                FETCH(s + 1, !b);
            double ws = ru_now();
            OK(knit_rma_waitall(2, req[b]));
            w += ru_now() - ws;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, nb, nb, 1.0, buf[b][0], nb, buf[b][1], nb,
                        1.0, C, nb);
        }
        OK(knit_barrier(knit_comm_world(ctx)));
        total[rep] = ru_now() - t0;
        waited[rep] = w;
    }
    /* check: rank 0's whole block, a sample elsewhere */
    int step = rank == 0 ? 1 : 17;
    for (int r = 0; r < nb; r += step)
        for (int c = 0; c < nb; c += step) {
            long gi = (long)bi * nb + r, gj = (long)bj * nb + c;
            double want = 0;
            for (long k = 0; k < n; k++)
                want += aval(gi, k) * bval(k, gj);
            if (fabs(C[(size_t)r * nb + c] - want) > 1e-6 * (fabs(want) + 1)) {
                fprintf(stderr, "srumma: rank %d: C(%ld,%ld) = %g, expected %g\n", rank, gi, gj,
                        C[(size_t)r * nb + c], want);
                knit_abort(ctx, 1, "wrong product");
            }
        }
    knit_op_t max = {.kind = KNIT_OP_MAX};
    double *tm = malloc((size_t)reps * sizeof(double)), *wm = malloc((size_t)reps * sizeof(double));
    OK(knit_allreduce(knit_comm_world(ctx), total, tm, (size_t)reps, KNIT_DOUBLE, &max));
    OK(knit_allreduce(knit_comm_world(ctx), waited, wm, (size_t)reps, KNIT_DOUBLE, &max));
    qsort(tm, (size_t)reps, sizeof(double), ru_cmp_double);
    qsort(wm, (size_t)reps, sizeof(double), ru_cmp_double);
    if (rank == 0)
        printf("srumma n=%d ranks=%d method=%s: %.2f ms a multiplication, %.2f ms of it waiting for gets "
               "(slowest rank), %.2f GFLOP/s\n",
               n, size, mname, tm[reps / 2] * 1e3, wm[reps / 2] * 1e3,
               2.0 * n * (double)n * n / tm[reps / 2] * 1e-9);
    OK(knit_win_free(win));
    free(C);
    free(total);
    free(waited);
    free(tm);
    free(wm);
    for (int b = 0; b < 2; b++)
        for (int m = 0; m < 2; m++)
            free(buf[b][m]);
    OK(knit_finalize(ctx));
    return 0;
}
