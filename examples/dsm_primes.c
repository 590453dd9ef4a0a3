/*
 * The replicated region (docs/dsm.md) in a few lines: every rank counts
 * the primes of its share of [2, N) into a table that lives in the region
 * (one slot per rank, written without locks: different bytes of one page
 * from every node), adds its count to a total under a lock, and after a
 * barrier every rank reads the whole table from its own node's replica.
 *
 *   knitcc -O2 -o dsm_primes examples/dsm_primes.c
 *   knitrun -n 4 --nodes 2 ./dsm_primes [N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "knit.h"
#include "knit/dsm.h"

static int prime(uint64_t n)
{
    if (n < 2)
        return 0;
    for (uint64_t d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    knit_ctx_t *ctx;
    if (knit_init(&argc, &argv, &ctx) != KNIT_OK)
        return 1;
    int rank = knit_rank(ctx), size = knit_size(ctx);
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    if (knit_dsm_init(ctx, 64u << 20) != KNIT_OK) {
        if (rank == 0)
            fprintf(stderr, "dsm_primes: %s\n", knit_dsm_last_error());
        knit_finalize(ctx);
        return 1;
    }
    /* the shared data: rank 0 allocates, everyone finds it at the region's start */
    struct table {
        uint64_t total;
        uint64_t count[];
    } *t = knit_dsm_base();
    if (rank == 0 && knit_dsm_alloc(sizeof(*t) + (size_t)size * sizeof(uint64_t)) != (void *)t)
        fprintf(stderr, "dsm_primes: the first allocation is not at the region's start\n");
    knit_dsm_barrier();
    uint64_t mine = 0;
    for (uint64_t k = 2 + (uint64_t)rank; k < n; k += (uint64_t)size)
        mine += (uint64_t)prime(k);
    t->count[rank] = mine;      /* my slot: no lock needed */
    knit_dsm_lock(1);           /* the total: one writer at a time */
    t->total += mine;
    knit_dsm_unlock(1);
    knit_dsm_barrier();         /* every write is in every replica */
    uint64_t sum = 0;
    for (int r = 0; r < size; r++)
        sum += t->count[r];
    int ok = sum == t->total;
    if (rank == size - 1) {     /* a rank of the last node reads its own replica */
        printf("primes below %llu: %llu (", (unsigned long long)n, (unsigned long long)t->total);
        for (int r = 0; r < size; r++)
            printf("%s%llu", r ? " + " : "", (unsigned long long)t->count[r]);
        printf(" from %d ranks on %d nodes)%s\n", size, knit_nnodes(ctx), ok ? "" : ": WRONG");
    }
    knit_dsm_finalize(ctx); /* (the region is gone after this) */
    knit_finalize(ctx);
    return ok ? 0 : 1;
}
