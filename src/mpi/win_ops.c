/*
 * MPI one-sided operations over knit's (win.h): the origin's and the
 * target's layouts become either one strided descriptor per side (both
 * regular with the same shape, or one side contiguous: knit_*_strided,
 * which the agent and direct methods walk without a list) or a list of
 * pieces both sides have whole (knit_*_list).  Which method moves them
 * (direct, agent, pack) is the window's choice (KNIT_RMA_METHOD: auto by
 * the cost model).  Accumulates name the target's basic type; atomics
 * of one integer go to knit_rma_atomic.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/win.h"

/* ---------------------------------------------------------- kept operations */

int kn_mpi_win_keep(kn_mpi_win_t *w, const kn_mpi_rop_t *op, const char *fn)
{
    if (w->nrop == w->crop) {
        size_t cap = w->crop ? 2 * w->crop : 64;
        kn_mpi_rop_t *a = realloc(w->rop, cap * sizeof(*a));
        if (!a) { /* no room to keep it: complete it now */
            kn_mpi_rop_t one = *op;
            knit_status_t st = knit_rma_wait(&one.kr);
            free(one.tmp);
            kn_mpi_type_unref(one.type);
            return st == KNIT_OK ? MPI_SUCCESS
                                 : kn_mpi_win_error(w, fn, kn_mpi_class_of(st), st, "a one-sided operation failed");
        }
        w->rop = a;
        w->crop = cap;
    }
    w->rop[w->nrop++] = *op;
    return MPI_SUCCESS;
}

/* Wait for op and finish it (a result unpacked); its status. */
static knit_status_t rop_finish(kn_mpi_rop_t *op)
{
    knit_status_t st = op->kr ? knit_rma_wait(&op->kr) : op->st;
    if (st == KNIT_OK && op->tmp)
        kn_mpi_unpack(op->type, op->tmp, op->count * op->type->size, op->buf, op->count);
    free(op->tmp);
    op->tmp = NULL;
    kn_mpi_type_unref(op->type);
    op->type = NULL;
    return st;
}

static const char *st_what(knit_status_t st)
{
    switch (st) {
    case KNIT_ERR_FAULT: return "the origin's buffer is not accessible";
    case KNIT_ERR_PEER_FAULT: return "the target's memory is not accessible";
    case KNIT_ERR_NOT_SUPPORTED:
        return "one-sided operations between nodes, and accumulates and atomics on memory outside the shared heap "
               "(MPI_Win_allocate's, MPI_Alloc_mem's), are carried by the node agents, which this job does not have "
               "(knitrun --no-offload?): docs/mpi.md, One-sided";
    default: return knit_strerror(st);
    }
}

static int rma_class(knit_status_t st)
{
    return st == KNIT_ERR_RANGE ? MPI_ERR_RMA_RANGE : st == KNIT_ERR_PEER_FAULT ? MPI_ERR_RMA_RANGE
                                                                              : kn_mpi_class_of(st);
}

int kn_mpi_win_complete_ops(kn_mpi_win_t *w, int rank, int local, const char *fn)
{
    knit_status_t first = KNIT_OK;
    size_t k = 0;
    for (size_t i = 0; i < w->nrop; i++) {
        kn_mpi_rop_t *op = &w->rop[i];
        if (rank >= 0 && op->rank != rank) {
            w->rop[k++] = *op;
            continue;
        }
        knit_status_t st = rop_finish(op);
        if (first == KNIT_OK)
            first = st;
    }
    w->nrop = k;
    if (!local && w->kw) { /* and everything of ours is at the target(s) */
        knit_status_t st = rank >= 0 ? knit_rma_fence(w->kw, rank) : knit_rma_fence_all(w->kw);
        if (first == KNIT_OK)
            first = st;
    }
    if (first != KNIT_OK)
        return kn_mpi_win_error(w, fn, rma_class(first), first, "a one-sided operation failed: %s",
                                st_what(first));
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- arguments */

typedef struct wop {
    kn_mpi_win_t *w;
    int rank;
    const char *fn;
    /* origin side */
    char *obuf;
    kn_mpi_type_t *ot;
    size_t ocount;
    /* target side: the layout's buffer address in the target */
    uint64_t taddr;
    kn_mpi_type_t *tt;
    size_t tcount;
    size_t bytes;
} wop_t;

static kn_mpi_type_t *type_of(kn_mpi_win_t *w, MPI_Datatype h, const char *what, const char *fn, int *err)
{
    kn_mpi_type_t *t = kn_mpi_type(h);
    if (!t || !t->committed)
        *err = kn_mpi_win_error(w, fn, MPI_ERR_TYPE, KNIT_OK, "the %s datatype is %s", what,
                                t ? "not committed" : "not valid");
    return t && t->committed ? t : NULL;
}

/* Check a call's arguments (1: go on; 0: nothing to do, MPI_PROC_NULL;
 * -1: error raised, *err). */
static int args(wop_t *o, kn_mpi_win_t *w, const void *origin, int ocount, MPI_Datatype otype, int rank,
                MPI_Aint tdisp, int tcount, MPI_Datatype ttype, const char *fn, int *err)
{
    memset(o, 0, sizeof(*o));
    o->w = w;
    o->fn = fn;
    o->rank = rank;
    if (rank == MPI_PROC_NULL)
        return 0;
    if (rank < 0 || rank >= w->n) {
        *err = kn_mpi_win_error(w, fn, MPI_ERR_RANK, KNIT_OK, "target rank %d not in [0, %d)", rank, w->n);
        return -1;
    }
    if (ocount < 0 || tcount < 0) {
        *err = kn_mpi_win_error(w, fn, MPI_ERR_COUNT, KNIT_OK, "count %d", ocount < 0 ? ocount : tcount);
        return -1;
    }
    if (!(o->ot = type_of(w, otype, "origin", fn, err)) || !(o->tt = type_of(w, ttype, "target", fn, err)))
        return -1;
    o->ocount = (size_t)ocount;
    o->tcount = (size_t)tcount;
    o->bytes = o->ot->size * o->ocount;
    if (o->bytes != o->tt->size * o->tcount) {
        *err = kn_mpi_win_error(w, fn, MPI_ERR_ARG, KNIT_OK,
                                "the origin has %zu bytes of data, the target %zu: the type signatures differ",
                                o->bytes, o->tt->size * o->tcount);
        return -1;
    }
    if (kn_mpi_bad_buffer(origin, ocount, o->ot)) {
        *err = kn_mpi_win_error(w, fn, MPI_ERR_BUFFER, KNIT_OK, "origin_addr is NULL");
        return -1;
    }
    int e = kn_mpi_win_access(w, rank, fn);
    if (e != MPI_SUCCESS) {
        *err = e;
        return -1;
    }
    o->obuf = (char *)origin;
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        o->taddr = (uint64_t)tdisp; /* an address at the target (MPI_Get_address there) */
        return 1;
    }
    o->taddr = (uint64_t)(uintptr_t)knit_win_base(w->kw, rank) + (uint64_t)tdisp * (uint64_t)w->disp[rank];
    /* the bytes the target layout touches, inside the target's window */
    if (o->bytes) {
        __int128 lo = (__int128)tdisp * w->disp[rank] + o->tt->true_lb;
        __int128 hi = (__int128)tdisp * w->disp[rank] + (__int128)(o->tcount - 1) * o->tt->extent + o->tt->true_ub;
        size_t wsize = knit_win_size(w->kw, rank);
        if (lo < 0 || hi > (__int128)wsize) {
            *err = kn_mpi_win_error(w, fn, MPI_ERR_RMA_RANGE, KNIT_OK,
                                    "bytes [%lld, %lld) of rank %d's window, which has %zu", (long long)lo,
                                    (long long)hi, rank, wsize);
            return -1;
        }
    }
    return 1;
}

/* The element type and op of an accumulate (0: error raised). */
static int acc_of(wop_t *o, MPI_Op op, int fetch, knit_rma_acc_t *acc, int *err)
{
    unsigned u = (unsigned)op;
    unsigned idx = u & 0xffffffu;
    if ((u & 0xff000000u) != (0x40000000u | ((unsigned)KN_K_OP << 24)) || idx > KNIT_OP_NO_OP) {
        *err = kn_mpi_win_error(o->w, o->fn, MPI_ERR_OP, KNIT_OK,
                                "accumulates take a predefined operation (MPI 11.3.4), not a user's");
        return 0;
    }
    if (idx == KNIT_OP_NO_OP && !fetch) {
        *err = kn_mpi_win_error(o->w, o->fn, MPI_ERR_OP, KNIT_OK, "MPI_NO_OP is for the fetching accumulates");
        return 0;
    }
    kn_mpi_type_t *t = o->tt;
    if (!t->prim || t->kdt < 0 || (idx != KNIT_OP_NO_OP && o->ot && o->ot->size && o->ot->prim != t->prim)) {
        *err = kn_mpi_win_error(o->w, o->fn, MPI_ERR_TYPE, KNIT_OK,
                                "an accumulate's origin and target datatypes must be made of one and the same "
                                "predefined type");
        return 0;
    }
    acc->dtype = (knit_dtype_t)t->kdt;
    acc->op = (knit_op_kind_t)idx;
    acc->scale = NULL;
    return 1;
}

/* ---------------------------------------------------------- layouts */

/* One regular layout side: first byte offset, counts, strides. */
typedef struct shape {
    MPI_Aint first;
    int64_t cnt[3], stride[2];
    int levels;
} shape_t;

static int shape_of(const kn_mpi_type_t *t, size_t count, shape_t *s)
{
    memset(s, 0, sizeof(*s));
    if (!kn_mpi_type_strided(t, count, &s->first, s->cnt, s->stride, &s->levels))
        return 0;
    for (int i = 0; i < s->levels; i++)
        if (s->stride[i] < 0)
            return 0;
    return 1;
}

/* Both sides as one strided descriptor of the same counts (1), or not. */
static int same_shape(shape_t *a, shape_t *b)
{
    if (a->levels == 0 && b->levels > 0) { /* a contiguous: give it b's counts */
        a->levels = b->levels;
        memcpy(a->cnt, b->cnt, sizeof(a->cnt));
        a->stride[0] = b->cnt[0];
        a->stride[1] = b->cnt[0] * b->cnt[1];
        return 1;
    }
    if (b->levels == 0 && a->levels > 0)
        return same_shape(b, a);
    if (a->levels != b->levels)
        return 0;
    for (int i = 0; i <= a->levels; i++)
        if (a->cnt[i] != b->cnt[i])
            return 0;
    return 1;
}

/* The list of pieces both sides have whole (origin layout o at obuf,
 * target layout at taddr); NULL with *n 0 for nothing, NULL with *n 1
 * for no memory. */
static knit_rma_seg_t *pieces(const kn_mpi_type_t *ot, const void *obuf, size_t ocount, const kn_mpi_type_t *tt,
                              uint64_t taddr, size_t tcount, size_t *n)
{
    kn_mpi_tcur_t oc, tc;
    kn_mpi_tcur_init(&oc, ot, obuf, ocount);
    kn_mpi_tcur_init(&tc, tt, (const void *)(uintptr_t)taddr, tcount);
    size_t cap = 16, k = 0, on = 0, tn = 0;
    char *oa = NULL, *ta = NULL;
    knit_rma_seg_t *s = malloc(cap * sizeof(*s));
    *n = 1;
    if (!s)
        return NULL;
    for (;;) {
        if (!on)
            on = kn_mpi_tcur_next(&oc, &oa);
        if (!tn)
            tn = kn_mpi_tcur_next(&tc, &ta);
        if (!on || !tn)
            break;
        size_t len = on < tn ? on : tn;
        if (k && s[k - 1].local + s[k - 1].len == (uint64_t)(uintptr_t)oa &&
            s[k - 1].remote + s[k - 1].len == (uint64_t)(uintptr_t)ta) {
            s[k - 1].len += len;
        } else {
            if (k == cap) {
                knit_rma_seg_t *g = realloc(s, 2 * cap * sizeof(*s));
                if (!g) {
                    free(s);
                    return NULL;
                }
                s = g;
                cap *= 2;
            }
            s[k++] = (knit_rma_seg_t){(uint64_t)(uintptr_t)oa, (uint64_t)(uintptr_t)ta, len};
        }
        oa += len;
        ta += len;
        on -= len;
        tn -= len;
    }
    *n = k;
    return s;
}

enum { K_PUT, K_GET, K_ACC };

/* A put or get to another node inside an active-target epoch (fence, or
 * start/complete), in few pieces: the rank's own network endpoint moves
 * it (the direct method, one RDMA per piece), which is faster than the
 * agents' relay but needs the target's progress, which the target's
 * fence or wait gives.  Passive-target epochs keep the agents (no target
 * call needed); many small pieces too (the agents walk them). */
#define DIRECT_PIECES 8
#define DIRECT_PIECE_BYTES ((int64_t)64 << 10)
static unsigned flags_for(const wop_t *o, int kind, int64_t pieces, int64_t piece_bytes)
{
    kn_mpi_win_t *w = o->w;
    if (kind == K_ACC || !w->remote[o->rank] || w->locked[o->rank] || w->lock_all ||
        w->flavor == MPI_WIN_FLAVOR_DYNAMIC || (pieces > DIRECT_PIECES && piece_bytes < DIRECT_PIECE_BYTES))
        return KNIT_RMA_LOCAL;
    return KNIT_RMA_LOCAL | KNIT_RMA_DIRECT;
}

/* A put or get a fence epoch may send as a message to its target
 * (win_msg.c): what the direct method would not take (many small
 * pieces), and small ones, whose message costs less than an RDMA's
 * round trip (8 B put and fence 39-42 us against 55; at 64 KiB
 * contiguous the RDMA moves 2.6-2.9 GB/s against the messages' 1.0-1.2).
 * The window allowed it (msg_ok). */
#define MSG_SMALL 4096
static int as_msg(int msg_ok, unsigned flags, size_t bytes)
{
    return msg_ok && (!(flags & KNIT_RMA_DIRECT) || bytes <= MSG_SMALL);
}

static knit_status_t send_msg(const wop_t *o, int kind, const knit_rma_acc_t *acc)
{
    kn_mpi_wm_op_t m = {.kind = kind == K_PUT ? KN_WM_PUT : kind == K_GET ? KN_WM_GET : KN_WM_ACC,
                        .rank = o->rank, .obuf = o->obuf, .ot = o->ot, .ocount = o->ocount, .taddr = o->taddr,
                        .tt = o->tt, .tcount = o->tcount, .bytes = o->bytes, .acc = acc,
                        /* a get's data: into the origin's layout */
                        .rbuf = o->obuf, .rt = o->ot, .rcount = o->ocount};
    return kn_mpi_win_msg_op(o->w, &m);
}

/* Start a put, get or accumulate described by o; *kr stays NULL where
 * nothing is left to wait for here (memory mapped here, a fence's
 * message: msg_ok allows one). */
static knit_status_t start(const wop_t *o, int kind, const knit_rma_acc_t *acc, int msg_ok, knit_rma_req_t **kr)
{
    kn_mpi_win_t *w = o->w;
    unsigned flags;
    shape_t os, ts;
    if (shape_of(o->ot, o->ocount, &os) && shape_of(o->tt, o->tcount, &ts) && same_shape(&os, &ts)) {
        int64_t pieces = 1;
        for (int i = 1; i <= os.levels; i++)
            pieces *= os.cnt[i];
        flags = flags_for(o, kind, pieces, os.cnt[0]);
        knit_status_t ms;
        if (as_msg(msg_ok, flags, o->bytes) && (ms = send_msg(o, kind, acc)) != KNIT_ERR_AGAIN)
            return ms;
        if (kind == K_ACC && (ms = kn_mpi_win_msg_unhold(w, o->rank)) != KNIT_OK)
            return ms;
        char *l = o->obuf + os.first;
        void *r = (void *)(uintptr_t)(o->taddr + (uint64_t)ts.first);
        if (os.levels == 0) {
            size_t len = (size_t)os.cnt[0];
            switch (kind) {
            case K_PUT: return knit_put(w->kw, l, r, len, o->rank, flags, kr);
            case K_GET: return knit_get(w->kw, l, r, len, o->rank, flags, kr);
            default: return knit_acc(w->kw, acc, l, r, len, o->rank, flags, kr);
            }
        }
        switch (kind) {
        case K_PUT:
            return knit_put_strided(w->kw, l, os.stride, r, ts.stride, os.cnt, os.levels, o->rank, flags, kr);
        case K_GET:
            return knit_get_strided(w->kw, l, os.stride, r, ts.stride, os.cnt, os.levels, o->rank, flags, kr);
        default:
            return knit_acc_strided(w->kw, acc, l, os.stride, r, ts.stride, os.cnt, os.levels, o->rank, flags, kr);
        }
    }
    size_t n;
    knit_rma_seg_t *s = pieces(o->ot, o->obuf, o->ocount, o->tt, o->taddr, o->tcount, &n);
    if (!s && n)
        return KNIT_ERR_NOMEM;
    flags = flags_for(o, kind, (int64_t)n, n ? (int64_t)(o->bytes / n) : 0);
    knit_status_t ms;
    if ((as_msg(msg_ok, flags, o->bytes) && (ms = send_msg(o, kind, acc)) != KNIT_ERR_AGAIN) ||
        (kind == K_ACC && (ms = kn_mpi_win_msg_unhold(w, o->rank)) != KNIT_OK)) {
        free(s);
        return ms;
    }
    knit_status_t st;
    switch (kind) {
    case K_PUT: st = knit_put_list(w->kw, s, n, o->rank, flags, kr); break;
    case K_GET: st = knit_get_list(w->kw, s, n, o->rank, flags, kr); break;
    default: st = knit_acc_list(w->kw, acc, s, n, o->rank, flags, kr); break;
    }
    free(s);
    return st;
}

/* Accumulates larger than what the agents keep in flight for one request
 * may overtake each other's chunks: with accumulate_ordering (the
 * default), one waits for such a predecessor to the same target. */
#define BIG_ACC ((size_t)1 << 20)
static int order_after_big(kn_mpi_win_t *w, int rank, const char *fn)
{
    if (!w->ordered_acc)
        return MPI_SUCCESS;
    for (size_t i = 0; i < w->nrop; i++)
        if (w->rop[i].big && w->rop[i].rank == rank)
            return kn_mpi_win_complete_ops(w, rank, 1, fn);
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- requests */

/* A started operation: kept by the window, or by an MPI request (req). */
static int started(const wop_t *o, knit_status_t st, kn_mpi_rop_t *op, MPI_Request *req)
{
    if (st != KNIT_OK) {
        free(op->tmp);
        kn_mpi_type_unref(op->type);
        return kn_mpi_win_error(o->w, o->fn, rma_class(st), st, "%s to rank %d: %s", o->fn, o->rank, st_what(st));
    }
    op->rank = o->rank;
    if (!req && !op->kr) { /* complete already (memory mapped here): nothing to keep */
        rop_finish(op);
        return MPI_SUCCESS;
    }
    if (!req)
        return kn_mpi_win_keep(o->w, op, o->fn);
    kn_mpi_req_t *r = kn_mpi_req_new(o->w->comm, NULL, KN_RQ_RMA);
    kn_mpi_rop_t *keep = r ? malloc(sizeof(*keep)) : NULL;
    if (!keep) { /* complete it here; the request is a done one */
        if (r)
            kn_mpi_req_release(r);
        knit_status_t fs = rop_finish(op);
        if (fs != KNIT_OK)
            return kn_mpi_win_error(o->w, o->fn, rma_class(fs), fs, "%s", st_what(fs));
        return kn_mpi_win_error(o->w, o->fn, MPI_ERR_NO_MEM, KNIT_OK, "no memory for a request");
    }
    *keep = *op;
    r->rma = keep;
    r->active = 1;
    *req = r->handle;
    return MPI_SUCCESS;
}

int kn_mpi_rma_test(kn_mpi_req_t *r)
{
    int done = 0;
    kn_mpi_rop_t *op = r->rma;
    if (!op->kr)
        return 1;
    /* knit_rma_test frees a done request: look without ending it */
    knit_rma_req_t *kr = op->kr;
    knit_status_t st = knit_rma_test(&kr, &done);
    if (done) {
        op->kr = NULL;
        op->st = st; /* for finish */
    }
    return done;
}

int kn_mpi_rma_finish(kn_mpi_req_t *r)
{
    kn_mpi_rop_t *op = r->rma;
    knit_status_t st = rop_finish(op);
    free(op);
    r->rma = NULL;
    MPI_Status *s = &r->done_st;
    s->MPI_SOURCE = MPI_ANY_SOURCE;
    s->MPI_TAG = MPI_ANY_TAG;
    s->kn_cancelled = 0;
    s->kn_bytes = 0;
    s->MPI_ERROR = st == KNIT_OK ? MPI_SUCCESS : rma_class(st);
    if (st != KNIT_OK)
        return kn_mpi_error_cause(r->comm, "MPI_Wait", s->MPI_ERROR, st, "a one-sided request failed: %s",
                                  st_what(st));
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- put, get, accumulate */

static int put_get(int kind, const void *origin, int ocount, MPI_Datatype otype, int rank, MPI_Aint tdisp, int tcount,
                   MPI_Datatype ttype, MPI_Op op, MPI_Win win, MPI_Request *req, const char *fn)
{
    KN_MPI_WIN_ARG(w, win);
    int err;
    wop_t o;
    int a = args(&o, w, origin, ocount, otype, rank, tdisp, tcount, ttype, fn, &err);
    if (a < 0)
        return err;
    if (req && a == 0) { /* MPI_PROC_NULL: a request that is complete */
        kn_mpi_req_t *r = kn_mpi_req_new(w->comm, NULL, KN_RQ_DONE);
        if (!r)
            return kn_mpi_win_error(w, fn, MPI_ERR_NO_MEM, KNIT_OK, "no memory for a request");
        memset(&r->done_st, 0, sizeof(r->done_st));
        r->done_st.MPI_SOURCE = MPI_PROC_NULL;
        r->done_st.MPI_TAG = MPI_ANY_TAG;
        r->active = 1;
        *req = r->handle;
        return MPI_SUCCESS;
    }
    if (a == 0)
        return MPI_SUCCESS;
    knit_rma_acc_t acc;
    if (kind == K_ACC) {
        if (!acc_of(&o, op, 0, &acc, &err))
            return err;
        if ((err = order_after_big(w, rank, fn)) != MPI_SUCCESS)
            return err;
    }
    kn_mpi_rop_t rop = {.big = kind == K_ACC && o.bytes > BIG_ACC};
    /* (the request forms are for passive target: never a fence's message;
     * an accumulate goes as one whatever its size, its order with the
     * others kept) */
    int msg = !req && kn_mpi_win_msg_wanted(w, rank, kind == K_ACC ? 0 : o.bytes);
    knit_status_t st = o.bytes ? start(&o, kind, kind == K_ACC ? &acc : NULL, msg, &rop.kr) : KNIT_OK;
    return started(&o, st, &rop, req);
}

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    KN_MPI_READY();
    return put_get(K_PUT, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype, MPI_OP_NULL, win, NULL, __func__);
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    KN_MPI_READY();
    return put_get(K_GET, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype, MPI_OP_NULL, win, NULL, __func__);
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    KN_MPI_READY();
    return put_get(K_ACC, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype, op, win, NULL, __func__);
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request)
{
    KN_MPI_READY();
    if (!request)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "request is NULL");
    return put_get(K_PUT, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype, MPI_OP_NULL, win, request, __func__);
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request)
{
    KN_MPI_READY();
    if (!request)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "request is NULL");
    return put_get(K_GET, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype, MPI_OP_NULL, win, request, __func__);
}

int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                    MPI_Request *request)
{
    KN_MPI_READY();
    if (!request)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "request is NULL");
    return put_get(K_ACC, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype, op, win, request, __func__);
}

/* ---------------------------------------------------------- fetching accumulates */

static int get_acc(const void *origin, int ocount, MPI_Datatype otype, void *result, int rcount, MPI_Datatype rtype,
                   int rank, MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win,
                   MPI_Request *req, const char *fn)
{
    KN_MPI_WIN_ARG(w, win);
    int err;
    wop_t o;
    int noop = op == MPI_NO_OP;
    kn_mpi_type_t *rt = type_of(w, rtype, "result", fn, &err);
    if (!rt)
        return err;
    /* MPI_NO_OP ignores the origin: its arguments may be anything */
    int a = args(&o, w, noop ? NULL : origin, noop ? rcount : ocount, noop ? rtype : otype, rank, tdisp, tcount,
                 ttype, fn, &err);
    if (a < 0)
        return err;
    if (a == 0)
        return put_get(K_PUT, NULL, 0, rtype, MPI_PROC_NULL, 0, 0, rtype, MPI_OP_NULL, win, req, fn);
    if (rcount < 0 || rt->size * (size_t)rcount != o.bytes)
        return kn_mpi_win_error(w, fn, MPI_ERR_ARG, KNIT_OK,
                                "the result has %zu bytes of data, the target %zu: the type signatures differ",
                                rcount < 0 ? 0 : rt->size * (size_t)rcount, o.bytes);
    if (kn_mpi_bad_buffer(result, rcount, rt))
        return kn_mpi_win_error(w, fn, MPI_ERR_BUFFER, KNIT_OK, "result_addr is NULL");
    knit_rma_acc_t acc;
    if (!acc_of(&o, op, 1, &acc, &err))
        return err;
    if ((err = order_after_big(w, rank, fn)) != MPI_SUCCESS)
        return err;
    kn_mpi_rop_t rop = {.big = o.bytes > BIG_ACC};
    /* the result arrives contiguous: in place, or unpacked once here */
    char *res;
    if (kn_mpi_type_dense(rt, (size_t)rcount)) {
        res = (char *)result + rt->true_lb;
    } else {
        res = rop.tmp = malloc(o.bytes ? o.bytes : 1);
        if (!res)
            return kn_mpi_win_error(w, fn, MPI_ERR_NO_MEM, KNIT_OK, "no memory for the result");
        rop.buf = result;
        rop.count = (size_t)rcount;
        rop.type = rt;
        kn_mpi_type_ref(rt);
    }
    knit_status_t st = KNIT_OK;
    int sent = 0;
    if (o.bytes && !req && kn_mpi_win_msg_behind_acc(w, rank)) {
        /* behind accumulates sent as messages: the same way, in order */
        kn_mpi_wm_op_t m = {.kind = KN_WM_GACC, .rank = rank, .obuf = noop ? NULL : o.obuf, .ot = o.ot,
                            .ocount = o.ocount, .taddr = o.taddr, .tt = o.tt, .tcount = o.tcount, .bytes = o.bytes,
                            .acc = &acc, .rbuf = rop.tmp ? (char *)result : res, .rt = rop.tmp ? rt : NULL,
                            .rcount = (size_t)rcount};
        st = kn_mpi_win_msg_op(w, &m);
        if ((sent = st != KNIT_ERR_AGAIN)) {
            free(rop.tmp); /* (the reply is unpacked into result at the fence) */
            kn_mpi_type_unref(rop.type);
            rop.tmp = NULL;
            rop.type = NULL;
        } else {
            st = KNIT_OK;
        }
    }
    if (o.bytes && !sent && (st = kn_mpi_win_msg_unhold(w, rank)) == KNIT_OK) {
        size_t n;
        knit_rma_seg_t *s;
        if (noop) { /* the origin side is never read: pair the result buffer with the target */
            kn_mpi_type_t *bt = kn_mpi_type(MPI_BYTE);
            s = pieces(bt, res, o.bytes, o.tt, o.taddr, o.tcount, &n);
        } else {
            s = pieces(o.ot, o.obuf, o.ocount, o.tt, o.taddr, o.tcount, &n);
        }
        st = !s && n ? KNIT_ERR_NOMEM : knit_gacc_list(w->kw, &acc, s, n, res, rank, 0, &rop.kr);
        free(s);
    }
    return started(&o, st, &rop, req);
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr,
                       int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                       int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    KN_MPI_READY();
    return get_acc(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype,
                   target_rank, target_disp, target_count, target_datatype, op, win, NULL, __func__);
}

int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr,
                        int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                        int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                        MPI_Request *request)
{
    KN_MPI_READY();
    if (!request)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "request is NULL");
    return get_acc(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype,
                   target_rank, target_disp, target_count, target_datatype, op, win, request, __func__);
}

/* One integer of 1, 2, 4 or 8 bytes: knit's atomics (1 agent message). */
static int atomic_type(const kn_mpi_type_t *t)
{
    if (!t->predefined || t->kdt < 0)
        return 0;
    switch (t->kdt) {
    case KNIT_INT32: case KNIT_UINT32: case KNIT_INT: case KNIT_UINT: case KNIT_INT64: case KNIT_UINT64:
    case KNIT_LONG: case KNIT_ULONG: case KNIT_LONG_LONG: case KNIT_ULONG_LONG:
    case KNIT_BYTE: case KNIT_CHAR: case KNIT_SCHAR: case KNIT_UCHAR: case KNIT_INT8: case KNIT_UINT8:
    case KNIT_INT16: case KNIT_UINT16: case KNIT_SHORT: case KNIT_USHORT: case KNIT_C_BOOL:
        return 1;
    default:
        return 0;
    }
}

static int atomic(kn_mpi_win_t *w, knit_rma_atomic_op_t aop, const kn_mpi_type_t *t, const void *operand,
                  const void *compare, void *result, int rank, MPI_Aint disp, const char *fn)
{
    uint64_t addr = w->flavor == MPI_WIN_FLAVOR_DYNAMIC
                        ? (uint64_t)disp
                        : (uint64_t)(uintptr_t)knit_win_base(w->kw, rank) + (uint64_t)disp * (uint64_t)w->disp[rank];
    int err = order_after_big(w, rank, fn);
    if (err != MPI_SUCCESS)
        return err;
    knit_status_t st = KNIT_ERR_AGAIN;
    if (kn_mpi_win_msg_behind_acc(w, rank)) {
        /* behind accumulates sent as messages: the same way, in order */
        knit_rma_acc_t acc = {.dtype = (knit_dtype_t)t->kdt};
        kn_mpi_wm_op_t m = {.kind = KN_WM_RMW, .rank = rank, .taddr = addr, .bytes = t->size, .acc = &acc,
                            .rbuf = result, .aop = aop};
        memcpy(&m.operand, operand, t->size);
        if (compare)
            memcpy(&m.compare, compare, t->size);
        st = kn_mpi_win_msg_op(w, &m);
    }
    if (st == KNIT_ERR_AGAIN && (st = kn_mpi_win_msg_unhold(w, rank)) == KNIT_OK)
        st = knit_rma_atomic(w->kw, aop, (knit_dtype_t)t->kdt, (void *)(uintptr_t)addr, operand, compare, result,
                             rank);
    if (st != KNIT_OK)
        return kn_mpi_win_error(w, fn, rma_class(st), st, "to rank %d: %s", rank, st_what(st));
    return MPI_SUCCESS;
}

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                     MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    kn_mpi_type_t *t = kn_mpi_type(datatype);
    if (t && t->predefined && atomic_type(t) && (op == MPI_SUM || op == MPI_REPLACE || op == MPI_NO_OP) &&
        target_rank != MPI_PROC_NULL) {
        int err;
        wop_t o;
        if (args(&o, w, op == MPI_NO_OP ? result_addr : origin_addr, 1, datatype, target_rank, target_disp, 1,
                 datatype, __func__, &err) < 0)
            return err;
        if (!result_addr)
            return kn_mpi_win_error(w, __func__, MPI_ERR_BUFFER, KNIT_OK, "result_addr is NULL");
        uint64_t zero = 0;
        return atomic(w, op == MPI_REPLACE ? KNIT_RMA_SWAP : KNIT_RMA_FETCH_ADD, t,
                      op == MPI_NO_OP ? &zero : origin_addr, NULL, result_addr, target_rank, target_disp, __func__);
    }
    return get_acc(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1, datatype, op,
                   win, NULL, __func__);
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    int err;
    wop_t o;
    int a = args(&o, w, origin_addr, 1, datatype, target_rank, target_disp, 1, datatype, __func__, &err);
    if (a <= 0)
        return a < 0 ? err : MPI_SUCCESS;
    if (!atomic_type(o.tt))
        return kn_mpi_win_error(w, __func__, MPI_ERR_TYPE, KNIT_OK,
                                "MPI_Compare_and_swap takes a predefined integer, logical or byte type");
    if (!compare_addr || !result_addr)
        return kn_mpi_win_error(w, __func__, MPI_ERR_BUFFER, KNIT_OK, "%s is NULL",
                                compare_addr ? "result_addr" : "compare_addr");
    return atomic(w, KNIT_RMA_CAS, o.tt, origin_addr, compare_addr, result_addr, target_rank, target_disp, __func__);
}
