/*
 * Point-to-point engine.
 *
 * Protocols (the later arriver moves the data):
 *
 *   len <= inline_max       INLINE  payload in the queue entry
 *   len <= eager_max        EAGER   payload in a queue slot; where a transport
 *                                   takes longer eager messages than one packet
 *                                   (between nodes, a round trip costs more than
 *                                   copies), the first packet is followed at
 *                                   once by MORE packets with the rest
 *   larger, or synchronous  rendezvous:
 *     receive posted first and announced (RTR) to the sender (where the
 *     transport's put is as cheap as its get: between nodes, see
 *     KNIT_RNDV_PUSH):
 *         the sender pushes (tl put) into the receive buffer, then PUSHED
 *     otherwise the sender sends RTS (its buffer's address); at the match
 *     the receiver pulls (tl get) and sends FIN, or, without RMA to that
 *     peer or below cma_min, answers CTS and the sender streams DATA
 *     packets (pipelined copy through the queue slots).
 *
 * Announcements.  A receive with a specific source and a buffer larger than
 * eager_max is announced to its source (RTR) when every earlier posted
 * receive that could take a message from that source on its communicator
 * was announced too, at the same message count (no wildcard source in
 * between).  The RTR carries the number of messages the receiver had seen
 * from the sender; the sender keeps it only if it has sent nothing since
 * (else the messages in flight might match the receive first).  The
 * sender's list of announcements then mirrors the receiver's posted queue
 * for it, and the first message it sends that matches an announcement
 * consumes the first such one: pushed when large, sent normally otherwise.
 * Both sides thereby agree which message each receive takes, without a
 * round trip.
 *
 * Order: every message gets a sequence number per (sender, receiver); the
 * transports deliver in order and the receiver checks.  Packets a transport
 * cannot take now (no credit) wait in the peer's pending queue, in order;
 * a push in progress holds the head of that queue, so nothing overtakes it.
 */
#include "p2p/p2p.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/heap.h"
#include "util/list.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/pool.h"
#include "util/time.h"

enum req_kind { REQ_SEND = 1, REQ_RECV };

enum req_state {
    RS_FREE = 0,
    RS_QUEUED,     /* send: in the peer's pending queue */
    RS_WAIT_FIN,   /* send: RTS sent, waiting for FIN or CTS */
    RS_PIPE_SEND,  /* send: streaming DATA (in the bulk list) */
    RS_PUSH,       /* send: pushing into an announced receive */
    RS_POSTED,     /* recv: in the posted queue */
    RS_PULL,       /* recv: pulling (in the bulk list) */
    RS_PIPE_RECV,  /* recv: CTS sent, DATA arriving */
    RS_MORE_RECV,  /* recv: matched a multi-packet eager message, MORE arriving */
    RS_DONE,
};

struct knit_request {
    kn_list_t link;         /* posted / bulk / pending list */
    struct kn_p2p *p2p;
    uint32_t idx, gen;      /* id = gen << 32 | idx */
    uint8_t kind, state;
    uint8_t announced, cancel_pending;
    uint32_t ann_seq;       /* recv: the sender's message count it was announced at */
    unsigned flags;
    int peer, tag;
    uint32_t comm;
    void *buf;
    size_t len;             /* send: message length; recv: capacity */
    size_t msg_len;         /* recv: incoming message length */
    size_t xfer_len;        /* bytes to move in the rendezvous */
    size_t offset;          /* bytes handed to the transport so far */
    size_t done;            /* bytes whose copy completed */
    unsigned inflight;      /* bulk copies in flight */
    void *memh;             /* registration of buf (memh_tl's) */
    kn_tl_t *memh_tl;
    uint64_t remote_req;    /* id of the peer's request */
    uint64_t raddr, rkey;   /* the peer's buffer */
    int src, rtag;          /* recv: the matched envelope */
    knit_status_t result;
    struct kn_ann *ann;     /* send: the announcement it consumes (push) */
    /* a bulk copy failed on a buffer (0: none): this request's result and
     * the peer's, told by NAK or PUSH_FAILED once no copy is in flight */
    knit_status_t fault, fault_peer;
};

/* An unexpected message (also what knit_improbe hands out). */
struct knit_message {
    kn_list_t link;
    int src, tag;
    uint32_t comm;
    uint8_t type;           /* KN_PKT_INLINE/EAGER (data below) or RTS */
    uint8_t flags;
    size_t len;
    size_t got;             /* bytes in data[]: < len while MORE packets arrive */
    kn_pkt_rts_t rts;
    char data[];
};

/* An announcement received from a peer (we are its sender). */
struct kn_ann {
    kn_list_t link;
    int tag;
    uint32_t comm;
    uint64_t rreq, addr, cap, rkey;
};

/* One bulk copy in flight. */
struct kn_chunk {
    kn_tl_comp_t comp;
    knit_request_t *r;
    size_t off, len;        /* in the request's buffer */
};

/* A packet waiting for transport credit. */
struct kn_pend {
    kn_list_t link;
    kn_pkt_hdr_t hdr;
    const void *payload;    /* user data (eager) or body[] */
    size_t len;
    knit_request_t *req;    /* send completed by this packet, or a push */
    uint8_t body[32];
};

struct kn_peer {
    kn_tl_t *tl;
    kn_list_t pending;      /* struct kn_pend, in order */
    kn_list_t anns;         /* struct kn_ann, in order */
    uint32_t seq_out;       /* next message number to this peer */
    uint32_t seq_in;        /* next message number expected from it */
    size_t eager_max;       /* largest message sent to it eagerly */
    /* a multi-packet eager message from it still arriving (its packets
     * come one after another): into a receive or an unexpected message */
    knit_request_t *more_req;
    struct knit_message *more_msg;
    int on_pending_list;
    kn_list_t pending_link; /* in p2p->pending_peers */
};

struct kn_p2p {
    kn_p2p_params_t p;
    struct kn_peer *peers;
    kn_tl_t *tls[4];
    int ntls;
    kn_list_t posted;
    kn_list_t unexp;
    kn_list_t bulk;
    kn_list_t pending_peers;
    knit_request_t **table;  /* request ids index this; gens[] makes stale ids miss */
    uint32_t *gens;
    uint32_t table_size, table_used;
    uint32_t *free_idx;
    uint32_t nfree;
    kn_pool_t req_pool, pend_pool, ann_pool, chunk_pool;
    size_t unexp_bytes;
    kn_p2p_limits_t lim;
    uint64_t spin_count, yield_ns;
    int (*hook)(void *);    /* layers above: run inside every progress call */
    void *hook_arg;
    int in_hook;
    int (*sleep_arm)(void *, int *, int); /* layers above: what else wakes a sleep */
    void (*sleep_disarm)(void *);
    unsigned (*sleep_spin)(void *);
    void *sleep_arg;
};

/* ------------------------------------------------------------ helpers */

#define fatal(p2p, ...) kn_fatal((p2p)->p.fatal, (p2p)->p.fatal_arg, __VA_ARGS__)

static inline uint64_t req_id(const knit_request_t *r)
{
    return (uint64_t)r->gen << 32 | r->idx;
}

static knit_request_t *req_lookup(struct kn_p2p *p2p, uint64_t id, int kind)
{
    uint32_t idx = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (idx >= p2p->table_used)
        return NULL;
    knit_request_t *r = p2p->table[idx];
    if (!r || r->gen != gen || r->kind != kind || r->state == RS_FREE || r->state == RS_DONE)
        return NULL;
    return r;
}

static knit_request_t *req_alloc(struct kn_p2p *p2p, int kind)
{
    knit_request_t *r = kn_pool_get(&p2p->req_pool);
    if (!r)
        return NULL;
    uint32_t idx;
    if (p2p->nfree) {
        idx = p2p->free_idx[--p2p->nfree];
    } else {
        if (p2p->table_used == p2p->table_size) {
            uint32_t n = p2p->table_size ? p2p->table_size * 2 : 256;
            knit_request_t **t = realloc(p2p->table, n * sizeof(*t));
            if (t)
                p2p->table = t;
            uint32_t *f = t ? realloc(p2p->free_idx, n * sizeof(*f)) : NULL;
            if (f)
                p2p->free_idx = f;
            uint32_t *g = f ? realloc(p2p->gens, n * sizeof(*g)) : NULL;
            if (g)
                p2p->gens = g;
            if (!t || !f || !g) {
                kn_pool_put(&p2p->req_pool, r);
                return NULL;
            }
            p2p->table_size = n;
        }
        idx = p2p->table_used++;
        p2p->gens[idx] = 0;
    }
    kn_mem_zero(r, sizeof(*r)); /* not memset: util/mem.h */
    r->gen = ++p2p->gens[idx];
    r->idx = idx;
    r->kind = (uint8_t)kind;
    r->p2p = p2p;
    kn_list_init(&r->link);
    p2p->table[idx] = r;
    return r;
}

static void req_free(knit_request_t *r)
{
    struct kn_p2p *p2p = r->p2p;
    p2p->table[r->idx] = NULL;
    p2p->free_idx[p2p->nfree++] = r->idx;
    r->state = RS_FREE;
    kn_pool_put(&p2p->req_pool, r);
}

static void req_complete(knit_request_t *r, knit_status_t result)
{
    kn_list_del(&r->link);
    if (r->memh) {
        r->memh_tl->ops->mem_dereg(r->memh_tl, r->memh);
        r->memh = NULL;
    }
    r->result = result;
    r->state = RS_DONE;
}

static inline int envelope_match(int rpeer, int rtag, uint32_t rcomm, int src, int tag, uint32_t comm)
{
    return rcomm == comm && (rpeer == KNIT_ANY_SOURCE || rpeer == src) &&
           (rtag == KNIT_ANY_TAG || rtag == tag);
}

/* Locality in one place: which transport reaches a rank. */
static inline kn_tl_t *kn_p2p_tl_of(struct kn_p2p *p2p, int rank)
{
    return p2p->peers[rank].tl;
}

/* ------------------------------------------------------- sending packets */

static void peer_mark_pending(struct kn_p2p *p2p, struct kn_peer *pe)
{
    if (!pe->on_pending_list) {
        kn_list_push_back(&p2p->pending_peers, &pe->pending_link);
        pe->on_pending_list = 1;
    }
}

/* Send a control packet now, or queue it (copying its body) behind the
 * peer's pending packets. */
static void send_ctrl(struct kn_p2p *p2p, int peer, const kn_pkt_hdr_t *hdr, const void *body, size_t len)
{
    struct kn_peer *pe = &p2p->peers[peer];
    if (kn_list_empty(&pe->pending)) {
        knit_status_t st = pe->tl->ops->send(pe->tl, peer, hdr, body, len);
        if (kn_likely(st == KNIT_OK))
            return;
        if (st != KNIT_ERR_AGAIN)
            fatal(p2p, "send to rank %d failed: %s", peer, knit_strerror(st));
    }
    struct kn_pend *pd = kn_pool_get(&p2p->pend_pool);
    if (!pd)
        fatal(p2p, "out of memory queueing a packet for rank %d", peer);
    pd->hdr = *hdr;
    memcpy(pd->body, body, len);
    pd->payload = pd->body;
    pd->len = len;
    pd->req = NULL;
    kn_list_push_back(&pe->pending, &pd->link);
    peer_mark_pending(p2p, pe);
}

static void send_ids(struct kn_p2p *p2p, int peer, int type, uint64_t sreq, uint64_t rreq, uint64_t len)
{
    kn_pkt_hdr_t h = {.type = (uint8_t)type, .len = len};
    kn_pkt_ids_t ids = {sreq, rreq};
    send_ctrl(p2p, peer, &h, &ids, sizeof(ids));
}

/*
 * A bulk copy failed on a buffer (KNIT_ERR_FAULT from the transport: the
 * kernel or the NIC could not access one of the two).  Ours, if our side
 * of the chunk cannot be read (a push) or written (a pull), else the
 * peer's; the request stops copying and, once nothing is in flight, tells
 * the peer with NAK (a pull) or PUSH_FAILED (a push), so that each side's
 * request fails with the status that blames the right process.
 */
static void bulk_fault(knit_request_t *r, int write, size_t off, size_t len)
{
    if (r->fault)
        return;
    int ours = kn_mem_check((char *)r->buf + off, len, !write) == 0;
    r->fault = ours ? KNIT_ERR_FAULT : KNIT_ERR_PEER_FAULT;
    r->fault_peer = ours ? KNIT_ERR_PEER_FAULT : KNIT_ERR_FAULT;
}

static void chunk_done(kn_tl_comp_t *comp, knit_status_t st)
{
    struct kn_chunk *ch = kn_container_of(comp, struct kn_chunk, comp);
    knit_request_t *r = ch->r;
    struct kn_p2p *p2p = r->p2p;
    if (st == KNIT_ERR_FAULT)
        bulk_fault(r, r->kind == REQ_SEND, ch->off, ch->len);
    else if (st != KNIT_OK)
        fatal(p2p, "rendezvous copy of %zu bytes with rank %d failed: %s", ch->len,
              r->kind == REQ_RECV ? r->src : r->peer, knit_strerror(st));
    else
        r->done += ch->len;
    r->inflight--;
    kn_pool_put(&p2p->chunk_pool, ch);
}

/* Hand bulk copies of r to the transport, up to its in-flight limit (a
 * synchronous transport: one chunk per step, so others get their turn). */
static int bulk_issue(struct kn_p2p *p2p, knit_request_t *r, int peer, int write)
{
    kn_tl_t *tl = p2p->peers[peer].tl;
    unsigned max_inflight = tl->bulk_inflight ? tl->bulk_inflight : 1;
    int events = 0;
    while (r->offset < r->xfer_len && r->inflight < max_inflight && !r->fault) {
        size_t n = KN_MIN(r->xfer_len - r->offset, p2p->lim.bulk_chunk);
        struct kn_chunk *ch = kn_pool_get(&p2p->chunk_pool);
        if (!ch)
            fatal(p2p, "out of memory for a rendezvous copy");
        ch->r = r;
        ch->off = r->offset;
        ch->len = n;
        ch->comp.cb = chunk_done;
        char *local = (char *)r->buf + r->offset;
        uint64_t raddr = r->raddr + r->offset;
        knit_status_t st = write ? tl->ops->put(tl, peer, local, n, raddr, r->rkey, &ch->comp)
                                 : tl->ops->get(tl, peer, local, n, raddr, r->rkey, &ch->comp);
        r->offset += n;
        events++;
        if (st == KNIT_INPROGRESS) {
            r->inflight++;
            continue;
        }
        kn_pool_put(&p2p->chunk_pool, ch);
        if (st == KNIT_ERR_FAULT) {
            bulk_fault(r, write, r->offset - n, n);
            break;
        }
        if (st != KNIT_OK)
            fatal(p2p, "%s %zu bytes %s rank %d's buffer failed: %s", write ? "writing" : "reading", n,
                  write ? "into" : "from", peer, knit_strerror(st));
        r->done += n;
        break;
    }
    return events;
}

/* One step of a push at the head of a peer's queue.  Returns 1 when the
 * PUSHED (or PUSH_FAILED) packet went out: the send is complete, with
 * r->fault as its result. */
static int push_step(struct kn_p2p *p2p, struct kn_pend *pd)
{
    knit_request_t *r = pd->req;
    kn_tl_t *tl = p2p->peers[r->peer].tl;
    if (!r->fault && r->done < r->xfer_len) {
        bulk_issue(p2p, r, r->peer, 1);
        if (!r->fault && r->done < r->xfer_len)
            return 0;
    }
    knit_status_t st;
    if (r->fault) {
        if (r->inflight)
            return 0;
        /* the message takes its place in order all the same, failed */
        kn_pkt_hdr_t h = pd->hdr;
        kn_pkt_ids_t ids;
        memcpy(&ids, pd->body, sizeof(ids));
        kn_pkt_nak_t nak = {ids.sreq, ids.rreq, r->fault_peer, 0};
        h.type = KN_PKT_PUSH_FAILED;
        st = tl->ops->send(tl, r->peer, &h, &nak, sizeof(nak));
    } else {
        st = tl->ops->send(tl, r->peer, &pd->hdr, pd->body, sizeof(kn_pkt_ids_t));
    }
    if (st == KNIT_ERR_AGAIN)
        return 0;
    if (st != KNIT_OK)
        fatal(p2p, "send to rank %d failed: %s", r->peer, knit_strerror(st));
    return 1;
}

/* Drain pending packets of every peer as far as credits allow. */
static int flush_pending(struct kn_p2p *p2p)
{
    int events = 0;
    kn_list_t *pos, *tmp;
    kn_list_for_each_safe(pos, tmp, &p2p->pending_peers) {
        struct kn_peer *pe = kn_list_entry(pos, struct kn_peer, pending_link);
        int peer = (int)(pe - p2p->peers);
        while (!kn_list_empty(&pe->pending)) {
            struct kn_pend *pd = kn_list_first(&pe->pending, struct kn_pend, link);
            if (pd->req && pd->req->state == RS_PUSH) {
                events++;
                if (!push_step(p2p, pd))
                    break;
                kn_list_del(&pd->link);
                req_complete(pd->req, pd->req->fault);
                kn_pool_put(&p2p->pend_pool, pd);
                continue;
            }
            knit_status_t st = pe->tl->ops->send(pe->tl, peer, &pd->hdr, pd->payload, pd->len);
            if (st == KNIT_ERR_AGAIN)
                break;
            if (st != KNIT_OK)
                fatal(p2p, "send to rank %d failed: %s", peer, knit_strerror(st));
            events++;
            kn_list_del(&pd->link);
            if (pd->req) {
                if (pd->req->state == RS_QUEUED)
                    req_complete(pd->req, KNIT_OK);
            }
            kn_pool_put(&p2p->pend_pool, pd);
        }
        if (kn_list_empty(&pe->pending)) {
            kn_list_del(&pe->pending_link);
            pe->on_pending_list = 0;
        }
    }
    return events;
}

/* --------------------------------------------------------- bulk transfers */

/* One step of a pull (receiver) or a pipelined send (sender). */
/* A receive has read the sender's whole buffer: FIN frees the send. */
static void pull_done(struct kn_p2p *p2p, knit_request_t *r)
{
    send_ids(p2p, r->src, KN_PKT_FIN, r->remote_req, req_id(r), 0);
    req_complete(r, r->msg_len > r->len ? KNIT_ERR_TRUNCATE : KNIT_OK);
}

static int bulk_step(struct kn_p2p *p2p, knit_request_t *r)
{
    if (r->state == RS_PULL) {
        int events = bulk_issue(p2p, r, r->src, 0);
        if (r->fault) {
            if (r->inflight)
                return events;
            kn_pkt_hdr_t h = {.type = KN_PKT_NAK};
            kn_pkt_nak_t nak = {r->remote_req, req_id(r), r->fault_peer, 0};
            send_ctrl(p2p, r->src, &h, &nak, sizeof(nak));
            req_complete(r, r->fault);
            return events + 1;
        }
        if (r->done == r->xfer_len) {
            pull_done(p2p, r);
            events++;
        }
        return events;
    }
    /* RS_PIPE_SEND: DATA packets while credits last, one chunk per step */
    kn_tl_t *tl = p2p->peers[r->peer].tl;
    int events = 0;
    size_t moved = 0, maxp = tl->max_payload;
    while (r->offset < r->xfer_len && moved < p2p->lim.bulk_chunk) {
        size_t n = KN_MIN(r->xfer_len - r->offset, maxp);
        kn_pkt_hdr_t h = {.type = KN_PKT_DATA,
                          .comm = (uint32_t)r->remote_req,
                          .seq = (uint32_t)(r->remote_req >> 32),
                          .len = r->offset};
        knit_status_t st = tl->ops->send(tl, r->peer, &h, (char *)r->buf + r->offset, n);
        if (st == KNIT_ERR_AGAIN)
            break;
        if (st != KNIT_OK)
            fatal(p2p, "send to rank %d failed: %s", r->peer, knit_strerror(st));
        r->offset += n;
        moved += n;
        events++;
    }
    if (r->offset == r->xfer_len)
        req_complete(r, KNIT_OK);
    return events;
}

static int progress_bulk(struct kn_p2p *p2p)
{
    int events = 0;
    kn_list_t *pos, *tmp;
    kn_list_for_each_safe(pos, tmp, &p2p->bulk) {
        events += bulk_step(p2p, kn_list_entry(pos, knit_request_t, link));
    }
    return events;
}

/* --------------------------------------------------------- receive side */

/* Start moving a rendezvous message into a matched receive. */
static void rndv_start_recv(struct kn_p2p *p2p, knit_request_t *r, int src, const kn_pkt_rts_t *rts)
{
    r->remote_req = rts->sreq;
    r->raddr = rts->addr;
    r->rkey = rts->rkey;
    r->xfer_len = KN_MIN(r->msg_len, r->len);
    r->offset = r->done = 0;
    kn_tl_t *tl = p2p->peers[src].tl;
    void *from;
    if (r->msg_len <= p2p->lim.eager_max && r->xfer_len && tl->ops->map &&
        (from = tl->ops->map(tl, src, r->raddr, r->xfer_len))) {
        /* offered from the sender's shared heap (start_send): one copy from
         * our mapping of it, into our buffer as an eager message's copy is */
        memcpy(r->buf, from, r->xfer_len);
        pull_done(p2p, r);
        return;
    }
    if ((tl->ops->caps(tl, src) & KN_TL_CAP_RMA) && r->msg_len >= p2p->lim.cma_min) {
        r->state = RS_PULL;
        kn_list_push_back(&p2p->bulk, &r->link);
        bulk_step(p2p, r); /* first chunk now: the receiver arrived last */
    } else {
        r->state = RS_PIPE_RECV;
        send_ids(p2p, src, KN_PKT_CTS, rts->sreq, req_id(r), r->xfer_len);
        if (r->xfer_len == 0)
            req_complete(r, r->msg_len > r->len ? KNIT_ERR_TRUNCATE : KNIT_OK);
    }
}

static void deliver_eager(knit_request_t *r, const void *data, size_t len)
{
    size_t n = KN_MIN(len, r->len);
    if (n)
        memcpy(r->buf, data, n);
    r->offset = n;
    req_complete(r, len > r->len ? KNIT_ERR_TRUNCATE : KNIT_OK);
}

/* n more bytes of a multi-packet eager message for r, at r->offset (0 in a
 * receive just matched; beyond its capacity: counted, not copied); done
 * when the whole message is in. */
static void more_deliver(struct kn_peer *pe, knit_request_t *r, const void *data, size_t n)
{
    if (r->offset < r->len)
        memcpy((char *)r->buf + r->offset, data, KN_MIN(n, r->len - r->offset));
    r->offset += n;
    if (r->offset < r->msg_len) {
        r->state = RS_MORE_RECV;
        pe->more_req = r;
        return;
    }
    pe->more_req = NULL;
    req_complete(r, r->msg_len > r->len ? KNIT_ERR_TRUNCATE : KNIT_OK);
}

static void recv_matched(knit_request_t *r, int src, int tag, size_t len)
{
    kn_list_del(&r->link); /* off the posted queue */
    r->src = src;
    r->rtag = tag;
    r->msg_len = len;
}

static knit_request_t *match_posted(struct kn_p2p *p2p, int src, int tag, uint32_t comm)
{
    kn_list_t *pos;
    kn_list_for_each(pos, &p2p->posted) {
        knit_request_t *r = kn_list_entry(pos, knit_request_t, link);
        if (envelope_match(r->peer, r->tag, r->comm, src, tag, comm))
            return r;
    }
    return NULL;
}

static void handle_message(struct kn_p2p *p2p, int src, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    struct kn_peer *pe = &p2p->peers[src];
    if (kn_unlikely(h->seq != pe->seq_in))
        fatal(p2p, "protocol error: message %u from rank %d arrived when %u was expected", h->seq, src,
              pe->seq_in);
    pe->seq_in++;
    if (kn_unlikely(pe->more_req || pe->more_msg))
        fatal(p2p, "protocol error: message %u from rank %d came before the rest of its previous one", h->seq,
              src);
    if (h->type == KN_PKT_PUSHED || h->type == KN_PKT_PUSH_FAILED) {
        kn_pkt_ids_t ids;
        memcpy(&ids, payload, sizeof(ids)); /* a NAK body starts alike */
        knit_request_t *r = req_lookup(p2p, ids.rreq, REQ_RECV);
        if (!r || r->state != RS_POSTED || !r->announced || r->peer != src ||
            !envelope_match(r->peer, r->tag, r->comm, src, h->tag, h->comm))
            fatal(p2p, "protocol error: rank %d pushed into receive %#llx, which does not expect it", src,
                  (unsigned long long)ids.rreq);
        recv_matched(r, src, h->tag, h->len);
        if (h->type == KN_PKT_PUSH_FAILED) {
            kn_pkt_nak_t nak;
            memcpy(&nak, payload, sizeof(nak));
            r->offset = 0;
            req_complete(r, nak.status);
            return;
        }
        r->offset = KN_MIN(h->len, r->len);
        req_complete(r, h->len > r->len ? KNIT_ERR_TRUNCATE : KNIT_OK);
        return;
    }
    knit_request_t *r = match_posted(p2p, src, h->tag, h->comm);
    if (h->type == KN_PKT_RTS) {
        kn_pkt_rts_t rts;
        memcpy(&rts, payload, sizeof(rts));
        if (r) {
            recv_matched(r, src, h->tag, h->len);
            rndv_start_recv(p2p, r, src, &rts);
            return;
        }
        len = 0;
    } else if (r) {
        recv_matched(r, src, h->tag, h->len);
        if (len < h->len)
            more_deliver(pe, r, payload, len);
        else
            deliver_eager(r, payload, len);
        return;
    }
    /* unexpected: stored at its exact size (a multi-packet one fills up as
     * its MORE packets come) */
    size_t size = h->type == KN_PKT_RTS ? 0 : h->len;
    struct knit_message *m = malloc(sizeof(*m) + size);
    if (!m)
        fatal(p2p, "out of memory storing an unexpected message of %zu bytes from rank %d", size, src);
    m->src = src;
    m->tag = h->tag;
    m->comm = h->comm;
    m->type = h->type;
    m->flags = h->flags;
    m->len = h->len;
    m->got = len;
    if (h->type == KN_PKT_RTS)
        memcpy(&m->rts, payload, sizeof(m->rts));
    else if (len)
        memcpy(m->data, payload, len);
    if (len < size)
        pe->more_msg = m;
    p2p->unexp_bytes += sizeof(*m) + size;
    kn_list_push_back(&p2p->unexp, &m->link);
}

/* The next piece of the multi-packet eager message arriving from src. */
static void handle_more(struct kn_p2p *p2p, int src, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    struct kn_peer *pe = &p2p->peers[src];
    knit_request_t *r = pe->more_req;
    struct knit_message *m = pe->more_msg;
    size_t total = r ? r->msg_len : m ? m->len : 0, off = r ? r->offset : m ? m->got : 0;
    uint32_t comm = r ? r->comm : m ? m->comm : 0;
    int tag = r ? r->rtag : m ? m->tag : 0;
    if (kn_unlikely((!r && !m) || h->seq != pe->seq_in - 1 || h->comm != comm || h->tag != tag ||
                    h->len != off || !len || len > total - off))
        fatal(p2p, "protocol error: unexpected MORE packet (message %u, offset %llu, %zu bytes) from rank %d",
              h->seq, (unsigned long long)h->len, len, src);
    if (r) {
        more_deliver(pe, r, payload, len);
        return;
    }
    memcpy(m->data + m->got, payload, len);
    m->got += len;
    if (m->got == m->len)
        pe->more_msg = NULL;
}

/* The receiver announced a receive (we are the sender). */
static void handle_rtr(struct kn_p2p *p2p, int src, const kn_pkt_hdr_t *h, const kn_pkt_rtr_t *rtr)
{
    struct kn_peer *pe = &p2p->peers[src];
    if (h->seq != pe->seq_out)
        return; /* messages sent since may match it first: let the receiver match normally */
    struct kn_ann *a = kn_pool_get(&p2p->ann_pool);
    if (!a)
        return; /* only an optimization */
    a->tag = h->tag;
    a->comm = h->comm;
    a->rreq = rtr->rreq;
    a->addr = rtr->addr;
    a->cap = rtr->cap;
    a->rkey = rtr->rkey;
    kn_list_push_back(&pe->anns, &a->link);
}

static void handle_data(struct kn_p2p *p2p, int src, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    uint64_t id = (uint64_t)h->seq << 32 | h->comm;
    knit_request_t *r = req_lookup(p2p, id, REQ_RECV);
    if (!r || r->state != RS_PIPE_RECV || r->src != src || h->len != r->offset ||
        len > r->xfer_len - r->offset)
        fatal(p2p, "protocol error: unexpected DATA (offset %llu, %zu bytes) from rank %d",
              (unsigned long long)h->len, len, src);
    memcpy((char *)r->buf + r->offset, payload, len);
    r->offset += len;
    if (r->offset == r->xfer_len)
        req_complete(r, r->msg_len > r->len ? KNIT_ERR_TRUNCATE : KNIT_OK);
}

static void handle_ids(struct kn_p2p *p2p, int src, const kn_pkt_hdr_t *h, const kn_pkt_ids_t *ids)
{
    knit_request_t *r;
    switch (h->type) {
    case KN_PKT_FIN: /* the receiver has read our buffer */
        r = req_lookup(p2p, ids->sreq, REQ_SEND);
        if (!r || r->state != RS_WAIT_FIN || r->peer != src)
            break;
        req_complete(r, KNIT_OK);
        return;
    case KN_PKT_CTS: /* stream the data through the queue */
        r = req_lookup(p2p, ids->sreq, REQ_SEND);
        if (!r || r->state != RS_WAIT_FIN || r->peer != src || h->len > r->len)
            break;
        r->remote_req = ids->rreq;
        r->xfer_len = h->len;
        r->offset = 0;
        r->state = RS_PIPE_SEND;
        kn_list_push_back(&p2p->bulk, &r->link);
        if (r->xfer_len == 0)
            req_complete(r, KNIT_OK);
        return;
    case KN_PKT_REVOKE: { /* the receiver cancels an announced receive */
        struct kn_peer *pe = &p2p->peers[src];
        kn_list_t *pos, *tmp;
        kn_list_for_each_safe(pos, tmp, &pe->anns) {
            struct kn_ann *a = kn_list_entry(pos, struct kn_ann, link);
            if (a->rreq == ids->rreq) {
                kn_list_del(&a->link);
                kn_pool_put(&p2p->ann_pool, a);
                break;
            }
        }
        send_ids(p2p, src, KN_PKT_REVOKE_ACK, 0, ids->rreq, 0);
        return;
    }
    case KN_PKT_REVOKE_ACK: /* the sender will not push: cancel if still unmatched */
        r = req_lookup(p2p, ids->rreq, REQ_RECV);
        if (!r)
            return; /* it matched a message meanwhile and is done */
        if (r->cancel_pending && r->state == RS_POSTED) {
            req_complete(r, KNIT_ERR_CANCELED);
            return;
        }
        r->cancel_pending = 0;
        return;
    }
    fatal(p2p, "protocol error: packet type %u from rank %d names no matching request", h->type, src);
}

/* A NAK body: the status is one that blames a buffer, reserved is 0. */
static int nak_valid(const void *payload)
{
    kn_pkt_nak_t nak;
    memcpy(&nak, payload, sizeof(nak));
    return (nak.status == KNIT_ERR_FAULT || nak.status == KNIT_ERR_PEER_FAULT) && nak.reserved == 0;
}

int kn_p2p_pkt_ok(const kn_pkt_hdr_t *h, const void *payload, size_t len, size_t eager_max)
{
    switch (h->type) {
    case KN_PKT_INLINE:
        return len == h->len;
    case KN_PKT_EAGER:
        /* shorter: the first packet of a multi-packet one */
        return len == h->len || (len < h->len && len && h->len <= eager_max);
    case KN_PKT_MORE:
    case KN_PKT_DATA:
        return 1; /* checked against the message they continue */
    case KN_PKT_RTS:
        return len == sizeof(kn_pkt_rts_t);
    case KN_PKT_RTR:
        return len == sizeof(kn_pkt_rtr_t) || len == offsetof(kn_pkt_rtr_t, rkey);
    case KN_PKT_PUSHED:
    case KN_PKT_FIN:
    case KN_PKT_CTS:
    case KN_PKT_REVOKE:
    case KN_PKT_REVOKE_ACK:
        return len == sizeof(kn_pkt_ids_t);
    case KN_PKT_PUSH_FAILED:
    case KN_PKT_NAK:
        return len == sizeof(kn_pkt_nak_t) && nak_valid(payload);
    }
    return 0;
}

static void recv_cb(void *arg, int src, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    struct kn_p2p *p2p = arg;
    if (kn_unlikely(src < 0 || src >= p2p->p.size))
        fatal(p2p, "protocol error: packet from unknown rank %d", src);
    if (kn_unlikely(!kn_p2p_pkt_ok(h, payload, len, p2p->peers[src].eager_max)))
        fatal(p2p, "protocol error: malformed packet (type %u, %zu bytes) from rank %d", h->type, len, src);
    switch (h->type) {
    case KN_PKT_INLINE:
    case KN_PKT_EAGER:
    case KN_PKT_RTS:
    case KN_PKT_PUSHED:
    case KN_PKT_PUSH_FAILED:
        handle_message(p2p, src, h, payload, len);
        return;
    case KN_PKT_MORE:
        handle_more(p2p, src, h, payload, len);
        return;
    case KN_PKT_NAK: {
        kn_pkt_nak_t nak;
        memcpy(&nak, payload, sizeof(nak));
        knit_request_t *r = req_lookup(p2p, nak.sreq, REQ_SEND);
        if (!r || r->state != RS_WAIT_FIN || r->peer != src)
            fatal(p2p, "protocol error: NAK from rank %d for send %#llx, which does not wait for one", src,
                  (unsigned long long)nak.sreq);
        req_complete(r, nak.status);
        return;
    }
    case KN_PKT_RTR: {
        kn_pkt_rtr_t rtr = {0};
        memcpy(&rtr, payload, len);
        handle_rtr(p2p, src, h, &rtr);
        return;
    }
    case KN_PKT_DATA:
        handle_data(p2p, src, h, payload, len);
        return;
    default: { /* FIN, CTS, REVOKE, REVOKE_ACK */
        kn_pkt_ids_t ids;
        memcpy(&ids, payload, sizeof(ids));
        handle_ids(p2p, src, h, &ids);
        return;
    }
    }
}

kn_tl_recv_cb_t kn_p2p_recv_cb(void)
{
    return recv_cb;
}

/* ------------------------------------------------------------ send side */

/* The first message to a peer that matches an announcement consumes it. */
static struct kn_ann *take_ann(struct kn_p2p *p2p, struct kn_peer *pe, int tag, uint32_t comm)
{
    kn_list_t *pos;
    kn_list_for_each(pos, &pe->anns) {
        struct kn_ann *a = kn_list_entry(pos, struct kn_ann, link);
        if (a->comm == comm && (a->tag == KNIT_ANY_TAG || a->tag == tag)) {
            kn_list_del(&a->link);
            return a;
        }
    }
    (void)p2p;
    return NULL;
}

/* Queue a message packet: its payload is the user's data (referenced) or a
 * small body (copied); r, if any, completes when it is sent. */
static void queue_msg(struct kn_p2p *p2p, struct kn_peer *pe, knit_request_t *r, const kn_pkt_hdr_t *h,
                      const void *payload, size_t len, int copy)
{
    struct kn_pend *pd = kn_pool_get(&p2p->pend_pool);
    if (!pd)
        fatal(p2p, "out of memory queueing a message for rank %d", (int)(pe - p2p->peers));
    pd->hdr = *h;
    if (!copy) {
        pd->payload = payload;
    } else {
        memcpy(pd->body, payload, len);
        pd->payload = pd->body;
    }
    pd->len = len;
    pd->req = r;
    kn_list_push_back(&pe->pending, &pd->link);
    peer_mark_pending(p2p, pe);
}

/* An eager message longer than a packet: the first packet, then MORE
 * packets with the rest, sent while the transport takes them and queued in
 * order after that; the send completes with its last packet. */
static knit_status_t send_multi(struct kn_p2p *p2p, struct kn_peer *pe, knit_request_t *r, kn_pkt_hdr_t h)
{
    kn_tl_t *tl = pe->tl;
    int direct = kn_list_empty(&pe->pending);
    r->state = RS_QUEUED;
    for (size_t off = 0; off < r->len;) {
        size_t n = KN_MIN(r->len - off, tl->max_payload);
        const char *data = (const char *)r->buf + off;
        if (off) {
            h.type = KN_PKT_MORE;
            h.len = off;
        }
        if (direct) {
            knit_status_t st = tl->ops->send(tl, r->peer, &h, data, n);
            if (st == KNIT_OK) {
                off += n;
                continue;
            }
            if (st != KNIT_ERR_AGAIN && !off)
                return st;
            if (st != KNIT_ERR_AGAIN)
                fatal(p2p, "send to rank %d failed: %s", r->peer, knit_strerror(st));
            direct = 0;
        }
        queue_msg(p2p, pe, off + n == r->len ? r : NULL, &h, data, n, 0);
        off += n;
    }
    if (direct)
        req_complete(r, KNIT_OK);
    return KNIT_OK;
}

/* Whether a message the eager protocol would copy twice (in and out of the
 * queue buffer) is better offered by rendezvous from the sender's shared
 * heap, which the receiver reads with one memcpy (rndv_start_recv):
 * KNIT_HEAP_RNDV_MIN bytes and more (2 ranks, buffers in the heap: 4 KiB
 * ping-pong 0.87 -> 0.28 us, bandwidth 14 -> 38 GB/s; below 1 KiB the
 * handshake costs more than the copy saves).  A receiver that cannot map
 * the heap takes the offer the way it takes any small rendezvous. */
static inline int heap_offer(const struct kn_p2p *p2p, const kn_tl_t *tl, const knit_request_t *r)
{
    return p2p->lim.heap_rndv_min && r->len >= p2p->lim.heap_rndv_min && tl->ops->map &&
           kn_heap_holds(r->buf, r->len);
}

static knit_status_t start_send(struct kn_p2p *p2p, knit_request_t *r)
{
    struct kn_peer *pe = &p2p->peers[r->peer];
    kn_tl_t *tl = kn_p2p_tl_of(p2p, r->peer);
    kn_pkt_hdr_t h = {.comm = r->comm, .tag = r->tag, .seq = pe->seq_out++, .len = r->len};
    struct kn_ann *a = kn_list_empty(&pe->anns) ? NULL : take_ann(p2p, pe, r->tag, r->comm);
    int sync = r->flags & KNIT_SEND_SYNC;
    size_t eager_max = r->flags & KN_P2P_SEND_EAGER ? KN_MAX(tl->max_payload, pe->eager_max) : pe->eager_max;

    if (a && (r->len > eager_max || sync) && (tl->ops->caps(tl, r->peer) & KN_TL_CAP_RMA)) {
        /* receive posted first: push into it (matched by construction) */
        r->state = RS_PUSH;
        r->raddr = a->addr;
        r->rkey = a->rkey;
        r->xfer_len = KN_MIN(r->len, a->cap);
        r->offset = r->done = 0;
        h.type = KN_PKT_PUSHED;
        kn_pkt_ids_t ids = {req_id(r), a->rreq};
        kn_pool_put(&p2p->ann_pool, a);
        struct kn_pend *pd = kn_pool_get(&p2p->pend_pool);
        if (!pd)
            fatal(p2p, "out of memory queueing a push for rank %d", r->peer);
        pd->hdr = h;
        memcpy(pd->body, &ids, sizeof(ids));
        pd->payload = pd->body;
        pd->len = sizeof(ids);
        pd->req = r;
        int head = kn_list_empty(&pe->pending);
        kn_list_push_back(&pe->pending, &pd->link);
        peer_mark_pending(p2p, pe);
        if (head) {
            /* first chunk now: the sender arrived last */
            if (push_step(p2p, pd)) {
                kn_list_del(&pd->link);
                kn_pool_put(&p2p->pend_pool, pd);
                req_complete(r, r->fault);
            }
        }
        return KNIT_OK;
    }
    if (a)
        kn_pool_put(&p2p->ann_pool, a); /* this message takes the receive the normal way */

    const void *payload;
    size_t plen;
    kn_pkt_rts_t rts;
    if (!sync && r->len <= p2p->lim.inline_max) {
        h.type = KN_PKT_INLINE;
        payload = r->buf;
        plen = r->len;
        r->state = RS_QUEUED;
    } else if (!sync && r->len <= eager_max && !heap_offer(p2p, tl, r)) {
        h.type = KN_PKT_EAGER;
        if (r->len > tl->max_payload)
            return send_multi(p2p, pe, r, h);
        payload = r->buf;
        plen = r->len;
        r->state = RS_QUEUED;
    } else {
        h.type = KN_PKT_RTS;
        rts.sreq = req_id(r);
        rts.addr = (uint64_t)(uintptr_t)r->buf;
        rts.rkey = 0;
        if (tl->ops->mem_reg && r->len) {
            knit_status_t st = tl->ops->mem_reg(tl, r->buf, r->len, &rts.rkey, &r->memh);
            if (st != KNIT_OK)
                return st;
            r->memh_tl = tl;
        }
        payload = &rts;
        plen = sizeof(rts);
        r->state = RS_WAIT_FIN;
    }
    if (kn_list_empty(&pe->pending)) {
        knit_status_t st = tl->ops->send(tl, r->peer, &h, payload, plen);
        if (kn_likely(st == KNIT_OK)) {
            if (r->state == RS_QUEUED)
                req_complete(r, KNIT_OK);
            return KNIT_OK;
        }
        if (st != KNIT_ERR_AGAIN)
            return st;
    }
    queue_msg(p2p, pe, r, &h, payload, plen, payload != r->buf);
    return KNIT_OK;
}

/* Announce a just-posted receive to its source when that is safe. */
static void maybe_announce(struct kn_p2p *p2p, knit_request_t *r)
{
    if (r->peer == KNIT_ANY_SOURCE || r->peer == p2p->p.rank || r->len <= p2p->peers[r->peer].eager_max)
        return;
    kn_tl_t *tl = kn_p2p_tl_of(p2p, r->peer);
    if (!(tl->ops->caps(tl, r->peer) & KN_TL_CAP_RMA) || p2p->lim.rndv_push == 2 ||
        (p2p->lim.rndv_push == 0 && tl->pull_preferred))
        return;
    /* Every earlier receive that could take the sender's next message must
     * be announced too, at the same message count, so that the sender's
     * list of announcements mirrors the receiver's posted queue exactly
     * (the sender keeps all of them or, having sent since, none). */
    struct kn_peer *pe = &p2p->peers[r->peer];
    kn_list_t *pos;
    kn_list_for_each(pos, &p2p->posted) {
        knit_request_t *o = kn_list_entry(pos, knit_request_t, link);
        if (o == r)
            break;
        if (o->comm != r->comm)
            continue;
        if (o->peer == KNIT_ANY_SOURCE ||
            (o->peer == r->peer && (!o->announced || o->ann_seq != pe->seq_in)))
            return;
    }
    kn_pkt_hdr_t h = {.type = KN_PKT_RTR, .comm = r->comm, .tag = r->tag, .seq = pe->seq_in};
    kn_pkt_rtr_t rtr = {req_id(r), (uint64_t)(uintptr_t)r->buf, r->len, 0};
    if (tl->ops->mem_reg) {
        if (tl->ops->mem_reg(tl, r->buf, r->len, &rtr.rkey, &r->memh) != KNIT_OK)
            return; /* only an optimization */
        r->memh_tl = tl;
    }
    r->announced = 1;
    r->ann_seq = pe->seq_in;
    send_ctrl(p2p, r->peer, &h, &rtr, rtr.rkey ? sizeof(rtr) : offsetof(kn_pkt_rtr_t, rkey));
}

/* A receive takes an unexpected message. */
static void recv_from_unexpected(struct kn_p2p *p2p, knit_request_t *r, struct knit_message *m)
{
    r->src = m->src;
    r->rtag = m->tag;
    r->msg_len = m->len;
    if (m->type == KN_PKT_RTS) {
        r->state = RS_POSTED; /* rndv_start_recv moves it on */
        rndv_start_recv(p2p, r, m->src, &m->rts);
    } else if (m->got < m->len) {
        /* still arriving: the rest goes straight into r */
        struct kn_peer *pe = &p2p->peers[m->src];
        pe->more_msg = NULL;
        more_deliver(pe, r, m->data, m->got);
    } else {
        deliver_eager(r, m->data, m->len);
    }
    free(m);
}

static void unexp_remove(struct kn_p2p *p2p, struct knit_message *m)
{
    kn_list_del(&m->link);
    p2p->unexp_bytes -= sizeof(*m) + (m->type == KN_PKT_RTS ? 0 : m->len);
}

static struct knit_message *match_unexpected(struct kn_p2p *p2p, int peer, int tag, uint32_t comm)
{
    kn_list_t *pos;
    kn_list_for_each(pos, &p2p->unexp) {
        struct knit_message *m = kn_list_entry(pos, struct knit_message, link);
        if (envelope_match(peer, tag, comm, m->src, m->tag, m->comm))
            return m;
    }
    return NULL;
}

/* --------------------------------------------------------------- progress */

/* Work only our own progress can do (no transport would wake us for it):
 * copies in the bulk list, pushes at the head of a pending queue. */
static int local_work(struct kn_p2p *p2p)
{
    if (!kn_list_empty(&p2p->bulk))
        return 1;
    kn_list_t *pos;
    kn_list_for_each(pos, &p2p->pending_peers) {
        struct kn_peer *pe = kn_list_entry(pos, struct kn_peer, pending_link);
        struct kn_pend *pd = kn_list_first(&pe->pending, struct kn_pend, link);
        if (pd->req && pd->req->state == RS_PUSH)
            return 1;
    }
    return 0;
}

int kn_p2p_progress(struct kn_p2p *p2p)
{
    int events = 0, busy = local_work(p2p);
    for (int i = 0; i < p2p->ntls; i++) {
        p2p->tls[i]->busy = busy;
        events += p2p->tls[i]->ops->progress(p2p->tls[i]);
    }
    if (!kn_list_empty(&p2p->pending_peers))
        events += flush_pending(p2p);
    if (!kn_list_empty(&p2p->bulk))
        events += progress_bulk(p2p);
    if (p2p->hook && !p2p->in_hook) {
        p2p->in_hook = 1; /* the hook may call back into the engine */
        events += p2p->hook(p2p->hook_arg);
        p2p->in_hook = 0;
    }
    return events;
}

/*
 * Wait until *done is set by progress: spin spin_count polls, then yield the
 * core for yield_ns, then sleep in the transports (when there is no local
 * work that only this process can drive).
 */
static int sleep_until(struct kn_p2p *p2p, const int *extra, int nextra, uint64_t timeout_ns,
                       int (*ready)(void *), void *arg)
{
    if (local_work(p2p)) {
        sched_yield();
        return 0;
    }
    int fds[4], n = 0, armed = 0;
    for (int i = 0; i < nextra && n < 4; i++)
        fds[n++] = extra[i];
    if (p2p->sleep_arm) {
        int k = p2p->sleep_arm(p2p->sleep_arg, fds + n, 4 - n);
        if (k < 0)
            return 0; /* the layer above has work already */
        n += k;
        armed = k > 0;
    }
    int woke = kn_tl_sleep(p2p->tls, p2p->ntls, fds, n, timeout_ns, ready, arg);
    if (armed)
        p2p->sleep_disarm(p2p->sleep_arg);
    return woke;
}

int kn_p2p_sleep(struct kn_p2p *p2p, const int *extra, int nextra, uint64_t timeout_ns)
{
    return (sleep_until(p2p, extra, nextra, timeout_ns, NULL, NULL) & KN_TL_WOKE_EXTRA) != 0;
}

int kn_p2p_can_wake(struct kn_p2p *p2p, int peer)
{
    kn_tl_t *tl = kn_p2p_tl_of(p2p, peer);
    return tl && tl->ops->wake;
}

void kn_p2p_wake(struct kn_p2p *p2p, int peer)
{
    kn_tl_t *tl = kn_p2p_tl_of(p2p, peer);
    tl->ops->wake(tl, peer);
}

kn_tl_t *kn_p2p_tl(struct kn_p2p *p2p, int peer)
{
    return kn_p2p_tl_of(p2p, peer);
}

int kn_p2p_can_get(struct kn_p2p *p2p, int peer)
{
    kn_tl_t *tl = kn_p2p_tl_of(p2p, peer);
    return tl && tl->ops->get && !tl->ops->mem_reg && (tl->ops->caps(tl, peer) & KN_TL_CAP_RMA);
}

knit_status_t kn_p2p_get(struct kn_p2p *p2p, int peer, void *local, size_t len, uint64_t raddr)
{
    kn_tl_t *tl = kn_p2p_tl_of(p2p, peer);
    knit_status_t st = tl->ops->get(tl, peer, local, len, raddr, 0, NULL);
    if (st == KNIT_ERR_FAULT && kn_mem_check(local, len, 1) != 0)
        st = KNIT_ERR_PEER_FAULT; /* ours is fine: the peer's is not */
    return st;
}

void kn_p2p_wait(struct kn_p2p *p2p, int (*cond)(void *), void *arg)
{
    uint64_t idle = 0, yield_start = 0, spin = p2p->spin_count;
    int mode = p2p->lim.wait_mode;
    unsigned agent = p2p->sleep_spin ? p2p->sleep_spin(p2p->sleep_arg) : 0;
    if (agent && agent < spin)
        spin = agent; /* waiting for the agent (an offloaded collective) */
    while (!cond(arg)) {
        if (kn_p2p_progress(p2p)) {
            idle = 0;
            continue;
        }
        idle++;
        if (mode == 1 || idle < spin) {
            kn_cpu_relax();
            continue;
        }
        uint64_t now = kn_time_ns();
        if (idle == spin)
            yield_start = now;
        if (mode == 2 || now - yield_start < p2p->yield_ns) {
            sched_yield();
            continue;
        }
        /* yields instead while there is local work; cond, asked again once
         * armed, may have acted on its yes (a matched probe): that yes ends
         * the wait, cond is not asked a second time */
        if (sleep_until(p2p, NULL, 0, KN_NSEC_PER_SEC, cond, arg) & KN_TL_WOKE_READY)
            return;
        idle = spin; /* after a wake-up: poll, then yield again */
        yield_start = kn_time_ns();
    }
}

static int req_done(void *arg)
{
    return ((knit_request_t *)arg)->state == RS_DONE;
}

/* ------------------------------------------------------------- public API */


knit_status_t kn_p2p_isend(struct kn_p2p *p2p, const void *buf, size_t len, int peer, int tag, uint32_t comm,
                           unsigned flags, knit_request_t **out)
{
    if (!out || (!buf && len) || peer < 0 || peer >= p2p->p.size || tag < 0 ||
        (flags & ~(unsigned)(KNIT_SEND_SYNC | KN_P2P_SEND_EAGER)))
        return KNIT_ERR_INVAL;
    if (kn_unlikely(!kn_p2p_tl_of(p2p, peer))) {
        kn_error("no transport reaches rank %d on node %d: communication between nodes is not "
                 "supported yet", peer, p2p->p.node_of[peer]);
        return KNIT_ERR_NOT_SUPPORTED;
    }
    /* a buffer that cannot be user memory (a small integer or NULL plus an
     * offset, a kernel address) fails here, in the sender: the copies of
     * inline and eager messages read it in our own code and would fault */
    if (kn_unlikely(kn_mem_implausible(buf, len)) && kn_mem_check(buf, len, 0) == 0)
        return KNIT_ERR_FAULT;
    knit_request_t *r = req_alloc(p2p, REQ_SEND);
    if (!r)
        return KNIT_ERR_NOMEM;
    r->buf = (void *)buf;
    r->len = len;
    r->peer = peer;
    r->tag = tag;
    r->comm = comm;
    r->flags = flags;
    knit_status_t st = start_send(p2p, r);
    if (st != KNIT_OK) {
        req_free(r);
        return st;
    }
    *out = r;
    return KNIT_OK;
}

knit_status_t kn_p2p_irecv(struct kn_p2p *p2p, void *buf, size_t len, int peer, int tag, uint32_t comm,
                           knit_request_t **out)
{
    if (!out || (!buf && len) || peer < KNIT_ANY_SOURCE || peer >= p2p->p.size || tag < KNIT_ANY_TAG)
        return KNIT_ERR_INVAL;
    if (kn_unlikely(peer != KNIT_ANY_SOURCE && !kn_p2p_tl_of(p2p, peer))) {
        kn_error("no transport reaches rank %d on node %d: communication between nodes is not "
                 "supported yet", peer, p2p->p.node_of[peer]);
        return KNIT_ERR_NOT_SUPPORTED;
    }
    if (kn_unlikely(kn_mem_implausible(buf, len)) && kn_mem_check(buf, len, 1) == 0)
        return KNIT_ERR_FAULT; /* likewise, the receiver */
    knit_request_t *r = req_alloc(p2p, REQ_RECV);
    if (!r)
        return KNIT_ERR_NOMEM;
    r->buf = buf;
    r->len = len;
    r->peer = peer;
    r->tag = tag;
    r->comm = comm;
    struct knit_message *m = kn_list_empty(&p2p->unexp) ? NULL : match_unexpected(p2p, peer, tag, comm);
    if (m) {
        unexp_remove(p2p, m);
        recv_from_unexpected(p2p, r, m);
    } else {
        r->state = RS_POSTED;
        kn_list_push_back(&p2p->posted, &r->link);
        maybe_announce(p2p, r);
    }
    *out = r;
    return KNIT_OK;
}

static void fill_status(const knit_request_t *r, knit_msg_status_t *st)
{
    if (!st)
        return;
    if (r->kind == REQ_RECV) {
        st->source = r->src;
        st->tag = r->rtag;
        st->msg_length = r->msg_len;
        st->length = r->result == KNIT_ERR_CANCELED || r->result == KNIT_ERR_FAULT ||
                             r->result == KNIT_ERR_PEER_FAULT
                         ? 0
                         : KN_MIN(r->msg_len, r->len);
    } else {
        st->source = r->peer;
        st->tag = r->tag;
        st->msg_length = st->length = r->len;
    }
    st->error = r->result;
}

knit_status_t knit_request_status(knit_request_t *r, int *done, knit_msg_status_t *st)
{
    if (!r || !done)
        return KNIT_ERR_INVAL;
    if (r->state != RS_DONE)
        kn_p2p_progress(r->p2p);
    *done = r->state == RS_DONE;
    if (*done)
        fill_status(r, st);
    return *done ? r->result : KNIT_OK;
}

knit_status_t knit_test(knit_request_t **req, int *done, knit_msg_status_t *st)
{
    if (!req || !*req || !done)
        return KNIT_ERR_INVAL;
    knit_status_t ret = knit_request_status(*req, done, st);
    if (*done) {
        req_free(*req);
        *req = NULL;
    }
    return ret;
}

knit_status_t knit_wait(knit_request_t **req, knit_msg_status_t *st)
{
    if (!req || !*req)
        return KNIT_ERR_INVAL;
    knit_request_t *r = *req;
    kn_p2p_wait(r->p2p, req_done, r);
    fill_status(r, st);
    knit_status_t ret = r->result;
    req_free(r);
    *req = NULL;
    return ret;
}

struct waitall_arg {
    size_t n;
    knit_request_t **reqs;
    size_t first_pending;
};

static int all_done(void *arg)
{
    struct waitall_arg *w = arg;
    while (w->first_pending < w->n &&
           (!w->reqs[w->first_pending] || w->reqs[w->first_pending]->state == RS_DONE))
        w->first_pending++;
    if (w->first_pending < w->n)
        return 0;
    return 1;
}

knit_status_t knit_waitall(size_t n, knit_request_t **reqs, knit_msg_status_t *sts)
{
    if (n && !reqs)
        return KNIT_ERR_INVAL;
    struct kn_p2p *p2p = NULL;
    for (size_t i = 0; i < n && !p2p; i++)
        if (reqs[i])
            p2p = reqs[i]->p2p;
    if (p2p) {
        struct waitall_arg w = {n, reqs, 0};
        kn_p2p_wait(p2p, all_done, &w);
    }
    knit_status_t ret = KNIT_OK;
    for (size_t i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        fill_status(reqs[i], sts ? &sts[i] : NULL);
        if (ret == KNIT_OK)
            ret = reqs[i]->result;
        req_free(reqs[i]);
        reqs[i] = NULL;
    }
    return ret;
}

knit_status_t knit_cancel(knit_request_t *r)
{
    if (!r)
        return KNIT_ERR_INVAL;
    if (r->kind == REQ_SEND)
        return KNIT_ERR_NOT_SUPPORTED;
    if (r->state != RS_POSTED)
        return KNIT_ERR_STATE;
    if (!r->announced) {
        req_complete(r, KNIT_ERR_CANCELED);
        return KNIT_OK;
    }
    /* the sender may be about to push into it: ask it to forget first */
    if (!r->cancel_pending) {
        r->cancel_pending = 1;
        send_ids(r->p2p, r->peer, KN_PKT_REVOKE, 0, req_id(r), 0);
    }
    return KNIT_OK;
}

static void fill_probe(const struct knit_message *m, knit_msg_status_t *st)
{
    if (!st)
        return;
    st->source = m->src;
    st->tag = m->tag;
    st->length = st->msg_length = m->len;
    st->error = KNIT_OK;
}

knit_status_t kn_p2p_iprobe(struct kn_p2p *p2p, int peer, int tag, uint32_t comm, int remove, int *flag,
                            struct knit_message **msg, knit_msg_status_t *st)
{
    if (!flag || peer < KNIT_ANY_SOURCE || peer >= p2p->p.size || tag < KNIT_ANY_TAG)
        return KNIT_ERR_INVAL;
    struct knit_message *m = match_unexpected(p2p, peer, tag, comm);
    if (!m) {
        kn_p2p_progress(p2p);
        m = match_unexpected(p2p, peer, tag, comm);
    }
    *flag = m != NULL;
    if (m) {
        fill_probe(m, st);
        if (remove) {
            unexp_remove(p2p, m);
            *msg = m;
        }
    }
    return KNIT_OK;
}

struct probe_arg {
    struct kn_p2p *p2p;
    int peer, tag;
    uint32_t comm;
};

static int probe_found(void *arg)
{
    struct probe_arg *a = arg;
    return match_unexpected(a->p2p, a->peer, a->tag, a->comm) != NULL;
}

knit_status_t kn_p2p_probe(struct kn_p2p *p2p, int peer, int tag, uint32_t comm, knit_msg_status_t *st)
{
    if (peer < KNIT_ANY_SOURCE || peer >= p2p->p.size || tag < KNIT_ANY_TAG)
        return KNIT_ERR_INVAL;
    struct probe_arg a = {p2p, peer, tag, comm};
    kn_p2p_wait(p2p, probe_found, &a);
    fill_probe(match_unexpected(p2p, peer, tag, comm), st);
    return KNIT_OK;
}

knit_status_t kn_p2p_imrecv(struct kn_p2p *p2p, void *buf, size_t len, struct knit_message **msg,
                            knit_request_t **out)
{
    if (!msg || !*msg || !out || (!buf && len))
        return KNIT_ERR_INVAL;
    if (kn_unlikely(kn_mem_implausible(buf, len)) && kn_mem_check(buf, len, 1) == 0)
        return KNIT_ERR_FAULT;
    knit_request_t *r = req_alloc(p2p, REQ_RECV);
    if (!r)
        return KNIT_ERR_NOMEM;
    r->buf = buf;
    r->len = len;
    r->peer = (*msg)->src;
    r->tag = (*msg)->tag;
    r->comm = (*msg)->comm;
    recv_from_unexpected(p2p, r, *msg);
    *msg = NULL;
    *out = r;
    return KNIT_OK;
}

/* ------------------------------------------------------- create / destroy */

knit_status_t kn_p2p_create(const kn_p2p_params_t *p, struct kn_p2p **out)
{
    struct kn_p2p *p2p = calloc(1, sizeof(*p2p));
    if (!p2p)
        return KNIT_ERR_NOMEM;
    p2p->p = *p;
    p2p->peers = calloc((size_t)p->size, sizeof(*p2p->peers));
    if (!p2p->peers) {
        free(p2p);
        return KNIT_ERR_NOMEM;
    }
    for (int i = 0; i < p->size; i++) {
        kn_list_init(&p2p->peers[i].pending);
        kn_list_init(&p2p->peers[i].anns);
        kn_list_init(&p2p->peers[i].pending_link);
    }
    kn_mem_init();
    kn_list_init(&p2p->posted);
    kn_list_init(&p2p->unexp);
    kn_list_init(&p2p->bulk);
    kn_list_init(&p2p->pending_peers);
    kn_pool_init(&p2p->req_pool, "requests", sizeof(knit_request_t), 256, 0);
    kn_pool_init(&p2p->pend_pool, "pending packets", sizeof(struct kn_pend), 256, 0);
    kn_pool_init(&p2p->ann_pool, "announcements", sizeof(struct kn_ann), 64, 0);
    kn_pool_init(&p2p->chunk_pool, "bulk copies", sizeof(struct kn_chunk), 64, 0);

    kn_p2p_limits_t *l = &p2p->lim;
    l->inline_max = kn_cfg.inline_max;
    l->eager_max = kn_cfg.eager_max;
    l->cma_min = kn_cfg.cma_min;
    l->heap_rndv_min = kn_cfg.heap_rndv_min;
    l->bulk_chunk = kn_cfg.bulk_chunk ? kn_cfg.bulk_chunk : 1;
    l->rndv_push = kn_cfg.rndv_push;
    l->ncpus = kn_cpus_host();
    l->oversubscribed = 0;
    l->host_procs = 1;
    *out = p2p;
    return KNIT_OK;
}

void kn_p2p_set_tl(struct kn_p2p *p2p, kn_tl_t *tl, int first, int n)
{
    int known = 0;
    for (int i = 0; i < p2p->ntls; i++)
        known |= p2p->tls[i] == tl;
    if (!known && p2p->ntls < (int)KN_ARRAY_SIZE(p2p->tls))
        p2p->tls[p2p->ntls++] = tl;
    /* thresholds never exceed what every transport carries; a transport
     * with its own eager limit sends longer eager messages in packets */
    kn_p2p_limits_t *l = &p2p->lim;
    size_t eager = tl->eager_max ? tl->eager_max : KN_MIN(kn_cfg.eager_max, tl->max_payload);
    for (int i = first; i < first + n; i++) {
        p2p->peers[i].tl = tl;
        p2p->peers[i].eager_max = eager;
    }
    if (l->inline_max > tl->max_inline)
        l->inline_max = tl->max_inline;
    if (!tl->eager_max && l->eager_max > tl->max_payload) {
        kn_info("KNIT_EAGER_MAX=%zu is larger than a %s packet: using %zu", l->eager_max, tl->ops->name,
                tl->max_payload);
        l->eager_max = tl->max_payload;
    }
}

void kn_p2p_set_wait(struct kn_p2p *p2p, int local_procs)
{
    kn_p2p_limits_t *l = &p2p->lim;
    l->host_procs = local_procs;
    l->oversubscribed = local_procs > l->ncpus;
    uint64_t spin = kn_cfg.spin_count > 0 ? (uint64_t)kn_cfg.spin_count : 1;
    uint64_t yield = kn_cfg.yield_time;
    switch (kn_cfg.wait) {
    case 1: l->wait_mode = 1; break;
    case 2: l->wait_mode = 2; break;
    case 3: l->wait_mode = 3; break;
    default:
        /* auto: always ends up sleeping; an oversubscribed node gives the
         * core away at once, a node with a core per rank spins first.
         * Sleeping late matters on a virtual machine: where every rank of
         * a cpu sleeps, the cpu halts, and its wake-up waits for the host
         * to run it again (steal time).  8 ranks on 2 busy-host cpus
         * (steal 25-70 % during the runs), 1 MiB, yielding 200 us -> 2 ms:
         * alltoall 18.8 -> 12.5 ms, allgather 7.4 -> 5.4, allreduce 3.0 ->
         * 2.4; on a quiet host a tie (docs/guide.md, Waiting). */
        l->wait_mode = 3;
        if (l->oversubscribed)
            spin = 1; /* measured: any polling beyond one round only delays the peer that needs this core */
        else
            yield *= 5;
        break;
    }
    p2p->spin_count = spin;
    p2p->yield_ns = yield;
}

void kn_p2p_get_limits(const struct kn_p2p *p2p, kn_p2p_limits_t *l)
{
    *l = p2p->lim;
}

void kn_p2p_set_sleep_hook(struct kn_p2p *p2p, int (*arm)(void *, int *, int), void (*disarm)(void *),
                           unsigned (*spin)(void *), void *arg)
{
    p2p->sleep_arm = arm;
    p2p->sleep_disarm = disarm;
    p2p->sleep_spin = spin;
    p2p->sleep_arg = arg;
}

void kn_p2p_set_progress_hook(struct kn_p2p *p2p, int (*hook)(void *), void *arg)
{
    p2p->hook = hook;
    p2p->hook_arg = arg;
}

int kn_p2p_request_done(const knit_request_t *r)
{
    return r->state == RS_DONE;
}

size_t kn_p2p_unexpected_bytes(const struct kn_p2p *p2p)
{
    return p2p->unexp_bytes;
}

void kn_p2p_destroy(struct kn_p2p *p2p)
{
    if (!p2p)
        return;
    kn_list_t *pos, *tmp;
    kn_list_for_each_safe(pos, tmp, &p2p->unexp) {
        free(kn_list_entry(pos, struct knit_message, link));
    }
    kn_pool_destroy(&p2p->req_pool);
    kn_pool_destroy(&p2p->pend_pool);
    kn_pool_destroy(&p2p->ann_pool);
    kn_pool_destroy(&p2p->chunk_pool);
    free(p2p->table);
    free(p2p->gens);
    free(p2p->free_idx);
    free(p2p->peers);
    free(p2p);
}
