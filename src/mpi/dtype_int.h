/*
 * The datatype engine's private interface, shared by the dtype*.c files:
 *   dtype.c        predefined types, handles, lifetime (commit, free, dup,
 *                  resized), argument checks
 *   dtype_make.c   the constructors (contiguous ... darray)
 *   dtype_loop.c   layout descriptions (kn_dl_t) and what walks them: pack,
 *                  unpack, the cursor, the strided form, element counts
 *   dtype_query.c  size/extent/envelope/contents queries, Pack/Unpack and
 *                  the external32 calls
 *
 * A layout is a small tree of kn_dl_t, not a list of blocks: a vector of
 * 2^30 blocks is one node over its element's node, whatever its count.
 * Nodes are reference counted and shared: a type built from another points
 * at the other's tree, so memory is O(nesting depth) for the regular
 * constructors and O(blocks given) for the ones that take arrays.
 */
#ifndef KN_MPI_DTYPE_INT_H
#define KN_MPI_DTYPE_INT_H

#include "mpi/mpi_impl.h"

/* The kinds of layout node.  Every node describes one instance of itself
 * relative to an origin, data bytes in typemap order:
 *   BLOCK  size bytes at disp
 *   VEC    count copies of child at disp + i * stride
 *   BLKS   n byte blocks: lens[i] bytes at disp + disps[i]
 *   IDX    n blocks: blens[i] copies of kid(i) at disp + disps[i] + j * cext(i),
 *          kid(i) = kids ? kids[i] : child, cext(i) = cexts ? cexts[i] : cext */
enum { KN_DL_BLOCK = 1, KN_DL_VEC, KN_DL_BLKS, KN_DL_IDX };

/* Deepest tree the walkers take (MPICH's dataloops stop at 16 levels): a
 * constructor that would go deeper fails with MPI_ERR_TYPE. */
#define KN_DL_MAX_DEPTH KN_MPI_TCUR_DEPTH

struct kn_dl {
    int kind;
    int refs;
    int depth;              /* 1 for a BLOCK or BLKS */
    size_t size;            /* data bytes of one instance */
    MPI_Aint tlb, tub;      /* true bounds of the data (size > 0) */
    MPI_Aint disp;
    size_t count;           /* VEC: copies; BLKS, IDX: blocks */
    MPI_Aint stride;        /* VEC */
    struct kn_dl *child;    /* VEC, IDX (when kids is NULL) */
    MPI_Aint cext;          /* IDX (when cexts is NULL) */
    MPI_Aint *disps;        /* BLKS, IDX */
    size_t *lens;           /* BLKS: bytes; IDX: copies (NULL: blen each) */
    size_t blen;
    struct kn_dl **kids;    /* IDX: one per block, or NULL */
    MPI_Aint *cexts;
};
typedef struct kn_dl kn_dl_t;

/* layout nodes (dtype_loop.c) */
kn_dl_t *kn_dl_empty(void);
kn_dl_t *kn_dl_block(MPI_Aint disp, size_t len);
static inline kn_dl_t *kn_dl_ref(kn_dl_t *n)
{
    n->refs++;
    return n;
}
void kn_dl_unref(kn_dl_t *n);
/* count copies of child at disp + i * stride; simplified (a dense repeat
 * becomes one block, a continued vector one longer vector).  Takes no
 * reference from the caller: child gets one of its own.  NULL: no memory. */
kn_dl_t *kn_dl_vec(MPI_Aint disp, size_t count, MPI_Aint stride, kn_dl_t *child);
/* n blocks of lens[i] copies of kids[i] (kid when kids is NULL) at disps[i],
 * copies cexts[i] (cext) apart; lens NULL: blen copies each.  Copies the
 * arrays; a block of dense copies becomes bytes, neighbours merge. */
kn_dl_t *kn_dl_idx(size_t n, const MPI_Aint *disps, const size_t *lens, size_t blen, kn_dl_t *const *kids,
                   kn_dl_t *kid, const MPI_Aint *cexts, MPI_Aint cext);

/* the predefined types (dtype.c) */
const kn_mpi_type_t *kn_mpi_predef(int idx);
/* The external32 form of a predefined type: its members (1, or 2 for the
 * pair types), each parts values (2 for complex) of nat native bytes and
 * ext external bytes, of a class below. */
enum { KN_X32_UINT, KN_X32_SINT, KN_X32_FLOAT, KN_X32_LDOUBLE };
typedef struct kn_x32 {
    int n;
    struct {
        unsigned char parts, nat, ext, cls;
        unsigned short off; /* native offset in the element */
    } m[2];
} kn_x32_t;
/* 0, or -1: the type has no external32 form here */
int kn_mpi_x32(int idx, kn_x32_t *x);

/* helpers of the type objects (dtype.c) */
kn_mpi_type_t *kn_mpi_type_any(MPI_Datatype h, const char *fn, int *err);
kn_mpi_type_t *kn_mpi_type_alloc(void);
void kn_mpi_type_free_obj(kn_mpi_type_t *t);
int kn_mpi_type_set_contents(kn_mpi_type_t *t, int combiner, int ni, const int *ints, int na,
                             const MPI_Aint *aints, int nt, const MPI_Datatype *types);
int kn_mpi_type_publish(kn_mpi_type_t *t, MPI_Datatype *out, const char *fn);
/* contig and onerun from the layout and the bounds */
void kn_mpi_type_finish(kn_mpi_type_t *t);

#define NEWTYPE_CHECK(newtype)                                                   \
    do {                                                                         \
        if (!(newtype))                                                          \
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "newtype is NULL"); \
    } while (0)

#endif
