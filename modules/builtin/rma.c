/*
 * rma: one-sided transfers carried by the node agents (issue 24,
 * docs/rma.md): the agent method of put, get and accumulate, and every
 * accumulate and atomic.  Built into libknit (scripts/embed.sh), loaded
 * into every agent at knit_init when there are agents.
 *
 * The path of a put (origin rank o on node A, target rank t on node B):
 *   rank -> agent A   a request: kn_rma_mreq_t (a strided descriptor per
 *                     side, or a list of segments)
 *   agent A           walks the descriptors, reads o's blocks (read_rank)
 *                     into chunks of KN_RMA_MOD_CHUNK bytes and sends each
 *                     to agent B with the target pieces it covers;
 *                     KN_RMA_MOD_WINDOW chunks in flight
 *   agent B           writes the pieces into t (write_rank) and acks
 *   agent A           completes the request after the last ack: the
 *                     data is in place, and t made no call for it.
 * A get sends the target pieces (GETREQ), B reads and answers with the
 * data (GETDATA), A writes it into o.  An accumulate is a put whose
 * pieces B combines with what t has (read, op, write); an atomic is one
 * RMW message.  B does them one at a time, so accumulates and atomics to
 * a node are atomic with respect to each other; where the target's memory
 * is in its shared heap, which the target's node peers combine into
 * themselves, B holds the window's accumulate lock of the target while it
 * combines (rma_mod.h).  A == B goes through the
 * same messages (send to oneself).  A get-accumulate (GACC) is an
 * accumulate whose chunks B answers with what it read before combining
 * (GETDATA), which A writes to the origin's result buffer.
 */
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "knit.h"
#include "knit/module.h"
#include "knit/rma.h"
#include "coll/coll_mod.h"
#include "rma/rma_mod.h"

static const knit_mod_services_t *K;

typedef struct slot {
    uint32_t chunk;
    uint32_t used;
    uint64_t bytes;
    uint64_t off;              /* the chunk's first byte in the transfer */
    kn_rma_cur_t lcur;         /* GET: where the chunk's data goes at the origin */
} slot_t;

typedef struct op {
    struct op *next;
    uint64_t token, id;
    int32_t origin;        /* the requesting rank */
    int32_t status;
    int early;             /* completed to the rank already (KN_RMA_MF_LOCAL) */
    kn_rma_mreq_t r;
    kn_rma_seg_t *segs;    /* LIST */
    uint64_t sent;         /* bytes handed to chunks */
    uint32_t nchunk, inflight;
    kn_rma_cur_t lcur, rcur;
    slot_t slot[KN_RMA_MOD_WINDOW];
} op_t;

/* A rank's operations that completed early (KN_RMA_MF_LOCAL) and are not
 * yet at their targets, and its FENCE requests waiting for them. */
#define FENCE_WAIT 8
typedef struct early {
    uint32_t open;
    int32_t error;         /* the first error among them since its last fence */
    uint32_t nwait;
    uint64_t wait[FENCE_WAIT];
} early_t;

typedef struct state {
    op_t *ops;
    uint64_t next_id;
    early_t *early;        /* [local_size] */
} state_t;

static state_t *S(knit_mod_ctx_t *m)
{
    return K->state(m);
}

/* ------------------------------------------------------------ cursors */

static void cur_start(const op_t *o, kn_rma_cur_t *c, int remote)
{
    if (o->r.form == KN_RMA_F_STRIDED)
        kn_rma_cur_strided(c, remote ? &o->r.rdesc : &o->r.ldesc, remote ? o->r.raddr : o->r.laddr);
    else
        kn_rma_cur_list(c, o->segs, o->r.nseg, remote);
}

/* ------------------------------------------------------------ origin side */

static op_t *find_op(knit_mod_ctx_t *m, uint64_t id, op_t ***link)
{
    op_t **pp = &S(m)->ops;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            if (link)
                *link = pp;
            return *pp;
        }
    return NULL;
}

static early_t *early_of(knit_mod_ctx_t *m, int32_t rank)
{
    const knit_mod_geometry_t *g = K->geometry(m);
    return &S(m)->early[rank - g->first_local];
}

/* The rank's fences: answered once nothing of it is early any more. */
static void fences(knit_mod_ctx_t *m, early_t *e)
{
    if (e->open)
        return;
    for (uint32_t i = 0; i < e->nwait; i++)
        K->complete(m, e->wait[i], e->error, NULL, 0);
    if (e->nwait)
        e->error = KNIT_MOD_OK;
    e->nwait = 0;
}

static void op_end(knit_mod_ctx_t *m, op_t *o, const void *result, uint64_t rlen)
{
    op_t **pp;
    if (find_op(m, o->id, &pp))
        *pp = o->next;
    if (o->early) { /* the rank heard already: its next fence hears the rest */
        early_t *e = early_of(m, o->origin);
        e->open--;
        if (o->status != KNIT_MOD_OK && e->error == KNIT_MOD_OK)
            e->error = o->status;
        fences(m, e);
    } else {
        K->complete(m, o->token, o->status, o->status == KNIT_MOD_OK ? result : NULL,
                    o->status == KNIT_MOD_OK ? rlen : 0);
    }
    K->free(m, o->segs);
    K->free(m, o);
}

static slot_t *slot_of(op_t *o, uint32_t chunk)
{
    for (unsigned i = 0; i < KN_RMA_MOD_WINDOW; i++)
        if (o->slot[i].used && o->slot[i].chunk == chunk)
            return &o->slot[i];
    return NULL;
}

static slot_t *slot_free(op_t *o)
{
    for (unsigned i = 0; i < KN_RMA_MOD_WINDOW; i++)
        if (!o->slot[i].used)
            return &o->slot[i];
    return NULL;
}

/* Read `len` bytes of the origin at addr into dst, coalescing runs: a
 * pending run is flushed when the next piece does not continue it. */
typedef struct run {
    uint64_t addr, len;
    char *dst;
} run_t;

/* A rank's memory that the agent could not reach: whose it was, told as
 * the rank's own calls tell it (the origin's: KNIT_ERR_FAULT, the
 * target's: KNIT_ERR_PEER_FAULT). */
static int32_t whose(int32_t st, int32_t fault)
{
    return st == KNIT_MOD_ERR_RANGE ? fault : st;
}

/* (the origin's side) */
static int32_t run_flush(knit_mod_ctx_t *m, int32_t rank, run_t *r, int write)
{
    int32_t st = KNIT_MOD_OK;
    if (r->len)
        st = write ? K->write_rank(m, rank, r->addr, r->dst, r->len) : K->read_rank(m, rank, r->dst, r->addr, r->len);
    r->len = 0;
    return whose(st, KNIT_ERR_FAULT);
}

static int32_t run_add(knit_mod_ctx_t *m, int32_t rank, run_t *r, uint64_t addr, char *buf, uint64_t len, int write)
{
    if (r->len && r->addr + r->len == addr && r->dst + r->len == buf) {
        r->len += len;
        return KNIT_MOD_OK;
    }
    int32_t st = run_flush(m, rank, r, write);
    r->addr = addr;
    r->dst = buf;
    r->len = len;
    return st;
}

/* Build and send the next chunk of a put, accumulate or get. */
static int32_t send_chunk(knit_mod_ctx_t *m, op_t *o)
{
    slot_t *sl = slot_free(o);
    uint64_t left = o->r.total - o->sent;
    uint64_t cap = left < KN_RMA_MOD_CHUNK ? left : KN_RMA_MOD_CHUNK;
    int get = o->r.kind == KN_RMA_K_GET;
    uint64_t maxp = cap < KN_RMA_MOD_MAX_PIECES ? cap : KN_RMA_MOD_MAX_PIECES;
    uint64_t size = sizeof(kn_rma_msg_hdr_t) + maxp * sizeof(kn_rma_piece_t) + (get ? 0 : cap);
    char *buf = K->alloc(m, size);
    if (!buf)
        return KNIT_MOD_ERR_NOMEM;
    kn_rma_msg_hdr_t *h = (kn_rma_msg_hdr_t *)buf;
    kn_rma_piece_t *pc = (kn_rma_piece_t *)(h + 1);
    char *data = (char *)(pc + maxp);
    sl->lcur = o->lcur;
    uint64_t bytes = 0;
    uint32_t np = 0;
    run_t run = {0};
    int32_t st = KNIT_MOD_OK;
    while (bytes < cap && st == KNIT_MOD_OK) {
        kn_rma_cur_t lsave = o->lcur, rsave = o->rcur;
        uint64_t la = 0, ra = 0;
        uint64_t n = kn_rma_cur_pair(&o->lcur, &o->rcur, cap - bytes, &la, &ra);
        if (!n)
            break;
        if (np && pc[np - 1].raddr + pc[np - 1].len == ra) {
            pc[np - 1].len += n;
        } else if (np == maxp) {
            o->lcur = lsave; /* no room for another piece: the rest goes in the next chunk */
            o->rcur = rsave;
            break;
        } else {
            pc[np].raddr = ra;
            pc[np].len = n;
            np++;
        }
        if (!get)
            st = run_add(m, o->origin, &run, la, data + bytes, n, 0);
        bytes += n;
    }
    if (st == KNIT_MOD_OK && !get)
        st = run_flush(m, o->origin, &run, 0);
    if (st == KNIT_MOD_OK && !bytes)
        st = KNIT_MOD_ERR_INVAL; /* the descriptors end before the total (checked at the request: cannot be) */
    if (st != KNIT_MOD_OK) {
        K->free(m, buf);
        return st;
    }
    h->version = KN_RMA_MOD_VERSION;
    h->type = get ? KN_RMA_M_GETREQ : KN_RMA_M_PUT;
    h->kind = o->r.kind;
    h->id = o->id;
    h->chunk = o->nchunk;
    h->target = o->r.target;
    h->npieces = np;
    h->dtype = o->r.dtype;
    h->op = o->r.op;
    h->has_scale = o->r.has_scale;
    h->lockaddr = o->r.lockaddr;
    memcpy(h->scale, o->r.scale, sizeof(h->scale));
    h->bytes = bytes;
    uint64_t plen = (uint64_t)np * sizeof(kn_rma_piece_t);
    if (!get && np < maxp) /* close the gap between the pieces and the data */
        memmove(pc + np, data, bytes);
    st = K->send(m, o->r.target_node, buf, sizeof(*h) + plen + (get ? 0 : bytes));
    K->free(m, buf);
    if (st != KNIT_MOD_OK)
        return st;
    sl->used = 1;
    sl->chunk = o->nchunk++;
    sl->bytes = bytes;
    sl->off = o->sent;
    o->sent += bytes;
    o->inflight++;
    return KNIT_MOD_OK;
}

/* Keep the window full; complete the request once everything is back. */
static void pump(knit_mod_ctx_t *m, op_t *o)
{
    while (o->status == KNIT_MOD_OK && o->sent < o->r.total && o->inflight < KN_RMA_MOD_WINDOW) {
        int32_t st = send_chunk(m, o);
        if (st != KNIT_MOD_OK) {
            K->log(m, KNIT_MOD_LOG_ERROR, "rank %d: %s to rank %d: %s at byte %llu", o->origin,
                   o->r.kind == KN_RMA_K_GET ? "get" : o->r.kind == KN_RMA_K_PUT ? "put" : "accumulate",
                   o->r.target, st == KNIT_ERR_FAULT ? "the origin's buffer is not accessible" : "failed",
                   (unsigned long long)o->sent);
            o->status = st;
        }
    }
    if (!o->inflight && (o->status != KNIT_MOD_OK || o->sent == o->r.total)) {
        op_end(m, o, NULL, 0);
        return;
    }
    /* every byte read from the rank: it may have its buffer back now */
    if ((o->r.flags & KN_RMA_MF_LOCAL) && !o->early && o->status == KNIT_MOD_OK && o->sent == o->r.total &&
        (o->r.kind == KN_RMA_K_PUT || o->r.kind == KN_RMA_K_ACC)) {
        o->early = 1;
        early_of(m, o->origin)->open++;
        K->complete(m, o->token, KNIT_MOD_OK, NULL, 0);
    }
}

/* A descriptor that moves exactly total bytes. */
static int desc_ok(const kn_rma_desc_t *d, uint64_t total)
{
    if (d->levels > KN_RMA_MOD_LEVELS)
        return 0;
    uint64_t n = 1;
    for (uint32_t i = 0; i <= d->levels; i++) {
        if (d->count[i] < 0 || (d->count[i] && n > UINT64_MAX / (uint64_t)d->count[i]) ||
            (i < d->levels && d->stride[i] < 0))
            return 0;
        n *= (uint64_t)d->count[i];
    }
    return n == total;
}

/* A list (nseg segments at p, maybe unaligned) that adds up to total. */
static int list_ok(const char *p, uint64_t nseg, uint64_t total)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < nseg; i++) {
        kn_rma_seg_t s;
        memcpy(&s, p + i * sizeof(s), sizeof(s));
        if (s.len > UINT64_MAX - sum)
            return 0;
        sum += s.len;
    }
    return sum == total;
}

static void rma_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    const knit_mod_geometry_t *g = K->geometry(m);
    kn_rma_mreq_t r;
    if (req->len < sizeof(r)) {
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    memcpy(&r, args, sizeof(r));
    uint64_t seglen = r.form == KN_RMA_F_LIST ? r.nseg * sizeof(kn_rma_seg_t) : 0;
    if (r.version != KN_RMA_MOD_VERSION || !r.kind || r.kind >= KN_RMA_K_MAX || r.target < 0 ||
        r.target >= g->nranks || r.target_node < 0 || r.target_node >= g->nnodes ||
        (r.form != KN_RMA_F_STRIDED && r.form != KN_RMA_F_LIST) ||
        (r.form == KN_RMA_F_LIST && r.nseg > (req->len - sizeof(r)) / sizeof(kn_rma_seg_t)) ||
        req->len != sizeof(r) + seglen ||
        (r.kind == KN_RMA_K_GACC && !r.resaddr) ||
        (r.kind != KN_RMA_K_RMW && r.kind != KN_RMA_K_FENCE &&
         (r.form == KN_RMA_F_STRIDED ? !desc_ok(&r.ldesc, r.total) || !desc_ok(&r.rdesc, r.total)
                                     : !list_ok((const char *)args + sizeof(r), r.nseg, r.total)))) {
        K->log(m, KNIT_MOD_LOG_ERROR, "rank %d: a malformed request (version %u, kind %u, %llu bytes)", req->rank,
               r.version, r.kind, (unsigned long long)req->len);
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    if (r.kind == KN_RMA_K_FENCE) {
        early_t *e = early_of(m, req->rank);
        if (e->nwait == FENCE_WAIT) {
            K->complete(m, req->token, KNIT_MOD_ERR_AGAIN, NULL, 0);
            return;
        }
        e->wait[e->nwait++] = req->token;
        fences(m, e);
        return;
    }
    op_t *o = K->alloc(m, sizeof(*o));
    if (!o || (seglen && !(o->segs = K->alloc(m, seglen)))) {
        K->free(m, o);
        K->complete(m, req->token, KNIT_MOD_ERR_NOMEM, NULL, 0);
        return;
    }
    o->r = r;
    if (seglen)
        memcpy(o->segs, (const char *)args + sizeof(r), seglen);
    o->token = req->token;
    o->id = ++S(m)->next_id;
    o->origin = req->rank;
    o->next = S(m)->ops;
    S(m)->ops = o;
    if (r.kind == KN_RMA_K_RMW) {
        kn_rma_msg_hdr_t h = {.version = KN_RMA_MOD_VERSION, .type = KN_RMA_M_RMW, .kind = KN_RMA_K_RMW,
                              .id = o->id, .target = r.target, .dtype = r.dtype, .op = r.op, .raddr = r.raddr,
                              .operand = r.operand, .compare = r.compare, .lockaddr = r.lockaddr};
        o->status = K->send(m, r.target_node, &h, sizeof(h));
        if (o->status != KNIT_MOD_OK)
            op_end(m, o, NULL, 0);
        else
            o->inflight = 1;
        return;
    }
    cur_start(o, &o->lcur, 0);
    cur_start(o, &o->rcur, 1);
    pump(m, o);
}

/* ------------------------------------------------------------ target side */

static int local(knit_mod_ctx_t *m, int32_t rank)
{
    const knit_mod_geometry_t *g = K->geometry(m);
    return rank >= g->first_local && rank < g->first_local + g->local_size;
}

/* One accumulate piece: t[raddr..] = src op (scale * t[...]) */
static int32_t acc_piece(knit_mod_ctx_t *m, const kn_rma_msg_hdr_t *h, uint64_t raddr, const char *src, uint64_t len)
{
    if (h->op == KNIT_OP_REPLACE)
        return K->write_rank(m, h->target, raddr, src, len); /* nothing to read */
    char *tmp = K->alloc(m, 2 * len);
    if (!tmp)
        return KNIT_MOD_ERR_NOMEM;
    char *in = tmp + len;
    memcpy(in, src, len);
    int32_t st = K->read_rank(m, h->target, tmp, raddr, len);
    if (st == KNIT_MOD_OK && !kn_rma_combine(in, tmp, len, h->dtype, h->op, h->has_scale ? h->scale : NULL))
        st = KNIT_MOD_ERR_INVAL;
    if (st == KNIT_MOD_OK)
        st = K->write_rank(m, h->target, raddr, tmp, len);
    K->free(m, tmp);
    return st;
}

/* One get-accumulate piece: old gets t[raddr..], then t = src op t. */
static int32_t gacc_piece(knit_mod_ctx_t *m, const kn_rma_msg_hdr_t *h, uint64_t raddr, const char *src, uint64_t len,
                          char *old)
{
    int32_t st = K->read_rank(m, h->target, old, raddr, len);
    if (st != KNIT_MOD_OK || h->op == KNIT_OP_NO_OP)
        return st;
    if (h->op == KNIT_OP_REPLACE)
        return K->write_rank(m, h->target, raddr, src, len);
    char *tmp = K->alloc(m, 2 * len);
    if (!tmp)
        return KNIT_MOD_ERR_NOMEM;
    char *in = tmp + len;
    memcpy(in, src, len);
    memcpy(tmp, old, len);
    if (!kn_rma_combine(in, tmp, len, h->dtype, h->op, h->has_scale ? h->scale : NULL))
        st = KNIT_MOD_ERR_INVAL;
    if (st == KNIT_MOD_OK)
        st = K->write_rank(m, h->target, raddr, tmp, len);
    K->free(m, tmp);
    return st;
}

/* The target's accumulate lock, mapped here and taken (rma_mod.h): NULL
 * where the window has none for it (then only this agent changes the
 * target's memory).  A holder is a rank of this node combining at most
 * KN_RMA_LOCK_SPAN bytes: spin, then let it run.  No time limit: a holder
 * held up (descheduled, stopped) only delays; one that died ends the job. */
static uint64_t *lock_take(knit_mod_ctx_t *m, const kn_rma_msg_hdr_t *h)
{
    uint64_t *l = h->lockaddr && K->map_rank ? K->map_rank(m, h->target, h->lockaddr, sizeof(uint64_t)) : NULL;
    if (!l || (uintptr_t)l % sizeof(uint64_t))
        return NULL;
    for (unsigned spin = 0; !kn_rma_lock_try(l); spin++) {
        if (spin < 128)
            __builtin_ia32_pause();
        else
            sched_yield();
    }
    return l;
}

/* One accumulate piece, the lock held: where the target's memory is mapped
 * here it is combined in place (old, for a get-accumulate, gets what was
 * there), else read, combined and written. */
static int32_t combine_piece(knit_mod_ctx_t *m, const kn_rma_msg_hdr_t *h, uint64_t raddr, const char *src,
                             uint64_t len, char *old)
{
    char *p = K->map_rank ? K->map_rank(m, h->target, raddr, len) : NULL;
    if (p) {
        if (old)
            memcpy(old, p, len);
        if (h->op == KNIT_OP_NO_OP)
            return KNIT_MOD_OK;
        if (h->op == KNIT_OP_REPLACE) {
            memcpy(p, src, len);
            return KNIT_MOD_OK;
        }
        uint64_t es = kn_coll_mod_esize(h->dtype);
        if (!h->has_scale && es && (uintptr_t)src % es == 0) /* read only: combined from where it is */
            return kn_rma_combine((void *)(uintptr_t)src, p, len, h->dtype, h->op, NULL) ? KNIT_MOD_OK
                                                                                         : KNIT_MOD_ERR_INVAL;
        char *in = K->alloc(m, len); /* scaled in place, or unaligned */
        if (!in)
            return KNIT_MOD_ERR_NOMEM;
        memcpy(in, src, len);
        int ok = kn_rma_combine(in, p, len, h->dtype, h->op, h->has_scale ? h->scale : NULL);
        K->free(m, in);
        return ok ? KNIT_MOD_OK : KNIT_MOD_ERR_INVAL;
    }
    return old ? gacc_piece(m, h, raddr, src, len, old) : acc_piece(m, h, raddr, src, len);
}

static void reply(knit_mod_ctx_t *m, int32_t to, const kn_rma_msg_hdr_t *h, int type, int32_t status,
                  const void *data, uint64_t len)
{
    kn_rma_msg_hdr_t a = *h;
    a.type = (uint8_t)type;
    a.status = status;
    a.npieces = 0;
    a.bytes = len;
    if (len) {
        char *buf = K->alloc(m, sizeof(a) + len);
        if (buf) {
            memcpy(buf, &a, sizeof(a));
            memcpy(buf + sizeof(a), data, len);
            K->send(m, to, buf, sizeof(a) + len);
            K->free(m, buf);
            return;
        }
        a.status = KNIT_MOD_ERR_NOMEM;
        a.bytes = 0;
    }
    K->send(m, to, &a, sizeof(a));
}

static int32_t rmw(knit_mod_ctx_t *m, kn_rma_msg_hdr_t *h)
{
    size_t es = kn_coll_mod_esize(h->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return KNIT_MOD_ERR_INVAL;
    uint64_t old = 0, nv;
    int32_t st = KNIT_MOD_OK;
    uint64_t *l = lock_take(m, h);
    char *p = K->map_rank ? K->map_rank(m, h->target, h->raddr, es) : NULL;
    if (p) /* little-endian: the low bytes */
        memcpy(&old, p, es);
    else
        st = K->read_rank(m, h->target, &old, h->raddr, es);
    if (st == KNIT_MOD_OK && !kn_rma_rmw(h->op, es, old, h->operand, h->compare, &nv))
        st = KNIT_MOD_ERR_INVAL;
    if (st == KNIT_MOD_OK) {
        h->old = old;
        if (nv != old && p)
            memcpy(p, &nv, es);
        else if (nv != old)
            st = K->write_rank(m, h->target, h->raddr, &nv, es);
    }
    if (l)
        kn_rma_unlock(l);
    return st;
}

static void at_target(knit_mod_ctx_t *m, int32_t from, const kn_rma_msg_hdr_t *h, uint64_t len)
{
    const kn_rma_piece_t *pc = (const kn_rma_piece_t *)(h + 1);
    uint64_t plen = (uint64_t)h->npieces * sizeof(*pc);
    int get = h->type == KN_RMA_M_GETREQ;
    int32_t st = KNIT_MOD_OK;
    if (!local(m, h->target) || h->npieces > KN_RMA_MOD_MAX_PIECES || len - sizeof(*h) < plen ||
        len - sizeof(*h) - plen != (get ? 0 : h->bytes) || h->bytes > KN_RMA_MOD_CHUNK)
        st = KNIT_MOD_ERR_INVAL;
    uint64_t sum = 0;
    for (uint32_t i = 0; st == KNIT_MOD_OK && i < h->npieces; i++)
        sum += pc[i].len;
    if (st == KNIT_MOD_OK && sum != h->bytes)
        st = KNIT_MOD_ERR_INVAL;
    if (st != KNIT_MOD_OK) {
        K->log(m, KNIT_MOD_LOG_ERROR, "a malformed chunk from agent %d (%llu bytes)", from, (unsigned long long)len);
        reply(m, from, h, get || h->kind == KN_RMA_K_GACC ? KN_RMA_M_GETDATA : KN_RMA_M_ACK, st, NULL, 0);
        return;
    }
    if (get) {
        char *data = K->alloc(m, h->bytes + 1);
        st = data ? KNIT_MOD_OK : KNIT_MOD_ERR_NOMEM;
        uint64_t off = 0;
        for (uint32_t i = 0; st == KNIT_MOD_OK && i < h->npieces; off += pc[i].len, i++)
            st = whose(K->read_rank(m, h->target, data + off, pc[i].raddr, pc[i].len), KNIT_ERR_PEER_FAULT);
        reply(m, from, h, KN_RMA_M_GETDATA, st, data, st == KNIT_MOD_OK ? h->bytes : 0);
        K->free(m, data);
        return;
    }
    const char *data = (const char *)(pc + h->npieces);
    uint64_t off = 0;
    if (h->kind != KN_RMA_K_ACC && h->kind != KN_RMA_K_GACC) {
        for (uint32_t i = 0; st == KNIT_MOD_OK && i < h->npieces; off += pc[i].len, i++)
            st = whose(K->write_rank(m, h->target, pc[i].raddr, data + off, pc[i].len), KNIT_ERR_PEER_FAULT);
        reply(m, from, h, KN_RMA_M_ACK, st, NULL, 0);
        return;
    }
    /* an accumulate: the whole chunk under the target's lock; a
     * get-accumulate answers with what was there */
    int gacc = h->kind == KN_RMA_K_GACC;
    char *old = gacc ? K->alloc(m, h->bytes + 1) : NULL;
    uint64_t *l = NULL;
    if (gacc && !old)
        st = KNIT_MOD_ERR_NOMEM;
    else
        l = lock_take(m, h);
    for (uint32_t i = 0; st == KNIT_MOD_OK && i < h->npieces; off += pc[i].len, i++)
        st = whose(combine_piece(m, h, pc[i].raddr, data + off, pc[i].len, gacc ? old + off : NULL),
                   KNIT_ERR_PEER_FAULT);
    if (l)
        kn_rma_unlock(l);
    reply(m, from, h, gacc ? KN_RMA_M_GETDATA : KN_RMA_M_ACK, st, old, gacc && st == KNIT_MOD_OK ? h->bytes : 0);
    K->free(m, old);
}

/* ------------------------------------------------------------ replies at the origin */

static void at_origin(knit_mod_ctx_t *m, const kn_rma_msg_hdr_t *h, uint64_t len)
{
    op_t *o = find_op(m, h->id, NULL);
    if (!o)
        return; /* not ours (a malformed reply): nothing waits for it */
    if (h->type == KN_RMA_M_RMWDONE) {
        if (o->r.kind != KN_RMA_K_RMW) {
            K->log(m, KNIT_MOD_LOG_ERROR, "an atomic's answer for operation %llu, not an atomic: dropped",
                   (unsigned long long)h->id);
            return;
        }
        o->status = h->status;
        uint64_t old = h->old;
        op_end(m, o, &old, sizeof(old));
        return;
    }
    slot_t *sl = slot_of(o, h->chunk);
    int data_back = o->r.kind == KN_RMA_K_GET || o->r.kind == KN_RMA_K_GACC;
    if (!sl || (h->type == KN_RMA_M_GETDATA) != data_back || o->r.kind == KN_RMA_K_RMW) {
        K->log(m, KNIT_MOD_LOG_ERROR, "a reply that matches no chunk of operation %llu: dropped",
               (unsigned long long)h->id);
        return;
    }
    int32_t st = h->status;
    if (h->type == KN_RMA_M_GETDATA && st == KNIT_MOD_OK) {
        if (len - sizeof(*h) != sl->bytes || h->bytes != sl->bytes) {
            st = KNIT_MOD_ERR_INVAL;
        } else if (o->r.kind == KN_RMA_K_GACC) { /* the result buffer is contiguous */
            st = whose(K->write_rank(m, o->origin, o->r.resaddr + sl->off, h + 1, sl->bytes), KNIT_ERR_FAULT);
        } else { /* write the chunk into the origin, walking its side from the chunk's start */
            const char *data = (const char *)(h + 1);
            kn_rma_cur_t c = sl->lcur;
            run_t run = {0};
            uint64_t off = 0, la = 0, n;
            while (st == KNIT_MOD_OK && off < sl->bytes && (n = kn_rma_cur_next(&c, sl->bytes - off, &la)))
                st = run_add(m, o->origin, &run, la, (char *)data + off, n, 1), off += n;
            if (st == KNIT_MOD_OK)
                st = run_flush(m, o->origin, &run, 1);
        }
    }
    if (st != KNIT_MOD_OK && o->status == KNIT_MOD_OK)
        o->status = st;
    sl->used = 0;
    o->inflight--;
    pump(m, o);
}

static void dispatch(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len);

static void rma_message(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    if (from < 0 || len < sizeof(kn_rma_msg_hdr_t))
        return; /* only agents talk to each other here */
    if ((uintptr_t)msg % _Alignof(kn_rma_msg_hdr_t)) { /* read in place below: aligned first */
        void *copy = K->alloc(m, len);
        if (!copy)
            return;
        memcpy(copy, msg, len);
        dispatch(m, from, copy, len);
        K->free(m, copy);
        return;
    }
    dispatch(m, from, msg, len);
}

static void dispatch(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    kn_rma_msg_hdr_t h;
    memcpy(&h, msg, sizeof(h));
    if (h.version != KN_RMA_MOD_VERSION)
        return;
    switch (h.type) {
    case KN_RMA_M_PUT:
    case KN_RMA_M_GETREQ:
        at_target(m, from, msg, len);
        break;
    case KN_RMA_M_RMW: {
        int32_t st = local(m, h.target) ? whose(rmw(m, &h), KNIT_ERR_PEER_FAULT) : KNIT_MOD_ERR_INVAL;
        reply(m, from, &h, KN_RMA_M_RMWDONE, st, NULL, 0);
        break;
    }
    case KN_RMA_M_ACK:
    case KN_RMA_M_GETDATA:
    case KN_RMA_M_RMWDONE:
        at_origin(m, msg, len);
        break;
    default:
        break;
    }
}

static int32_t rma_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    K = svc;
    const knit_mod_geometry_t *g = K->geometry(m);
    state_t *s = K->alloc(m, sizeof(state_t));
    if (!s || !(s->early = K->alloc(m, (uint64_t)(g->local_size ? g->local_size : 1) * sizeof(early_t)))) {
        K->free(m, s);
        return KNIT_MOD_ERR_NOMEM;
    }
    K->set_state(m, s);
    return KNIT_MOD_OK;
}

static const knit_mod_descriptor_t desc = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(desc),
    .name = "rma",
    .init = rma_init,
    .on_request = rma_request,
    .on_message = rma_message,
};
KNIT_MODULE(desc)
