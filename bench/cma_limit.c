/*
 * The within-node limit of a strided transfer by the kernel: a forked
 * child's memory written with process_vm_writev, both sides' blocks in
 * the call's two iovecs (IOV_MAX blocks a call), nothing else (no fence,
 * no library).  Blocks bsize bytes, 2*bsize apart on both sides, as
 * bench/rma moves them.
 *
 *   cma_limit [--sizes 8,64,...] [--counts 1,16,...] [--reps 5]
 *
 * Prints "bsize nblk median_us min_us MB/s" per shape.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rmautil.h"

#define BYTES (64u << 20)

int main(int argc, char **argv)
{
    size_t sizes[16] = {8, 64, 512, 4096, 65536}, counts[16] = {1, 16, 256, 1024, 4096};
    size_t nsizes = 5, ncounts = 5;
    int reps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sizes"))
            nsizes = ru_parse_list(argv[i + 1], sizes, 16);
        else if (!strcmp(argv[i], "--counts"))
            ncounts = ru_parse_list(argv[i + 1], counts, 16);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
    }
    char *local = malloc(BYTES), *remote = malloc(BYTES);
    if (!local || !remote)
        return 1;
    memset(local, 1, BYTES);
    memset(remote, 2, BYTES); /* the child's copy is at the same address */
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    struct iovec *lv = malloc(IOV_MAX * sizeof(*lv)), *rv = malloc(IOV_MAX * sizeof(*rv));
    printf("# cma_limit: process_vm_writev to a child, both sides' blocks in the iovecs\n"
           "# bsize nblk median_us min_us MB/s\n");
    for (size_t a = 0; a < nsizes; a++)
        for (size_t b = 0; b < ncounts; b++) {
            size_t bs = sizes[a], nb = counts[b];
            if (2 * bs * nb > BYTES)
                continue;
            double t[64];
            int nr = reps > 64 ? 64 : reps;
            /* enough calls for about 20 ms */
            int iters = 1;
            for (int r = -1; r < nr; r++) {
                double s = ru_now();
                for (int it = 0; it < iters; it++)
                    for (size_t done = 0; done < nb;) {
                        size_t k = nb - done < IOV_MAX ? nb - done : IOV_MAX;
                        for (size_t i = 0; i < k; i++) {
                            lv[i] = (struct iovec){local + (done + i) * 2 * bs, bs};
                            rv[i] = (struct iovec){remote + (done + i) * 2 * bs, bs};
                        }
                        if (process_vm_writev(child, lv, k, rv, k, 0) != (ssize_t)(k * bs)) {
                            perror("process_vm_writev");
                            kill(child, SIGKILL);
                            return 1;
                        }
                        done += k;
                    }
                double d = (ru_now() - s) / iters;
                if (r < 0) { /* calibration */
                    iters = (int)(0.02 / (d > 1e-7 ? d : 1e-7));
                    iters = iters < 3 ? 3 : iters > 100000 ? 100000 : iters;
                    continue;
                }
                t[r] = d * 1e6;
            }
            qsort(t, (size_t)nr, sizeof(double), ru_cmp_double);
            printf("%zu %zu %.2f %.2f %.1f\n", bs, nb, t[nr / 2], t[0], (double)(bs * nb) / t[nr / 2]);
            fflush(stdout);
        }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return 0;
}
