/* The knit_* point-to-point calls: check the context, forward to p2p. */
#include "core/ctx.h"
#include "p2p/p2p.h"

#define CHECK_CTX(ctx)                          \
    do {                                        \
        if (!(ctx) || !(ctx)->p2p)              \
            return KNIT_ERR_INVAL;              \
    } while (0)

knit_status_t knit_isend_flags(knit_ctx_t *ctx, const void *buf, size_t len, int peer, int tag,
                               uint32_t comm_id, unsigned flags, knit_request_t **req)
{
    CHECK_CTX(ctx);
    if (flags & ~(unsigned)KNIT_SEND_SYNC) /* the others are knit's own */
        return KNIT_ERR_INVAL;
    return kn_p2p_isend(ctx->p2p, buf, len, peer, tag, comm_id, flags, req);
}

knit_status_t knit_isend(knit_ctx_t *ctx, const void *buf, size_t len, int peer, int tag, uint32_t comm_id,
                         knit_request_t **req)
{
    return knit_isend_flags(ctx, buf, len, peer, tag, comm_id, 0, req);
}

knit_status_t knit_irecv(knit_ctx_t *ctx, void *buf, size_t len, int peer, int tag, uint32_t comm_id,
                         knit_request_t **req)
{
    CHECK_CTX(ctx);
    return kn_p2p_irecv(ctx->p2p, buf, len, peer, tag, comm_id, req);
}

knit_status_t knit_send(knit_ctx_t *ctx, const void *buf, size_t len, int peer, int tag, uint32_t comm_id)
{
    knit_request_t *req;
    knit_status_t st = knit_isend(ctx, buf, len, peer, tag, comm_id, &req);
    return st == KNIT_OK ? knit_wait(&req, NULL) : st;
}

knit_status_t knit_recv(knit_ctx_t *ctx, void *buf, size_t len, int peer, int tag, uint32_t comm_id,
                        knit_msg_status_t *status)
{
    knit_request_t *req;
    knit_status_t st = knit_irecv(ctx, buf, len, peer, tag, comm_id, &req);
    return st == KNIT_OK ? knit_wait(&req, status) : st;
}

knit_status_t knit_iprobe(knit_ctx_t *ctx, int peer, int tag, uint32_t comm_id, int *flag,
                          knit_msg_status_t *status)
{
    CHECK_CTX(ctx);
    return kn_p2p_iprobe(ctx->p2p, peer, tag, comm_id, 0, flag, NULL, status);
}

knit_status_t knit_probe(knit_ctx_t *ctx, int peer, int tag, uint32_t comm_id, knit_msg_status_t *status)
{
    CHECK_CTX(ctx);
    return kn_p2p_probe(ctx->p2p, peer, tag, comm_id, status);
}

knit_status_t knit_improbe(knit_ctx_t *ctx, int peer, int tag, uint32_t comm_id, int *flag,
                           knit_message_t **msg, knit_msg_status_t *status)
{
    CHECK_CTX(ctx);
    if (!msg)
        return KNIT_ERR_INVAL;
    return kn_p2p_iprobe(ctx->p2p, peer, tag, comm_id, 1, flag, msg, status);
}

knit_status_t knit_imrecv(knit_ctx_t *ctx, void *buf, size_t len, knit_message_t **msg, knit_request_t **req)
{
    CHECK_CTX(ctx);
    return kn_p2p_imrecv(ctx->p2p, buf, len, msg, req);
}

knit_status_t knit_progress(knit_ctx_t *ctx)
{
    CHECK_CTX(ctx);
    kn_p2p_progress(ctx->p2p);
    return KNIT_OK;
}

knit_status_t knit_wait_until(knit_ctx_t *ctx, int (*cond)(void *arg), void *arg)
{
    CHECK_CTX(ctx);
    if (!cond)
        return KNIT_ERR_INVAL;
    kn_p2p_wait(ctx->p2p, cond, arg);
    return KNIT_OK;
}
