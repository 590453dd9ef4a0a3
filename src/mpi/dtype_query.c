/*
 * Datatype queries (size, extents, envelope and contents, names,
 * match_size), element counts along the typemap, and the pack calls:
 * MPI_Pack/Unpack/Pack_size and their external32 forms.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>

#include "mpi/dtype_int.h"

/* ------------------------------------------------------------- queries */

#define TYPE_QUERY_START()                           \
    KN_MPI_READY();                                  \
    int err;                                         \
    kn_mpi_type_t *t = kn_mpi_type_any(datatype, __func__, &err); \
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

/* ---------------------------------------------------------- external32 */

/*
 * MPI_Pack_external packs natively (kn_mpi_pack) and converts the packed
 * bytes value by value; MPI_Unpack_external converts into native packed
 * bytes and unpacks.  The values' types come from a walk of the
 * constructor contents: a type made of one predefined type (t->prim) is
 * one run of it, whatever its count; struct walks its blocks.
 */

typedef struct x32_walk {
    const char *in;
    char *out;
    int to_ext;             /* native -> external32, or back */
} x32_walk_t;

static size_t get_uint(const unsigned char *p, size_t n, int big)
{
    size_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (size_t)p[big ? n - 1 - i : i] << (8 * i);
    return v;
}

static void put_uint(unsigned char *p, size_t n, size_t v, int big)
{
    for (size_t i = 0; i < n; i++)
        p[big ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

static const int host_big = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

/* one value: nat native bytes <-> ext big-endian bytes */
static void x32_value(x32_walk_t *w, size_t nat, size_t ext, int cls)
{
    const unsigned char *s = (const unsigned char *)w->in;
    unsigned char *d = (unsigned char *)w->out;
    size_t from = w->to_ext ? nat : ext, to = w->to_ext ? ext : nat;
    switch (cls) {
    case KN_X32_UINT:
    case KN_X32_SINT: {
        size_t v = get_uint(s, from, w->to_ext ? host_big : 1);
        if (cls == KN_X32_SINT && from < sizeof(v) && to > from && (v >> (8 * from - 1)) & 1)
            v |= ~(size_t)0 << (8 * from); /* sign-extend */
        put_uint(d, to, v, w->to_ext ? 1 : host_big);
        break;
    }
    case KN_X32_FLOAT: /* the same IEEE format: byte order only */
        for (size_t i = 0; i < to; i++)
            d[i] = host_big ? s[i] : s[to - 1 - i];
        break;
    default: { /* long double <-> IEEE binary128 */
#if LDBL_MANT_DIG == 113
        for (size_t i = 0; i < 16; i++)
            d[i] = host_big ? s[i] : s[15 - i];
#elif LDBL_MANT_DIG == 64
        /* x87 extended: 64-bit significand with its integer bit, 15-bit
         * exponent of the same bias as binary128's */
        if (w->to_ext) {
            uint64_t mant = (uint64_t)get_uint(s, 8, 0);
            uint64_t se = (uint64_t)get_uint(s + 8, 2, 0);
            uint64_t hi = se << 48 | (mant & 0x7fffffffffffffffull) >> 15;
            uint64_t lo = mant << 49;
            put_uint(d, 8, (size_t)hi, 1);
            put_uint(d + 8, 8, (size_t)lo, 1);
        } else {
            uint64_t hi = (uint64_t)get_uint(s, 8, 1), lo = (uint64_t)get_uint(s + 8, 8, 1);
            uint64_t se = hi >> 48, exp = se & 0x7fff;
            uint64_t mant = (exp ? 1ull << 63 : 0) | (hi & 0xffffffffffffull) << 15 | lo >> 49;
            memset(d, 0, nat);
            put_uint(d, 8, (size_t)mant, 0);
            put_uint(d + 8, 2, (size_t)se, 0);
        }
#endif
        break;
    }
    }
    w->in += from;
    w->out += to;
}

/* n values of predefined type idx, packed natively one after another */
static void x32_prim(x32_walk_t *w, int idx, size_t n)
{
    kn_x32_t x;
    kn_mpi_x32(idx, &x); /* checked by x32_size */
    for (size_t k = 0; k < n; k++)
        for (int m = 0; m < x.n; m++)
            for (int p = 0; p < x.m[m].parts; p++)
                x32_value(w, x.m[m].nat, x.m[m].ext, x.m[m].cls);
}

static const kn_mpi_type_t *content(const kn_mpi_type_t *t, int i)
{
    return kn_mpi_tbl_get(&kn_mpi.types, t->types[i]);
}

/* reps copies of t */
static void x32_type(x32_walk_t *w, const kn_mpi_type_t *t, size_t reps)
{
    if (!t->size || !reps)
        return;
    if (t->prim) {
        x32_prim(w, t->prim, reps * (t->size / kn_mpi_predef(t->prim)->size));
    } else if (t->combiner == MPI_COMBINER_STRUCT) {
        for (size_t r = 0; r < reps; r++)
            for (int i = 0; i < t->nt; i++)
                x32_type(w, content(t, i), (size_t)t->ints[1 + i]);
    } else {
        const kn_mpi_type_t *o = content(t, 0);
        x32_type(w, o, reps * (t->size / o->size));
    }
}

/* external32 bytes of one t; -1: a part has no external32 form */
static MPI_Count x32_size(const kn_mpi_type_t *t)
{
    if (!t->size)
        return 0;
    if (t->prim) {
        kn_x32_t x;
        if (kn_mpi_x32(t->prim, &x) < 0)
            return -1;
        MPI_Count one = 0;
        for (int m = 0; m < x.n; m++)
            one += (MPI_Count)x.m[m].parts * x.m[m].ext;
        return one * (MPI_Count)(t->size / kn_mpi_predef(t->prim)->size);
    }
    if (t->combiner == MPI_COMBINER_STRUCT) {
        MPI_Count s = 0;
        for (int i = 0; i < t->nt; i++) {
            MPI_Count k = x32_size(content(t, i));
            if (k < 0)
                return -1;
            s += k * t->ints[1 + i];
        }
        return s;
    }
    const kn_mpi_type_t *o = content(t, 0);
    MPI_Count k = x32_size(o);
    return k < 0 ? -1 : k * (MPI_Count)(t->size / o->size);
}

/* the common checks: a committed type with an external32 form */
static kn_mpi_type_t *x32_args(const char *datarep, MPI_Datatype datatype, int count, MPI_Count *each,
                               const char *fn, int *err)
{
    kn_mpi_type_t *t = kn_mpi_type_arg(NULL, datatype, fn, err);
    if (!t)
        return NULL;
    if (!datarep || strcmp(datarep, "external32") != 0) {
        *err = kn_mpi_error(NULL, fn, MPI_ERR_ARG, "datarep \"%s\" is not \"external32\"", datarep ? datarep : "");
        return NULL;
    }
    if (count < 0) {
        *err = kn_mpi_error(NULL, fn, MPI_ERR_COUNT, "count %d is negative", count);
        return NULL;
    }
    if ((*each = x32_size(t)) < 0) {
        char label[200];
        *err = kn_mpi_error(NULL, fn, MPI_ERR_TYPE, "datatype %s has a part with no external32 form",
                            kn_mpi_type_label(t, label, sizeof(label)));
        return NULL;
    }
    return t;
}

int MPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype, MPI_Aint *size)
{
    KN_MPI_READY();
    int err;
    MPI_Count each;
    kn_mpi_type_t *t = x32_args(datarep, datatype, incount, &each, __func__, &err);
    if (!t)
        return err;
    if (!size)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "size is NULL");
    *size = (MPI_Aint)(each * incount);
    return MPI_SUCCESS;
}

int MPI_Pack_external(const char datarep[], const void *inbuf, int incount, MPI_Datatype datatype,
                      void *outbuf, MPI_Aint outsize, MPI_Aint *position)
{
    KN_MPI_READY();
    int err;
    MPI_Count each;
    kn_mpi_type_t *t = x32_args(datarep, datatype, incount, &each, __func__, &err);
    if (!t)
        return err;
    if (!position || outsize < 0 || *position < 0)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "invalid position or outsize");
    if (kn_mpi_bad_buffer(inbuf, incount, t))
        return kn_mpi_error(NULL, __func__, MPI_ERR_BUFFER, "inbuf is NULL with %d elements", incount);
    MPI_Count need = each * incount;
    if (*position + need > outsize)
        return kn_mpi_error(NULL, __func__, MPI_ERR_TRUNCATE, "%lld bytes do not fit at position %ld of %ld",
                            need, (long)*position, (long)outsize);
    if (!need)
        return MPI_SUCCESS;
    if (!outbuf)
        return kn_mpi_error(NULL, __func__, MPI_ERR_BUFFER, "outbuf is NULL");
    char *tmp = malloc((size_t)incount * t->size);
    if (!tmp)
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    kn_mpi_pack(t, inbuf, (size_t)incount, tmp);
    x32_walk_t w = {tmp, (char *)outbuf + *position, 1};
    x32_type(&w, t, (size_t)incount);
    free(tmp);
    *position += (MPI_Aint)need;
    return MPI_SUCCESS;
}

int MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize, MPI_Aint *position,
                        void *outbuf, int outcount, MPI_Datatype datatype)
{
    KN_MPI_READY();
    int err;
    MPI_Count each;
    kn_mpi_type_t *t = x32_args(datarep, datatype, outcount, &each, __func__, &err);
    if (!t)
        return err;
    if (!position || insize < 0 || *position < 0)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "invalid position or insize");
    if (kn_mpi_bad_buffer(outbuf, outcount, t))
        return kn_mpi_error(NULL, __func__, MPI_ERR_BUFFER, "outbuf is NULL with %d elements", outcount);
    MPI_Count need = each * outcount;
    if (*position + need > insize)
        return kn_mpi_error(NULL, __func__, MPI_ERR_TRUNCATE, "%lld bytes wanted at position %ld of %ld", need,
                            (long)*position, (long)insize);
    if (!need)
        return MPI_SUCCESS;
    if (!inbuf)
        return kn_mpi_error(NULL, __func__, MPI_ERR_BUFFER, "inbuf is NULL");
    size_t bytes = (size_t)outcount * t->size;
    char *tmp = malloc(bytes);
    if (!tmp)
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    x32_walk_t w = {(const char *)inbuf + *position, tmp, 0};
    x32_type(&w, t, (size_t)outcount);
    kn_mpi_unpack(t, tmp, bytes, outbuf, (size_t)outcount);
    free(tmp);
    *position += (MPI_Aint)need;
    return MPI_SUCCESS;
}
