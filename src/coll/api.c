/*
 * The public collectives: argument checks, the choice of algorithm
 * (KNIT_COLL_* tunables, auto by size and process count), the node-aware
 * compositions, and the requests.  Each collective is one builder; the
 * blocking form runs the nonblocking schedule to completion.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "util/config.h"
#include "util/log.h"

#define IN_PLACE(p) ((const void *)(p) == KNIT_IN_PLACE)

enum { SUB_FLAT = 0, SUB_LOCAL_IN = 1, SUB_LEADERS = 2, SUB_LOCAL_OUT = 3, SUB_EXTRA = 4 };

/* ------------------------------------------------------------ checks */

static int member(const knit_comm_t *c)
{
    return c && c->g.rank >= 0;
}

static int dtype_ok(knit_dtype_t t)
{
    return (unsigned)t < KNIT_DTYPE_COUNT;
}

static int op_ok(const knit_op_t *op, knit_dtype_t t)
{
    if (!op || !dtype_ok(t))
        return 0;
    if (op->kind == KNIT_OP_USER)
        return op->fn != NULL;
    if (op->kind == KNIT_OP_REPLACE || op->kind == KNIT_OP_NO_OP)
        return 0; /* not reductions of a collective (MPI: accumulate only) */
    return kn_coll_reduce_fn(op->kind, t) != NULL;
}

static int root_ok(const knit_comm_t *c, int root)
{
    return root >= 0 && root < c->g.size;
}

/* Start s; with req hand it out, else wait for it. */
static knit_status_t run(kn_sched_t *s, knit_coll_request_t **req)
{
    if (!s)
        return KNIT_ERR_NOMEM;
    knit_status_t st = kn_sched_start(s);
    if (st != KNIT_OK) {
        kn_sched_free(s);
        return st;
    }
    if (req) {
        *req = s;
        return KNIT_OK;
    }
    return kn_sched_wait(s);
}

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond))                                                         \
            return KNIT_ERR_INVAL;                                           \
    } while (0)

/* Node-aware variants pay where the communicator spans several nodes and
 * some node holds more than one of its ranks. */
static int node_aware(const knit_comm_t *c, int algo_node)
{
    if (algo_node)
        return c->nnodes > 1 || c->max_local > 1;
    switch (kn_cfg.coll_node_aware) {
    case 1: /* on */
        return c->nnodes > 1;
    case 2: /* off */
        return 0;
    default:
        return c->nnodes > 1 && c->max_local > 1;
    }
}

/* The group of node representatives, with root standing for its node. */
static kn_grp_t *reps(kn_sched_t *s, const knit_comm_t *c, int root, int *rep_rank, int *rep_root)
{
    kn_grp_t *g = kn_sched_alloc(s, sizeof(*g) + (size_t)c->nnodes * sizeof(int));
    if (!g)
        return NULL;
    int *job = (int *)(g + 1);
    memcpy(job, c->leaders.job, (size_t)c->nnodes * sizeof(int));
    int rn = c->node_idx[root];
    job[rn] = c->ranks[root];
    g->job = job;
    g->size = c->nnodes;
    g->rank = -1;
    for (int k = 0; k < c->nnodes; k++)
        if (job[k] == c->ranks[c->g.rank])
            g->rank = k;
    *rep_rank = g->rank;
    *rep_root = rn;
    return g;
}

/* Nodes of equal size holding contiguous rank ranges (comm rank = node *
 * L + local index), more than one, of more than one rank: the two-level
 * ("cross") algorithms run there.  Only communicator-wide facts, so every
 * member answers alike. */
static int cross_fits(const knit_comm_t *c)
{
    return c->nnodes > 1 && c->node_contig && c->max_local > 1 && c->nnodes * c->max_local == c->g.size;
}

/* The ranks of my local index, one per node, in node order (cross_fits). */
static const kn_grp_t *cross_group(kn_sched_t *s, const knit_comm_t *c)
{
    int n = c->nnodes, L = c->local.size;
    kn_grp_t *g = kn_sched_alloc(s, sizeof(*g) + (size_t)n * sizeof(int));
    if (!g)
        return NULL;
    int *job = (int *)(g + 1);
    for (int k = 0; k < n; k++)
        job[k] = c->g.job[k * L + c->local.rank];
    g->size = n;
    g->rank = c->g.rank / L;
    g->job = job;
    return g;
}

/* my node's local index of a comm rank on my node (-1 if elsewhere) */
static int local_index(const knit_comm_t *c, int cr)
{
    for (int i = 0; i < c->local.size; i++)
        if (c->local_cr[i] == cr)
            return i;
    return -1;
}

/* ------------------------------------------------------------ barrier */

/* More ranks than cores on this host: what counts is the work all ranks do
 * together and the number of times a rank must be woken, not the depth of
 * the critical path.  Measured (docs/collectives.md): the binomial
 * broadcast beats scatter+allgather there at every size, posting every
 * alltoall transfer at once beats pairwise and Bruck rounds, and reduce and
 * allreduce gain from eager sends up to a whole packet, which leave the
 * data and go on instead of waiting for the receiver to run (at 4 and 8
 * ranks on 2 cores, 64 KiB: reduce 62 -> 36 and 124 -> 97 us).  The
 * broadcast gains as much at 2 ranks per core and loses at 4 (64 KiB: 33
 * -> 19 us, but 67 -> 130 us), where eager copies pile up at receivers
 * that are not running. */
static int crowded(const kn_coll_t *coll, int *ranks_per_core)
{
    kn_p2p_limits_t l;
    kn_p2p_get_limits(kn_coll_p2p(coll), &l);
    if (ranks_per_core)
        *ranks_per_core = l.ncpus > 0 ? (l.host_procs + l.ncpus - 1) / l.ncpus : 1;
    return l.oversubscribed;
}

/* Reductions on a crowded host go flat up to these sizes: every rank sends
 * to the root at once and is done, so one wake-up of the root, instead of
 * one per tree level, separates the first send from the result (8 ranks on
 * 2 cpus: reduce 8 B 13.0 -> 4.3 us, 64 KiB 96 -> 89; allreduce 8 B 19.7
 * -> 11.4, 16 KiB 66 -> 43; beyond these, the trees win). */
#define CROWDED_REDUCE_FLAT_MAX (64 * 1024)
#define CROWDED_ALLREDUCE_FLAT_MAX (16 * 1024)

/* Allgather on a crowded host goes linear (every block to every rank at
 * once, one round) for tiny blocks, where log2(p) rounds cost a wake-up
 * each and p-1 inline sends cost little (8 B: 4 ranks 5.23 -> 4.99 us;
 * above 4 ranks the leader form below does better), and from 4 ranks per
 * core where the ring would run,
 * whose p-1 steps each wait for a descheduled neighbour (8 ranks, 1 MiB
 * blocks: 10.4 -> 9.0 ms; at 2 per core the ring stays ahead, and 1 KiB to
 * 64 KiB blocks stay with recursive doubling: 8 ranks, 1 KiB 25 vs 31 us). */
#define CROWDED_ALLGATHER_FLAT_BLOCK 64

/* More than 4 ranks on a crowded host, blocks up to this size: allgather and
 * alltoall go through rank 0 (every rank sends it its part and gets its
 * whole result back), 2 (p - 1) messages and two wake-ups per rank instead
 * of p (p - 1) messages or log2(p) rounds (8 ranks on 2 cpus, 8 B:
 * allgather 19.5 -> 13.5 us, alltoall 20.9 -> 14.0; 1 KiB: 25.6 -> 20.1 and
 * 33.1 -> 31.7; at 4 KiB the leader's copies cost more; at 4 ranks a tie). */
#define CROWDED_LEADER_BLOCK 1024

/* Blocking collectives of small parts on a one-node communicator go
 * through a segment its ranks share (shmcoll.c) where the algorithm is
 * auto: no messages, so no rounds and no rank waiting for a message's
 * receiver to be scheduled (2 cpus: barrier 0.57 -> 0.35 us at 2 ranks,
 * 4.4 -> 3.0 at 4, 11.6 -> 9.0 at 8; allreduce 8 B 0.79 -> 0.45, 5.2 ->
 * 3.1, 11.3 -> 7.7; docs/collectives.md). */
static int via_shm(knit_comm_t *c, knit_coll_request_t **req, int algo, size_t bytes)
{
    return !req && !algo && kn_shmc_usable(c, bytes);
}

/* Larger ones copy straight from the other ranks' buffers (shmcoll.c),
 * each rank as soon as it runs, where messages would make it wait for
 * peers in every round. */
static int via_direct(knit_comm_t *c, knit_coll_request_t **req, int algo, size_t bytes)
{
    return !req && !algo && kn_shmc_direct(c, bytes);
}

/* Broadcasts, and allgathers on a host with more ranks than cpus, above
 * that go through the segment in pieces (shmcoll.c, staged forms) up to
 * max bytes per rank where the algorithm is auto (always where it names
 * them): two plain copies in a pipeline, where messages take one copy by
 * the kernel at half the speed of a plain one and a rendezvous that waits
 * for the giver to run.  Measured on 2 cpus (docs/collectives.md; 5 runs,
 * medians), messages -> staged, 64 KiB / 1 MiB / 4 MiB: bcast 2 ranks
 * 22.5 -> 11.0, 117 -> 101, 387 -> 399 us (beyond 1 MiB the receiver's one
 * copy holds its own: KNIT_COLL_STAGED_PAIR_MAX); 4 ranks 21.5 -> 16.4,
 * 353 -> 242, 1652 -> 1179; 8 ranks 46 -> 22, 755 -> 452, 4348 -> 1915.
 * Allgather 4 ranks 73 -> 55, 1721 -> 1464, 9731 -> 6527; 8 ranks 314 ->
 * 239, 8816 -> 5313, 38866 -> 21791; but 2 ranks, each with its cpu, 11.8
 * -> 17.9 and 297 -> 361 (the direct form's one copy each). */
static int via_staged(knit_comm_t *c, knit_coll_request_t **req, int algo, int staged, size_t bytes, size_t max)
{
    return !req && (algo == staged || (algo == 0 && bytes <= max)) && kn_shmc_staged(c);
}

static knit_status_t do_barrier(knit_comm_t *c, knit_coll_request_t **req)
{
    CHECK(member(c));
    knit_status_t st = kn_coll_offload(c, KN_COLL_MOD_BARRIER, NULL, NULL, 0, KNIT_BYTE, NULL, -1, req);
    if (st != KNIT_ERR_NOT_SUPPORTED)
        return st;
    if (via_shm(c, req, kn_cfg.coll_barrier, 0)) {
        kn_shmc_barrier(c);
        return KNIT_OK;
    }
    kn_sched_t *s = kn_sched_new(c, KNIT_BYTE, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    int algo = kn_cfg.coll_barrier;
    /* crowded, more than 4 ranks: in to one leader and out again is 2
     * rounds where dissemination takes log2(p) (8 ranks on 2 cpus: 12 vs
     * 19 us); the node form is exactly that on one node */
    if (algo == 2 || (algo == 0 && (node_aware(c, 0) || (c->g.size > 4 && crowded(s->coll, NULL))))) {
        /* in to the leader, leaders' barrier, out from the leader */
        const kn_grp_t *l = &c->local;
        if (l->rank == 0) {
            for (int i = 1; i < l->size; i++)
                kn_sched_recv(s, l, i, NULL, 0, SUB_LOCAL_IN);
        } else {
            kn_sched_send(s, l, 0, NULL, 0, SUB_LOCAL_IN);
        }
        kn_sched_round(s);
        if (l->rank == 0)
            kn_alg_barrier_dissem(s, &c->leaders, SUB_LEADERS);
        if (l->rank == 0) {
            for (int i = 1; i < l->size; i++)
                kn_sched_send(s, l, i, NULL, 0, SUB_LOCAL_OUT);
        } else {
            kn_sched_recv(s, l, 0, NULL, 0, SUB_LOCAL_OUT);
        }
        kn_sched_round(s);
    } else {
        kn_alg_barrier_dissem(s, &c->g, SUB_FLAT);
    }
    return run(s, req);
}

/* ------------------------------------------------------------ bcast */

static void eager_when_crowded(kn_sched_t *s, int max_per_core)
{
    int per;
    if (crowded(s->coll, &per) && per <= max_per_core)
        s->send_flags |= KN_P2P_SEND_EAGER;
}

/* The broadcast algorithm of the message forms: a forced staged one
 * (nonblocking, several nodes) falls back to auto, as documented. */
static int bcast_algo(void)
{
    return kn_cfg.coll_bcast == 5 ? 0 : kn_cfg.coll_bcast;
}

static void bcast_flat(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t bytes, int root, int sub)
{
    int algo = bcast_algo();
    /* crowded, large: the root publishes its buffer to every rank at once
     * and each pulls its own copy, with no rank waiting for a forwarder to
     * be scheduled (8 ranks on 2 cpus, 64 KiB: 62 -> 50 us; 4 ranks, 1 MiB:
     * 400 -> 339 us); smaller messages keep the tree */
    if (algo == 4 || (algo == 0 && bytes >= 64 * 1024 && g->size > 2 && crowded(s->coll, NULL)))
        kn_alg_bcast_linear(s, g, buf, bytes, root, sub);
    else if (algo == 2 || (algo == 0 && bytes >= kn_cfg.coll_bcast_long && g->size > 2 && !crowded(s->coll, NULL)))
        kn_alg_bcast_scatter_allgather(s, g, buf, bytes, root, sub);
    else
        kn_alg_bcast_binomial(s, g, buf, bytes, root, sub);
}

static knit_status_t do_bcast(knit_comm_t *c, void *buf, size_t count, knit_dtype_t t, int root,
                              knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && root_ok(c, root) && (buf || !count));
    size_t bytes = count * knit_dtype_size(t);
    knit_status_t st = kn_coll_offload(c, KN_COLL_MOD_BCAST, NULL, buf, count, t, NULL, root, req);
    if (st != KNIT_ERR_NOT_SUPPORTED)
        return st;
    if (count && via_shm(c, req, kn_cfg.coll_bcast, bytes)) {
        kn_shmc_bcast(c, buf, bytes, root);
        return KNIT_OK;
    }
    size_t max = c->g.size > 2 ? kn_cfg.coll_staged_max : kn_cfg.coll_staged_pair_max;
    if (count && via_staged(c, req, kn_cfg.coll_bcast, 5, bytes, max)) {
        kn_shmc_bcast_staged(c, buf, bytes, root);
        return KNIT_OK;
    }
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    eager_when_crowded(s, 2);
    int algo = bcast_algo();
    if (algo == 3 || (algo == 0 && node_aware(c, 0))) {
        int rr, rroot;
        kn_grp_t *g = reps(s, c, root, &rr, &rroot);
        if (g && rr >= 0)
            bcast_flat(s, g, buf, bytes, rroot, SUB_LEADERS);
        /* within the node, from its representative */
        int lroot = c->node_idx[root] == c->node_idx[c->g.rank] ? local_index(c, root) : 0;
        bcast_flat(s, &c->local, buf, bytes, lroot, SUB_LOCAL_OUT);
    } else {
        bcast_flat(s, &c->g, buf, bytes, root, SUB_FLAT);
    }
    return run(s, req);
}

/* ------------------------------------------------------------ reduce */

static void reduce_flat(kn_sched_t *s, const kn_grp_t *g, const void *sb, void *rb, size_t count,
                        int root, int sub)
{
    int algo = kn_cfg.coll_reduce;
    size_t bytes = count * kn_coll_esize(s);
    if (algo == 4 || (algo == 0 && g->size > 2 && bytes <= CROWDED_REDUCE_FLAT_MAX && crowded(s->coll, NULL))) {
        kn_alg_reduce_linear(s, g, sb, rb, count, root, sub);
        return;
    }
    /* 2 ranks: the binomial reduce is one transfer and one reduction, with
     * no copy of the input; halving moves as much and copies it */
    if (kn_coll_commutative(s) && g->size > 1 &&
        (algo == 2 || (algo == 0 && g->size > 2 && bytes >= kn_cfg.coll_reduce_long && count >= (size_t)g->size)))
        kn_alg_reduce_rabenseifner(s, g, sb, rb, count, root, sub);
    else
        kn_alg_reduce_binomial(s, g, sb, rb, count, root, sub);
}

/* order-preserving node-aware forms need each node's ranks contiguous */
static int node_ok_for(const knit_comm_t *c, const kn_sched_t *s)
{
    return kn_coll_commutative(s) || c->node_contig;
}

static knit_status_t do_reduce(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                               const knit_op_t *op, int root, knit_coll_request_t **req)
{
    CHECK(member(c) && op_ok(op, t) && root_ok(c, root));
    int me = c->g.rank;
    CHECK(!count || ((sb || (IN_PLACE(sb) && me == root)) && (me != root || rb)));
    CHECK(!IN_PLACE(sb) || me == root);
    knit_status_t st = kn_coll_offload(c, KN_COLL_MOD_REDUCE, sb, rb, count, t, op, root, req);
    if (st != KNIT_ERR_NOT_SUPPORTED)
        return st;
    if (count && via_shm(c, req, kn_cfg.coll_reduce, count * knit_dtype_size(t))) {
        kn_shmc_reduce(c, IN_PLACE(sb) ? rb : sb, rb, count, t, op, root);
        return KNIT_OK;
    }
    kn_sched_t *s = kn_sched_new(c, t, op);
    if (!s)
        return KNIT_ERR_NOMEM;
    eager_when_crowded(s, INT_MAX);
    if (!count)
        return run(s, req);
    if (IN_PLACE(sb))
        sb = rb;
    int algo = kn_cfg.coll_reduce;
    if ((algo == 3 || (algo == 0 && node_aware(c, 0))) && node_ok_for(c, s)) {
        /* to each node's representative, then among them to the root */
        int rr, rroot;
        kn_grp_t *g = reps(s, c, root, &rr, &rroot);
        size_t bytes = count * knit_dtype_size(t);
        int lroot = c->node_idx[root] == c->node_idx[me] ? local_index(c, root) : 0;
        void *part = rr >= 0 ? (me == root ? rb : kn_sched_alloc(s, bytes)) : NULL;
        reduce_flat(s, &c->local, sb, part, count, lroot, SUB_LOCAL_IN);
        if (g && rr >= 0)
            reduce_flat(s, g, part, me == root ? rb : NULL, count, rroot, SUB_LEADERS);
    } else {
        reduce_flat(s, &c->g, sb, rb, count, root, SUB_FLAT);
    }
    return run(s, req);
}

/* ------------------------------------------------------------ allreduce */

static void allreduce_flat(kn_sched_t *s, const kn_grp_t *g, void *buf, size_t count, const void *src, int sub)
{
    int algo = kn_cfg.coll_allreduce;
    size_t bytes = count * kn_coll_esize(s);
    int comm = kn_coll_commutative(s), p = g->size;
    if (algo == 5 || (algo == 0 && p > 2 && bytes <= CROWDED_ALLREDUCE_FLAT_MAX && crowded(s->coll, NULL))) {
        kn_alg_reduce_linear(s, g, src ? src : buf, buf, count, 0, sub);
        kn_alg_bcast_linear(s, g, buf, bytes, 0, sub);
        return;
    }
    if (algo == 0) {
        if (bytes < kn_cfg.coll_allreduce_short || count < (size_t)p)
            algo = 1;
        else
            algo = bytes >= kn_cfg.coll_allreduce_long ? 3 : 2;
    }
    if (algo == 2 && comm)
        kn_alg_allreduce_rabenseifner(s, g, buf, count, src, sub);
    else if (algo == 3 && comm)
        kn_alg_allreduce_ring(s, g, buf, count, src, sub);
    else
        kn_alg_allreduce_rd(s, g, buf, count, src, sub);
}

/* Two-level allreduce (commutative ops, cross_fits): a ring reduce-scatter
 * in each node leaves local rank a with chunk (a + 1) % L of its node's
 * sum, the ranks of each local index allreduce that chunk between the
 * nodes, and a ring allgather in each node spreads the results.  Every
 * rank carries 1/L of the vector between nodes, all at once, where the
 * node form sends all of it through one leader per node. */
static void allreduce_cross(kn_sched_t *s, const knit_comm_t *c, char *rb, size_t count, const void *src)
{
    const kn_grp_t *l = &c->local, *x = cross_group(s, c);
    size_t *cnt = kn_alg_ring_chunks(s, l->size, count);
    if (!x || !cnt)
        return;
    kn_alg_ring_reduce_scatter(s, l, rb, count, cnt, src, SUB_LOCAL_IN);
    int mine = (l->rank + 1) % l->size;
    if (cnt[mine])
        allreduce_flat(s, x, rb + cnt[l->size + mine], cnt[mine], NULL, SUB_LEADERS);
    kn_alg_ring_allgather(s, l, rb, cnt, SUB_LOCAL_OUT);
}

static knit_status_t do_allreduce(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                                  const knit_op_t *op, knit_coll_request_t **req)
{
    CHECK(member(c) && op_ok(op, t) && (!count || (sb && rb)));
    size_t bytes = count * knit_dtype_size(t);
    knit_status_t st = kn_coll_offload(c, KN_COLL_MOD_ALLREDUCE, sb, rb, count, t, op, -1, req);
    if (st != KNIT_ERR_NOT_SUPPORTED)
        return st;
    if (count && via_shm(c, req, kn_cfg.coll_allreduce, bytes)) {
        kn_shmc_reduce(c, IN_PLACE(sb) ? rb : sb, rb, count, t, op, -1);
        return KNIT_OK;
    }
    if (count && via_direct(c, req, kn_cfg.coll_allreduce, bytes))
        return kn_shmc_allreduce_direct(c, IN_PLACE(sb) ? NULL : sb, rb, count, t, op);
    kn_sched_t *s = kn_sched_new(c, t, op);
    if (!s)
        return KNIT_ERR_NOMEM;
    eager_when_crowded(s, INT_MAX);
    if (!count)
        return run(s, req);
    const void *src = IN_PLACE(sb) ? NULL : sb; /* the algorithms copy it into rb as they go */
    int algo = kn_cfg.coll_allreduce, aware = algo == 0 && node_aware(c, 0);
    int cross_auto = aware && kn_cfg.coll_allreduce_cross_min && bytes >= kn_cfg.coll_allreduce_cross_min;
    if ((algo == 6 || cross_auto) && kn_coll_commutative(s) && cross_fits(c)) {
        allreduce_cross(s, c, rb, count, src);
    } else if ((algo == 4 || aware) && node_ok_for(c, s)) {
        /* reduce to the leader, allreduce among leaders, bcast in the node */
        const kn_grp_t *l = &c->local;
        kn_alg_reduce_binomial(s, l, src ? src : rb, rb, count, 0, SUB_LOCAL_IN);
        if (l->rank == 0)
            allreduce_flat(s, &c->leaders, rb, count, NULL, SUB_LEADERS);
        kn_alg_bcast_binomial(s, l, rb, bytes, 0, SUB_LOCAL_OUT);
    } else {
        allreduce_flat(s, &c->g, rb, count, src, SUB_FLAT);
    }
    return run(s, req);
}

/* ------------------------------------------------------------ gather / scatter */

static int gather_binomial(const knit_comm_t *c, size_t bytes)
{
    int algo = kn_cfg.coll_gather;
    return algo == 1 || (algo == 0 && bytes < kn_cfg.coll_gather_short && c->g.size > 8);
}

/* Binomial gather of equal blocks; blocks travel in relative-rank order. */
static void gather_binomial_build(kn_sched_t *s, const kn_grp_t *g, const char *sb, char *rb, size_t len,
                                  int root, int sub)
{
    int p = g->size, r = g->rank, vr = (r - root + p) % p;
    int top = 1;
    while (top < p && !(vr & top))
        top <<= 1;
    int sz = vr ? (top < p - vr ? top : p - vr) : p; /* my subtree */
    char *tmp = NULL;
    if (sz > 1 || r == root) {
        tmp = kn_sched_alloc(s, (size_t)sz * len);
        if (!tmp)
            return;
        kn_sched_copy(s, sb, tmp, len);
    }
    for (int m = 1; m < top && vr + m < p; m <<= 1) {
        int csz = m < p - vr - m ? m : p - vr - m;
        kn_sched_recv(s, g, (r + m) % p, tmp + (size_t)m * len, (size_t)csz * len, sub);
    }
    kn_sched_round(s);
    if (vr) {
        kn_sched_send(s, g, (r - (vr & -vr) + p) % p, tmp ? tmp : sb, (size_t)sz * len, sub);
    } else { /* rotate into rank order */
        kn_sched_copy(s, tmp, rb + (size_t)root * len, (size_t)(p - root) * len);
        kn_sched_copy(s, tmp + (size_t)(p - root) * len, rb, (size_t)root * len);
    }
    kn_sched_round(s);
}

static void scatter_binomial_build(kn_sched_t *s, const kn_grp_t *g, const char *sb, char *rb, size_t len,
                                   int root, int sub)
{
    int p = g->size, r = g->rank, vr = (r - root + p) % p;
    int top = 1;
    while (top < p && !(vr & top))
        top <<= 1;
    int sz = vr ? (top < p - vr ? top : p - vr) : p;
    char *tmp = NULL;
    if (vr == 0) { /* into relative order */
        tmp = kn_sched_alloc(s, (size_t)p * len);
        if (!tmp)
            return;
        kn_sched_copy(s, sb + (size_t)root * len, tmp, (size_t)(p - root) * len);
        kn_sched_copy(s, sb, tmp + (size_t)(p - root) * len, (size_t)root * len);
    } else {
        int parent = (r - (vr & -vr) + p) % p;
        if (sz > 1) {
            tmp = kn_sched_alloc(s, (size_t)sz * len);
            if (!tmp)
                return;
            kn_sched_recv(s, g, parent, tmp, (size_t)sz * len, sub);
        } else {
            kn_sched_recv(s, g, parent, rb, len, sub);
        }
        kn_sched_round(s);
    }
    for (int m = top >> 1; m > 0; m >>= 1) {
        if (vr + m >= p)
            continue;
        int csz = m < p - vr - m ? m : p - vr - m;
        kn_sched_send(s, g, (r + m) % p, tmp + (size_t)m * len, (size_t)csz * len, sub);
    }
    if (tmp && rb)
        kn_sched_copy(s, tmp, rb, len);
    kn_sched_round(s);
}

static knit_status_t do_gather(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                               int root, knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && root_ok(c, root));
    int me = c->g.rank, p = c->g.size;
    CHECK(!IN_PLACE(sb) || me == root);
    CHECK(!count || ((sb || IN_PLACE(sb)) && (me != root || rb)));
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    size_t len = count * knit_dtype_size(t);
    char *r = rb;
    if (IN_PLACE(sb))
        sb = r + (size_t)root * len;
    if (gather_binomial(c, len) && p > 1) {
        gather_binomial_build(s, &c->g, sb, r, len, root, SUB_FLAT);
    } else if (me == root) {
        for (int i = 0; i < p; i++)
            if (i != me)
                kn_sched_recv(s, &c->g, i, r + (size_t)i * len, len, SUB_FLAT);
        kn_sched_copy(s, sb, r + (size_t)me * len, len);
    } else {
        kn_sched_send(s, &c->g, root, sb, len, SUB_FLAT);
    }
    return run(s, req);
}

static knit_status_t do_gatherv(knit_comm_t *c, const void *sb, size_t scount, void *rb, const size_t *rcounts,
                                const size_t *displs, knit_dtype_t t, int root, knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && root_ok(c, root));
    int me = c->g.rank, p = c->g.size;
    CHECK(!IN_PLACE(sb) || me == root);
    CHECK(me != root || (rcounts && displs));
    CHECK(IN_PLACE(sb) || sb || !scount);
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    size_t es = knit_dtype_size(t);
    if (me == root) {
        char *r = rb;
        for (int i = 0; i < p; i++) {
            if (rcounts[i] && !r) {
                kn_sched_free(s);
                return KNIT_ERR_INVAL;
            }
            if (i != me)
                kn_sched_recv(s, &c->g, i, r + displs[i] * es, rcounts[i] * es, SUB_FLAT);
            else if (!IN_PLACE(sb))
                kn_sched_copy(s, sb, r + displs[i] * es, KN_MIN(scount, rcounts[i]) * es);
        }
    } else {
        kn_sched_send(s, &c->g, root, sb, scount * es, SUB_FLAT);
    }
    return run(s, req);
}

static knit_status_t do_scatter(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                                int root, knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && root_ok(c, root));
    int me = c->g.rank, p = c->g.size;
    CHECK(!IN_PLACE(rb) || me == root);
    CHECK(!count || ((me != root || sb) && (rb || IN_PLACE(rb))));
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    size_t len = count * knit_dtype_size(t);
    const char *sp = sb;
    char *r = IN_PLACE(rb) ? NULL : rb;
    if (gather_binomial(c, len) && p > 1) {
        scatter_binomial_build(s, &c->g, sp, r, len, root, SUB_FLAT);
    } else if (me == root) {
        for (int i = 0; i < p; i++)
            if (i != me)
                kn_sched_send(s, &c->g, i, sp + (size_t)i * len, len, SUB_FLAT);
        if (r)
            kn_sched_copy(s, sp + (size_t)me * len, r, len);
    } else {
        kn_sched_recv(s, &c->g, root, r, len, SUB_FLAT);
    }
    return run(s, req);
}

static knit_status_t do_scatterv(knit_comm_t *c, const void *sb, const size_t *scounts, const size_t *displs,
                                 void *rb, size_t rcount, knit_dtype_t t, int root, knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && root_ok(c, root));
    int me = c->g.rank, p = c->g.size;
    CHECK(!IN_PLACE(rb) || me == root);
    CHECK(me != root || (scounts && displs));
    CHECK(IN_PLACE(rb) || rb || !rcount);
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    size_t es = knit_dtype_size(t);
    if (me == root) {
        const char *sp = sb;
        for (int i = 0; i < p; i++) {
            if (scounts[i] && !sp) {
                kn_sched_free(s);
                return KNIT_ERR_INVAL;
            }
            if (i != me)
                kn_sched_send(s, &c->g, i, sp + displs[i] * es, scounts[i] * es, SUB_FLAT);
            else if (!IN_PLACE(rb))
                kn_sched_copy(s, sp + displs[i] * es, rb, KN_MIN(scounts[i], rcount) * es);
        }
    } else {
        kn_sched_recv(s, &c->g, root, rb, rcount * es, SUB_FLAT);
    }
    return run(s, req);
}

/* ------------------------------------------------------------ allgather */

/* Node-aware allgather on a communicator whose nodes hold contiguous rank
 * ranges: each node's blocks gathered at its leader, the leaders exchange
 * whole node ranges, and each leader broadcasts the vector in its node.
 * Between nodes every block crosses once per node that needs it, where the
 * ring carries it over p - 1 links. */
static void allgather_node(kn_sched_t *s, const knit_comm_t *c, char *rb, size_t len, const char *own)
{
    const kn_grp_t *l = &c->local;
    int p = c->g.size, first = c->local_cr[0];
    if (l->rank == 0) {
        for (int i = 1; i < l->size; i++)
            kn_sched_recv(s, l, i, rb + (size_t)(first + i) * len, len, SUB_LOCAL_IN);
        if (own)
            kn_sched_copy(s, own, rb + (size_t)first * len, len);
    } else {
        kn_sched_send(s, l, 0, own ? own : rb + (size_t)c->g.rank * len, len, SUB_LOCAL_IN);
    }
    kn_sched_round(s);
    if (l->rank == 0 && c->nnodes > 1) {
        int n = c->nnodes;
        size_t *off = kn_sched_alloc(s, 2 * (size_t)n * sizeof(size_t));
        if (!off)
            return;
        for (int i = 0; i < n; i++) {
            int end = i + 1 < n ? c->leader_cr[i + 1] : p;
            off[i] = (size_t)c->leader_cr[i] * len;
            off[n + i] = (size_t)(end - c->leader_cr[i]) * len;
        }
        kn_alg_allgatherv_ring(s, &c->leaders, rb, off + n, off, NULL, SUB_LEADERS);
    }
    bcast_flat(s, l, rb, (size_t)p * len, 0, SUB_LOCAL_OUT);
}

/* Two-level allgather on a communicator of n nodes holding L contiguous
 * ranks each (comm rank = node * L + local index): the ranks of one local
 * index, one per node, pass blocks around a ring of the nodes, and every
 * block a rank holds new (its own in the first round) goes to the L - 1
 * others of its node in the same round as it goes on along the ring.  Each
 * block crosses to each other node once, where the ring over all ranks
 * moves p - 1 blocks per rank over node boundaries, and every rank carries
 * its share between nodes at once, where the node form above funnels it
 * through one leader.  Transfers within a node overlap those between. */
static void allgather_cross(kn_sched_t *s, const knit_comm_t *c, char *rb, size_t len, const char *own)
{
    const kn_grp_t *ring = cross_group(s, c);
    if (!ring)
        return;
    int n = ring->size, node = ring->rank, L = c->local.size, li = c->local.rank;
#define BLOCK(nd, j) (rb + ((size_t)(nd) * (size_t)L + (size_t)(j)) * len)
    if (own)
        kn_sched_copy(s, own, BLOCK(node, li), len);
    for (int t = 0; t < n; t++) {
        int from = (node - t + n) % n; /* the node whose blocks are new this round */
        const char *blk = t == 0 && own ? own : BLOCK(from, li);
        for (int j = 0; j < L; j++) {
            if (j == li)
                continue;
            kn_sched_send(s, &c->local, j, blk, len, SUB_LOCAL_OUT);
            kn_sched_recv(s, &c->local, j, BLOCK(from, j), len, SUB_LOCAL_OUT);
        }
        if (t < n - 1) {
            kn_sched_send(s, ring, (node + 1) % n, blk, len, SUB_LEADERS);
            kn_sched_recv(s, ring, (node - 1 + n) % n, BLOCK((from - 1 + n) % n, li), len, SUB_LEADERS);
        }
        kn_sched_round(s);
    }
#undef BLOCK
}

static knit_status_t do_allgather(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                                  knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && (!count || (rb && sb)));
    int p = c->g.size;
    size_t len = count * knit_dtype_size(t), total = len * (size_t)p;
    if (len && via_shm(c, req, kn_cfg.coll_allgather, len)) {
        kn_shmc_allgather(c, IN_PLACE(sb) ? NULL : sb, rb, len);
        return KNIT_OK;
    }
    int per_core, crowded_host = crowded(c->coll, &per_core);
    size_t max = crowded_host ? kn_cfg.coll_staged_max : 0;
    if (len && via_staged(c, req, kn_cfg.coll_allgather, 8, len, max)) {
        kn_shmc_allgather_staged(c, IN_PLACE(sb) ? NULL : sb, rb, len);
        return KNIT_OK;
    }
    if (len && via_direct(c, req, kn_cfg.coll_allgather, len))
        return kn_shmc_allgather_direct(c, IN_PLACE(sb) ? NULL : sb, rb, len);
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    char *r = rb;
    const char *own = IN_PLACE(sb) ? NULL : sb; /* the algorithms copy it while sending */
    int algo = kn_cfg.coll_allgather;
    if ((algo == 6 && !c->node_contig) || (algo == 7 && !cross_fits(c)) || algo == 8)
        algo = 0; /* where the forced form does not apply: auto, as documented */
    /* the crowded forms send every rank's block to one rank or to all:
     * between nodes each of those messages costs a network round trip,
     * where recursive doubling sends log2(p) per rank (4 ranks on 2
     * nodes, 8 B: linear 39.6 us, recursive doubling 20.8) */
    int crowded_node = c->nnodes == 1 && crowded_host;
    if (algo == 0 && p > 4 && len <= CROWDED_LEADER_BLOCK && crowded_node) {
        algo = 5;
    } else if (algo == 0 && crowded_node &&
               (len <= CROWDED_ALLGATHER_FLAT_BLOCK || (per_core >= 4 && total >= kn_cfg.coll_allgather_long))) {
        algo = 4;
    } else if (algo == 0) {
        int pow2 = !(p & (p - 1));
        if (total < kn_cfg.coll_allgather_short)
            algo = pow2 ? 1 : 2;
        else
            algo = total >= kn_cfg.coll_allgather_long ? (node_aware(c, 0) && cross_fits(c) ? 7 : 3) : 1;
    }
    if (algo == 7)
        allgather_cross(s, c, r, len, own);
    else if (algo == 6)
        allgather_node(s, c, r, len, own);
    else if (algo == 5)
        kn_alg_allgather_leader(s, &c->g, r, len, own, SUB_FLAT);
    else if (algo == 1)
        kn_alg_allgather_rd(s, &c->g, r, len, own, SUB_FLAT);
    else if (algo == 2)
        kn_alg_allgather_bruck(s, &c->g, r, len, own, SUB_FLAT);
    else
        kn_alg_allgather_ring_or_linear(s, &c->g, r, len, own, SUB_FLAT, algo == 4);
    return run(s, req);
}

static knit_status_t do_allgatherv(knit_comm_t *c, const void *sb, void *rb, const size_t *rcounts,
                                   const size_t *displs, knit_dtype_t t, knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && rcounts && displs && rb && sb);
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    int p = c->g.size;
    size_t es = knit_dtype_size(t);
    size_t *v = kn_sched_alloc(s, 2 * (size_t)p * sizeof(size_t));
    if (v) {
        for (int i = 0; i < p; i++) {
            v[i] = rcounts[i] * es;
            v[p + i] = displs[i] * es;
        }
        (kn_cfg.coll_allgather == 4 ? kn_alg_allgatherv_linear : kn_alg_allgatherv_ring)(
            s, &c->g, rb, v, v + p, IN_PLACE(sb) ? NULL : sb, SUB_FLAT);
    }
    return run(s, req);
}

/* ------------------------------------------------------------ alltoall */

/* every block at once: len[i]/off[i] in bytes (NULL len: equal blocks) */
static void alltoall_linear(kn_sched_t *s, const kn_grp_t *g, const char *sb, const size_t *slen,
                            const size_t *soff, char *rb, const size_t *rlen, const size_t *roff)
{
    int p = g->size, me = g->rank;
    for (int k = 1; k < p; k++) {
        int i = (me - k + p) % p;
        kn_sched_recv(s, g, i, rb + roff[i], rlen[i], SUB_FLAT);
    }
    for (int k = 1; k < p; k++) {
        int i = (me + k) % p;
        kn_sched_send(s, g, i, sb + soff[i], slen[i], SUB_FLAT);
    }
    kn_sched_copy(s, sb + soff[me], rb + roff[me], KN_MIN(slen[me], rlen[me]));
    kn_sched_round(s);
}

static void alltoall_pairwise(kn_sched_t *s, const kn_grp_t *g, const char *sb, const size_t *slen,
                              const size_t *soff, char *rb, const size_t *rlen, const size_t *roff)
{
    int p = g->size, me = g->rank;
    for (int k = 1; k < p; k++) {
        int to = (me + k) % p, from = (me - k + p) % p;
        kn_sched_recv(s, g, from, rb + roff[from], rlen[from], SUB_FLAT);
        kn_sched_send(s, g, to, sb + soff[to], slen[to], SUB_FLAT);
        if (k == 1) /* my own block, while the first exchange runs */
            kn_sched_copy(s, sb + soff[me], rb + roff[me], KN_MIN(slen[me], rlen[me]));
        kn_sched_round(s);
    }
    if (p == 1)
        kn_sched_copy(s, sb + soff[me], rb + roff[me], KN_MIN(slen[me], rlen[me]));
    kn_sched_round(s);
}

static void alltoall_bruck(kn_sched_t *s, const kn_grp_t *g, const char *sb, char *rb, size_t len)
{
    int p = g->size, me = g->rank;
    int nmax = p / 2 + 1;
    char *tmp = kn_sched_alloc(s, (size_t)p * len);
    char *pk = kn_sched_alloc(s, (size_t)nmax * len);
    char *up = kn_sched_alloc(s, (size_t)nmax * len);
    if (!tmp || !pk || !up)
        return;
    /* tmp block j: what goes to rank me + j */
    kn_sched_copy(s, sb + (size_t)me * len, tmp, (size_t)(p - me) * len);
    kn_sched_copy(s, sb, tmp + (size_t)(p - me) * len, (size_t)me * len);
    int prev = 0;
    for (int d = 1; d < p; d <<= 1) {
        if (prev) { /* unpack what the previous step brought */
            int n = 0;
            for (int j = 1; j < p; j++)
                if (j & prev)
                    kn_sched_copy(s, up + (size_t)n++ * len, tmp + (size_t)j * len, len);
        }
        int n = 0;
        for (int j = 1; j < p; j++)
            if (j & d)
                kn_sched_copy(s, tmp + (size_t)j * len, pk + (size_t)n++ * len, len);
        kn_sched_recv(s, g, (me - d + p) % p, up, (size_t)n * len, SUB_FLAT);
        kn_sched_send(s, g, (me + d) % p, pk, (size_t)n * len, SUB_FLAT);
        kn_sched_round(s);
        prev = d;
    }
    if (prev) {
        int n = 0;
        for (int j = 1; j < p; j++)
            if (j & prev)
                kn_sched_copy(s, up + (size_t)n++ * len, tmp + (size_t)j * len, len);
    }
    /* tmp block j came from rank me - j */
    for (int j = 0; j < p; j++)
        kn_sched_copy(s, tmp + (size_t)j * len, rb + (size_t)((me - j + p) % p) * len, len);
    kn_sched_round(s);
}

/* Through rank 0: every rank sends it its whole vector, rank 0 regroups the
 * blocks by destination and sends each rank its own: 2 (p - 1) messages
 * instead of p (p - 1), for tiny blocks on a crowded host. */
static void alltoall_leader(kn_sched_t *s, const kn_grp_t *g, const char *sb, char *rb, size_t len)
{
    int p = g->size;
    size_t row = (size_t)p * len;
    if (g->rank) {
        kn_sched_send(s, g, 0, sb, row, SUB_FLAT);
        kn_sched_recv(s, g, 0, rb, row, SUB_FLAT);
        kn_sched_round(s);
        return;
    }
    /* in: row i is rank i's vector; out: row j is what rank j gets */
    char *in = kn_sched_alloc(s, row * (size_t)p), *out = kn_sched_alloc(s, row * (size_t)p);
    if (!in || !out)
        return;
    for (int i = 1; i < p; i++)
        kn_sched_recv(s, g, i, in + (size_t)i * row, row, SUB_FLAT);
    kn_sched_copy(s, sb, in, row);
    kn_sched_round(s);
    for (int j = 0; j < p; j++) {
        char *to = j ? out + (size_t)j * row : rb;
        for (int i = 0; i < p; i++)
            kn_sched_copy(s, in + (size_t)i * row + (size_t)j * len, to + (size_t)i * len, len);
    }
    for (int j = 1; j < p; j++)
        kn_sched_send(s, g, j, out + (size_t)j * row, row, SUB_FLAT);
    kn_sched_round(s);
}

/* In place: the send data is the receive buffer, saved first. */
static const char *save_inplace(kn_sched_t *s, const char *rb, size_t bytes)
{
    char *t = kn_sched_alloc(s, bytes);
    if (t)
        kn_sched_copy(s, rb, t, bytes);
    return t;
}

static knit_status_t do_alltoall(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                                 knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && (!count || (rb && sb)));
    int p = c->g.size;
    size_t len = count * knit_dtype_size(t);
    if (len && via_shm(c, req, kn_cfg.coll_alltoall, len * (size_t)p)) {
        kn_shmc_alltoall(c, IN_PLACE(sb) ? NULL : sb, rb, len);
        return KNIT_OK;
    }
    if (len && !IN_PLACE(sb) && via_direct(c, req, kn_cfg.coll_alltoall, len * (size_t)p))
        return kn_shmc_alltoall_direct(c, sb, rb, len);
    kn_sched_t *s = kn_sched_new(c, t, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    const char *src = IN_PLACE(sb) ? save_inplace(s, rb, len * (size_t)p) : sb;
    int algo = kn_cfg.coll_alltoall;
    if (algo == 0) {
        if (crowded(s->coll, NULL))
            algo = p > 4 && len <= CROWDED_LEADER_BLOCK ? 4 : 3;
        else if (len <= kn_cfg.coll_alltoall_short && p >= 8)
            algo = 2;
        else
            algo = len >= kn_cfg.coll_alltoall_long ? 1 : 3;
    }
    if (src && algo == 4) {
        alltoall_leader(s, &c->g, src, rb, len);
    } else if (src && algo == 2) {
        alltoall_bruck(s, &c->g, src, rb, len);
    } else if (src) {
        size_t *v = kn_sched_alloc(s, 2 * (size_t)p * sizeof(size_t));
        if (v) {
            for (int i = 0; i < p; i++) {
                v[i] = len;
                v[p + i] = (size_t)i * len;
            }
            (algo == 1 ? alltoall_pairwise : alltoall_linear)(s, &c->g, src, v, v + p, rb, v, v + p);
        }
    }
    return run(s, req);
}

static knit_status_t do_alltoallw(knit_comm_t *c, const void *sb, const size_t *slen, const size_t *soff,
                                  void *rb, const size_t *rlen, const size_t *roff, knit_coll_request_t **req)
{
    CHECK(member(c) && rlen && roff && rb && (IN_PLACE(sb) || (sb && slen && soff)));
    kn_sched_t *s = kn_sched_new(c, KNIT_BYTE, NULL);
    if (!s)
        return KNIT_ERR_NOMEM;
    int p = c->g.size;
    if (IN_PLACE(sb)) { /* the same layout both ways */
        size_t end = 0;
        for (int i = 0; i < p; i++)
            end = KN_MAX(end, roff[i] + rlen[i]);
        sb = save_inplace(s, rb, end);
        slen = rlen;
        soff = roff;
    }
    if (sb) {
        int algo = kn_cfg.coll_alltoall;
        (algo == 1 ? alltoall_pairwise : alltoall_linear)(s, &c->g, sb, slen, soff, rb, rlen, roff);
    }
    return run(s, req);
}

static knit_status_t do_alltoallv(knit_comm_t *c, const void *sb, const size_t *scounts, const size_t *sdispls,
                                  void *rb, const size_t *rcounts, const size_t *rdispls, knit_dtype_t t,
                                  knit_coll_request_t **req)
{
    CHECK(member(c) && dtype_ok(t) && rcounts && rdispls && (IN_PLACE(sb) || (scounts && sdispls)));
    int p = c->g.size;
    size_t es = knit_dtype_size(t);
    /* to bytes, in one scratch block owned by the caller's stack frame or
     * the heap; the w-form copies what it needs at build time */
    size_t nb = 4 * (size_t)p * sizeof(size_t);
    size_t stackv[4 * 16] = {0}, *v = p <= 16 ? stackv : malloc(nb);
    if (!v)
        return KNIT_ERR_NOMEM;
    for (int i = 0; i < p; i++) {
        v[i] = rcounts[i] * es;
        v[p + i] = rdispls[i] * es;
        v[2 * p + i] = IN_PLACE(sb) ? 0 : scounts[i] * es;
        v[3 * p + i] = IN_PLACE(sb) ? 0 : sdispls[i] * es;
    }
    knit_status_t st = do_alltoallw(c, sb, IN_PLACE(sb) ? NULL : v + 2 * p, IN_PLACE(sb) ? NULL : v + 3 * p,
                                    rb, v, v + p, req);
    if (v != stackv)
        free(v);
    return st;
}

/* ------------------------------------------------------------ reduce_scatter */

static knit_status_t do_reduce_scatter(knit_comm_t *c, const void *sb, void *rb, const size_t *rcounts,
                                       knit_dtype_t t, const knit_op_t *op, knit_coll_request_t **req)
{
    CHECK(member(c) && op_ok(op, t) && rcounts && rb && sb);
    kn_sched_t *s = kn_sched_new(c, t, op);
    if (!s)
        return KNIT_ERR_NOMEM;
    int p = c->g.size, me = c->g.rank;
    size_t es = knit_dtype_size(t);
    size_t *off = kn_sched_alloc(s, 2 * (size_t)p * sizeof(size_t));
    if (!off)
        return run(s, req);
    size_t *cnt = off + p, total = 0;
    for (int i = 0; i < p; i++) {
        off[i] = total;
        cnt[i] = rcounts[i];
        total += rcounts[i];
    }
    int algo = kn_cfg.coll_reduce_scatter;
    if (algo == 0)
        algo = total * es >= kn_cfg.coll_reduce_scatter_long ? 1 : 2;
    char *r = rb;
    const char *in = IN_PLACE(sb) ? r : sb;
    if (algo == 1 && kn_coll_commutative(s) && p > 1) {
        /* ring: chunk c travels from c + 1 around to c, reduced on the way */
        char *work = IN_PLACE(sb) ? r : kn_sched_alloc(s, total * es);
        char *tmp = work ? kn_sched_alloc(s, total * es) : NULL;
        if (!tmp)
            return run(s, req);
        kn_sched_copy(s, in, work, total * es);
        int left = (me - 1 + p) % p, right = (me + 1) % p;
        for (int k = 0; k < p - 1; k++) {
            int sc = (me - k - 1 + p) % p, rc = (me - k - 2 + p) % p;
            kn_sched_recv(s, &c->g, left, tmp + off[rc] * es, cnt[rc] * es, SUB_FLAT);
            kn_sched_send(s, &c->g, right, work + off[sc] * es, cnt[sc] * es, SUB_FLAT);
            kn_sched_round(s);
            kn_sched_reduce(s, tmp + off[rc] * es, work + off[rc] * es, cnt[rc]);
        }
        kn_sched_copy(s, work + off[me] * es, r, cnt[me] * es);
    } else {
        /* reduce to rank 0 (rank order kept), then scatter the pieces */
        char *full = me == 0 ? (IN_PLACE(sb) ? r : kn_sched_alloc(s, total * es)) : NULL;
        if (me == 0 && !full)
            return run(s, req);
        if (total)
            kn_alg_reduce_binomial(s, &c->g, in, full, total, 0, SUB_FLAT);
        if (me == 0) {
            for (int i = 1; i < p; i++)
                kn_sched_send(s, &c->g, i, full + off[i] * es, cnt[i] * es, SUB_EXTRA);
            kn_sched_round(s);
            kn_sched_copy(s, full, r, cnt[0] * es);
        } else {
            kn_sched_recv(s, &c->g, 0, r, cnt[me] * es, SUB_EXTRA);
        }
    }
    return run(s, req);
}

static knit_status_t do_reduce_scatter_block(knit_comm_t *c, const void *sb, void *rb, size_t count,
                                             knit_dtype_t t, const knit_op_t *op, knit_coll_request_t **req)
{
    CHECK(member(c));
    int p = c->g.size;
    size_t stackv[16] = {0}, *v = p <= 16 ? stackv : malloc((size_t)p * sizeof(size_t));
    if (!v)
        return KNIT_ERR_NOMEM;
    for (int i = 0; i < p; i++)
        v[i] = count;
    knit_status_t st = do_reduce_scatter(c, sb, rb, v, t, op, req);
    if (v != stackv)
        free(v);
    return st;
}

/* ------------------------------------------------------------ scans */

/* Recursive doubling (MPICH): partial holds the reduction of my block of
 * ranks; what comes from below is applied on the left. */
static knit_status_t do_scan(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                             const knit_op_t *op, int exclusive, knit_coll_request_t **req)
{
    CHECK(member(c) && op_ok(op, t) && (!count || (sb && rb)));
    kn_sched_t *s = kn_sched_new(c, t, op);
    if (!s)
        return KNIT_ERR_NOMEM;
    if (!count)
        return run(s, req);
    int p = c->g.size, me = c->g.rank;
    size_t bytes = count * knit_dtype_size(t);
    const void *in = IN_PLACE(sb) ? rb : sb;
    char *partial = kn_sched_alloc(s, bytes), *tmp = kn_sched_alloc(s, bytes);
    if (!partial || !tmp)
        return run(s, req);
    kn_sched_copy(s, in, partial, bytes);
    if (!exclusive)
        kn_sched_copy(s, in, rb, bytes);
    int have = !exclusive;
    for (int mask = 1; mask < p; mask <<= 1) {
        int dst = me ^ mask;
        if (dst >= p)
            continue;
        kn_sched_recv(s, &c->g, dst, tmp, bytes, SUB_FLAT);
        kn_sched_send(s, &c->g, dst, partial, bytes, SUB_FLAT);
        kn_sched_round(s);
        if (me > dst) {
            kn_sched_reduce(s, tmp, partial, count);
            if (have) {
                kn_sched_reduce(s, tmp, rb, count);
            } else {
                kn_sched_copy(s, tmp, rb, bytes);
                have = 1;
            }
        } else {
            kn_sched_reduce_r(s, tmp, partial, count);
        }
    }
    kn_sched_round(s);
    return run(s, req);
}

/* ------------------------------------------------------------ public */

knit_status_t knit_barrier(knit_comm_t *c) { return do_barrier(c, NULL); }
knit_status_t knit_ibarrier(knit_comm_t *c, knit_coll_request_t **req)
{
    return req ? do_barrier(c, req) : KNIT_ERR_INVAL;
}

#define NB(req, call) ((req) ? (call) : KNIT_ERR_INVAL)

knit_status_t knit_bcast(knit_comm_t *c, void *buf, size_t n, knit_dtype_t t, int root)
{
    return do_bcast(c, buf, n, t, root, NULL);
}
knit_status_t knit_ibcast(knit_comm_t *c, void *buf, size_t n, knit_dtype_t t, int root,
                          knit_coll_request_t **req)
{
    return NB(req, do_bcast(c, buf, n, t, root, req));
}
knit_status_t knit_reduce(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                          const knit_op_t *op, int root)
{
    return do_reduce(c, sb, rb, n, t, op, root, NULL);
}
knit_status_t knit_ireduce(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                           const knit_op_t *op, int root, knit_coll_request_t **req)
{
    return NB(req, do_reduce(c, sb, rb, n, t, op, root, req));
}
knit_status_t knit_allreduce(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                             const knit_op_t *op)
{
    return do_allreduce(c, sb, rb, n, t, op, NULL);
}
knit_status_t knit_iallreduce(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                              const knit_op_t *op, knit_coll_request_t **req)
{
    return NB(req, do_allreduce(c, sb, rb, n, t, op, req));
}
knit_status_t knit_gather(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t, int root)
{
    return do_gather(c, sb, rb, n, t, root, NULL);
}
knit_status_t knit_igather(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t, int root,
                           knit_coll_request_t **req)
{
    return NB(req, do_gather(c, sb, rb, n, t, root, req));
}
knit_status_t knit_gatherv(knit_comm_t *c, const void *sb, size_t sn, void *rb, const size_t *rn,
                           const size_t *d, knit_dtype_t t, int root)
{
    return do_gatherv(c, sb, sn, rb, rn, d, t, root, NULL);
}
knit_status_t knit_igatherv(knit_comm_t *c, const void *sb, size_t sn, void *rb, const size_t *rn,
                            const size_t *d, knit_dtype_t t, int root, knit_coll_request_t **req)
{
    return NB(req, do_gatherv(c, sb, sn, rb, rn, d, t, root, req));
}
knit_status_t knit_scatter(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t, int root)
{
    return do_scatter(c, sb, rb, n, t, root, NULL);
}
knit_status_t knit_iscatter(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t, int root,
                            knit_coll_request_t **req)
{
    return NB(req, do_scatter(c, sb, rb, n, t, root, req));
}
knit_status_t knit_scatterv(knit_comm_t *c, const void *sb, const size_t *sn, const size_t *d, void *rb,
                            size_t rn, knit_dtype_t t, int root)
{
    return do_scatterv(c, sb, sn, d, rb, rn, t, root, NULL);
}
knit_status_t knit_iscatterv(knit_comm_t *c, const void *sb, const size_t *sn, const size_t *d, void *rb,
                             size_t rn, knit_dtype_t t, int root, knit_coll_request_t **req)
{
    return NB(req, do_scatterv(c, sb, sn, d, rb, rn, t, root, req));
}
knit_status_t knit_allgather(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t)
{
    return do_allgather(c, sb, rb, n, t, NULL);
}
knit_status_t knit_iallgather(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                              knit_coll_request_t **req)
{
    return NB(req, do_allgather(c, sb, rb, n, t, req));
}
knit_status_t knit_allgatherv(knit_comm_t *c, const void *sb, void *rb, const size_t *rn, const size_t *d,
                              knit_dtype_t t)
{
    return do_allgatherv(c, sb, rb, rn, d, t, NULL);
}
knit_status_t knit_iallgatherv(knit_comm_t *c, const void *sb, void *rb, const size_t *rn, const size_t *d,
                               knit_dtype_t t, knit_coll_request_t **req)
{
    return NB(req, do_allgatherv(c, sb, rb, rn, d, t, req));
}
knit_status_t knit_alltoall(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t)
{
    return do_alltoall(c, sb, rb, n, t, NULL);
}
knit_status_t knit_ialltoall(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                             knit_coll_request_t **req)
{
    return NB(req, do_alltoall(c, sb, rb, n, t, req));
}
knit_status_t knit_alltoallv(knit_comm_t *c, const void *sb, const size_t *sn, const size_t *sd, void *rb,
                             const size_t *rn, const size_t *rd, knit_dtype_t t)
{
    return do_alltoallv(c, sb, sn, sd, rb, rn, rd, t, NULL);
}
knit_status_t knit_ialltoallv(knit_comm_t *c, const void *sb, const size_t *sn, const size_t *sd, void *rb,
                              const size_t *rn, const size_t *rd, knit_dtype_t t, knit_coll_request_t **req)
{
    return NB(req, do_alltoallv(c, sb, sn, sd, rb, rn, rd, t, req));
}
knit_status_t knit_alltoallw(knit_comm_t *c, const void *sb, const size_t *sn, const size_t *sd, void *rb,
                             const size_t *rn, const size_t *rd)
{
    return do_alltoallw(c, sb, sn, sd, rb, rn, rd, NULL);
}
knit_status_t knit_ialltoallw(knit_comm_t *c, const void *sb, const size_t *sn, const size_t *sd, void *rb,
                              const size_t *rn, const size_t *rd, knit_coll_request_t **req)
{
    return NB(req, do_alltoallw(c, sb, sn, sd, rb, rn, rd, req));
}
knit_status_t knit_reduce_scatter(knit_comm_t *c, const void *sb, void *rb, const size_t *rn, knit_dtype_t t,
                                  const knit_op_t *op)
{
    return do_reduce_scatter(c, sb, rb, rn, t, op, NULL);
}
knit_status_t knit_ireduce_scatter(knit_comm_t *c, const void *sb, void *rb, const size_t *rn,
                                   knit_dtype_t t, const knit_op_t *op, knit_coll_request_t **req)
{
    return NB(req, do_reduce_scatter(c, sb, rb, rn, t, op, req));
}
knit_status_t knit_reduce_scatter_block(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                                        const knit_op_t *op)
{
    return do_reduce_scatter_block(c, sb, rb, n, t, op, NULL);
}
knit_status_t knit_ireduce_scatter_block(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                                         const knit_op_t *op, knit_coll_request_t **req)
{
    return NB(req, do_reduce_scatter_block(c, sb, rb, n, t, op, req));
}
knit_status_t knit_scan(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t, const knit_op_t *op)
{
    return do_scan(c, sb, rb, n, t, op, 0, NULL);
}
knit_status_t knit_iscan(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                         const knit_op_t *op, knit_coll_request_t **req)
{
    return NB(req, do_scan(c, sb, rb, n, t, op, 0, req));
}
knit_status_t knit_exscan(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                          const knit_op_t *op)
{
    return do_scan(c, sb, rb, n, t, op, 1, NULL);
}
knit_status_t knit_iexscan(knit_comm_t *c, const void *sb, void *rb, size_t n, knit_dtype_t t,
                           const knit_op_t *op, knit_coll_request_t **req)
{
    return NB(req, do_scan(c, sb, rb, n, t, op, 1, req));
}

/* ------------------------------------------------------------ requests */

knit_status_t knit_coll_test(knit_coll_request_t **req, int *done)
{
    if (!req || !*req || !done)
        return KNIT_ERR_INVAL;
    kn_sched_t *s = *req;
    if (!s->done)
        kn_p2p_progress(kn_coll_p2p(s->coll));
    *done = s->done;
    if (!s->done)
        return KNIT_OK;
    knit_status_t st = s->result;
    kn_sched_free(s);
    *req = NULL;
    return st;
}

knit_status_t knit_coll_wait(knit_coll_request_t **req)
{
    if (!req || !*req)
        return KNIT_ERR_INVAL;
    knit_status_t st = kn_sched_wait(*req);
    *req = NULL;
    return st;
}

int knit_coll_done(const knit_coll_request_t *req)
{
    return req && req->done;
}
