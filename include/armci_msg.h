/*
 * armci_msg.h: ARMCI's message helpers (knit's ARMCI, docs/armci.md);
 * armci.h includes it.
 *
 * They need knit started (MPI_Init, knit_init or ARMCI_Init), not
 * ARMCI_Init.  Processes are the ranks of MPI_COMM_WORLD.  The collectives
 * are collective over every process (over the node's processes or the
 * node masters for the SCOPE_NODE / SCOPE_MASTERS forms), called in the
 * same order everywhere with matching arguments.  Errors (bad arguments,
 * a failed transfer) end the job with a message: these calls return no
 * status.  Their messages never match the program's MPI messages.
 */
#ifndef KNIT_ARMCI_MSG_H
#define KNIT_ARMCI_MSG_H

#ifdef __cplusplus
extern "C" {
#endif

/* element types of armci_msg_gop_scope / armci_msg_reduce */
#define ARMCI_INT -99
#define ARMCI_LONG -101
#define ARMCI_LONG_LONG -102
#define ARMCI_FLOAT -306
#define ARMCI_DOUBLE -307

/* scopes: every process, the processes of the caller's node, the first
 * process of each node (other processes return at once) */
#define SCOPE_ALL 333
#define SCOPE_NODE 337
#define SCOPE_MASTERS 339

int armci_msg_me(void);
int armci_msg_nproc(void);
/* End the job with code (1 where code is not in 1..255), as ARMCI_Error. */
void armci_msg_abort(int code);
/* Seconds since some fixed point of this process (monotonic clock). */
double armci_timer(void);

/* Point to point, blocking.  tag >= 0.  rcv: a message longer than
 * buflen ends the job; msglen (may be NULL) gets its length.  rcvany
 * returns the sender. */
void armci_msg_snd(int tag, void *buffer, int len, int to);
void armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from);
int armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen);

void armci_msg_barrier(void);
/* len bytes from root to every process */
void armci_msg_bcast(void *buffer, int len, int root);
void armci_msg_brdcst(void *buffer, int len, int root);
/* root: the process's rank in the scope (SCOPE_NODE: index among the
 * node's processes; SCOPE_MASTERS: node number) */
void armci_msg_bcast_scope(int scope, void *buffer, int len, int root);

/*
 * Global operations in place, the result on every process of the scope:
 * op is "+", "*", "max", "min", "absmax", "absmin" (largest / smallest
 * absolute value, returned as that absolute value), and for the integer
 * types also "or" (bitwise).  An unknown op ends the job.
 */
void armci_msg_gop_scope(int scope, void *x, int n, char *op, int type);
void armci_msg_igop(int *x, int n, char *op);
void armci_msg_lgop(long *x, int n, char *op);
void armci_msg_llgop(long long *x, int n, char *op);
void armci_msg_fgop(float *x, int n, char *op);
void armci_msg_dgop(double *x, int n, char *op);
/* Like gop but the result is significant on process 0 only. */
void armci_msg_reduce(void *x, int n, char *op, int type);
void armci_msg_reduce_scope(int scope, void *x, int n, char *op, int type);

/* Every process's ptr_ar[me] to every process (n: the number of
 * processes). */
void armci_exchange_address(void *ptr_ar[], int n);

#ifdef __cplusplus
}
#endif
#endif /* KNIT_ARMCI_MSG_H */
