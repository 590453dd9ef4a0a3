/*
 * ARMCI's message helpers (armci_msg.h) over knit's point-to-point and
 * collectives.  They need knit started, not ARMCI_Init: every call takes
 * the process's context as it finds it.  Point-to-point messages use a
 * context id of their own (KN_ARMCI_CTX_MSG), so they never match the
 * program's MPI messages; the collectives run on the world communicator
 * (SCOPE_NODE and SCOPE_MASTERS on communicators made at first use).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "armci/armci_impl.h"

static knit_ctx_t *ctx_of(const char *fn)
{
    knit_ctx_t *ctx = knit_ctx_current();
    if (!ctx)
        kn_armci_die(fn, "knit is not started (call MPI_Init or ARMCI_Init first)");
    return ctx;
}

static void check(const char *fn, knit_status_t st, const char *what)
{
    if (st < 0)
        kn_armci_die(fn, "%s: %s", what, knit_strerror(st));
}

int armci_msg_me(void)
{
    return knit_rank(ctx_of(__func__));
}

int armci_msg_nproc(void)
{
    return knit_size(ctx_of(__func__));
}

void armci_msg_abort(int code)
{
    ARMCI_Error("armci_msg_abort", code);
}

double armci_timer(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------ point to point */

static void check_p2p(const char *fn, knit_ctx_t *ctx, int tag, const void *buf, int len, int peer)
{
    if (tag < 0 || len < 0 || (len > 0 && !buf))
        kn_armci_die(fn, "bad arguments (tag %d, buffer %p, length %d)", tag, buf, len);
    if (peer != KNIT_ANY_SOURCE && (peer < 0 || peer >= knit_size(ctx)))
        kn_armci_die(fn, "process %d out of range [0, %d)", peer, knit_size(ctx));
}

void armci_msg_snd(int tag, void *buffer, int len, int to)
{
    knit_ctx_t *ctx = ctx_of(__func__);
    check_p2p(__func__, ctx, tag, buffer, len, to);
    check(__func__, knit_send(ctx, buffer, (size_t)len, to, tag, KN_ARMCI_CTX_MSG), "send");
}

static int rcv(const char *fn, int tag, void *buffer, int buflen, int *msglen, int from)
{
    knit_ctx_t *ctx = ctx_of(fn);
    check_p2p(fn, ctx, tag, buffer, buflen, from);
    knit_msg_status_t ms;
    knit_status_t st = knit_recv(ctx, buffer, (size_t)buflen, from, tag, KN_ARMCI_CTX_MSG, &ms);
    if (st == KNIT_ERR_TRUNCATE || (st >= 0 && ms.error == KNIT_ERR_TRUNCATE))
        kn_armci_die(fn, "a message of %zu bytes from process %d does not fit the buffer of %d", ms.msg_length,
                     ms.source, buflen);
    check(fn, st, "receive");
    if (msglen)
        *msglen = (int)ms.length;
    return ms.source;
}

void armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from)
{
    rcv(__func__, tag, buffer, buflen, msglen, from);
}

int armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen)
{
    return rcv(__func__, tag, buffer, buflen, msglen, KNIT_ANY_SOURCE);
}

/* --------------------------------------------------------- collectives */

static struct {
    knit_ctx_t *ctx;             /* the context they belong to */
    knit_comm_t *node, *masters; /* masters: NULL where not a master */
    int made;
} scopes;

void kn_armci_msg_fini(void)
{
    if (scopes.made && scopes.ctx == knit_ctx_current()) {
        if (scopes.node)
            knit_comm_destroy(scopes.node);
        if (scopes.masters)
            knit_comm_destroy(scopes.masters);
    }
    memset(&scopes, 0, sizeof(scopes));
}

/* The communicator of scope, NULL when the caller is not in it. */
static knit_comm_t *scope_comm(const char *fn, int scope)
{
    knit_ctx_t *ctx = ctx_of(fn);
    if (scope == SCOPE_ALL)
        return knit_comm_world(ctx);
    if (scope != SCOPE_NODE && scope != SCOPE_MASTERS)
        kn_armci_die(fn, "unknown scope %d", scope);
    if (!scopes.made || scopes.ctx != ctx) {
        /* knit_comm_create is local: each member makes the same one */
        memset(&scopes, 0, sizeof(scopes));
        int size = knit_size(ctx), nn = knit_nnodes(ctx), me = knit_rank(ctx);
        int *ranks = malloc((size_t)(size > nn ? size : nn) * sizeof(int));
        if (!ranks)
            kn_armci_die(fn, "out of memory");
        int n = 0;
        for (int r = 0; r < knit_local_size(ctx); r++)
            ranks[n++] = knit_first_local(ctx) + r;
        check(fn, knit_comm_create(ctx, ranks, n, KN_ARMCI_CTX_NODE, &scopes.node), "node communicator");
        n = 0;
        int master = 0;
        for (int r = 0, last = -1; r < size; r++) {
            int nd = knit_node_of(ctx, r);
            if (nd != last) { /* placement is block-wise */
                master |= r == me;
                ranks[n++] = r;
                last = nd;
            }
        }
        if (master)
            check(fn, knit_comm_create(ctx, ranks, n, KN_ARMCI_CTX_MASTERS, &scopes.masters),
                  "masters communicator");
        free(ranks);
        scopes.ctx = ctx;
        scopes.made = 1;
    }
    return scope == SCOPE_NODE ? scopes.node : scopes.masters;
}

void armci_msg_barrier(void)
{
    check(__func__, knit_barrier(scope_comm(__func__, SCOPE_ALL)), "barrier");
}

static void bcast(const char *fn, int scope, void *buffer, int len, int root)
{
    knit_comm_t *c = scope_comm(fn, scope);
    if (!c)
        return;
    if (len < 0 || (len > 0 && !buffer) || root < 0 || root >= knit_comm_size(c))
        kn_armci_die(fn, "bad arguments (buffer %p, length %d, root %d of %d)", buffer, len, root,
                     knit_comm_size(c));
    check(fn, knit_bcast(c, buffer, (size_t)len, KNIT_BYTE, root), "broadcast");
}

void armci_msg_bcast(void *buffer, int len, int root)
{
    bcast(__func__, SCOPE_ALL, buffer, len, root);
}

void armci_msg_brdcst(void *buffer, int len, int root)
{
    bcast(__func__, SCOPE_ALL, buffer, len, root);
}

void armci_msg_bcast_scope(int scope, void *buffer, int len, int root)
{
    bcast(__func__, scope, buffer, len, root);
}

static knit_dtype_t dtype_of(const char *fn, int type)
{
    switch (type) {
    case ARMCI_INT: return KNIT_INT;
    case ARMCI_LONG: return KNIT_LONG;
    case ARMCI_LONG_LONG: return KNIT_LONG_LONG;
    case ARMCI_FLOAT: return KNIT_FLOAT;
    case ARMCI_DOUBLE: return KNIT_DOUBLE;
    }
    kn_armci_die(fn, "unknown type %d", type);
}

/* |x| in place; the most negative integer stays as it is (it has no
 * positive counterpart) */
static void abs_in_place(void *x, int n, knit_dtype_t t)
{
    for (int i = 0; i < n; i++) {
        switch (t) {
        case KNIT_INT: { int *v = x; if (v[i] < 0 && v[i] > -__INT_MAX__ - 1) v[i] = -v[i]; break; }
        case KNIT_LONG: { long *v = x; if (v[i] < 0 && v[i] > -__LONG_MAX__ - 1) v[i] = -v[i]; break; }
        case KNIT_LONG_LONG: {
            long long *v = x;
            if (v[i] < 0 && v[i] > -__LONG_LONG_MAX__ - 1)
                v[i] = -v[i];
            break;
        }
        case KNIT_FLOAT: { float *v = x; if (v[i] < 0) v[i] = -v[i]; break; }
        default: { double *v = x; if (v[i] < 0) v[i] = -v[i]; break; }
        }
    }
}

/* op string -> knit op; absolute values taken in x for absmax / absmin */
static knit_op_t op_of(const char *fn, const char *op, void *x, int n, knit_dtype_t t)
{
    knit_op_t o = {.kind = KNIT_OP_SUM};
    int integer = t != KNIT_FLOAT && t != KNIT_DOUBLE;
    if (!op)
        kn_armci_die(fn, "NULL op");
    if (!strcmp(op, "+"))
        o.kind = KNIT_OP_SUM;
    else if (!strcmp(op, "*"))
        o.kind = KNIT_OP_PROD;
    else if (!strcmp(op, "max"))
        o.kind = KNIT_OP_MAX;
    else if (!strcmp(op, "min"))
        o.kind = KNIT_OP_MIN;
    else if (!strcmp(op, "absmax") || !strcmp(op, "absmin")) {
        o.kind = strcmp(op, "absmax") ? KNIT_OP_MIN : KNIT_OP_MAX;
        abs_in_place(x, n, t);
    } else if (!strcmp(op, "or") && integer)
        o.kind = KNIT_OP_BOR;
    else
        kn_armci_die(fn, "op \"%s\" not supported (+, *, max, min, absmax, absmin%s)", op,
                     integer ? ", or" : "");
    return o;
}

static void gop(const char *fn, int scope, void *x, int n, char *op, int type, int to_root)
{
    knit_comm_t *c = scope_comm(fn, scope);
    knit_dtype_t t = dtype_of(fn, type);
    if (n < 0 || (n > 0 && !x))
        kn_armci_die(fn, "bad arguments (x %p, n %d)", x, n);
    if (!c)
        return;
    knit_op_t o = op_of(fn, op, x, n, t);
    if (!to_root) {
        check(fn, knit_allreduce(c, KNIT_IN_PLACE, x, (size_t)n, t, &o), "allreduce");
        return;
    }
    if (knit_comm_rank(c) == 0) {
        check(fn, knit_reduce(c, KNIT_IN_PLACE, x, (size_t)n, t, &o, 0), "reduce");
        return;
    }
    void *scratch = malloc(n ? (size_t)n * knit_dtype_size(t) : 1);
    if (!scratch)
        kn_armci_die(fn, "out of memory");
    knit_status_t st = knit_reduce(c, x, scratch, (size_t)n, t, &o, 0);
    free(scratch);
    check(fn, st, "reduce");
}

void armci_msg_gop_scope(int scope, void *x, int n, char *op, int type)
{
    gop(__func__, scope, x, n, op, type, 0);
}

void armci_msg_igop(int *x, int n, char *op)
{
    gop(__func__, SCOPE_ALL, x, n, op, ARMCI_INT, 0);
}

void armci_msg_lgop(long *x, int n, char *op)
{
    gop(__func__, SCOPE_ALL, x, n, op, ARMCI_LONG, 0);
}

void armci_msg_llgop(long long *x, int n, char *op)
{
    gop(__func__, SCOPE_ALL, x, n, op, ARMCI_LONG_LONG, 0);
}

void armci_msg_fgop(float *x, int n, char *op)
{
    gop(__func__, SCOPE_ALL, x, n, op, ARMCI_FLOAT, 0);
}

void armci_msg_dgop(double *x, int n, char *op)
{
    gop(__func__, SCOPE_ALL, x, n, op, ARMCI_DOUBLE, 0);
}

void armci_msg_reduce(void *x, int n, char *op, int type)
{
    gop(__func__, SCOPE_ALL, x, n, op, type, 1);
}

void armci_msg_reduce_scope(int scope, void *x, int n, char *op, int type)
{
    gop(__func__, scope, x, n, op, type, 1);
}

void armci_exchange_address(void *ptr_ar[], int n)
{
    knit_comm_t *c = scope_comm(__func__, SCOPE_ALL);
    if (!ptr_ar || n != knit_comm_size(c))
        kn_armci_die(__func__, "bad arguments (ptr_ar %p, n %d for %d processes)", (void *)ptr_ar, n,
                     knit_comm_size(c));
    check(__func__, knit_allgather(c, KNIT_IN_PLACE, ptr_ar, sizeof(void *), KNIT_BYTE), "allgather");
}
