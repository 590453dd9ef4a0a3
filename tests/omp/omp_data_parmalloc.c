/* data: memory malloc'd inside a region: the last thread allocates and
 * fills a block, a barrier, every thread reads it; every thread allocates
 * its own block and publishes the pointer, a barrier, each reads its
 * neighbour's, a barrier, each frees its neighbour's; a block allocated in
 * a region and freed by the master after it; calloc and realloc in a
 * region. */
#include "omp_test.h"

#define MAXT 4096
#define M 5000

int main(void)
{
    static long *mine[MAXT];
    long *shared_blk = NULL, *kept = NULL;
    int n = 0;
#pragma omp parallel
    {
        int id = omp_get_thread_num(), nt = omp_get_num_threads();
        FLAG(nt <= MAXT);
        if (id == nt - 1) {
            shared_blk = malloc(M * sizeof(long));
            FLAG(shared_blk != NULL);
            if (shared_blk)
                for (int i = 0; i < M; i++)
                    shared_blk[i] = i * 3;
        }
#pragma omp barrier
        if (shared_blk) {
            long s = 0;
            for (int i = 0; i < M; i++)
                s += shared_blk[i];
            FLAG(s == 3L * M * (M - 1) / 2);
        }
        if (nt <= MAXT) {
            long *p = malloc((1000 + id) * sizeof *p);
            FLAG(p != NULL);
            if (p)
                for (int i = 0; i < 1000 + id; i++)
                    p[i] = id * 100000L + i;
            mine[id] = p;
        }
#pragma omp barrier
        if (nt <= MAXT) {
            int nb = (id + 1) % nt;
            long *q = mine[nb];
            FLAG(q != NULL);
            if (q)
                for (int i = 0; i < 1000 + nb; i += 7)
                    FLAG(q[i] == nb * 100000L + i);
        }
#pragma omp barrier
        if (nt <= MAXT)
            free(mine[(id + 1) % nt]);
#pragma omp single
        {
            kept = calloc(M, sizeof *kept);
            FLAG(kept != NULL);
            if (kept) {
                kept[M - 1] = 5;
                long *k2 = realloc(kept, 2 * M * sizeof *k2);
                FLAG(k2 != NULL);
                if (k2) {
                    kept = k2;
                    for (int i = M; i < 2 * M; i++)
                        kept[i] = 1;
                }
            }
            n = nt;
        }
    }
    REPORT("malloc in a region");
    CHECK(n >= 1 && kept != NULL && shared_blk != NULL, "team %d", n);
    long ks = 0;
    for (int i = 0; i < 2 * M; i++)
        ks += kept[i];
    CHECK(ks == M + 5, "calloc+realloc in a region: sum %ld", ks);
    long ss = 0;
    for (int i = 0; i < M; i++)
        ss += shared_blk[i];
    free(kept);
    free(shared_blk);
    printf("a block malloc'd by the last thread, read by all after a barrier: sum %ld\n", ss);
    printf("a block per thread, read and freed by its neighbour: yes\n");
    printf("calloc'd and realloc'd in a single, read and freed by the master: sum %ld\n", ks);
    return OK();
}
