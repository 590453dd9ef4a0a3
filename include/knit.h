/*
 * knit: a cluster communication system.  Native API.
 *
 * Every call returns a knit_status_t: 0 (KNIT_OK) on success, a positive
 * value while an operation is still in progress, a negative KNIT_ERR_* on
 * error.  knit_strerror() names any of them.  Out-parameters are written
 * only on success.
 *
 * Threads: a context is used by one thread at a time (the caller serializes);
 * knit_strerror() and the knit_*_of() geometry queries are thread safe.
 */
#ifndef KNIT_H
#define KNIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KNIT_VERSION_MAJOR 0
#define KNIT_VERSION_MINOR 1
#define KNIT_VERSION_PATCH 0
#define KNIT_VERSION_STRING "0.1.0"

typedef int knit_status_t;

enum {
    KNIT_OK = 0,
    KNIT_INPROGRESS = 1,        /* not done yet: call again / progress */

    KNIT_ERR_INVAL = -1,        /* invalid argument */
    KNIT_ERR_NOMEM = -2,        /* out of memory */
    KNIT_ERR_IO = -3,           /* system call failed */
    KNIT_ERR_TIMEOUT = -4,      /* timed out */
    KNIT_ERR_TRUNCATE = -5,     /* message longer than the receive buffer */
    KNIT_ERR_PEER = -6,         /* a peer process failed or went away */
    KNIT_ERR_PROTO = -7,        /* malformed data from outside */
    KNIT_ERR_NOT_SUPPORTED = -8, /* not supported (yet) */
    KNIT_ERR_AUTH = -9,         /* authentication (job cookie) refused */
    KNIT_ERR_NOT_FOUND = -10,   /* no such key / object */
    KNIT_ERR_MODULE_FAULT = -11, /* an offload module faulted */
    KNIT_ERR_AGAIN = -12,       /* resource temporarily exhausted */
    KNIT_ERR_CANCELED = -13,    /* operation canceled */
    KNIT_ERR_EXISTS = -14,      /* already exists */
    KNIT_ERR_RANGE = -15,       /* value out of range */
    KNIT_ERR_STATE = -16,       /* call not valid in this state */
    KNIT_ERR_FABRIC = -17,      /* network fabric (libfabric) error */
    KNIT_ERR_FAULT = -18,       /* this process's buffer of the call is not accessible */
    KNIT_ERR_PEER_FAULT = -19,  /* the peer's buffer of the transfer is not accessible */
};

/* Human-readable name of a status (never NULL, static storage). */
const char *knit_strerror(knit_status_t status);

/* ---------------------------------------------------------------- runtime */

typedef struct knit_ctx knit_ctx_t;

/*
 * Start the runtime.  Under knitrun the process learns its place from the
 * KNIT_* environment and joins the job; started alone it runs as a
 * single-rank job (a "singleton").  argc/argv may be NULL; knit removes no
 * arguments today.  Reads and checks every KNIT_* tunable: a malformed value
 * is an error naming the variable.  One context per process.
 */
knit_status_t knit_init(int *argc, char ***argv, knit_ctx_t **ctx);

/*
 * knit_init for a layer that reports a failure itself (MPI_Init, whose
 * default error handler ends the job with the reason): errors are not
 * logged; on failure the reason (one line, what knit_init would have
 * logged first) is written to why (len bytes; may be NULL), and
 * knit_abort(NULL, ...) / knit_abort_secondary(NULL, ...) can still end
 * the job through knitrun.  A second knit_init after a failure is allowed.
 */
knit_status_t knit_init_quiet(int *argc, char ***argv, char *why, size_t len, knit_ctx_t **ctx);

/* The process's context (one per process): NULL before knit_init (or
 * MPI_Init) succeeded and after knit_finalize.  For libraries that start
 * after another layer did (ARMCI over MPI). */
knit_ctx_t *knit_ctx_current(void);

/* Leave the job: waits until every rank has called it, frees everything. */
knit_status_t knit_finalize(knit_ctx_t *ctx);

/*
 * Name the call that ends this process's part in the job, for knitrun's
 * report of a rank that exits without it ("exited without calling NAME";
 * default knit_finalize).  For layers built on knit: MPI_Init names
 * MPI_Finalize.  name: a C identifier of 1..63 characters (else
 * KNIT_ERR_INVAL).  Sends one message to knitrun, waits for none.
 */
knit_status_t knit_set_finalize_name(knit_ctx_t *ctx, const char *name);

/* End the whole job now: every process is stopped, knitrun prints msg and
 * exits with code (nonzero).  Never returns. */
void knit_abort(knit_ctx_t *ctx, int code, const char *msg)
    __attribute__((noreturn));

/*
 * knit_abort for an error this process has because another one failed,
 * which reports the cause itself (KNIT_ERR_PEER: the node segment's
 * creator could not make it; KNIT_ERR_PEER_FAULT: the peer's buffer of a
 * transfer is not accessible): waits, progressing, up to 5 s for that
 * report to end the job, so that knitrun's verdict names the cause, then
 * aborts with msg.  ctx may be NULL after a failed knit_init_quiet.
 */
void knit_abort_secondary(knit_ctx_t *ctx, int code, const char *msg)
    __attribute__((noreturn));

int knit_rank(const knit_ctx_t *ctx);         /* 0 .. size-1 */
int knit_size(const knit_ctx_t *ctx);
int knit_node(const knit_ctx_t *ctx);         /* this rank's node */
int knit_nnodes(const knit_ctx_t *ctx);
int knit_node_of(const knit_ctx_t *ctx, int rank); /* -1 if out of range */
int knit_local_rank(const knit_ctx_t *ctx);   /* index among this node's ranks */
int knit_local_size(const knit_ctx_t *ctx);
/* First job rank on this node: the node's ranks are
 * first_local .. first_local + local_size - 1 (placement is block-wise). */
int knit_first_local(const knit_ctx_t *ctx);

/* Drive communication forward once (never blocks). */
knit_status_t knit_progress(knit_ctx_t *ctx);

/* ------------------------------------------------------- point-to-point */

#define KNIT_ANY_SOURCE (-1)
#define KNIT_ANY_TAG (-1)
#define KNIT_TAG_UB 0x7fffffff      /* largest valid tag */

typedef struct knit_request knit_request_t;

/* What a completed receive (or probe) found. */
typedef struct knit_msg_status {
    int source;           /* sender's rank */
    int tag;              /* message tag */
    size_t length;        /* bytes written into the buffer */
    size_t msg_length;    /* bytes the sender sent (> length: truncated) */
    knit_status_t error;  /* KNIT_OK, or KNIT_ERR_TRUNCATE, ... */
} knit_msg_status_t;

/*
 * Nonblocking send/receive.  Matching is MPI's: (comm_id, source, tag), in
 * order per sender; irecv accepts KNIT_ANY_SOURCE / KNIT_ANY_TAG.  tag must
 * be in [0, KNIT_TAG_UB] for sends.  The buffer belongs to knit until the
 * request completes.  A receive buffer shorter than the message gets the
 * first len bytes and error KNIT_ERR_TRUNCATE in its status; nothing is
 * written past the buffer.  A buffer that is not accessible fails the call
 * with KNIT_ERR_FAULT when it cannot be user memory (NULL plus an offset,
 * an address in the first MiB); one that a rendezvous copy finds bad fails
 * the request of the process it belongs to with KNIT_ERR_FAULT and the
 * peer's with KNIT_ERR_PEER_FAULT (docs/protocols.md, Failed transfers).
 */
knit_status_t knit_isend(knit_ctx_t *ctx, const void *buf, size_t len,
                         int peer, int tag, uint32_t comm_id,
                         knit_request_t **req);
knit_status_t knit_irecv(knit_ctx_t *ctx, void *buf, size_t len,
                         int peer, int tag, uint32_t comm_id,
                         knit_request_t **req);

/* Blocking forms.  status may be NULL. */
knit_status_t knit_send(knit_ctx_t *ctx, const void *buf, size_t len,
                        int peer, int tag, uint32_t comm_id);
knit_status_t knit_recv(knit_ctx_t *ctx, void *buf, size_t len,
                        int peer, int tag, uint32_t comm_id,
                        knit_msg_status_t *status);

/*
 * Completion.  knit_test sets *done and, when done, frees the request, sets
 * *req to NULL and fills status (may be NULL).  Returns the operation's
 * result (KNIT_ERR_TRUNCATE for a truncated receive) once done, KNIT_OK
 * while not done.  knit_wait blocks (spin, then yield, then sleep).
 * knit_waitall completes all; statuses may be NULL; returns the first error.
 */
knit_status_t knit_test(knit_request_t **req, int *done,
                        knit_msg_status_t *status);
knit_status_t knit_wait(knit_request_t **req, knit_msg_status_t *status);
knit_status_t knit_waitall(size_t n, knit_request_t **reqs,
                           knit_msg_status_t *statuses);

/* Send flags (knit_isend_flags). */
#define KNIT_SEND_SYNC 0x1  /* complete only once a receive has matched (MPI_Ssend) */

knit_status_t knit_isend_flags(knit_ctx_t *ctx, const void *buf, size_t len,
                               int peer, int tag, uint32_t comm_id, unsigned flags,
                               knit_request_t **req);

/*
 * Cancel a receive that has not matched yet: it completes with
 * KNIT_ERR_CANCELED.  Returns KNIT_ERR_STATE when it already matched (then
 * it completes normally) and KNIT_ERR_NOT_SUPPORTED for sends.
 */
knit_status_t knit_cancel(knit_request_t *req);

/* Like knit_test but leaves the request alive (MPI_Request_get_status). */
knit_status_t knit_request_status(knit_request_t *req, int *done,
                                  knit_msg_status_t *status);

/* Matched probe (MPI_Mprobe): removes the matching message from the queue
 * and returns a handle that only knit_imrecv can receive. */
typedef struct knit_message knit_message_t;
knit_status_t knit_improbe(knit_ctx_t *ctx, int peer, int tag, uint32_t comm_id,
                           int *flag, knit_message_t **msg, knit_msg_status_t *status);
knit_status_t knit_imrecv(knit_ctx_t *ctx, void *buf, size_t len,
                          knit_message_t **msg, knit_request_t **req);

/*
 * Wait, with the engine's policy (spin, then yield, then sleep; KNIT_WAIT),
 * until cond(arg) returns nonzero; progress runs between calls.  For
 * layers above (MPI's Waitany/Waitsome, collective schedules).
 */
knit_status_t knit_wait_until(knit_ctx_t *ctx, int (*cond)(void *arg), void *arg);

/* Probe for a matching message without receiving it. */
knit_status_t knit_iprobe(knit_ctx_t *ctx, int peer, int tag, uint32_t comm_id,
                          int *flag, knit_msg_status_t *status);
knit_status_t knit_probe(knit_ctx_t *ctx, int peer, int tag, uint32_t comm_id,
                         knit_msg_status_t *status);

/* ------------------------------------------------------ communicators */

/*
 * A communicator: an ordered list of job ranks and a context id.  Its
 * point-to-point traffic uses comm_id; collectives use comm_id |
 * KNIT_COLL_CTX_BIT, so they never match the communicator's own
 * point-to-point messages.  Layers above allocate context ids below that
 * bit.  Creation is local (no communication): every member must create it
 * with the same ranks and id.
 *
 * Context ids the layers of this library take (a program using knit's
 * native API alongside them keeps clear of these):
 *   0                         the world communicator
 *   1 .. 4095                 MPI communicators (knit's MPI)
 *   0x40000000 | id           MPI's internal traffic on communicator id
 *   0x2a000000 .. 0x2a0000ff  ARMCI (armci_msg_snd/rcv, its scope communicators)
 *   0x2b000000 .. 0x2bffffff  komp (OpenMP across nodes: its teams' communicators)
 *   0x2c000000                one-sided (knit_rma_barrier's messages of held puts)
 */
#define KNIT_COLL_CTX_BIT 0x80000000u

typedef struct knit_comm knit_comm_t;

knit_status_t knit_comm_create(knit_ctx_t *ctx, const int *ranks, int n, uint32_t comm_id,
                               knit_comm_t **comm);
/* The job's communicator (every rank, id 0); owned by the context. */
knit_comm_t *knit_comm_world(knit_ctx_t *ctx);
void knit_comm_destroy(knit_comm_t *comm);
int knit_comm_rank(const knit_comm_t *comm);  /* -1 if not a member */
int knit_comm_size(const knit_comm_t *comm);
int knit_comm_job_rank(const knit_comm_t *comm, int comm_rank);

/* ---------------------------------------------------------- collectives */

/* Element types of reductions (and the unit of counts). */
typedef enum knit_dtype {
    KNIT_BYTE = 0,
    KNIT_CHAR, KNIT_SCHAR, KNIT_UCHAR,
    KNIT_INT8, KNIT_UINT8, KNIT_INT16, KNIT_UINT16,
    KNIT_INT32, KNIT_UINT32, KNIT_INT64, KNIT_UINT64,
    KNIT_SHORT, KNIT_USHORT, KNIT_INT, KNIT_UINT, KNIT_LONG, KNIT_ULONG,
    KNIT_LONG_LONG, KNIT_ULONG_LONG,
    KNIT_FLOAT, KNIT_DOUBLE, KNIT_LONG_DOUBLE,
    KNIT_C_BOOL, KNIT_WCHAR,
    KNIT_FLOAT_COMPLEX, KNIT_DOUBLE_COMPLEX, KNIT_LONG_DOUBLE_COMPLEX,
    /* (value, index) pairs for MAXLOC / MINLOC, laid out as C structs */
    KNIT_FLOAT_INT, KNIT_DOUBLE_INT, KNIT_LONG_INT, KNIT_2INT, KNIT_SHORT_INT,
    KNIT_LONG_DOUBLE_INT,
    KNIT_DTYPE_COUNT
} knit_dtype_t;

size_t knit_dtype_size(knit_dtype_t t);

typedef enum knit_op_kind {
    KNIT_OP_SUM = 0, KNIT_OP_PROD, KNIT_OP_MAX, KNIT_OP_MIN,
    KNIT_OP_LAND, KNIT_OP_LOR, KNIT_OP_LXOR,
    KNIT_OP_BAND, KNIT_OP_BOR, KNIT_OP_BXOR,
    KNIT_OP_MAXLOC, KNIT_OP_MINLOC,
    KNIT_OP_REPLACE, KNIT_OP_NO_OP,
    KNIT_OP_USER,
} knit_op_kind_t;

/* inout[i] = in[i] op inout[i] for count elements of type dtype. */
typedef void (*knit_user_fn_t)(const void *in, void *inout, size_t count, knit_dtype_t dtype,
                               void *arg);

typedef struct knit_op {
    knit_op_kind_t kind;
    knit_user_fn_t fn;    /* KNIT_OP_USER only */
    void *arg;
    int commutative;      /* KNIT_OP_USER only; predefined ops are */
} knit_op_t;

/* Apply op: inout = in op inout.  KNIT_ERR_INVAL for an op that does not
 * apply to the type (e.g. BAND on double). */
knit_status_t knit_reduce_local(const void *in, void *inout, size_t count, knit_dtype_t dtype,
                                const knit_op_t *op);


/*
 * Collective operations over a communicator (docs/collectives.md).
 *
 * Every member calls the same collectives in the same order, with
 * matching arguments (root, count, dtype, op).  Counts are elements of
 * dtype; the v-forms take per-rank counts and displacements in elements,
 * knit_alltoallw takes bytes.  Non-reduction collectives only use the
 * dtype's size, so any contiguous data can travel as KNIT_BYTE.
 * KNIT_IN_PLACE as the send buffer (as the receive buffer of scatter at
 * the root) means what MPI_IN_PLACE means in the same place.  Buffers
 * belong to knit until the call returns (the request completes).
 * Results of reductions are the same on every rank and do not depend on
 * timing: the order of combination is fixed by the algorithm, and
 * non-commutative user ops are applied in rank order.
 * Errors: KNIT_ERR_INVAL for a bad argument (not a member, root out of
 * range, op not defined on dtype), KNIT_ERR_NOMEM; a communication error
 * of any step is the result of the whole collective.
 * Algorithms are chosen by size and process count; the KNIT_COLL_*
 * tunables force one (knit-info -e).
 */
#define KNIT_IN_PLACE ((void *)1)

knit_status_t knit_barrier(knit_comm_t *comm);
knit_status_t knit_bcast(knit_comm_t *comm, void *buf, size_t count, knit_dtype_t dtype, int root);
/* recvbuf is significant at the root only */
knit_status_t knit_reduce(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          knit_dtype_t dtype, const knit_op_t *op, int root);
knit_status_t knit_allreduce(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             knit_dtype_t dtype, const knit_op_t *op);
/* count elements from every rank, to recvbuf[rank * count] at the root */
knit_status_t knit_gather(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          knit_dtype_t dtype, int root);
knit_status_t knit_gatherv(knit_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                           const size_t *recvcounts, const size_t *displs, knit_dtype_t dtype,
                           int root);
/* in place: recvbuf = KNIT_IN_PLACE at the root (its block stays in sendbuf) */
knit_status_t knit_scatter(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                           knit_dtype_t dtype, int root);
knit_status_t knit_scatterv(knit_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                            const size_t *displs, void *recvbuf, size_t recvcount,
                            knit_dtype_t dtype, int root);
knit_status_t knit_allgather(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             knit_dtype_t dtype);
knit_status_t knit_allgatherv(knit_comm_t *comm, const void *sendbuf, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs, knit_dtype_t dtype);
knit_status_t knit_alltoall(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                            knit_dtype_t dtype);
knit_status_t knit_alltoallv(knit_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                             const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                             const size_t *rdispls, knit_dtype_t dtype);
/* sizes and displacements in bytes, per peer */
knit_status_t knit_alltoallw(knit_comm_t *comm, const void *sendbuf, const size_t *sendsizes,
                             const size_t *sdispls, void *recvbuf, const size_t *recvsizes,
                             const size_t *rdispls);
/* rank i gets recvcounts[i] elements of the reduction (in place: the input
 * is in recvbuf, the result lands at its start) */
knit_status_t knit_reduce_scatter(knit_comm_t *comm, const void *sendbuf, void *recvbuf,
                                  const size_t *recvcounts, knit_dtype_t dtype,
                                  const knit_op_t *op);
knit_status_t knit_reduce_scatter_block(knit_comm_t *comm, const void *sendbuf, void *recvbuf,
                                        size_t recvcount, knit_dtype_t dtype, const knit_op_t *op);
/* inclusive / exclusive prefix reduction in rank order (exscan leaves
 * rank 0's recvbuf untouched) */
knit_status_t knit_scan(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                        knit_dtype_t dtype, const knit_op_t *op);
knit_status_t knit_exscan(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          knit_dtype_t dtype, const knit_op_t *op);

/*
 * Nonblocking collectives: same arguments, and a request.  They progress
 * inside any knit call of the process (knit_progress, knit_test/wait of
 * anything, other collectives); no thread.  Several may be in flight on
 * one communicator, started in the same order by every member; their
 * traffic never mixes with each other's or with point-to-point traffic.
 * The op is copied; buffers and the count arrays of v-forms must stay
 * valid until completion.
 */
typedef struct knit_coll_request knit_coll_request_t;

knit_status_t knit_ibarrier(knit_comm_t *comm, knit_coll_request_t **req);
knit_status_t knit_ibcast(knit_comm_t *comm, void *buf, size_t count, knit_dtype_t dtype, int root,
                          knit_coll_request_t **req);
knit_status_t knit_ireduce(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                           knit_dtype_t dtype, const knit_op_t *op, int root,
                           knit_coll_request_t **req);
knit_status_t knit_iallreduce(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                              knit_dtype_t dtype, const knit_op_t *op, knit_coll_request_t **req);
knit_status_t knit_igather(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                           knit_dtype_t dtype, int root, knit_coll_request_t **req);
knit_status_t knit_iscatter(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                            knit_dtype_t dtype, int root, knit_coll_request_t **req);
knit_status_t knit_iallgather(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                              knit_dtype_t dtype, knit_coll_request_t **req);
knit_status_t knit_ialltoall(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             knit_dtype_t dtype, knit_coll_request_t **req);
knit_status_t knit_igatherv(knit_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                            const size_t *recvcounts, const size_t *displs, knit_dtype_t dtype,
                            int root, knit_coll_request_t **req);
knit_status_t knit_iscatterv(knit_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                             const size_t *displs, void *recvbuf, size_t recvcount,
                             knit_dtype_t dtype, int root, knit_coll_request_t **req);
knit_status_t knit_iallgatherv(knit_comm_t *comm, const void *sendbuf, void *recvbuf,
                               const size_t *recvcounts, const size_t *displs, knit_dtype_t dtype,
                               knit_coll_request_t **req);
knit_status_t knit_ialltoallv(knit_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                              const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                              const size_t *rdispls, knit_dtype_t dtype, knit_coll_request_t **req);
knit_status_t knit_ialltoallw(knit_comm_t *comm, const void *sendbuf, const size_t *sendsizes,
                              const size_t *sdispls, void *recvbuf, const size_t *recvsizes,
                              const size_t *rdispls, knit_coll_request_t **req);
knit_status_t knit_ireduce_scatter(knit_comm_t *comm, const void *sendbuf, void *recvbuf,
                                   const size_t *recvcounts, knit_dtype_t dtype,
                                   const knit_op_t *op, knit_coll_request_t **req);
knit_status_t knit_ireduce_scatter_block(knit_comm_t *comm, const void *sendbuf, void *recvbuf,
                                         size_t recvcount, knit_dtype_t dtype, const knit_op_t *op,
                                         knit_coll_request_t **req);
knit_status_t knit_iscan(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                         knit_dtype_t dtype, const knit_op_t *op, knit_coll_request_t **req);
knit_status_t knit_iexscan(knit_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                           knit_dtype_t dtype, const knit_op_t *op, knit_coll_request_t **req);

/*
 * Completion of a collective request.  knit_coll_test progresses once,
 * sets *done and, when done, frees the request, sets *req to NULL and
 * returns the collective's result (KNIT_OK while not done).  knit_coll_wait
 * blocks like knit_wait.  knit_coll_done tells, without progressing and
 * without freeing, whether it completed (for a wait-any built on
 * knit_wait_until).
 */
knit_status_t knit_coll_test(knit_coll_request_t **req, int *done);
knit_status_t knit_coll_wait(knit_coll_request_t **req);
int knit_coll_done(const knit_coll_request_t *req);

/* ------------------------------------------------------------ offload */

/*
 * Modules (docs/modules.md): code built against <knit/module.h> and loaded
 * at run time into every node's knit-agent and the job's knit-switch
 * (daemons knitrun starts with the job), or into the calling rank itself.
 *
 * knit_module_load is collective over the job for KNIT_MODULE_AGENT and
 * KNIT_MODULE_SWITCH: every rank calls it, in the same order as its other
 * loads and unloads; only rank 0 reads path, whose bytes are shipped to
 * every daemon (the file need not exist anywhere else).  It returns once
 * every daemon has the module, or fails everywhere with the same status
 * (KNIT_ERR_INVAL for a file that is not a module: not ELF, wrong
 * architecture, no KNIT_MOD_SYMBOL, wrong ABI version, init failing;
 * knit_module_last_error says which and where).  On_request runs in the
 * rank's node's agent (AGENT) or in the switch (SWITCH).  KNIT_MODULE_HOST
 * is local to the caller: the same .so runs inside this process, with
 * every agent and the switch emulated by a wrapper (for gdb, and to
 * compare); no daemon needed.  Without daemons (a singleton, or knitrun
 * --no-offload) AGENT and SWITCH give KNIT_ERR_NOT_SUPPORTED.
 *
 * knit_module_unload is collective too (per node it returns once every
 * rank of the node unloaded); open requests of the caller end with
 * KNIT_ERR_CANCELED.  Not thread safe (one context, one thread).
 */
typedef struct knit_module knit_module_t;
typedef struct knit_mreq knit_mreq_t;     /* a module request */

#define KNIT_MODULE_AGENT 1
#define KNIT_MODULE_SWITCH 2
#define KNIT_MODULE_HOST 3

knit_status_t knit_module_load(knit_ctx_t *ctx, const char *path, int where, knit_module_t **mod);
knit_status_t knit_module_unload(knit_module_t *mod);
/* The module's name (from its descriptor). */
const char *knit_module_name(const knit_module_t *mod);
/* Text of this process's last offload error (a refused load, a module
 * fault), "" when none; static storage, valid until the next offload call. */
const char *knit_module_last_error(knit_ctx_t *ctx);

/*
 * Ask the module: on_request gets a copy of args (0 bytes .. 64 MiB; up
 * to 200 bytes travel inside the queue entry, more are read from this
 * process's memory by the agent, so args must stay unchanged until the
 * request completes).  At most 64 requests and posted buffers per rank
 * are open at once (more make the call wait for completions).
 */
knit_status_t knit_module_request(knit_module_t *mod, const void *args, size_t len,
                                  knit_mreq_t **req);
/*
 * Completion of a module request (named so, not knit_test/knit_wait,
 * which complete point-to-point requests).  knit_request_test sets *done;
 * when done it copies up to cap result bytes into result, sets *len to
 * the full result length (may be NULL), frees the request, sets *req to
 * NULL and returns the request's status: the module's, KNIT_ERR_TRUNCATE
 * when the result was longer than cap, KNIT_ERR_MODULE_FAULT when the
 * module faulted (the result is then the reason, naming module and
 * fault), KNIT_ERR_CANCELED when it was unloaded, KNIT_ERR_PEER when the
 * agent is gone.  knit_request_wait blocks (spins, then sleeps until the
 * agent rings).
 */
knit_status_t knit_request_test(knit_mreq_t **req, int *done, void *result, size_t cap,
                                size_t *len);
knit_status_t knit_request_wait(knit_mreq_t **req, void *result, size_t cap, size_t *len);

/*
 * Post a buffer that the module's deliver() service may fill (oldest
 * first); the buffer belongs to knit until knit_module_recv_test/wait
 * returns it.  recv_test sets *done and, when done, the buffer and the
 * bytes delivered; it returns KNIT_ERR_TRUNCATE when the module delivered
 * more than the buffer held.
 */
knit_status_t knit_module_post_recv(knit_module_t *mod, void *buf, size_t len);
knit_status_t knit_module_recv_test(knit_module_t *mod, int *done, void **buf, size_t *len);
knit_status_t knit_module_recv_wait(knit_module_t *mod, void **buf, size_t *len);

/* Traffic across the host <-> agent boundary caused by this rank: queue
 * entries both ways and the agent's reads and writes of its memory. */
typedef struct knit_traffic {
    uint64_t queue_in_ops, queue_in_bytes;    /* entries rank -> agent */
    uint64_t queue_out_ops, queue_out_bytes;  /* entries agent -> rank */
    uint64_t agent_read_ops, agent_read_bytes;
    uint64_t agent_write_ops, agent_write_bytes;
} knit_traffic_t;

/* For mod, or for everything this rank did (mod NULL).  Zero at host
 * placement (nothing crosses).  KNIT_STATS=1 prints it all per rank and
 * module at the end of the job. */
knit_status_t knit_stats(knit_ctx_t *ctx, const knit_module_t *mod, knit_traffic_t *out);

/* The node's agent's own numbers, for leak checks and knit-info. */
typedef struct knit_agent_info {
    uint64_t open_fds, mappings;   /* of the agent process */
    uint64_t modules, open_requests, scratch_bytes;
    uint64_t heap_bytes;           /* the agent's heap in use (malloc) */
    int32_t node, pid;
} knit_agent_info_t;
knit_status_t knit_agent_info(knit_ctx_t *ctx, knit_agent_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* KNIT_H */
