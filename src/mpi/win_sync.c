/*
 * MPI one-sided synchronization (win.h):
 *   fence        complete this rank's operations at their targets, then a
 *                barrier of the window's communicator
 *   post/start/complete/wait/test
 *                a zero-byte message per pair on the window's own
 *                communicator: post -> the origins (start waits for it),
 *                complete -> the targets, after this origin's operations
 *                are at them (wait and test take it)
 *   lock/unlock  a lock word per member (a second knit window), taken and
 *                given back with knit's atomics, which the target's node
 *                agent does: no call of the target's is needed.  Shared
 *                holders count up; an exclusive holder adds KN_WL_EXCL_BIT
 *                (taken by compare-and-swap from 0).  A waiting origin
 *                backs off from a yield to 1 ms sleeps.  lock_all takes a
 *                target's shared lock at the first operation to it.
 *   flush*       complete the kept operations (locally, or at the targets)
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi/win.h"

#define ASSERTS (MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)

static int assert_arg(kn_mpi_win_t *w, int assert, const char *fn)
{
    if (assert & ~ASSERTS)
        return kn_mpi_win_error(w, fn, MPI_ERR_ASSERT, KNIT_OK, "assert %#x has bits MPI does not define", assert);
    return MPI_SUCCESS;
}

int kn_mpi_win_busy(const kn_mpi_win_t *w)
{
    return w->nlocked || w->lock_all || w->accessing || w->exposing;
}

/* ------------------------------------------------------------ lock words */

static void backoff(unsigned *round)
{
    knit_progress(kn_mpi.ctx);
    if (*round < 4) {
        sched_yield();
    } else {
        unsigned us = 1u << (*round < 14 ? *round - 4 : 10); /* 1 us .. 1 ms */
        nanosleep(&(struct timespec){0, (long)us * 1000}, NULL);
    }
    (*round)++;
}

static knit_status_t word_add(kn_mpi_win_t *w, int rank, int64_t v, int64_t *old)
{
    return knit_rma_atomic(w->ctl, KNIT_RMA_FETCH_ADD, KNIT_INT64, knit_win_base(w->ctl, rank), &v, NULL, old, rank);
}

static knit_status_t lock_take(kn_mpi_win_t *w, int rank, int excl)
{
    unsigned round = 0;
    for (;;) {
        int64_t old = 0;
        knit_status_t st;
        if (excl) {
            int64_t zero = 0, bit = KN_WL_EXCL_BIT;
            st = knit_rma_atomic(w->ctl, KNIT_RMA_CAS, KNIT_INT64, knit_win_base(w->ctl, rank), &bit, &zero, &old,
                                 rank);
            if (st != KNIT_OK || old == 0)
                return st;
        } else {
            st = word_add(w, rank, 1, &old);
            if (st != KNIT_OK || old < KN_WL_EXCL_BIT)
                return st;
            st = word_add(w, rank, -1, &old); /* an exclusive holder: give it back and wait */
            if (st != KNIT_OK)
                return st;
        }
        backoff(&round);
    }
}

static knit_status_t lock_give(kn_mpi_win_t *w, int rank, int excl)
{
    int64_t old;
    return word_add(w, rank, excl ? -KN_WL_EXCL_BIT : -1, &old);
}

/* ------------------------------------------------------------ access */

int kn_mpi_win_access(kn_mpi_win_t *w, int rank, const char *fn)
{
    if (w->locked[rank])
        return MPI_SUCCESS;
    if (w->lock_all) {
        if (w->lock_all_nocheck) {
            w->locked[rank] = KN_WL_ALL | KN_WL_NOCHECK;
        } else {
            knit_status_t st = lock_take(w, rank, 0);
            if (st != KNIT_OK)
                return kn_mpi_win_error(w, fn, kn_mpi_class_of(st), st, "taking the shared lock of rank %d: %s",
                                        rank, knit_strerror(st));
            w->locked[rank] = KN_WL_ALL;
        }
        w->nlocked++;
        return MPI_SUCCESS;
    }
    if (w->fence)
        return MPI_SUCCESS;
    if (w->accessing)
        for (int i = 0; i < w->naccess; i++)
            if (w->access[i] == rank)
                return MPI_SUCCESS;
    return kn_mpi_win_error(w, fn, MPI_ERR_RMA_SYNC, KNIT_OK,
                            "no access epoch to rank %d is open (MPI_Win_fence, MPI_Win_start, MPI_Win_lock or "
                            "MPI_Win_lock_all first)", rank);
}

/* ------------------------------------------------------------ fence */

int MPI_Win_fence(int assert, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    int e = assert_arg(w, assert, __func__);
    if (e != MPI_SUCCESS)
        return e;
    if (w->nlocked || w->lock_all || w->accessing || w->exposing)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK,
                                "a lock or a post/start epoch is open on this window");
    int cls = kn_mpi_win_complete_ops(w, -1, 0, __func__);
    /* every member's operations are at their targets after this (the
     * messages' exchange is a barrier too) */
    knit_status_t st = w->msg ? kn_mpi_win_msg_fence(w) : knit_barrier(w->comm->kc);
    w->fence = !(assert & MPI_MODE_NOSUCCEED);
    if (cls != MPI_SUCCESS)
        return cls;
    if (st != KNIT_OK)
        return kn_mpi_win_error(w, __func__, kn_mpi_class_of(st), st,
                                "the fence's %s failed: %s", w->msg ? "messages" : "barrier", knit_strerror(st));
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ post/start/complete/wait */

/* The members of group as window ranks (malloc'ed; NULL: error raised). */
static int *group_ranks(kn_mpi_win_t *w, MPI_Group group, int *n, const char *fn, int *err)
{
    int gn = 0;
    if (MPI_Group_size(group, &gn) != MPI_SUCCESS) {
        *err = kn_mpi_win_error(w, fn, MPI_ERR_GROUP, KNIT_OK, "not a valid group");
        return NULL;
    }
    int *in = malloc((size_t)(gn ? gn : 1) * sizeof(int)), *out = malloc((size_t)(gn ? gn : 1) * sizeof(int));
    MPI_Group wg = MPI_GROUP_NULL;
    if (!in || !out || MPI_Comm_group(w->comm->handle, &wg) != MPI_SUCCESS) {
        free(in);
        free(out);
        *err = kn_mpi_win_error(w, fn, MPI_ERR_NO_MEM, KNIT_OK, "no memory");
        return NULL;
    }
    for (int i = 0; i < gn; i++)
        in[i] = i;
    MPI_Group_translate_ranks(group, gn, in, wg, out);
    MPI_Group_free(&wg);
    free(in);
    for (int i = 0; i < gn; i++)
        if (out[i] == MPI_UNDEFINED) {
            free(out);
            *err = kn_mpi_win_error(w, fn, MPI_ERR_GROUP, KNIT_OK, "member %d of the group is not in the window", i);
            return NULL;
        }
    *n = gn;
    return out;
}

/* A synchronization message to or from peer, carrying *count (NULL:
 * nothing). */
static int sync_msg(kn_mpi_win_t *w, int send, int peer, int tag, long long *count, const char *fn)
{
    int n = count ? 1 : 0;
    int e = send ? MPI_Send(count, n, MPI_LONG_LONG, peer, tag, w->comm->handle)
                 : MPI_Recv(count, n, MPI_LONG_LONG, peer, tag, w->comm->handle, MPI_STATUS_IGNORE);
    if (e != MPI_SUCCESS)
        return kn_mpi_win_error(w, fn, e, KNIT_ERR_PEER, "rank %d could not be reached", peer);
    return MPI_SUCCESS;
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    int e = assert_arg(w, assert, __func__);
    if (e != MPI_SUCCESS)
        return e;
    if (w->exposing)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK, "an exposure epoch is open already");
    int n, *r = group_ranks(w, group, &n, __func__, &e);
    if (!r)
        return e;
    uint8_t *done = calloc((size_t)(n ? n : 1), 1);
    if (!done) {
        free(r);
        return kn_mpi_win_error(w, __func__, MPI_ERR_NO_MEM, KNIT_OK, "no memory");
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* our stores before, visible to the origins' gets */
    for (int i = 0; i < n && !(assert & MPI_MODE_NOCHECK); i++)
        if ((e = sync_msg(w, 1, r[i], KN_WT_POST, NULL, __func__)) != MPI_SUCCESS) {
            free(r);
            free(done);
            return e;
        }
    free(w->expose);
    free(w->expose_done);
    w->expose = r;
    w->nexpose = n;
    w->expose_done = done;
    w->exposing = 1;
    return MPI_SUCCESS;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    int e = assert_arg(w, assert, __func__);
    if (e != MPI_SUCCESS)
        return e;
    if (w->accessing)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK, "an access epoch is open already");
    int n, *r = group_ranks(w, group, &n, __func__, &e);
    if (!r)
        return e;
    for (int i = 0; i < n && !(assert & MPI_MODE_NOCHECK); i++)
        if ((e = sync_msg(w, 0, r[i], KN_WT_POST, NULL, __func__)) != MPI_SUCCESS) {
            free(r);
            return e;
        }
    free(w->access);
    w->access = r;
    w->naccess = n;
    w->accessing = 1;
    return MPI_SUCCESS;
}

int MPI_Win_complete(MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!w->accessing)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK, "no MPI_Win_start before");
    int cls = kn_mpi_win_complete_ops(w, -1, 0, __func__);
    knit_status_t hs = kn_mpi_win_msg_send_held(w); /* the accumulates, with the puts */
    if (hs != KNIT_OK && cls == MPI_SUCCESS)
        cls = kn_mpi_win_error(w, __func__, kn_mpi_class_of(hs), hs, "an accumulate could not be sent: %s",
                               knit_strerror(hs));
    for (int i = 0; i < w->naccess; i++) { /* the targets wait for these, whatever happened */
        long long k = kn_mpi_win_msg_sent(w, w->access[i]); /* the puts sent as messages, before it */
        int e = sync_msg(w, 1, w->access[i], KN_WT_COMPLETE, &k, __func__);
        if (cls == MPI_SUCCESS)
            cls = e;
    }
    knit_status_t ms = kn_mpi_win_msg_complete(w);
    if (ms != KNIT_OK && cls == MPI_SUCCESS)
        cls = kn_mpi_win_error(w, __func__, kn_mpi_class_of(ms), ms, "the epoch's messages failed: %s",
                               knit_strerror(ms));
    w->accessing = 0;
    w->naccess = 0;
    return cls;
}

static int expose_end(kn_mpi_win_t *w, int wait, int *flag, const char *fn)
{
    if (!w->exposing)
        return kn_mpi_win_error(w, fn, MPI_ERR_RMA_SYNC, KNIT_OK, "no MPI_Win_post before");
    int left = 0;
    for (int i = 0; i < w->nexpose; i++) {
        if (w->expose_done[i])
            continue;
        int there = 1;
        if (!wait)
            MPI_Iprobe(w->expose[i], KN_WT_COMPLETE, w->comm->handle, &there, MPI_STATUS_IGNORE);
        if (!there) {
            left = 1;
            continue;
        }
        long long k = 0; /* its puts sent as messages, before it */
        int e = sync_msg(w, 0, w->expose[i], KN_WT_COMPLETE, &k, fn);
        if (e != MPI_SUCCESS)
            return e;
        w->expose_done[i] = 1;
        knit_status_t st = k ? kn_mpi_win_msg_take(w, w->expose[i], k) : KNIT_OK;
        if (st != KNIT_OK)
            return kn_mpi_win_error(w, fn, kn_mpi_class_of(st), st, "rank %d's puts could not be applied: %s",
                                    w->expose[i], knit_strerror(st));
    }
    if (flag)
        *flag = !left;
    if (!left) {
        w->exposing = 0;
        __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the origins' data, visible to our loads */
    }
    return MPI_SUCCESS;
}

int MPI_Win_wait(MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    return expose_end(w, 1, NULL, __func__);
}

int MPI_Win_test(MPI_Win win, int *flag)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!flag)
        return kn_mpi_win_error(w, __func__, MPI_ERR_ARG, KNIT_OK, "flag is NULL");
    return expose_end(w, 0, flag, __func__);
}

/* ------------------------------------------------------------ lock/unlock */

static int rank_arg(kn_mpi_win_t *w, int rank, const char *fn)
{
    if (rank < 0 || rank >= w->n)
        return kn_mpi_win_error(w, fn, MPI_ERR_RANK, KNIT_OK, "rank %d not in [0, %d)", rank, w->n);
    return MPI_SUCCESS;
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    int e = assert_arg(w, assert, __func__);
    if (e != MPI_SUCCESS)
        return e;
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((e = rank_arg(w, rank, __func__)) != MPI_SUCCESS)
        return e;
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
        return kn_mpi_win_error(w, __func__, MPI_ERR_LOCKTYPE, KNIT_OK, "lock type %d", lock_type);
    if (w->locked[rank] || w->lock_all)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK, "rank %d is locked by this rank already",
                                rank);
    int excl = lock_type == MPI_LOCK_EXCLUSIVE;
    if (!(assert & MPI_MODE_NOCHECK)) {
        knit_status_t st = lock_take(w, rank, excl);
        if (st != KNIT_OK)
            return kn_mpi_win_error(w, __func__, kn_mpi_class_of(st), st, "the lock of rank %d: %s", rank,
                                    knit_strerror(st));
    }
    w->locked[rank] = (uint8_t)((excl ? KN_WL_EXCL : KN_WL_SHARED) | (assert & MPI_MODE_NOCHECK ? KN_WL_NOCHECK : 0));
    w->nlocked++;
    return MPI_SUCCESS;
}

/* Complete the operations to rank and give its lock back. */
static int unlock_one(kn_mpi_win_t *w, int rank, const char *fn)
{
    int cls = kn_mpi_win_complete_ops(w, rank, 0, fn);
    uint8_t l = w->locked[rank];
    w->locked[rank] = KN_WL_NONE;
    w->nlocked--;
    if (!(l & KN_WL_NOCHECK)) {
        knit_status_t st = lock_give(w, rank, (l & ~KN_WL_NOCHECK) == KN_WL_EXCL);
        if (st != KNIT_OK && cls == MPI_SUCCESS)
            cls = kn_mpi_win_error(w, fn, kn_mpi_class_of(st), st, "giving back the lock of rank %d: %s", rank,
                                   knit_strerror(st));
    }
    return cls;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    int e = rank_arg(w, rank, __func__);
    if (e != MPI_SUCCESS)
        return e;
    if (w->lock_all || !w->locked[rank])
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK, "rank %d is not locked by MPI_Win_lock",
                                rank);
    return unlock_one(w, rank, __func__);
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    int e = assert_arg(w, assert, __func__);
    if (e != MPI_SUCCESS)
        return e;
    if (w->lock_all || w->nlocked)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK, "a lock is held on this window already");
    w->lock_all = 1;
    w->lock_all_nocheck = (assert & MPI_MODE_NOCHECK) != 0;
    return MPI_SUCCESS;
}

int MPI_Win_unlock_all(MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    if (!w->lock_all)
        return kn_mpi_win_error(w, __func__, MPI_ERR_RMA_SYNC, KNIT_OK, "no MPI_Win_lock_all before");
    int cls = kn_mpi_win_complete_ops(w, -1, 0, __func__);
    for (int r = 0; r < w->n; r++) {
        if (!w->locked[r])
            continue;
        int e = unlock_one(w, r, __func__);
        if (cls == MPI_SUCCESS)
            cls = e;
    }
    w->lock_all = 0;
    return cls;
}

/* ------------------------------------------------------------ flush */

static int passive(kn_mpi_win_t *w, int rank, const char *fn)
{
    if (w->lock_all || (rank >= 0 ? w->locked[rank] != 0 : w->nlocked > 0))
        return MPI_SUCCESS;
    return kn_mpi_win_error(w, fn, MPI_ERR_RMA_SYNC, KNIT_OK, "flushes belong in a passive-target epoch "
                                                             "(MPI_Win_lock or MPI_Win_lock_all)");
}

/* rank -1: every target (the _all forms) */
static int flush(MPI_Win win, int rank, int local, const char *fn)
{
    KN_MPI_WIN_ARG(w, win);
    int e = rank >= 0 ? rank_arg(w, rank, fn) : MPI_SUCCESS;
    if (e == MPI_SUCCESS)
        e = passive(w, rank, fn);
    return e != MPI_SUCCESS ? e : kn_mpi_win_complete_ops(w, rank, local, fn);
}

int MPI_Win_flush(int rank, MPI_Win win)
{
    KN_MPI_READY();
    return rank == MPI_PROC_NULL ? MPI_SUCCESS : flush(win, rank < 0 ? INT32_MAX : rank, 0, __func__);
}

int MPI_Win_flush_all(MPI_Win win)
{
    KN_MPI_READY();
    return flush(win, -1, 0, __func__);
}

int MPI_Win_flush_local(int rank, MPI_Win win)
{
    KN_MPI_READY();
    return rank == MPI_PROC_NULL ? MPI_SUCCESS : flush(win, rank < 0 ? INT32_MAX : rank, 1, __func__);
}

int MPI_Win_flush_local_all(MPI_Win win)
{
    KN_MPI_READY();
    return flush(win, -1, 1, __func__);
}

int MPI_Win_sync(MPI_Win win)
{
    KN_MPI_READY();
    KN_MPI_WIN_ARG(w, win);
    (void)w;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return MPI_SUCCESS;
}
