/*
 * knit: one-sided communication (docs/rma.md).
 *
 * A window is memory that every member of a communicator exposes to the
 * others: knit_win_create exposes memory the caller has, knit_mem_alloc
 * has knit allocate it (ARMCI_Malloc's model).  Both are collective over
 * the communicator and every member learns every member's base address
 * (knit_win_base).  Targets are named by their rank in that communicator
 * and remote memory by its address in the target's address space; a
 * transfer must lie inside the target's exposed range (KNIT_ERR_RANGE
 * otherwise).
 *
 * Completion.  With req NULL a call returns once the operation is complete
 * at the target (the data is in place, the atomic done; KNIT_RMA_LOCAL:
 * once the source buffer may be reused).  The descriptor
 * arrays (counts, strides, I/O vectors) and the accumulate's description
 * are read during the call; the data buffers belong to knit until the
 * operation completes.  With a req it
 * returns at once; the request completes, without further calls from the
 * caller where the node's agent carries it, once the operation is complete
 * at the target; knit_rma_wait/knit_rma_test end it.  knit_rma_fence
 * waits for every operation this rank started to one target,
 * knit_rma_fence_all for all of them; knit_rma_barrier is fence_all and a
 * barrier of the window's communicator.
 *
 * Progress.  Operations complete whether or not the target makes knit
 * calls (passive target): within a node the origin reaches the target's
 * memory by cross-memory attach, and the node agents carry what crosses
 * nodes under the agent and pack methods (the direct method between
 * nodes uses the rank's own network endpoint, which with libfabric's tcp
 * provider needs the target's progress: docs/rma.md).
 *
 * Accumulates and atomics are done by the target's node agent, one at a
 * time per node, so they are atomic element-wise with respect to each
 * other (not with respect to puts).  They need the agents (knitrun
 * without --no-offload), except to oneself: KNIT_ERR_NOT_SUPPORTED.
 */
#ifndef KNIT_RMA_H
#define KNIT_RMA_H

#include <stddef.h>
#include <stdint.h>

#include "knit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct knit_win knit_win_t;
typedef struct knit_rma_req knit_rma_req_t;

/* Collective over comm: every member exposes [base, base + size)
 * (size 0: nothing; base may then be NULL). */
knit_status_t knit_win_create(knit_comm_t *comm, void *base, size_t size, knit_win_t **win);
/* Collective over comm: knit allocates size bytes (zeroed, 64-byte
 * aligned; from the shared heap whatever the size, so that the node's
 * peers copy with memcpy) on every member, which may differ in size; knit_win_base(win,
 * knit_comm_rank(comm)) is this rank's memory.  knit_win_free frees it. */
knit_status_t knit_mem_alloc(knit_comm_t *comm, size_t size, knit_win_t **win);
/* Collective over comm: a window over every address of every member
 * (MPI's dynamic windows: the caller keeps track of what is attached, and
 * an address a member cannot reach fails the operation with
 * KNIT_ERR_PEER_FAULT).  Nothing is registered with the network, so
 * between nodes only the agent and pack methods apply. */
knit_status_t knit_win_create_dynamic(knit_comm_t *comm, knit_win_t **win);
/* Collective: waits for this rank's operations (fence_all), then for
 * every member's, then forgets the window (and frees knit_mem_alloc's
 * memory). */
knit_status_t knit_win_free(knit_win_t *win);

/* Memory for windows and one-sided buffers (MPI_Alloc_mem): size zeroed
 * bytes, 64-byte aligned, from the shared heap whatever the size where
 * there is one (the node's peers then copy to and from it with memcpy
 * rather than cross-memory attach); free() frees it.  NULL: no memory. */
void *knit_rma_alloc(size_t size);

/* Member rank's exposed memory (an address in that rank's space) and its
 * size; NULL / 0 for a rank out of range. */
void *knit_win_base(const knit_win_t *win, int rank);
size_t knit_win_size(const knit_win_t *win, int rank);
knit_comm_t *knit_win_comm(const knit_win_t *win);

/* ------------------------------------------------------------- methods */

/* How the blocks of a non-contiguous transfer move (flags of a call, or
 * the window's default, KNIT_RMA_METHOD): */
#define KNIT_RMA_DEFAULT 0u  /* the window's method (knit_win_set_method) */
#define KNIT_RMA_DIRECT 1u   /* the rank moves every block itself (CMA within a node) */
#define KNIT_RMA_AGENT 2u    /* the rank's node agent walks the descriptor and moves the blocks */
#define KNIT_RMA_PACK 3u     /* packed into one buffer, unpacked at the target by its agent */
#define KNIT_RMA_AUTO 4u     /* chosen per call by the cost model (knit-info --rma) */
#define KNIT_RMA_METHOD_MASK 0xfu
/* A flag beside the method: a put or accumulate completes (returns, or
 * its request completes) once its source buffer may be reused, which
 * through the agents is before the data reaches the target; the next
 * fence (knit_rma_fence, _fence_all, _barrier, knit_win_free) waits for
 * the rest and returns the first error any of them had (MPI_Put's and
 * ARMCI_Put's completion).  Where the method moves the data itself
 * (direct) nothing changes: complete at the target on return.  Under
 * auto, a put of at most KNIT_RMA_DEFER_MAX bytes to a rank on another
 * node is packed and held until the next synchronization (docs/rma.md,
 * Puts held for the barrier): knit_rma_barrier hands it to the target as
 * a message, anything else through the agents; nothing of it leaves
 * before. */
#define KNIT_RMA_LOCAL 0x10u

knit_status_t knit_win_set_method(knit_win_t *win, unsigned method);
/* The method a call with these flags would use for nblocks blocks of
 * block_bytes from (to) local (after AUTO and DEFAULT are resolved): for
 * tools and tests. */
unsigned knit_rma_method_of(const knit_win_t *win, unsigned flags, int rank, const void *local,
                            size_t block_bytes, size_t nblocks);
/* "direct", "agent", "pack", "auto" or "default" */
const char *knit_rma_method_name(unsigned method);

/* ------------------------------------------------- strided descriptors */

/*
 * As in ARMCI: count[0] contiguous bytes per block; count[1..levels]
 * repetitions at the levels above; src_stride[i] / dst_stride[i] (i <
 * levels) the bytes between the starts of consecutive repetitions of
 * level i+1 on each side.  levels 0 is one contiguous block.  Negative
 * counts or strides, levels above KNIT_RMA_MAX_LEVELS: KNIT_ERR_INVAL.  A
 * count of 0 anywhere moves nothing.
 */
#define KNIT_RMA_MAX_LEVELS 7

/* I/O-vector form (ARMCI's armci_giov_t): n blocks of `bytes` bytes each,
 * from src[i] to dst[i]. */
typedef struct knit_rma_iov {
    void **src;
    void **dst;
    int64_t n;
    int64_t bytes;
} knit_rma_iov_t;

/* List form: n pieces, each `len` bytes between `local` (an address of
 * the caller's) and `remote` (one in rank's window); pieces may differ in
 * length (the MPI layer's derived datatypes walked on both sides). */
typedef struct knit_rma_seg {
    uint64_t local, remote, len;
} knit_rma_seg_t;

/* ---------------------------------------------------------- operations */

knit_status_t knit_put(knit_win_t *win, const void *src, void *dst, size_t len, int rank,
                       unsigned flags, knit_rma_req_t **req);
knit_status_t knit_get(knit_win_t *win, void *dst, const void *src, size_t len, int rank,
                       unsigned flags, knit_rma_req_t **req);

/* src is local, dst is in rank's window (put, acc); for get, src is in
 * rank's window and dst is local. */
knit_status_t knit_put_strided(knit_win_t *win, const void *src, const int64_t *src_stride, void *dst,
                               const int64_t *dst_stride, const int64_t *count, int levels, int rank,
                               unsigned flags, knit_rma_req_t **req);
knit_status_t knit_get_strided(knit_win_t *win, void *dst, const int64_t *dst_stride, const void *src,
                               const int64_t *src_stride, const int64_t *count, int levels, int rank,
                               unsigned flags, knit_rma_req_t **req);
knit_status_t knit_put_vector(knit_win_t *win, const knit_rma_iov_t *iov, int niov, int rank,
                              unsigned flags, knit_rma_req_t **req);
knit_status_t knit_get_vector(knit_win_t *win, const knit_rma_iov_t *iov, int niov, int rank,
                              unsigned flags, knit_rma_req_t **req);

/*
 * Accumulate: dst[i] = dst[i] op (scale * src[i]) element-wise, dtype
 * elements (every block a whole number of them).  op: KNIT_OP_SUM (with
 * scale: NULL means 1), PROD, MAX, MIN, BAND, BOR, BXOR, REPLACE, for the
 * types knit_reduce_local takes it for; scale only with SUM on int, long,
 * float, double and their complex forms.
 */
typedef struct knit_rma_acc {
    knit_dtype_t dtype;
    knit_op_kind_t op;
    const void *scale;   /* one element of dtype, or NULL */
} knit_rma_acc_t;

knit_status_t knit_acc(knit_win_t *win, const knit_rma_acc_t *acc, const void *src, void *dst, size_t len,
                       int rank, unsigned flags, knit_rma_req_t **req);
knit_status_t knit_acc_strided(knit_win_t *win, const knit_rma_acc_t *acc, const void *src,
                               const int64_t *src_stride, void *dst, const int64_t *dst_stride,
                               const int64_t *count, int levels, int rank, unsigned flags,
                               knit_rma_req_t **req);
knit_status_t knit_acc_vector(knit_win_t *win, const knit_rma_acc_t *acc, const knit_rma_iov_t *iov, int niov,
                              int rank, unsigned flags, knit_rma_req_t **req);

knit_status_t knit_put_list(knit_win_t *win, const knit_rma_seg_t *segs, size_t n, int rank, unsigned flags,
                            knit_rma_req_t **req);
knit_status_t knit_get_list(knit_win_t *win, const knit_rma_seg_t *segs, size_t n, int rank, unsigned flags,
                            knit_rma_req_t **req);
knit_status_t knit_acc_list(knit_win_t *win, const knit_rma_acc_t *acc, const knit_rma_seg_t *segs, size_t n,
                            int rank, unsigned flags, knit_rma_req_t **req);
/* Get-accumulate: result (contiguous, as many bytes as the pieces) gets
 * the target's data from just before the accumulate, which the target's
 * agent reads and combines in one step (element-wise atomic with respect
 * to the other accumulates and atomics); op may be KNIT_OP_NO_OP (an
 * atomic read).  Completes when the result is here (KNIT_RMA_LOCAL does
 * not apply). */
knit_status_t knit_gacc_list(knit_win_t *win, const knit_rma_acc_t *acc, const knit_rma_seg_t *segs, size_t n,
                             void *result, int rank, unsigned flags, knit_rma_req_t **req);

/*
 * Atomics on one 1-, 2-, 4- or 8-byte integer (KNIT_INT32, UINT32, INT64, UINT64,
 * INT, UINT, LONG, ULONG, LONG_LONG, ULONG_LONG, and the 1- and 2-byte
 * integers, BYTE and C_BOOL) at remote in rank's
 * window; *result gets the value before.  Blocking.
 *   FETCH_ADD  *remote += *operand
 *   SWAP       *remote = *operand
 *   CAS        if (*remote == *compare) *remote = *operand
 */
typedef enum knit_rma_atomic_op {
    KNIT_RMA_FETCH_ADD = 1,
    KNIT_RMA_SWAP,
    KNIT_RMA_CAS,
} knit_rma_atomic_op_t;

knit_status_t knit_rma_atomic(knit_win_t *win, knit_rma_atomic_op_t op, knit_dtype_t dtype, void *remote,
                              const void *operand, const void *compare, void *result, int rank);

/* ---------------------------------------------------------- completion */

/* knit_rma_test sets *done and, when done, frees the request, sets *req to
 * NULL and returns the operation's status (KNIT_OK while not done).  A
 * call that completed its operation at once (a contiguous put or get
 * through memory mapped here, an accumulate done here under the target's
 * lock) sets *req to NULL: waiting on NULL returns KNIT_OK. */
knit_status_t knit_rma_test(knit_rma_req_t **req, int *done);
knit_status_t knit_rma_wait(knit_rma_req_t **req);
knit_status_t knit_rma_waitall(size_t n, knit_rma_req_t **reqs);

/* Every operation of this rank to rank (fence) or to anyone (fence_all)
 * on this window is complete at its target on return.  An operation's
 * error goes to its own call or request (knit_rma_wait/test), not to the
 * fence. */
knit_status_t knit_rma_fence(knit_win_t *win, int rank);
knit_status_t knit_rma_fence_all(knit_win_t *win);
/* Collective: fence_all, then a barrier of the window's communicator; on
 * return every member's operations before it are complete at their
 * targets (puts held for other nodes go as one message to each target,
 * which applies them in the barrier). */
knit_status_t knit_rma_barrier(knit_win_t *win);

#ifdef __cplusplus
}
#endif
#endif /* KNIT_RMA_H */
