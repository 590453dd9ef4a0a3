/*
 * Completing MPI requests: MPI_Wait, MPI_Test and their array forms,
 * MPI_Request_get_status, MPI_Request_free, MPI_Cancel,
 * MPI_Test_cancelled.  A request's operation is the engine's (kr), or
 * another layer's (KN_RQ_EXT: a nonblocking or neighbourhood collective,
 * a one-sided operation), or done already (done_st).  Posting requests is
 * p2p.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_impl.h"
#include "util/compiler.h"

/* ------------------------------------------------------------- completion */

/* What a request handle in a completion call is. */
enum { RQ_NULL, RQ_INACTIVE, RQ_READY, RQ_PENDING };

static int req_state(MPI_Request h, kn_mpi_req_t **out, const char *fn, int *err)
{
    *out = NULL;
    if (h == MPI_REQUEST_NULL)
        return RQ_NULL;
    kn_mpi_req_t *r = kn_mpi_req_arg(h, fn, err);
    if (!r)
        return -1;
    *out = r;
    if (!r->active)
        return RQ_INACTIVE;
    return r->kr || KN_RQ_EXT(r) ? RQ_PENDING : RQ_READY;
}

/* Whether a pending request's operation finished (progresses once). */
static int pending_done(kn_mpi_req_t *r)
{
    if (r->coll)
        return kn_mpi_coll_test(r);
    if (r->rma)
        return kn_mpi_rma_test(r);
    if (r->nbr)
        return kn_mpi_nbr_test(r);
    int done = 0;
    knit_request_status(r->kr, &done, NULL);
    return done;
}

/* Complete r (its engine request done or about to be: waits), report. */
static int complete(kn_mpi_req_t *r, MPI_Request *handle, MPI_Status *st)
{
    if (KN_RQ_EXT(r)) {
        int cls = r->coll ? kn_mpi_coll_finish(r) : r->nbr ? kn_mpi_nbr_finish(r) : kn_mpi_rma_finish(r);
        kn_mpi_req_finish(r, NULL, KNIT_OK, st, handle);
        return cls;
    }
    if (!r->kr)
        return kn_mpi_req_finish(r, NULL, KNIT_OK, st, handle);
    knit_msg_status_t ks;
    knit_status_t res = knit_wait(&r->kr, &ks);
    return kn_mpi_req_finish(r, &ks, res, st, handle);
}

/* Raise a failed request's error on its communicator (c: referenced by
 * the caller; it may have been freed by the program meanwhile). */
static int raise_on(kn_mpi_comm_t *c, const char *fn, int cls, const MPI_Status *st)
{
    kn_mpi_comm_t *live = kn_mpi_comm(c->handle) == c ? c : NULL;
    if (kn_mpi_last_fault.st && kn_mpi_class_of(kn_mpi_last_fault.st) == cls) {
        knit_status_t fst = kn_mpi_last_fault.st;
        kn_mpi_last_fault.st = 0;
        return kn_mpi_error_st(live, fn, fst, "%s", kn_mpi_last_fault.text);
    }
    if (cls == MPI_ERR_TRUNCATE && st)
        return kn_mpi_error(live, fn, cls, "a message from rank %d (tag %d) was longer than the %lld bytes received",
                            st->MPI_SOURCE, st->MPI_TAG, (long long)st->kn_bytes);
    return kn_mpi_error(live, fn, cls, "the request failed");
}

/* MPI_ERR_IN_STATUS of a multiple completion, with what failed on a
 * buffer if a request did. */
static int raise_in_status(kn_mpi_comm_t *c, const char *fn)
{
    knit_status_t fst = kn_mpi_last_fault.st;
    kn_mpi_last_fault.st = 0;
    if (fst)
        return kn_mpi_error_cause(c, fn, MPI_ERR_IN_STATUS, fst, "a request failed (see the statuses): %s",
                                  kn_mpi_last_fault.text);
    return kn_mpi_error(c, fn, MPI_ERR_IN_STATUS, "a request failed: see the statuses");
}

static int raise_req(kn_mpi_req_t *r, const char *fn, int cls, const MPI_Status *st)
{
    return raise_on(r->comm, fn, cls, st);
}

/* complete() for the single-completion calls: raise what failed. */
int kn_mpi_complete_raise(kn_mpi_req_t *r, MPI_Request *handle, MPI_Status *status, const char *fn)
{
    kn_mpi_comm_t *c = r->comm;
    kn_mpi_comm_ref(c); /* for the error message after the request is gone */
    MPI_Status tmp, *st = status ? status : &tmp;
    kn_mpi_last_fault.st = 0;
    int cls = complete(r, handle, st);
    if (cls != MPI_SUCCESS)
        cls = raise_on(c, fn, cls, st);
    kn_mpi_comm_unref(c);
    return cls;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    KN_MPI_READY();
    int err;
    if (!request)
        return kn_mpi_error(NULL, __func__, MPI_ERR_REQUEST, "request is NULL");
    kn_mpi_req_t *r;
    int s = req_state(*request, &r, __func__, &err);
    if (s < 0)
        return err;
    if (s == RQ_NULL || s == RQ_INACTIVE) {
        kn_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    return kn_mpi_complete_raise(r, request, status, __func__);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    KN_MPI_READY();
    int err;
    if (!request || !flag)
        return kn_mpi_error(NULL, __func__, request ? MPI_ERR_ARG : MPI_ERR_REQUEST, "NULL argument");
    kn_mpi_req_t *r;
    int s = req_state(*request, &r, __func__, &err);
    if (s < 0)
        return err;
    if (s == RQ_NULL || s == RQ_INACTIVE) {
        *flag = 1;
        kn_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    if (s == RQ_PENDING && !pending_done(r)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    *flag = 1;
    return kn_mpi_complete_raise(r, request, status, __func__);
}

static int check_array(int count, const MPI_Request *reqs, const char *fn)
{
    if (count < 0)
        return kn_mpi_error(NULL, fn, MPI_ERR_COUNT, "count %d is negative", count);
    if (count > 0 && !reqs)
        return kn_mpi_error(NULL, fn, MPI_ERR_REQUEST, "array_of_requests is NULL");
    for (int i = 0; i < count; i++) {
        int err;
        kn_mpi_req_t *r;
        if (req_state(reqs[i], &r, fn, &err) < 0)
            return err;
    }
    return MPI_SUCCESS;
}

/* Complete requests[i] for each i in idx[0..n) (idx NULL: 0..n-1; all
 * done or to be waited for); statuses indexed by position k (by_pos) or by request index.
 * Returns MPI_ERR_IN_STATUS if any failed (raised), else MPI_SUCCESS. */
static int complete_set(int n, const int *idx, MPI_Request reqs[], MPI_Status sts[], int by_pos, const char *fn)
{
    int failed = 0;
    MPI_Comm fc = MPI_COMM_NULL;
    kn_mpi_last_fault.st = 0;
    for (int k = 0; k < n; k++) {
        int i = idx ? idx[k] : k;
        kn_mpi_req_t *r = kn_mpi_tbl_get(&kn_mpi.reqs, reqs[i]);
        MPI_Status tmp, *st = sts ? &sts[by_pos ? k : i] : &tmp;
        if (!r) {
            kn_mpi_status_empty(st);
            continue;
        }
        MPI_Comm ch = r->comm->handle; /* the request may hold the last reference */
        int cls = complete(r, &reqs[i], st);
        st->MPI_ERROR = cls;
        if (cls != MPI_SUCCESS && !failed) {
            failed = 1;
            fc = ch;
        }
    }
    if (!failed)
        return MPI_SUCCESS;
    return raise_in_status(kn_mpi_comm(fc), fn);
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    KN_MPI_READY();
    if (count < 0 || (count > 0 && !array_of_requests))
        return check_array(count, array_of_requests, __func__);
    /* one wait in the engine for every request in flight */
    knit_request_t *small[64], **krs = count <= 64 ? small : malloc((size_t)count * sizeof(*krs));
    knit_msg_status_t ksmall[64], *kss = count <= 64 ? ksmall : malloc((size_t)count * sizeof(*kss));
    if (!krs || !kss) {
        if (krs != small)
            free(krs);
        if (kss != ksmall)
            free(kss);
        return kn_mpi_error(NULL, __func__, MPI_ERR_NO_MEM, "out of memory");
    }
    int failed = 0, ret = MPI_SUCCESS;
    MPI_Comm fc = MPI_COMM_NULL;
    kn_mpi_last_fault.st = 0;
    for (int i = 0; i < count; i++) { /* and every handle checked before anything completes */
        kn_mpi_req_t *r = kn_mpi_tbl_get(&kn_mpi.reqs, array_of_requests[i]);
        if (kn_unlikely(!r) && array_of_requests[i] != MPI_REQUEST_NULL) {
            ret = check_array(count, array_of_requests, __func__);
            goto out;
        }
        krs[i] = r && r->active ? r->kr : NULL;
    }
    knit_waitall((size_t)count, krs, kss);
    for (int i = 0; i < count; i++) {
        kn_mpi_req_t *r = kn_mpi_tbl_get(&kn_mpi.reqs, array_of_requests[i]);
        MPI_Status *st = array_of_statuses ? &array_of_statuses[i] : NULL;
        if (!r || !r->active) {
            kn_mpi_status_empty(st);
            continue;
        }
        MPI_Comm ch = r->comm->handle;
        int cls;
        if (r->kr) {
            r->kr = NULL; /* freed by knit_waitall */
            cls = kn_mpi_req_finish(r, &kss[i], kss[i].error, st, &array_of_requests[i]);
        } else {
            cls = complete(r, &array_of_requests[i], st); /* a collective, or done */
        }
        if (st)
            st->MPI_ERROR = cls;
        if (cls != MPI_SUCCESS && !failed) {
            failed = 1;
            fc = ch;
        }
    }
    if (failed)
        ret = raise_in_status(kn_mpi_comm(fc), __func__);
out:
    if (krs != small)
        free(krs);
    if (kss != ksmall)
        free(kss);
    return ret;
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
{
    KN_MPI_READY();
    int err = check_array(count, array_of_requests, __func__);
    if (err != MPI_SUCCESS)
        return err;
    if (!flag)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "flag is NULL");
    int all = 1;
    for (int i = 0; i < count && all; i++) {
        kn_mpi_req_t *r = kn_mpi_tbl_get(&kn_mpi.reqs, array_of_requests[i]);
        if (r && r->active && (r->kr || KN_RQ_EXT(r)))
            all = pending_done(r);
    }
    *flag = all;
    if (!all)
        return MPI_SUCCESS;
    return complete_set(count, NULL, array_of_requests, array_of_statuses, 0, __func__);
}

/* Which requests are done now (ready or engine-complete); -1 if no
 * request is active at all. */
struct scan {
    int count;
    MPI_Request *reqs;
    int *done_idx; /* NULL: stop at the first */
    int ndone;
    int nactive;
};

static int scan_done(void *arg)
{
    struct scan *s = arg;
    s->ndone = 0;
    s->nactive = 0;
    for (int i = 0; i < s->count; i++) {
        kn_mpi_req_t *r = kn_mpi_tbl_get(&kn_mpi.reqs, s->reqs[i]);
        if (!r || !r->active)
            continue;
        s->nactive++;
        if ((r->kr || KN_RQ_EXT(r)) && !pending_done(r))
            continue;
        if (s->done_idx)
            s->done_idx[s->ndone] = i;
        else
            s->nactive = i; /* first done index */
        s->ndone++;
        if (!s->done_idx)
            return 1;
    }
    return s->ndone > 0 || s->nactive == 0;
}

static int any_common(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status, int wait,
                      const char *fn)
{
    int err = check_array(count, reqs, fn);
    if (err != MPI_SUCCESS)
        return err;
    if (!index || (!wait && !flag))
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "NULL argument");
    struct scan s = {count, reqs, NULL, 0, 0};
    if (wait)
        knit_wait_until(kn_mpi.ctx, scan_done, &s);
    else
        scan_done(&s);
    if (s.ndone == 0) {
        if (s.nactive == 0) { /* nothing active: an empty answer */
            *index = MPI_UNDEFINED;
            kn_mpi_status_empty(status);
            if (flag)
                *flag = 1;
        } else {
            *flag = 0;
        }
        return MPI_SUCCESS;
    }
    int i = s.nactive;
    *index = i;
    if (flag)
        *flag = 1;
    return kn_mpi_complete_raise(kn_mpi_tbl_get(&kn_mpi.reqs, reqs[i]), &reqs[i], status, fn);
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    KN_MPI_READY();
    return any_common(count, array_of_requests, index, NULL, status, 1, __func__);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
{
    KN_MPI_READY();
    return any_common(count, array_of_requests, index, flag, status, 0, __func__);
}

static int some_common(int incount, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[], int wait,
                       const char *fn)
{
    int err = check_array(incount, reqs, fn);
    if (err != MPI_SUCCESS)
        return err;
    if (!outcount || (incount > 0 && !indices))
        return kn_mpi_error(NULL, fn, MPI_ERR_ARG, "NULL argument");
    struct scan s = {incount, reqs, indices, 0, 0};
    if (wait)
        knit_wait_until(kn_mpi.ctx, scan_done, &s);
    else
        scan_done(&s);
    if (s.nactive == 0) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    *outcount = s.ndone;
    return complete_set(s.ndone, indices, reqs, sts, 1, fn);
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                 MPI_Status array_of_statuses[])
{
    KN_MPI_READY();
    return some_common(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 1, __func__);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                 MPI_Status array_of_statuses[])
{
    KN_MPI_READY();
    return some_common(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 0, __func__);
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    KN_MPI_READY();
    int err;
    if (!flag)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "flag is NULL");
    kn_mpi_req_t *r;
    int s = req_state(request, &r, __func__, &err);
    if (s < 0)
        return err;
    if (s == RQ_NULL || s == RQ_INACTIVE) {
        *flag = 1;
        kn_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    if (s == RQ_READY) {
        *flag = 1;
        if (status)
            *status = r->done_st;
        return MPI_SUCCESS;
    }
    if (KN_RQ_EXT(r)) { /* its error, if any, is reported by the completion call */
        *flag = pending_done(r);
        if (*flag)
            kn_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    knit_msg_status_t ks;
    int done = 0;
    knit_status_t res = knit_request_status(r->kr, &done, &ks);
    *flag = done;
    if (!done)
        return MPI_SUCCESS;
    /* the data must be in the buffer once the flag says so */
    if (r->kind == KN_RQ_RECV && r->tmp) {
        kn_mpi_unpack(r->type, r->tmp, ks.length, r->buf, (size_t)r->count);
        free(r->tmp);
        r->tmp = NULL;
    }
    if (r->kind == KN_RQ_RECV) {
        kn_mpi_status_from(status, r->comm, &ks);
    } else if (status) {
        kn_mpi_status_empty(status);
        status->kn_bytes = (MPI_Count)ks.length;
    }
    int cls = kn_mpi_result_class(res);
    if (cls != MPI_SUCCESS) {
        if (status)
            status->MPI_ERROR = cls;
        return raise_req(r, __func__, cls, status);
    }
    return MPI_SUCCESS;
}

/* The request *request names, which fn needs to be a real one, not of a
 * nonblocking collective ("cannot be <what>"): its state, or -1 with the
 * error in *err. */
static int given_req(MPI_Request *request, kn_mpi_req_t **r, const char *fn, const char *what, int *err)
{
    if (!request) {
        *err = kn_mpi_error(NULL, fn, MPI_ERR_REQUEST, "request is NULL");
        return -1;
    }
    int s = req_state(*request, r, fn, err);
    if (s == RQ_NULL) {
        *err = kn_mpi_error(NULL, fn, MPI_ERR_REQUEST, "request is MPI_REQUEST_NULL");
        return -1;
    }
    if (s >= 0 && ((*r)->coll || (*r)->nbr)) {
        *err = kn_mpi_error((*r)->comm, fn, MPI_ERR_REQUEST, "the request of a nonblocking collective cannot be %s",
                            what);
        return -1;
    }
    return s;
}

int MPI_Request_free(MPI_Request *request)
{
    KN_MPI_READY();
    int err;
    kn_mpi_req_t *r;
    int s = given_req(request, &r, __func__, "freed (MPI 6.12): complete it", &err);
    if (s < 0)
        return err;
    if (s == RQ_PENDING && r->rma) /* its operation completes now: nothing polls a freed one later */
        return complete(r, request, NULL);
    if (s == RQ_PENDING) {
        /* it completes on its own; its handle is gone now */
        r->freeing = 1;
        kn_mpi_tbl_del(&kn_mpi.reqs, r->handle);
        r->handle = 0;
        r->next_detached = kn_mpi.detached;
        kn_mpi.detached = r;
    } else {
        kn_mpi_req_release(r);
    }
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request *request)
{
    KN_MPI_READY();
    int err;
    kn_mpi_req_t *r;
    int s = given_req(request, &r, __func__, "cancelled (MPI 6.12)", &err);
    if (s < 0)
        return err;
    if (s == RQ_INACTIVE)
        return kn_mpi_error(r->comm, __func__, MPI_ERR_REQUEST, "the persistent request is not active");
    if (r->rma)
        return kn_mpi_error(r->comm, __func__, MPI_ERR_REQUEST, "one-sided operations cannot be cancelled");
    if (s == RQ_READY)
        return MPI_SUCCESS; /* already complete: the cancel fails */
    if (r->kind == KN_RQ_SEND) {
        /* knit does not take back sends (MPI-4 deprecates it): the cancel
         * fails, as MPI allows, and MPI_Test_cancelled says false */
        r->cancel_failed = 1;
        return MPI_SUCCESS;
    }
    knit_status_t st = knit_cancel(r->kr);
    if (st != KNIT_OK && st != KNIT_ERR_STATE)
        return kn_mpi_error(r->comm, __func__, kn_mpi_class_of(st), "%s", knit_strerror(st));
    return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    KN_MPI_READY();
    if (!status || !flag)
        return kn_mpi_error(NULL, __func__, MPI_ERR_ARG, "NULL argument");
    *flag = status->kn_cancelled;
    return MPI_SUCCESS;
}
