/*
 * What the ranks (src/rma) and the agents' built-in `rma` module
 * (modules/builtin/rma.c) say to each other, and the walk of a strided
 * descriptor both of them make.  Header only: the module includes it
 * with <knit/module.h> and nothing else of knit.
 *
 * A request (rank -> its agent) is a kn_rma_mreq_t, then for the LIST
 * form `nseg` kn_rma_seg_t (origin address, target address, bytes).  The
 * agent moves the data in chunks of at most KN_RMA_MOD_CHUNK bytes,
 * KN_RMA_MOD_WINDOW of them in flight, each a message to the target's
 * agent naming the target's pieces of it (kn_rma_piece_t), and completes
 * the request once the target's agent acknowledged every chunk.
 */
#ifndef KN_RMA_RMA_MOD_H
#define KN_RMA_RMA_MOD_H

#include <stdint.h>
#include <string.h>

#include "knit.h"
#include "knit/rma.h"
#include "coll/coll_mod.h"

#define KN_RMA_MOD_VERSION 3
#define KN_RMA_MOD_LEVELS 7
#define KN_RMA_MOD_CHUNK (256u << 10)  /* data bytes of one chunk message */
#define KN_RMA_MOD_WINDOW 4u           /* chunks in flight per request */
#define KN_RMA_MOD_MAX_PIECES 8192u    /* target pieces in one chunk message */
#define KN_RMA_MOD_SCALE 32u           /* bytes of a scale (long double complex) */

/* FENCE: completes once every operation of the rank that completed early
 * (KN_RMA_MF_LOCAL) is complete at its target; its status is the first
 * error of those.  GACC: an accumulate that also brings the target's data
 * from before it back to the origin, contiguous at `resaddr` (MPI's
 * get-accumulate); the target's agent reads, combines and answers with
 * what it read in one step per chunk. */
enum kn_rma_kind { KN_RMA_K_PUT = 1, KN_RMA_K_GET, KN_RMA_K_ACC, KN_RMA_K_RMW, KN_RMA_K_FENCE, KN_RMA_K_GACC,
                   KN_RMA_K_MAX };

/* a put or accumulate completes once its data is read from the rank (its
 * buffer free again), not once it is at the target: a FENCE follows */
#define KN_RMA_MF_LOCAL 0x1u
enum kn_rma_form { KN_RMA_F_STRIDED = 1, KN_RMA_F_LIST };

/* A strided descriptor (ARMCI's): count[0] bytes per block, count[1..levels]
 * repetitions; stride[i] between repetitions of level i+1. */
typedef struct kn_rma_desc {
    uint32_t levels, reserved;
    int64_t count[KN_RMA_MOD_LEVELS + 1];
    int64_t stride[KN_RMA_MOD_LEVELS];
} kn_rma_desc_t;

typedef struct kn_rma_seg {
    uint64_t laddr, raddr, len;
} kn_rma_seg_t;

/* The request a rank gives its agent. */
typedef struct kn_rma_mreq {
    uint16_t version;
    uint8_t kind, form;
    int32_t target;        /* job rank */
    int32_t target_node;
    uint32_t dtype;        /* ACC, RMW: knit_dtype_t */
    uint32_t op;           /* ACC: knit_op_kind_t; RMW: knit_rma_atomic_op_t */
    uint32_t has_scale;
    uint32_t flags;        /* KN_RMA_MF_* */
    uint32_t reserved;
    uint64_t total;        /* bytes moved */
    uint64_t laddr, raddr; /* STRIDED: the bases; RMW: raddr */
    uint64_t nseg;         /* LIST: segments following */
    kn_rma_desc_t ldesc, rdesc; /* STRIDED: origin side, target side (same counts) */
    uint8_t scale[KN_RMA_MOD_SCALE];
    uint64_t operand, compare; /* RMW */
    uint64_t resaddr;      /* GACC: total bytes at the origin for the target's data before */
    uint64_t lockaddr;     /* ACC, GACC, RMW: the target's accumulate lock, 0: none */
} kn_rma_mreq_t;

/* Agent-to-agent messages. */
enum kn_rma_msg { KN_RMA_M_PUT = 1, KN_RMA_M_GETREQ, KN_RMA_M_ACK, KN_RMA_M_GETDATA, KN_RMA_M_RMW,
                  KN_RMA_M_RMWDONE };

typedef struct kn_rma_piece {
    uint64_t raddr, len;
} kn_rma_piece_t;

/* PUT (and ACC): header, npieces pieces, then the data (sum of lens);
 * GETREQ: header, pieces (no data); GETDATA: header, data; ACK: header;
 * RMW: header with raddr/operand/compare; RMWDONE: header with old. */
typedef struct kn_rma_msg_hdr {
    uint16_t version;
    uint8_t type, kind;
    int32_t status;        /* ACK, GETDATA, RMWDONE */
    uint64_t id;           /* the origin agent's operation */
    uint32_t chunk;        /* chunk number within the operation */
    int32_t target;        /* job rank */
    uint32_t npieces;
    uint32_t dtype, op, has_scale;
    uint64_t bytes;        /* data bytes of the chunk */
    uint64_t raddr, operand, compare, old; /* RMW */
    uint64_t lockaddr;     /* ACC, GACC, RMW: the target's accumulate lock, 0: none */
    uint8_t scale[KN_RMA_MOD_SCALE];
} kn_rma_msg_hdr_t;

/* v[i] *= scale for the types an accumulate takes a scale for (one
 * element of dtype at scale); 0: the type takes none. */
static inline int kn_rma_scale(void *v, uint64_t n, uint32_t dtype, const uint8_t *scale)
{
    switch (dtype) {
#define KN_RMA_SCALE(T)                                                                                \
    {                                                                                                  \
        T s, *p = v;                                                                                   \
        memcpy(&s, scale, sizeof(s));                                                                  \
        for (uint64_t i = 0; i < n; i++)                                                               \
            p[i] = (T)(p[i] * s);                                                                      \
        return 1;                                                                                      \
    }
    case KNIT_INT: case KNIT_INT32: KN_RMA_SCALE(int32_t)
    case KNIT_LONG: case KNIT_INT64: case KNIT_LONG_LONG: KN_RMA_SCALE(int64_t)
    case KNIT_FLOAT: KN_RMA_SCALE(float)
    case KNIT_DOUBLE: KN_RMA_SCALE(double)
    case KNIT_FLOAT_COMPLEX: KN_RMA_SCALE(_Complex float)
    case KNIT_DOUBLE_COMPLEX: KN_RMA_SCALE(_Complex double)
#undef KN_RMA_SCALE
    default: return 0;
    }
}

/* An atomic's new value from the old one (es 1, 2, 4 or 8 bytes: the low
 * bytes, little-endian; two's complement, so signed types too); 0: no
 * such op. */
static inline int kn_rma_rmw(uint32_t op, uint64_t es, uint64_t old, uint64_t operand, uint64_t compare,
                             uint64_t *nv)
{
    if (es < 8) {
        uint64_t mask = (UINT64_C(1) << (8 * es)) - 1;
        old &= mask;
        compare &= mask;
        operand &= mask;
    }
    switch (op) {
    case KNIT_RMA_FETCH_ADD: *nv = old + operand; return 1;
    case KNIT_RMA_SWAP: *nv = operand; return 1;
    case KNIT_RMA_CAS: *nv = old == compare ? operand : old; return 1;
    default: return 0;
    }
}

/* An accumulate's combining of `bytes`: inout = inout op (scale * in), in
 * scaled in place (scale NULL: none); 0: the type or the op does not
 * apply, or not whole elements. */
static inline int kn_rma_combine(void *in, void *inout, uint64_t bytes, uint32_t dtype, uint32_t op,
                                 const uint8_t *scale)
{
    if (op == KNIT_OP_REPLACE) {
        memcpy(inout, in, bytes);
        return 1;
    }
    uint64_t es = kn_coll_mod_esize(dtype);
    if (!es || bytes % es || (scale && !kn_rma_scale(in, bytes / es, dtype, scale)))
        return 0;
    return kn_coll_mod_reduce(in, inout, bytes / es, dtype, op) == 0;
}

/* ------------------------------------------- accumulates in shared memory */
/*
 * Memory in a rank's shared heap is mapped by the rank's node peers and by
 * its agent.  There an accumulate or atomic is done by whoever does it (a
 * rank of the target's node itself, the target's agent for the others)
 * holding the window's accumulate lock of that target: a word in the
 * target's shared heap (kn_rma_peer_t.acclock), which requests carry to
 * the agent (lockaddr).  So they stay atomic with respect to each other,
 * and the combining itself is the plain, vectorized loop.  A holder keeps
 * it for at most KN_RMA_LOCK_SPAN bytes of combining.  Memory outside the
 * heap (or a window without a lock) is changed by the target's agent
 * alone, one request at a time, with no lock.
 */
#define KN_RMA_LOCK_SPAN (64u << 10)

static inline int kn_rma_lock_try(uint64_t *l)
{
    uint64_t z = 0;
    return __atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
           __atomic_compare_exchange_n(l, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void kn_rma_unlock(uint64_t *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* --------------------------------------------------- the descriptor walk */

/* A position in a strided descriptor: the index at every level above the
 * block, and bytes into the current block. */
typedef struct kn_rma_walk {
    const kn_rma_desc_t *d;
    uint64_t base;
    int64_t idx[KN_RMA_MOD_LEVELS + 1];
    uint64_t off;          /* bytes into the current block */
} kn_rma_walk_t;

static inline uint64_t kn_rma_desc_blocks(const kn_rma_desc_t *d)
{
    uint64_t n = 1;
    for (uint32_t i = 1; i <= d->levels; i++)
        n *= (uint64_t)d->count[i];
    return n;
}

/* Start at linear byte pos of the transfer. */
static inline void kn_rma_walk_start(kn_rma_walk_t *w, const kn_rma_desc_t *d, uint64_t base, uint64_t pos)
{
    memset(w, 0, sizeof(*w));
    w->d = d;
    w->base = base;
    uint64_t b = d->count[0] ? pos / (uint64_t)d->count[0] : 0;
    w->off = d->count[0] ? pos % (uint64_t)d->count[0] : 0;
    for (uint32_t i = 1; i <= d->levels && d->count[i]; i++) { /* a count of 0: nothing to walk */
        w->idx[i] = (int64_t)(b % (uint64_t)d->count[i]);
        b /= (uint64_t)d->count[i];
    }
}

/* Address of the current position. */
static inline uint64_t kn_rma_walk_addr(const kn_rma_walk_t *w)
{
    uint64_t a = w->base + w->off;
    for (uint32_t i = 1; i <= w->d->levels; i++)
        a += (uint64_t)w->idx[i] * (uint64_t)w->d->stride[i - 1]; /* wraps, never overflows */
    return a;
}

/* The next contiguous piece of at most max bytes; advances.  Returns its
 * length (0 at the end). */
static inline uint64_t kn_rma_walk_next(kn_rma_walk_t *w, uint64_t max, uint64_t *addr)
{
    const kn_rma_desc_t *d = w->d;
    uint32_t top = d->levels;
    if (top && w->idx[top] >= d->count[top])
        return 0;
    if (!top && w->off >= (uint64_t)d->count[0])
        return 0;
    uint64_t n = (uint64_t)d->count[0] - w->off;
    if (n > max)
        n = max;
    *addr = kn_rma_walk_addr(w);
    w->off += n;
    if (w->off == (uint64_t)d->count[0] && top) {
        w->off = 0;
        for (uint32_t i = 1; i <= top; i++) {
            if (++w->idx[i] < d->count[i] || i == top)
                break;
            w->idx[i] = 0;
        }
    }
    return n;
}

/* One side of a transfer, walked piece by piece: a strided descriptor,
 * or a list of segments (their origin or their target addresses). */
typedef struct kn_rma_cur {
    kn_rma_walk_t w;
    const kn_rma_seg_t *segs;  /* NULL: strided */
    uint64_t nseg, seg, off;
    int remote;
} kn_rma_cur_t;

static inline void kn_rma_cur_strided(kn_rma_cur_t *c, const kn_rma_desc_t *d, uint64_t base)
{
    memset(c, 0, sizeof(*c));
    kn_rma_walk_start(&c->w, d, base, 0);
}

static inline void kn_rma_cur_list(kn_rma_cur_t *c, const kn_rma_seg_t *segs, uint64_t nseg, int remote)
{
    memset(c, 0, sizeof(*c));
    c->segs = segs;
    c->nseg = nseg;
    c->remote = remote;
}

/* The next contiguous piece (at most max bytes), advancing; 0 at the end. */
static inline uint64_t kn_rma_cur_next(kn_rma_cur_t *c, uint64_t max, uint64_t *addr)
{
    if (!c->segs)
        return kn_rma_walk_next(&c->w, max, addr);
    while (c->seg < c->nseg && c->off == c->segs[c->seg].len) {
        c->seg++;
        c->off = 0;
    }
    if (c->seg >= c->nseg)
        return 0;
    const kn_rma_seg_t *s = &c->segs[c->seg];
    uint64_t n = s->len - c->off;
    if (n > max)
        n = max;
    *addr = (c->remote ? s->raddr : s->laddr) + c->off;
    c->off += n;
    return n;
}

/* The next piece both sides have whole, at most max bytes: both advance
 * by it; 0 at the end of either. */
static inline uint64_t kn_rma_cur_pair(kn_rma_cur_t *l, kn_rma_cur_t *r, uint64_t max, uint64_t *la, uint64_t *ra)
{
    kn_rma_cur_t save = *l;
    uint64_t n = kn_rma_cur_next(l, max, la);
    if (!n)
        return 0;
    uint64_t rn = kn_rma_cur_next(r, n, ra);
    if (rn < n) { /* the remote piece is shorter: give the local bytes back */
        *l = save;
        n = rn ? kn_rma_cur_next(l, rn, la) : 0;
    }
    return n;
}

#endif
