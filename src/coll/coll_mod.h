/*
 * What the library and the built-in collectives module (modules/coll.c)
 * share: a rank's request, and the combining (src/coll/op.c, compiled
 * into the module too: the same kernels as the host collectives).
 */
#ifndef KN_COLL_COLL_MOD_H
#define KN_COLL_COLL_MOD_H

#include <stddef.h>
#include <stdint.h>

#define KN_COLL_MOD_VERSION 1u
#define KN_COLL_MOD_MAX_NODES 4096
#define KN_COLL_MOD_MAX_BYTES (1u << 20) /* one vector; larger ones stay on the hosts */

/* A rank's request: this header, then its vector (bytes). */
typedef struct kn_coll_mod_args {
    uint32_t version;      /* KN_COLL_MOD_VERSION */
    uint32_t comm;         /* the communicator's context id, and its first */
    int32_t first;         /* member's job rank (disjoint ones share ids) */
    uint32_t dtype, redop; /* knit_dtype_t, knit_op_kind_t */
    uint64_t seq;          /* the communicator's offloaded-collective number */
    uint64_t bytes;        /* 0: a barrier */
    int32_t nlocal, lrank; /* the communicator's members on this node; this one's index */
    int32_t nnodes, nidx;  /* nodes with members; this node's index among them */
    uint32_t flags;        /* KN_COLL_MOD_F_* */
} kn_coll_mod_args_t;

/* the tests' injected fault (KNIT_COLL_OFFLOAD_FAULT): the agent's handler
 * faults on this request, as a module with a bug would */
#define KN_COLL_MOD_F_FAULT 1u

/* op.c: the element size (0: no such type), and inout = in op inout for a
 * predefined op (0, or -1 where the op does not apply to the type) */
size_t kn_coll_mod_esize(uint32_t dtype);
int kn_coll_mod_reduce(const void *in, void *inout, size_t count, uint32_t dtype, uint32_t redop);

#endif
