/*
 * One-sided operations: check the call, describe it (a strided
 * descriptor per side, or a list of segments), pick the method, and run
 * it (docs/rma.md):
 *   direct  within a node (and to oneself) the transport's vectored copy:
 *           one process_vm_writev/readv moves up to 1024 pieces of each
 *           side, done on return; between nodes one RDMA per piece
 *           through the rank's own endpoint (its completions come with
 *           progress)
 *   agent   one request to the node agent's `rma` module, which walks
 *           the descriptors itself; the request completes at the agent
 *   pack    the rank packs the pieces into a bounce buffer (unpacks
 *           after a get) and the request's origin side is that buffer
 * Accumulates and atomics always go to the agents (element-wise atomicity
 * needs one place that does them); to oneself without agents they are
 * done here.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/coll.h"
#include "offload/offload.h"
#include "rma/rma.h"
#include "util/heap.h"
#include "util/log.h"
#include "util/mem.h"

typedef struct dcomp {
    kn_tl_comp_t c;
    knit_rma_req_t *r;
} dcomp_t;

struct knit_rma_req {
    kn_list_t wlink, olink;        /* in win->reqs, kn_rma.open (while not done) */
    knit_win_t *win;
    int rank;                      /* comm rank of the target */
    int done;
    knit_status_t status;
    knit_mreq_t *mreq;             /* agent, pack */
    void *args;                    /* its request, read by the agent until done */
    uint64_t result;               /* RMW: the old value */
    char *bounce;                  /* pack */
    xfer_t unpack;                 /* pack get: the local side to unpack into */
    int unpacking;
    size_t pending;                /* direct between nodes: copies in flight */
    int starting;                  /* still being issued: not done, whatever else says */
    dcomp_t *comps;
};

static void req_free(knit_rma_req_t *r)
{
    if (!r)
        return;
    free(r->args);
    free(r->bounce);
    free(r->unpack.segs);
    free(r->comps);
    free(r);
}

static void cur_local(kn_rma_cur_t *c, const xfer_t *x)
{
    if (x->segs)
        kn_rma_cur_list(c, x->segs, x->nseg, 0);
    else
        kn_rma_cur_strided(c, &x->ldesc, x->laddr);
}

static void cur_remote(kn_rma_cur_t *c, const xfer_t *x)
{
    if (x->segs)
        kn_rma_cur_list(c, x->segs, x->nseg, 1);
    else
        kn_rma_cur_strided(c, &x->rdesc, x->raddr);
}

/* ------------------------------------------------------------ completion */

static void finish(knit_rma_req_t *r, knit_status_t st)
{
    if (r->done)
        return;
    r->status = st;
    r->done = 1;
    kn_list_del(&r->wlink);
    kn_list_del(&r->olink);
    kn_rma.nopen--;
}

/* Every local piece could be user memory (the cheap check a send's buffer
 * gets, for copies this process makes itself). */
int kn_rma_local_plausible(const xfer_t *x)
{
    kn_rma_cur_t c;
    cur_local(&c, x);
    uint64_t addr = 0, n;
    while ((n = kn_rma_cur_next(&c, UINT64_MAX, &addr)))
        if (kn_unlikely(kn_mem_implausible((void *)(uintptr_t)addr, n)))
            return 0;
    return 1;
}

/* Pack get: the bounce buffer into the local pieces. */
static void unpack(knit_rma_req_t *r)
{
    kn_rma_cur_t c;
    cur_local(&c, &r->unpack);
    uint64_t off = 0, addr = 0, n;
    while ((n = kn_rma_cur_next(&c, UINT64_MAX, &addr))) {
        memcpy((void *)(uintptr_t)addr, r->bounce + off, n);
        off += n;
    }
}

/* r's agent request ended with st. */
static void agent_done(knit_rma_req_t *r, knit_status_t st)
{
    if (st == KNIT_OK && r->unpacking)
        unpack(r);
    finish(r, st);
}

/* Has r completed (polling its agent request; no progress)? */
static int poll_req(knit_rma_req_t *r)
{
    if (r->done)
        return 1;
    if (r->mreq) {
        int done = 0;
        knit_status_t st = kn_off_request_try(&r->mreq, &done, &r->result, sizeof(r->result), NULL);
        if (done)
            agent_done(r, st);
        return done;
    }
    if (!r->pending && !r->starting)
        finish(r, r->status);
    return r->done;
}

static int req_cond(void *arg)
{
    return poll_req(arg);
}

static knit_status_t wait_one(knit_rma_req_t *r)
{
    if (poll_req(r))
        return r->status;
    if (r->mreq) { /* the offload layer's wait: it knows when to leave the cpu to the agent */
        agent_done(r, knit_request_wait(&r->mreq, &r->result, sizeof(r->result), NULL));
        return r->status;
    }
    knit_wait_until(kn_rma.ctx, req_cond, r);
    return r->status;
}

/* Any one open request done: room for another at the agent. */
static int any_cond(void *arg)
{
    size_t before = *(size_t *)arg;
    kn_list_t *p, *t;
    kn_list_for_each_safe(p, t, &kn_rma.open)
        poll_req(kn_list_entry(p, knit_rma_req_t, olink));
    return kn_rma.nopen < before;
}

typedef struct winwait {
    knit_win_t *w;
    int rank;
} winwait_t;

static int win_cond(void *arg)
{
    winwait_t *ww = arg;
    kn_list_t *p, *t;
    int left = 0;
    kn_list_for_each_safe(p, t, &ww->w->reqs) {
        knit_rma_req_t *r = kn_list_entry(p, knit_rma_req_t, wlink);
        if ((ww->rank < 0 || r->rank == ww->rank) && !poll_req(r))
            left = 1;
    }
    return !left;
}

/* A request to the agents' module; while the agent's queue is full, wait
 * for one of ours to finish. */
static knit_status_t submit(const void *args, size_t len, knit_mreq_t **mr)
{
    for (;;) {
        knit_status_t st = knit_module_request(kn_rma.mod, args, len, mr);
        size_t before = kn_rma.nopen;
        if (st != KNIT_ERR_AGAIN || !before)
            return st;
        knit_wait_until(kn_rma.ctx, any_cond, &before);
    }
}

/* The agent's fence: every operation of ours that completed early is at
 * its target (their first error). */
static knit_status_t agent_fence(void)
{
    if (!kn_rma.early || !kn_rma.mod)
        return KNIT_OK;
    kn_rma_mreq_t q = {.version = KN_RMA_MOD_VERSION, .kind = KN_RMA_K_FENCE, .form = KN_RMA_F_STRIDED,
                       .target = kn_rma.rank, .target_node = kn_rma.node};
    knit_mreq_t *mr = NULL;
    knit_status_t st = submit(&q, sizeof(q), &mr);
    if (st == KNIT_OK)
        st = knit_request_wait(&mr, NULL, 0, NULL);
    kn_rma.early = 0;
    return st;
}

knit_status_t kn_rma_wait_win(knit_win_t *w, int rank)
{
    knit_status_t st = kn_rma_defer_flush(w, rank);
    knit_status_t st2 = kn_rma_wait_reqs(w, rank);
    return st != KNIT_OK ? st : st2;
}

knit_status_t kn_rma_wait_reqs(knit_win_t *w, int rank)
{
    winwait_t ww = {w, rank};
    knit_status_t st = KNIT_OK;
    if (!win_cond(&ww))
        st = knit_wait_until(kn_rma.ctx, win_cond, &ww);
    knit_status_t st2 = agent_fence();
    return st != KNIT_OK ? st : st2;
}

knit_status_t knit_rma_test(knit_rma_req_t **req, int *done)
{
    if (!req || !done)
        return KNIT_ERR_INVAL;
    if (!*req) { /* the call completed it */
        *done = 1;
        return KNIT_OK;
    }
    knit_rma_req_t *r = *req;
    if (!poll_req(r)) {
        knit_progress(kn_rma.ctx);
        if (!poll_req(r)) {
            *done = 0;
            return KNIT_OK;
        }
    }
    *done = 1;
    knit_status_t st = r->status;
    req_free(r);
    *req = NULL;
    return st;
}

knit_status_t knit_rma_wait(knit_rma_req_t **req)
{
    if (!req)
        return KNIT_ERR_INVAL;
    if (!*req) /* the call completed it */
        return KNIT_OK;
    knit_status_t st = wait_one(*req);
    req_free(*req);
    *req = NULL;
    return st;
}

knit_status_t knit_rma_waitall(size_t n, knit_rma_req_t **reqs)
{
    if (n && !reqs)
        return KNIT_ERR_INVAL;
    knit_status_t first = KNIT_OK;
    for (size_t i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        knit_status_t st = knit_rma_wait(&reqs[i]);
        if (first == KNIT_OK)
            first = st;
    }
    return first;
}

knit_status_t knit_rma_fence(knit_win_t *w, int rank)
{
    if (!w || rank < 0 || rank >= w->n)
        return KNIT_ERR_INVAL;
    return kn_rma_wait_win(w, rank);
}

knit_status_t knit_rma_fence_all(knit_win_t *w)
{
    return w ? kn_rma_wait_win(w, -1) : KNIT_ERR_INVAL;
}

knit_status_t knit_rma_barrier(knit_win_t *w)
{
    if (!w)
        return KNIT_ERR_INVAL;
    if (w->defer) { /* what it held goes to each target now, as one message */
        knit_status_t st = kn_rma_wait_reqs(w, -1);
        knit_status_t st2 = kn_rma_defer_barrier(w);
        return st != KNIT_OK ? st : st2;
    }
    knit_status_t st = kn_rma_wait_win(w, -1);
    knit_status_t st2 = knit_barrier(w->comm);
    return st != KNIT_OK ? st : st2;
}

/* ------------------------------------------------------------ direct */

/* Within a node, the target's window in memory this process maps (the
 * peer's shared heap; oneself): plain copies, block by block. */
static int direct_mapped(kn_tl_t *tl, int job, const xfer_t *x)
{
    if (!tl->ops->map || x->segs || kn_mem_implausible((void *)(uintptr_t)x->laddr, x->lext))
        return 0;
    char *r = tl->ops->map(tl, job, x->raddr, x->rext);
    if (!r)
        return 0;
    char *l = (char *)(uintptr_t)x->laddr;
    int put = x->kind == KN_RMA_K_PUT;
    const kn_rma_desc_t *ld = &x->ldesc, *rd = &x->rdesc;
    int64_t idx[KN_RMA_MOD_LEVELS + 1] = {0};
    uint64_t lo = 0, ro = 0, bs = x->bsize;
    for (uint64_t b = 0; b < x->nblocks; b++) {
        char *d = put ? r + ro : l + lo, *sp = put ? l + lo : r + ro;
        switch (bs) { /* the small sizes as single moves */
        case 4: { uint32_t v; memcpy(&v, sp, 4); memcpy(d, &v, 4); break; }
        case 8: { uint64_t v; memcpy(&v, sp, 8); memcpy(d, &v, 8); break; }
        case 16: { char v[16]; memcpy(v, sp, 16); memcpy(d, v, 16); break; }
        default: memmove(d, sp, bs);
        }
        for (uint32_t i = 1; i <= ld->levels; i++) {
            lo += (uint64_t)ld->stride[i - 1];
            ro += (uint64_t)rd->stride[i - 1];
            if (++idx[i] < ld->count[i])
                break;
            lo -= (uint64_t)ld->count[i] * (uint64_t)ld->stride[i - 1];
            ro -= (uint64_t)rd->count[i] * (uint64_t)rd->stride[i - 1];
            idx[i] = 0;
        }
    }
    return 1;
}

/* Within a node: the transport's vectored copy, KN_RMA_IOV pieces a side
 * per call (a side's contiguous pieces merged). */
#define KN_RMA_IOV 1024

static knit_status_t direct_vec(kn_tl_t *tl, int job, const xfer_t *x)
{
    int write = x->kind == KN_RMA_K_PUT;
    struct iovec *lv = malloc(2 * KN_RMA_IOV * sizeof(*lv));
    if (!lv)
        return KNIT_ERR_NOMEM;
    struct iovec *rv = lv + KN_RMA_IOV;
    kn_rma_cur_t lc, rc;
    cur_local(&lc, x);
    cur_remote(&rc, x);
    int nl = 0, nr = 0;
    knit_status_t st = KNIT_OK;
    for (;;) {
        uint64_t la = 0, ra = 0;
        uint64_t n = kn_rma_cur_pair(&lc, &rc, UINT64_MAX, &la, &ra);
        int lmerge = n && nl && (char *)lv[nl - 1].iov_base + lv[nl - 1].iov_len == (char *)(uintptr_t)la;
        int rmerge = n && nr && (char *)rv[nr - 1].iov_base + rv[nr - 1].iov_len == (char *)(uintptr_t)ra;
        if (!n || (!lmerge && nl == KN_RMA_IOV) || (!rmerge && nr == KN_RMA_IOV)) {
            if (nl && (st = tl->ops->rwv(tl, job, write, lv, nl, rv, nr)) != KNIT_OK)
                break;
            nl = nr = 0;
            lmerge = rmerge = 0;
            if (!n)
                break;
        }
        if (lmerge)
            lv[nl - 1].iov_len += n;
        else
            lv[nl++] = (struct iovec){(void *)(uintptr_t)la, n};
        if (rmerge)
            rv[nr - 1].iov_len += n;
        else
            rv[nr++] = (struct iovec){(void *)(uintptr_t)ra, n};
    }
    if (st == KNIT_ERR_FAULT) { /* whose: ours, or the target's */
        int ours = 0;
        for (int i = 0; i < nl && !ours; i++)
            ours = kn_mem_check(lv[i].iov_base, lv[i].iov_len, !write) == 0;
        st = ours ? KNIT_ERR_FAULT : KNIT_ERR_PEER_FAULT;
    }
    free(lv);
    return st;
}

static void dcomp_done(kn_tl_comp_t *c, knit_status_t st)
{
    knit_rma_req_t *r = ((dcomp_t *)c)->r;
    if (st != KNIT_OK && r->status == KNIT_OK)
        r->status = st;
    r->pending--;
}

/* Between nodes: one RDMA per piece, all issued now (the transport keeps
 * what the provider cannot take yet). */
static knit_status_t direct_rdma(kn_tl_t *tl, int job, uint64_t rkey, const xfer_t *x, knit_rma_req_t *r)
{
    r->comps = calloc(x->nblocks ? x->nblocks : 1, sizeof(dcomp_t));
    if (!r->comps)
        return KNIT_ERR_NOMEM;
    kn_rma_cur_t lc, rc;
    cur_local(&lc, x);
    cur_remote(&rc, x);
    size_t i = 0;
    for (;;) {
        uint64_t la = 0, ra = 0;
        uint64_t n = kn_rma_cur_pair(&lc, &rc, UINT64_MAX, &la, &ra);
        if (!n)
            break;
        if (i == x->nblocks) { /* more pieces than blocks: cannot be (same counts both sides) */
            r->status = KNIT_ERR_INVAL;
            break;
        }
        if (kn_unlikely(kn_mem_implausible((void *)(uintptr_t)la, n)) &&
            kn_mem_check((void *)(uintptr_t)la, n, x->kind == KN_RMA_K_GET) == 0) {
            r->status = KNIT_ERR_FAULT; /* the provider would copy it in this process */
            break;
        }
        dcomp_t *c = &r->comps[i++];
        c->c.cb = dcomp_done;
        c->r = r;
        knit_status_t st = x->kind == KN_RMA_K_PUT
                               ? (tl->ops->put_remote ? tl->ops->put_remote : tl->ops->put)(
                                     tl, job, (void *)(uintptr_t)la, n, ra, rkey, &c->c)
                               : tl->ops->get(tl, job, (void *)(uintptr_t)la, n, ra, rkey, &c->c);
        if (st == KNIT_INPROGRESS) {
            r->pending++;
        } else if (st != KNIT_OK) {
            r->status = st;
            break;
        }
    }
    return KNIT_OK;
}

/* ------------------------------------------------------------ agent, pack */

static knit_status_t via_agent(knit_win_t *w, int rank, xfer_t *x, unsigned method, int local, knit_rma_req_t *r)
{
    const kn_rma_peer_t *p = &w->peer[rank];
    int pack = method == KNIT_RMA_PACK && x->kind != KN_RMA_K_RMW && x->nblocks > 1;
    size_t nseg = x->segs ? x->nseg : 0;
    size_t len = sizeof(kn_rma_mreq_t) + nseg * sizeof(kn_rma_seg_t);
    kn_rma_mreq_t *q = calloc(1, len);
    if (!q)
        return KNIT_ERR_NOMEM;
    q->version = KN_RMA_MOD_VERSION;
    q->kind = (uint8_t)x->kind;
    q->form = x->segs ? KN_RMA_F_LIST : KN_RMA_F_STRIDED;
    q->target = p->job;
    q->target_node = knit_node_of(kn_rma.ctx, p->job);
    q->total = x->total;
    q->laddr = x->laddr;
    q->raddr = x->raddr;
    q->nseg = nseg;
    q->ldesc = x->ldesc;
    q->rdesc = x->rdesc;
    q->dtype = (uint32_t)x->acc.dtype;
    q->op = x->kind == KN_RMA_K_RMW ? x->aop : (uint32_t)x->acc.op;
    if (x->acc.scale) {
        q->has_scale = 1;
        memcpy(q->scale, x->acc.scale, knit_dtype_size(x->acc.dtype));
    }
    q->operand = x->operand;
    q->compare = x->compare;
    q->resaddr = x->resaddr;
    q->lockaddr = x->lockaddr;
    if (local && (x->kind == KN_RMA_K_PUT || x->kind == KN_RMA_K_ACC)) {
        q->flags |= KN_RMA_MF_LOCAL;
        kn_rma.early = 1;
    }
    if (nseg)
        memcpy(q + 1, x->segs, nseg * sizeof(kn_rma_seg_t));
    if (pack && !kn_rma_local_plausible(x)) {
        free(q);
        return KNIT_ERR_FAULT;
    }
    if (pack) { /* the origin side becomes one buffer */
        r->bounce = malloc(x->total);
        if (!r->bounce) {
            free(q);
            return KNIT_ERR_NOMEM;
        }
        kn_rma_seg_t *s = (kn_rma_seg_t *)(q + 1);
        uint64_t off = 0;
        if (nseg) {
            for (size_t i = 0; i < nseg; off += s[i].len, i++)
                s[i].laddr = (uint64_t)(uintptr_t)r->bounce + off;
        } else {
            memset(&q->ldesc, 0, sizeof(q->ldesc));
            q->ldesc.count[0] = (int64_t)x->total;
            q->laddr = (uint64_t)(uintptr_t)r->bounce;
        }
        if (x->kind == KN_RMA_K_GET) {
            r->unpack = *x; /* the local side, to unpack into once the data is here */
            x->segs = NULL; /* the request owns the list now */
            r->unpacking = 1;
        } else {
            kn_rma_cur_t c;
            cur_local(&c, x);
            uint64_t addr = 0, n;
            off = 0;
            while ((n = kn_rma_cur_next(&c, UINT64_MAX, &addr))) {
                memcpy(r->bounce + off, (const void *)(uintptr_t)addr, n);
                off += n;
            }
        }
    }
    knit_status_t st = submit(q, len, &r->mreq);
    if (st == KNIT_OK)
        r->args = q; /* the agent reads it until the request completes */
    else
        free(q);
    return st;
}

/* ------------------------------------------------------------ atomics here */

/* The target's memory mapped here, where the node's ranks and its agent
 * change it with atomic instructions (its shared heap: rma_mod.h). */
static void *amap(kn_tl_t *tl, int job, uint64_t addr, uint64_t len)
{
    if (job == kn_rma.rank)
        return kn_heap_holds((void *)(uintptr_t)addr, len) ? (void *)(uintptr_t)addr : NULL;
    return tl && tl->ops->map ? tl->ops->map(tl, job, addr, len) : NULL;
}

/* Take a lock word that ranks of one node and their agent share: spin a
 * little, then yield, then sleep (up to 1 ms) between tries. */
static void lock_wait(uint64_t *l)
{
    for (unsigned round = 0; !kn_rma_lock_try(l); round++) {
        if (round < 64)
            __builtin_ia32_pause();
        else if (round < 96)
            sched_yield();
        else
            nanosleep(&(struct timespec){0, 1000L << (round < 106 ? round - 96 : 10)}, NULL);
    }
}


/* An accumulate's origin piece as the combining reads it: in place, or
 * copied to tmp where it is to be scaled (in place) or is not aligned to
 * its elements. */
static void *acc_in(const xfer_t *x, uint64_t la, uint64_t n, char *tmp)
{
    if (!x->acc.scale && la % knit_dtype_size(x->acc.dtype) == 0)
        return (void *)(uintptr_t)la; /* (read only: no scale) */
    memcpy(tmp, (const void *)(uintptr_t)la, n);
    return tmp;
}
/* An accumulate, get-accumulate or atomic whose target memory is all
 * mapped here, as is the target's accumulate lock: done here under the
 * lock (rma_mod.h), no agent.  0: not such memory; 1: done, *st its
 * status. */
static int locked_here(kn_tl_t *tl, int job, const xfer_t *x, uint64_t *result, knit_status_t *st)
{
    uint64_t *l = x->lockaddr ? amap(tl, job, x->lockaddr, sizeof(uint64_t)) : NULL;
    if (!l || (uintptr_t)l % sizeof(uint64_t))
        return 0;
    if (x->kind == KN_RMA_K_RMW) {
        size_t es = knit_dtype_size(x->acc.dtype);
        char *p = amap(tl, job, x->raddr, es);
        uint64_t old = 0, nv;
        if (!p)
            return 0;
        lock_wait(l);
        memcpy(&old, p, es); /* little-endian: the low bytes */
        int ok = kn_rma_rmw(x->aop, es, old, x->operand, x->compare, &nv);
        if (ok && nv != old)
            memcpy(p, &nv, es);
        kn_rma_unlock(l);
        *result = old;
        *st = ok ? KNIT_OK : KNIT_ERR_INVAL;
        return 1;
    }
    _Alignas(16) char tmp[4096]; /* a multiple of every element size */
    kn_rma_cur_t lc, rc;
    uint64_t la, ra, n, off = 0, held = 0;
    cur_local(&lc, x);
    cur_remote(&rc, x);
    while ((n = kn_rma_cur_pair(&lc, &rc, sizeof(tmp), &la, &ra)))
        if (!amap(tl, job, ra, n))
            return 0;
    if (!kn_rma_local_plausible(x) ||
        (x->kind == KN_RMA_K_GACC && kn_mem_implausible((void *)(uintptr_t)x->resaddr, x->total))) {
        *st = KNIT_ERR_FAULT;
        return 1;
    }
    *st = KNIT_OK;
    cur_local(&lc, x);
    cur_remote(&rc, x);
    lock_wait(l);
    while (*st == KNIT_OK && (n = kn_rma_cur_pair(&lc, &rc, sizeof(tmp), &la, &ra))) {
        char *p = amap(tl, job, ra, n);
        if (x->kind == KN_RMA_K_GACC)
            memcpy((char *)(uintptr_t)x->resaddr + off, p, n);
        off += n;
        if (x->acc.op != KNIT_OP_NO_OP &&
            !kn_rma_combine(acc_in(x, la, n, tmp), p, n, (uint32_t)x->acc.dtype, (uint32_t)x->acc.op, x->acc.scale))
            *st = KNIT_ERR_INVAL;
        if ((held += n) >= KN_RMA_LOCK_SPAN) { /* let the others in now and then */
            kn_rma_unlock(l);
            held = 0;
            lock_wait(l);
        }
    }
    kn_rma_unlock(l);
    return 1;
}

/* ------------------------------------------------------------ local (no agents) */

/* An accumulate, get-accumulate or atomic to oneself where there are no
 * agents: nothing else in the job can reach this memory meanwhile. */
static knit_status_t local_acc(const xfer_t *x, knit_rma_req_t *r)
{
    if (x->kind == KN_RMA_K_RMW) {
        size_t es = knit_dtype_size(x->acc.dtype);
        uint64_t old = 0, nv;
        memcpy(&old, (void *)(uintptr_t)x->raddr, es);
        if (!kn_rma_rmw(x->aop, es, old, x->operand, x->compare, &nv))
            return KNIT_ERR_INVAL;
        memcpy((void *)(uintptr_t)x->raddr, &nv, es);
        r->result = old;
        return KNIT_OK;
    }
    kn_rma_cur_t lc, rc;
    cur_local(&lc, x);
    cur_remote(&rc, x);
    _Alignas(16) char tmp[4096]; /* a multiple of every element size */
    uint64_t la, ra, n, off = 0;
    while ((n = kn_rma_cur_pair(&lc, &rc, sizeof(tmp), &la, &ra))) {
        if (x->kind == KN_RMA_K_GACC) {
            memcpy((char *)(uintptr_t)x->resaddr + off, (void *)(uintptr_t)ra, n);
            off += n;
            if (x->acc.op == KNIT_OP_NO_OP)
                continue;
        }
        if (!kn_rma_combine(acc_in(x, la, n, tmp), (void *)(uintptr_t)ra, n, (uint32_t)x->acc.dtype,
                            (uint32_t)x->acc.op, x->acc.scale))
            return KNIT_ERR_INVAL;
    }
    return KNIT_OK;
}

/* ------------------------------------------------------------ the entry */

static int in_window(const knit_win_t *w, int rank, uint64_t addr, uint64_t extent)
{
    const kn_rma_peer_t *p = &w->peer[rank];
    return addr >= p->base && extent <= p->size && addr - p->base <= p->size - extent;
}

/* What completes within the call, with no request: a contiguous put or
 * get the direct method copies through memory mapped here, and an
 * accumulate or atomic done here under the target's accumulate lock.  1:
 * done (*st, *result for an atomic); 0: the general path. */
static int quick(knit_win_t *w, int rank, xfer_t *x, unsigned flags, knit_status_t *st, uint64_t *result)
{
    int job = w->peer[rank].job;
    kn_tl_t *tl = kn_p2p_tl(kn_rma.p2p, job);
    if (!tl || !x->total)
        return 0;
    if (x->kind == KN_RMA_K_ACC || x->kind == KN_RMA_K_RMW || x->kind == KN_RMA_K_GACC) {
        x->lockaddr = w->peer[rank].acclock;
        return locked_here(tl, job, x, result, st);
    }
    void *l = (void *)(uintptr_t)x->laddr;
    if (x->segs || x->nblocks != 1 || !tl->ops->map || kn_mem_implausible(l, x->total) ||
        knit_rma_method_of(w, flags, rank, l, x->bsize, 1) != KNIT_RMA_DIRECT)
        return 0;
    char *p = tl->ops->map(tl, job, x->raddr, x->total);
    if (!p)
        return 0;
    if (x->kind == KN_RMA_K_PUT)
        memcpy(p, l, x->total);
    else
        memcpy(l, p, x->total);
    *st = KNIT_OK;
    return 1;
}

knit_status_t kn_rma_start(knit_win_t *w, int rank, xfer_t *x, unsigned flags, knit_rma_req_t **out)
{
    knit_status_t qst;
    uint64_t qres = 0;
    /* (an atomic's caller tried quick already: it wants the result) */
    if (x->kind != KN_RMA_K_RMW && quick(w, rank, x, flags, &qst, &qres)) {
        free(x->segs);
        if (out)
            *out = NULL; /* complete already */
        return qst;
    }
    if (x->kind == KN_RMA_K_ACC || x->kind == KN_RMA_K_RMW || x->kind == KN_RMA_K_GACC)
        x->lockaddr = w->peer[rank].acclock; /* for the agent */
    knit_rma_req_t *r = calloc(1, sizeof(*r));
    if (!r) {
        free(x->segs);
        return KNIT_ERR_NOMEM;
    }
    r->win = w;
    r->rank = rank;
    r->starting = 1; /* waits for room at the agent (any_cond) must not take it for done */
    kn_list_push_back(&w->reqs, &r->wlink);
    kn_list_push_back(&kn_rma.open, &r->olink);
    kn_rma.nopen++;
    int job = w->peer[rank].job;
    int self = job == kn_rma.rank;
    knit_status_t st = KNIT_OK;
    if (!x->total) {
        /* nothing to move */
    } else if (x->kind == KN_RMA_K_ACC || x->kind == KN_RMA_K_RMW || x->kind == KN_RMA_K_GACC) {
        if (kn_rma.mod)
            st = via_agent(w, rank, x,
                           (flags & KNIT_RMA_METHOD_MASK) == KNIT_RMA_PACK && x->kind == KN_RMA_K_ACC ? KNIT_RMA_PACK
                                                                                                     : KNIT_RMA_AGENT,
                           (flags & KNIT_RMA_LOCAL) != 0, r);
        else if (self)
            st = local_acc(x, r);
        else {
            kn_error("%s to rank %d: accumulates and atomics are done by the node agents, but %s (docs/rma.md)",
                     x->kind == KN_RMA_K_RMW ? "atomic" : "accumulate", rank, kn_rma.why_no_agent);
            st = KNIT_ERR_NOT_SUPPORTED;
        }
    } else {
        unsigned m = knit_rma_method_of(w, flags, rank, x->segs ? (void *)(uintptr_t)x->segs[0].laddr
                                                                : (void *)(uintptr_t)x->laddr,
                                        x->bsize, x->nblocks);
        kn_tl_t *tl = kn_p2p_tl(kn_rma.p2p, job);
        if (m == KNIT_RMA_DIRECT) {
            if (tl && direct_mapped(tl, job, x))
                st = KNIT_OK;
            else if (tl && tl->ops->rwv)
                st = direct_vec(tl, job, x);
            else if (tl && tl->ops->put && (tl->ops->caps(tl, job) & KN_TL_CAP_RMA) && !w->dynamic)
                st = direct_rdma(tl, job, w->peer[rank].rkey, x, r);
            else
                st = KNIT_ERR_NOT_SUPPORTED;
        } else if (!kn_rma.mod) {
            kn_error("the %s method to rank %d: %s", knit_rma_method_name(m), rank, kn_rma.why_no_agent);
            st = KNIT_ERR_NOT_SUPPORTED;
        } else {
            st = via_agent(w, rank, x, m, (flags & KNIT_RMA_LOCAL) != 0, r);
        }
    }
    free(x->segs);
    r->starting = 0;
    if (st != KNIT_OK && r->mreq == NULL && r->pending == 0) { /* failed at once: no request */
        finish(r, st);
        req_free(r);
        return st;
    }
    if (st != KNIT_OK)
        r->status = st;
    if (!r->mreq && !r->pending)
        finish(r, r->status);
    if (out) {
        *out = r;
        return KNIT_OK;
    }
    st = wait_one(r);
    req_free(r);
    return st;
}

/* A call, checked and described: after what earlier barriers brought
 * rank, held for the next synchronization, or started (after what rank
 * has held: in order). */
static knit_status_t run(knit_win_t *w, int rank, xfer_t *x, unsigned flags, knit_rma_req_t **out)
{
    int held = 0;
    knit_status_t st = w->defer ? kn_rma_defer_put(w, rank, x, flags, &held) : KNIT_OK;
    if (st == KNIT_OK && !held) /* (a held one goes with the next barrier's messages: in order) */
        st = kn_rma_settled(w, rank);
    if (st == KNIT_OK && !held)
        st = kn_rma_defer_flush(w, rank);
    if (st != KNIT_OK || held) {
        free(x->segs);
        if (out)
            *out = NULL; /* held: complete as the call's flags ask (the source is ours again) */
        return st;
    }
    return kn_rma_start(w, rank, x, flags, out);
}

/* Check and describe a strided call; src and dst as the caller named
 * them (the remote one in rank's window). */
static knit_status_t strided(knit_win_t *w, int kind, const void *src, const int64_t *sstride, const void *dst,
                             const int64_t *dstride, const int64_t *count, int levels, int rank, xfer_t *x)
{
    if (!w || rank < 0 || rank >= w->n || levels < 0 || levels > KNIT_RMA_MAX_LEVELS || !count ||
        (levels && (!sstride || !dstride)))
        return KNIT_ERR_INVAL;
    kn_mem_zero(x, sizeof(*x)); /* not an inlined `rep stos` (util/mem.h) */
    x->kind = kind;
    int put = kind != KN_RMA_K_GET;
    const int64_t *lstride = put ? sstride : dstride, *rstride = put ? dstride : sstride;
    x->laddr = (uint64_t)(uintptr_t)(put ? src : dst);
    x->raddr = (uint64_t)(uintptr_t)(put ? dst : src);
    x->ldesc.levels = x->rdesc.levels = (uint32_t)levels;
    uint64_t blocks = 1, extent = 0;
    for (int i = 0; i <= levels; i++) {
        if (count[i] < 0 || (i < levels && (sstride[i] < 0 || dstride[i] < 0)))
            return KNIT_ERR_INVAL;
        x->ldesc.count[i] = x->rdesc.count[i] = count[i];
        if (i < levels) {
            x->ldesc.stride[i] = lstride[i];
            x->rdesc.stride[i] = rstride[i];
        }
        if (i) {
            if (count[i] && blocks > UINT64_MAX / (uint64_t)count[i])
                return KNIT_ERR_RANGE;
            blocks *= (uint64_t)count[i];
        }
    }
    x->bsize = (uint64_t)count[0];
    x->nblocks = count[0] ? blocks : 0;
    if (x->nblocks && x->bsize > UINT64_MAX / x->nblocks)
        return KNIT_ERR_RANGE;
    x->total = x->bsize * x->nblocks;
    if (!x->total)
        return KNIT_OK;
    extent = x->bsize;
    uint64_t lext = x->bsize;
    for (int i = 1; i <= levels; i++) {
        uint64_t reach = (uint64_t)(count[i] - 1) * (uint64_t)rstride[i - 1];
        uint64_t lreach = (uint64_t)(count[i] - 1) * (uint64_t)lstride[i - 1];
        if ((rstride[i - 1] && reach / (uint64_t)rstride[i - 1] != (uint64_t)(count[i] - 1)) ||
            (lstride[i - 1] && lreach / (uint64_t)lstride[i - 1] != (uint64_t)(count[i] - 1)))
            return KNIT_ERR_RANGE;
        extent += reach;
        lext += lreach;
    }
    x->rext = extent;
    x->lext = lext;
    if (!in_window(w, rank, x->raddr, extent)) {
        kn_error("one-sided %s of %llu bytes at %#llx in rank %d: outside its window [%#llx, +%llu)",
                 kind == KN_RMA_K_GET ? "get" : kind == KN_RMA_K_ACC ? "accumulate" : "put",
                 (unsigned long long)extent, (unsigned long long)x->raddr, rank,
                 (unsigned long long)w->peer[rank].base, (unsigned long long)w->peer[rank].size);
        return KNIT_ERR_RANGE;
    }
    return KNIT_OK;
}

static knit_status_t vector(knit_win_t *w, int kind, const knit_rma_iov_t *iov, int niov, int rank, xfer_t *x)
{
    if (!w || rank < 0 || rank >= w->n || niov < 0 || (niov && !iov))
        return KNIT_ERR_INVAL;
    kn_mem_zero(x, sizeof(*x)); /* not an inlined `rep stos` (util/mem.h) */
    x->kind = kind;
    uint64_t nseg = 0;
    for (int i = 0; i < niov; i++) {
        if (iov[i].n < 0 || iov[i].bytes < 0 || (iov[i].n && (!iov[i].src || !iov[i].dst)))
            return KNIT_ERR_INVAL;
        if (iov[i].bytes)
            nseg += (uint64_t)iov[i].n;
    }
    x->segs = malloc((nseg ? nseg : 1) * sizeof(kn_rma_seg_t));
    if (!x->segs)
        return KNIT_ERR_NOMEM;
    int put = kind != KN_RMA_K_GET;
    uint64_t k = 0;
    for (int i = 0; i < niov; i++) {
        if (!iov[i].bytes)
            continue;
        for (int64_t j = 0; j < iov[i].n; j++) {
            kn_rma_seg_t *s = &x->segs[k++];
            s->laddr = (uint64_t)(uintptr_t)(put ? iov[i].src[j] : iov[i].dst[j]);
            s->raddr = (uint64_t)(uintptr_t)(put ? iov[i].dst[j] : iov[i].src[j]);
            s->len = (uint64_t)iov[i].bytes;
            x->total += s->len;
            if (!in_window(w, rank, s->raddr, s->len)) {
                kn_error("one-sided vector %s: %llu bytes at %#llx in rank %d: outside its window",
                         put ? "put" : "get", (unsigned long long)s->len, (unsigned long long)s->raddr, rank);
                free(x->segs);
                x->segs = NULL;
                return KNIT_ERR_RANGE;
            }
        }
    }
    x->nseg = x->nblocks = nseg;
    x->bsize = nseg ? x->total / nseg : 0;
    return KNIT_OK;
}

/* A list of (local, remote, bytes) pieces. */
_Static_assert(sizeof(knit_rma_seg_t) == sizeof(kn_rma_seg_t), "one layout for both");
static knit_status_t list(knit_win_t *w, int kind, const knit_rma_seg_t *segs, size_t n, int rank, xfer_t *x)
{
    if (!w || rank < 0 || rank >= w->n || (n && !segs))
        return KNIT_ERR_INVAL;
    kn_mem_zero(x, sizeof(*x)); /* not an inlined `rep stos` (util/mem.h) */
    x->kind = kind;
    x->segs = malloc((n ? n : 1) * sizeof(kn_rma_seg_t));
    if (!x->segs)
        return KNIT_ERR_NOMEM;
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!segs[i].len)
            continue;
        kn_rma_seg_t *s = &x->segs[k++];
        s->laddr = segs[i].local;
        s->raddr = segs[i].remote;
        s->len = segs[i].len;
        if (s->len > UINT64_MAX - x->total)
            return KNIT_ERR_RANGE;
        x->total += s->len;
        if (!in_window(w, rank, s->raddr, s->len)) {
            kn_error("one-sided %s: %llu bytes at %#llx in rank %d: outside its window",
                     kind == KN_RMA_K_GET ? "get" : kind == KN_RMA_K_PUT ? "put" : "accumulate",
                     (unsigned long long)s->len, (unsigned long long)s->raddr, rank);
            return KNIT_ERR_RANGE;
        }
    }
    x->nseg = x->nblocks = k;
    x->bsize = k ? x->total / k : 0;
    return KNIT_OK;
}

/* An accumulate's type and op: every block a whole number of elements. */
static knit_status_t acc_check(const knit_rma_acc_t *acc, xfer_t *x)
{
    if (!acc || (unsigned)acc->dtype >= KNIT_DTYPE_COUNT)
        return KNIT_ERR_INVAL;
    size_t es = knit_dtype_size(acc->dtype);
    if (acc->op != KNIT_OP_REPLACE && (acc->op != KNIT_OP_NO_OP || x->kind != KN_RMA_K_GACC) &&
        !kn_coll_reduce_fn(acc->op, acc->dtype))
        return KNIT_ERR_INVAL;
    if (acc->scale) {
        uint8_t probe[KN_RMA_MOD_SCALE] = {0};
        if (acc->op != KNIT_OP_SUM || !kn_rma_scale(probe, 0, acc->dtype, probe))
            return KNIT_ERR_INVAL;
    }
    if (x->segs) {
        for (uint64_t i = 0; i < x->nseg; i++)
            if (x->segs[i].len % es)
                return KNIT_ERR_INVAL;
    } else if (x->bsize % es) {
        return KNIT_ERR_INVAL;
    }
    x->acc = *acc;
    return KNIT_OK;
}

/* A get-accumulate's: the accumulate's, and somewhere for the result. */
static knit_status_t gacc_check(const knit_rma_acc_t *acc, void *result, xfer_t *x)
{
    if (!result && x->total)
        return KNIT_ERR_INVAL;
    x->resaddr = (uint64_t)(uintptr_t)result;
    return acc_check(acc, x);
}

#define KN_RMA_RUN(describe, extra)                                                                    \
    do {                                                                                               \
        xfer_t x; /* the describing call sets every field */                                          \
        x.segs = NULL;                                                                                 \
        knit_status_t st_ = (describe);                                                                \
        if (st_ == KNIT_OK)                                                                            \
            st_ = (extra);                                                                             \
        if (st_ != KNIT_OK) {                                                                          \
            free(x.segs);                                                                              \
            return st_;                                                                                \
        }                                                                                              \
        return run(w, rank, &x, flags, req);                                                           \
    } while (0)

knit_status_t knit_put(knit_win_t *w, const void *src, void *dst, size_t len, int rank, unsigned flags,
                       knit_rma_req_t **req)
{
    int64_t count = (int64_t)len;
    KN_RMA_RUN(strided(w, KN_RMA_K_PUT, src, NULL, dst, NULL, &count, 0, rank, &x), KNIT_OK);
}

knit_status_t knit_get(knit_win_t *w, void *dst, const void *src, size_t len, int rank, unsigned flags,
                       knit_rma_req_t **req)
{
    int64_t count = (int64_t)len;
    KN_RMA_RUN(strided(w, KN_RMA_K_GET, src, NULL, dst, NULL, &count, 0, rank, &x), KNIT_OK);
}

knit_status_t knit_put_strided(knit_win_t *w, const void *src, const int64_t *src_stride, void *dst,
                               const int64_t *dst_stride, const int64_t *count, int levels, int rank,
                               unsigned flags, knit_rma_req_t **req)
{
    KN_RMA_RUN(strided(w, KN_RMA_K_PUT, src, src_stride, dst, dst_stride, count, levels, rank, &x), KNIT_OK);
}

knit_status_t knit_get_strided(knit_win_t *w, void *dst, const int64_t *dst_stride, const void *src,
                               const int64_t *src_stride, const int64_t *count, int levels, int rank,
                               unsigned flags, knit_rma_req_t **req)
{
    KN_RMA_RUN(strided(w, KN_RMA_K_GET, src, src_stride, dst, dst_stride, count, levels, rank, &x), KNIT_OK);
}

knit_status_t knit_put_vector(knit_win_t *w, const knit_rma_iov_t *iov, int niov, int rank, unsigned flags,
                              knit_rma_req_t **req)
{
    KN_RMA_RUN(vector(w, KN_RMA_K_PUT, iov, niov, rank, &x), KNIT_OK);
}

knit_status_t knit_get_vector(knit_win_t *w, const knit_rma_iov_t *iov, int niov, int rank, unsigned flags,
                              knit_rma_req_t **req)
{
    KN_RMA_RUN(vector(w, KN_RMA_K_GET, iov, niov, rank, &x), KNIT_OK);
}

knit_status_t knit_acc(knit_win_t *w, const knit_rma_acc_t *acc, const void *src, void *dst, size_t len, int rank,
                       unsigned flags, knit_rma_req_t **req)
{
    int64_t count = (int64_t)len;
    KN_RMA_RUN(strided(w, KN_RMA_K_ACC, src, NULL, dst, NULL, &count, 0, rank, &x), acc_check(acc, &x));
}

knit_status_t knit_acc_strided(knit_win_t *w, const knit_rma_acc_t *acc, const void *src, const int64_t *src_stride,
                               void *dst, const int64_t *dst_stride, const int64_t *count, int levels, int rank,
                               unsigned flags, knit_rma_req_t **req)
{
    KN_RMA_RUN(strided(w, KN_RMA_K_ACC, src, src_stride, dst, dst_stride, count, levels, rank, &x),
               acc_check(acc, &x));
}

knit_status_t knit_acc_vector(knit_win_t *w, const knit_rma_acc_t *acc, const knit_rma_iov_t *iov, int niov,
                              int rank, unsigned flags, knit_rma_req_t **req)
{
    KN_RMA_RUN(vector(w, KN_RMA_K_ACC, iov, niov, rank, &x), acc_check(acc, &x));
}

knit_status_t knit_put_list(knit_win_t *w, const knit_rma_seg_t *segs, size_t n, int rank, unsigned flags,
                            knit_rma_req_t **req)
{
    KN_RMA_RUN(list(w, KN_RMA_K_PUT, segs, n, rank, &x), KNIT_OK);
}

knit_status_t knit_get_list(knit_win_t *w, const knit_rma_seg_t *segs, size_t n, int rank, unsigned flags,
                            knit_rma_req_t **req)
{
    KN_RMA_RUN(list(w, KN_RMA_K_GET, segs, n, rank, &x), KNIT_OK);
}

knit_status_t knit_acc_list(knit_win_t *w, const knit_rma_acc_t *acc, const knit_rma_seg_t *segs, size_t n,
                            int rank, unsigned flags, knit_rma_req_t **req)
{
    KN_RMA_RUN(list(w, KN_RMA_K_ACC, segs, n, rank, &x), acc_check(acc, &x));
}

knit_status_t knit_gacc_list(knit_win_t *w, const knit_rma_acc_t *acc, const knit_rma_seg_t *segs, size_t n,
                             void *result, int rank, unsigned flags, knit_rma_req_t **req)
{
    flags &= ~KNIT_RMA_LOCAL; /* the result comes back: complete when it is here */
    KN_RMA_RUN(list(w, KN_RMA_K_GACC, segs, n, rank, &x), gacc_check(acc, result, &x));
}

knit_status_t knit_rma_atomic(knit_win_t *w, knit_rma_atomic_op_t op, knit_dtype_t dtype, void *remote,
                              const void *operand, const void *compare, void *result, int rank)
{
    if (!w || rank < 0 || rank >= w->n || (unsigned)dtype >= KNIT_DTYPE_COUNT || !operand || !result ||
        op < KNIT_RMA_FETCH_ADD || op > KNIT_RMA_CAS || (op == KNIT_RMA_CAS && !compare))
        return KNIT_ERR_INVAL;
    size_t es = knit_dtype_size(dtype);
    switch (dtype) {
    case KNIT_INT32: case KNIT_UINT32: case KNIT_INT: case KNIT_UINT: case KNIT_INT64: case KNIT_UINT64:
    case KNIT_LONG: case KNIT_ULONG: case KNIT_LONG_LONG: case KNIT_ULONG_LONG:
    case KNIT_BYTE: case KNIT_CHAR: case KNIT_SCHAR: case KNIT_UCHAR: case KNIT_INT8: case KNIT_UINT8:
    case KNIT_INT16: case KNIT_UINT16: case KNIT_SHORT: case KNIT_USHORT: case KNIT_C_BOOL:
        break;
    default:
        return KNIT_ERR_INVAL;
    }
    xfer_t x;
    kn_mem_zero(&x, sizeof(x)); /* not an inlined `rep stos` (util/mem.h) */
    x.kind = KN_RMA_K_RMW;
    x.raddr = (uint64_t)(uintptr_t)remote;
    x.total = x.bsize = es;
    x.nblocks = 1;
    x.aop = (uint32_t)op;
    x.acc.dtype = dtype;
    memcpy(&x.operand, operand, es);
    if (compare)
        memcpy(&x.compare, compare, es);
    if (!in_window(w, rank, x.raddr, es))
        return KNIT_ERR_RANGE;
    knit_status_t st = kn_rma_settled(w, rank);
    if (st == KNIT_OK)
        st = kn_rma_defer_flush(w, rank);
    if (st != KNIT_OK)
        return st;
    uint64_t old = 0;
    if (quick(w, rank, &x, KNIT_RMA_AGENT, &st, &old)) { /* done here, under the target's lock */
        if (st == KNIT_OK)
            memcpy(result, &old, es);
        return st;
    }
    knit_rma_req_t *r = NULL;
    st = kn_rma_start(w, rank, &x, KNIT_RMA_AGENT, &r);
    if (st != KNIT_OK)
        return st;
    st = wait_one(r);
    if (st == KNIT_OK)
        memcpy(result, &r->result, es);
    req_free(r);
    return st;
}
