/*
 * bp: the tiny portable layer the benchmark programs are written against, so
 * that one source builds against knit's native API (bp_knit.c, linked with
 * libknit.a) and against any MPI (bp_mpi.c, built with that MPI's mpicc; later
 * also with knitcc over knit's own MPI layer).
 *
 * Contract: every call either succeeds or ends the whole job with a message
 * on stderr that names the call and the implementation's error (the
 * benchmarks never continue after a failed transfer).  Messages are bytes;
 * peers are ranks of the whole job; tags are 0 .. BP_TAG_MAX.  One thread.
 */
#ifndef BENCH_BP_H
#define BENCH_BP_H

#include <stddef.h>
#include <time.h>

#define BP_TAG_MAX 32767 /* the smallest MPI_TAG_UB the MPI standard allows */

/* A request handle: an MPI_Request or a knit request, stored by value. */
typedef void *bp_req_t;

void bp_init(int *argc, char ***argv);
/* Rank 0 first prints "# done" (all results are out). */
void bp_finalize(void);
int bp_rank(void);
int bp_size(void);

void bp_isend(const void *buf, size_t len, int peer, int tag, bp_req_t *req);
void bp_irecv(void *buf, size_t len, int peer, int tag, bp_req_t *req);
/* Completes all n requests (n may be 0). */
void bp_waitall(int n, bp_req_t *reqs);
void bp_send(const void *buf, size_t len, int peer, int tag);
/* Receives at most len bytes (no status: the fast path of every library). */
void bp_recv(void *buf, size_t len, int peer, int tag);
/* The same, returning the number of bytes received (for checks). */
size_t bp_recv_len(void *buf, size_t len, int peer, int tag);
void bp_barrier(void);

/*
 * Collectives over all ranks of the job, for bench/coll.c.  bp_mpi.c maps
 * them to the MPI collectives on MPI_COMM_WORLD, bp_knit.c to knit's native
 * collectives on knit_comm_world().  Byte counts are per message (bcast) or
 * per rank block (allgather, alltoall: out holds size() blocks of len bytes,
 * block i from / for rank i); the reductions add `count` doubles
 * elementwise (MPI_SUM of MPI_DOUBLE, KNIT_OP_SUM of KNIT_DOUBLE); out of
 * bp_reduce is significant at the root only.  in and out never overlap.
 */
void bp_bcast(void *buf, size_t len, int root);
void bp_reduce(const double *in, double *out, size_t count, int root);
void bp_allreduce(const double *in, double *out, size_t count);
void bp_allgather(const void *in, void *out, size_t len);
void bp_alltoall(const void *in, void *out, size_t len);
/* The nonblocking allreduce (bench/overlap.c), and waiting for it. */
void bp_iallreduce(const double *in, double *out, size_t count, bp_req_t *req);
void bp_wait_coll(bp_req_t *req);

/*
 * One-sided, for bench/rma.c: one window of len bytes on every rank
 * (MPI_Win_allocate; knit_mem_alloc).  bp_rma_strided moves nblk blocks
 * of bsize bytes between local memory (blocks lstride apart) and rank's
 * window (from byte roff, rstride apart): MPI_Put / MPI_Get of an
 * MPI_Type_vector on both sides; knit_put_strided / knit_get_strided
 * with method (0: KNIT_RMA_METHOD).  bp_win_fence ends the epoch: every
 * transfer is complete at its target and every rank is there
 * (MPI_Win_fence; knit_rma_barrier).
 */
void *bp_win_alloc(size_t len);
void bp_rma_strided(int put, void *local, size_t lstride, size_t roff, size_t rstride, size_t bsize, size_t nblk,
                    int rank, int method);
void bp_win_fence(void);
void bp_win_free(void);

/* Ends the job (all ranks) with exit code 1 after printing msg. */
void bp_abort(const char *msg) __attribute__((noreturn));

/* "knit", "openmpi", "mpich", ...: set at build time with -DBP_IMPL_NAME=...
 * or detected from the library. */
const char *bp_impl_name(void);
/* One line describing the library and its version. */
const char *bp_impl_version(void);

/* Seconds from an arbitrary fixed point.  The same clock for every
 * implementation (CLOCK_MONOTONIC), so that no timer differs between them. */
static inline double bp_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
