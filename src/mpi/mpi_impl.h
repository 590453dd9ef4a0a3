/*
 * knit's MPI subset: internal interface between the files of src/mpi, and
 * the surface the MPI bindings of the collectives use (look up a
 * communicator, its knit_comm_t and context id; look up a datatype, its
 * element type and layout; pack/unpack; raise an MPI error).
 *
 * src/mpi sits above the native API: it includes knit.h (and util headers
 * for small helpers) and never a transport or engine header.
 *
 * Context ids: MPI_COMM_WORLD is 0, MPI_COMM_SELF 1, others are agreed on
 * by the members at creation (an AND of the members' free-id masks, so the
 * chosen id is free at every member).  A communicator's traffic uses
 *   ctx_id                      its point-to-point messages
 *   ctx_id | KN_MPI_CTX_INTERNAL  the MPI layer's own exchanges (creation)
 *   ctx_id | KN_MPI_CTX_NBR       neighbourhood collectives (topo.c)
 *   ctx_id | KNIT_COLL_CTX_BIT    collectives (knit_comm_t, src/coll); on an
 *                               intercommunicator, which has no knit_comm_t,
 *                               inter.c's messages between the groups
 * An intercommunicator's id is free at every member of both groups.
 */
#ifndef KN_MPI_IMPL_H
#define KN_MPI_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "knit.h"
#include "mpi.h"

#define KN_MPI_CTX_INTERNAL 0x40000000u
#define KN_MPI_CTX_NBR 0x20000000u
#define KN_MPI_CTX_MAX 4096         /* context ids per process */
#define KN_MPI_TAG_UB (KNIT_TAG_UB - 1) /* KNIT_TAG_UB is the layer's own tag */
#define KN_MPI_TAG_INTERNAL KNIT_TAG_UB

/* handle kinds (the byte above the index; mpi.h's KN_MPI_H) */
enum {
    KN_K_COMM = 1, KN_K_GROUP = 2, KN_K_TYPE = 3, KN_K_REQ = 4, KN_K_OP = 5, KN_K_ERRH = 6,
    KN_K_INFO = 7, KN_K_MSG = 8, KN_K_WIN = 9, KN_K_KEYVAL = 12,
};

/* ------------------------------------------------------- handle tables */

typedef struct kn_mpi_tbl {
    int kind;
    int cap, used;     /* slots allocated, slots ever handed out */
    void **slot;
    int *free_idx;     /* stack of released indexes */
    int nfree;
} kn_mpi_tbl_t;

/* Object behind handle h, or NULL if h is not a live handle of this table. */
static inline void *kn_mpi_tbl_get(const kn_mpi_tbl_t *t, int h)
{
    unsigned u = (unsigned)h;
    if ((u & 0xff000000u) != (0x40000000u | ((unsigned)t->kind << 24)))
        return NULL;
    unsigned idx = u & 0xffffffu;
    return idx < (unsigned)t->used ? t->slot[idx] : NULL;
}
/* Store obj under a new handle (reserved: a predefined index, or -1). */
int kn_mpi_tbl_add(kn_mpi_tbl_t *t, void *obj, int idx);
void kn_mpi_tbl_del(kn_mpi_tbl_t *t, int h);
/* kn_mpi_tbl_del of a handle known to be live (the requests' hot path). */
static inline void kn_mpi_tbl_del_live(kn_mpi_tbl_t *t, int h)
{
    int idx = h & 0xffffff;
    t->slot[idx] = NULL;
    t->free_idx[t->nfree++] = idx;
}

/* The requests' hot path: a released index when there is one. */
static inline int kn_mpi_tbl_add_any(kn_mpi_tbl_t *t, void *obj)
{
    if (__builtin_expect(t->nfree == 0, 0))
        return kn_mpi_tbl_add(t, obj, -1);
    int idx = t->free_idx[--t->nfree];
    t->slot[idx] = obj;
    return (int)(0x40000000u | ((unsigned)t->kind << 24) | (unsigned)idx);
}
void kn_mpi_tbl_destroy(kn_mpi_tbl_t *t);

/* ---------------------------------------------------------- attributes */

typedef struct kn_mpi_attr {
    struct kn_mpi_attr *next;
    int keyval;
    void *val;
} kn_mpi_attr_t;

/* ------------------------------------------------------------- objects */

typedef struct kn_mpi_group {
    int n;
    int *ranks;          /* job ranks */
    int refs;
} kn_mpi_group_t;

typedef struct kn_mpi_inter kn_mpi_inter_t; /* an intercommunicator's part (inter.c) */

/* An intercommunicator's size, ranks and job2comm are its REMOTE group's
 * (the ranks point-to-point names), rank is this process's rank in the
 * local group, kc is NULL and inter holds the rest.  inter is NULL for an
 * intracommunicator. */
typedef struct kn_mpi_topo kn_mpi_topo_t; /* a process topology (topo.c) */

typedef struct kn_mpi_comm {
    MPI_Comm handle;
    uint32_t ctx_id;
    int rank, size;
    int *ranks;          /* [size] comm rank -> job rank */
    int *job2comm;       /* [job size] job rank -> comm rank or -1 */
    knit_comm_t *kc;     /* for collectives (NULL until knit_comm_create exists) */
    MPI_Errhandler errh;
    int refs;            /* the handle + pending requests */
    int freed;           /* MPI_Comm_free called: handle gone */
    kn_mpi_attr_t *attrs;
    MPI_Info info;
    void *coll;          /* private slot of the collectives layer */
    kn_mpi_inter_t *inter; /* intercommunicators only */
    kn_mpi_topo_t *topo; /* its process topology, NULL if none */
    char name[MPI_MAX_OBJECT_NAME];
} kn_mpi_comm_t;

/* A layout description: a tree of nodes (dtype_int.h), O(nesting depth)
 * for the regular constructors whatever their counts. */
struct kn_dl;

typedef struct kn_mpi_type {
    MPI_Datatype handle;
    int predefined;
    int committed;
    int refs, urefs;      /* all references; the user's handles */
    size_t size;          /* bytes of data in one element */
    MPI_Aint lb, extent, true_lb, true_ub;
    size_t align;         /* for struct extents (C struct padding) */
    int contig;           /* count elements are size*count bytes from buf + true_lb */
    int onerun;           /* one element is one run of size bytes at true_lb */
    struct kn_dl *dl;     /* the layout of one element (a reference) */
    size_t nelem;         /* basic elements per element */
    int prim;             /* predefined type index every element is made of, or 0 */
    int kdt;              /* knit_dtype_t of prim, or -1 */
    /* constructor (MPI_Type_get_envelope / get_contents) */
    int combiner, ni, na, nt;
    int *ints;
    MPI_Aint *aints;
    MPI_Datatype *types;
    kn_mpi_attr_t *attrs;
    char name[MPI_MAX_OBJECT_NAME];
} kn_mpi_type_t;

/* A request of the MPI layer. */
enum { KN_RQ_SEND = 1, KN_RQ_RECV, KN_RQ_DONE, KN_RQ_COLL, KN_RQ_RMA, KN_RQ_NBR };
typedef struct kn_mpi_coll kn_mpi_coll_t; /* a nonblocking collective (coll.c) */
typedef struct kn_mpi_nbr kn_mpi_nbr_t;   /* a nonblocking neighbourhood collective (topo.c) */
enum { KN_MODE_STD = 0, KN_MODE_SYNC, KN_MODE_READY, KN_MODE_BUF };
typedef struct kn_mpi_req {
    MPI_Request handle;
    int kind;
    int persistent, active;
    int mode;
    knit_request_t *kr;   /* the engine's request while one is in flight */
    kn_mpi_comm_t *comm;
    kn_mpi_type_t *type;
    void *buf;
    int count, peer, tag; /* peer: comm rank or MPI_PROC_NULL / ANY_SOURCE */
    void *tmp;            /* packed copy (non-contiguous layouts) */
    MPI_Status done_st;   /* KN_RQ_DONE: the status to report */
    int freeing;          /* MPI_Request_free on an active request */
    int cancel_failed;
    struct kn_mpi_req *next_detached;
    kn_mpi_coll_t *coll;  /* KN_RQ_COLL: the collective in flight (kr is NULL) */
    struct kn_mpi_rop *rma; /* KN_RQ_RMA: MPI_Rput & co's operation (win_ops.c) */
    kn_mpi_nbr_t *nbr;    /* KN_RQ_NBR: the neighbourhood collective in flight (kr is NULL) */
} kn_mpi_req_t;

typedef struct kn_mpi_errh {
    int kind;             /* 0 fatal, 1 return, 2 abort, 3 user */
    MPI_Comm_errhandler_function *fn;
    int refs;
} kn_mpi_errh_t;

typedef struct kn_mpi_keyval {
    int kind;             /* KN_K_COMM, KN_K_TYPE, KN_K_WIN */
    void *copy_fn, *delete_fn;
    void *extra;
    int refs;             /* the handle + attributes set with it */
} kn_mpi_keyval_t;

/* ------------------------------------------------------- global state */

typedef struct kn_mpi_state {
    knit_ctx_t *ctx;
    int initialized, finalized;
    int init_failed;          /* MPI_Init failed: knit_abort(NULL) still reaches knitrun */
    int rank, size;
    int thread_level;
    pthread_t main_thread;
    kn_mpi_tbl_t comms, groups, types, reqs, errhs, infos, msgs, keyvals;
    uint32_t ctx_used[KN_MPI_CTX_MAX / 32];
    kn_mpi_req_t *detached;   /* freed while active, buffered sends */
    int self_errh_set;        /* MPI_COMM_SELF's handler was set by the user */
} kn_mpi_state_t;

extern kn_mpi_state_t kn_mpi;

/* --------------------------------------------------------------- errors */

/* Raise error class cls from function fn (its MPI name) on communicator c
 * (NULL: an error tied to no communicator).  Calls the handler: returns
 * cls under MPI_ERRORS_RETURN or a user handler; ends the job under
 * MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT with "fn: class text: detail". */
int kn_mpi_error(kn_mpi_comm_t *c, const char *fn, int cls, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* kn_mpi_error for a failed engine call: the class of st; an error that
 * another process's failure caused (KNIT_ERR_PEER, KNIT_ERR_PEER_FAULT),
 * under a fatal handler, lets that process's own report end the job first
 * (knit_abort_secondary). */
int kn_mpi_error_st(kn_mpi_comm_t *c, const char *fn, knit_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with class cls, for an error that engine status cause led to
 * (MPI_ERR_IN_STATUS of a request that failed with it). */
int kn_mpi_error_cause(kn_mpi_comm_t *c, const char *fn, int cls, knit_status_t cause, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The same through handler errh of the object with handle h (windows). */
int kn_mpi_error_h(MPI_Errhandler errh, int h, const char *fn, int cls, knit_status_t cause, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The MPI class for a knit status. */
int kn_mpi_class_of(knit_status_t st);
const char *kn_mpi_class_text(int cls);

void kn_mpi_errhs_init(void);
void kn_mpi_errh_retain(MPI_Errhandler h);
void kn_mpi_errh_release(MPI_Errhandler h);

/* Every function starts with this: MPI must be initialized and not finalized. */
int kn_mpi_not_ready(const char *fn);
#define KN_MPI_READY() KN_MPI_READY_AS(__func__)
/* The same in a helper of several entry points, named fn. */
#define KN_MPI_READY_AS(fn)                                               \
    do {                                                                  \
        if (__builtin_expect(!kn_mpi.initialized || kn_mpi.finalized, 0)) \
            return kn_mpi_not_ready(fn);                                  \
    } while (0)

/* ---------------------------------------------------------- lookups */

static inline kn_mpi_comm_t *kn_mpi_comm(MPI_Comm h)
{
    kn_mpi_comm_t *c = kn_mpi_tbl_get(&kn_mpi.comms, h);
    return c && !c->freed ? c : NULL;
}
static inline kn_mpi_type_t *kn_mpi_type(MPI_Datatype h)
{
    kn_mpi_type_t *t = kn_mpi_tbl_get(&kn_mpi.types, h);
    return t && t->urefs > 0 ? t : NULL;
}
/* Lookups that raise the error themselves (NULL: error raised, *err set). */
kn_mpi_comm_t *kn_mpi_comm_arg_error(MPI_Comm h, const char *fn, int *err); /* raises, NULL */
static inline kn_mpi_comm_t *kn_mpi_comm_arg(MPI_Comm h, const char *fn, int *err)
{
    kn_mpi_comm_t *c = kn_mpi_comm(h);
    return __builtin_expect(c != NULL, 1) ? c : kn_mpi_comm_arg_error(h, fn, err);
}
/* In an MPI entry point: declare var, the communicator behind handle h,
 * or return the error kn_mpi_comm_arg raised. */
#define KN_MPI_COMM_ARG(var, h)                                  \
    kn_mpi_comm_t *var;                                          \
    do {                                                         \
        int e_;                                                  \
        if (!(var = kn_mpi_comm_arg((h), __func__, &e_)))        \
            return e_;                                           \
    } while (0)
/* A datatype usable for communication: valid and committed. */
kn_mpi_type_t *kn_mpi_type_arg_error(kn_mpi_comm_t *c, MPI_Datatype h, const char *fn, int *err);
static inline kn_mpi_type_t *kn_mpi_type_arg(kn_mpi_comm_t *c, MPI_Datatype h, const char *fn, int *err)
{
    kn_mpi_type_t *t = kn_mpi_type(h);
    return __builtin_expect(t && t->committed, 1) ? t : kn_mpi_type_arg_error(c, h, fn, err);
}
/* A datatype for messages: its name, or its handle and how it was made. */
const char *kn_mpi_type_label(const kn_mpi_type_t *t, char *buf, size_t len);

/* ------------------------------------------------------------ datatypes */

void kn_mpi_types_init(void);
void kn_mpi_types_fini(void);
/* References from requests and other objects; predefined types have none. */
void kn_mpi_type_destroy(kn_mpi_type_t *t); /* the last reference went */
static inline void kn_mpi_type_ref(kn_mpi_type_t *t)
{
    if (t && !t->predefined)
        t->refs++;
}
static inline void kn_mpi_type_unref(kn_mpi_type_t *t)
{
    if (t && !t->predefined && --t->refs == 0)
        kn_mpi_type_destroy(t);
}
/* Pack count elements at buf into out (size*count bytes). */
void kn_mpi_pack(const kn_mpi_type_t *t, const void *buf, size_t count, void *out);
/* Unpack the first nbytes of in (at most size*count) into count elements at buf. */
void kn_mpi_unpack(const kn_mpi_type_t *t, const void *in, size_t nbytes, void *buf, size_t count);
/* The layout of count elements at buf, block by block in typemap order
 * (one-sided operations walk both sides with it): kn_mpi_tcur_next gives
 * the next contiguous block's address and length, 0 at the end.  Blocks
 * may touch; nothing is merged beyond what the type's construction merged.
 * The cursor walks the type's description with a stack of one frame per
 * level (no allocation, O(depth) memory). */
#define KN_MPI_TCUR_DEPTH 64
typedef struct kn_mpi_tcur {
    const kn_mpi_type_t *t;
    const char *elem;     /* the current element */
    size_t k, count;      /* element index, elements */
    int sp;               /* frames in use */
    struct {
        const struct kn_dl *n;
        const char *base;
        size_t i, j;      /* block, copy within the block */
    } st[KN_MPI_TCUR_DEPTH];
} kn_mpi_tcur_t;
void kn_mpi_tcur_init(kn_mpi_tcur_t *c, const kn_mpi_type_t *t, const void *buf, size_t count);
size_t kn_mpi_tcur_next(kn_mpi_tcur_t *c, char **addr);
/* Whether count elements of t are one regular strided layout: *first the
 * first block's byte offset from buf; cnt[0] bytes per block, cnt[1..*levels]
 * repetitions at stride[0..*levels-1] bytes (knit_put_strided's form, at
 * most 2 levels).  0: not that regular (walk it with the cursor). */
int kn_mpi_type_strided(const kn_mpi_type_t *t, size_t count, MPI_Aint *first, int64_t cnt[3],
                        int64_t stride[2], int *levels);
/* Basic elements in the first nbytes of the layout; -1 if nbytes ends
 * inside an element. */
MPI_Count kn_mpi_type_elements(const kn_mpi_type_t *t, size_t nbytes);
/* Bytes of the layout that hold its first count basic elements (for
 * MPI_Status_set_elements). */
MPI_Count kn_mpi_type_elem_bytes(const kn_mpi_type_t *t, MPI_Count count);
/* Whether count elements of t are one run of bytes at buf + true_lb (sent,
 * received, moved by collectives in place, without packing). */
static inline int kn_mpi_type_dense(const kn_mpi_type_t *t, size_t count)
{
    return t->contig || (count <= 1 && t->onerun);
}
/* The buffer argument check shared by every call: NULL with data is an
 * error unless the layout is absolute (MPI_BOTTOM). */
static inline int kn_mpi_bad_buffer(const void *buf, int count, const kn_mpi_type_t *t)
{
    return !buf && count > 0 && t->size > 0 && t->true_lb == 0;
}

/* -------------------------------------------------------- communicators */

void kn_mpi_comm_destroy(kn_mpi_comm_t *c); /* the last reference went */
static inline void kn_mpi_comm_ref(kn_mpi_comm_t *c)
{
    c->refs++;
}
static inline void kn_mpi_comm_unref(kn_mpi_comm_t *c)
{
    if (--c->refs == 0)
        kn_mpi_comm_destroy(c);
}
/* Build the predefined communicators and groups. */
int kn_mpi_comms_init(void);
void kn_mpi_comms_fini(void);
const char *kn_mpi_comm_label(const kn_mpi_comm_t *c); /* its name, for messages */
/* A new intracommunicator over job ranks[0..n) with context id ctx (marked
 * used), a native communicator and error handler errh. */
int kn_mpi_comm_make(const int *ranks, int n, uint32_t ctx, MPI_Errhandler errh, kn_mpi_comm_t **out);
/* A new group of job ranks[0..n) (MPI_GROUP_EMPTY if n is 0). */
int kn_mpi_group_make(const int *ranks, int n, MPI_Group *out);

/* The internal exchanges of comm.c (point-to-point on one context and tag
 * among a set of processes), for inter.c's creation protocols. */
typedef struct kn_mpi_xset {
    uint32_t ctx;
    int tag;
    int n, me;
    const int *ranks; /* job ranks */
} kn_mpi_xset_t;
kn_mpi_xset_t kn_mpi_xset_of(const kn_mpi_comm_t *c); /* an intracommunicator's members */
int kn_mpi_xbcast(const kn_mpi_xset_t *x, void *buf, size_t len); /* from member 0 */
int kn_mpi_xallreduce_and(const kn_mpi_xset_t *x, uint32_t *v, int n);
int kn_mpi_xallgather(const kn_mpi_xset_t *x, const void *mine, size_t len, void *all);

/* ---------------------------------------------------- intercommunicators */

/* inter.c: the parts of comm.c's and coll.c's calls that differ on an
 * intercommunicator c (c->inter != NULL).  Each raises its errors on c. */
void kn_mpi_inter_destroy(kn_mpi_comm_t *c);          /* from kn_mpi_comm_destroy */
kn_mpi_comm_t *kn_mpi_inter_local(kn_mpi_comm_t *c);  /* the local group's intracommunicator */
int kn_mpi_inter_dup(kn_mpi_comm_t *c, MPI_Comm *newcomm, const char *fn);
int kn_mpi_inter_split(kn_mpi_comm_t *c, int color, int key, MPI_Comm *newcomm, const char *fn);
int kn_mpi_inter_create(kn_mpi_comm_t *c, const int *granks, int gn, MPI_Comm *newcomm, const char *fn);
int kn_mpi_inter_compare(kn_mpi_comm_t *a, kn_mpi_comm_t *b, int *result);
/* collectives (blocking; MPI-3.1 5.2.2): kind names the call */
enum {
    KN_IC_GATHER, KN_IC_SCATTER, KN_IC_ALLGATHER, KN_IC_ALLTOALL, KN_IC_GATHERV, KN_IC_SCATTERV,
    KN_IC_ALLGATHERV, KN_IC_REDUCE, KN_IC_ALLREDUCE, KN_IC_RS_BLOCK, KN_IC_RS,
};
/* nb: NULL for a blocking call; else a nonblocking one, whose schedule
 * of point-to-point requests (all posted) is left in *nb for coll.c to
 * hang on the request: kn_mpi_inter_test says whether it is done,
 * kn_mpi_inter_finish waits for it, ends it (folds a reduction) and frees
 * it, returning its MPI class (not raised). */
typedef struct kn_mpi_isched kn_mpi_isched_t;
int kn_mpi_inter_test(kn_mpi_isched_t *is);
int kn_mpi_inter_finish(kn_mpi_isched_t *is);
int kn_mpi_inter_barrier(kn_mpi_comm_t *c, kn_mpi_isched_t **nb, const char *fn);
int kn_mpi_inter_bcast(kn_mpi_comm_t *c, void *buf, int count, MPI_Datatype dt, int root, kn_mpi_isched_t **nb,
                       const char *fn);
/* gather, scatter, allgather, alltoall and the v forms (scs/sdispls: the
 * send side's per-rank counts of scatterv, rcs/rdispls the receive side's
 * of gatherv and allgatherv) */
int kn_mpi_inter_blocks(kn_mpi_comm_t *c, int kind, const void *sb, const int *scs, const int *sdispls, int sc,
                        MPI_Datatype sdt, void *rb, const int *rcs, const int *rdispls, int rc, MPI_Datatype rdt,
                        int root, kn_mpi_isched_t **nb, const char *fn);
/* alltoallv (w = 0: one type a side, displacements in extents) and w */
int kn_mpi_inter_alltoallvw(kn_mpi_comm_t *c, const void *sb, const int *scs, const int *sds,
                            const MPI_Datatype *sdts, void *rb, const int *rcs, const int *rds,
                            const MPI_Datatype *rdts, int w, kn_mpi_isched_t **nb, const char *fn);
int kn_mpi_inter_reduction(kn_mpi_comm_t *c, int kind, const void *sb, void *rb, int count, const int *rcs,
                           MPI_Datatype dt, MPI_Op op, int root, kn_mpi_isched_t **nb, const char *fn);
/* coll.c: an op handle that stays valid for a reduction finished later
 * (the op itself if predefined, else a private copy that outlives the
 * program's MPI_Op_free), and its release. */
int kn_mpi_op_hold(MPI_Op op, MPI_Op *out);
void kn_mpi_op_drop(MPI_Op op);
/* MPI_Comm_split on c, errors raised as fn's (the topologies' constructors). */
int kn_mpi_comm_split(kn_mpi_comm_t *c, int color, int key, MPI_Comm *newcomm, const char *fn);

/* ------------------------------------------------------------ topologies */

/* A copy of t for a duplicate of its communicator (MPI_Comm_dup, and so
 * MPI_Comm_idup and dup_with_info); its neighbourhood collectives count
 * from 0 again.  NULL: no memory. */
kn_mpi_topo_t *kn_mpi_topo_dup(const kn_mpi_topo_t *t);
void kn_mpi_topo_free(kn_mpi_topo_t *t); /* NULL is fine */

/* ------------------------------------------------------------ attributes */

/* Copy (dup) or delete the attributes of an object through the keyvals'
 * callbacks.  kind: KN_K_COMM or KN_K_TYPE; h the object's handle. */
int kn_mpi_attrs_copy(int kind, int h, kn_mpi_attr_t *from, kn_mpi_attr_t **to);
int kn_mpi_attrs_delete(int kind, int h, kn_mpi_attr_t **list);

/* ------------------------------------------------------------- requests */

void kn_mpi_reqs_poll_detached(int wait);
/* A request of the given kind on c (t may be NULL), and its release. */
kn_mpi_req_t *kn_mpi_req_new(kn_mpi_comm_t *c, kn_mpi_type_t *t, int kind);
void kn_mpi_req_release(kn_mpi_req_t *r);
/* Nonblocking collectives (coll.c): whether r's collective finished
 * (progresses once if not); wait for it and finish it (unpack, free its
 * state, r->coll = NULL, r->done_st set), returning its MPI class (not
 * raised). */
int kn_mpi_coll_test(kn_mpi_req_t *r);
int kn_mpi_coll_finish(kn_mpi_req_t *r);
/* A request whose operation is another layer's: a nonblocking collective,
 * a neighbourhood collective, a one-sided operation. */
#define KN_RQ_EXT(r) ((r)->coll || (r)->nbr || (r)->rma)
/* Point-to-point's internals that completion (wait.c) shares with posting
 * (p2p.c): statuses, the class of an engine result, a request handle's
 * request (NULL: error raised, *err), the end of a request (status filled,
 * freed or made inactive, *handle updated; the class), and completing one
 * with its error raised from fn. */
/* The first request that failed on a buffer since the last raise: noted
 * when it finishes (its buffer is known then), said by the call that
 * raises its error. */
typedef struct kn_mpi_fault {
    knit_status_t st;
    char text[256];
} kn_mpi_fault_t;
extern kn_mpi_fault_t kn_mpi_last_fault;
void kn_mpi_status_empty(MPI_Status *st);
void kn_mpi_status_from(MPI_Status *st, const kn_mpi_comm_t *c, const knit_msg_status_t *ks);
/* the MPI result of a finished engine operation (a cancelled one succeeded) */
static inline int kn_mpi_result_class(knit_status_t r)
{
    return r == KNIT_OK || r == KNIT_ERR_CANCELED ? MPI_SUCCESS : kn_mpi_class_of(r);
}
kn_mpi_req_t *kn_mpi_req_arg(MPI_Request h, const char *fn, int *err);
int kn_mpi_req_finish(kn_mpi_req_t *r, const knit_msg_status_t *ks, knit_status_t res, MPI_Status *st,
                      MPI_Request *handle);
int kn_mpi_complete_raise(kn_mpi_req_t *r, MPI_Request *handle, MPI_Status *status, const char *fn);
/* The same for the request forms of one-sided operations (win_ops.c). */
int kn_mpi_rma_test(kn_mpi_req_t *r);
int kn_mpi_rma_finish(kn_mpi_req_t *r);
/* windows' handles, predefined attributes and attribute lists (win.c) */
void kn_mpi_wins_fini(void);
int kn_mpi_win_predef_attr(MPI_Win win, int keyval, void *val, int *flag);
kn_mpi_attr_t **kn_mpi_win_attrs(MPI_Win win);
/* The same for the neighbourhood collectives (topo.c, r->nbr). */
int kn_mpi_nbr_test(kn_mpi_req_t *r);
int kn_mpi_nbr_finish(kn_mpi_req_t *r);
/* user ops (coll.c), at MPI_Finalize */
void kn_mpi_ops_fini(void);
void kn_mpi_reqs_fini(void);
void kn_mpi_bsend_fini(void);

/* --------------------------------------------------------------- info */
void kn_mpi_infos_init(void);
void kn_mpi_infos_fini(void);

#endif
