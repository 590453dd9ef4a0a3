/*
 * Collectives on the hosts: communicators, reduction kernels, and the
 * schedules every collective is built as.
 *
 * A collective is a schedule: rounds of steps (send, receive, local
 * reduce, copy).  Starting a round runs its local steps in order, then
 * posts its sends and receives (a large copy followed only by receives
 * goes on in slices after them: sched.c); the round is over when they all
 * completed, and the next one starts at once.  Active schedules hang on
 * the engine's list and advance inside every progress call (a hook in
 * the p2p engine), so a nonblocking collective moves forward in any knit
 * call; a blocking collective is the same schedule waited on.
 *
 * Collective traffic uses context comm_id | KNIT_COLL_CTX_BIT and tag
 * (seq << KN_COLL_SUB_BITS) | sub: seq counts the collectives started on
 * the communicator (every member starts them in the same order), so
 * concurrent collectives never take each other's messages; sub tells the
 * phases of one collective apart.
 */
#ifndef KN_COLL_COLL_H
#define KN_COLL_COLL_H

#include <stdio.h>

#include "knit.h"
#include "coll/coll_mod.h"
#include "p2p/p2p.h"
#include "util/list.h"

#define KN_COLL_SUB_BITS 8
#define KN_COLL_SEQ_MASK ((1u << (31 - KN_COLL_SUB_BITS)) - 1)

typedef struct kn_coll kn_coll_t;
typedef struct kn_shmc kn_shmc_t;

typedef struct kn_coll_params {
    knit_ctx_t *ctx;       /* the owner (knit_comm_create checks it) */
    kn_p2p_t *p2p;
    int rank, size;
    const int *node_of;    /* [size] */
    const char *jobid;     /* names shared-memory files (knitrun.md) */
} kn_coll_params_t;

/* Called by the runtime core after the p2p engine is up / before it goes. */
knit_status_t kn_coll_create(const kn_coll_params_t *p, kn_coll_t **out);
void kn_coll_destroy(kn_coll_t *coll);

/* The engine of a context (NULL if ctx is not the live context). */
kn_coll_t *kn_coll_of(knit_ctx_t *ctx);
kn_p2p_t *kn_coll_p2p(const kn_coll_t *c);
int kn_coll_job_rank(const kn_coll_t *c);
int kn_coll_job_size(const kn_coll_t *c);
int kn_coll_node_of(const kn_coll_t *c, int job_rank);
const char *kn_coll_jobid(const kn_coll_t *c);

/* ---------------------------------------------------------- groups */

/* An ordered set of job ranks the algorithms run over: a communicator, or
 * the ranks of one node in it, or the node leaders. */
typedef struct kn_grp {
    int size, rank;         /* rank: my index, -1 if not a member */
    const int *job;         /* [size] job ranks */
} kn_grp_t;

struct knit_comm {
    kn_coll_t *coll;
    uint32_t id, cid;       /* cid = id | KNIT_COLL_CTX_BIT */
    uint32_t seq;           /* collectives started */
    int is_world;           /* owned by the context: knit_comm_destroy ignores it */
    kn_grp_t g;
    int *ranks;             /* [size] job ranks */
    /* node structure (computed at creation) */
    int nnodes;             /* distinct nodes spanned */
    int max_local;          /* most ranks on one node */
    int node_contig;        /* every node holds a contiguous range of comm ranks */
    kn_grp_t local;         /* my node's ranks, in comm order */
    kn_grp_t leaders;       /* lowest comm rank of each node, in comm order */
    int *local_cr;          /* [local.size] their comm ranks */
    int *leader_cr;         /* [nnodes] */
    int *node_idx;          /* [size] index of each comm rank's node in leaders */
    kn_shmc_t *shm;         /* shared segment of the small collectives (shmcoll.c) */
    int shm_state;          /* while shm is NULL: not tried, off, being set up */
    uint64_t off_seq;       /* offloaded collectives started (offload.c) */
    uint8_t *off_mask;      /* its nodes, for the module (offload.c; NULL: every node) */
    uint32_t off_mask_len;
};

/* ------------------------------------------------ offloaded (offload.c) */

/* KNIT_COLL_OFFLOAD=auto's measurements (xover.c): load the table (path
 * empty: none; KNIT_ERR_IO / _INVAL with err naming the file and line,
 * and no table), whether kind offloads on nnodes nodes at bytes, whether
 * any row offloads at all, and the table as knit-info shows it. */
knit_status_t kn_coll_xover_load(const char *path, char *err, size_t elen);
int kn_coll_xover_offloads(int kind, int nnodes, size_t bytes);
int kn_coll_xover_any(void);
void kn_coll_xover_print(FILE *f);

typedef struct kn_coll_off kn_coll_off_t;

/* At knit_init, on every rank (collective): load the built-in module where
 * KNIT_COLL_OFFLOAD=on; a failure warns and leaves the hosts' algorithms. */
knit_status_t kn_coll_offload_start(knit_ctx_t *ctx);
/* A barrier, broadcast (rb the buffer), reduce or allreduce (kind
 * KN_COLL_MOD_*) by the agents and the switch; blocking, or started with
 * req.  KNIT_ERR_NOT_SUPPORTED: not for them (off, no module, a user op,
 * too large), or the blocking one found the module faulted (every member
 * does): the caller runs the hosts' algorithm instead. */
knit_status_t kn_coll_offload(knit_comm_t *c, int kind, const void *sb, void *rb, size_t count, knit_dtype_t t,
                              const knit_op_t *op, int root, knit_coll_request_t **req);
/* The schedules' side (sched.c) of a nonblocking one: look at its
 * completion (the events seen; sets done, or after a fault puts the
 * hosts' form of the collective in s: kn_sched_adopt); free its state. */
int kn_coll_offload_poll(knit_coll_request_t *s);
void kn_coll_offload_free(kn_coll_off_t *o);

/* ---------------------------------------------------------- reductions */

typedef void (*kn_reduce_fn_t)(const void *in, void *inout, size_t count);
/* The kernel for (op, dtype), NULL when the op does not apply. */
kn_reduce_fn_t kn_coll_reduce_fn(knit_op_kind_t op, knit_dtype_t t);

/* ---------------------------------------------------------- schedules */

enum kn_step_kind {
    KN_STEP_SEND = 1,
    KN_STEP_RECV,
    KN_STEP_COPY,       /* dst = src (len bytes) */
    KN_STEP_REDUCE,     /* dst = src op dst (count elements) */
    KN_STEP_REDUCE_R,   /* dst = dst op src; src is scratch and is clobbered */
};

typedef struct kn_step {
    uint8_t kind, sub;
    int peer;           /* job rank */
    const void *src;
    void *dst;
    size_t len;         /* bytes (send, recv, copy) or elements (reduce) */
} kn_step_t;

typedef struct knit_coll_request kn_sched_t;

struct knit_coll_request {
    kn_list_t link;             /* coll->active */
    kn_coll_t *coll;
    uint32_t cid, tag;          /* tag = seq << KN_COLL_SUB_BITS */
    kn_step_t *steps;
    int nsteps, cap_steps;
    int *round_end;             /* round i = steps [round_end[i-1], round_end[i]) */
    int nrounds, cap_rounds;
    int cur;                    /* round in progress */
    knit_request_t **reqs;      /* of the current round */
    int nreqs, cap_reqs;
    void **allocs;              /* scratch buffers, freed at the end */
    int nallocs, cap_allocs;
    knit_dtype_t dtype;
    knit_op_t op;
    kn_reduce_fn_t fn;          /* predefined op kernel, NULL for user ops */
    knit_status_t result;
    int done, active;
    int nomem;                  /* building failed: the schedule is invalid */
    unsigned send_flags;        /* kn_p2p_isend flags of every send */
    const kn_step_t *copying;   /* a large copy of the round, done in slices */
    size_t copied;              /* bytes of it done */
    kn_coll_off_t *off;         /* offloaded: no steps, a module request */
};

kn_sched_t *kn_sched_new(knit_comm_t *comm, knit_dtype_t dtype, const knit_op_t *op);
void *kn_sched_alloc(kn_sched_t *s, size_t bytes);
void kn_sched_send(kn_sched_t *s, const kn_grp_t *g, int peer, const void *buf, size_t len, int sub);
void kn_sched_recv(kn_sched_t *s, const kn_grp_t *g, int peer, void *buf, size_t len, int sub);
void kn_sched_copy(kn_sched_t *s, const void *src, void *dst, size_t len);
/* dst = src op dst */
void kn_sched_reduce(kn_sched_t *s, const void *src, void *dst, size_t count);
/* dst = dst op src; src is scratch (its contents are lost) */
void kn_sched_reduce_r(kn_sched_t *s, void *src, void *dst, size_t count);
/* End the current round (no-op if it is empty). */
void kn_sched_round(kn_sched_t *s);
/* Start it (runs what can run now) and put it on the active list. */
knit_status_t kn_sched_start(kn_sched_t *s);
/* s takes over h's collective (h is started; s keeps its place on the
 * active list, h's shell is freed with what s held).  Safe inside the
 * progress hook's walk of the active list. */
void kn_sched_adopt(kn_sched_t *s, kn_sched_t *h);
/* Run to completion and free; returns the collective's result. */
knit_status_t kn_sched_wait(kn_sched_t *s);
void kn_sched_free(kn_sched_t *s);

/* ---------------------------------------------------------- algorithms
 * Builders append one collective, over group g, to a schedule.  Buffers
 * are byte pointers; counts are elements of s->dtype where they reduce,
 * bytes otherwise.  Each ends its last round. */

int kn_coll_commutative(const kn_sched_t *s);
size_t kn_coll_esize(const kn_sched_t *s);

void kn_alg_barrier_dissem(kn_sched_t *s, const kn_grp_t *g, int sub);
void kn_alg_bcast_binomial(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t len, int root, int sub);
void kn_alg_bcast_scatter_allgather(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t len, int root,
                                    int sub);
/* Reduce count elements of sbuf into rbuf at root (rbuf may be NULL
 * elsewhere); sbuf == rbuf allowed at the root. */
/* Every rank sends to the root, which combines in rank order (any op). */
void kn_alg_reduce_linear(kn_sched_t *s, const kn_grp_t *g, const void *sbuf, void *rbuf, size_t count, int root,
                          int sub);
/* The root sends buf to every other rank. */
void kn_alg_bcast_linear(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t len, int root, int sub);
void kn_alg_reduce_binomial(kn_sched_t *s, const kn_grp_t *g, const void *sbuf, void *rbuf, size_t count,
                            int root, int sub);
void kn_alg_reduce_rabenseifner(kn_sched_t *s, const kn_grp_t *g, const void *sbuf, void *rbuf,
                                size_t count, int root, int sub);
/* The result in buf on every rank; the input in buf (src NULL) or at src,
 * then sent from there in the first round and copied into buf while that
 * round's transfers run. */
void kn_alg_allreduce_rd(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t count, const void *src, int sub);
void kn_alg_allreduce_rabenseifner(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t count, const void *src,
                                   int sub);
void kn_alg_allreduce_ring(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t count, const void *src,
                           int sub);
/* The ring allreduce's two halves, for algorithms that put a step between
 * them.  Chunks: count elements in p pieces, cnt[i] elements at byte
 * offset cnt[p + i].  The reduce-scatter leaves chunk (r + 1) % p reduced
 * at rank r (src as in the allreduces); the allgather starts from there. */
size_t *kn_alg_ring_chunks(kn_sched_t *s, int p, size_t count);
void kn_alg_ring_reduce_scatter(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t count, const size_t *cnt,
                                const char *src, int sub);
void kn_alg_ring_allgather(kn_sched_t *s, const kn_grp_t *g, char *buf, const size_t *cnt, int sub);
/* Allgather of blocks: block i (len[i] bytes at buf + off[i]) comes from
 * rank i.  Mine is in place (own NULL) or at own: then it is sent from
 * there in the first round and copied into buf while that round's
 * transfers run (the local copy overlaps the exchange). */
void kn_alg_allgatherv_ring(kn_sched_t *s, const kn_grp_t *g, char *buf, const size_t *len,
                            const size_t *off, const char *own, int sub);
/* The same in one round, every block to every rank at once: no rank waits
 * on another's progress for a block its owner could give it directly. */
void kn_alg_allgatherv_linear(kn_sched_t *s, const kn_grp_t *g, char *buf, const size_t *len,
                              const size_t *off, const char *own, int sub);
/* Equal blocks of len bytes into buf; own as above. */
void kn_alg_allgather_rd(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own, int sub);
void kn_alg_allgather_bruck(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own,
                            int sub);
/* Every block in to rank 0 of g, the whole vector out again: 2 (p - 1)
 * messages and two rounds, for tiny blocks on a crowded host. */
void kn_alg_allgather_leader(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own, int sub);
/* the ring, or with linear set every block at once */
void kn_alg_allgather_ring_or_linear(kn_sched_t *s, const kn_grp_t *g, char *buf, size_t len, const char *own,
                                     int sub, int linear);

/* ------------------------------------------------ shared-memory forms
 * Blocking collectives moving at most KNIT_COLL_SHM_MAX bytes per rank on
 * a communicator within one node (shmcoll.c).  kn_shmc_usable says whether
 * they serve a collective of `bytes` per rank; the first call on a
 * communicator makes the segment, collectively (every member calls it, in
 * the same collective). */
int kn_shmc_usable(knit_comm_t *c, size_t bytes);
/* The segment a one-node communicator of p ranks gets, in bytes (0: none,
 * by its size or the settings): the node's plan counts one of every rank. */
struct kn_config;
size_t kn_shmc_segment_bytes(const struct kn_config *cfg, int p);
void kn_shmc_free(knit_comm_t *c);
void kn_shmc_barrier(knit_comm_t *c);
void kn_shmc_bcast(knit_comm_t *c, void *buf, size_t bytes, int root);
/* Vectors of any size in pieces through the segment (KNIT_COLL_STAGED_MAX),
 * where kn_shmc_staged says the communicator has one.  sb NULL: in place. */
int kn_shmc_staged(knit_comm_t *c);
void kn_shmc_bcast_staged(knit_comm_t *c, void *buf, size_t bytes, int root);
void kn_shmc_allgather_staged(knit_comm_t *c, const void *sb, void *rb, size_t len);
/* root < 0: allreduce; sb may be rb */
void kn_shmc_reduce(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t, const knit_op_t *op,
                    int root);
/* sb NULL: in place */
void kn_shmc_allgather(knit_comm_t *c, const void *sb, void *rb, size_t len);
void kn_shmc_alltoall(knit_comm_t *c, const void *sb, void *rb, size_t len);
/* Large parts, straight from the other ranks' buffers, where kn_shmc_direct
 * says so (KNIT_COLL_DIRECT_MIN; every member can read every other's
 * memory).  sb NULL: in place (not for alltoall). */
int kn_shmc_direct(knit_comm_t *c, size_t bytes);
knit_status_t kn_shmc_allreduce_direct(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                                       const knit_op_t *op);
knit_status_t kn_shmc_allgather_direct(knit_comm_t *c, const void *sb, void *rb, size_t len);
knit_status_t kn_shmc_alltoall_direct(knit_comm_t *c, const void *sb, void *rb, size_t len);

#endif
