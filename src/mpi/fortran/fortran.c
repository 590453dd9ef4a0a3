/*
 * The hand-written part of the Fortran binding: the sentinels' common
 * blocks, the argument conversions the generated wrappers call
 * (fortran.h), and the attribute keyvals, whose Fortran callbacks take
 * every argument by reference and so need C trampolines.
 */
#include <string.h>

#include "mpi/fortran/fortran.h"
#include "mpi/mpi_impl.h"

/* gfortran aligns common blocks to 16 bytes; the definitions match so that
 * the linker has nothing to say */
#define KF_COMMON __attribute__((aligned(16)))
MPI_Fint knit_mpif_bottom_ KF_COMMON, knit_mpif_in_place_ KF_COMMON;
MPI_Fint knit_mpif_status_ignore_[KF_STATUS_SIZE] KF_COMMON;
MPI_Fint knit_mpif_statuses_ignore_[KF_STATUS_SIZE] KF_COMMON;
MPI_Fint knit_mpif_unweighted_[1] KF_COMMON, knit_mpif_weights_empty_[1] KF_COMMON;
MPI_Status kf_nomem_status;

int kf_nomem(const char *fn)
{
    return kn_mpi_error(NULL, fn, MPI_ERR_NO_MEM, "out of memory converting the Fortran arguments");
}

/* ----------------------------------------------------------- statuses */

MPI_Status *kf_status_in(MPI_Fint *f, MPI_Status *c)
{
    if (f == knit_mpif_status_ignore_ || f == knit_mpif_statuses_ignore_)
        return MPI_STATUS_IGNORE;
    memcpy(c, f, sizeof(*c));
    return c;
}

void kf_status_out(MPI_Fint *f, const MPI_Status *c)
{
    if (c)
        memcpy(f, c, sizeof(*c));
}

MPI_Status *kf_statuses_in(MPI_Fint *f, MPI_Fint n, MPI_Status *buf)
{
    if (f == knit_mpif_statuses_ignore_ || f == knit_mpif_status_ignore_)
        return MPI_STATUSES_IGNORE;
    if (n <= 0)
        return buf;
    MPI_Status *c = n <= KF_NSTAT ? buf : malloc((size_t)n * sizeof(MPI_Status));
    if (!c)
        return KF_NOMEM;
    /* copied in so that the entries a call leaves alone (Waitsome's
     * beyond outcount) come back unchanged */
    memcpy(c, f, (size_t)n * sizeof(MPI_Status));
    return c;
}

void kf_statuses_out(MPI_Fint *f, MPI_Status *c, MPI_Fint n, MPI_Status *buf)
{
    if (!c)
        return;
    if (n > 0)
        memcpy(f, c, (size_t)n * sizeof(MPI_Status));
    if (c != buf)
        free(c);
}

/* ------------------------------------------------------------ strings */

char *kf_str_in(const char *f, size_t flen)
{
    while (flen > 0 && f[flen - 1] == ' ')
        flen--;
    char *c = malloc(flen + 1);
    if (c) {
        memcpy(c, f, flen);
        c[flen] = 0;
    }
    return c;
}

char *kf_str_buf(MPI_Fint n)
{
    char *c = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (c)
        c[0] = 0;
    return c;
}

void kf_str_pad(char *f, size_t flen, const char *c)
{
    size_t n = strlen(c);
    if (n > flen)
        n = flen;
    memcpy(f, c, n);
    memset(f + n, ' ', flen - n);
}

int kf_str_out(const char *fn, char *f, size_t flen, const char *c)
{
    kf_str_pad(f, flen, c);
    size_t n = strlen(c);
    if (n > flen)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG,
                            "the Fortran string has %zu characters, the result %zu (\"%s\")", flen, n, c);
    return MPI_SUCCESS;
}

/* ---------------------------------------------- MPI-1 INTEGER addresses */

MPI_Aint *kf_aints(const MPI_Fint *f, MPI_Fint n)
{
    MPI_Aint *a = malloc((size_t)(n > 0 ? n : 1) * sizeof(MPI_Aint));
    if (a)
        for (MPI_Fint i = 0; i < n; i++)
            a[i] = f[i];
    return a;
}

int kf_aint_to_fint(const char *fn, MPI_Aint v, MPI_Fint *out)
{
    if (v < INT32_MIN || v > INT32_MAX)
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG,
                            "%ld does not fit in a default INTEGER: use the MPI-2 form (INTEGER(KIND=MPI_ADDRESS_KIND))",
                            (long)v);
    *out = (MPI_Fint)v;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- attributes */

MPI_Aint kf_attr_value(char obj, int keyval, void *p)
{
    if (obj == 'c' || obj == 'a') {
        switch (keyval) {
        case MPI_TAG_UB: case MPI_HOST: case MPI_IO: case MPI_WTIME_IS_GLOBAL:
        case MPI_UNIVERSE_SIZE: case MPI_LASTUSEDCODE: case MPI_APPNUM:
            return *(int *)p;
        }
    } else if (obj == 'w') {
        switch (keyval) {
        case MPI_WIN_SIZE: return *(MPI_Aint *)p;
        case MPI_WIN_DISP_UNIT: case MPI_WIN_CREATE_FLAVOR: case MPI_WIN_MODEL: return *(int *)p;
        }
    }
    return (MPI_Aint)p; /* what the program stored (MPI_WIN_BASE: the address) */
}

/* Fortran attribute callbacks: every argument by reference; values and
 * extra state are INTEGER(KIND=MPI_ADDRESS_KIND), default INTEGER in the
 * MPI-1 forms (MPI_KEYVAL_CREATE). */
typedef void fcopy_t(MPI_Fint *old, MPI_Fint *keyval, void *extra, void *in, void *out, MPI_Fint *flag,
                     MPI_Fint *ierr);
typedef void fdel_t(MPI_Fint *obj, MPI_Fint *keyval, void *val, void *extra, MPI_Fint *ierr);

/* A keyval's Fortran side, the extra state the C keyval carries.  Never
 * freed: the C keyval may outlive MPI_*_FREE_KEYVAL while objects still
 * carry its attributes, and a few bytes per keyval are cheap. */
typedef struct {
    fcopy_t *copy;
    fdel_t *del;
    MPI_Aint extra;
    MPI_Fint extra1; /* the MPI-1 form's INTEGER extra state */
    int mpi1;
} fkv_t;

static int tr_copy(int old, int keyval, void *extra, void *in, void *out, int *flag)
{
    fkv_t *k = extra;
    MPI_Fint o = old, kv = keyval, fl = KF_FALSE, ierr = MPI_SUCCESS;
    if (k->mpi1) {
        MPI_Fint vin = (MPI_Fint)(MPI_Aint)in, vout = 0;
        k->copy(&o, &kv, &k->extra1, &vin, &vout, &fl, &ierr);
        if (fl)
            *(void **)out = (void *)(MPI_Aint)vout;
    } else {
        MPI_Aint vin = (MPI_Aint)in, vout = 0;
        k->copy(&o, &kv, &k->extra, &vin, &vout, &fl, &ierr);
        if (fl)
            *(void **)out = (void *)vout;
    }
    *flag = fl != KF_FALSE;
    return ierr;
}

static int tr_del(int obj, int keyval, void *val, void *extra)
{
    fkv_t *k = extra;
    MPI_Fint o = obj, kv = keyval, ierr = MPI_SUCCESS;
    if (k->mpi1) {
        MPI_Fint v = (MPI_Fint)(MPI_Aint)val;
        k->del(&o, &kv, &v, &k->extra1, &ierr);
    } else {
        MPI_Aint v = (MPI_Aint)val;
        k->del(&o, &kv, &v, &k->extra, &ierr);
    }
    return ierr;
}

static fkv_t *fkv_new(fcopy_t *copy, fdel_t *del, MPI_Aint extra, int mpi1)
{
    fkv_t *k = calloc(1, sizeof(*k));
    if (k)
        *k = (fkv_t){copy, del, extra, (MPI_Fint)extra, mpi1};
    return k;
}

#define KEYVAL_CREATE(low, NAME, XT, MPI1)                                                        \
    void low(fcopy_t *copy, fdel_t *del, MPI_Fint *keyval, XT *extra, MPI_Fint *ierr)             \
    {                                                                                           \
        fkv_t *k = fkv_new(copy, del, (MPI_Aint)*extra, MPI1);                                  \
        if (!k) {                                                                               \
            *ierr = kf_nomem(#NAME);                                                            \
            return;                                                                             \
        }                                                                                       \
        *ierr = NAME(tr_copy, tr_del, keyval, k);                                               \
        if (*ierr != MPI_SUCCESS)                                                               \
            free(k);                                                                            \
    }
KEYVAL_CREATE(mpi_comm_create_keyval_, MPI_Comm_create_keyval, MPI_Aint, 0)
KEYVAL_CREATE(mpi_type_create_keyval_, MPI_Type_create_keyval, MPI_Aint, 0)
KEYVAL_CREATE(mpi_win_create_keyval_, MPI_Win_create_keyval, MPI_Aint, 0)
KEYVAL_CREATE(mpi_keyval_create_, MPI_Keyval_create, MPI_Fint, 1)

/* The predefined callbacks, callable from Fortran (EXTERNAL in mpif.h) */
#define NULL_COPY(low)                                                                            \
    void low(MPI_Fint *o, MPI_Fint *kv, void *x, void *in, void *out, MPI_Fint *flag, MPI_Fint *ierr) \
    {                                                                                           \
        (void)o, (void)kv, (void)x, (void)in, (void)out;                                        \
        *flag = KF_FALSE;                                                                       \
        *ierr = MPI_SUCCESS;                                                                    \
    }
#define DUP(low, T)                                                                               \
    void low(MPI_Fint *o, MPI_Fint *kv, void *x, T *in, T *out, MPI_Fint *flag, MPI_Fint *ierr)   \
    {                                                                                           \
        (void)o, (void)kv, (void)x;                                                             \
        *out = *in;                                                                             \
        *flag = KF_TRUE;                                                                        \
        *ierr = MPI_SUCCESS;                                                                    \
    }
#define NULL_DELETE(low)                                                                          \
    void low(MPI_Fint *o, MPI_Fint *kv, void *v, void *x, MPI_Fint *ierr)                         \
    {                                                                                           \
        (void)o, (void)kv, (void)v, (void)x;                                                    \
        *ierr = MPI_SUCCESS;                                                                    \
    }
NULL_COPY(mpi_comm_null_copy_fn_)
NULL_COPY(mpi_type_null_copy_fn_)
NULL_COPY(mpi_win_null_copy_fn_)
NULL_COPY(mpi_null_copy_fn_)
DUP(mpi_comm_dup_fn_, MPI_Aint)
DUP(mpi_type_dup_fn_, MPI_Aint)
DUP(mpi_win_dup_fn_, MPI_Aint)
DUP(mpi_dup_fn_, MPI_Fint)
NULL_DELETE(mpi_comm_null_delete_fn_)
NULL_DELETE(mpi_type_null_delete_fn_)
NULL_DELETE(mpi_win_null_delete_fn_)
NULL_DELETE(mpi_null_delete_fn_)
