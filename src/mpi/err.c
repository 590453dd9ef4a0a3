/* MPI error classes, strings and error handlers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/mpi_impl.h"

static const char *const class_text[] = {
    [MPI_SUCCESS] = "MPI_SUCCESS: no error",
    [MPI_ERR_BUFFER] = "MPI_ERR_BUFFER: invalid buffer pointer",
    [MPI_ERR_COUNT] = "MPI_ERR_COUNT: invalid count argument",
    [MPI_ERR_TYPE] = "MPI_ERR_TYPE: invalid datatype",
    [MPI_ERR_TAG] = "MPI_ERR_TAG: invalid tag",
    [MPI_ERR_COMM] = "MPI_ERR_COMM: invalid communicator",
    [MPI_ERR_RANK] = "MPI_ERR_RANK: invalid rank",
    [MPI_ERR_REQUEST] = "MPI_ERR_REQUEST: invalid request",
    [MPI_ERR_ROOT] = "MPI_ERR_ROOT: invalid root",
    [MPI_ERR_GROUP] = "MPI_ERR_GROUP: invalid group",
    [MPI_ERR_OP] = "MPI_ERR_OP: invalid reduce operation",
    [MPI_ERR_TOPOLOGY] = "MPI_ERR_TOPOLOGY: invalid communicator topology",
    [MPI_ERR_DIMS] = "MPI_ERR_DIMS: invalid dimension argument",
    [MPI_ERR_ARG] = "MPI_ERR_ARG: invalid argument",
    [MPI_ERR_UNKNOWN] = "MPI_ERR_UNKNOWN: unknown error",
    [MPI_ERR_TRUNCATE] = "MPI_ERR_TRUNCATE: message truncated",
    [MPI_ERR_OTHER] = "MPI_ERR_OTHER: other error",
    [MPI_ERR_INTERN] = "MPI_ERR_INTERN: internal error",
    [MPI_ERR_IN_STATUS] = "MPI_ERR_IN_STATUS: error code is in status",
    [MPI_ERR_PENDING] = "MPI_ERR_PENDING: pending request",
    [MPI_ERR_KEYVAL] = "MPI_ERR_KEYVAL: invalid keyval",
    [MPI_ERR_NO_MEM] = "MPI_ERR_NO_MEM: out of memory",
    [MPI_ERR_BASE] = "MPI_ERR_BASE: invalid base address",
    [MPI_ERR_INFO_KEY] = "MPI_ERR_INFO_KEY: invalid info key",
    [MPI_ERR_INFO_VALUE] = "MPI_ERR_INFO_VALUE: invalid info value",
    [MPI_ERR_INFO_NOKEY] = "MPI_ERR_INFO_NOKEY: no such info key",
    [MPI_ERR_SPAWN] = "MPI_ERR_SPAWN: could not spawn processes",
    [MPI_ERR_PORT] = "MPI_ERR_PORT: invalid port name",
    [MPI_ERR_SERVICE] = "MPI_ERR_SERVICE: invalid service name",
    [MPI_ERR_NAME] = "MPI_ERR_NAME: invalid name",
    [MPI_ERR_WIN] = "MPI_ERR_WIN: invalid window",
    [MPI_ERR_SIZE] = "MPI_ERR_SIZE: invalid size",
    [MPI_ERR_DISP] = "MPI_ERR_DISP: invalid displacement",
    [MPI_ERR_INFO] = "MPI_ERR_INFO: invalid info object",
    [MPI_ERR_LOCKTYPE] = "MPI_ERR_LOCKTYPE: invalid lock type",
    [MPI_ERR_ASSERT] = "MPI_ERR_ASSERT: invalid assert",
    [MPI_ERR_RMA_CONFLICT] = "MPI_ERR_RMA_CONFLICT: conflicting accesses to a window",
    [MPI_ERR_RMA_SYNC] = "MPI_ERR_RMA_SYNC: wrong synchronization of RMA calls",
    [MPI_ERR_FILE] = "MPI_ERR_FILE: invalid file handle",
    [MPI_ERR_NOT_SAME] = "MPI_ERR_NOT_SAME: arguments differ between processes",
    [MPI_ERR_AMODE] = "MPI_ERR_AMODE: invalid access mode",
    [MPI_ERR_UNSUPPORTED_DATAREP] = "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation",
    [MPI_ERR_UNSUPPORTED_OPERATION] = "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported by knit",
    [MPI_ERR_NO_SUCH_FILE] = "MPI_ERR_NO_SUCH_FILE: no such file",
    [MPI_ERR_FILE_EXISTS] = "MPI_ERR_FILE_EXISTS: file exists",
    [MPI_ERR_BAD_FILE] = "MPI_ERR_BAD_FILE: invalid file name",
    [MPI_ERR_ACCESS] = "MPI_ERR_ACCESS: permission denied",
    [MPI_ERR_NO_SPACE] = "MPI_ERR_NO_SPACE: no space left",
    [MPI_ERR_QUOTA] = "MPI_ERR_QUOTA: quota exceeded",
    [MPI_ERR_READ_ONLY] = "MPI_ERR_READ_ONLY: read-only file or file system",
    [MPI_ERR_FILE_IN_USE] = "MPI_ERR_FILE_IN_USE: file in use",
    [MPI_ERR_DUP_DATAREP] = "MPI_ERR_DUP_DATAREP: data representation already defined",
    [MPI_ERR_CONVERSION] = "MPI_ERR_CONVERSION: data conversion failed",
    [MPI_ERR_IO] = "MPI_ERR_IO: I/O error",
    [MPI_ERR_RMA_RANGE] = "MPI_ERR_RMA_RANGE: target memory outside the window",
    [MPI_ERR_RMA_ATTACH] = "MPI_ERR_RMA_ATTACH: memory cannot be attached",
    [MPI_ERR_RMA_SHARED] = "MPI_ERR_RMA_SHARED: memory cannot be shared",
    [MPI_ERR_RMA_FLAVOR] = "MPI_ERR_RMA_FLAVOR: wrong window flavor",
    [MPI_ERR_SESSION] = "MPI_ERR_SESSION: invalid session",
    [MPI_ERR_PROC_ABORTED] = "MPI_ERR_PROC_ABORTED: a peer process aborted or failed",
    [MPI_ERR_VALUE_TOO_LARGE] = "MPI_ERR_VALUE_TOO_LARGE: value too large for the output argument",
    [MPI_ERR_REVOKED] = "MPI_ERR_REVOKED: communicator revoked",
    [MPI_ERR_PROC_FAILED] = "MPI_ERR_PROC_FAILED: process failed",
    [MPI_ERR_PROC_FAILED_PENDING] = "MPI_ERR_PROC_FAILED_PENDING: process failed, request pending",
};

const char *kn_mpi_class_text(int cls)
{
    if (cls < 0 || cls > MPI_ERR_LASTCODE || !class_text[cls])
        return "MPI_ERR_UNKNOWN: unknown error code";
    return class_text[cls];
}

int kn_mpi_class_of(knit_status_t st)
{
    switch (st) {
    case KNIT_OK: return MPI_SUCCESS;
    case KNIT_ERR_INVAL: return MPI_ERR_ARG;
    case KNIT_ERR_NOMEM: return MPI_ERR_NO_MEM;
    case KNIT_ERR_TRUNCATE: return MPI_ERR_TRUNCATE;
    case KNIT_ERR_PEER: return MPI_ERR_PROC_ABORTED;
    case KNIT_ERR_NOT_SUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case KNIT_ERR_RANGE: return MPI_ERR_ARG;
    case KNIT_ERR_FAULT: return MPI_ERR_BUFFER;
    default: return MPI_ERR_OTHER;
    }
}

/* Errors tied to no object go to MPI_COMM_SELF's handler (MPI-4), or to
 * MPI_COMM_WORLD's when the program only ever set that one (what programs
 * written for MPI-3 implementations expect). */
static kn_mpi_comm_t *default_comm(void)
{
    kn_mpi_comm_t *c = NULL;
    if (kn_mpi.self_errh_set)
        c = kn_mpi_tbl_get(&kn_mpi.comms, MPI_COMM_SELF);
    if (!c)
        c = kn_mpi_tbl_get(&kn_mpi.comms, MPI_COMM_WORLD);
    return c;
}

/* secondary: the error comes from another process's failure, which that
 * process reports itself (knit_abort_secondary lets its report win) */
static void die(const char *msg, int secondary) __attribute__((noreturn));
static void die(const char *msg, int secondary)
{
    /* after a failed MPI_Init knit still reaches knitrun (knit_init_quiet) */
    if (kn_mpi.ctx || kn_mpi.init_failed) {
        if (secondary)
            knit_abort_secondary(kn_mpi.ctx, 1, msg);
        knit_abort(kn_mpi.ctx, 1, msg);
    }
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    _exit(1);
}

static int caused_by_peer(knit_status_t st)
{
    return st == KNIT_ERR_PEER || st == KNIT_ERR_PEER_FAULT;
}

/* The handler errh of the object with handle h (a communicator's or a
 * window's: both user handlers take a pointer to the handle first). */
static int verror_h(MPI_Errhandler errh, int h, const char *fn, int cls, int secondary, const char *fmt, va_list ap)
{
    kn_mpi_errh_t *eh = kn_mpi_tbl_get(&kn_mpi.errhs, errh);
    int kind = eh ? eh->kind : 0;
    if (kind == 1)
        return cls;
    if (kind == 3) {
        int e = cls;
        eh->fn(&h, &e);
        return cls;
    }
    char detail[768], msg[1024];
    vsnprintf(detail, sizeof(detail), fmt, ap);
    snprintf(msg, sizeof(msg), "%s: %s: %s", fn, kn_mpi_class_text(cls), detail);
    die(msg, secondary);
}

static int verror(kn_mpi_comm_t *c, const char *fn, int cls, int secondary, const char *fmt, va_list ap)
{
    if (!c && kn_mpi.initialized && !kn_mpi.finalized)
        c = default_comm();
    return verror_h(c ? c->errh : MPI_ERRHANDLER_NULL, c ? c->handle : MPI_COMM_NULL, fn, cls, secondary, fmt, ap);
}

int kn_mpi_error_h(MPI_Errhandler errh, int h, const char *fn, int cls, knit_status_t cause, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = verror_h(errh, h, fn, cls, caused_by_peer(cause), fmt, ap);
    va_end(ap);
    return r;
}

int kn_mpi_error(kn_mpi_comm_t *c, const char *fn, int cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = verror(c, fn, cls, 0, fmt, ap);
    va_end(ap);
    return r;
}

int kn_mpi_error_st(kn_mpi_comm_t *c, const char *fn, knit_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = verror(c, fn, kn_mpi_class_of(st), caused_by_peer(st), fmt, ap);
    va_end(ap);
    return r;
}

int kn_mpi_error_cause(kn_mpi_comm_t *c, const char *fn, int cls, knit_status_t cause, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = verror(c, fn, cls, caused_by_peer(cause), fmt, ap);
    va_end(ap);
    return r;
}

int kn_mpi_not_ready(const char *fn)
{
    char msg[256];
    snprintf(msg, sizeof(msg), "%s: %s: called %s", fn, kn_mpi_class_text(MPI_ERR_OTHER),
             kn_mpi.finalized ? "after MPI_Finalize" : "before MPI_Init");
    die(msg, 0);
}

/* ------------------------------------------------------------ public */

int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
    if (!string || !resultlen)
        return MPI_ERR_ARG;
    if (errorcode < 0 || errorcode > MPI_ERR_LASTCODE)
        return MPI_ERR_ARG;
    snprintf(string, MPI_MAX_ERROR_STRING, "%s", kn_mpi_class_text(errorcode));
    *resultlen = (int)strlen(string);
    return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int *errorclass)
{
    if (!errorclass)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "errorclass is NULL");
    if (errorcode < 0 || errorcode > MPI_ERR_LASTCODE)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "error code %d is not one of knit's", errorcode);
    *errorclass = errorcode;
    return MPI_SUCCESS;
}

static kn_mpi_errh_t *errh_arg(MPI_Errhandler h, const char *fn, int *err)
{
    kn_mpi_errh_t *e = kn_mpi_tbl_get(&kn_mpi.errhs, h);
    if (!e)
        *err = kn_mpi_error(NULL, fn, MPI_ERR_ARG, "invalid error handler 0x%x", (unsigned)h);
    return e;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    KN_MPI_READY();
    int err;
    kn_mpi_comm_t *c = kn_mpi_comm_arg(comm, __func__, &err);
    if (!c)
        return err;
    kn_mpi_errh_t *e = errh_arg(errhandler, __func__, &err);
    if (!e)
        return err;
    e->refs++;
    MPI_Errhandler oldh = c->errh;
    kn_mpi_errh_t *old = kn_mpi_tbl_get(&kn_mpi.errhs, oldh);
    c->errh = errhandler;
    if (old && old->kind == 3 && --old->refs == 0) {
        kn_mpi_tbl_del(&kn_mpi.errhs, oldh);
        free(old);
    }
    if (comm == MPI_COMM_SELF)
        kn_mpi.self_errh_set = 1;
    return MPI_SUCCESS;
}

int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
    return MPI_Comm_set_errhandler(comm, errhandler);
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    if (!errhandler)
        return kn_mpi_error(c, __func__, MPI_ERR_ARG, "errhandler is NULL");
    kn_mpi_errh_t *e = kn_mpi_tbl_get(&kn_mpi.errhs, c->errh);
    if (e)
        e->refs++;
    *errhandler = c->errh;
    return MPI_SUCCESS;
}

int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    return MPI_Comm_get_errhandler(comm, errhandler);
}

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    KN_MPI_READY();
    if (!fn || !errhandler)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "%s is NULL", fn ? "errhandler" : "function");
    kn_mpi_errh_t *e = calloc(1, sizeof(*e));
    int h = e ? kn_mpi_tbl_add(&kn_mpi.errhs, e, -1) : -1;
    if (h < 0) {
        free(e);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "no memory for an error handler");
    }
    e->kind = 3;
    e->fn = fn;
    e->refs = 1;
    *errhandler = h;
    return MPI_SUCCESS;
}

int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    KN_MPI_READY();
    KN_MPI_COMM_ARG(c, comm);
    kn_mpi_error(c, __func__, errorcode, "called by the program");
    return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    KN_MPI_READY();
    int err;
    if (!errhandler)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "errhandler is NULL");
    kn_mpi_errh_t *e = errh_arg(*errhandler, __func__, &err);
    if (!e)
        return err;
    if (e->kind != 3) {
        /* predefined handlers: freeing a handle obtained by get is allowed */
        *errhandler = MPI_ERRHANDLER_NULL;
        return MPI_SUCCESS;
    }
    if (--e->refs == 0) {
        kn_mpi_tbl_del(&kn_mpi.errhs, *errhandler);
        free(e);
    }
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

void kn_mpi_errh_retain(MPI_Errhandler h)
{
    kn_mpi_errh_t *e = kn_mpi_tbl_get(&kn_mpi.errhs, h);
    if (e)
        e->refs++;
}

void kn_mpi_errh_release(MPI_Errhandler h)
{
    kn_mpi_errh_t *e = kn_mpi_tbl_get(&kn_mpi.errhs, h);
    if (e && e->kind == 3 && --e->refs == 0) {
        kn_mpi_tbl_del(&kn_mpi.errhs, h);
        free(e);
    }
}

void kn_mpi_errhs_init(void)
{
    static kn_mpi_errh_t predef[3] = {{0, NULL, 1}, {1, NULL, 1}, {2, NULL, 1}};
    for (int i = 0; i < 3; i++)
        kn_mpi_tbl_add(&kn_mpi.errhs, &predef[i], i);
}
