/*
 * Datatypes: the predefined types, type objects and their lifetime
 * (commit, free, dup, resized), argument checks, element counts along the
 * typemap.  The rest of the datatype code is split by job (dtype_int.h):
 * constructors in dtype_make.c, the layout engine in dtype_loop.c, queries
 * and the pack calls in dtype_query.c.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <complex.h>
#include <stdbool.h>
#include <wchar.h>
#include <float.h>

#include "mpi/dtype_int.h"

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

const kn_mpi_type_t *kn_mpi_predef(int idx)
{
    return idx > 0 && idx < KN_MPI_NPREDEF_TYPES ? &predef_obj[idx] : NULL;
}

/* ------------------------------------------------------------ objects */

kn_mpi_type_t *kn_mpi_type_alloc(void)
{
    kn_mpi_type_t *t = calloc(1, sizeof(*t));
    if (t)
        t->refs = t->urefs = 1;
    return t;
}

static void free_attrs(kn_mpi_type_t *t)
{
    kn_mpi_attr_t *a = t->attrs;
    while (a) {
        kn_mpi_attr_t *n = a->next;
        free(a);
        a = n;
    }
    t->attrs = NULL;
}

void kn_mpi_type_free_obj(kn_mpi_type_t *t)
{
    for (int i = 0; i < t->nt; i++) {
        kn_mpi_type_t *c = kn_mpi_tbl_get(&kn_mpi.types, t->types[i]);
        if (c)
            kn_mpi_type_unref(c);
    }
    kn_dl_unref(t->dl);
    free(t->ints);
    free(t->aints);
    free(t->types);
    free(t);
}

void kn_mpi_type_finish(kn_mpi_type_t *t)
{
    const kn_dl_t *n = t->dl;
    t->size = n->size;
    t->true_lb = n->size ? n->tlb : 0;
    t->true_ub = n->size ? n->tub : 0;
    /* a BLOCK node is size bytes at its true lower bound */
    t->onerun = n->size == 0 || n->kind == KN_DL_BLOCK;
    t->contig = t->onerun && (n->size == 0 || (size_t)t->extent == n->size);
}

int kn_mpi_type_set_contents(kn_mpi_type_t *t, int combiner, int ni, const int *ints, int na,
                             const MPI_Aint *aints, int nt, const MPI_Datatype *types)
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
    free_attrs(t);
    kn_mpi_type_free_obj(t);
}

int kn_mpi_type_publish(kn_mpi_type_t *t, MPI_Datatype *out, const char *fn)
{
    if (t->dl->depth > KN_DL_MAX_DEPTH) {
        kn_mpi_type_free_obj(t);
        return kn_mpi_error(NULL, fn, MPI_ERR_TYPE, "datatype nested more than %d levels deep", KN_DL_MAX_DEPTH);
    }
    int h = kn_mpi_tbl_add(&kn_mpi.types, t, -1);
    if (h < 0) {
        kn_mpi_type_free_obj(t);
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
        t->extent = (MPI_Aint)p->extent;
        t->align = p->size > 16 ? 16 : p->size;
        if (p->size2 && p->size2 > t->align)
            t->align = p->size2;
        t->nelem = p->size2 ? 2 : 1;
        if (!p->size2 || p->off2 == p->size) {
            t->dl = kn_dl_block(0, p->size + p->size2);
        } else {
            kn_dl_t *b1 = kn_dl_block(0, p->size), *b2 = kn_dl_block(0, p->size2);
            kn_dl_t *kids[2] = {b1, b2};
            MPI_Aint disps[2] = {0, (MPI_Aint)p->off2};
            if (b1 && b2)
                t->dl = kn_dl_idx(2, disps, NULL, 1, kids, NULL, NULL, 0);
            kn_dl_unref(b1);
            kn_dl_unref(b2);
        }
        if (!t->dl) { /* at MPI_Init: a few hundred bytes */
            fprintf(stderr, "knit mpi: out of memory building the predefined datatypes\n");
            abort();
        }
        t->prim = i;
        t->kdt = p->kdt;
        t->combiner = MPI_COMBINER_NAMED;
        snprintf(t->name, sizeof(t->name), "%s", p->name);
        kn_mpi_type_finish(t);
        t->handle = kn_mpi_tbl_add(&kn_mpi.types, t, i);
    }
}

void kn_mpi_types_fini(void)
{
    for (int i = KN_MPI_NPREDEF_TYPES; i < kn_mpi.types.used; i++) {
        kn_mpi_type_t *t = kn_mpi.types.slot[i];
        if (!t)
            continue;
        free_attrs(t);
        kn_dl_unref(t->dl);
        free(t->ints);
        free(t->aints);
        free(t->types);
        free(t);
    }
    for (int i = 1; i < KN_MPI_NPREDEF_TYPES; i++) {
        kn_dl_unref(predef_obj[i].dl);
        predef_obj[i].dl = NULL;
    }
    kn_mpi_tbl_destroy(&kn_mpi.types);
}

/* ----------------------------------------------------- element counts */

/*
 * MPI_Get_elements and MPI_Status_set_elements count basic elements along
 * the typemap.  They descend the constructor tree (the contents every
 * derived type keeps), one level per nesting level: each constructor but
 * struct repeats one old type, so whole copies are counted by division;
 * struct walks its blocks.
 */
static MPI_Count elems_part(const kn_mpi_type_t *t, size_t rem);

/* basic elements in the first rem bytes of copies of o; -1: inside one */
static MPI_Count elems_of(const kn_mpi_type_t *o, size_t rem)
{
    MPI_Count e = (MPI_Count)(rem / o->size) * (MPI_Count)o->nelem;
    if (rem % o->size) {
        MPI_Count s = elems_part(o, rem % o->size);
        if (s < 0)
            return -1;
        e += s;
    }
    return e;
}

static const kn_mpi_type_t *content(const kn_mpi_type_t *t, int i)
{
    return kn_mpi_tbl_get(&kn_mpi.types, t->types[i]);
}

/* rem < t->size */
static MPI_Count elems_part(const kn_mpi_type_t *t, size_t rem)
{
    if (!rem)
        return 0;
    if (t->predefined) { /* a pair: the first member whole, no more */
        int i = (int)IDX(t->handle);
        return t->nelem == 2 && rem == predefs[i].size ? 1 : -1;
    }
    if (t->combiner == MPI_COMBINER_STRUCT) {
        MPI_Count e = 0;
        for (int i = 0; i < t->nt; i++) {
            const kn_mpi_type_t *o = content(t, i);
            size_t bytes = (size_t)t->ints[1 + i] * o->size;
            if (rem < bytes) {
                MPI_Count s = elems_of(o, rem);
                return s < 0 ? -1 : e + s;
            }
            e += (MPI_Count)t->ints[1 + i] * (MPI_Count)o->nelem;
            rem -= bytes;
        }
        return e;
    }
    return elems_of(content(t, 0), rem);
}

MPI_Count kn_mpi_type_elements(const kn_mpi_type_t *t, size_t nbytes)
{
    if (t->size == 0)
        return 0;
    MPI_Count e = (MPI_Count)(nbytes / t->size) * (MPI_Count)t->nelem;
    MPI_Count r = elems_part(t, nbytes % t->size);
    return r < 0 ? -1 : e + r;
}

static MPI_Count bytes_part(const kn_mpi_type_t *t, MPI_Count k);

static MPI_Count bytes_of(const kn_mpi_type_t *o, MPI_Count k)
{
    return k / (MPI_Count)o->nelem * (MPI_Count)o->size + bytes_part(o, k % (MPI_Count)o->nelem);
}

/* k < t->nelem */
static MPI_Count bytes_part(const kn_mpi_type_t *t, MPI_Count k)
{
    if (!k)
        return 0;
    if (t->predefined)
        return (MPI_Count)predefs[IDX(t->handle)].size; /* k == 1 of a pair */
    if (t->combiner == MPI_COMBINER_STRUCT) {
        MPI_Count b = 0;
        for (int i = 0; i < t->nt && k > 0; i++) {
            const kn_mpi_type_t *o = content(t, i);
            MPI_Count n = (MPI_Count)t->ints[1 + i] * (MPI_Count)o->nelem;
            if (k < n)
                return b + bytes_of(o, k);
            b += (MPI_Count)t->ints[1 + i] * (MPI_Count)o->size;
            k -= n;
        }
        return b;
    }
    return bytes_of(content(t, 0), k);
}

MPI_Count kn_mpi_type_elem_bytes(const kn_mpi_type_t *t, MPI_Count count)
{
    if (!t->nelem)
        return 0;
    return count / (MPI_Count)t->nelem * (MPI_Count)t->size + bytes_part(t, count % (MPI_Count)t->nelem);
}

/* ---------------------------------------------------------- arguments */

kn_mpi_type_t *kn_mpi_type_any(MPI_Datatype h, const char *fn, int *err)
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

/* dup and resized: the old type's layout, shared */
static kn_mpi_type_t *type_clone(const kn_mpi_type_t *o)
{
    kn_mpi_type_t *t = kn_mpi_type_alloc();
    if (!t)
        return NULL;
    t->size = o->size;
    t->lb = o->lb;
    t->extent = o->extent;
    t->align = o->align;
    t->nelem = o->nelem;
    t->prim = o->prim;
    t->kdt = o->kdt;
    t->dl = kn_dl_ref(o->dl);
    kn_mpi_type_finish(t);
    return t;
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    NEWTYPE_CHECK(newtype);
    kn_mpi_type_t *t = type_clone(o);
    MPI_Aint a[2] = {lb, extent};
    if (!t || kn_mpi_type_set_contents(t, MPI_COMBINER_RESIZED, 0, NULL, 2, a, 1, &oldtype) < 0) {
        if (t)
            kn_mpi_type_free_obj(t);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    t->lb = lb;
    t->extent = extent;
    t->align = 1; /* an explicit extent is taken as given */
    kn_mpi_type_finish(t);
    return kn_mpi_type_publish(t, newtype, __func__);
}

int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    KN_MPI_READY();
    int err;
    kn_mpi_type_t *o = kn_mpi_type_any(oldtype, __func__, &err);
    if (!o)
        return err;
    NEWTYPE_CHECK(newtype);
    kn_mpi_type_t *t = type_clone(o);
    if (!t || kn_mpi_type_set_contents(t, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, &oldtype) < 0) {
        if (t)
            kn_mpi_type_free_obj(t);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    t->committed = o->committed;
    if ((err = kn_mpi_type_publish(t, newtype, __func__)) != MPI_SUCCESS)
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
    kn_mpi_type_t *t = kn_mpi_type_any(*datatype, __func__, &err);
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
    kn_mpi_type_t *t = kn_mpi_type_any(*datatype, __func__, &err);
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

/* ------------------------------------------------------- match_size */

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

/* ---------------------------------------------------------- external32 */

static void x32_member(kn_x32_t *x, unsigned off, int parts, size_t nat, size_t ext, int cls)
{
    x->m[x->n].off = (unsigned short)off;
    x->m[x->n].parts = (unsigned char)parts;
    x->m[x->n].nat = (unsigned char)nat;
    x->m[x->n].ext = (unsigned char)ext;
    x->m[x->n].cls = (unsigned char)cls;
    x->n++;
}

int kn_mpi_x32(int idx, kn_x32_t *x)
{
    const size_t ld = sizeof(long double);
    x->n = 0;
    switch (idx) {
    /* MPI-3.1 table 13.2: the sizes are fixed whatever the native ones */
    case I_CHAR: case I_UNSIGNED_CHAR: case I_BYTE: case I_PACKED: case I_CHARACTER: case I_UINT8:
    case I_C_BOOL: case I_CXX_BOOL:
        x32_member(x, 0, 1, 1, 1, KN_X32_UINT); break;
    case I_SIGNED_CHAR: case I_INT8: case I_INTEGER1:
        x32_member(x, 0, 1, 1, 1, KN_X32_SINT); break;
    case I_SHORT: case I_INT16: case I_INTEGER2:
        x32_member(x, 0, 1, 2, 2, KN_X32_SINT); break;
    case I_UNSIGNED_SHORT: case I_UINT16:
        x32_member(x, 0, 1, 2, 2, KN_X32_UINT); break;
    case I_INT: case I_INT32: case I_INTEGER: case I_INTEGER4: case I_LOGICAL:
        x32_member(x, 0, 1, 4, 4, KN_X32_SINT); break;
    case I_UNSIGNED: case I_UINT32:
        x32_member(x, 0, 1, 4, 4, KN_X32_UINT); break;
    case I_WCHAR:
        x32_member(x, 0, 1, sizeof(wchar_t), 4, KN_X32_UINT); break;
    case I_LONG:
        x32_member(x, 0, 1, sizeof(long), 4, KN_X32_SINT); break;
    case I_UNSIGNED_LONG:
        x32_member(x, 0, 1, sizeof(long), 4, KN_X32_UINT); break;
    case I_LONG_LONG: case I_INT64: case I_INTEGER8: case I_OFFSET: case I_COUNT:
        x32_member(x, 0, 1, 8, 8, KN_X32_SINT); break;
    case I_AINT:
        x32_member(x, 0, 1, sizeof(MPI_Aint), 8, KN_X32_SINT); break;
    case I_ULL: case I_UINT64:
        x32_member(x, 0, 1, 8, 8, KN_X32_UINT); break;
    case I_FLOAT: case I_REAL: case I_REAL4:
        x32_member(x, 0, 1, 4, 4, KN_X32_FLOAT); break;
    case I_DOUBLE: case I_DP: case I_REAL8:
        x32_member(x, 0, 1, 8, 8, KN_X32_FLOAT); break;
    case I_LONG_DOUBLE:
        x32_member(x, 0, 1, ld, 16, KN_X32_LDOUBLE); break;
    case I_FC: case I_COMPLEX: case I_CXX_FC:
        x32_member(x, 0, 2, 4, 4, KN_X32_FLOAT); break;
    case I_DC: case I_DCOMPLEX: case I_CXX_DC:
        x32_member(x, 0, 2, 8, 8, KN_X32_FLOAT); break;
    case I_LDC: case I_CXX_LDC:
        x32_member(x, 0, 2, ld, 16, KN_X32_LDOUBLE); break;
    case I_FLOAT_INT: case I_2REAL:
        x32_member(x, 0, 1, 4, 4, KN_X32_FLOAT); break;
    case I_DOUBLE_INT: case I_2DP:
        x32_member(x, 0, 1, 8, 8, KN_X32_FLOAT); break;
    case I_LONG_INT:
        x32_member(x, 0, 1, sizeof(long), 4, KN_X32_SINT); break;
    case I_2INT: case I_2INTEGER:
        x32_member(x, 0, 1, 4, 4, KN_X32_SINT); break;
    case I_SHORT_INT:
        x32_member(x, 0, 1, sizeof(short), 2, KN_X32_SINT); break;
    case I_LDI:
        x32_member(x, 0, 1, ld, 16, KN_X32_LDOUBLE); break;
    default:
        return -1;
    }
    const predef_t *p = &predefs[idx];
    if (p->size2) /* the second member of a pair: int, or the first's type */
        x32_member(x, (unsigned)p->off2, 1, p->size2, p->size2,
                   idx == I_2REAL || idx == I_2DP ? KN_X32_FLOAT : KN_X32_SINT);
    for (int i = 0; i < x->n; i++)
        if (x->m[i].cls == KN_X32_LDOUBLE && LDBL_MANT_DIG != 64 && LDBL_MANT_DIG != 113)
            return -1;
    return 0;
}
