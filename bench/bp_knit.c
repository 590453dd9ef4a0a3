/* bp over knit's native point-to-point API. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <knit.h>

#include "bp.h"

#ifndef BP_IMPL_NAME
#define BP_IMPL_NAME "knit"
#endif

/* The benchmarks' traffic uses one context id of its own. */
#define BP_COMM 0x62656e63u /* "benc" */
/* Barrier rounds use tags above every benchmark tag: one tag per round. */
#define BP_TAG_BARRIER (BP_TAG_MAX + 1)

static knit_ctx_t *ctx;

static void check(knit_status_t st, const char *what)
{
    if (st >= 0)
        return;
    char msg[160];
    snprintf(msg, sizeof(msg), "bp(knit): %s failed: %s", what, knit_strerror(st));
    bp_abort(msg);
}

void bp_abort(const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    if (ctx)
        knit_abort(ctx, 1, msg);
    exit(1);
}

void bp_init(int *argc, char ***argv)
{
    check(knit_init(argc, argv, &ctx), "knit_init");
}

void bp_finalize(void)
{
    check(knit_finalize(ctx), "knit_finalize");
    ctx = NULL;
}

int bp_rank(void)
{
    return knit_rank(ctx);
}

int bp_size(void)
{
    return knit_size(ctx);
}

void bp_isend(const void *buf, size_t len, int peer, int tag, bp_req_t *req)
{
    knit_request_t *r;
    check(knit_isend(ctx, buf, len, peer, tag, BP_COMM, &r), "knit_isend");
    *req = r;
}

void bp_irecv(void *buf, size_t len, int peer, int tag, bp_req_t *req)
{
    knit_request_t *r;
    check(knit_irecv(ctx, buf, len, peer, tag, BP_COMM, &r), "knit_irecv");
    *req = r;
}

void bp_waitall(int n, bp_req_t *reqs)
{
    /* bp_req_t and knit_request_t * are different types: convert, in chunks */
    knit_request_t *tmp[128];
    for (int i = 0; i < n; i += 128) {
        int k = n - i < 128 ? n - i : 128;
        for (int j = 0; j < k; j++)
            tmp[j] = reqs[i + j];
        check(knit_waitall((size_t)k, tmp, NULL), "knit_waitall");
        for (int j = 0; j < k; j++)
            reqs[i + j] = NULL;
    }
}

void bp_send(const void *buf, size_t len, int peer, int tag)
{
    check(knit_send(ctx, buf, len, peer, tag, BP_COMM), "knit_send");
}

void bp_recv(void *buf, size_t len, int peer, int tag)
{
    check(knit_recv(ctx, buf, len, peer, tag, BP_COMM, NULL), "knit_recv");
}

size_t bp_recv_len(void *buf, size_t len, int peer, int tag)
{
    knit_msg_status_t st;
    check(knit_recv(ctx, buf, len, peer, tag, BP_COMM, &st), "knit_recv");
    return st.length;
}

/* Dissemination barrier: ceil(log2 size) rounds; in round k each rank
 * signals rank + 2^k and waits for rank - 2^k.  A tag per round keeps
 * rounds of consecutive barriers apart. */
void bp_barrier(void)
{
    int rank = knit_rank(ctx), size = knit_size(ctx);
    char out = 0, in;
    for (int k = 1, round = 0; k < size; k <<= 1, round++) {
        knit_request_t *r;
        check(knit_isend(ctx, &out, 0, (rank + k) % size, BP_TAG_BARRIER + round, BP_COMM, &r),
              "knit_isend (barrier)");
        check(knit_recv(ctx, &in, 0, (rank - k + size) % size, BP_TAG_BARRIER + round, BP_COMM,
                        NULL),
              "knit_recv (barrier)");
        check(knit_wait(&r, NULL), "knit_wait (barrier)");
    }
}

const char *bp_impl_name(void)
{
    return BP_IMPL_NAME;
}

const char *bp_impl_version(void)
{
    return "knit " KNIT_VERSION_STRING " (native API)";
}
