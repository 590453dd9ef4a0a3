/*
 * The shared memory (/dev/shm) a job takes on a node, every file counted,
 * in one function: knitrun checks it before it starts any process, and
 * knit_init again (for jobs that other launchers start), against
 * KNIT_SHM_MAX and the free space of /dev/shm.  docs/guide.md gives the
 * formula; `knit-info --shm N` prints it for N ranks.
 */
#ifndef KN_CORE_NODESHM_H
#define KN_CORE_NODESHM_H

#include <stddef.h>
#include <stdint.h>

#include "knit.h"
#include "shm/shm.h"
#include "util/config.h"

typedef struct kn_node_shm {
    int ranks;           /* on the node */
    int offload;         /* an agent runs on the node */
    uint64_t cap;        /* KNIT_SHM_MAX (0: no limit) */
    uint64_t p2p;        /* the node segment, every fast box in use */
    uint64_t p2p_start;  /* ... as allocated at start (fast boxes come later) */
    uint64_t coll;       /* the collectives' segment of a communicator of every rank */
    uint64_t agent;      /* the offload command queue */
    uint64_t budget;     /* what collectives' segments may take together (0: no limit) */
    uint64_t start;      /* allocated at start, without which no rank runs: p2p_start + agent */
    uint64_t full;       /* ... and every fast box in use: p2p + coll + agent (<= cap) */
    uint64_t minimum;    /* with no fast box: what KNIT_SHM_MAX must allow */
    unsigned boxes;      /* fast boxes in the node's pool */
    size_t box_size;
    kn_shm_params_t params; /* the node segment's parameters (no job fields) */
} kn_node_shm_t;

/*
 * The plan for a node of ranks ranks, from the tunables cfg (&kn_cfg, or
 * the ranks' settings where they differ from the caller's: knitrun -x;
 * offload: whether the node runs an agent).  KNIT_ERR_NOMEM when the ranks cannot
 * fit under KNIT_SHM_MAX even without fast boxes, KNIT_ERR_INVAL for bad
 * KNIT_SHM_* settings; either way msg gets one line saying what is needed,
 * what there is and which tunable to change (*out is filled as far as it
 * could be).
 */
knit_status_t kn_node_shm_plan(const struct kn_config *cfg, int ranks, int offload, kn_node_shm_t *out, char *msg,
                               size_t len);

/*
 * The free space of /dev/shm against what the nodes of plans (emulated
 * nodes share a host) allocate at start: KNIT_OK, or KNIT_ERR_NOMEM with
 * the one line in msg.  free_bytes: UINT64_MAX when unknown.  (Fast boxes
 * and collectives' segments, allocated later, are not needed: where
 * /dev/shm has no room left for them, packets keep going through the
 * queues and collectives through messages.)
 */
knit_status_t kn_node_shm_fits(const kn_node_shm_t *plans, int nplans, uint64_t free_bytes, char *msg,
                               size_t len);

/* Free bytes of /dev/shm (statvfs), UINT64_MAX when it cannot be told. */
uint64_t kn_node_shm_free(void);

#endif
