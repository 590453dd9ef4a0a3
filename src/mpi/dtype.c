/*
 * Datatypes and the datatype engine.
 *
 * Every datatype is flattened when it is constructed into a list of
 * segments in typemap order, each a strided run of equal blocks
 * (disp, blen, count, stride); neighbours merge, so a vector of a
 * contiguous type is one segment and a contiguous layout is one block.
 * Packing walks the segments with a copy loop specialized on the block
 * length (1, 2, 4, 8, 16 bytes: plain moves; else memcpy per block), so the
 * common vector case costs no function call per element.  A layout that is
 * one block (count elements included) is sent and received in place: no
 * copy at all.
 *
 * A second list, the element runs (bytes, element size) in typemap order,
 * answers MPI_Get_elements for partial receives.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <complex.h>
#include <stdbool.h>
#include <wchar.h>

#include "mpi/mpi_impl.h"

/* --------------------------------------------------------- predefined */

struct pair_fi { float v; int i; };
struct pair_di { double v; int i; };
struct pair_li { long v; int i; };
struct pair_si { short v; int i; };
struct pair_ldi { long double v; int i; };

typedef struct predef {
    const char *name;
    size_t size;           /* value part (pairs: first member) */
    size_t extent;
    size_t off2, size2;    /* pairs: the int part */
    int kdt;
    int tclass;            /* for MPI_Type_match_size: 1 real 2 integer 3 complex */
} predef_t;

#define P(n, T, k, c) [n] = {#n, sizeof(T), sizeof(T), 0, 0, k, c}
#define PAIR(n, S, T, k) [n] = {#n, sizeof(T), sizeof(S), offsetof(S, i), sizeof(int), k, 0}
#define IDX(h) ((h) & 0xffffff)
enum {
    I_CHAR = IDX(MPI_CHAR), I_SIGNED_CHAR = IDX(MPI_SIGNED_CHAR), I_UNSIGNED_CHAR = IDX(MPI_UNSIGNED_CHAR),
    I_BYTE = IDX(MPI_BYTE), I_SHORT = IDX(MPI_SHORT), I_UNSIGNED_SHORT = IDX(MPI_UNSIGNED_SHORT),
    I_INT = IDX(MPI_INT), I_UNSIGNED = IDX(MPI_UNSIGNED), I_LONG = IDX(MPI_LONG),
    I_UNSIGNED_LONG = IDX(MPI_UNSIGNED_LONG), I_LONG_LONG = IDX(MPI_LONG_LONG_INT),
    I_ULL = IDX(MPI_UNSIGNED_LONG_LONG), I_FLOAT = IDX(MPI_FLOAT), I_DOUBLE = IDX(MPI_DOUBLE),
    I_LONG_DOUBLE = IDX(MPI_LONG_DOUBLE), I_WCHAR = IDX(MPI_WCHAR), I_C_BOOL = IDX(MPI_C_BOOL),
    I_INT8 = IDX(MPI_INT8_T), I_INT16 = IDX(MPI_INT16_T), I_INT32 = IDX(MPI_INT32_T),
    I_INT64 = IDX(MPI_INT64_T), I_UINT8 = IDX(MPI_UINT8_T), I_UINT16 = IDX(MPI_UINT16_T),
    I_UINT32 = IDX(MPI_UINT32_T), I_UINT64 = IDX(MPI_UINT64_T), I_FC = IDX(MPI_C_FLOAT_COMPLEX),
    I_DC = IDX(MPI_C_DOUBLE_COMPLEX), I_LDC = IDX(MPI_C_LONG_DOUBLE_COMPLEX), I_AINT = IDX(MPI_AINT),
    I_OFFSET = IDX(MPI_OFFSET), I_COUNT = IDX(MPI_COUNT), I_PACKED = IDX(MPI_PACKED),
    I_FLOAT_INT = IDX(MPI_FLOAT_INT), I_DOUBLE_INT = IDX(MPI_DOUBLE_INT), I_LONG_INT = IDX(MPI_LONG_INT),
    I_2INT = IDX(MPI_2INT), I_SHORT_INT = IDX(MPI_SHORT_INT), I_LDI = IDX(MPI_LONG_DOUBLE_INT),
    I_CHARACTER = IDX(MPI_CHARACTER), I_INTEGER = IDX(MPI_INTEGER), I_REAL = IDX(MPI_REAL),
    I_DP = IDX(MPI_DOUBLE_PRECISION), I_LOGICAL = IDX(MPI_LOGICAL), I_COMPLEX = IDX(MPI_COMPLEX),
    I_DCOMPLEX = IDX(MPI_DOUBLE_COMPLEX), I_2INTEGER = IDX(MPI_2INTEGER), I_2REAL = IDX(MPI_2REAL),
    I_2DP = IDX(MPI_2DOUBLE_PRECISION), I_CXX_BOOL = IDX(MPI_CXX_BOOL), I_CXX_FC = IDX(MPI_CXX_FLOAT_COMPLEX),
    I_CXX_DC = IDX(MPI_CXX_DOUBLE_COMPLEX), I_CXX_LDC = IDX(MPI_CXX_LONG_DOUBLE_COMPLEX),
    I_INTEGER1 = IDX(MPI_INTEGER1), I_INTEGER2 = IDX(MPI_INTEGER2), I_INTEGER4 = IDX(MPI_INTEGER4),
    I_INTEGER8 = IDX(MPI_INTEGER8), I_REAL4 = IDX(MPI_REAL4), I_REAL8 = IDX(MPI_REAL8),
};

struct pair_ff { float v, i; };
struct pair_dd { double v, i; };

static const predef_t predefs[KN_MPI_NPREDEF_TYPES] = {
    [I_CHAR] = {"MPI_CHAR", 1, 1, 0, 0, KNIT_CHAR, 0},
    [I_SIGNED_CHAR] = {"MPI_SIGNED_CHAR", 1, 1, 0, 0, KNIT_SCHAR, 2},
    [I_UNSIGNED_CHAR] = {"MPI_UNSIGNED_CHAR", 1, 1, 0, 0, KNIT_UCHAR, 0},
    [I_BYTE] = {"MPI_BYTE", 1, 1, 0, 0, KNIT_BYTE, 0},
    [I_SHORT] = {"MPI_SHORT", sizeof(short), sizeof(short), 0, 0, KNIT_SHORT, 2},
    [I_UNSIGNED_SHORT] = {"MPI_UNSIGNED_SHORT", sizeof(short), sizeof(short), 0, 0, KNIT_USHORT, 0},
    [I_INT] = {"MPI_INT", sizeof(int), sizeof(int), 0, 0, KNIT_INT, 2},
    [I_UNSIGNED] = {"MPI_UNSIGNED", sizeof(int), sizeof(int), 0, 0, KNIT_UINT, 0},
    [I_LONG] = {"MPI_LONG", sizeof(long), sizeof(long), 0, 0, KNIT_LONG, 2},
    [I_UNSIGNED_LONG] = {"MPI_UNSIGNED_LONG", sizeof(long), sizeof(long), 0, 0, KNIT_ULONG, 0},
    [I_LONG_LONG] = {"MPI_LONG_LONG_INT", sizeof(long long), sizeof(long long), 0, 0, KNIT_LONG_LONG, 0},
    [I_ULL] = {"MPI_UNSIGNED_LONG_LONG", sizeof(long long), sizeof(long long), 0, 0, KNIT_ULONG_LONG, 0},
    [I_FLOAT] = {"MPI_FLOAT", sizeof(float), sizeof(float), 0, 0, KNIT_FLOAT, 1},
    [I_DOUBLE] = {"MPI_DOUBLE", sizeof(double), sizeof(double), 0, 0, KNIT_DOUBLE, 1},
    [I_LONG_DOUBLE] = {"MPI_LONG_DOUBLE", sizeof(long double), sizeof(long double), 0, 0, KNIT_LONG_DOUBLE, 1},
    [I_WCHAR] = {"MPI_WCHAR", sizeof(wchar_t), sizeof(wchar_t), 0, 0, KNIT_WCHAR, 0},
    [I_C_BOOL] = {"MPI_C_BOOL", sizeof(bool), sizeof(bool), 0, 0, KNIT_C_BOOL, 0},
    [I_INT8] = {"MPI_INT8_T", 1, 1, 0, 0, KNIT_INT8, 0},
    [I_INT16] = {"MPI_INT16_T", 2, 2, 0, 0, KNIT_INT16, 0},
    [I_INT32] = {"MPI_INT32_T", 4, 4, 0, 0, KNIT_INT32, 0},
    [I_INT64] = {"MPI_INT64_T", 8, 8, 0, 0, KNIT_INT64, 0},
    [I_UINT8] = {"MPI_UINT8_T", 1, 1, 0, 0, KNIT_UINT8, 0},
    [I_UINT16] = {"MPI_UINT16_T", 2, 2, 0, 0, KNIT_UINT16, 0},
    [I_UINT32] = {"MPI_UINT32_T", 4, 4, 0, 0, KNIT_UINT32, 0},
    [I_UINT64] = {"MPI_UINT64_T", 8, 8, 0, 0, KNIT_UINT64, 0},
    [I_FC] = {"MPI_C_FLOAT_COMPLEX", sizeof(float _Complex), sizeof(float _Complex), 0, 0, KNIT_FLOAT_COMPLEX, 3},
    [I_DC] = {"MPI_C_DOUBLE_COMPLEX", sizeof(double _Complex), sizeof(double _Complex), 0, 0,
              KNIT_DOUBLE_COMPLEX, 3},
    [I_LDC] = {"MPI_C_LONG_DOUBLE_COMPLEX", sizeof(long double _Complex), sizeof(long double _Complex), 0, 0,
               KNIT_LONG_DOUBLE_COMPLEX, 3},
    [I_AINT] = {"MPI_AINT", sizeof(MPI_Aint), sizeof(MPI_Aint), 0, 0, KNIT_LONG, 0},
    [I_OFFSET] = {"MPI_OFFSET", sizeof(MPI_Offset), sizeof(MPI_Offset), 0, 0, KNIT_LONG_LONG, 0},
    [I_COUNT] = {"MPI_COUNT", sizeof(MPI_Count), sizeof(MPI_Count), 0, 0, KNIT_LONG_LONG, 0},
    [I_PACKED] = {"MPI_PACKED", 1, 1, 0, 0, -1, 0},
    [I_FLOAT_INT] = {"MPI_FLOAT_INT", sizeof(float), sizeof(struct pair_fi), offsetof(struct pair_fi, i),
                     sizeof(int), KNIT_FLOAT_INT, 0},
    [I_DOUBLE_INT] = {"MPI_DOUBLE_INT", sizeof(double), sizeof(struct pair_di), offsetof(struct pair_di, i),
                      sizeof(int), KNIT_DOUBLE_INT, 0},
    [I_LONG_INT] = {"MPI_LONG_INT", sizeof(long), sizeof(struct pair_li), offsetof(struct pair_li, i),
                    sizeof(int), KNIT_LONG_INT, 0},
    [I_2INT] = {"MPI_2INT", sizeof(int), 2 * sizeof(int), sizeof(int), sizeof(int), KNIT_2INT, 0},
    [I_SHORT_INT] = {"MPI_SHORT_INT", sizeof(short), sizeof(struct pair_si), offsetof(struct pair_si, i),
                     sizeof(int), KNIT_SHORT_INT, 0},
    [I_LDI] = {"MPI_LONG_DOUBLE_INT", sizeof(long double), sizeof(struct pair_ldi),
               offsetof(struct pair_ldi, i), sizeof(int), KNIT_LONG_DOUBLE_INT, 0},
    [I_CHARACTER] = {"MPI_CHARACTER", 1, 1, 0, 0, KNIT_CHAR, 0},
    [I_INTEGER] = {"MPI_INTEGER", 4, 4, 0, 0, KNIT_INT32, 0},
    [I_REAL] = {"MPI_REAL", 4, 4, 0, 0, KNIT_FLOAT, 0},
    [I_DP] = {"MPI_DOUBLE_PRECISION", 8, 8, 0, 0, KNIT_DOUBLE, 0},
    [I_LOGICAL] = {"MPI_LOGICAL", 4, 4, 0, 0, -1, 0},
    [I_COMPLEX] = {"MPI_COMPLEX", 8, 8, 0, 0, KNIT_FLOAT_COMPLEX, 0},
    [I_DCOMPLEX] = {"MPI_DOUBLE_COMPLEX", 16, 16, 0, 0, KNIT_DOUBLE_COMPLEX, 0},
    [I_2INTEGER] = {"MPI_2INTEGER", 4, 8, 4, 4, KNIT_2INT, 0},
    [I_2REAL] = {"MPI_2REAL", 4, 8, 4, 4, -1, 0},
    [I_2DP] = {"MPI_2DOUBLE_PRECISION", 8, 16, 8, 8, -1, 0},
    [I_CXX_BOOL] = {"MPI_CXX_BOOL", sizeof(bool), sizeof(bool), 0, 0, KNIT_C_BOOL, 0},
    [I_CXX_FC] = {"MPI_CXX_FLOAT_COMPLEX", 8, 8, 0, 0, KNIT_FLOAT_COMPLEX, 0},
    [I_CXX_DC] = {"MPI_CXX_DOUBLE_COMPLEX", 16, 16, 0, 0, KNIT_DOUBLE_COMPLEX, 0},
    [I_CXX_LDC] = {"MPI_CXX_LONG_DOUBLE_COMPLEX", sizeof(long double _Complex), sizeof(long double _Complex), 0,
                   0, KNIT_LONG_DOUBLE_COMPLEX, 0},
    [I_INTEGER1] = {"MPI_INTEGER1", 1, 1, 0, 0, KNIT_INT8, 0},
    [I_INTEGER2] = {"MPI_INTEGER2", 2, 2, 0, 0, KNIT_INT16, 0},
    [I_INTEGER4] = {"MPI_INTEGER4", 4, 4, 0, 0, KNIT_INT32, 0},
    [I_INTEGER8] = {"MPI_INTEGER8", 8, 8, 0, 0, KNIT_INT64, 0},
    [I_REAL4] = {"MPI_REAL4", 4, 4, 0, 0, KNIT_FLOAT, 0},
    [I_REAL8] = {"MPI_REAL8", 8, 8, 0, 0, KNIT_DOUBLE, 0},
};

static kn_mpi_type_t predef_obj[KN_MPI_NPREDEF_TYPES];
static kn_seg_t predef_seg[KN_MPI_NPREDEF_TYPES][2];
static kn_run_t predef_run[KN_MPI_NPREDEF_TYPES][2];

/* ------------------------------------------------------------ building */

static int seg_push(kn_mpi_type_t *t, MPI_Aint disp, size_t blen, size_t count, MPI_Aint stride)
{
    if (!blen || !count)
        return 0;
    if (count > 1 && stride == (MPI_Aint)blen) {
        blen *= count;
        count = 1;
    }
    if (count == 1)
        stride = 0;
    if (t->nseg) {
        kn_seg_t *p = &t->seg[t->nseg - 1];
        if (p->count == 1 && count == 1 && p->disp + (MPI_Aint)p->blen == disp) {
            p->blen += blen;
            return 0;
        }
        if (blen == p->blen) {
            if (p->count == 1 && count == 1) {
                p->stride = disp - p->disp;
                p->count = 2;
                return 0;
            }
            if (p->count > 1 && disp == p->disp + (MPI_Aint)p->count * p->stride &&
                (count == 1 || stride == p->stride)) {
                p->count += count;
                return 0;
            }
        }
    }
    if ((t->nseg & (t->nseg - 1)) == 0) { /* grow at powers of two */
        size_t cap = t->nseg ? (size_t)t->nseg * 2 : 1;
        kn_seg_t *s = realloc(t->seg, cap * sizeof(*s));
        if (!s)
            return -1;
        t->seg = s;
    }
    t->seg[t->nseg++] = (kn_seg_t){disp, blen, count, stride};
    return 0;
}

static int run_push(kn_mpi_type_t *t, size_t bytes, size_t esize)
{
    if (!bytes)
        return 0;
    if (t->nrun && t->run[t->nrun - 1].esize == esize) {
        t->run[t->nrun - 1].bytes += bytes;
        return 0;
    }
    if ((t->nrun & (t->nrun - 1)) == 0) {
        size_t cap = t->nrun ? (size_t)t->nrun * 2 : 1;
        kn_run_t *r = realloc(t->run, cap * sizeof(*r));
        if (!r)
            return -1;
        t->run = r;
    }
    t->run[t->nrun++] = (kn_run_t){bytes, esize};
    return 0;
}

/* n copies of old at disp, disp + extent, ... */
static int append_rep(kn_mpi_type_t *t, const kn_mpi_type_t *old, MPI_Aint disp, size_t n)
{
    MPI_Aint ext = old->extent;
    if (old->nseg == 1) {
        const kn_seg_t *s = &old->seg[0];
        if (s->count == 1)
            return seg_push(t, disp + s->disp, s->blen, n, ext);
        if (ext == (MPI_Aint)s->count * s->stride)
            return seg_push(t, disp + s->disp, s->blen, s->count * n, s->stride);
    }
    for (size_t j = 0; j < n; j++)
        for (int i = 0; i < old->nseg; i++) {
            const kn_seg_t *s = &old->seg[i];
            if (seg_push(t, disp + (MPI_Aint)j * ext + s->disp, s->blen, s->count, s->stride) < 0)
                return -1;
        }
    return 0;
}

static int append_runs(kn_mpi_type_t *t, const kn_mpi_type_t *old, size_t n)
{
    if (old->nrun == 1)
        return run_push(t, old->run[0].bytes * n, old->run[0].esize);
    for (size_t j = 0; j < n; j++)
        for (int i = 0; i < old->nrun; i++)
            if (run_push(t, old->run[i].bytes, old->run[i].esize) < 0)
                return -1;
    return 0;
}

static void type_free_obj(kn_mpi_type_t *t)
{
    for (int i = 0; i < t->nt; i++) {
        kn_mpi_type_t *c = kn_mpi_tbl_get(&kn_mpi.types, t->types[i]);
        if (c)
            kn_mpi_type_unref(c);
    }
    free(t->seg);
    free(t->run);
    free(t->ints);
    free(t->aints);
    free(t->types);
    free(t);
}

static void finish_flags(kn_mpi_type_t *t)
{
    int dense = t->size == 0 || (t->nseg == 1 && t->seg[0].count == 1 && t->seg[0].blen == t->size);
    t->contig = dense && (t->size == 0 || (size_t)t->extent == t->size);
    /* contig also means: the data starts at true_lb */
    if (t->size && t->seg[0].disp != t->true_lb)
        t->contig = 0;
}

/*
 * The one constructor: blocks i = 0..nblk-1 of lens[i] copies of
 * types[i] (or types[0] when same) at disps[i] bytes.  is_struct: round
 * the extent up to the alignment of the members (C struct padding).
 */
static kn_mpi_type_t *build(int nblk, const MPI_Aint *disps, const size_t *lens, kn_mpi_type_t *const *types,
                            int same, int is_struct)
{
    kn_mpi_type_t *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    int any = 0, prim = -1;
    MPI_Aint lb = 0, ub = 0, tlb = 0, tub = 0;
    int any_data = 0;
    size_t align = 1;
    for (int i = 0; i < nblk; i++) {
        const kn_mpi_type_t *o = types[same ? 0 : i];
        size_t n = lens[i];
        if (!n)
            continue;
        MPI_Aint d = disps[i], ext = o->extent, last = (MPI_Aint)(n - 1) * ext;
        MPI_Aint l0 = d + o->lb, l1 = d + o->lb + last;
        MPI_Aint bl = l0 < l1 ? l0 : l1, bu = (l0 > l1 ? l0 : l1) + ext;
        if (!any || bl < lb)
            lb = bl;
        if (!any || bu > ub)
            ub = bu;
        any = 1;
        if (o->size) {
            MPI_Aint t0 = d + o->true_lb, t1 = d + o->true_lb + last;
            MPI_Aint u0 = d + o->true_ub, u1 = d + o->true_ub + last;
            MPI_Aint ml = t0 < t1 ? t0 : t1, mu = u0 > u1 ? u0 : u1;
            if (!any_data || ml < tlb)
                tlb = ml;
            if (!any_data || mu > tub)
                tub = mu;
            any_data = 1;
            if (prim == -1)
                prim = o->prim;
            else if (prim != o->prim)
                prim = 0;
        }
        if (o->align > align)
            align = o->align;
        t->size += n * o->size;
        t->nelem += n * o->nelem;
        if (append_rep(t, o, d, n) < 0 || append_runs(t, o, n) < 0) {
            type_free_obj(t);
            return NULL;
        }
    }
    t->lb = lb;
    t->extent = ub - lb;
    if (is_struct && align > 1 && t->extent % (MPI_Aint)align)
        t->extent += (MPI_Aint)align - t->extent % (MPI_Aint)align;
    t->true_lb = any_data ? tlb : 0;
    t->true_ub = any_data ? tub : 0;
    t->align = align;
    t->prim = prim > 0 ? prim : 0;
    t->kdt = t->prim ? predefs[t->prim].kdt : -1;
    t->refs = t->urefs = 1;
    finish_flags(t);
    return t;
}

static int set_contents(kn_mpi_type_t *t, int combiner, int ni, const int *ints, int na, const MPI_Aint *aints,
                        int nt, const MPI_Datatype *types)
{
    t->combiner = combiner;
    t->ints = ni ? malloc((size_t)ni * sizeof(int)) : NULL;
    t->aints = na ? malloc((size_t)na * sizeof(MPI_Aint)) : NULL;
    t->types = nt ? malloc((size_t)nt * sizeof(MPI_Datatype)) : NULL;
    if ((ni && !t->ints) || (na && !t->aints) || (nt && !t->types))
        return -1;
    if (ni)
        memcpy(t->ints, ints, (size_t)ni * sizeof(int));
    if (na)
        memcpy(t->aints, aints, (size_t)na * sizeof(MPI_Aint));
    for (int i = 0; i < nt; i++) {
        t->types[i] = types[i];
        kn_mpi_type_ref(kn_mpi_tbl_get(&kn_mpi.types, types[i]));
        t->nt = i + 1;
    }
    t->ni = ni;
    t->na = na;
    return 0;
}

void kn_mpi_type_destroy(kn_mpi_type_t *t)
{
    kn_mpi_tbl_del(&kn_mpi.types, t->handle);
    kn_mpi_attr_t *a = t->attrs;
    while (a) {
        kn_mpi_attr_t *n = a->next;
        free(a);
        a = n;
    }
    type_free_obj(t);
}

/* Register a built type under a handle and hand it to the user. */
static int publish(kn_mpi_type_t *t, MPI_Datatype *out, const char *fn)
{
    int h = kn_mpi_tbl_add(&kn_mpi.types, t, -1);
    if (h < 0) {
        type_free_obj(t);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    t->handle = h;
    *out = h;
    return MPI_SUCCESS;
}

void kn_mpi_types_init(void)
{
    for (int i = 1; i < KN_MPI_NPREDEF_TYPES; i++) {
        const predef_t *p = &predefs[i];
        kn_mpi_type_t *t = &predef_obj[i];
        memset(t, 0, sizeof(*t));
        t->predefined = t->committed = 1;
        t->refs = t->urefs = 1;
        t->size = p->size + p->size2;
        t->extent = (MPI_Aint)p->extent;
        t->true_ub = p->off2 ? (MPI_Aint)(p->off2 + p->size2) : (MPI_Aint)p->size;
        t->align = p->size > 16 ? 16 : p->size;
        if (p->size2 && p->size2 > t->align)
            t->align = p->size2;
        t->seg = predef_seg[i];
        t->run = predef_run[i];
        t->seg[0] = (kn_seg_t){0, p->size, 1, 0};
        t->run[0] = (kn_run_t){p->size, p->size};
        t->nseg = t->nrun = 1;
        t->nelem = 1;
        if (p->size2) {
            t->nelem = 2;
            if (p->off2 == p->size)
                t->seg[0].blen += p->size2;
            else
                t->seg[t->nseg++] = (kn_seg_t){(MPI_Aint)p->off2, p->size2, 1, 0};
            if (p->size2 == p->size)
                t->run[0].bytes += p->size2;
            else
                t->run[t->nrun++] = (kn_run_t){p->size2, p->size2};
        }
        t->prim = i;
        t->kdt = p->kdt;
        t->combiner = MPI_COMBINER_NAMED;
        snprintf(t->name, sizeof(t->name), "%s", p->name);
        finish_flags(t);
        t->handle = kn_mpi_tbl_add(&kn_mpi.types, t, i);
    }
}

void kn_mpi_types_fini(void)
{
    for (int i = KN_MPI_NPREDEF_TYPES; i < kn_mpi.types.used; i++) {
        kn_mpi_type_t *t = kn_mpi.types.slot[i];
        if (!t)
            continue;
        kn_mpi_attr_t *a = t->attrs;
        while (a) {
            kn_mpi_attr_t *n = a->next;
            free(a);
            a = n;
        }
        free(t->seg);
        free(t->run);
        free(t->ints);
        free(t->aints);
        free(t->types);
        free(t);
    }
    kn_mpi_tbl_destroy(&kn_mpi.types);
}

/* ------------------------------------------------------------- the engine */

#define COPY_LOOP(SZ)                                          \
    for (size_t i = 0; i < cnt; i++, d += dstride, s += sstride) \
        memcpy(d, s, SZ);

/* cnt blocks of blen bytes: a loop per block size, moves inlined */
static inline void copy_blocks(char *d, MPI_Aint dstride, const char *s, MPI_Aint sstride, size_t blen,
                               size_t cnt)
{
    switch (blen) {
    case 1: COPY_LOOP(1) break;
    case 2: COPY_LOOP(2) break;
    case 4: COPY_LOOP(4) break;
    case 8: COPY_LOOP(8) break;
    case 12: COPY_LOOP(12) break;
    case 16: COPY_LOOP(16) break;
    case 24: COPY_LOOP(24) break;
    case 32: COPY_LOOP(32) break;
    default: COPY_LOOP(blen) break;
    }
}

void kn_mpi_pack(const kn_mpi_type_t *t, const void *buf, size_t count, void *out)
{
    char *o = out;
    const char *b = buf;
    if (t->contig) {
        memcpy(o, b + t->true_lb, count * t->size);
        return;
    }
    for (size_t k = 0; k < count; k++, b += t->extent)
        for (int i = 0; i < t->nseg; i++) {
            const kn_seg_t *s = &t->seg[i];
            copy_blocks(o, (MPI_Aint)s->blen, b + s->disp, s->stride, s->blen, s->count);
            o += s->blen * s->count;
        }
}

void kn_mpi_unpack(const kn_mpi_type_t *t, const void *in, size_t nbytes, void *buf, size_t count)
{
    const char *p = in;
    char *b = buf;
    size_t left = nbytes;
    if (t->contig) {
        size_t all = count * t->size;
        memcpy(b + t->true_lb, p, left < all ? left : all);
        return;
    }
    for (size_t k = 0; k < count && left; k++, b += t->extent)
        for (int i = 0; i < t->nseg && left; i++) {
            const kn_seg_t *s = &t->seg[i];
            size_t tot = s->blen * s->count;
            if (tot <= left) {
                copy_blocks(b + s->disp, s->stride, p, (MPI_Aint)s->blen, s->blen, s->count);
                p += tot;
                left -= tot;
                continue;
            }
            size_t full = left / s->blen;
            copy_blocks(b + s->disp, s->stride, p, (MPI_Aint)s->blen, s->blen, full);
            p += full * s->blen;
            memcpy(b + s->disp + (MPI_Aint)full * s->stride, p, left - full * s->blen);
            left = 0;
        }
}

void kn_mpi_tcur_init(kn_mpi_tcur_t *c, const kn_mpi_type_t *t, const void *buf, size_t count)
{
    c->t = t;
    c->elem = buf;
    c->k = 0;
    c->count = t->size ? count : 0;
    c->i = 0;
    c->j = 0;
}

size_t kn_mpi_tcur_next(kn_mpi_tcur_t *c, char **addr)
{
    const kn_mpi_type_t *t = c->t;
    if (c->k >= c->count)
        return 0;
    if (t->contig) { /* all of it at once */
        *addr = (char *)c->elem + t->true_lb;
        c->k = c->count;
        return c->count * t->size;
    }
    while (c->i >= t->nseg || t->seg[c->i].count == 0 || t->seg[c->i].blen == 0) {
        if (c->i >= t->nseg) {
            if (++c->k >= c->count)
                return 0;
            c->elem += t->extent;
            c->i = 0;
            c->j = 0;
        } else {
            c->i++;
            c->j = 0;
        }
    }
    const kn_seg_t *s = &t->seg[c->i];
    *addr = (char *)c->elem + s->disp + (MPI_Aint)c->j * s->stride;
    if (++c->j >= s->count) {
        c->i++;
        c->j = 0;
    }
    return s->blen;
}

int kn_mpi_type_strided(const kn_mpi_type_t *t, size_t count, MPI_Aint *first, int64_t cnt[3],
                        int64_t stride[2], int *levels)
{
    if (count == 0 || t->size == 0) {
        *first = 0;
        cnt[0] = 0;
        *levels = 0;
        return 1;
    }
    if (t->contig) {
        *first = t->true_lb;
        cnt[0] = (int64_t)(count * t->size);
        *levels = 0;
        return 1;
    }
    if (t->nseg != 1)
        return 0;
    const kn_seg_t *s = &t->seg[0];
    *first = s->disp;
    cnt[0] = (int64_t)s->blen;
    cnt[1] = (int64_t)s->count;
    stride[0] = (int64_t)s->stride;
    *levels = 1;
    if (count > 1) {
        cnt[2] = (int64_t)count;
        stride[1] = (int64_t)t->extent;
        *levels = 2;
    }
    return 1;
}

MPI_Count kn_mpi_type_elements(const kn_mpi_type_t *t, size_t nbytes)
{
    if (t->size == 0)
        return 0;
    MPI_Count e = (MPI_Count)(nbytes / t->size) * (MPI_Count)t->nelem;
    size_t rem = nbytes % t->size;
    for (int i = 0; i < t->nrun && rem; i++) {
        const kn_run_t *r = &t->run[i];
        if (rem >= r->bytes) {
            e += (MPI_Count)(r->bytes / r->esize);
            rem -= r->bytes;
        } else {
            e += (MPI_Count)(rem / r->esize);
            if (rem % r->esize)
                return -1;
            rem = 0;
        }
    }
    return e;
}

/* ---------------------------------------------------------- arguments */

static kn_mpi_type_t *type_any(MPI_Datatype h, const char *fn, int *err)
{
    kn_mpi_type_t *t = kn_mpi_type(h);
    if (!t)
        *err = kn_mpi_error(NULL, fn, MPI_ERR_TYPE, "%s",
                            h == MPI_DATATYPE_NULL ? "datatype is MPI_DATATYPE_NULL" : "not a valid datatype");
    return t;
}

kn_mpi_type_t *kn_mpi_type_arg_error(kn_mpi_comm_t *c, MPI_Datatype h, const char *fn, int *err)
{
    kn_mpi_type_t *t = kn_mpi_type(h);
    if (!t) {
        *err = kn_mpi_error(c, fn, MPI_ERR_TYPE, "%s",
                            h == MPI_DATATYPE_NULL ? "datatype is MPI_DATATYPE_NULL" : "not a valid datatype");
        return NULL;
    }
    if (!t->committed) {
        char label[200];
        *err = kn_mpi_error(c, fn, MPI_ERR_TYPE, "datatype %s is not committed (MPI_Type_commit)",
                            kn_mpi_type_label(t, label, sizeof(label)));
        return NULL;
    }
    return t;
}

/* The call that made a derived datatype, by combiner. */
static const char *constructor_name(int combiner)
{
    switch (combiner) {
    case MPI_COMBINER_DUP: return "MPI_Type_dup";
    case MPI_COMBINER_CONTIGUOUS: return "MPI_Type_contiguous";
    case MPI_COMBINER_VECTOR: return "MPI_Type_vector";
    case MPI_COMBINER_HVECTOR: return "MPI_Type_create_hvector";
    case MPI_COMBINER_INDEXED: return "MPI_Type_indexed";
    case MPI_COMBINER_HINDEXED: return "MPI_Type_create_hindexed";
    case MPI_COMBINER_INDEXED_BLOCK: return "MPI_Type_create_indexed_block";
    case MPI_COMBINER_HINDEXED_BLOCK: return "MPI_Type_create_hindexed_block";
    case MPI_COMBINER_STRUCT: return "MPI_Type_create_struct";
    case MPI_COMBINER_SUBARRAY: return "MPI_Type_create_subarray";
    case MPI_COMBINER_DARRAY: return "MPI_Type_create_darray";
    case MPI_COMBINER_RESIZED: return "MPI_Type_create_resized";
    }
    return "a datatype constructor";
}

const char *kn_mpi_type_label(const kn_mpi_type_t *t, char *buf, size_t len)
{
    if (t->name[0]) {
        snprintf(buf, len, "%s", t->name);
        return buf;
    }
    /* unnamed: its handle and how it was made, e.g. "0x4c000005 (unnamed,
     * MPI_Type_vector of MPI_INT)" */
    int n = snprintf(buf, len, "0x%x (unnamed, %s", (unsigned)t->handle, constructor_name(t->combiner));
    for (int i = 0; i < t->nt && n > 0 && (size_t)n < len; i++) {
        const kn_mpi_type_t *e = kn_mpi_tbl_get(&kn_mpi.types, t->types[i]);
        const char *sep = i == 0 ? " of " : ", ";
        if (i == 3) {
            n += snprintf(buf + n, len - (size_t)n, ", ...");
            break;
        }
        if (e && e->name[0])
            n += snprintf(buf + n, len - (size_t)n, "%s%s", sep, e->name);
        else
            n += snprintf(buf + n, len - (size_t)n, "%s0x%x", sep, (unsigned)t->types[i]);
    }
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ")");
    return buf;
}

#define NEWTYPE_CHECK(newtype)                                                   \
    do {                                                                         \
        if (!(newtype))                                                          \
            return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "newtype is NULL"); \
    } while (0)
#define COUNT_CHECK(count)                                                                \
    do {                                                                                  \
        if ((count) < 0)                                                                  \
            return kn_mpi_error(NULL, __func__, MPI_ERR_COUNT, "count %d is negative", (count)); \
    } while (0)

/* build + contents + publish, for the single-old-type constructors */
static int make(int nblk, const MPI_Aint *disps, const size_t *lens, kn_mpi_type_t *old, int combiner, int ni,
                const int *ints, int na, const MPI_Aint *aints, MPI_Datatype oldh, MPI_Datatype *out,
                const char *fn)
{
    kn_mpi_type_t *t = build(nblk, disps, lens, &old, 1, 0);
    if (!t || set_contents(t, combiner, ni, ints, na, aints, 1, &oldh) < 0) {
        if (t)
            type_free_obj(t);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    return publish(t, out, fn);
}

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    COUNT_CHECK(count);
    NEWTYPE_CHECK(newtype);
    MPI_Aint d = 0;
    size_t n = (size_t)count;
    return make(1, &d, &n, o, MPI_COMBINER_CONTIGUOUS, 1, &count, 0, NULL, oldtype, newtype, __func__);
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
    MPI_Aint *d = malloc(((size_t)count + 1) * sizeof(*d));
    size_t *l = malloc(((size_t)count + 1) * sizeof(*l));
    if (!d || !l) {
        free(d);
        free(l);
        return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory");
    }
    for (int i = 0; i < count; i++) {
        d[i] = (MPI_Aint)i * stride_bytes;
        l[i] = (size_t)blocklength;
    }
    int err = make(count, d, l, o, combiner, ni, ints, na, aints, oldh, out, fn);
    free(d);
    free(l);
    return err;
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = type_any(oldtype, __func__, &err);
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
    kn_mpi_type_t *o = type_any(oldtype, __func__, &err);
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

/* the indexed family: blocklens (or one blocklen), displacements in
 * elements (idisp) or bytes (adisp) */
static int indexed(int count, const int *bls, int bl1, const int *idisp, const MPI_Aint *adisp,
                   MPI_Datatype oldtype, MPI_Datatype *newtype, int combiner, const char *fn)
{
    int err;
    kn_mpi_type_t *o = type_any(oldtype, fn, &err);
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
        err = make(count, d, l, o, combiner, ni, ints, adisp ? count : 0, adisp, oldtype, newtype, fn);
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
        kn_mpi_type_t *t = build(count, array_of_displacements, l, ts, 0, 1);
        if (!t || set_contents(t, MPI_COMBINER_STRUCT, count + 1, ints, count, array_of_displacements, count,
                               array_of_types) < 0) {
            if (t)
                type_free_obj(t);
            err = kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
        } else {
            err = publish(t, newtype, __func__);
        }
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
    kn_mpi_type_t *o = type_any(oldtype, __func__, &err);
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
    /* innermost (fastest) dimension first */
    kn_mpi_type_t *cur = o, *prev = NULL;
    MPI_Aint stride = o->extent, offset = 0, full = o->extent;
    for (int k = 0; k < ndims; k++) {
        int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
        size_t n = (size_t)subsizes[i];
        MPI_Aint *d = malloc(n * sizeof(*d));
        size_t *l = malloc(n * sizeof(*l));
        kn_mpi_type_t *next = NULL;
        if (d && l) {
            for (size_t j = 0; j < n; j++) {
                d[j] = (MPI_Aint)j * stride;
                l[j] = 1;
            }
            next = build((int)n, d, l, &cur, 1, 0);
        }
        free(d);
        free(l);
        if (prev)
            type_free_obj(prev);
        if (!next)
            return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
        offset += (MPI_Aint)starts[i] * stride;
        stride *= sizes[i];
        full = stride;
        /* levels are placed by explicit displacements: their extents
         * never matter */
        cur = prev = next;
    }
    MPI_Aint d0 = offset;
    size_t one = 1;
    kn_mpi_type_t *t = build(1, &d0, &one, &cur, 1, 0);
    type_free_obj(prev);
    if (!t)
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    t->lb = 0;
    t->extent = full;
    finish_flags(t);
    int *ints = malloc((3 * (size_t)ndims + 2) * sizeof(int));
    if (!ints) {
        type_free_obj(t);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    ints[0] = ndims;
    for (int i = 0; i < ndims; i++) {
        ints[1 + i] = sizes[i];
        ints[1 + ndims + i] = subsizes[i];
        ints[1 + 2 * ndims + i] = starts[i];
    }
    ints[1 + 3 * ndims] = order;
    err = set_contents(t, MPI_COMBINER_SUBARRAY, 3 * ndims + 2, ints, 0, NULL, 1, &oldtype);
    free(ints);
    if (err < 0) {
        type_free_obj(t);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    return publish(t, newtype, __func__);
}

int MPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                           const int array_of_distribs[], const int array_of_dargs[], const int array_of_psizes[],
                           int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    (void)size, (void)rank, (void)ndims, (void)array_of_gsizes, (void)array_of_distribs, (void)array_of_dargs;
    (void)array_of_psizes, (void)order, (void)oldtype, (void)newtype;
    return kn_mpi_error(NULL, __func__, MPI_ERR_UNSUPPORTED_OPERATION, "distributed-array datatypes are not "
                                                                       "implemented");
}

static kn_mpi_type_t *type_clone(const kn_mpi_type_t *o)
{
    kn_mpi_type_t *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    *t = *o;
    t->predefined = 0;
    t->committed = 0;
    t->attrs = NULL;
    t->name[0] = '\0';
    t->ints = NULL;
    t->aints = NULL;
    t->types = NULL;
    t->ni = t->na = t->nt = 0;
    t->seg = malloc((size_t)(o->nseg ? o->nseg : 1) * sizeof(kn_seg_t));
    t->run = malloc((size_t)(o->nrun ? o->nrun : 1) * sizeof(kn_run_t));
    if (!t->seg || !t->run) {
        type_free_obj(t);
        return NULL;
    }
    memcpy(t->seg, o->seg, (size_t)o->nseg * sizeof(kn_seg_t));
    memcpy(t->run, o->run, (size_t)o->nrun * sizeof(kn_run_t));
    /* the capacity rule of seg_push/run_push: round up to a power of two */
    size_t c = 1;
    while (c < (size_t)o->nseg)
        c <<= 1;
    if (c != (size_t)o->nseg) {
        kn_seg_t *s = realloc(t->seg, c * sizeof(*s));
        if (s)
            t->seg = s;
    }
    c = 1;
    while (c < (size_t)o->nrun)
        c <<= 1;
    if (c != (size_t)o->nrun) {
        kn_run_t *r = realloc(t->run, c * sizeof(*r));
        if (r)
            t->run = r;
    }
    t->refs = t->urefs = 1;
    return t;
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    NEWTYPE_CHECK(newtype);
    kn_mpi_type_t *t = type_clone(o);
    MPI_Aint a[2] = {lb, extent};
    if (!t || set_contents(t, MPI_COMBINER_RESIZED, 0, NULL, 2, a, 1, &oldtype) < 0) {
        if (t)
            type_free_obj(t);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    t->lb = lb;
    t->extent = extent;
    t->align = 1; /* an explicit extent is taken as given */
    finish_flags(t);
    return publish(t, newtype, __func__);
}

int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    NEWTYPE_CHECK(newtype);
    kn_mpi_type_t *t = type_clone(o);
    if (!t || set_contents(t, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, &oldtype) < 0) {
        if (t)
            type_free_obj(t);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    t->committed = o->committed;
    if ((err = publish(t, newtype, __func__)) != MPI_SUCCESS)
        return err;
    if ((err = kn_mpi_attrs_copy(KN_K_TYPE, oldtype, o->attrs, &t->attrs)) != MPI_SUCCESS) {
        MPI_Type_free(newtype);
        return kn_mpi_error(NULL, __func__, err, "an attribute copy callback failed");
    }
    return MPI_SUCCESS;
}

int MPI_Type_commit(MPI_Datatype *datatype)
{
    KN_MPI_READY();
    int err;
    if (!datatype)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "datatype is NULL");
    kn_mpi_type_t *t = type_any(*datatype, __func__, &err);
    if (!t)
        return err;
    t->committed = 1; /* the layout was compiled at construction */
    return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *datatype)
{
    KN_MPI_READY();
    int err;
    if (!datatype)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "datatype is NULL");
    kn_mpi_type_t *t = type_any(*datatype, __func__, &err);
    if (!t)
        return err;
    if (t->predefined)
        return kn_mpi_error(NULL, __func__, MPI_ERR_TYPE, "predefined datatype %s cannot be freed", t->name);
    if (t->urefs == 1 && t->attrs &&
        (err = kn_mpi_attrs_delete(KN_K_TYPE, *datatype, &t->attrs)) != MPI_SUCCESS)
        return kn_mpi_error(NULL, __func__, err, "an attribute delete callback failed");
    t->urefs--;
    *datatype = MPI_DATATYPE_NULL;
    kn_mpi_type_unref(t);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------- queries */

#define TYPE_QUERY_START()                           \
    KN_MPI_READY();                                  \
    int err;                                         \
    kn_mpi_type_t *t = type_any(datatype, __func__, &err); \
    if (!t)                                          \
        return err;

int MPI_Type_size(MPI_Datatype datatype, int *size)
{
    TYPE_QUERY_START();
    if (!size)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "size is NULL");
    *size = t->size > 0x7fffffff ? MPI_UNDEFINED : (int)t->size;
    return MPI_SUCCESS;
}

int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    TYPE_QUERY_START();
    if (!size)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "size is NULL");
    *size = (MPI_Count)t->size;
    return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    TYPE_QUERY_START();
    if (!lb || !extent)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *lb = t->lb;
    *extent = t->extent;
    return MPI_SUCCESS;
}

int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    TYPE_QUERY_START();
    if (!lb || !extent)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *lb = t->lb;
    *extent = t->extent;
    return MPI_SUCCESS;
}

int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
    TYPE_QUERY_START();
    if (!extent)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *extent = t->extent;
    return MPI_SUCCESS;
}

int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
    TYPE_QUERY_START();
    if (!displacement)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *displacement = t->lb;
    return MPI_SUCCESS;
}

int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
    TYPE_QUERY_START();
    if (!displacement)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *displacement = t->lb + t->extent;
    return MPI_SUCCESS;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    TYPE_QUERY_START();
    if (!true_lb || !true_extent)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *true_lb = t->true_lb;
    *true_extent = t->true_ub - t->true_lb;
    return MPI_SUCCESS;
}

int MPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    TYPE_QUERY_START();
    if (!true_lb || !true_extent)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *true_lb = t->true_lb;
    *true_extent = t->true_ub - t->true_lb;
    return MPI_SUCCESS;
}

int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses, int *num_datatypes,
                          int *combiner)
{
    TYPE_QUERY_START();
    if (!num_integers || !num_addresses || !num_datatypes || !combiner)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *num_integers = t->ni;
    *num_addresses = t->na;
    *num_datatypes = t->nt;
    *combiner = t->combiner;
    return MPI_SUCCESS;
}

int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                          int array_of_integers[], MPI_Aint array_of_addresses[],
                          MPI_Datatype array_of_datatypes[])
{
    TYPE_QUERY_START();
    if (t->predefined)
        return kn_mpi_error(NULL, __func__, MPI_ERR_TYPE, "%s is a predefined datatype", t->name);
    if (max_integers < t->ni || max_addresses < t->na || max_datatypes < t->nt)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "arrays too small (need %d, %d, %d)", t->ni, t->na,
                            t->nt);
    if ((t->ni && !array_of_integers) || (t->na && !array_of_addresses) || (t->nt && !array_of_datatypes))
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL array");
    if (t->ni)
        memcpy(array_of_integers, t->ints, (size_t)t->ni * sizeof(int));
    if (t->na)
        memcpy(array_of_addresses, t->aints, (size_t)t->na * sizeof(MPI_Aint));
    for (int i = 0; i < t->nt; i++) {
        kn_mpi_type_t *c = kn_mpi_tbl_get(&kn_mpi.types, t->types[i]);
        /* derived types come back as new references the caller frees */
        if (c && !c->predefined) {
            c->refs++;
            c->urefs++;
        }
        array_of_datatypes[i] = t->types[i];
    }
    return MPI_SUCCESS;
}

int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    TYPE_QUERY_START();
    if (!type_name)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "type_name is NULL");
    snprintf(t->name, sizeof(t->name), "%s", type_name);
    return MPI_SUCCESS;
}

int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    TYPE_QUERY_START();
    if (!type_name || !resultlen)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", t->name);
    *resultlen = (int)strlen(type_name);
    return MPI_SUCCESS;
}

int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    KN_MPI_READY();
    if (!datatype)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "datatype is NULL");
    static const MPI_Datatype cands[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T,
                                         MPI_INT32_T, MPI_INT64_T, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
                                         MPI_C_LONG_DOUBLE_COMPLEX};
    int want = typeclass == MPI_TYPECLASS_REAL ? 1 : typeclass == MPI_TYPECLASS_INTEGER ? 2
             : typeclass == MPI_TYPECLASS_COMPLEX ? 3 : 0;
    if (!want)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "unknown typeclass %d", typeclass);
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
        const kn_mpi_type_t *t = &predef_obj[IDX(cands[i])];
        int cls = IDX(cands[i]) >= I_FC && IDX(cands[i]) <= I_LDC ? 3 : IDX(cands[i]) <= I_LONG_DOUBLE ? 1 : 2;
        if (cls == want && (int)t->size == size) {
            *datatype = cands[i];
            return MPI_SUCCESS;
        }
    }
    return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "no type of class %d has size %d", typeclass, size);
}

int MPI_Get_address(const void *location, MPI_Aint *address)
{
    if (!address)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "address is NULL");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

int MPI_Address(void *location, MPI_Aint *address)
{
    return MPI_Get_address(location, address);
}

MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}

MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}

/* --------------------------------------------------------- pack / unpack */

int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,
             MPI_Comm comm)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    kn_mpi_type_t *t = kn_mpi_type_arg(c, datatype, __func__, &err);
    if (!t)
        return err;
    if (incount < 0)
        return kn_mpi_error(c, __func__, MPI_ERR_COUNT, "incount %d is negative", incount);
    if (!position || outsize < 0 || *position < 0)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "invalid position or outsize");
    if (kn_mpi_bad_buffer(inbuf, incount, t))
        return kn_mpi_error(c, __func__, MPI_ERR_BUFFER, "inbuf is NULL with %d elements", incount);
    size_t need = (size_t)incount * t->size;
    if ((size_t)*position + need > (size_t)outsize)
        return kn_mpi_error(c, __func__, MPI_ERR_TRUNCATE, "%zu bytes do not fit at position %d of %d", need,
                            *position, outsize);
    if (need && !outbuf)
        return kn_mpi_error(c, __func__, MPI_ERR_BUFFER, "outbuf is NULL");
    if (need)
        kn_mpi_pack(t, inbuf, (size_t)incount, (char *)outbuf + *position);
    *position += (int)need;
    return MPI_SUCCESS;
}

int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype,
               MPI_Comm comm)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    kn_mpi_type_t *t = kn_mpi_type_arg(c, datatype, __func__, &err);
    if (!t)
        return err;
    if (outcount < 0)
        return kn_mpi_error(c, __func__, MPI_ERR_COUNT, "outcount %d is negative", outcount);
    if (!position || insize < 0 || *position < 0)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "invalid position or insize");
    if (kn_mpi_bad_buffer(outbuf, outcount, t))
        return kn_mpi_error(c, __func__, MPI_ERR_BUFFER, "outbuf is NULL with %d elements", outcount);
    size_t need = (size_t)outcount * t->size;
    if ((size_t)*position + need > (size_t)insize)
        return kn_mpi_error(c, __func__, MPI_ERR_TRUNCATE, "%zu bytes wanted at position %d of %d", need,
                            *position, insize);
    if (need && !inbuf)
        return kn_mpi_error(c, __func__, MPI_ERR_BUFFER, "inbuf is NULL");
    if (need)
        kn_mpi_unpack(t, (const char *)inbuf + *position, need, outbuf, (size_t)outcount);
    *position += (int)need;
    return MPI_SUCCESS;
}

int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    kn_mpi_type_t *t = kn_mpi_type_arg(c, datatype, __func__, &err);
    if (!t)
        return err;
    if (incount < 0)
        return kn_mpi_error(c, __func__, MPI_ERR_COUNT, "incount %d is negative", incount);
    if (!size)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "size is NULL");
    size_t s = (size_t)incount * t->size;
    if (s > 0x7fffffff)
        return kn_mpi_error(c, __func__, MPI_ERR_VALUE_TOO_LARGE, "%zu bytes do not fit an int", s);
    *size = (int)s;
    return MPI_SUCCESS;
}
