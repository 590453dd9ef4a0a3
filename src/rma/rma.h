/*
 * The one-sided layer (include/knit/rma.h, docs/rma.md): windows
 * (win.c), operations, requests and methods (ops.c), and the cost model
 * that picks a method (model.c).  Over the transports (vectored and
 * one-per-block copies), the p2p engine (progress) and offload (the
 * agents' built-in `rma` module, modules/builtin/rma.c).
 */
#ifndef KN_RMA_RMA_H
#define KN_RMA_RMA_H

#include <stdint.h>

#include "knit.h"
#include "knit/rma.h"
#include "p2p/p2p.h"
#include "rma/rma_mod.h"
#include "util/list.h"

/* One member's exposed memory. */
typedef struct kn_rma_peer {
    uint64_t base, size, rkey;
    uint64_t acclock;      /* its accumulate lock (rma_mod.h); 0: none */
    int job;               /* its job rank */
} kn_rma_peer_t;

struct knit_win {
    knit_comm_t *comm;
    int n, me;
    kn_rma_peer_t *peer;   /* [n] */
    void *memh;            /* our registration with the network transport */
    void *mem;             /* knit_mem_alloc's */
    void *acclock;         /* our accumulate lock (in the shared heap), or NULL */
    unsigned method;       /* KNIT_RMA_* (not DEFAULT) */
    int dynamic;           /* every address of every member (knit_win_create_dynamic) */
    kn_list_t reqs;        /* requests not yet complete */
};

/* The layer's state (one context per process). */
typedef struct kn_rma {
    knit_ctx_t *ctx;
    kn_p2p_t *p2p;
    kn_tl_t *net;          /* the network transport (registrations), NULL: none */
    knit_module_t *mod;    /* `rma` at every agent; NULL: not (yet) loaded */
    int agents;            /* the job has agents: the module may load */
    int load_tried;
    const char *why_no_agent;
    int rank, node;
    kn_list_t open;        /* every request not complete, all windows */
    size_t nopen;
    int early;             /* operations completed early (KNIT_RMA_LOCAL) since the last agent fence */
} kn_rma_t;
extern kn_rma_t kn_rma;

typedef struct kn_rma_params {
    knit_ctx_t *ctx;
    kn_p2p_t *p2p;
    kn_tl_t *net;
    int rank, node;
    int agents;            /* 1: this node has an agent (the module loads at every one) */
} kn_rma_params_t;

/* At knit_init (collective over the job: loads the module where there
 * are agents) and knit_finalize. */
knit_status_t kn_rma_open(const kn_rma_params_t *p);
void kn_rma_close(void);

/* ops.c: wait for every request of win (to rank, or all: rank -1). */
knit_status_t kn_rma_wait_win(knit_win_t *win, int rank);

/* model.c: the cost model (docs/rma.md, "Choosing a method") and the
 * choice. */
typedef struct kn_rma_model {
    double ts_cma;         /* one cross-memory-attach call, ns */
    double tn_cma;         /* cross-memory attach, ns per byte */
    double ts_cp;          /* one small memcpy, ns */
    double tm;             /* memcpy, ns per byte */
} kn_rma_model_t;
const kn_rma_model_t *kn_rma_model(void);
/* The parameters: measured again (fresh) or as known (this process's, the
 * cache's, else measured); *from (may be NULL) says which. */
const kn_rma_model_t *kn_rma_model_measure(int fresh, const char **from);
/* The cache file (KNIT_RMA_MODEL_CACHE); 0: none. */
int kn_rma_model_cache_path(char *buf, size_t len);
/* The origin's cost of nblocks blocks of bsize bytes to another node by
 * the agent or the pack method (ns), the origin's blocks in memory the
 * agent maps (local_mapped) or not. */
double kn_rma_cost(unsigned method, size_t bsize, size_t nblocks, int local_mapped);
/* The method auto picks for such a transfer to a target on this node
 * (same_node) or another. */
unsigned kn_rma_auto(int same_node, size_t bsize, size_t nblocks, int local_mapped);

#endif
