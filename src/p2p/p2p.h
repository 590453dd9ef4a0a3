/*
 * Point-to-point engine: MPI matching, requests, the protocol ladder
 * (inline, eager, rendezvous by push or pull or pipelined copy), credits
 * and waiting.  Transports are reached through the kn_tl_t ops table; the
 * choice of transport per peer is made in one place (kn_p2p_tl_of).
 */
#ifndef KN_P2P_P2P_H
#define KN_P2P_P2P_H

#include "knit.h"
#include "tl/tl.h"

typedef struct kn_p2p kn_p2p_t;

typedef struct kn_p2p_params {
    int rank, size;
    const int *node_of;   /* [size] */
    int node;
    /* called on a fatal protocol error: ends the job, never returns */
    void (*fatal)(void *arg, const char *msg);
    void *fatal_arg;
} kn_p2p_params_t;

knit_status_t kn_p2p_create(const kn_p2p_params_t *p, kn_p2p_t **out);
/* Give the engine a transport for a set of peers (ranks first..first+n-1). */
void kn_p2p_set_tl(kn_p2p_t *p2p, kn_tl_t *tl, int first, int n);
/* Whether a packet's length (and a NAK's body) fits its type (the first
 * check of every packet received; the fuzz target tests/fuzz/fuzz_pkt.c
 * drives the whole receive path).  eager_max: the sender's transport's
 * eager limit. */
int kn_p2p_pkt_ok(const kn_pkt_hdr_t *h, const void *payload, size_t len, size_t eager_max);
/* Called as each transport is created: the callback it must deliver to. */
kn_tl_recv_cb_t kn_p2p_recv_cb(void);
void kn_p2p_destroy(kn_p2p_t *p2p);

/* One round of progress over every transport; returns events seen. */
int kn_p2p_progress(kn_p2p_t *p2p);

/* Wait until cond(arg): spin, then yield, then sleep in the transports.
 * Before sleeping, once armed, cond is asked again (so that memory a peer
 * publishes before waking sleepers is seen); every yes of cond ends the
 * wait, so a cond that acts on its yes (matches a probe) acts once. */
void kn_p2p_wait(kn_p2p_t *p2p, int (*cond)(void *), void *arg);

/* Sleep in the transports and on extra file descriptors (at most 4; a
 * layer above waiting on its own events too), for one wait of someone who
 * just found nothing to do; yields instead while p2p has work of its own.
 * Returns whether an extra descriptor is readable. */
int kn_p2p_sleep(kn_p2p_t *p2p, const int *extra, int nextra, uint64_t timeout_ns);

/* Memory shared with local peers outside the transports (collectives'
 * flags): whether peer's transport can wake it when something is published
 * there, and the wake-up itself (nothing if it is not asleep).  A waiter
 * uses kn_p2p_wait, whose condition is checked again once it is armed. */
int kn_p2p_can_wake(kn_p2p_t *p2p, int peer);
void kn_p2p_wake(kn_p2p_t *p2p, int peer);

/* Reading a local peer's memory at an address it published (collectives
 * that copy straight from the other ranks' buffers): whether peer's
 * transport can (a bulk get needing no registration), and the copy itself,
 * done on return (KNIT_ERR_FAULT: local is not writable;
 * KNIT_ERR_PEER_FAULT: the peer's memory is not readable). */
int kn_p2p_can_get(kn_p2p_t *p2p, int peer);
/* The transport that reaches peer (one-sided layers drive its bulk
 * copies themselves). */
kn_tl_t *kn_p2p_tl(kn_p2p_t *p2p, int peer);
knit_status_t kn_p2p_get(kn_p2p_t *p2p, int peer, void *local, size_t len, uint64_t raddr);

/* The thresholds in force (after clamping to what the transports allow). */
typedef struct kn_p2p_limits {
    size_t inline_max, eager_max, cma_min, bulk_chunk, heap_rndv_min;
    int wait_mode;         /* resolved: 1 spin, 2 yield, 3 block */
    int oversubscribed;
    int ncpus;
    int host_procs;        /* ranks sharing this host's cpus (KNIT_HOST_PROCS) */
    int rndv_push;         /* KNIT_RNDV_PUSH: 0 auto, 1 on, 2 off */
} kn_p2p_limits_t;
void kn_p2p_get_limits(const kn_p2p_t *p2p, kn_p2p_limits_t *l);

/* Resolve KNIT_WAIT once the node's population is known. */
void kn_p2p_set_wait(kn_p2p_t *p2p, int local_procs);

/* The operations behind the knit_* point-to-point calls (the runtime core
 * checks the context and forwards). */
/* flags: KNIT_SEND_SYNC, or KN_P2P_SEND_EAGER (knit's collectives): send
 * eagerly whatever fits in one packet of the transport, past
 * KNIT_EAGER_MAX, so that the sender never waits for the receiver to be
 * scheduled (ranks that outnumber cores) */
#define KN_P2P_SEND_EAGER 0x100u
knit_status_t kn_p2p_isend(kn_p2p_t *p2p, const void *buf, size_t len, int peer, int tag, uint32_t comm,
                           unsigned flags, knit_request_t **out);
knit_status_t kn_p2p_irecv(kn_p2p_t *p2p, void *buf, size_t len, int peer, int tag, uint32_t comm,
                           knit_request_t **out);
/* remove: take the message off the queue into *msg (matched probe) */
knit_status_t kn_p2p_iprobe(kn_p2p_t *p2p, int peer, int tag, uint32_t comm, int remove, int *flag,
                            knit_message_t **msg, knit_msg_status_t *st);
knit_status_t kn_p2p_probe(kn_p2p_t *p2p, int peer, int tag, uint32_t comm, knit_msg_status_t *st);
knit_status_t kn_p2p_imrecv(kn_p2p_t *p2p, void *buf, size_t len, knit_message_t **msg,
                            knit_request_t **out);

/* One hook run inside every progress call (the collective schedules):
 * returns the events it saw.  Not re-entered: progress called from inside
 * the hook skips it.  NULL removes it. */
void kn_p2p_set_progress_hook(kn_p2p_t *p2p, int (*hook)(void *), void *arg);

/* What else ends a sleep of the engine's waits (the offload layer: the
 * agent's completions).  arm, just before sleeping, adds up to max file
 * descriptors to wait on and returns how many, or -1 when there is work
 * already (nothing sleeps); disarm runs after a sleep it armed (k > 0).
 * spin, at the start of a wait, says how many rounds to poll before
 * yielding while the rank waits for its agent (0: the engine's own count):
 * where the node has no cpu to spare, polling takes the one the agent
 * needs.  NULL removes them. */
void kn_p2p_set_sleep_hook(kn_p2p_t *p2p, int (*arm)(void *, int *, int), void (*disarm)(void *),
                           unsigned (*spin)(void *), void *arg);

/* Whether a request has completed (no progress, request stays alive). */
int kn_p2p_request_done(const knit_request_t *r);

/* Bytes of memory held by unexpected messages (for tests and knit-info). */
size_t kn_p2p_unexpected_bytes(const kn_p2p_t *p2p);

#endif
