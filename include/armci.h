/*
 * armci.h: knit's ARMCI (the one-sided interface of Global Arrays),
 * libknitarmci over knit's RMA layer (include/knit/rma.h).  docs/armci.md
 * lists what is supported and what is not yet.
 *
 * Build with knitcc (it links libknitarmci), run with knitrun.  A program
 * calls MPI_Init before ARMCI_Init and MPI_Finalize after ARMCI_Finalize;
 * when knit is not started yet, ARMCI_Init starts it with MPI_Init and
 * ARMCI_Finalize then ends it with MPI_Finalize.
 *
 * Processes are the ranks of MPI_COMM_WORLD (knit's world communicator).
 * Remote memory is named by its address in the target process, as
 * ARMCI_Malloc returned it there: any address inside any region that
 * ARMCI_Malloc allocated on that process, for the whole transfer.
 *
 * Errors: calls returning int return 0 on success and a negative value on
 * error (knit's status: -1 for an invalid argument, -15 for remote memory
 * outside every ARMCI_Malloc'ed region, -8 for something not supported
 * yet, ...), after printing one line to stderr that names the call and the
 * cause.  Calls returning void end the job through ARMCI_Error on error,
 * as ARMCI implementations do.  The one-sided calls, ARMCI_Malloc /
 * ARMCI_Free and the mutexes end the job when called before ARMCI_Init;
 * armci_msg_* and the locality queries only need knit started.
 *
 * Completion: the blocking calls return once the operation is complete at
 * the target (stronger than ARMCI requires).  A nonblocking call returns
 * at once; its source buffer must not change, and its destination must
 * not be read, until ARMCI_Wait / ARMCI_Test says it completed (or
 * ARMCI_WaitProc / ARMCI_WaitAll, which complete every operation to one
 * or all targets, with a handle or without).  ARMCI_Fence(p) makes every
 * operation to p complete at p; ARMCI_Barrier is ARMCI_AllFence and a
 * barrier.  Accumulates and read-modify-writes are atomic element-wise
 * with respect to each other, not with respect to puts.
 *
 * Threads: one thread at a time in ARMCI (and in knit).
 */
#ifndef KNIT_ARMCI_H
#define KNIT_ARMCI_H

#include <stddef.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KNIT_ARMCI 1

typedef long armci_size_t;

/* ---------------------------------------------------------- start / end */

int ARMCI_Init(void);
int ARMCI_Init_args(int *argc, char ***argv);
/* 1 between ARMCI_Init and ARMCI_Finalize, else 0. */
int ARMCI_Initialized(void);
/* Completes every outstanding operation, frees every region and the
 * mutexes still allocated (collective, like ARMCI_Free). */
int ARMCI_Finalize(void);
/* Local clean-up for a process about to abort: nothing to do in knit. */
void ARMCI_Cleanup(void);
/* End the whole job with code (1 where code is not in 1..255); knitrun
 * prints "rank R on node N aborted (code C): ARMCI_Error: msg: code".
 * Never returns. */
void ARMCI_Error(const char *msg, int code);

/* ---------------------------------------------------------------- memory */

/* Collective: every process allocates bytes (which may differ per process,
 * 0 included) of zeroed memory that the others can reach; ptr_arr (one
 * entry per process) gets every process's address, NULL for a process
 * that allocated 0 bytes.  A negative size or NULL ptr_arr ends the job
 * (the other processes are in the collective). */
int ARMCI_Malloc(void **ptr_arr, armci_size_t bytes);
/* Collective: frees the region whose address on this process is ptr
 * (NULL on a process that allocated 0 bytes).  Every process must name
 * the same region: otherwise nothing is freed and every process gets an
 * error. */
int ARMCI_Free(void *ptr);
/* Local memory (64-byte aligned), usable as a local buffer of any call;
 * NULL on failure. */
void *ARMCI_Malloc_local(armci_size_t bytes);
int ARMCI_Free_local(void *ptr);

/* Direct access to this process's own region: no-ops in knit, where load
 * and store on one's own region are always allowed (remote operations
 * that overlap them make the values undefined, as in ARMCI). */
void ARMCI_Access_begin(void *ptr);
void ARMCI_Access_end(void *ptr);
/* Local copy of n bytes (memmove). */
void ARMCI_Copy(void *src, void *dst, int n);

/* ------------------------------------------------------ synchronization */

void ARMCI_Barrier(void);
void ARMCI_Fence(int proc);
void ARMCI_AllFence(void);

/* ---------------------------------------------- contiguous operations */

/* Accumulate op codes: dst += scale * src, element-wise; scale points to
 * one element of the type (NULL: 1).  CPL is float complex, DCP double
 * complex (re, im pairs). */
#define ARMCI_ACC_INT 37
#define ARMCI_ACC_DBL 38
#define ARMCI_ACC_FLT 39
#define ARMCI_ACC_CPL 40
#define ARMCI_ACC_DCP 41
#define ARMCI_ACC_LNG 42

/* src and dst: the local buffer and the remote address (get: the
 * reverse); bytes >= 0 (0 moves nothing). */
int ARMCI_Put(void *src, void *dst, int bytes, int proc);
int ARMCI_Get(void *src, void *dst, int bytes, int proc);
/* bytes a whole number of elements of the op's type */
int ARMCI_Acc(int optype, void *scale, void *src, void *dst, int bytes, int proc);

/* Put, then set the int *flag at proc (an ARMCI_Malloc'ed address) to
 * value once the data is in place. */
int ARMCI_Put_flag(void *src, void *dst, int bytes, int *flag, int value, int proc);

/* ---------------------------------------------------- strided operations */

/*
 * count[0] contiguous bytes per block; count[1..stride_levels] the
 * repetitions of each level above; src_stride_arr[i] / dst_stride_arr[i]
 * (i < stride_levels) the bytes between the starts of consecutive
 * repetitions of level i+1 on each side.  stride_levels 0 is one block.
 * At most ARMCI_MAX_STRIDE_LEVEL - 1 levels (7); negative counts or
 * strides, or more levels, are an error.
 */
#define ARMCI_MAX_STRIDE_LEVEL 8

int ARMCI_PutS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
               int stride_levels, int proc);
int ARMCI_GetS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
               int stride_levels, int proc);
int ARMCI_AccS(int optype, void *scale, void *src_ptr, int src_stride_arr[], void *dst_ptr,
               int dst_stride_arr[], int count[], int stride_levels, int proc);
int ARMCI_PutS_flag(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
                    int stride_levels, int *flag, int value, int proc);

/* ------------------------------------------------------- vector (I/O) form */

/* ptr_array_len segments of bytes bytes each, from src_ptr_array[i] to
 * dst_ptr_array[i]; the remote segments may lie in different regions. */
typedef struct {
    void **src_ptr_array;
    void **dst_ptr_array;
    int ptr_array_len;
    int bytes;
} armci_giov_t;

int ARMCI_PutV(armci_giov_t darr[], int len, int proc);
int ARMCI_GetV(armci_giov_t darr[], int len, int proc);
int ARMCI_AccV(int optype, void *scale, armci_giov_t darr[], int len, int proc);

/* --------------------------------------------------------- value forms */

int ARMCI_PutValueInt(int src, void *dst, int proc);
int ARMCI_PutValueLong(long src, void *dst, int proc);
int ARMCI_PutValueFloat(float src, void *dst, int proc);
int ARMCI_PutValueDouble(double src, void *dst, int proc);
/* The value at src on proc; an error ends the job (there is no status). */
int ARMCI_GetValueInt(void *src, int proc);
long ARMCI_GetValueLong(void *src, int proc);
float ARMCI_GetValueFloat(void *src, int proc);
double ARMCI_GetValueDouble(void *src, int proc);

/* ---------------------------------------------------- nonblocking forms */

/*
 * A handle names the operations started with it.  ARMCI_INIT_HANDLE
 * before first use; a handle used again before it was waited for first
 * waits for its earlier operations, unless it is an aggregate handle
 * (ARMCI_SET_AGGREGATE_HANDLE), which collects operations until waited
 * for.  A NULL handle: the operation is completed by ARMCI_WaitProc,
 * ARMCI_WaitAll, ARMCI_Fence, ARMCI_AllFence or ARMCI_Barrier.  The
 * fields belong to the library.
 */
typedef struct armci_hdl_s {
    int target;               /* the last operation's target, -1: none */
    int aggregate;
    unsigned long long id;    /* 0: no operation in flight */
} armci_hdl_t;

void ARMCI_INIT_HANDLE(armci_hdl_t *hdl);
void ARMCI_SET_AGGREGATE_HANDLE(armci_hdl_t *hdl);
void ARMCI_UNSET_AGGREGATE_HANDLE(armci_hdl_t *hdl);

int ARMCI_NbPut(void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl);
int ARMCI_NbGet(void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl);
int ARMCI_NbAcc(int optype, void *scale, void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl);
int ARMCI_NbPutS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
                 int stride_levels, int proc, armci_hdl_t *hdl);
int ARMCI_NbGetS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
                 int stride_levels, int proc, armci_hdl_t *hdl);
int ARMCI_NbAccS(int optype, void *scale, void *src_ptr, int src_stride_arr[], void *dst_ptr,
                 int dst_stride_arr[], int count[], int stride_levels, int proc, armci_hdl_t *hdl);
int ARMCI_NbPutV(armci_giov_t darr[], int len, int proc, armci_hdl_t *hdl);
int ARMCI_NbGetV(armci_giov_t darr[], int len, int proc, armci_hdl_t *hdl);
int ARMCI_NbAccV(int optype, void *scale, armci_giov_t darr[], int len, int proc, armci_hdl_t *hdl);
int ARMCI_NbPutValueInt(int src, void *dst, int proc, armci_hdl_t *hdl);
int ARMCI_NbPutValueLong(long src, void *dst, int proc, armci_hdl_t *hdl);
int ARMCI_NbPutValueFloat(float src, void *dst, int proc, armci_hdl_t *hdl);
int ARMCI_NbPutValueDouble(double src, void *dst, int proc, armci_hdl_t *hdl);

/* 0 once the handle's operations completed (the first one's error if one
 * failed).  ARMCI_Test: 0 if complete (the handle is then free), 1 if
 * not yet, negative if an operation failed. */
int ARMCI_Wait(armci_hdl_t *hdl);
int ARMCI_Test(armci_hdl_t *hdl);
int ARMCI_WaitProc(int proc);
int ARMCI_WaitAll(void);

/* ------------------------------------------------- read-modify-write */

#define ARMCI_SWAP 10
#define ARMCI_SWAP_LONG 11
#define ARMCI_FETCH_AND_ADD 12
#define ARMCI_FETCH_AND_ADD_LONG 13

/*
 * Atomic on the int (long for the _LONG ops) at prem on proc:
 *   FETCH_AND_ADD   *ploc = old value, *prem += value
 *   SWAP            *ploc and *prem exchanged (value unused)
 * Needs the node agents (knitrun without --no-offload) unless proc is the
 * caller.
 */
int ARMCI_Rmw(int op, void *ploc, void *prem, int value, int proc);

/* ----------------------------------------------------------- mutexes */

/* Collective: this process hosts count mutexes (0 allowed; counts may
 * differ per process), numbered 0..count-1.  Fair (first come, first
 * served).  One set at a time: a second create without destroy fails. */
int ARMCI_Create_mutexes(int count);
int ARMCI_Destroy_mutexes(void);
/* Mutex number mutex hosted by proc; a bad number ends the job. */
void ARMCI_Lock(int mutex, int proc);
void ARMCI_Unlock(int mutex, int proc);

/* ------------------------------------------------------------ locality */

/* Processes that share a node share ARMCI_DOMAIN_SMP domain ids
 * (knit's nodes, emulated ones included); ids are 0..count-1. */
typedef int armci_domain_t;
#define ARMCI_DOMAIN_SMP 0

int armci_domain_nprocs(armci_domain_t domain, int id);
int armci_domain_id(armci_domain_t domain, int glob_proc_id);
int armci_domain_glob_proc_id(armci_domain_t domain, int id, int loc_proc_id);
int armci_domain_my_id(armci_domain_t domain);
int armci_domain_count(armci_domain_t domain);
int armci_domain_same_id(armci_domain_t domain, int proc);
int ARMCI_Same_node(int proc);
/* 0: processes never reach each other's memory by load and store (knit
 * moves data by cross-memory attach and the network). */
int ARMCI_Uses_shm(void);

#ifdef __cplusplus
}
#endif

#include <armci_msg.h>

#endif /* KNIT_ARMCI_H */
