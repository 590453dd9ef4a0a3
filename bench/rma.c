/*
 * Strided one-sided put and get (issue 24): rank 0 moves nblk blocks of
 * bsize bytes to (from) the last rank's window, blocks 2*bsize apart on
 * both sides, and every rank ends the epoch; the time of one transfer is
 * that of the transfer plus the fence, the method of MPI's one-sided
 * benchmarks (MPI_Put of an MPI_Type_vector under MPI_Win_fence; the
 * same datatype reused, the same buffers every time, caches warm).
 *
 *   rma [--get] [--method direct|agent|pack|auto] [--sizes 8,64,...]
 *       [--counts 1,16,...] [--reps 5] [--time-ms 30]
 *
 * Prints "# rma put|get impl method", then per shape:
 *   bsize nblk median_us min_us MB/s
 * (MB/s of the data moved, 10^6 bytes).  Every shape is checked once
 * before it is timed: the target compares its window with what it must
 * hold (a get: the origin compares its buffer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp.h"
#include "common.h"
#include "rmautil.h"

#define WIN_BYTES (64u << 20)

static unsigned char pat(size_t i, int round)
{
    return (unsigned char)(i * 13 + (size_t)round * 7 + 1);
}

int main(int argc, char **argv)
{
    bp_init(&argc, &argv);
    int get = 0, method = 0, reps = 5;
    double budget_ms = 30;
    const char *mname = "default";
    size_t sizes[16] = {8, 64, 512, 4096, 65536}, counts[16] = {1, 16, 256, 1024, 4096};
    size_t nsizes = 5, ncounts = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--get"))
            get = 1;
        else if (!strcmp(argv[i], "--method") && i + 1 < argc) {
            mname = argv[++i];
            method = (int)ru_method(mname);
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            nsizes = ru_parse_list(argv[++i], sizes, 16);
        else if (!strcmp(argv[i], "--counts") && i + 1 < argc)
            ncounts = ru_parse_list(argv[++i], counts, 16);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--time-ms") && i + 1 < argc)
            budget_ms = atof(argv[++i]);
    }
    int me = bp_rank(), target = bp_size() - 1;
    unsigned char *win = bp_win_alloc(WIN_BYTES);
    unsigned char *local = malloc(WIN_BYTES);
    if (!local)
        bp_abort("rma: out of memory");
    if (me == 0)
        printf("# rma %s impl=%s method=%s ranks=%d\n# bsize nblk median_us min_us MB/s\n", get ? "get" : "put",
               bp_impl_name(), mname, bp_size());
    for (size_t a = 0; a < nsizes; a++) {
        for (size_t b = 0; b < ncounts; b++) {
            size_t bsize = sizes[a], nblk = counts[b], stride = 2 * bsize;
            if (stride * nblk > WIN_BYTES)
                continue;
            /* check once */
            for (size_t i = 0; i < stride * nblk; i++) {
                local[i] = me == 0 ? pat(i, 1) : 0;
                win[i] = me == target ? pat(i, 2) : 0;
            }
            bp_win_fence();
            if (me == 0)
                bp_rma_strided(!get, local, stride, 0, stride, bsize, nblk, target, method);
            bp_win_fence();
            const unsigned char *got = get ? local : win;
            if ((get && me == 0) || (!get && me == target))
                for (size_t k = 0; k < nblk; k++)
                    for (size_t i = k * stride; i < k * stride + bsize; i++)
                        if (got[i] != pat(i, get ? 2 : 1)) {
                            char msg[120];
                            snprintf(msg, sizeof(msg), "rma: %zu x %zu B: byte %zu is wrong", nblk, bsize, i);
                            bp_abort(msg);
                        }
            /* how many transfers fill the time budget */
            double t0 = bp_time();
            for (int w = 0; w < 3; w++) {
                if (me == 0)
                    bp_rma_strided(!get, local, stride, 0, stride, bsize, nblk, target, method);
                bp_win_fence();
            }
            double one = (bp_time() - t0) / 3;
            double agreed = 0;
            bp_allreduce(&one, &agreed, 1);
            int iters = (int)(budget_ms * 1e-3 / (agreed / bp_size()));
            iters = iters < 3 ? 3 : iters > 2000 ? 2000 : iters;
            double t[64];
            int nr = reps > 64 ? 64 : reps;
            for (int r = 0; r < nr; r++) {
                double s = bp_time();
                for (int i = 0; i < iters; i++) {
                    if (me == 0)
                        bp_rma_strided(!get, local, stride, 0, stride, bsize, nblk, target, method);
                    bp_win_fence();
                }
                t[r] = (bp_time() - s) / iters * 1e6;
            }
            if (me == 0) {
                qsort(t, (size_t)nr, sizeof(double), ru_cmp_double);
                double med = t[nr / 2];
                printf("%zu %zu %.2f %.2f %.1f\n", bsize, nblk, med, t[0], (double)(bsize * nblk) / med);
                fflush(stdout);
            }
        }
    }
    bp_win_free();
    free(local);
    bp_finalize();
    return 0;
}
