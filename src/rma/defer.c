/*
 * Puts held for the window's next synchronization (docs/rma.md, "Puts
 * held for the barrier").
 *
 * Between nodes the agents carry a put (rank -> agent -> agent -> rank:
 * each hop a wake-up) so that it reaches a target that makes no knit
 * call.  A put that completes locally (KNIT_RMA_LOCAL: MPI_Put's and
 * ARMCI_Put's completion) need not be anywhere before the origin's next
 * fence, barrier or knit_win_free, and at a barrier every member is in
 * knit: the target itself can take the data, as a message, like Open
 * MPI's osc pt2pt and MPICH's ch3, which also hold operations until the
 * epoch closes.  So the auto method packs such a put to another node,
 * if it fits in KNIT_RMA_DEFER_MAX bytes with what that target already
 * holds, behind a record of its target layout (kn_rma_drec_t), and:
 *   knit_rma_barrier  sends each target one message of its records; the
 *                     members add up how many messages each one gets
 *                     (one allreduce, a reduce-scatter past 64 members:
 *                     a barrier too) and each receives and applies its
 *                     own (its window check turns away what lies
 *                     outside);
 *   anything else     (a fence, an operation to that target that is not
 *                     held, knit_win_free) sends the records through the
 *                     agents first, as the method would have.
 * A member leaves the barrier once it has applied its own messages,
 * while others may still apply theirs: an operation after the barrier
 * that reaches such a member other than by the next barrier's messages
 * (which it takes only after) first waits until the member's settle word
 * (in its window, read by its node's peers and its agent) says it is
 * done; MPI's fence epochs as messages use the same (kn_rma_settle).  Messages alternate between two
 * tags from one barrier to the next (a member cannot be two ahead: the
 * sum needs everyone), and carry the window's id, which every member
 * agreed on at creation.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "rma/rma.h"
#include "util/config.h"
#include "util/log.h"
#include "util/mem.h"

#define SENDER (1LL << 40)     /* above the counts: how many members sent anything */

struct kn_rma_pend {
    char *buf;
    size_t len, cap;
};

knit_status_t kn_rma_defer_new(knit_win_t *w, int n, int *can)
{
    w->pend = calloc((size_t)(n ? n : 1), sizeof(*w->pend));
    w->unsettled = calloc((size_t)(n ? n : 1), sizeof(*w->unsettled));
    /* the agents carry what a fence sends on */
    *can = kn_cfg.rma_defer_max > 0 && kn_rma.mod != NULL;
    return w->pend && w->unsettled ? KNIT_OK : KNIT_ERR_NOMEM;
}

void kn_rma_defer_decide(knit_win_t *w, int all_can)
{
    w->defer = 0;
    for (int i = 0; all_can && i < w->n; i++)
        if (knit_node_of(kn_rma.ctx, w->peer[i].job) != kn_rma.node)
            w->defer = 1; /* (every member sees one on another node, or none does) */
}

void kn_rma_defer_free(knit_win_t *w)
{
    for (int i = 0; w->pend && i < w->n; i++)
        free(w->pend[i].buf);
    free(w->pend);
    free(w->unsettled);
    w->pend = NULL;
    w->unsettled = NULL;
}

/* ------------------------------------------------------------ holding */

static int held_kind(const knit_win_t *w, int rank, const xfer_t *x, unsigned flags)
{
    unsigned m = flags & KNIT_RMA_METHOD_MASK;
    if (m == KNIT_RMA_DEFAULT)
        m = w->method;
    return x->kind == KN_RMA_K_PUT && (flags & KNIT_RMA_LOCAL) && m == KNIT_RMA_AUTO && x->total &&
           knit_node_of(kn_rma.ctx, w->peer[rank].job) != kn_rma.node;
}

knit_status_t kn_rma_defer_put(knit_win_t *w, int rank, const xfer_t *x, unsigned flags, int *held)
{
    *held = 0;
    if (!held_kind(w, rank, x, flags))
        return KNIT_OK;
    size_t max = kn_cfg.rma_defer_max;
    size_t meta = sizeof(kn_rma_drec_t) + (x->segs ? x->nseg * sizeof(kn_rma_dpiece_t) : 0);
    if (x->total > max || meta + KN_RMA_PAD8(x->total) > max || !kn_rma_local_plausible(x))
        return KNIT_OK; /* (an implausible buffer: the method's own path reports it) */
    size_t need = meta + KN_RMA_PAD8(x->total);
    struct kn_rma_pend *p = &w->pend[rank];
    if (w->held + need > max) { /* the window holds at most max bytes, over all its targets */
        knit_status_t st = kn_rma_defer_flush(w, -1);
        if (st != KNIT_OK)
            return st;
    }
    if (p->len + need > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->len + need)
            cap *= 2;
        char *nb = realloc(p->buf, cap);
        if (!nb)
            return KNIT_OK; /* the method's path, then */
        p->buf = nb;
        p->cap = cap;
    }
    char *at = p->buf + p->len;
    kn_rma_drec_t r;
    kn_mem_zero(&r, sizeof(r)); /* not an inlined `rep stos` (util/mem.h) */
    r.magic = KN_RMA_DREC_MAGIC;
    r.form = x->segs ? KN_RMA_F_LIST : KN_RMA_F_STRIDED;
    r.raddr = x->raddr;
    r.total = x->total;
    r.nseg = x->segs ? x->nseg : 0;
    r.rdesc = x->rdesc;
    memcpy(at, &r, sizeof(r));
    at += sizeof(r);
    for (uint64_t i = 0; i < r.nseg; i++, at += sizeof(kn_rma_dpiece_t))
        memcpy(at, &(kn_rma_dpiece_t){x->segs[i].raddr, x->segs[i].len}, sizeof(kn_rma_dpiece_t));
    if (x->segs) {
        for (uint64_t i = 0; i < x->nseg; at += x->segs[i].len, i++)
            memcpy(at, (const void *)(uintptr_t)x->segs[i].laddr, x->segs[i].len);
    } else {
        kn_rma_strided_gather(at, &x->ldesc, x->laddr);
    }
    p->len += need;
    w->held += need;
    *held = 1;
    return KNIT_OK;
}

/* ------------------------------------------------------------ through the agents */

/* What buf's records put, as one list of (data, target, len) pieces. */
static kn_rma_seg_t *pieces_of(const char *buf, size_t len, uint64_t *nseg, uint64_t *total)
{
    kn_rma_drec_t r;
    const kn_rma_dpiece_t *pc;
    const char *data;
    int bad;
    size_t off = 0;
    uint64_t n = 0;
    while (kn_rma_drec_next(buf, len, &off, &r, &pc, &data, &bad))
        n += r.form == KN_RMA_F_LIST ? r.nseg : kn_rma_desc_blocks(&r.rdesc);
    kn_rma_seg_t *s = malloc((n ? n : 1) * sizeof(*s));
    if (!s)
        return NULL;
    n = *total = off = 0;
    while (kn_rma_drec_next(buf, len, &off, &r, &pc, &data, &bad)) {
        uint64_t at = (uint64_t)(uintptr_t)data;
        if (r.form == KN_RMA_F_LIST) {
            for (uint64_t i = 0; i < r.nseg; at += pc[i].len, i++)
                s[n++] = (kn_rma_seg_t){.laddr = at, .raddr = pc[i].raddr, .len = pc[i].len};
        } else {
            kn_rma_cur_t c;
            kn_rma_cur_strided(&c, &r.rdesc, r.raddr);
            uint64_t ra = 0, k;
            while ((k = kn_rma_cur_next(&c, UINT64_MAX, &ra))) {
                s[n++] = (kn_rma_seg_t){.laddr = at, .raddr = ra, .len = k};
                at += k;
            }
        }
        *total += r.total;
    }
    *nseg = n;
    return s;
}

knit_status_t kn_rma_defer_flush(knit_win_t *w, int rank)
{
    if (!w->defer)
        return KNIT_OK;
    knit_status_t first = KNIT_OK;
    for (int t = rank < 0 ? 0 : rank; t < (rank < 0 ? w->n : rank + 1); t++) {
        struct kn_rma_pend *p = &w->pend[t];
        if (!p->len)
            continue;
        char *buf = p->buf;
        size_t len = p->len;
        *p = (struct kn_rma_pend){0}; /* taken: what starts below holds nothing more */
        w->held -= len;
        knit_status_t st = kn_rma_settled(w, t);
        xfer_t x;
        kn_mem_zero(&x, sizeof(x)); /* not an inlined `rep stos` (util/mem.h) */
        x.kind = KN_RMA_K_PUT;
        if (st == KNIT_OK && !(x.segs = pieces_of(buf, len, &x.nseg, &x.total)))
            st = KNIT_ERR_NOMEM;
        x.nblocks = x.nseg;
        x.bsize = x.nseg ? x.total / x.nseg : 0;
        /* one request to the agent for all of them; it returns once the
         * agent has read them (the buffer is ours again), the fence's
         * wait hears the rest */
        if (st == KNIT_OK)
            st = kn_rma_start(w, t, &x, KNIT_RMA_AGENT | KNIT_RMA_LOCAL, NULL);
        free(buf);
        if (first == KNIT_OK)
            first = st;
    }
    return first;
}

/* ------------------------------------------------------------ the barrier */

static int tag_of(const knit_win_t *w)
{
    return (int)((((uint64_t)w->id << 1) | (w->epoch & 1)) & KNIT_TAG_UB);
}

knit_status_t kn_rma_defer_barrier(knit_win_t *w)
{
    int n = w->n, tag = tag_of(w); /* (this barrier's: kn_rma_settle counts it) */
    long long *cnt = calloc((size_t)n, sizeof(long long)), sum[KN_RMA_SUM_ALL], nin = 0, senders = 0;
    knit_request_t **sr = calloc((size_t)n, sizeof(*sr));
    char **sb = calloc((size_t)n, sizeof(*sb));
    if (!cnt || !sr || !sb) {
        free(cnt);
        free(sr);
        free(sb);
        knit_status_t st = kn_rma_defer_flush(w, -1); /* the agents, then a plain barrier */
        knit_status_t st2 = knit_barrier(w->comm);
        return st != KNIT_OK ? st : st2;
    }
    knit_status_t first = KNIT_OK;
    for (int t = 0; t < n; t++) {
        struct kn_rma_pend *p = &w->pend[t];
        if (!p->len)
            continue;
        sb[t] = p->buf;
        knit_status_t st = knit_isend(kn_rma.ctx, p->buf, p->len, w->peer[t].job, tag, KN_RMA_CTX, &sr[t]);
        w->held -= p->len;
        *p = (struct kn_rma_pend){0};
        if (st == KNIT_OK)
            cnt[t] = 1;
        else if (first == KNIT_OK)
            first = st;
    }
    knit_status_t cs = kn_rma_sum_counts(w->comm, cnt, sum, &nin, &senders);
    for (long long i = 0; cs == KNIT_OK && i < nin; i++) {
        knit_msg_status_t ms;
        knit_status_t st = knit_probe(kn_rma.ctx, KNIT_ANY_SOURCE, tag, KN_RMA_CTX, &ms);
        char *buf = NULL;
        if (st == KNIT_OK && !(buf = malloc(ms.msg_length ? ms.msg_length : 1))) {
            st = KNIT_ERR_NOMEM; /* (taken off the queue all the same) */
            knit_recv(kn_rma.ctx, NULL, 0, ms.source, tag, KN_RMA_CTX, NULL);
        } else if (st == KNIT_OK) {
            st = knit_recv(kn_rma.ctx, buf, ms.msg_length, ms.source, tag, KN_RMA_CTX, NULL);
        }
        if (st == KNIT_OK)
            st = kn_rma_defer_apply(&w->peer[w->me], buf, ms.msg_length, ms.source);
        free(buf);
        if (first == KNIT_OK)
            first = st;
    }
    if (cs == KNIT_OK)
        kn_rma_settle(w, n <= KN_RMA_SUM_ALL ? sum : NULL, senders);
    else if (first == KNIT_OK)
        first = cs;
    for (int t = 0; t < n; t++) {
        if (sr[t]) {
            knit_status_t st = knit_wait(&sr[t], NULL);
            if (first == KNIT_OK)
                first = st;
        }
        free(sb[t]);
    }
    free(cnt);
    free(sr);
    free(sb);
    return first;
}

/* ------------------------------------------------------------ settling */

knit_status_t kn_rma_sum_counts(knit_comm_t *comm, long long *count, long long *sum, long long *nin,
                                long long *senders)
{
    int n = knit_comm_size(comm), me = knit_comm_rank(comm), any = 0;
    knit_op_t plus = {.kind = KNIT_OP_SUM};
    knit_status_t st;
    *senders = 0;
    if (n <= KN_RMA_SUM_ALL) { /* the whole vector: one allreduce, faster than a reduce-scatter here */
        st = knit_allreduce(comm, count, sum, (size_t)n, KNIT_INT64, &plus);
        *nin = sum[me];
    } else {
        for (int i = 0; i < n; i++)
            any |= count[i] != 0;
        for (int i = 0; any && i < n; i++)
            count[i] += SENDER;
        st = knit_reduce_scatter_block(comm, count, nin, 1, KNIT_INT64, &plus);
        *senders = *nin / SENDER;
        *nin %= SENDER;
    }
    memset(count, 0, (size_t)n * sizeof(*count));
    return st;
}

void kn_rma_settle(knit_win_t *w, const long long *sum, long long senders)
{
    w->epoch++;
    for (int i = 0; i < w->n; i++)
        if (i != w->me && (sum ? sum[i] > 0 : senders > 0))
            w->unsettled[i] = w->epoch;
    __atomic_store_n(&w->settle, w->epoch, __ATOMIC_RELEASE);
}

knit_status_t kn_rma_settled(knit_win_t *w, int rank)
{
    if (!w->unsettled[rank])
        return KNIT_OK;
    uint64_t want = w->unsettled[rank], v = 0;
    int same = knit_node_of(kn_rma.ctx, w->peer[rank].job) == kn_rma.node;
    for (unsigned round = 0;; round++) {
        xfer_t x;
        kn_mem_zero(&x, sizeof(x)); /* not an inlined `rep stos` (util/mem.h) */
        x.kind = KN_RMA_K_GET;
        x.laddr = (uint64_t)(uintptr_t)&v;
        x.raddr = w->peer[rank].settle;
        x.total = x.bsize = x.rext = x.lext = sizeof(v);
        x.nblocks = 1;
        x.ldesc.count[0] = x.rdesc.count[0] = (int64_t)sizeof(v);
        /* on its node cross-memory attach; else the agents, whatever it does */
        knit_status_t st = kn_rma_start(w, rank, &x, same ? KNIT_RMA_DIRECT : KNIT_RMA_AGENT, NULL);
        if (st != KNIT_OK)
            return st;
        if (v >= want)
            break;
        knit_progress(kn_rma.ctx);
        if (round >= 4)
            sched_yield();
    }
    w->unsettled[rank] = 0;
    return KNIT_OK;
}
