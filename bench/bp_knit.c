/* bp over knit's native point-to-point API. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <knit.h>
#include <knit/rma.h>

#include "bp.h"

#ifndef BP_IMPL_NAME
#define BP_IMPL_NAME "knit"
#endif

/* The benchmarks' traffic uses one context id of its own. */
#define BP_COMM 0x62656e63u /* "benc" */

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
    /* the results are all out: bench/compare takes a run that then hangs in
     * finalize (seen with MPICH over TCP, oversubscribed) as measured */
    if (bp_rank() == 0) {
        printf("# done\n");
        fflush(stdout);
    }
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

/* The collectives: knit's own, on the job's communicator. */
void bp_barrier(void)
{
    check(knit_barrier(knit_comm_world(ctx)), "knit_barrier");
}

void bp_bcast(void *buf, size_t len, int root)
{
    check(knit_bcast(knit_comm_world(ctx), buf, len, KNIT_BYTE, root), "knit_bcast");
}

static const knit_op_t op_sum = {.kind = KNIT_OP_SUM};

void bp_reduce(const double *in, double *out, size_t count, int root)
{
    check(knit_reduce(knit_comm_world(ctx), in, out, count, KNIT_DOUBLE, &op_sum, root),
          "knit_reduce");
}

void bp_allreduce(const double *in, double *out, size_t count)
{
    check(knit_allreduce(knit_comm_world(ctx), in, out, count, KNIT_DOUBLE, &op_sum),
          "knit_allreduce");
}

void bp_iallreduce(const double *in, double *out, size_t count, bp_req_t *req)
{
    knit_coll_request_t *r;
    check(knit_iallreduce(knit_comm_world(ctx), in, out, count, KNIT_DOUBLE, &op_sum, &r), "knit_iallreduce");
    *req = r;
}

void bp_wait_coll(bp_req_t *req)
{
    knit_coll_request_t *r = *req;
    check(knit_coll_wait(&r), "knit_coll_wait");
    *req = NULL;
}

void bp_allgather(const void *in, void *out, size_t len)
{
    check(knit_allgather(knit_comm_world(ctx), in, out, len, KNIT_BYTE), "knit_allgather");
}

void bp_alltoall(const void *in, void *out, size_t len)
{
    check(knit_alltoall(knit_comm_world(ctx), in, out, len, KNIT_BYTE), "knit_alltoall");
}

const char *bp_impl_name(void)
{
    return BP_IMPL_NAME;
}

const char *bp_impl_version(void)
{
    return "knit " KNIT_VERSION_STRING " (native API)";
}

static knit_win_t *win;

void *bp_win_alloc(size_t len)
{
    check(knit_mem_alloc(knit_comm_world(ctx), len, &win), "knit_mem_alloc");
    return knit_win_base(win, knit_rank(ctx));
}

void bp_rma_strided(int put, void *local, size_t lstride, size_t roff, size_t rstride, size_t bsize, size_t nblk,
                    int rank, int method)
{
    int64_t count[2] = {(int64_t)bsize, (int64_t)nblk}, ls[1] = {(int64_t)lstride}, rs[1] = {(int64_t)rstride};
    char *remote = (char *)knit_win_base(win, rank) + roff;
    if (put) /* complete once the source may be reused, as MPI_Put (the fence waits for the rest) */
        check(knit_put_strided(win, local, ls, remote, rs, count, 1, rank, (unsigned)method | KNIT_RMA_LOCAL, NULL),
              "knit_put_strided");
    else
        check(knit_get_strided(win, local, ls, remote, rs, count, 1, rank, (unsigned)method, NULL),
              "knit_get_strided");
}

void bp_win_fence(void)
{
    check(knit_rma_barrier(win), "knit_rma_barrier");
}

void bp_win_free(void)
{
    check(knit_win_free(win), "knit_win_free");
    win = NULL;
}
