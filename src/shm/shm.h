/*
 * Shared-memory transport: the node segment that the ranks of one node
 * share, with one queue (ring of one-cache-line entries + a buffer for payloads) per
 * ordered pair of ranks, a doorbell per rank, and cross-memory attach
 * (process_vm_readv/writev) for bulk data.
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
    unsigned ring_entries;
    size_t buf_size;       /* eager buffer per pair (power of two) */
    size_t coop_chunk;     /* cooperative copies in chunks of this; 0 = off */
    int membarrier;        /* KNIT_SHM_MEMBARRIER: try the asymmetric doorbell */
} kn_shm_params_t;

knit_status_t kn_shm_create(const kn_shm_params_t *p);
knit_status_t kn_shm_attach(const kn_shm_params_t *p, kn_tl_recv_cb_t cb, void *cb_arg,
                            kn_tl_t **out);
knit_status_t kn_shm_ready(kn_tl_t *tl);

/* Which mechanism moves rendezvous data on this node, and why. */
const char *kn_shm_bulk_mechanism(kn_tl_t *tl);

/* Can this process read a child's memory by cross-memory attach?  (The
 * check knit-info shows; the runtime probes its real peers.) */
int kn_shm_cma_probe(char *why, size_t len);

/* The segment's file name for a job and node (for knitrun's cleanup and
 * the tests). */
void kn_shm_segment_name(char *buf, size_t len, const char *jobid, int node);

#endif
