/*
 * fortran.h: what the generated Fortran wrappers (mpif_wrap.c, from
 * gen.py) and fortran.c share.  The binding targets gfortran: lowercase
 * names with one trailing underscore, every argument by reference, the
 * hidden lengths of CHARACTER arguments (size_t) after the last one,
 * LOGICAL .TRUE. = 1 and .FALSE. = 0, default INTEGER = 4 bytes = MPI_Fint.
 *
 * Fortran has no null or (void *)-1 pointers: MPI_BOTTOM, MPI_IN_PLACE,
 * MPI_STATUS(ES)_IGNORE, MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are variables
 * in common blocks that mpif.h and the mpi module declare and fortran.c
 * defines; a wrapper recognizes them by address (as MPICH and Open MPI do).
 */
#ifndef KNIT_MPI_FORTRAN_H
#define KNIT_MPI_FORTRAN_H

#include <stddef.h>
#include <stdlib.h>

#include "mpi.h"

#define KF_TRUE 1
#define KF_FALSE 0
#define KF_STATUS_SIZE 6 /* MPI_STATUS_SIZE: an MPI_Status, as default INTEGERs */
#define KF_NSTAT 16      /* statuses converted on the stack; more are malloc'ed */

_Static_assert(sizeof(MPI_Status) == KF_STATUS_SIZE * sizeof(MPI_Fint), "MPI_STATUS_SIZE");
_Static_assert(offsetof(MPI_Status, MPI_SOURCE) == 0 && offsetof(MPI_Status, MPI_TAG) == sizeof(MPI_Fint) &&
                   offsetof(MPI_Status, MPI_ERROR) == 2 * sizeof(MPI_Fint),
               "MPI_SOURCE, MPI_TAG, MPI_ERROR are status(1), (2), (3) in Fortran");

/* the common blocks /KNIT_MPIF_BOTTOM/ & co */
extern MPI_Fint knit_mpif_bottom_, knit_mpif_in_place_;
extern MPI_Fint knit_mpif_status_ignore_[KF_STATUS_SIZE], knit_mpif_statuses_ignore_[KF_STATUS_SIZE];
extern MPI_Fint knit_mpif_unweighted_[1], knit_mpif_weights_empty_[1];

/* a choice buffer: the Fortran sentinels become the C constants */
static inline void *kf_buf(void *p)
{
    if (p == (void *)&knit_mpif_bottom_)
        return MPI_BOTTOM;
    if (p == (void *)&knit_mpif_in_place_)
        return MPI_IN_PLACE;
    return p;
}

static inline int *kf_weights(MPI_Fint *w)
{
    if (w == knit_mpif_unweighted_)
        return MPI_UNWEIGHTED;
    if (w == knit_mpif_weights_empty_)
        return MPI_WEIGHTS_EMPTY;
    return w;
}

/* One status: NULL (MPI_STATUS_IGNORE) or c filled from the Fortran array
 * (which need not be aligned as an MPI_Status). */
MPI_Status *kf_status_in(MPI_Fint *f, MPI_Status *c);
void kf_status_out(MPI_Fint *f, const MPI_Status *c);
/* n statuses: NULL (MPI_STATUSES_IGNORE), buf (n <= KF_NSTAT), a malloc'ed
 * array, or KF_NOMEM; kf_statuses_out copies back and frees. */
extern MPI_Status kf_nomem_status;
#define KF_NOMEM (&kf_nomem_status)
MPI_Status *kf_statuses_in(MPI_Fint *f, MPI_Fint n, MPI_Status *buf);
void kf_statuses_out(MPI_Fint *f, MPI_Status *c, MPI_Fint n, MPI_Status *buf);

/* Strings.  In: a malloc'ed C copy without the trailing blanks (NULL when
 * out of memory).  Out: c blank-padded into the Fortran string f of flen
 * characters; kf_str_out raises MPI_ERR_ARG from fn when c does not fit,
 * kf_str_pad cuts it (MPI_Info_get_string reports the length). */
char *kf_str_in(const char *f, size_t flen);
char *kf_str_buf(MPI_Fint n);
int kf_str_out(const char *fn, char *f, size_t flen, const char *c);
void kf_str_pad(char *f, size_t flen, const char *c);

/* MPI-1 forms with default INTEGER addresses: a malloc'ed MPI_Aint copy
 * of n values (NULL when out of memory); an address back into an
 * INTEGER, MPI_ERR_ARG from fn when it does not fit. */
MPI_Aint *kf_aints(const MPI_Fint *f, MPI_Fint n);
int kf_aint_to_fint(const char *fn, MPI_Aint v, MPI_Fint *out);

/* An attribute's value as Fortran sees it: the integer that was stored,
 * or the value of a predefined attribute (C gives a pointer to it).
 * obj: 'c' or 'a' a communicator, 't' a datatype, 'w' a window. */
MPI_Aint kf_attr_value(char obj, int keyval, void *p);

/* MPI_ERR_NO_MEM from fn, through the error handler */
int kf_nomem(const char *fn);

#endif
