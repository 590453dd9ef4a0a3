/*
 * Many ranks on one node (tests/job/test_shm.sh runs 128 on 2 cpus):
 *   shm_scale [ROUNDS]
 * 1. a stream to the next rank (ring), long enough that every rank asks
 *    for a fast box towards it, and gets one (checked);
 * 2. every ordered pair once: a message of a size that depends on the pair
 *    (inline, eager through the send buffers, and rendezvous), checked;
 * 3. ROUNDS (default 3) all-to-alls of 8 B, 1 KiB and 16 KiB blocks, every
 *    block keyed by sender, receiver and round, checked.
 * Prints "ok shm_scale" on rank 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "knit.h"
#include "shm/shm.h"

static int rank;
#include "check.h"

static unsigned char key(int from, int to, size_t i, int round)
{
    return (unsigned char)(from * 7 + to * 13 + (int)i * 3 + round * 29 + 1);
}

static size_t pair_len(int from, int to)
{
    static const size_t sizes[] = {8, 20, 100, 1000, 5000, 16384, 40000};
    return sizes[(size_t)(from + 3 * to) % (sizeof(sizes) / sizeof(sizes[0]))];
}

int main(int argc, char **argv)
{
    knit_ctx_t *ctx;
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    int n = knit_size(ctx);
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    CHECK(knit_nnodes(ctx) == 1 && n >= 2, "one node of 2 ranks or more");

    /* 1. the ring stream: 64 packets each way round, fast boxes after 16 */
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    enum { STREAM = 64 };
    uint64_t out[STREAM], in[STREAM];
    knit_request_t *reqs[2 * STREAM];
    for (int i = 0; i < STREAM; i++) {
        out[i] = (uint64_t)rank << 32 | (uint64_t)i;
        OK(knit_irecv(ctx, &in[i], sizeof(in[i]), prev, 1, 0, &reqs[i]));
    }
    for (int i = 0; i < STREAM; i++)
        OK(knit_isend(ctx, &out[i], sizeof(out[i]), next, 1, 0, &reqs[STREAM + i]));
    OK(knit_waitall(2 * STREAM, reqs, NULL));
    for (int i = 0; i < STREAM; i++)
        CHECK(in[i] == ((uint64_t)prev << 32 | (uint64_t)i), "stream packet %d from %d: %llx", i, prev,
              (unsigned long long)in[i]);
    unsigned obox = 0, ibox = 0;
    if (ctx->shm_tl)
        kn_shm_fbox_count(ctx->shm_tl, &obox, &ibox);
    CHECK(obox >= 1 && ibox >= 1, "a fast box each way on the ring (out %u, in %u)", obox, ibox);

    /* 2. every ordered pair, one message each way */
    size_t most = 40000;
    unsigned char *sbuf = malloc((size_t)n * most), *rbuf = malloc((size_t)n * most);
    knit_request_t **r2 = calloc(2 * (size_t)n, sizeof(*r2));
    CHECK(sbuf && rbuf && r2, "memory");
    memset(rbuf, 0, (size_t)n * most);
    int k = 0;
    for (int p = 0; p < n; p++) {
        if (p == rank)
            continue;
        OK(knit_irecv(ctx, rbuf + (size_t)p * most, most, p, 2, 0, &r2[k++]));
    }
    for (int p = 0; p < n; p++) {
        if (p == rank)
            continue;
        size_t len = pair_len(rank, p);
        for (size_t i = 0; i < len; i++)
            sbuf[(size_t)p * most + i] = key(rank, p, i, 0);
        OK(knit_isend(ctx, sbuf + (size_t)p * most, len, p, 2, 0, &r2[k++]));
    }
    OK(knit_waitall((size_t)k, r2, NULL));
    for (int p = 0; p < n; p++) {
        if (p == rank)
            continue;
        size_t len = pair_len(p, rank);
        for (size_t i = 0; i < len; i++)
            CHECK(rbuf[(size_t)p * most + i] == key(p, rank, i, 0), "pair message from %d, byte %zu", p, i);
    }

    /* 3. all-to-alls */
    knit_comm_t *w = knit_comm_world(ctx);
    static const size_t blocks[] = {8, 1024, 16384};
    for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
        size_t blk = blocks[b];
        unsigned char *s = malloc((size_t)n * blk), *r = malloc((size_t)n * blk);
        CHECK(s && r, "memory");
        for (int round = 1; round <= rounds; round++) {
            for (int p = 0; p < n; p++)
                for (size_t i = 0; i < blk; i++)
                    s[(size_t)p * blk + i] = key(rank, p, i, round);
            memset(r, 0, (size_t)n * blk);
            OK(knit_alltoall(w, s, r, blk, KNIT_BYTE));
            for (int p = 0; p < n; p++)
                for (size_t i = 0; i < blk; i++)
                    CHECK(r[(size_t)p * blk + i] == key(p, rank, i, round),
                          "alltoall of %zu-byte blocks, round %d: block from %d, byte %zu", blk, round, p, i);
        }
        free(s);
        free(r);
    }
    OK(knit_barrier(w));
    free(sbuf);
    free(rbuf);
    free(r2);
    if (rank == 0)
        printf("ok shm_scale\n");
    OK(knit_finalize(ctx));
    return 0;
}
