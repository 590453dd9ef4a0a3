/*
 * One-sided operations to another node inside a fence epoch, carried as
 * messages to the target rank (win.h; docs/mpi.md, One-sided).
 *
 * A fence is collective: every member calls it, so the target itself can
 * apply what the epoch sent it, as Open MPI's osc pt2pt does, instead of
 * the agents relaying it (rank -> agent -> agent -> rank: four hops, each
 * a wake-up) or one RDMA per piece.  The origin packs a put's or an
 * accumulate's data behind a header describing the target's layout (one
 * strided form, or a list of pieces) and sends it on the window's
 * communicator; a get sends the header alone and posts the receive of the
 * reply (a fetching accumulate and an atomic, both).  At the fence every
 * member adds up how many messages each member was sent (an allreduce, or
 * a reduce-scatter for many members: a barrier too, as the fence's was),
 * receives as many, applies them to its own window through knit (whose
 * window check turns away what lies outside, and whose accumulates are
 * atomic with everyone else's) and answers those that ask; then waits for
 * its own sends and replies.
 *
 * Tags alternate between two values from one fence to the next: a member
 * that left fence e early may already send epoch e+1's messages to a
 * member still receiving epoch e's, and must not be taken for one of
 * them.  It cannot be two epochs ahead: fence e+1's sum needs everyone.
 *
 * Start/complete epochs send puts the same way, when the message leaves
 * eagerly (a complete must not wait for its target), and accumulates,
 * held until complete (below): complete tells each target how many it
 * sent, and the target's wait or test receives that many from it and
 * applies them.  Gets, fetching accumulates and atomics there keep the
 * other methods: a reply would wait for the target's wait.
 */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/win.h"
#include "rma/rma.h"
#include "util/log.h"
#include "util/config.h"

/* A message's data of at least this many bytes, contiguous at the origin,
 * goes as the message's second part from the origin's buffer itself. */
#define NEXT_MIN ((size_t)64 << 10)
/* the buffer they are put together in, kept from one fence to the next
 * up to this size */
#define RBUF_KEEP ((size_t)16 << 20)

/* A send or a reply still in flight. */
struct kn_mpi_wm_pend {
    MPI_Request rq;
    void *buf;             /* ours to free once done */
    /* a reply (reply set): unpacked into the result's layout, or copied
     * as it is (rt NULL) */
    int reply;
    char *rbuf;
    kn_mpi_type_t *rt;
    size_t rcount, bytes;
};

static int tag_of(const kn_mpi_win_t *w)
{
    return KN_WT_MSG0 + (int)(w->msg_epoch & 1);
}

int kn_mpi_win_msg_wanted(const kn_mpi_win_t *w, int rank, size_t bytes)
{
    return w->msg && (w->fence || w->accessing) && w->remote[rank] && !w->locked[rank] && !w->lock_all &&
           w->flavor != MPI_WIN_FLAVOR_DYNAMIC && kn_cfg.mpi_win_msg_max && bytes <= kn_cfg.mpi_win_msg_max;
}

/* A message of len bytes in a start/complete epoch must leave eagerly:
 * its complete must not wait for the target, which may make other calls
 * between post and wait (the network's eager limit). */
static int eager(size_t len)
{
    return len <= (kn_cfg.net_eager_max ? kn_cfg.net_eager_max : kn_cfg.eager_max);
}

/* Room for k more entries in flight; the first of them (NULL: no memory). */
static kn_mpi_wm_pend_t *pend_new(kn_mpi_win_t *w, size_t k)
{
    if (w->nmsg_pend + k > w->cmsg_pend) {
        size_t cap = w->cmsg_pend ? w->cmsg_pend : 16;
        while (cap < w->nmsg_pend + k)
            cap *= 2;
        kn_mpi_wm_pend_t *a = realloc(w->msg_pend, cap * sizeof(*a));
        if (!a)
            return NULL;
        w->msg_pend = a;
        w->cmsg_pend = cap;
    }
    kn_mpi_wm_pend_t *p = &w->msg_pend[w->nmsg_pend];
    memset(p, 0, k * sizeof(*p));
    for (size_t i = 0; i < k; i++)
        p[i].rq = MPI_REQUEST_NULL;
    return p;
}

/* The target's layout: strided when regular, else its pieces (merged
 * where they touch) into *list (malloc'ed). */
static int describe(kn_mpi_wm_hdr_t *h, const kn_mpi_type_t *tt, uint64_t taddr, size_t tcount, kn_mpi_wm_piece_t **list)
{
    MPI_Aint first = 0;
    int levels = 0;
    *list = NULL;
    if (kn_mpi_type_strided(tt, tcount, &first, h->cnt, h->stride, &levels) &&
        (levels < 1 || h->stride[0] >= 0) && (levels < 2 || h->stride[1] >= 0)) {
        h->levels = levels;
        h->first = taddr + (uint64_t)first;
        return 1;
    }
    memset(h->cnt, 0, sizeof(h->cnt));
    memset(h->stride, 0, sizeof(h->stride));
    kn_mpi_tcur_t c;
    kn_mpi_tcur_init(&c, tt, (const void *)(uintptr_t)taddr, tcount);
    size_t cap = 16, k = 0, len;
    char *a = NULL;
    kn_mpi_wm_piece_t *s = malloc(cap * sizeof(*s));
    if (!s)
        return 0;
    while ((len = kn_mpi_tcur_next(&c, &a))) {
        if (k && s[k - 1].addr + s[k - 1].len == (uint64_t)(uintptr_t)a) {
            s[k - 1].len += len;
            continue;
        }
        if (k == cap) {
            kn_mpi_wm_piece_t *g = realloc(s, 2 * cap * sizeof(*s));
            if (!g) {
                free(s);
                return 0;
            }
            s = g;
            cap *= 2;
        }
        s[k++] = (kn_mpi_wm_piece_t){(uint64_t)(uintptr_t)a, len};
    }
    h->levels = KN_WM_LIST;
    h->nseg = k;
    *list = s;
    return 1;
}

/* The target's pieces as knit's list, the other side consecutive from
 * data (NULL: no memory). */
static knit_rma_seg_t *segs_of(const kn_mpi_wm_hdr_t *h, const kn_mpi_wm_piece_t *pc, char *data, size_t *n)
{
    size_t k = h->levels == KN_WM_LIST ? h->nseg : (size_t)(h->bytes / (uint64_t)h->cnt[0]);
    knit_rma_seg_t *s = malloc((k ? k : 1) * sizeof(*s));
    if (!s)
        return NULL;
    uint64_t off = 0;
    if (h->levels == KN_WM_LIST) {
        for (size_t i = 0; i < k; off += pc[i].len, i++)
            s[i] = (knit_rma_seg_t){(uint64_t)(uintptr_t)data + off, pc[i].addr, pc[i].len};
    } else {
        int64_t c1 = h->levels >= 1 ? h->cnt[1] : 1, c2 = h->levels >= 2 ? h->cnt[2] : 1;
        size_t i = 0;
        for (int64_t b = 0; b < c2; b++)
            for (int64_t a = 0; a < c1; a++, i++, off += (uint64_t)h->cnt[0])
                s[i] = (knit_rma_seg_t){(uint64_t)(uintptr_t)data + off,
                                        h->first + (uint64_t)(b * (h->levels >= 2 ? h->stride[1] : 0) +
                                                              a * (h->levels >= 1 ? h->stride[0] : 0)),
                                        (uint64_t)h->cnt[0]};
    }
    *n = k;
    return s;
}

/* ------------------------------------------------------------ held accumulates */

/* A start/complete epoch's accumulates to another node wait at the origin,
 * packed as their messages, until complete sends them with the puts
 * (their target applies them in its wait).  Sent at once, a fetching
 * accumulate or an atomic after one to the same target (which cannot be a
 * message there: its result would wait for the target's wait) would go
 * by the agents and overtake it (accumulate_ordering); held, they go
 * through the agents first instead (kn_mpi_win_msg_unhold). */
struct kn_mpi_wm_held {
    int rank;
    char *buf;             /* the message */
    size_t len;
    knit_rma_acc_t acc;
};

static knit_status_t hold(kn_mpi_win_t *w, int rank, char *buf, size_t len, const knit_rma_acc_t *acc)
{
    if (w->nheld == w->cheld) {
        size_t cap = w->cheld ? 2 * w->cheld : 16;
        struct kn_mpi_wm_held *a = realloc(w->held, cap * sizeof(*a));
        if (!a)
            return KNIT_ERR_NOMEM;
        w->held = a;
        w->cheld = cap;
    }
    w->held[w->nheld++] = (struct kn_mpi_wm_held){rank, buf, len, *acc};
    return KNIT_OK;
}

knit_status_t kn_mpi_win_msg_unhold(kn_mpi_win_t *w, int rank)
{
    knit_status_t first = KNIT_OK;
    size_t keep = 0;
    for (size_t i = 0; i < w->nheld; i++) {
        struct kn_mpi_wm_held *e = &w->held[i];
        if (e->rank != rank) {
            w->held[keep++] = *e;
            continue;
        }
        kn_mpi_wm_hdr_t h;
        memcpy(&h, e->buf, sizeof(h));
        const kn_mpi_wm_piece_t *pc = (const kn_mpi_wm_piece_t *)(e->buf + sizeof(h));
        size_t n = 0;
        knit_rma_seg_t *s = segs_of(&h, pc, e->buf + sizeof(h) + h.nseg * sizeof(*pc), &n);
        /* (returns once the agent has read the data: the buffer is ours) */
        knit_status_t st = s ? knit_acc_list(w->kw, &e->acc, s, n, rank, KNIT_RMA_LOCAL, NULL) : KNIT_ERR_NOMEM;
        free(s);
        free(e->buf);
        if (first == KNIT_OK)
            first = st;
    }
    w->nheld = keep;
    return first;
}

knit_status_t kn_mpi_win_msg_send_held(kn_mpi_win_t *w)
{
    knit_status_t first = KNIT_OK;
    for (size_t i = 0; i < w->nheld; i++) {
        struct kn_mpi_wm_held *e = &w->held[i];
        kn_mpi_wm_pend_t *p = pend_new(w, 1);
        knit_status_t st = KNIT_ERR_NOMEM;
        if (p && MPI_Isend(e->buf, (int)e->len, MPI_BYTE, e->rank, KN_WT_PSCW, w->comm->handle, &p->rq) ==
                     MPI_SUCCESS) {
            p->buf = e->buf;
            w->nmsg_pend++;
            w->msg_sent[e->rank]++;
            st = KNIT_OK;
        } else {
            free(e->buf);
        }
        if (first == KNIT_OK)
            first = st;
    }
    w->nheld = 0;
    return first;
}

knit_status_t kn_mpi_win_msg_op(kn_mpi_win_t *w, const kn_mpi_wm_op_t *o)
{
    int pscw = w->accessing, fetch = o->kind != KN_WM_PUT && o->kind != KN_WM_ACC;
    int data = o->kind == KN_WM_PUT || o->kind == KN_WM_ACC || (o->kind == KN_WM_GACC && o->obuf);
    /* start/complete: puts, and accumulates held until complete (a reply
     * would wait for the target's wait) */
    if (pscw && ((o->kind != KN_WM_PUT && o->kind != KN_WM_ACC) || !eager(sizeof(kn_mpi_wm_hdr_t) + o->bytes)))
        return KNIT_ERR_AGAIN;
    if (o->bytes > ((size_t)1 << 30))
        return KNIT_ERR_AGAIN;
    kn_mpi_wm_hdr_t h = {.kind = KN_WM_MAGIC | (uint32_t)o->kind, .bytes = o->bytes, .data = (uint32_t)data};
    if (o->acc) {
        h.dtype = (int32_t)o->acc->dtype;
        h.op = (int32_t)o->acc->op;
    }
    h.aop = (uint32_t)o->aop;
    h.operand = o->operand;
    h.compare = o->compare;
    kn_mpi_wm_piece_t *list = NULL;
    if (o->kind == KN_WM_RMW) {
        h.first = o->taddr;
        h.cnt[0] = (int64_t)o->bytes;
    } else if (!describe(&h, o->tt, o->taddr, o->tcount, &list)) {
        return KNIT_ERR_NOMEM;
    }
    /* large contiguous data goes from where it is, as a second message:
     * no copy (the origin buffer is not to change before the fence) */
    int next = data && !fetch && !pscw && o->bytes >= NEXT_MIN && kn_mpi_type_dense(o->ot, o->ocount);
    if (next)
        h.data = KN_WM_DATA_NEXT;
    size_t hlen = sizeof(h) + h.nseg * sizeof(kn_mpi_wm_piece_t), len = hlen + (data && !next ? o->bytes : 0);
    if ((pscw && !eager(len)) || len > INT_MAX) {
        free(list);
        return KNIT_ERR_AGAIN;
    }
    kn_mpi_wm_pend_t *p = pend_new(w, fetch || next ? 2 : 1); /* the send, and the reply or the data */
    char *buf = p ? malloc(len) : NULL;
    void *tmp = buf && fetch ? malloc(o->bytes ? o->bytes : 1) : NULL;
    if (!buf || (fetch && !tmp)) {
        free(list);
        free(buf);
        free(tmp);
        return KNIT_ERR_NOMEM;
    }
    memcpy(buf, &h, sizeof(h));
    if (h.nseg)
        memcpy(buf + sizeof(h), list, h.nseg * sizeof(kn_mpi_wm_piece_t));
    free(list);
    if (data && !next)
        kn_mpi_pack(o->ot, o->obuf, o->ocount, buf + hlen);
    if (pscw && o->kind == KN_WM_ACC) { /* (the pend entry stays unused) */
        knit_status_t hs = hold(w, o->rank, buf, len, o->acc);
        if (hs != KNIT_OK)
            free(buf);
        return hs;
    }
    MPI_Comm c = w->comm->handle;
    if (MPI_Isend(buf, (int)len, MPI_BYTE, o->rank, pscw ? KN_WT_PSCW : tag_of(w), c, &p->rq) != MPI_SUCCESS) {
        free(buf);
        free(tmp);
        return KNIT_ERR_PEER;
    }
    p->buf = buf;
    w->nmsg_pend++;
    w->msg_sent[o->rank]++;
    if (next) { /* (the same tag from the same rank: it arrives right behind) */
        if (MPI_Isend(o->obuf + o->ot->true_lb, (int)o->bytes, MPI_BYTE, o->rank, tag_of(w), c, &p[1].rq) !=
            MPI_SUCCESS)
            return KNIT_ERR_PEER; /* the header is out: the target finds no data behind it, and says so */
        w->nmsg_pend++;
        w->msg_sent[o->rank]++;
    }
    if (o->kind == KN_WM_ACC)
        w->msg_acc[o->rank] = 1;
    if (!fetch)
        return KNIT_OK;
    kn_mpi_wm_pend_t *r = p + 1;
    r->buf = tmp;
    r->reply = 1;
    r->rbuf = o->rbuf;
    r->rt = o->rt;
    kn_mpi_type_ref(o->rt);
    r->rcount = o->rcount;
    r->bytes = o->bytes;
    if (MPI_Irecv(tmp, (int)(o->bytes ? o->bytes : 1), MPI_BYTE, o->rank, KN_WT_REPLY, c, &r->rq) != MPI_SUCCESS) {
        kn_mpi_type_unref(o->rt);
        free(tmp);
        return KNIT_ERR_PEER; /* the send is out: the fence still waits for it */
    }
    w->nmsg_pend++;
    return KNIT_OK;
}

int kn_mpi_win_msg_behind_acc(const kn_mpi_win_t *w, int rank)
{
    return w->msg && w->msg_acc[rank] && kn_mpi_win_msg_wanted(w, rank, 0);
}

/* ------------------------------------------------------------ the target */

/* Whether the strided form's counts and strides describe bytes bytes
 * (and nothing overflows on the way). */
static int strided_ok(const kn_mpi_wm_hdr_t *h)
{
    if (h->levels < 0 || h->levels > 2 || h->cnt[0] <= 0)
        return 0;
    __int128 n = h->cnt[0];
    for (int i = 1; i <= h->levels; i++) {
        if (h->cnt[i] <= 0 || h->stride[i - 1] < 0)
            return 0;
        n *= h->cnt[i];
        if (n > ((__int128)1 << 62))
            return 0;
    }
    return n == (__int128)h->bytes;
}

/* Apply a put or an accumulate, or read what a get, a fetching
 * accumulate or an atomic answers into out: through knit on our own
 * window, which turns away addresses outside it and keeps accumulates
 * atomic with everyone else's. */
static knit_status_t self_xfer(kn_mpi_win_t *w, const kn_mpi_wm_hdr_t *h, const kn_mpi_wm_piece_t *pc, char *data, char *out)
{
    unsigned kind = h->kind & 0xffffu;
    void *first = (void *)(uintptr_t)h->first;
    knit_rma_acc_t acc = {.dtype = (knit_dtype_t)h->dtype, .op = (knit_op_kind_t)h->op};
    if (kind == KN_WM_RMW)
        return knit_rma_atomic(w->kw, (knit_rma_atomic_op_t)h->aop, acc.dtype, first, &h->operand, &h->compare, out,
                               w->me);
    if ((kind == KN_WM_PUT || kind == KN_WM_GET) && h->levels != KN_WM_LIST) {
        int get = kind == KN_WM_GET;
        char *x = get ? out : data;
        if (h->levels == 0)
            return get ? knit_get(w->kw, x, first, h->bytes, w->me, 0, NULL)
                       : knit_put(w->kw, x, first, h->bytes, w->me, 0, NULL);
        int64_t dense[2] = {h->cnt[0], h->cnt[0] * h->cnt[1]};
        return get ? knit_get_strided(w->kw, x, dense, first, h->stride, h->cnt, h->levels, w->me, 0, NULL)
                   : knit_put_strided(w->kw, x, dense, first, h->stride, h->cnt, h->levels, w->me, 0, NULL);
    }
    size_t n = 0;
    /* a fetching accumulate of MPI_NO_OP has no data: its pieces pair the result with the target */
    knit_rma_seg_t *s = segs_of(h, pc, kind == KN_WM_GET || (kind == KN_WM_GACC && !h->data) ? out : data, &n);
    if (!s)
        return KNIT_ERR_NOMEM;
    knit_status_t st;
    switch (kind) {
    case KN_WM_PUT: st = knit_put_list(w->kw, s, n, w->me, 0, NULL); break;
    case KN_WM_GET: st = knit_get_list(w->kw, s, n, w->me, 0, NULL); break;
    case KN_WM_ACC: st = knit_acc_list(w->kw, &acc, s, n, w->me, 0, NULL); break;
    default: st = knit_gacc_list(w->kw, &acc, s, n, out, w->me, 0, NULL); break;
    }
    free(s);
    return st;
}

/* One message of the epoch from src: checked, then applied or answered.
 * What asks for an answer always gets one (empty when it cannot be
 * served), so that its origin does not wait for ever. */
static knit_status_t serve(kn_mpi_win_t *w, char *msg, size_t len, int src)
{
    kn_mpi_wm_hdr_t h;
    const kn_mpi_wm_piece_t *pc = (const kn_mpi_wm_piece_t *)(msg + sizeof(h));
    knit_status_t st = KNIT_ERR_INVAL;
    char *reply = NULL;
    size_t rlen = 0;
    unsigned kind = 0;
    if (len < sizeof(h))
        goto out;
    memcpy(&h, msg, sizeof(h));
    if ((h.kind & 0xffff0000u) != KN_WM_MAGIC || (kind = h.kind & 0xffffu) < KN_WM_PUT || kind > KN_WM_RMW) {
        kind = 0;
        goto out;
    }
    size_t hlen = sizeof(h);
    if (kind == KN_WM_RMW) {
        if (h.levels != 0 || h.bytes != knit_dtype_size((knit_dtype_t)h.dtype) || h.bytes > sizeof(uint64_t))
            goto out;
    } else if (h.levels == KN_WM_LIST) {
        if (h.nseg > (len - sizeof(h)) / sizeof(kn_mpi_wm_piece_t))
            goto out;
        hlen += h.nseg * sizeof(kn_mpi_wm_piece_t);
        uint64_t sum = 0;
        for (uint64_t i = 0; i < h.nseg; i++) {
            if (pc[i].len > h.bytes - sum)
                goto out;
            sum += pc[i].len;
        }
        if (sum != h.bytes)
            goto out;
    } else if (!strided_ok(&h)) {
        goto out;
    }
    /* data: always behind a put or an accumulate, never behind a get or an atomic */
    int with = kind == KN_WM_PUT || kind == KN_WM_ACC, without = kind == KN_WM_GET || kind == KN_WM_RMW;
    if (h.data > 1 || (with && !h.data) || (without && h.data) || len - hlen != (h.data ? h.bytes : 0))
        goto out;
    if (kind == KN_WM_PUT || kind == KN_WM_ACC) {
        st = self_xfer(w, &h, pc, msg + hlen, NULL);
        goto out;
    }
    reply = calloc(1, h.bytes ? h.bytes : 1);
    st = reply ? self_xfer(w, &h, pc, msg + hlen, reply) : KNIT_ERR_NOMEM;
    if (st == KNIT_OK)
        rlen = h.bytes;
out:
    if (st != KNIT_OK)
        kn_warn("rank %d's one-sided message to this rank's window could not be %s: %s", src,
                kind == 0 ? "read" : kind == KN_WM_PUT || kind == KN_WM_ACC ? "applied" : "served",
                knit_strerror(st));
    if (kind != 0 && kind != KN_WM_PUT && kind != KN_WM_ACC) {
        kn_mpi_wm_pend_t *p = pend_new(w, 1);
        if (!p || MPI_Isend(reply, (int)rlen, MPI_BYTE, src, KN_WT_REPLY, w->comm->handle, &p->rq) != MPI_SUCCESS) {
            free(reply); /* the origin sees the peer gone, or waits: nothing more to do here */
            return st == KNIT_OK ? KNIT_ERR_NOMEM : st;
        }
        p->buf = reply;
        w->nmsg_pend++;
    }
    return st;
}

/* Wait for every send and reply in flight; unpack the replies. */
static knit_status_t drain(kn_mpi_win_t *w)
{
    knit_status_t first = KNIT_OK;
    for (size_t i = 0; i < w->nmsg_pend; i++) {
        kn_mpi_wm_pend_t *p = &w->msg_pend[i];
        MPI_Status s;
        int e = MPI_Wait(&p->rq, &s);
        if (p->reply) {
            int got = 0;
            MPI_Get_count(&s, MPI_BYTE, &got);
            if (e == MPI_SUCCESS && (size_t)got == p->bytes) {
                if (p->rt)
                    kn_mpi_unpack(p->rt, p->buf, p->bytes, p->rbuf, p->rcount);
                else
                    memcpy(p->rbuf, p->buf, p->bytes);
            } else if (first == KNIT_OK) {
                first = e == MPI_SUCCESS ? KNIT_ERR_PEER_FAULT : KNIT_ERR_PEER;
            }
            kn_mpi_type_unref(p->rt);
        } else if (e != MPI_SUCCESS && first == KNIT_OK) {
            first = KNIT_ERR_PEER;
        }
        free(p->buf);
    }
    w->nmsg_pend = 0;
    return first;
}

/* Receive one message (from src, or any) with tag and apply or answer
 * it; with its data behind it (KN_WM_DATA_NEXT) that one too, where *left
 * (the messages still to come) says there is one. */
static knit_status_t take(kn_mpi_win_t *w, int src, int tag, long long *left)
{
    MPI_Comm c = w->comm->handle;
    MPI_Message m;
    MPI_Status s;
    int len = 0, dlen = 0;
    (*left)--;
    if (MPI_Mprobe(src, tag, c, &m, &s) != MPI_SUCCESS)
        return KNIT_ERR_PEER;
    MPI_Get_count(&s, MPI_BYTE, &len);
    char *msg = malloc(len ? (size_t)len : 1);
    if (!msg) {
        MPI_Mrecv(NULL, 0, MPI_BYTE, &m, MPI_STATUS_IGNORE); /* (truncated: dropped) */
        return KNIT_ERR_NOMEM;
    }
    if (MPI_Mrecv(msg, len, MPI_BYTE, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        free(msg);
        return KNIT_ERR_PEER;
    }
    kn_mpi_wm_hdr_t h;
    if ((size_t)len >= sizeof(h)) {
        memcpy(&h, msg, sizeof(h));
        if (h.data == KN_WM_DATA_NEXT && *left > 0) { /* the data: the sender's next message */
            MPI_Status ds;
            (*left)--;
            if (MPI_Mprobe(s.MPI_SOURCE, tag, c, &m, &ds) != MPI_SUCCESS) {
                free(msg);
                return KNIT_ERR_PEER;
            }
            MPI_Get_count(&ds, MPI_BYTE, &dlen);
            /* into the window's buffer for these, kept from one to the
             * next: a fresh one would fault in every page each time */
            size_t need = (size_t)len + (size_t)dlen;
            if (need > w->msg_rcap) {
                char *nb = realloc(w->msg_rbuf, need);
                if (!nb) {
                    MPI_Mrecv(NULL, 0, MPI_BYTE, &m, MPI_STATUS_IGNORE);
                    free(msg);
                    return KNIT_ERR_NOMEM;
                }
                w->msg_rbuf = nb;
                w->msg_rcap = need;
            }
            h.data = 1; /* as if it had come in one */
            memcpy(w->msg_rbuf, &h, sizeof(h));
            memcpy(w->msg_rbuf + sizeof(h), msg + sizeof(h), (size_t)len - sizeof(h));
            free(msg);
            if (MPI_Mrecv(w->msg_rbuf + len, dlen, MPI_BYTE, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return KNIT_ERR_PEER;
            return serve(w, w->msg_rbuf, need, s.MPI_SOURCE);
        }
    }
    knit_status_t st = serve(w, msg, (size_t)len, s.MPI_SOURCE);
    free(msg);
    return st;
}

/* The fence adds up how many messages each member was sent and says,
 * once this member has applied its own, which others may still be
 * applying theirs, through knit's window (rma.h, kn_rma_settle): knit's
 * operations on it wait for those first, whatever epoch they come in.
 * On 2 emulated nodes the counts' allreduce took 12.5 us, as a barrier;
 * the reduce-scatter past 64 members 18.3. */
knit_status_t kn_mpi_win_msg_fence(kn_mpi_win_t *w)
{
    long long nin = 0, sum[KN_RMA_SUM_ALL], senders = 0;
    int tag = tag_of(w);
    knit_status_t cs = kn_rma_sum_counts(w->comm->kc, w->msg_sent, sum, &nin, &senders);
    memset(w->msg_acc, 0, (size_t)w->n);
    w->msg_epoch++;
    knit_status_t first = cs;
    for (long long left = nin; cs == KNIT_OK && left > 0;) {
        knit_status_t st = take(w, MPI_ANY_SOURCE, tag, &left);
        if (first == KNIT_OK)
            first = st;
        if (st == KNIT_ERR_PEER)
            break;
    }
    if (cs == KNIT_OK)
        kn_rma_settle(w->kw, w->n <= KN_RMA_SUM_ALL ? sum : NULL, senders);
    if (w->msg_rcap > RBUF_KEEP) { /* (kept for the next epoch up to a size) */
        free(w->msg_rbuf);
        w->msg_rbuf = NULL;
        w->msg_rcap = 0;
    }
    knit_status_t st = drain(w);
    return first != KNIT_OK ? first : st;
}

long long kn_mpi_win_msg_sent(kn_mpi_win_t *w, int rank)
{
    if (!w->msg)
        return 0;
    long long k = w->msg_sent[rank];
    w->msg_sent[rank] = 0;
    return k;
}

knit_status_t kn_mpi_win_msg_complete(kn_mpi_win_t *w)
{
    return w->msg ? drain(w) : KNIT_OK;
}

knit_status_t kn_mpi_win_msg_take(kn_mpi_win_t *w, int origin, long long k)
{
    knit_status_t first = KNIT_OK;
    for (long long left = k; left > 0;) {
        knit_status_t st = take(w, origin, KN_WT_PSCW, &left);
        if (first == KNIT_OK)
            first = st;
        if (st == KNIT_ERR_PEER)
            break;
    }
    return first;
}

void kn_mpi_win_msg_release(kn_mpi_win_t *w)
{
    for (size_t i = 0; i < w->nmsg_pend; i++) {
        kn_mpi_type_unref(w->msg_pend[i].rt);
        free(w->msg_pend[i].buf);
    }
    free(w->msg_pend);
    for (size_t i = 0; i < w->nheld; i++)
        free(w->held[i].buf);
    free(w->held);
    free(w->msg_sent);
    free(w->msg_acc);
    free(w->msg_rbuf);
}
