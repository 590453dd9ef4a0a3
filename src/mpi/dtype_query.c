/*
 * Datatype queries (size, extents, envelope and contents, names,
 * match_size), element counts along the typemap, and the pack calls:
 * MPI_Pack/Unpack/Pack_size and their external32 forms.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

