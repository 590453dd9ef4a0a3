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

/* An operation, described. */
typedef struct xfer {
    int kind;                      /* KN_RMA_K_* */
    kn_rma_desc_t ldesc, rdesc;    /* strided (segs NULL) */
    uint64_t laddr, raddr;
    kn_rma_seg_t *segs;            /* list form (malloc'ed) */
    uint64_t nseg;
    uint64_t total, nblocks, bsize;
    uint64_t lext, rext;           /* strided: bytes from the first to past the last byte, per side */
    knit_rma_acc_t acc;
    uint32_t aop;                  /* RMW */
    uint64_t operand, compare;
    uint64_t resaddr;              /* GACC: where the target's data before goes (contiguous) */
    uint64_t lockaddr;             /* ACC, GACC, RMW: the target's accumulate lock */
} xfer_t;

/* One member's exposed memory. */
typedef struct kn_rma_peer {
    uint64_t base, size, rkey;
    uint64_t acclock;      /* its accumulate lock (rma_mod.h); 0: none */
    uint64_t settle;       /* the address of its settle word (knit_win.settle) */
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
    /* puts held for the next synchronization (defer.c) */
    int defer;             /* members on other nodes, and every member can: knit_rma_barrier sends them */
    uint32_t id;           /* the same at every member, unlike any other window a member shares */
    struct kn_rma_pend *pend;          /* [n] what waits for each member */
    size_t held;                       /* bytes in pend, all members' */
    /* synchronizations whose messages each member applies itself
     * (knit_rma_barrier's, MPI's fence: kn_rma_settle) */
    unsigned long long epoch;          /* so far */
    uint64_t settle;                   /* the last one whose messages this member has applied (the others read it) */
    unsigned long long *unsettled;     /* [n] one the member may still be applying (0: none) */
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
    uint32_t next_win_id;  /* above every window id this process has taken part in */
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

/* ops.c: wait for every request of win (to rank, or all: rank -1),
 * the held puts sent first (wait_win); the requests alone (wait_reqs). */
knit_status_t kn_rma_wait_win(knit_win_t *win, int rank);
knit_status_t kn_rma_wait_reqs(knit_win_t *win, int rank);
/* Start x to rank (frees x->segs), as a call with these flags would
 * after its checks; req NULL: wait for it. */
knit_status_t kn_rma_start(knit_win_t *win, int rank, xfer_t *x, unsigned flags, knit_rma_req_t **req);
/* Every local piece of x could be user memory. */
int kn_rma_local_plausible(const xfer_t *x);

/* defer.c: puts to other nodes held until the window's next
 * synchronization (docs/rma.md, "Puts held for the barrier").  The
 * context id of knit_rma_barrier's messages. */
#define KN_RMA_CTX 0x2c000000u
/* At creation, before the allgather: this member's part (*can: it can
 * hold puts); after it, with every member's, whether the window does. */
knit_status_t kn_rma_defer_new(knit_win_t *w, int n, int *can);
void kn_rma_defer_decide(knit_win_t *w, int all_can);
void kn_rma_defer_free(knit_win_t *w);
/* Hold x (a put of the caller's) for rank if it may be: *held says
 * whether it was; flushes what rank has held first where x does not fit. */
knit_status_t kn_rma_defer_put(knit_win_t *w, int rank, const xfer_t *x, unsigned flags, int *held);
/* Send what rank (-1: every member) has held through the agents. */
knit_status_t kn_rma_defer_flush(knit_win_t *w, int rank);
/* One held put in knit_rma_barrier's messages: the record, for LIST nseg
 * pieces, then total bytes of data padded to 8; the next record follows. */
#define KN_RMA_DREC_MAGIC 0x6b524431u /* "kRD1" */
typedef struct kn_rma_drec {
    uint32_t magic, form;      /* KN_RMA_F_STRIDED or KN_RMA_F_LIST */
    uint64_t raddr, total, nseg;
    kn_rma_desc_t rdesc;       /* STRIDED: the target layout from raddr */
} kn_rma_drec_t;
typedef struct kn_rma_dpiece {
    uint64_t raddr, len;
} kn_rma_dpiece_t;
#define KN_RMA_PAD8(n) (((n) + 7) & ~(uint64_t)7)
/* drec.c: the record at *off of buf[0, len) with its pieces and data,
 * checked against the buffer (not yet against any window), *off moved
 * past it; NULL at the end, or (*bad) on a malformed one. */
const kn_rma_drec_t *kn_rma_drec_next(const char *buf, size_t len, size_t *off, kn_rma_drec_t *r,
                                      const kn_rma_dpiece_t **pieces, const char **data, int *bad);
/* The blocks of d from base into one contiguous buffer, and back. */
void kn_rma_strided_gather(char *buf, const kn_rma_desc_t *d, uint64_t base);
void kn_rma_strided_scatter(const char *buf, const kn_rma_desc_t *d, uint64_t base);
/* A message of held puts from origin (a job rank, for the error message),
 * checked whole against me's memory before any byte lands: KNIT_ERR_PEER
 * (said why), nothing applied, when any record is malformed or outside. */
knit_status_t kn_rma_defer_apply(const kn_rma_peer_t *me, const void *msg, size_t len, int origin);
/* knit_rma_barrier of a window that holds puts. */
knit_status_t kn_rma_defer_barrier(knit_win_t *w);
/* A synchronization whose messages each member receives and applies
 * itself (knit_rma_barrier's held puts, the MPI layer's fence epochs):
 * - kn_rma_sum_counts adds up count[i], the messages this member sent
 *   member i (zeroed after), collectively over comm, which is a barrier
 *   too: up to KN_RMA_SUM_ALL members one allreduce gives every member's
 *   sum (sum[n]); beyond, a reduce-scatter this member's alone (*nin),
 *   and *senders says how many members sent anything (sum untouched);
 * - once a member has applied its own, kn_rma_settle says so (its settle
 *   word) and marks those that may still be applying theirs (sum, or
 *   senders with sum NULL): an operation to one of them on w (anything
 *   but the next such messages, which it takes only after) waits for its
 *   word first (kn_rma_settled; knit's calls on w do, held puts apart). */
#define KN_RMA_SUM_ALL 64
knit_status_t kn_rma_sum_counts(knit_comm_t *comm, long long *count, long long *sum, long long *nin,
                                long long *senders);
void kn_rma_settle(knit_win_t *w, const long long *sum, long long senders);
knit_status_t kn_rma_settled(knit_win_t *w, int rank);

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
