/*
 * Shared-memory transport: the node segment that the ranks of one node
 * share.  Every rank has one inbound queue that all its node peers write
 * into, a send buffer for the payloads it sends through those queues, and
 * a doorbell; a pair of ranks that talks often gets a fast box (its own
 * ring and payload buffer) from a pool of the node; bulk data moves by
 * cross-memory attach (process_vm_readv/writev).  Memory is O(ranks): see
 * kn_shm_layout and the comment at the top of shm.c.
 *
 * Start-up is in three steps separated by node-wide barriers (the caller
 * runs a bootstrap fence between them):
 *   kn_shm_create   local rank 0 creates and initializes the segment
 *   kn_shm_attach   every rank maps it and publishes its pid
 *   kn_shm_ready    every rank probes cross-memory attach to its peers;
 *                   local rank 0 unlinks the file (nothing left on a crash)
 */
#ifndef KN_SHM_SHM_H
#define KN_SHM_SHM_H

#include "tl/tl.h"

typedef struct kn_shm_params {
    const char *jobid;
    int node;
    int local_rank, local_size;
    int first_rank;        /* job rank of local rank 0 (peers are job ranks) */
    int cma_mode;          /* 0 auto, 1 on, 2 off (KNIT_CMA) */
    unsigned queue_entries; /* a rank's inbound queue (power of two) */
    size_t buf_size;       /* a rank's send buffer, and a fast box's buffer (power of two) */
    unsigned ring_entries; /* a fast box's ring (power of two) */
    unsigned fbox_max;     /* fast boxes a rank may send on, and receive on */
    unsigned fbox_after;   /* packets to a peer through its queue before a fast box is asked for */
    size_t max_bytes;      /* the segment's size at most: fast boxes are scaled to fit (0: no limit) */
    uint64_t budget;       /* bytes that files made later (collectives' segments) may take on the
                            * node, charged through util/shmfile.h (0: none) */
    size_t coop_chunk;     /* cooperative copies in chunks of this; 0 = off */
    int membarrier;        /* KNIT_SHM_MEMBARRIER: try the asymmetric doorbell */
} kn_shm_params_t;

/* The node segment of a set of parameters. */
typedef struct kn_shm_layout {
    size_t size;           /* the file, every fast box included */
    size_t reserved;       /* allocated at creation: all but the fast boxes, whose pages are
                            * allocated as they are handed out */
    size_t minimum;        /* the size without any fast box */
    size_t box_size;       /* one fast box */
    unsigned boxes;        /* fast boxes in the pool */
} kn_shm_layout_t;

/*
 * The layout for p: at most fbox_max fast boxes per rank, one per ordered
 * pair, and only as many as max_bytes leaves room for.  KNIT_ERR_NOMEM
 * when even without fast boxes the segment exceeds max_bytes (*out is
 * filled all the same: minimum says how much it needs); KNIT_ERR_INVAL
 * (logged) for parameters out of range.  kn_shm_create and kn_shm_attach
 * use it, and so does the node's plan (core/nodeshm.h) that knitrun and
 * knit_init check against KNIT_SHM_MAX and /dev/shm.
 */
knit_status_t kn_shm_layout(const kn_shm_params_t *p, kn_shm_layout_t *out);

knit_status_t kn_shm_create(const kn_shm_params_t *p);
knit_status_t kn_shm_attach(const kn_shm_params_t *p, kn_tl_recv_cb_t cb, void *cb_arg,
                            kn_tl_t **out);
knit_status_t kn_shm_ready(kn_tl_t *tl);

/* Which mechanism moves rendezvous data on this node, and why. */
const char *kn_shm_bulk_mechanism(kn_tl_t *tl);

/* Fast boxes this rank sends on and receives on (knit-info, tests). */
void kn_shm_fbox_count(kn_tl_t *tl, unsigned *out, unsigned *in);

/* Can this process read a child's memory by cross-memory attach?  (The
 * check knit-info shows; the runtime probes its real peers.) */
int kn_shm_cma_probe(char *why, size_t len);

/* The segment's file name for a job and node (for knitrun's cleanup and
 * the tests). */
void kn_shm_segment_name(char *buf, size_t len, const char *jobid, int node);

#endif
