/*
 * What the library and the built-in collectives module (modules/builtin/
 * coll.c) share: a rank's request, and the combining (src/coll/op.c,
 * compiled into the module too: the same kernels as the host collectives).
 */
#ifndef KN_COLL_COLL_MOD_H
#define KN_COLL_COLL_MOD_H

#include <stddef.h>
#include <stdint.h>

#define KN_COLL_MOD_VERSION 4u
#define KN_COLL_MOD_MAX_NODES 4096
#define KN_COLL_MOD_MAX_BYTES (1ull << 32) /* one vector; larger ones stay on the hosts */
/* vectors go through agents and switches in segments of this size (a
 * pipeline); up to one segment travels in the request, larger ones stay
 * in the rank's memory, where the agent reads them a segment at a time */
#define KN_COLL_MOD_SEG (64u << 10)
/* results up to this size come back in the completion; larger ones the
 * agent writes into the rank's buffer (a.result) itself */
#define KN_COLL_MOD_INLINE 192u

enum { KN_COLL_MOD_BARRIER = 1, KN_COLL_MOD_BCAST, KN_COLL_MOD_REDUCE, KN_COLL_MOD_ALLREDUCE };

/* A rank's request: this header, the communicator's nodes (mask_len
 * bytes: bit n of byte n / 8 for job node n; none where it spans every
 * node of the job), then its vector when it is at most KN_COLL_MOD_SEG
 * bytes (a broadcast's non-root members send none). */
typedef struct kn_coll_mod_args {
    uint32_t version;      /* KN_COLL_MOD_VERSION */
    uint32_t kind;         /* KN_COLL_MOD_* */
    uint32_t comm;         /* the communicator's context id, and its first */
    int32_t first;         /* member's job rank (disjoint ones share ids) */
    uint32_t dtype, redop; /* knit_dtype_t, knit_op_kind_t */
    uint64_t seq;          /* the communicator's offloaded-collective number */
    uint64_t bytes;        /* the vector's size (0: a barrier) */
    uint64_t src;          /* where its vector is, in its memory */
    uint64_t result;       /* where this rank's result goes, in its memory */
    int32_t nlocal, lrank; /* the communicator's members on this node; this one's index */
    int32_t root_node;     /* bcast, reduce: the root's node (-1: none) */
    int32_t root_lrank;    /* its index on this node (-1: the root is elsewhere) */
    uint32_t flags;        /* KN_COLL_MOD_F_* */
    uint32_t mask_len;     /* 0, or (job nodes + 7) / 8 */
} kn_coll_mod_args_t;

/* Whether node n is in a member mask (mask_len 0: every node is). */
static inline int kn_coll_mod_member(const uint8_t *mask, uint32_t mask_len, int32_t n)
{
    return !mask_len || (n >= 0 && (uint32_t)n / 8 < mask_len && (mask[n / 8] >> (n % 8) & 1));
}

/* the tests' injected fault (KNIT_COLL_OFFLOAD_FAULT): the agent's handler
 * faults on this request, as a module with a bug would */
#define KN_COLL_MOD_F_FAULT 1u

/* op.c: the element size (0: no such type), and inout = in op inout for a
 * predefined op (0, or -1 where the op does not apply to the type) */
size_t kn_coll_mod_esize(uint32_t dtype);
int kn_coll_mod_reduce(const void *in, void *inout, size_t count, uint32_t dtype, uint32_t redop);

#endif
