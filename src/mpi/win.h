/*
 * MPI one-sided communication over knit's one-sided layer (src/rma):
 * windows and their objects (win.c), the operations and their requests
 * (win_ops.c), synchronization (win_sync.c).  docs/mpi.md, One-sided.
 *
 * A window holds a duplicate of its communicator (its own contexts for
 * the synchronization messages of post/start/complete/wait), a knit
 * window over the exposed memory (a dynamic window's covers every
 * address) and a second knit window of one lock word per member.
 * Operations are started at once (KNIT_RMA_LOCAL: they complete locally
 * as soon as the origin buffer may be reused) and kept until a flush,
 * unlock, complete or fence completes them at their targets.
 */
#ifndef KN_MPI_WIN_H
#define KN_MPI_WIN_H

#include "knit/rma.h"
#include "mpi/mpi_impl.h"

/* An operation not yet completed by a synchronization call. */
typedef struct kn_mpi_rop {
    knit_rma_req_t *kr;
    int rank;                  /* target (window rank) */
    /* a get-accumulate's or a get's result, to unpack once done */
    void *tmp;
    void *buf;
    size_t count;
    kn_mpi_type_t *type;
    int big;                   /* an accumulate the agents carry in several windows of chunks */
    knit_status_t st;          /* a request form's: how it ended (kr NULL then) */
} kn_mpi_rop_t;

typedef struct kn_mpi_region {
    char *base;
    MPI_Aint size;
} kn_mpi_region_t;

typedef struct kn_mpi_win {
    MPI_Win handle;
    kn_mpi_comm_t *comm;       /* the duplicate */
    int n, me;
    knit_win_t *kw;            /* the exposed memory */
    knit_win_t *ctl;           /* lock words */
    int flavor;
    void *base;
    MPI_Aint size;
    int disp_unit;
    int *disp;                 /* [n] every member's disp_unit */
    uint8_t *remote;           /* [n] on another node */
    /* shared windows */
    char *shm;                 /* the node segment, mapped */
    size_t shm_len;
    MPI_Aint *shm_off, *shm_size; /* [n] */
    /* dynamic windows: what this member attached */
    kn_mpi_region_t *att;
    int natt, catt;
    /* epochs */
    int fence;                 /* a fence opened an access and exposure epoch */
    int lock_all;              /* MPI_Win_lock_all held */
    int lock_all_nocheck;
    uint8_t *locked;           /* [n] KN_WL_*, | KN_WL_NOCHECK */
    int nlocked;
    int accessing, exposing;   /* between start and complete, post and wait */
    int *access;               /* MPI_Win_start's group (window ranks) */
    int naccess;
    int *expose;               /* MPI_Win_post's group */
    int nexpose;
    uint8_t *expose_done;      /* [nexpose] its complete came (MPI_Win_test) */
    /* operations started and not yet completed at their targets */
    kn_mpi_rop_t *rop;
    size_t nrop, crop;
    /* attributes, names, handler, hints */
    MPI_Errhandler errh;
    kn_mpi_attr_t *attrs;
    MPI_Info info;
    int no_locks, ordered_acc;
    /* fence epochs' messages (win_msg.c) */
    int msg;                   /* the window spans nodes: fences count messages */
    long long *msg_sent;       /* [n] messages sent to each member this epoch */
    uint8_t *msg_acc;          /* [n] an accumulate among them */
    unsigned long long msg_epoch;
    struct kn_mpi_wm_pend *msg_pend; /* sends and replies in flight */
    char *msg_rbuf;            /* where a message with its data behind it is put together */
    struct kn_mpi_wm_held *held; /* start/complete: accumulates held until complete */
    size_t nheld, cheld;
    size_t msg_rcap;
    size_t nmsg_pend, cmsg_pend;
    char name[MPI_MAX_OBJECT_NAME];
} kn_mpi_win_t;

/* locked[] */
enum { KN_WL_NONE = 0, KN_WL_SHARED, KN_WL_EXCL, KN_WL_ALL /* lock_all's, taken at first use */ };
#define KN_WL_NOCHECK 0x80      /* MPI_MODE_NOCHECK: the word was not taken */

/* the lock word: shared holders count up from 0; an exclusive holder adds KN_WL_EXCL_BIT */
#define KN_WL_EXCL_BIT ((int64_t)1 << 40)

/* tags of the window's synchronization messages (on its communicator's internal context) */
enum { KN_WT_POST = 1, KN_WT_COMPLETE = 2, KN_WT_MSG0 = 3 /* and 4 */, KN_WT_REPLY = 5, KN_WT_PSCW = 6 };

kn_mpi_win_t *kn_mpi_win(MPI_Win h);
/* Raise an error on the window (its handler). */
int kn_mpi_win_error(kn_mpi_win_t *w, const char *fn, int cls, knit_status_t cause, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* In an entry point: var is the window behind h, or the error is returned. */
kn_mpi_win_t *kn_mpi_win_arg(MPI_Win h, const char *fn, int *err);
#define KN_MPI_WIN_ARG(var, h)                                   \
    kn_mpi_win_t *var;                                           \
    do {                                                         \
        int e_;                                                  \
        if (!(var = kn_mpi_win_arg((h), __func__, &e_)))         \
            return e_;                                           \
    } while (0)

/* win_ops.c: keep a started operation; complete the kept ones to rank
 * (-1: all), locally only (local) or at the targets; the first error's
 * class is raised from fn. */
int kn_mpi_win_keep(kn_mpi_win_t *w, const kn_mpi_rop_t *op, const char *fn);
int kn_mpi_win_complete_ops(kn_mpi_win_t *w, int rank, int local, const char *fn);
/* win_sync.c: an operation to rank is allowed now (an epoch covers it);
 * a lock_all's lock on rank is taken at its first operation. */
int kn_mpi_win_access(kn_mpi_win_t *w, int rank, const char *fn);
/* whether any epoch is open (MPI_Win_free must see none) */
int kn_mpi_win_busy(const kn_mpi_win_t *w);

/* win_msg.c: an operation to rank that goes as a message to it (fence
 * epochs, and start/complete epochs' puts, another node).  Send it; what
 * it fetches (a get's data, a fetching accumulate's or an atomic's
 * result) arrives at the fence.  KNIT_ERR_AGAIN: not as a message after
 * all, take the other methods.  At the fence: exchange the counts, apply
 * and answer what came, wait for what went (collective). */
typedef struct kn_mpi_wm_pend kn_mpi_wm_pend_t;
enum { KN_WM_PUT = 1, KN_WM_GET, KN_WM_ACC, KN_WM_GACC, KN_WM_RMW };
typedef struct kn_mpi_wm_op {
    int kind, rank;
    /* the origin's data (put, accumulate, a fetching accumulate's; NULL
     * for MPI_NO_OP), or where a get's goes */
    char *obuf;
    kn_mpi_type_t *ot;
    size_t ocount;
    /* the target's layout (an atomic: taddr alone) and the data's bytes */
    uint64_t taddr;
    kn_mpi_type_t *tt;
    size_t tcount, bytes;
    const knit_rma_acc_t *acc;     /* accumulates; an atomic's dtype in acc->dtype */
    /* where the answer goes: a get's is obuf in ot; a fetching
     * accumulate's rbuf in rt (rt NULL: bytes as they come) */
    char *rbuf;
    kn_mpi_type_t *rt;
    size_t rcount;
    int aop;                       /* an atomic's knit_rma_atomic_op_t */
    uint64_t operand, compare;
} kn_mpi_wm_op_t;
/* The messages' wire form: this header, for the list form nseg pieces,
 * then the origin's data where data is 1. */
typedef struct kn_mpi_wm_hdr {
    uint32_t kind;         /* KN_WM_MAGIC | KN_WM_* */
    int32_t levels;        /* 0..2: strided; KN_WM_LIST: nseg pieces follow */
    uint64_t first;        /* strided: the target's address of the first block */
    int64_t cnt[3], stride[2]; /* knit_put_strided's: cnt[0] bytes a block, cnt[1..levels] */
    uint64_t nseg;
    uint64_t bytes;        /* of data at the target */
    int32_t dtype, op;     /* accumulates: knit's element type and op; an atomic's dtype */
    uint32_t aop, data;    /* an atomic's knit_rma_atomic_op_t; 1: the origin's data follows,
                            * KN_WM_DATA_NEXT: as the origin's next message (counted too) */
    uint64_t operand, compare;
} kn_mpi_wm_hdr_t;
typedef struct kn_mpi_wm_piece {
    uint64_t addr, len;    /* at the target */
} kn_mpi_wm_piece_t;
#define KN_WM_MAGIC 0x574d0000u
#define KN_WM_LIST (-1)
#define KN_WM_DATA_NEXT 2u
int kn_mpi_win_msg_wanted(const kn_mpi_win_t *w, int rank, size_t bytes);
knit_status_t kn_mpi_win_msg_op(kn_mpi_win_t *w, const kn_mpi_wm_op_t *o);
/* an accumulate went to rank as a message this epoch, and the epoch still
 * allows messages: its fetching accumulates and atomics must go that way
 * too (accumulate_ordering) */
int kn_mpi_win_msg_behind_acc(const kn_mpi_win_t *w, int rank);
knit_status_t kn_mpi_win_msg_fence(kn_mpi_win_t *w);
/* start/complete epochs hold their accumulates to other nodes until
 * complete sends them (send_held, before it counts); another accumulate,
 * fetching accumulate or atomic to rank that is not a message first sends
 * rank's through the agents (unhold), in order. */
knit_status_t kn_mpi_win_msg_send_held(kn_mpi_win_t *w);
knit_status_t kn_mpi_win_msg_unhold(kn_mpi_win_t *w, int rank);
/* start/complete epochs: the messages sent to rank since the last call
 * (complete tells the target), wait for them to leave, and at the target
 * take k of them from origin. */
long long kn_mpi_win_msg_sent(kn_mpi_win_t *w, int rank);
knit_status_t kn_mpi_win_msg_complete(kn_mpi_win_t *w);
knit_status_t kn_mpi_win_msg_take(kn_mpi_win_t *w, int origin, long long k);
void kn_mpi_win_msg_release(kn_mpi_win_t *w);

#endif
