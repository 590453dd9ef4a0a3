/*
 * ARMCI one-sided operations: contiguous, strided and vector put / get /
 * accumulate, blocking and nonblocking, the value forms, completion
 * (handles, fences) and read-modify-write.
 *
 * Every call converts ARMCI's arguments (int counts and strides, an op
 * code, a remote address) into knit's (int64_t arrays, knit_rma_acc_t, a
 * window and a rank) and makes one knit call per region its remote memory
 * lies in.  A nonblocking call keeps what knit reads until completion (the
 * converted arrays, a copy of the scale) in its operation record, so the
 * caller's may go away at once.
 */
#include <stdlib.h>
#include <string.h>

#include "armci/armci_impl.h"

enum { OP_PUT, OP_GET, OP_ACC };

static const char *const kind_verb[] = {"put", "get", "accumulate"};

static int check_proc(const char *fn, int proc)
{
    if (proc < 0 || proc >= kn_armci.nproc)
        return kn_armci_err(fn, KNIT_ERR_INVAL, "process %d out of range [0, %d)", proc, kn_armci.nproc);
    return 0;
}

/* ARMCI's accumulate op code -> knit's element type and size */
static int acc_setup(const char *fn, int optype, const void *scale, kn_armci_op_t *op, size_t *elem)
{
    knit_dtype_t t;
    switch (optype) {
    case ARMCI_ACC_INT: t = KNIT_INT; break;
    case ARMCI_ACC_LNG: t = KNIT_LONG; break;
    case ARMCI_ACC_FLT: t = KNIT_FLOAT; break;
    case ARMCI_ACC_DBL: t = KNIT_DOUBLE; break;
    case ARMCI_ACC_CPL: t = KNIT_FLOAT_COMPLEX; break;
    case ARMCI_ACC_DCP: t = KNIT_DOUBLE_COMPLEX; break;
    default:
        return kn_armci_err(fn, KNIT_ERR_INVAL, "unknown accumulate op code %d", optype);
    }
    *elem = knit_dtype_size(t);
    op->acc.dtype = t;
    op->acc.op = KNIT_OP_SUM;
    op->acc.scale = NULL;
    if (scale) {
        memcpy(op->scale, scale, *elem);
        op->acc.scale = op->scale;
    }
    return 0;
}

/* ------------------------------------------------- operations in flight */

static void op_link(kn_armci_op_t *op)
{
    op->next = NULL;
    op->prev = kn_armci.ops_tail;
    if (kn_armci.ops_tail)
        kn_armci.ops_tail->next = op;
    else
        kn_armci.ops = op;
    kn_armci.ops_tail = op;
    kn_armci.nops++;
}

static void op_drop(kn_armci_op_t *op)
{
    if (op->prev)
        op->prev->next = op->next;
    else
        kn_armci.ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        kn_armci.ops_tail = op->prev;
    kn_armci.nops--;
    free(op->mem);
    free(op);
}

/* Wait for one record's request (if still open); returns its result. */
static knit_status_t op_finish(kn_armci_op_t *op)
{
    if (op->req) {
        op->status = knit_rma_wait(&op->req);
        op->req = NULL;
    }
    return op->status;
}

knit_status_t kn_armci_complete(int proc, const kn_armci_region_t *reg, int drop_handles)
{
    knit_status_t err = kn_armci.implicit_err;
    kn_armci.implicit_err = 0;
    kn_armci_op_t *next;
    for (kn_armci_op_t *op = kn_armci.ops; op; op = next) {
        next = op->next;
        if ((proc >= 0 && op->proc != proc) || (reg && op->reg != reg))
            continue;
        knit_status_t st = op_finish(op);
        /* a handle's result is ARMCI_Wait's to report */
        if (drop_handles || op->hid == 0) {
            if (st < 0 && err == 0)
                err = st;
            op_drop(op);
        }
    }
    return err;
}

/* Test the records once and free the completed implicit ones, so that a
 * program that never waits does not grow the list without bound. */
static void reap(void)
{
    kn_armci_op_t *next;
    for (kn_armci_op_t *op = kn_armci.ops; op; op = next) {
        next = op->next;
        if (op->req) {
            int done = 0;
            knit_status_t st = knit_rma_test(&op->req, &done);
            if (!done)
                continue;
            op->req = NULL;
            op->status = st;
        }
        if (op->hid == 0) {
            if (op->status < 0 && kn_armci.implicit_err == 0)
                kn_armci.implicit_err = op->status;
            op_drop(op);
        }
    }
}

static int hid_live(unsigned long long id)
{
    /* from the newest: an aggregate handle's last operation is near the end */
    for (kn_armci_op_t *op = kn_armci.ops_tail; op; op = op->prev)
        if (op->hid == id)
            return 1;
    return 0;
}

static knit_status_t wait_hid(unsigned long long id)
{
    knit_status_t err = 0;
    kn_armci_op_t *next;
    for (kn_armci_op_t *op = kn_armci.ops; op; op = next) {
        next = op->next;
        if (op->hid != id)
            continue;
        knit_status_t st = op_finish(op);
        if (st < 0 && err == 0)
            err = st;
        op_drop(op);
    }
    return err;
}

/* The handle id a new operation of hdl gets (0 without a handle). */
static unsigned long long hdl_id(const char *fn, armci_hdl_t *hdl, int proc)
{
    if (!hdl)
        return 0;
    if (hdl->id != 0 && hid_live(hdl->id)) {
        if (hdl->aggregate) {
            hdl->target = proc;
            return hdl->id;
        }
        /* reused before ARMCI_Wait: its earlier operations finish first */
        knit_status_t st = wait_hid(hdl->id);
        if (st < 0)
            kn_armci_err(fn, st, "an earlier operation of this handle failed: %s", knit_strerror(st));
    }
    hdl->id = kn_armci.next_hid++;
    hdl->target = proc;
    return hdl->id;
}

static kn_armci_op_t *op_new(const char *fn)
{
    if (kn_armci.nops >= kn_armci.reap_at) {
        /* again when the list has doubled: operations kept for their
         * handles do not make every call walk the whole list */
        reap();
        kn_armci.reap_at = kn_armci.nops >= 128 ? 2 * kn_armci.nops : 256;
    }
    kn_armci_op_t *op = calloc(1, sizeof(*op));
    if (!op)
        kn_armci_err(fn, KNIT_ERR_NOMEM, "out of memory");
    return op;
}

/* After the knit call of a record: keep it if it is in flight (nb), else
 * report.  The record is freed unless kept. */
static int op_started(const char *fn, kn_armci_op_t *op, knit_status_t st, int nb, int kind)
{
    if (st < 0) {
        kn_armci_err(fn, st, "%s of process %d: %s", kind_verb[kind], op->proc, knit_strerror(st));
        if (nb)
            free(op->mem), free(op);
        return st;
    }
    if (nb) {
        if (op->req)
            op_link(op);
        else
            free(op->mem), free(op);
    }
    return 0;
}

/* ------------------------------------------------------------ contiguous */

static int contig(const char *fn, int kind, int optype, const void *scale, const void *src, void *dst,
                  int bytes, int proc, int nb, armci_hdl_t *hdl, int copy_src)
{
    kn_armci_need_init(fn);
    int rc = check_proc(fn, proc);
    if (rc)
        return rc;
    if (bytes < 0 || (bytes > 0 && (!src || !dst)))
        return kn_armci_err(fn, KNIT_ERR_INVAL, "bad arguments (bytes %d, src %p, dst %p)", bytes, src, dst);
    if (bytes == 0)
        return 0;
    const void *remote = kind == OP_GET ? src : dst;
    kn_armci_region_t *reg = kn_armci_region_of(proc, remote, (size_t)bytes);
    if (!reg)
        return kn_armci_err(fn, KNIT_ERR_RANGE, "%p (%d bytes) of process %d is in no ARMCI_Malloc'ed region",
                            remote, bytes, proc);
    kn_armci_op_t local, *op = &local;
    if (nb && !(op = op_new(fn)))
        return KNIT_ERR_NOMEM;
    memset(op, 0, sizeof(*op));
    op->proc = proc;
    op->reg = reg;
    if (kind == OP_ACC) {
        size_t elem;
        if ((rc = acc_setup(fn, optype, scale, op, &elem)) == 0 && bytes % elem)
            rc = kn_armci_err(fn, KNIT_ERR_INVAL, "%d bytes is not a whole number of %zu-byte elements", bytes,
                              elem);
        if (rc) {
            if (nb)
                free(op);
            return rc;
        }
    }
    if (copy_src) {  /* the NbPutValue forms: the value lives in the record */
        memcpy(op->val, src, (size_t)bytes);
        src = op->val;
    }
    if (nb)
        op->hid = hdl_id(fn, hdl, proc);
    knit_rma_req_t **req = nb ? &op->req : NULL;
    knit_status_t st;
    if (kind == OP_PUT)
        st = knit_put(reg->win, src, dst, (size_t)bytes, proc, KNIT_RMA_LOCAL, req);
    else if (kind == OP_GET)
        st = knit_get(reg->win, dst, src, (size_t)bytes, proc, KNIT_RMA_DEFAULT, req);
    else
        st = knit_acc(reg->win, &op->acc, src, dst, (size_t)bytes, proc, KNIT_RMA_LOCAL, req);
    return op_started(fn, op, st, nb, kind);
}

int ARMCI_Put(void *src, void *dst, int bytes, int proc)
{
    return contig(__func__, OP_PUT, 0, NULL, src, dst, bytes, proc, 0, NULL, 0);
}

int ARMCI_Get(void *src, void *dst, int bytes, int proc)
{
    return contig(__func__, OP_GET, 0, NULL, src, dst, bytes, proc, 0, NULL, 0);
}

int ARMCI_Acc(int optype, void *scale, void *src, void *dst, int bytes, int proc)
{
    return contig(__func__, OP_ACC, optype, scale, src, dst, bytes, proc, 0, NULL, 0);
}

int ARMCI_NbPut(void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl)
{
    return contig(__func__, OP_PUT, 0, NULL, src, dst, bytes, proc, 1, hdl, 0);
}

int ARMCI_NbGet(void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl)
{
    return contig(__func__, OP_GET, 0, NULL, src, dst, bytes, proc, 1, hdl, 0);
}

int ARMCI_NbAcc(int optype, void *scale, void *src, void *dst, int bytes, int proc, armci_hdl_t *hdl)
{
    return contig(__func__, OP_ACC, optype, scale, src, dst, bytes, proc, 1, hdl, 0);
}

/* The flag of the _flag forms: set at proc, behind the data (fenced
 * before), and there when the call returns (it is what proc waits on). */
static int put_flag(const char *fn, int *flag, int value, int proc)
{
    int rc = kn_armci_fence_remote();
    if (!rc)
        rc = contig(fn, OP_PUT, 0, NULL, &value, flag, (int)sizeof(int), proc, 0, NULL, 0);
    return rc ? rc : kn_armci_fence_remote();
}

int ARMCI_Put_flag(void *src, void *dst, int bytes, int *flag, int value, int proc)
{
    /* the put completes locally: the fence puts the data at proc before
     * the flag follows */
    int rc = ARMCI_Put(src, dst, bytes, proc);
    return rc ? rc : put_flag(__func__, flag, value, proc);
}

/* ---------------------------------------------------------------- values */

#define PUT_VALUE(name, type)                                                                  \
    int ARMCI_PutValue##name(type src, void *dst, int proc)                                     \
    {                                                                                          \
        return contig(__func__, OP_PUT, 0, NULL, &src, dst, (int)sizeof(type), proc, 0, NULL, 0); \
    }                                                                                          \
    int ARMCI_NbPutValue##name(type src, void *dst, int proc, armci_hdl_t *hdl)                \
    {                                                                                          \
        return contig(__func__, OP_PUT, 0, NULL, &src, dst, (int)sizeof(type), proc, 1, hdl, 1); \
    }                                                                                          \
    type ARMCI_GetValue##name(void *src, int proc)                                             \
    {                                                                                          \
        type v = 0;                                                                            \
        if (contig(__func__, OP_GET, 0, NULL, src, &v, (int)sizeof(type), proc, 0, NULL, 0))    \
            kn_armci_die(__func__, "cannot read %p of process %d", src, proc);                 \
        return v;                                                                              \
    }
PUT_VALUE(Int, int)
PUT_VALUE(Long, long)
PUT_VALUE(Float, float)
PUT_VALUE(Double, double)

/* --------------------------------------------------------------- strided */

/* Check and convert ARMCI's strided arguments into op; *empty when a
 * count is 0; *extent: the bytes the remote side spans. */
static int strided_args(const char *fn, const int *sstr, const int *dstr, const int *count, int levels,
                        kn_armci_op_t *op, int remote_is_src, int *empty, int64_t *extent)
{
    if (levels < 0 || levels > KNIT_RMA_MAX_LEVELS)
        return kn_armci_err(fn, KNIT_ERR_INVAL, "stride_levels %d outside [0, %d]", levels, KNIT_RMA_MAX_LEVELS);
    if (!count || (levels > 0 && (!sstr || !dstr)))
        return kn_armci_err(fn, KNIT_ERR_INVAL, "NULL count or stride array");
    *empty = 0;
    for (int i = 0; i <= levels; i++) {
        if (count[i] < 0)
            return kn_armci_err(fn, KNIT_ERR_INVAL, "negative count[%d] = %d", i, count[i]);
        if (count[i] == 0)
            *empty = 1;
        op->count[i] = count[i];
    }
    for (int i = 0; i < levels; i++) {
        if (sstr[i] < 0 || dstr[i] < 0)
            return kn_armci_err(fn, KNIT_ERR_INVAL, "negative stride at level %d (src %d, dst %d)", i, sstr[i],
                                dstr[i]);
        op->sstride[i] = sstr[i];
        op->dstride[i] = dstr[i];
    }
    const int64_t *rs = remote_is_src ? op->sstride : op->dstride;
    int64_t ext = count[0];
    for (int i = 0; i < levels && !*empty; i++) {
        int64_t span;
        if (__builtin_mul_overflow(rs[i], (int64_t)count[i + 1] - 1, &span) ||
            __builtin_add_overflow(ext, span, &ext))
            return kn_armci_err(fn, KNIT_ERR_RANGE, "the transfer spans more than 2^63 bytes");
    }
    *extent = ext;
    return 0;
}

static int strided(const char *fn, int kind, int optype, const void *scale, void *src, const int *sstr,
                   void *dst, const int *dstr, const int *count, int levels, int proc, int nb,
                   armci_hdl_t *hdl)
{
    kn_armci_need_init(fn);
    int rc = check_proc(fn, proc);
    if (rc)
        return rc;
    kn_armci_op_t local, *op = &local;
    if (nb && !(op = op_new(fn)))
        return KNIT_ERR_NOMEM;
    memset(op, 0, sizeof(*op));
    op->proc = proc;
    int empty = 0;
    int64_t extent = 0;
    size_t elem = 1;
    rc = strided_args(fn, sstr, dstr, count, levels, op, kind == OP_GET, &empty, &extent);
    if (!rc && kind == OP_ACC && !(rc = acc_setup(fn, optype, scale, op, &elem)) && count[0] % elem)
        rc = kn_armci_err(fn, KNIT_ERR_INVAL, "count[0] = %d is not a whole number of %zu-byte elements",
                          count[0], elem);
    if (!rc && !empty && (!src || !dst))
        rc = kn_armci_err(fn, KNIT_ERR_INVAL, "NULL buffer");
    void *remote = kind == OP_GET ? src : dst;
    if (!rc && !empty && !(op->reg = kn_armci_region_of(proc, remote, (size_t)extent)))
        rc = kn_armci_err(fn, KNIT_ERR_RANGE, "%p (%lld bytes spanned) of process %d is in no ARMCI_Malloc'ed region",
                          remote, (long long)extent, proc);
    if (rc || empty) {
        if (nb)
            free(op);
        return rc;
    }
    if (nb)
        op->hid = hdl_id(fn, hdl, proc);
    knit_rma_req_t **req = nb ? &op->req : NULL;
    knit_win_t *win = op->reg->win;
    knit_status_t st;
    if (kind == OP_PUT)
        st = knit_put_strided(win, src, op->sstride, dst, op->dstride, op->count, levels, proc, KNIT_RMA_LOCAL, req);
    else if (kind == OP_GET)
        st = knit_get_strided(win, dst, op->dstride, src, op->sstride, op->count, levels, proc, KNIT_RMA_DEFAULT, req);
    else
        st = knit_acc_strided(win, &op->acc, src, op->sstride, dst, op->dstride, op->count, levels, proc,
                              KNIT_RMA_LOCAL, req);
    return op_started(fn, op, st, nb, kind);
}

int ARMCI_PutS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
               int stride_levels, int proc)
{
    return strided(__func__, OP_PUT, 0, NULL, src_ptr, src_stride_arr, dst_ptr, dst_stride_arr, count,
                   stride_levels, proc, 0, NULL);
}

int ARMCI_GetS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
               int stride_levels, int proc)
{
    return strided(__func__, OP_GET, 0, NULL, src_ptr, src_stride_arr, dst_ptr, dst_stride_arr, count,
                   stride_levels, proc, 0, NULL);
}

int ARMCI_AccS(int optype, void *scale, void *src_ptr, int src_stride_arr[], void *dst_ptr,
               int dst_stride_arr[], int count[], int stride_levels, int proc)
{
    return strided(__func__, OP_ACC, optype, scale, src_ptr, src_stride_arr, dst_ptr, dst_stride_arr, count,
                   stride_levels, proc, 0, NULL);
}

int ARMCI_NbPutS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
                 int stride_levels, int proc, armci_hdl_t *hdl)
{
    return strided(__func__, OP_PUT, 0, NULL, src_ptr, src_stride_arr, dst_ptr, dst_stride_arr, count,
                   stride_levels, proc, 1, hdl);
}

int ARMCI_NbGetS(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
                 int stride_levels, int proc, armci_hdl_t *hdl)
{
    return strided(__func__, OP_GET, 0, NULL, src_ptr, src_stride_arr, dst_ptr, dst_stride_arr, count,
                   stride_levels, proc, 1, hdl);
}

int ARMCI_NbAccS(int optype, void *scale, void *src_ptr, int src_stride_arr[], void *dst_ptr,
                 int dst_stride_arr[], int count[], int stride_levels, int proc, armci_hdl_t *hdl)
{
    return strided(__func__, OP_ACC, optype, scale, src_ptr, src_stride_arr, dst_ptr, dst_stride_arr, count,
                   stride_levels, proc, 1, hdl);
}

int ARMCI_PutS_flag(void *src_ptr, int src_stride_arr[], void *dst_ptr, int dst_stride_arr[], int count[],
                    int stride_levels, int *flag, int value, int proc)
{
    int rc = ARMCI_PutS(src_ptr, src_stride_arr, dst_ptr, dst_stride_arr, count, stride_levels, proc);
    return rc ? rc : put_flag(__func__, flag, value, proc);
}

/* ---------------------------------------------------------------- vector */

/* One knit vector call: the segments of darr whose remote side lies in
 * reg (taken[] marks those already issued); the descriptors live in
 * op->mem. */
static int vector_group(const char *fn, int kind, const armci_giov_t *darr, int len, kn_armci_region_t *reg,
                        kn_armci_region_t **segreg, kn_armci_op_t *op, int nb)
{
    int niov = 0;
    int64_t nptr = 0;
    for (int e = 0, s = 0; e < len; s += darr[e].bytes ? darr[e].ptr_array_len : 0, e++) {
        int k = 0;
        for (int i = 0; darr[e].bytes && i < darr[e].ptr_array_len; i++)
            k += segreg[s + i] == reg;
        niov += k > 0;
        nptr += k;
    }
    knit_rma_iov_t *iov = malloc((size_t)niov * sizeof(*iov) + 2 * (size_t)nptr * sizeof(void *));
    if (!iov)
        return kn_armci_err(fn, KNIT_ERR_NOMEM, "out of memory");
    op->mem = iov;
    void **ptrs = (void **)(iov + niov);
    int j = 0;
    for (int e = 0, s = 0; e < len; s += darr[e].bytes ? darr[e].ptr_array_len : 0, e++) {
        int k = 0;
        void **src = ptrs, **dst = ptrs + nptr;
        for (int i = 0; darr[e].bytes && i < darr[e].ptr_array_len; i++) {
            if (segreg[s + i] != reg)
                continue;
            src[k] = darr[e].src_ptr_array[i];
            dst[k] = darr[e].dst_ptr_array[i];
            segreg[s + i] = NULL; /* issued */
            k++;
        }
        if (!k)
            continue;
        iov[j].src = src;
        iov[j].dst = dst;
        iov[j].n = k;
        iov[j].bytes = darr[e].bytes;
        j++;
        ptrs += k;
    }
    op->reg = reg;
    knit_rma_req_t **req = nb ? &op->req : NULL;
    knit_status_t st;
    if (kind == OP_PUT)
        st = knit_put_vector(reg->win, iov, niov, op->proc, KNIT_RMA_LOCAL, req);
    else if (kind == OP_GET)
        st = knit_get_vector(reg->win, iov, niov, op->proc, KNIT_RMA_DEFAULT, req);
    else
        st = knit_acc_vector(reg->win, &op->acc, iov, niov, op->proc, KNIT_RMA_LOCAL, req);
    if (!nb) {
        free(op->mem);
        op->mem = NULL;
    }
    return op_started(fn, op, st, nb, kind);
}

static int vector(const char *fn, int kind, int optype, const void *scale, const armci_giov_t *darr, int len,
                  int proc, int nb, armci_hdl_t *hdl)
{
    kn_armci_need_init(fn);
    int rc = check_proc(fn, proc);
    if (rc)
        return rc;
    if (len < 0 || (len > 0 && !darr))
        return kn_armci_err(fn, KNIT_ERR_INVAL, "bad descriptor array (len %d, darr %p)", len, (void *)darr);
    kn_armci_op_t tmpl;
    memset(&tmpl, 0, sizeof(tmpl));
    size_t elem = 1;
    if (kind == OP_ACC && (rc = acc_setup(fn, optype, scale, &tmpl, &elem)))
        return rc;
    int64_t total = 0;
    for (int e = 0; e < len; e++) {
        const armci_giov_t *d = &darr[e];
        if (d->ptr_array_len < 0 || d->bytes < 0)
            return kn_armci_err(fn, KNIT_ERR_INVAL, "descriptor %d: negative ptr_array_len %d or bytes %d", e,
                                d->ptr_array_len, d->bytes);
        if (d->bytes && d->ptr_array_len && (!d->src_ptr_array || !d->dst_ptr_array))
            return kn_armci_err(fn, KNIT_ERR_INVAL, "descriptor %d: NULL pointer array", e);
        if (d->bytes % elem)
            return kn_armci_err(fn, KNIT_ERR_INVAL, "descriptor %d: %d bytes is not a whole number of %zu-byte elements",
                                e, d->bytes, elem);
        if (d->bytes)
            total += d->ptr_array_len;
    }
    if (total == 0)
        return 0;
    kn_armci_region_t **segreg = malloc((size_t)total * sizeof(*segreg));
    if (!segreg)
        return kn_armci_err(fn, KNIT_ERR_NOMEM, "out of memory");
    for (int e = 0, s = 0; e < len && !rc; e++) {
        const armci_giov_t *d = &darr[e];
        for (int i = 0; d->bytes && i < d->ptr_array_len && !rc; i++, s++) {
            void *remote = kind == OP_GET ? d->src_ptr_array[i] : d->dst_ptr_array[i];
            void *local = kind == OP_GET ? d->dst_ptr_array[i] : d->src_ptr_array[i];
            if (!local)
                rc = kn_armci_err(fn, KNIT_ERR_INVAL, "descriptor %d, segment %d: NULL local address", e, i);
            else if (!(segreg[s] = kn_armci_region_of(proc, remote, (size_t)d->bytes)))
                rc = kn_armci_err(fn, KNIT_ERR_RANGE,
                                  "descriptor %d, segment %d: %p (%d bytes) of process %d is in no ARMCI_Malloc'ed region",
                                  e, i, remote, d->bytes, proc);
        }
    }
    unsigned long long hid = (!rc && nb) ? hdl_id(fn, hdl, proc) : 0;
    /* one knit call per region, in the order the regions first appear */
    for (int64_t s = 0; s < total && !rc; s++) {
        if (!segreg[s])
            continue;
        kn_armci_op_t local, *op = &local;
        if (nb && !(op = op_new(fn))) {
            rc = KNIT_ERR_NOMEM;
            break;
        }
        *op = tmpl;
        if (op->acc.scale)
            op->acc.scale = op->scale;
        op->proc = proc;
        op->hid = hid;
        rc = vector_group(fn, kind, darr, len, segreg[s], segreg, op, nb);
    }
    free(segreg);
    return rc;
}

int ARMCI_PutV(armci_giov_t darr[], int len, int proc)
{
    return vector(__func__, OP_PUT, 0, NULL, darr, len, proc, 0, NULL);
}

int ARMCI_GetV(armci_giov_t darr[], int len, int proc)
{
    return vector(__func__, OP_GET, 0, NULL, darr, len, proc, 0, NULL);
}

int ARMCI_AccV(int optype, void *scale, armci_giov_t darr[], int len, int proc)
{
    return vector(__func__, OP_ACC, optype, scale, darr, len, proc, 0, NULL);
}

int ARMCI_NbPutV(armci_giov_t darr[], int len, int proc, armci_hdl_t *hdl)
{
    return vector(__func__, OP_PUT, 0, NULL, darr, len, proc, 1, hdl);
}

int ARMCI_NbGetV(armci_giov_t darr[], int len, int proc, armci_hdl_t *hdl)
{
    return vector(__func__, OP_GET, 0, NULL, darr, len, proc, 1, hdl);
}

int ARMCI_NbAccV(int optype, void *scale, armci_giov_t darr[], int len, int proc, armci_hdl_t *hdl)
{
    return vector(__func__, OP_ACC, optype, scale, darr, len, proc, 1, hdl);
}

/* ------------------------------------------------------------ completion */

void ARMCI_INIT_HANDLE(armci_hdl_t *hdl)
{
    if (!hdl)
        return;
    hdl->target = -1;
    hdl->aggregate = 0;
    hdl->id = 0;
}

void ARMCI_SET_AGGREGATE_HANDLE(armci_hdl_t *hdl)
{
    if (hdl)
        hdl->aggregate = 1;
}

void ARMCI_UNSET_AGGREGATE_HANDLE(armci_hdl_t *hdl)
{
    if (hdl)
        hdl->aggregate = 0;
}

int ARMCI_Wait(armci_hdl_t *hdl)
{
    kn_armci_need_init(__func__);
    if (!hdl)
        return kn_armci_err(__func__, KNIT_ERR_INVAL, "NULL handle");
    knit_status_t st = hdl->id ? wait_hid(hdl->id) : 0;
    hdl->id = 0;
    return st;
}

int ARMCI_Test(armci_hdl_t *hdl)
{
    kn_armci_need_init(__func__);
    if (!hdl)
        return kn_armci_err(__func__, KNIT_ERR_INVAL, "NULL handle");
    if (!hdl->id)
        return 0;
    int pending = 0;
    for (kn_armci_op_t *op = kn_armci.ops; op; op = op->next) {
        if (op->hid != hdl->id || !op->req)
            continue;
        int done = 0;
        knit_status_t st = knit_rma_test(&op->req, &done);
        if (done) {
            op->req = NULL;
            op->status = st;
        } else {
            pending = 1;
        }
    }
    if (pending)
        return 1;
    knit_status_t st = wait_hid(hdl->id); /* all complete: collects the results */
    hdl->id = 0;
    return st;
}

int ARMCI_WaitProc(int proc)
{
    kn_armci_need_init(__func__);
    int rc = check_proc(__func__, proc);
    return rc ? rc : kn_armci_complete(proc, NULL, 0);
}

int ARMCI_WaitAll(void)
{
    kn_armci_need_init(__func__);
    return kn_armci_complete(-1, NULL, 0);
}

/* Puts and accumulates complete locally (KNIT_RMA_LOCAL, as ARMCI's do):
 * this waits until every one of them is at its target too, and returns
 * the first error any had there.  Every region's window: each holds its
 * own puts to other nodes until a synchronization (docs/rma.md); one
 * fence of the agents covers them all, so after the first the others
 * cost nothing where they held nothing. */
knit_status_t kn_armci_fence_remote(void)
{
    knit_status_t first = KNIT_OK;
    for (kn_armci_region_t *r = kn_armci.regions; r; r = r->next) {
        knit_status_t st = knit_rma_fence_all(r->win);
        if (first == KNIT_OK)
            first = st;
    }
    return first;
}

void ARMCI_Fence(int proc)
{
    kn_armci_need_init(__func__);
    if (check_proc(__func__, proc))
        kn_armci_die(__func__, "process %d out of range", proc);
    /* the nonblocking operations in flight, then what completed only
     * locally (every target's: a fence of one is a fence of all) */
    knit_status_t st = kn_armci_complete(proc, NULL, 0);
    if (st >= 0)
        st = kn_armci_fence_remote();
    if (st < 0)
        kn_armci_die(__func__, "an operation to process %d failed: %s", proc, knit_strerror(st));
}

void ARMCI_AllFence(void)
{
    kn_armci_need_init(__func__);
    knit_status_t st = kn_armci_complete(-1, NULL, 0);
    if (st >= 0)
        st = kn_armci_fence_remote();
    if (st < 0)
        kn_armci_die(__func__, "an operation failed: %s", knit_strerror(st));
}

void ARMCI_Barrier(void)
{
    ARMCI_AllFence();
    knit_status_t st = knit_barrier(kn_armci.world);
    if (st < 0)
        kn_armci_die(__func__, "barrier: %s", knit_strerror(st));
}
