/*
 * The transport interface: one narrow ops table that every transport (shm,
 * net, self) fills, and the packet header the p2p layer puts on the wire.
 *
 * A transport moves two things:
 *   packets  a 24-byte header plus up to max_payload bytes, delivered in
 *            order per sender to the recv callback;
 *   bulk     rendezvous data: get (read peer memory into a local buffer)
 *            and put (write local data into peer memory), for transports
 *            with KN_TL_CAP_RMA to a given peer.
 * Dependencies: transports include util and this header, never p2p.
 */
#ifndef KN_TL_TL_H
#define KN_TL_TL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "knit.h"

/* Packet types of the p2p protocol (see docs/protocols.md). */
enum kn_pkt_type {
    KN_PKT_INLINE = 1,  /* message, payload in the packet (≤ max_inline) */
    KN_PKT_EAGER,       /* message, payload in the packet (≤ max_payload); a longer
                         * one (up to the transport's eager_max) carries its first
                         * max_payload bytes and MORE packets follow at once */
    KN_PKT_RTS,         /* message, rendezvous: body kn_pkt_rts_t */
    KN_PKT_PUSHED,      /* message already written into an announced receive: body kn_pkt_ids_t */
    KN_PKT_RTR,         /* receiver announces a posted receive: body kn_pkt_rtr_t */
    KN_PKT_CTS,         /* receiver matched an RTS, send DATA packets: body kn_pkt_ids_t */
    KN_PKT_DATA,        /* pipelined rendezvous data: hdr.len = offset, the receive's
                         * id in hdr.seq (high half) and hdr.comm (low half); body: bytes */
    KN_PKT_FIN,         /* receiver finished reading the sender's buffer: body kn_pkt_ids_t */
    KN_PKT_REVOKE,      /* receiver cancels an announced receive: body kn_pkt_ids_t */
    KN_PKT_REVOKE_ACK,  /* sender forgot the announcement: body kn_pkt_ids_t */
    KN_PKT_MORE,        /* the rest of a multi-packet EAGER message, next from its
                         * sender: hdr.len = offset, comm/tag/seq of the message */
    KN_PKT_NAK,         /* receiver could not pull the message (a buffer is not
                         * accessible), instead of FIN: body kn_pkt_nak_t */
    KN_PKT_PUSH_FAILED, /* message that could not be pushed into an announced
                         * receive, instead of PUSHED: body kn_pkt_nak_t */
    KN_PKT_TYPE_MAX
};


/* 24 bytes, fixed width, validated on receipt. */
typedef struct kn_pkt_hdr {
    uint8_t type;
    uint8_t flags;
    uint16_t reserved;
    uint32_t comm;
    int32_t tag;
    uint32_t seq;       /* message number from this sender (messages only) */
    uint64_t len;       /* message length (DATA: offset of this piece) */
} kn_pkt_hdr_t;
_Static_assert(sizeof(kn_pkt_hdr_t) == 24, "packet header is 24 bytes");

typedef struct kn_pkt_rts {
    uint64_t sreq;      /* sender's request id */
    uint64_t addr;      /* sender's buffer */
    uint64_t rkey;      /* transport key of the buffer (0 for shm) */
} kn_pkt_rts_t;

typedef struct kn_pkt_rtr {
    uint64_t rreq;      /* receiver's request id */
    uint64_t addr;      /* receive buffer */
    uint64_t cap;       /* its capacity */
    uint64_t rkey;      /* transport key of the buffer; left off (24-byte
                         * body) when the transport needs none */
    /* hdr.comm/tag: the receive's envelope (tag may be KNIT_ANY_TAG);
     * hdr.seq: first message number the announcement may match */
} kn_pkt_rtr_t;

typedef struct kn_pkt_ids {
    uint64_t sreq;
    uint64_t rreq;
} kn_pkt_ids_t;

/* Why a rendezvous failed, told to the other side: the status its own
 * request completes with (KNIT_ERR_FAULT: your buffer is not accessible;
 * KNIT_ERR_PEER_FAULT: mine is not). */
typedef struct kn_pkt_nak {
    uint64_t sreq;
    uint64_t rreq;
    int32_t status;
    uint32_t reserved;  /* 0 */
} kn_pkt_nak_t;

typedef struct kn_tl kn_tl_t;

/* Completion of an asynchronous bulk copy. */
typedef struct kn_tl_comp {
    void (*cb)(struct kn_tl_comp *comp, knit_status_t status);
} kn_tl_comp_t;

/* Called by progress for every packet that arrives; payload is valid only
 * during the call. */
typedef void (*kn_tl_recv_cb_t)(void *arg, int src, const kn_pkt_hdr_t *hdr,
                                const void *payload, size_t len);

#define KN_TL_CAP_RMA 0x1 /* get/put work to this peer */

typedef struct kn_tl_ops {
    const char *name;
    /* Queue one packet for peer.  KNIT_ERR_AGAIN: no credit now (progress
     * and retry); nothing was sent. */
    knit_status_t (*send)(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *hdr,
                          const void *payload, size_t len);
    /* The same, the payload in two pieces (p1 then p2, l1 + l2 bytes):
     * no copy to join them first.  May be NULL. */
    knit_status_t (*send2)(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *hdr, const void *p1, size_t l1,
                           const void *p2, size_t l2);
    /* Deliver arrived packets; returns how many things happened (0 = idle). */
    int (*progress)(kn_tl_t *tl);
    /* Peer capabilities (KN_TL_CAP_*). */
    unsigned (*caps)(kn_tl_t *tl, int peer);
    /* Bulk copies between local memory and a peer's (rkey from the peer's
     * mem_reg).  KNIT_OK: done on return; KNIT_INPROGRESS: comp->cb is
     * called from a later progress; negative: failed, nothing pending.
     * comp NULL: done on return (by this process alone).  KNIT_ERR_FAULT
     * (returned or completed): a buffer of the copy, the local or the
     * peer's, is not accessible (the caller finds out which); the
     * transport logs nothing for it. */
    knit_status_t (*get)(kn_tl_t *tl, int peer, void *local, size_t len, uint64_t raddr,
                         uint64_t rkey, kn_tl_comp_t *comp);
    knit_status_t (*put)(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr,
                         uint64_t rkey, kn_tl_comp_t *comp);
    /* put, whose completion says that the data is in the peer's memory
     * (one-sided operations; put's may only say that it left).  NULL:
     * put's completion says so already, or no put. */
    knit_status_t (*put_remote)(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr,
                                uint64_t rkey, kn_tl_comp_t *comp);
    /* Vectored copies with a peer whose memory this process reaches
     * itself (same node), done on return: the nl local pieces and the nr
     * remote ones (addresses in the peer) hold the same bytes, matched
     * in order.  KNIT_ERR_FAULT: a piece is not accessible (either side);
     * KNIT_ERR_NOT_SUPPORTED: not to this peer.  NULL: not offered. */
    knit_status_t (*rwv)(kn_tl_t *tl, int peer, int write, const struct iovec *local, int nl,
                         const struct iovec *remote, int nr);
    /* Where [raddr, raddr + len) of peer's memory is mapped in this
     * process (memory the peer shares: its heap), NULL where it is not:
     * plain loads and stores reach it.  NULL op: never. */
    void *(*map)(kn_tl_t *tl, int peer, uint64_t raddr, size_t len);
    /* Make [buf, buf+len) reachable by peers' get/put; *rkey goes to the
     * peer, *memh back to mem_dereg.  NULL ops: no registration needed
     * (rkey 0). */
    knit_status_t (*mem_reg)(kn_tl_t *tl, const void *buf, size_t len, uint64_t *rkey, void **memh);
    void (*mem_dereg)(kn_tl_t *tl, void *memh);
    /* Sleeping, on one transport or several at once (kn_tl_sleep): arm
     * returns a file descriptor that becomes readable when there may be
     * something to do (and makes peers signal it), or -1 when there is
     * work already; disarm undoes arm after the poll.  NULL: this
     * transport cannot sleep (its progress is all local). */
    int (*arm)(kn_tl_t *tl);
    void (*disarm)(kn_tl_t *tl);
    /* Wake peer if it sleeps here: the caller has just published, in memory
     * the peer polls, something it may be waiting for.  NULL: the transport
     * has no such memory. */
    void (*wake)(kn_tl_t *tl, int peer);
    void (*destroy)(kn_tl_t *tl);
} kn_tl_ops_t;

struct kn_tl {
    const kn_tl_ops_t *ops;
    size_t max_inline;   /* payload bytes carried in the descriptor itself */
    size_t max_payload;  /* largest payload of one packet */
    size_t eager_max;    /* messages up to this go eagerly, in several packets beyond
                          * max_payload (no handshake: worth it where a round trip
                          * costs more than the copies); 0: KNIT_EAGER_MAX, at most
                          * one packet */
    unsigned bulk_inflight; /* bulk copies worth keeping in flight per transfer */
    int pull_preferred;  /* get is cheaper than put: receives need no announcing */
    int busy;            /* set by the engine before each progress: it has copies of
                          * its own to make, so a transport's helping peers with
                          * theirs would only slow both (shm's cooperative copies) */
    kn_tl_recv_cb_t recv_cb;
    void *cb_arg;
};

/* Sleep in every transport that can until one of them has something, one
 * of the extra file descriptors (nextra, at most 4) is readable, or
 * timeout_ns passed.  The caller has just found nothing to do.  ready
 * (NULL: none) is asked again once every transport is armed, so that
 * whatever a peer publishes before it looks for sleepers is seen, and
 * whatever it publishes after rings; when it says yes, nothing sleeps and
 * the caller must take that yes as its answer (ready may have acted on it:
 * a matched probe).  Returns KN_TL_WOKE_* bits: an extra descriptor is
 * readable, ready said yes. */
#define KN_TL_WOKE_EXTRA 1
#define KN_TL_WOKE_READY 2
int kn_tl_sleep(kn_tl_t *const *tls, int n, const int *extra, int nextra, uint64_t timeout_ns,
                int (*ready)(void *), void *ready_arg);

#endif
