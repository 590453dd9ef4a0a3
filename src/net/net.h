/*
 * Network transport: libfabric RDM endpoints between nodes (and within a
 * node with KNIT_NET_ONLY).  Packets travel as sends into bounce buffers
 * the receiver pre-posted, under per-peer credits; rendezvous data moves
 * by RDMA read (pull) and write (push) of registered memory, through a
 * registration cache.  See docs/net.md.
 *
 * Start-up in three steps (the caller runs a bootstrap fence between the
 * name exchange and the connects):
 *   kn_net_open      open fabric, domain, endpoint, CQ, AV; post receives
 *   kn_net_name      this endpoint's address, to publish in the store
 *   kn_net_connect   insert a peer's address into the address vector
 */
#ifndef KN_NET_NET_H
#define KN_NET_NET_H

#include "tl/tl.h"

typedef struct kn_net_params {
    int rank, size;
    const unsigned char *peers;  /* [size]: 1 when the rank is reached by this transport */
    const char *provider;        /* KNIT_NET_PROVIDER */
    const char *iface;           /* KNIT_NET_IFACE (may be "" or NULL) */
    unsigned credits;            /* bounce buffers posted per peer */
    size_t bounce_size;          /* payload of one bounce buffer */
    size_t eager_max;            /* largest eager message (several bounce buffers), 0: one */
    unsigned tx_bufs;
    unsigned inflight;           /* bulk copies in flight per transfer */
    size_t rcache_max;
    int rcache_verify;           /* 0 auto, 1 pagemap, 2 off */
    uint64_t timeout_ns;         /* kn_net_wireup's limit (and finalize's flush), 0 none */
    /* ends the job (never returns): for errors found in progress */
    void (*fatal)(void *arg, const char *msg);
    void *fatal_arg;
} kn_net_params_t;

knit_status_t kn_net_open(const kn_net_params_t *p, kn_tl_recv_cb_t cb, void *cb_arg, kn_tl_t **out);
/* Endpoint address of this process (*len: in capacity, out length). */
knit_status_t kn_net_name(kn_tl_t *tl, void *buf, size_t *len);
knit_status_t kn_net_connect(kn_tl_t *tl, int rank, const void *name, size_t len);

/*
 * Start-up check that the network between nodes carries messages: a small
 * tracked send to each of peers[] (npeers), progressing until every one of
 * them answered the same way and ours left, within the connection set-up
 * limit (timeout_ns; KNIT_ERR_TIMEOUT naming the silent peer).  Every
 * listed peer must make the same call, naming this rank, at the same time.
 * Connections made later, at the application's pace, have no time limit:
 * a peer that computes for an hour before it first receives is not dead,
 * and one that dies is reported by the launcher.
 */
knit_status_t kn_net_wireup(kn_tl_t *tl, const int *peers, int npeers);

/* Before the finalize fence: make sure everything sent to peers has left
 * (with manual progress, queued data moves only while we progress). */
void kn_net_quiesce(kn_tl_t *tl);

/* "tcp;ofi_rxm on lo (fabric 127.0.0.0/8)": the provider in force. */
const char *kn_net_describe(kn_tl_t *tl);

/* Registration cache counters (for tests and knit-info). */
typedef struct kn_net_rcache_stats {
    uint64_t hits, misses, evictions, invalidations;
    size_t bytes, entries;
    int verify;   /* pages are checked on hits */
} kn_net_rcache_stats_t;
void kn_net_rcache_stats(kn_tl_t *tl, kn_net_rcache_stats_t *st);

/* What crossed this endpoint (KNIT_STATS): messages with their knit
 * headers, credits included, and RMA bytes counted at the side that
 * issues the read or write (a rendezvous's puller). */
typedef struct kn_net_traffic {
    uint64_t sent_msgs, sent_bytes;
    uint64_t recv_msgs, recv_bytes;
    uint64_t read_bytes, write_bytes;
} kn_net_traffic_t;
void kn_net_traffic(kn_tl_t *tl, kn_net_traffic_t *out);

/* Load libfabric (once; it is not linked, see fabric_dl.c).  NULL when it
 * is there, else why not. */
const char *kn_net_fabric_load(void);

/* Can a process open the configured provider here?  Writes a line about
 * the provider (or why not) into what; returns 1 when it works. */
int kn_net_probe(const char *provider, const char *iface, char *what, size_t len);

#endif
