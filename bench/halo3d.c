/*
 * A NAS BT-like 3-D halo exchange over knit's one-sided layer: every rank
 * owns an n x n x n block of doubles (x fastest) inside a ghost layer of
 * width 1, on a px x py x pz grid of ranks (periodic), and each step puts
 * its six faces into its neighbours' ghost layers, then fences:
 *   z faces  one level:  n rows of n doubles (8n-byte blocks)
 *   y faces  one level:  n rows of n doubles, a plane apart
 *   x faces  two levels: n x n single doubles (8-byte blocks)
 * The x faces are the strided case the methods differ on.  Every step is
 * checked: each ghost cell must hold its neighbour's value.
 *
 *   halo3d [--n 32] [--steps 50] [--method direct|agent|pack|auto]
 *
 * Prints the median time of one exchange (six puts and the fence) per
 * face direction and in all, in microseconds.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knit.h"
#include "knit/rma.h"
#include "rmautil.h"

static knit_ctx_t *ctx;

static void die(const char *what, knit_status_t st)
{
    fprintf(stderr, "halo3d: %s: %s\n", what, knit_strerror(st));
    knit_abort(ctx, 1, what);
}

#define OK(call)                                                                                       \
    do {                                                                                               \
        knit_status_t st_ = (call);                                                                    \
        if (st_ != KNIT_OK)                                                                            \
            die(#call, st_);                                                                           \
    } while (0)

/* the grid: px * py * pz = size, as cubic as it gets */
static void grid(int size, int *p)
{
    p[0] = p[1] = p[2] = 1;
    int left = size;
    for (int f = 2; left > 1;) {
        if (left % f) {
            f++;
            continue;
        }
        int d = p[0] <= p[1] && p[0] <= p[2] ? 0 : p[1] <= p[2] ? 1 : 2;
        p[d] *= f;
        left /= f;
    }
}

static double value(int step, int gx, int gy, int gz)
{
    return step * 1e6 + gz * 1e4 + gy * 1e2 + gx + 0.5;
}

int main(int argc, char **argv)
{
    int n = 32, steps = 50;
    unsigned method = KNIT_RMA_DEFAULT;
    const char *mname = "default";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--method")) {
            mname = argv[i + 1];
            method = ru_method(mname);
        }
    }
    OK(knit_init(&argc, &argv, &ctx));
    int rank = knit_rank(ctx), size = knit_size(ctx), p[3];
    grid(size, p);
    int c[3] = {rank % p[0], rank / p[0] % p[1], rank / (p[0] * p[1])};
    int m = n + 2; /* with the ghosts */
    size_t bytes = (size_t)m * m * m * sizeof(double);
    knit_win_t *win;
    OK(knit_mem_alloc(knit_comm_world(ctx), bytes, &win));
    double *u = knit_win_base(win, rank);
#define AT(a, x, y, z) ((a)[((size_t)(z) * m + (y)) * m + (x)])
    /* neighbours: dir d, side s (0: lower, 1: upper) */
    int nb[3][2];
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 2; s++) {
            int q[3] = {c[0], c[1], c[2]};
            q[d] = (q[d] + (s ? 1 : p[d] - 1)) % p[d];
            nb[d][s] = q[0] + p[0] * (q[1] + p[1] * q[2]);
        }
    const int64_t sx = 8, sy = (int64_t)m * 8, sz = (int64_t)m * m * 8;
    double *t = malloc((size_t)steps * sizeof(double)), *td[3];
    for (int d = 0; d < 3; d++)
        td[d] = malloc((size_t)steps * sizeof(double));
    for (int step = 0; step < steps; step++) {
        for (int z = 1; z <= n; z++)
            for (int y = 1; y <= n; y++)
                for (int x = 1; x <= n; x++)
                    AT(u, x, y, z) = value(step, c[0] * n + x - 1, c[1] * n + y - 1, c[2] * n + z - 1);
        OK(knit_barrier(knit_comm_world(ctx)));
        double t0 = ru_now();
        for (int d = 0; d < 3; d++) {
            double ts = ru_now();
            for (int s = 0; s < 2; s++) {
                /* my face on side s goes into the neighbour's ghost layer on side !s */
                int to = nb[d][s];
                int64_t lo[3] = {1, 1, 1}, ghost[3] = {1, 1, 1};
                lo[d] = s ? n : 1;
                ghost[d] = s ? 0 : n + 1;
                double *src = &AT(u, lo[0], lo[1], lo[2]);
                double *dst = (double *)knit_win_base(win, to) + ((ghost[2] * m + ghost[1]) * m + ghost[0]);
                if (d == 2) { /* z: rows of n doubles, a row apart */
                    int64_t count[2] = {(int64_t)n * 8, n}, st[1] = {sy};
                    OK(knit_put_strided(win, src, st, dst, st, count, 1, to, method, NULL));
                } else if (d == 1) { /* y: rows of n doubles, a plane apart */
                    int64_t count[2] = {(int64_t)n * 8, n}, st[1] = {sz};
                    OK(knit_put_strided(win, src, st, dst, st, count, 1, to, method, NULL));
                } else { /* x: single doubles, a row and a plane apart */
                    int64_t count[3] = {8, n, n}, st[2] = {sy, sz};
                    OK(knit_put_strided(win, src, st, dst, st, count, 2, to, method, NULL));
                }
            }
            td[d][step] = ru_now() - ts;
        }
        OK(knit_rma_barrier(win));
        t[step] = ru_now() - t0;
        (void)sx;
        /* check every ghost cell of the six faces */
        for (int d = 0; d < 3; d++)
            for (int s = 0; s < 2; s++)
                for (int i = 1; i <= n; i++)
                    for (int j = 1; j <= n; j++) {
                        int q[3], g[3];
                        int a = (d + 1) % 3, b = (d + 2) % 3;
                        q[d] = s ? n + 1 : 0;
                        q[a] = i;
                        q[b] = j;
                        for (int k = 0; k < 3; k++)
                            g[k] = c[k] * n + q[k] - 1;
                        g[d] = (g[d] + p[d] * n) % (p[d] * n); /* periodic */
                        double want = value(step, g[0], g[1], g[2]), got = AT(u, q[0], q[1], q[2]);
                        if (got != want) {
                            fprintf(stderr, "halo3d: rank %d step %d: ghost (%d,%d,%d) is %.1f, expected %.1f\n", rank,
                                    step, q[0], q[1], q[2], got, want);
                            knit_abort(ctx, 1, "wrong ghost value");
                        }
                    }
        OK(knit_barrier(knit_comm_world(ctx)));
    }
    /* the slowest rank's time per step, medians over the steps */
    double *all = malloc((size_t)steps * sizeof(double));
    knit_op_t max = {.kind = KNIT_OP_MAX};
    OK(knit_allreduce(knit_comm_world(ctx), t, all, (size_t)steps, KNIT_DOUBLE, &max));
    double med[4];
    qsort(all, (size_t)steps, sizeof(double), ru_cmp_double);
    med[3] = all[steps / 2];
    for (int d = 0; d < 3; d++) {
        OK(knit_allreduce(knit_comm_world(ctx), td[d], all, (size_t)steps, KNIT_DOUBLE, &max));
        qsort(all, (size_t)steps, sizeof(double), ru_cmp_double);
        med[d] = all[steps / 2];
    }
    if (rank == 0)
        printf("halo3d n=%d ranks=%d grid=%dx%dx%d method=%s: exchange %.1f us (x faces %.1f, y %.1f, z %.1f; "
               "puts only, before the fence)\n",
               n, size, p[0], p[1], p[2], mname, med[3] * 1e6, med[0] * 1e6, med[1] * 1e6, med[2] * 1e6);
    OK(knit_win_free(win));
    free(all);
    free(t);
    for (int d = 0; d < 3; d++)
        free(td[d]);
    OK(knit_finalize(ctx));
    return 0;
}
