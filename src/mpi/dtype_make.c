/*
 * The datatype constructors.  Each builds the new type's layout as a few
 * nodes over its old type's (dtype_loop.c) and computes its bounds in
 * closed form, so time and memory do not grow with counts: a vector of
 * 2^30 blocks is made as fast as one of 2.  The constructors that take
 * arrays (indexed, hindexed, struct) keep their arrays: O(blocks given).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/dtype_int.h"

#define COUNT_CHECK(count)                                                                \
    do {                                                                                  \
        if ((count) < 0)                                                                  \
            return kn_mpi_error(NULL, __func__, MPI_ERR_COUNT, "count %d is negative", (count)); \
    } while (0)

static MPI_Aint lo(MPI_Aint a) { return a < 0 ? a : 0; }
static MPI_Aint hi(MPI_Aint a) { return a > 0 ? a : 0; }

/* the bounds [lb, ub) of n >= 1 copies of o at 0, extent, ... */
static void rep_bounds(const kn_mpi_type_t *o, size_t n, MPI_Aint *lb, MPI_Aint *ub)
{
    MPI_Aint span = (MPI_Aint)(n - 1) * o->extent;
    *lb = o->lb + lo(span);
    *ub = o->lb + o->extent + hi(span);
}

/* A type of layout dl (taken; NULL: out of memory) and bounds [lb, ub). */
static kn_mpi_type_t *new_type(kn_dl_t *dl, MPI_Aint lb, MPI_Aint ub)
{
    if (!dl)
        return NULL;
    kn_mpi_type_t *t = kn_mpi_type_alloc();
    if (!t) {
        kn_dl_unref(dl);
        return NULL;
    }
    t->dl = dl;
    t->lb = lb;
    t->extent = ub - lb;
    t->align = 1;
    return t;
}

/* Finish a type made of reps copies of one old type o: element counts,
 * contents, handle. */
static int finish_one(kn_mpi_type_t *t, const kn_mpi_type_t *o, size_t reps, int combiner, int ni,
                      const int *ints, int na, const MPI_Aint *aints, MPI_Datatype oldh, MPI_Datatype *out,
                      const char *fn)
{
    if (!t)
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    t->nelem = reps * o->nelem;
    t->prim = reps && o->size ? o->prim : 0;
    t->kdt = t->prim ? o->kdt : -1;
    t->align = reps ? o->align : 1;
    kn_mpi_type_finish(t);
    if (kn_mpi_type_set_contents(t, combiner, ni, ints, na, aints, 1, &oldh) < 0) {
        kn_mpi_type_free_obj(t);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    return kn_mpi_type_publish(t, out, fn);
}

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    COUNT_CHECK(count);
    NEWTYPE_CHECK(newtype);
    kn_mpi_type_t *t;
    if (count == 0) {
        t = new_type(kn_dl_empty(), 0, 0);
    } else {
        MPI_Aint lb, ub;
        rep_bounds(o, (size_t)count, &lb, &ub);
        t = new_type(kn_dl_vec(0, (size_t)count, o->extent, o->dl), lb, ub);
    }
    return finish_one(t, o, (size_t)count, MPI_COMBINER_CONTIGUOUS, 1, &count, 0, NULL, oldtype, newtype,
                      __func__);
}

/* vector and hvector: count blocks of blocklength at i * stride bytes */
static int vector(int count, int blocklength, MPI_Aint stride_bytes, kn_mpi_type_t *o, int combiner, int ni,
                  const int *ints, int na, const MPI_Aint *aints, MPI_Datatype oldh, MPI_Datatype *out,
                  const char *fn)
{
    if (count < 0 || blocklength < 0)
        return kn_mpi_error(NULL, fn, MPI_ERR_COUNT, "count %d or blocklength %d is negative", count,
                            blocklength);
    if (!out)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "newtype is NULL");
    kn_mpi_type_t *t;
    if (count == 0 || blocklength == 0) {
        t = new_type(kn_dl_empty(), 0, 0);
    } else {
        /* count copies at stride of (blocklength copies at the old extent) */
        kn_dl_t *blk = kn_dl_vec(0, (size_t)blocklength, o->extent, o->dl);
        MPI_Aint lb, ub, span = (MPI_Aint)(count - 1) * stride_bytes;
        rep_bounds(o, (size_t)blocklength, &lb, &ub);
        t = new_type(blk ? kn_dl_vec(0, (size_t)count, stride_bytes, blk) : NULL, lb + lo(span), ub + hi(span));
        kn_dl_unref(blk);
    }
    return finish_one(t, o, (size_t)count * (size_t)blocklength, combiner, ni, ints, na, aints, oldh, out, fn);
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    int ints[3] = {count, blocklength, stride};
    return vector(count, blocklength, (MPI_Aint)stride * o->extent, o, MPI_COMBINER_VECTOR, 3, ints, 0, NULL,
                  oldtype, newtype, __func__);
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                            MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    int ints[2] = {count, blocklength};
    return vector(count, blocklength, stride, o, MPI_COMBINER_HVECTOR, 2, ints, 1, &stride, oldtype, newtype,
                  __func__);
}

int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return MPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype);
}

/* blocks of lens[i] (blen when lens is NULL) copies of o at disps[i] */
static int indexed_make(int count, const MPI_Aint *disps, const size_t *lens, size_t blen, kn_mpi_type_t *o,
                        int combiner, int ni, const int *ints, int na, const MPI_Aint *aints, MPI_Datatype oldh,
                        MPI_Datatype *out, const char *fn)
{
    MPI_Aint lb = 0, ub = 0;
    size_t reps = 0;
    for (int i = 0, any = 0; i < count; i++) {
        size_t n = lens ? lens[i] : blen;
        if (!n)
            continue;
        MPI_Aint l, u;
        rep_bounds(o, n, &l, &u);
        if (!any || disps[i] + l < lb)
            lb = disps[i] + l;
        if (!any || disps[i] + u > ub)
            ub = disps[i] + u;
        any = 1;
        reps += n;
    }
    kn_mpi_type_t *t = new_type(kn_dl_idx((size_t)count, disps, lens, blen, NULL, o->dl, NULL, o->extent), lb, ub);
    return finish_one(t, o, reps, combiner, ni, ints, na, aints, oldh, out, fn);
}

/* the indexed family: blocklens (or one blocklen), displacements in
 * elements (idisp) or bytes (adisp) */
static int indexed(int count, const int *bls, int bl1, const int *idisp, const MPI_Aint *adisp,
                   MPI_Datatype oldtype, MPI_Datatype *newtype, int combiner, const char *fn)
{
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, fn, &err);
    if (!o)
        return err;
    if (count < 0)
        return kn_mpi_error(NULL, fn, MPI_ERR_COUNT, "count %d is negative", count);
    if (!newtype)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "newtype is NULL");
    if (count > 0 && ((!bls && bl1 < 0) || (!idisp && !adisp)))
        return kn_mpi_error(NULL, fn, bl1 < 0 && !bls ? MPI_ERR_ARG : MPI_ERR_ARG, "NULL array or negative blocklength");
    size_t n = (size_t)count;
    MPI_Aint *d = malloc((n + 1) * sizeof(*d));
    size_t *l = malloc((n + 1) * sizeof(*l));
    /* contents: ints = count, [blocklens | blocklen], [idisp]; aints = [adisp] */
    int ni = 1 + (bls ? count : 1) + (idisp ? count : 0);
    int *ints = malloc((size_t)ni * sizeof(int));
    if (!d || !l || !ints) {
        free(d);
        free(l);
        free(ints);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    int k = 0;
    ints[k++] = count;
    if (!bls)
        ints[k++] = bl1;
    err = MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        int b = bls ? bls[i] : bl1;
        if (b < 0) {
            err = kn_mpi_error(NULL, fn, MPI_ERR_ARG, "blocklength %d of block %d is negative", b, i);
            break;
        }
        if (bls)
            ints[k++] = b;
        l[i] = (size_t)b;
        d[i] = idisp ? (MPI_Aint)idisp[i] * o->extent : adisp[i];
    }
    if (idisp)
        for (int i = 0; i < count; i++)
            ints[k++] = idisp[i];
    if (err == MPI_SUCCESS)
        err = indexed_make(count, d, bls ? l : NULL, bls ? 0 : (size_t)bl1, o, combiner, ni, ints,
                           adisp ? count : 0, adisp, oldtype, newtype, fn);
    free(d);
    free(l);
    free(ints);
    return err;
}

int MPI_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                     MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    if (count > 0 && !array_of_blocklengths)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    return indexed(count, array_of_blocklengths, -1, array_of_displacements, NULL, oldtype, newtype,
                   MPI_COMBINER_INDEXED, __func__);
}

int MPI_Type_create_hindexed(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                             MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    if (count > 0 && !array_of_blocklengths)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    return indexed(count, array_of_blocklengths, -1, NULL, array_of_displacements, oldtype, newtype,
                   MPI_COMBINER_HINDEXED, __func__);
}

int MPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                      MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return MPI_Type_create_hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype);
}

int MPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                  MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    if (blocklength < 0)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "blocklength %d is negative", blocklength);
    return indexed(count, NULL, blocklength, array_of_displacements, NULL, oldtype, newtype,
                   MPI_COMBINER_INDEXED_BLOCK, __func__);
}

int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    if (blocklength < 0)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "blocklength %d is negative", blocklength);
    return indexed(count, NULL, blocklength, NULL, array_of_displacements, oldtype, newtype,
                   MPI_COMBINER_HINDEXED_BLOCK, __func__);
}

static int struct_make(int count, const MPI_Aint *disps, const size_t *lens, kn_mpi_type_t **ts, const int *ints,
                       const MPI_Datatype *types, MPI_Datatype *out)
{
    const char *fn = "MPI_Type_create_struct";
    size_t n = (size_t)count;
    kn_dl_t **kids = malloc((n + 1) * sizeof(*kids));
    MPI_Aint *cexts = malloc((n + 1) * sizeof(*cexts));
    if (!kids || !cexts) {
        free(kids);
        free(cexts);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    MPI_Aint lb = 0, ub = 0;
    size_t nelem = 0, align = 1;
    int prim = -1, any = 0;
    for (size_t i = 0; i < n; i++) {
        const kn_mpi_type_t *o = ts[i];
        kids[i] = o->dl;
        cexts[i] = o->extent;
        if (!lens[i])
            continue;
        MPI_Aint l, u;
        rep_bounds(o, lens[i], &l, &u);
        if (!any || disps[i] + l < lb)
            lb = disps[i] + l;
        if (!any || disps[i] + u > ub)
            ub = disps[i] + u;
        any = 1;
        nelem += lens[i] * o->nelem;
        if (o->align > align)
            align = o->align;
        if (o->size)
            prim = prim == -1 ? o->prim : prim == o->prim ? prim : 0;
    }
    /* the extent is padded to the members' alignment, like a C struct's */
    if (align > 1 && (ub - lb) % (MPI_Aint)align)
        ub += (MPI_Aint)align - (ub - lb) % (MPI_Aint)align;
    kn_mpi_type_t *t = new_type(kn_dl_idx(n, disps, lens, 0, kids, NULL, cexts, 0), lb, ub);
    free(kids);
    free(cexts);
    if (!t)
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    t->nelem = nelem;
    t->align = align;
    t->prim = prim > 0 ? prim : 0;
    t->kdt = t->prim ? kn_mpi_predef(t->prim)->kdt : -1;
    kn_mpi_type_finish(t);
    if (kn_mpi_type_set_contents(t, MPI_COMBINER_STRUCT, count + 1, ints, count, disps, count, types) < 0) {
        kn_mpi_type_free_obj(t);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    return kn_mpi_type_publish(t, out, fn);
}

int MPI_Type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                           const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    KN_MPI_READY();
    COUNT_CHECK(count);
    NEWTYPE_CHECK(newtype);
    if (count > 0 && (!array_of_blocklengths || !array_of_displacements || !array_of_types))
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL array");
    size_t n = (size_t)count;
    kn_mpi_type_t **ts = malloc((n + 1) * sizeof(*ts));
    size_t *l = malloc((n + 1) * sizeof(*l));
    int *ints = malloc((n + 1) * sizeof(int));
    int err = MPI_SUCCESS;
    if (!ts || !l || !ints)
        err = kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    for (int i = 0; i < count && err == MPI_SUCCESS; i++) {
        if (array_of_blocklengths[i] < 0) {
            err = kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "blocklength %d of block %d is negative",
                               array_of_blocklengths[i], i);
            break;
        }
        ts[i] = kn_mpi_type(array_of_types[i]);
        if (!ts[i]) {
            err = kn_mpi_error(NULL, __func__, MPI_ERR_TYPE, "array_of_types[%d] is not a valid datatype", i);
            break;
        }
        l[i] = (size_t)array_of_blocklengths[i];
        ints[i + 1] = array_of_blocklengths[i];
    }
    if (err == MPI_SUCCESS) {
        ints[0] = count;
        err = struct_make(count, array_of_displacements, l, ts, ints, array_of_types, newtype);
    }
    free(ts);
    free(l);
    free(ints);
    return err;
}

int MPI_Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                    MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return MPI_Type_create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype);
}

int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[], int order,
                             MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    NEWTYPE_CHECK(newtype);
    if (ndims <= 0 || !sizes || !subsizes || !starts)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "ndims %d or NULL arrays", ndims);
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN",
                            order);
    for (int i = 0; i < ndims; i++)
        if (sizes[i] <= 0 || subsizes[i] <= 0 || subsizes[i] > sizes[i] || starts[i] < 0 ||
            starts[i] > sizes[i] - subsizes[i])
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG,
                                "dimension %d: size %d, subsize %d, start %d do not fit", i, sizes[i],
                                subsizes[i], starts[i]);
    /* innermost (fastest) dimension first: subsizes[i] copies of the
     * inner layout, stride apart, then the whole shifted to the start */
    kn_dl_t *cur = kn_dl_ref(o->dl);
    MPI_Aint stride = o->extent, offset = 0;
    size_t reps = 1;
    int overflow = 0;
    for (int k = 0; k < ndims; k++) {
        int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
        kn_dl_t *next = cur ? kn_dl_vec(0, (size_t)subsizes[i], stride, cur) : NULL;
        kn_dl_unref(cur);
        cur = next;
        offset += (MPI_Aint)starts[i] * stride;
        overflow |= __builtin_mul_overflow(stride, (MPI_Aint)sizes[i], &stride);
        reps *= (size_t)subsizes[i];
    }
    if (overflow) {
        kn_dl_unref(cur);
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "the array's extent does not fit an address");
    }
    kn_dl_t *dl = cur ? kn_dl_vec(offset, 1, 0, cur) : NULL;
    kn_dl_unref(cur);
    kn_mpi_type_t *t = new_type(dl, 0, stride);
    int *ints = malloc((3 * (size_t)ndims + 2) * sizeof(int));
    if (!t || !ints) {
        free(ints);
        if (t)
            kn_mpi_type_free_obj(t);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    ints[0] = ndims;
    for (int i = 0; i < ndims; i++) {
        ints[1 + i] = sizes[i];
        ints[1 + ndims + i] = subsizes[i];
        ints[1 + 2 * ndims + i] = starts[i];
    }
    ints[1 + 3 * ndims] = order;
    err = finish_one(t, o, reps, MPI_COMBINER_SUBARRAY, 3 * ndims + 2, ints, 0, NULL, oldtype, newtype,
                     __func__);
    free(ints);
    return err;
}

/* One dimension of a distributed array: the indexes of g that process
 * coordinate c of p owns, in increasing order, each a copy of the inner
 * layout at index * e bytes.  *n: how many. */
static kn_dl_t *darray_dim(int dist, int darg, int g, int p, int c, MPI_Aint e, kn_dl_t *inner, size_t *n)
{
    if (dist == MPI_DISTRIBUTE_NONE) {
        *n = (size_t)g;
        return kn_dl_vec(0, (size_t)g, e, inner);
    }
    if (dist == MPI_DISTRIBUTE_BLOCK) {
        long long b = darg == MPI_DISTRIBUTE_DFLT_DARG ? ((long long)g + p - 1) / p : darg;
        long long start = (long long)c * b;
        long long k = start >= g ? 0 : (g - start < b ? g - start : b);
        *n = (size_t)k;
        return kn_dl_vec((MPI_Aint)start * e, (size_t)k, e, inner);
    }
    /* cyclic(b): blocks of b at c*b, c*b + p*b, ...; the last may be short */
    long long b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    long long start = (long long)c * b, local = 0;
    if (start < g) {
        long long span = g - start, cyc = (long long)p * b;
        local = span / cyc * b + (span % cyc < b ? span % cyc : b);
    }
    *n = (size_t)local;
    long long full = local / b, tail = local % b;
    kn_dl_t *blk = kn_dl_vec(0, (size_t)b, e, inner);
    kn_dl_t *k1 = blk ? kn_dl_vec((MPI_Aint)start * e, (size_t)full, (MPI_Aint)(p * b) * e, blk) : NULL;
    kn_dl_unref(blk);
    if (!tail || !k1)
        return k1;
    kn_dl_t *k2 = kn_dl_vec((MPI_Aint)(start + full * p * b) * e, (size_t)tail, e, inner);
    kn_dl_t *kids[2] = {k1, k2};
    MPI_Aint disps[2] = {0, 0};
    kn_dl_t *r = k2 ? kn_dl_idx(2, disps, NULL, 1, kids, NULL, NULL, 0) : NULL;
    kn_dl_unref(k1);
    kn_dl_unref(k2);
    return r;
}

int MPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                           const int array_of_distribs[], const int array_of_dargs[], const int array_of_psizes[],
                           int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    NEWTYPE_CHECK(newtype);
    if (size <= 0 || rank < 0 || rank >= size)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "rank %d of size %d", rank, size);
    if (ndims <= 0 || !array_of_gsizes || !array_of_distribs || !array_of_dargs || !array_of_psizes)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "ndims %d or NULL arrays", ndims);
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN",
                            order);
    long long procs = 1;
    for (int i = 0; i < ndims; i++) {
        int g = array_of_gsizes[i], d = array_of_distribs[i], a = array_of_dargs[i], p = array_of_psizes[i];
        if (g <= 0 || p <= 0)
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "dimension %d: gsize %d, psize %d", i, g, p);
        if (d != MPI_DISTRIBUTE_BLOCK && d != MPI_DISTRIBUTE_CYCLIC && d != MPI_DISTRIBUTE_NONE)
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "dimension %d: unknown distribution %d", i, d);
        if (a != MPI_DISTRIBUTE_DFLT_DARG && (a <= 0 || d == MPI_DISTRIBUTE_NONE))
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "dimension %d: darg %d", i, a);
        if (d == MPI_DISTRIBUTE_NONE && p != 1)
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG,
                                "dimension %d: MPI_DISTRIBUTE_NONE over %d processes (must be 1)", i, p);
        if (d == MPI_DISTRIBUTE_BLOCK && a != MPI_DISTRIBUTE_DFLT_DARG && (long long)a * p < g)
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG,
                                "dimension %d: blocks of %d over %d processes do not cover %d", i, a, p, g);
        procs *= p;
        if (procs > size)
            break;
    }
    if (procs != size)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "the process grid does not have %d processes", size);
    int *ints = malloc((4 * (size_t)ndims + 4) * sizeof(int));
    int *coords = malloc((size_t)ndims * sizeof(int));
    if (!ints || !coords) {
        free(ints);
        free(coords);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    /* the process grid is row-major whatever the array's order */
    for (int i = ndims - 1, r = rank; i >= 0; i--) {
        coords[i] = r % array_of_psizes[i];
        r /= array_of_psizes[i];
    }
    kn_dl_t *cur = kn_dl_ref(o->dl);
    MPI_Aint e = o->extent;
    size_t reps = 1;
    int overflow = 0;
    for (int k = 0; k < ndims && cur; k++) {
        int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
        size_t n;
        kn_dl_t *next = darray_dim(array_of_distribs[i], array_of_dargs[i], array_of_gsizes[i],
                                   array_of_psizes[i], coords[i], e, cur, &n);
        kn_dl_unref(cur);
        cur = next;
        reps *= n;
        overflow |= __builtin_mul_overflow(e, (MPI_Aint)array_of_gsizes[i], &e);
    }
    free(coords);
    if (overflow) {
        kn_dl_unref(cur);
        free(ints);
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "the array's extent does not fit an address");
    }
    kn_mpi_type_t *t = new_type(cur, 0, e);
    ints[0] = size;
    ints[1] = rank;
    ints[2] = ndims;
    for (int i = 0; i < ndims; i++) {
        ints[3 + i] = array_of_gsizes[i];
        ints[3 + ndims + i] = array_of_distribs[i];
        ints[3 + 2 * ndims + i] = array_of_dargs[i];
        ints[3 + 3 * ndims + i] = array_of_psizes[i];
    }
    ints[3 + 4 * ndims] = order;
    err = finish_one(t, o, reps, MPI_COMBINER_DARRAY, 4 * ndims + 4, ints, 0, NULL, oldtype, newtype, __func__);
    free(ints);
    return err;
}
