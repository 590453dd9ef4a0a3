/*
 * The runtime context: a process's place in the job and the state of every
 * layer.  The runtime core sits at the top of the native library: it
 * starts and stops the layers below it in order.
 */
#ifndef KN_CORE_CTX_H
#define KN_CORE_CTX_H

#include "boot/boot.h"
#include "knit.h"

struct knit_ctx {
    int rank, size;
    int node, nnodes;
    int local_rank, local_size, first_local;
    int *node_of;      /* [size]: node of each rank */
    int *node_first;   /* [nnodes + 1]: first rank of each node */
    char jobid[64];
    char hostname[64];
    kn_boot_t *boot;
    struct kn_p2p *p2p;
    struct kn_coll *coll;   /* collectives engine, owns the world communicator */
    struct kn_tl *self_tl, *shm_tl, *net_tl;
    int finalized;
};

/* Parse "2,2,1" (ranks per node) into ctx->node_of / node_first. */
knit_status_t kn_ctx_set_geometry(knit_ctx_t *ctx, const char *node_sizes, int size);

#endif
