/*
 * ARMCI read-modify-write and mutexes, over knit_rma_atomic.
 *
 * A mutex is a ticket lock: two 64-bit counters in a window that
 * ARMCI_Create_mutexes allocates (knit_mem_alloc, collective), "next
 * ticket" and "now serving".  Lock takes a ticket with an atomic
 * fetch-and-add and polls now-serving (an atomic add of 0, so that the
 * read is ordered with the increments) until it is its turn; unlock adds
 * one to now-serving.  First come, first served, and no process spins on
 * a core that the holder needs: a waiter sleeps longer the more tickets
 * are ahead of it (a job may have more processes than cores).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "armci/armci_impl.h"

int ARMCI_Rmw(int op, void *ploc, void *prem, int value, int proc)
{
    kn_armci_need_init(__func__);
    if (proc < 0 || proc >= kn_armci.nproc)
        return kn_armci_err(__func__, KNIT_ERR_INVAL, "process %d out of range [0, %d)", proc, kn_armci.nproc);
    if (!ploc || !prem)
        return kn_armci_err(__func__, KNIT_ERR_INVAL, "NULL %s", !ploc ? "ploc" : "prem");
    int is_long = op == ARMCI_FETCH_AND_ADD_LONG || op == ARMCI_SWAP_LONG;
    knit_rma_atomic_op_t kop;
    switch (op) {
    case ARMCI_FETCH_AND_ADD:
    case ARMCI_FETCH_AND_ADD_LONG: kop = KNIT_RMA_FETCH_ADD; break;
    case ARMCI_SWAP:
    case ARMCI_SWAP_LONG: kop = KNIT_RMA_SWAP; break;
    default: return kn_armci_err(__func__, KNIT_ERR_INVAL, "unknown op %d", op);
    }
    size_t size = is_long ? sizeof(long) : sizeof(int);
    kn_armci_region_t *reg = kn_armci_region_of(proc, prem, size);
    if (!reg)
        return kn_armci_err(__func__, KNIT_ERR_RANGE, "%p of process %d is in no ARMCI_Malloc'ed region", prem, proc);
    /* the operand: value for fetch-and-add, *ploc for swap (copied, since
     * ploc also receives the result) */
    union { int i; long l; } operand, result;
    if (kop == KNIT_RMA_FETCH_ADD) {
        if (is_long)
            operand.l = value;
        else
            operand.i = value;
    } else {
        memcpy(&operand, ploc, size);
    }
    knit_status_t st = knit_rma_atomic(reg->win, kop, is_long ? KNIT_LONG : KNIT_INT, prem, &operand, NULL, &result,
                                       proc);
    if (st < 0)
        return kn_armci_err(__func__, st, "atomic on %p of process %d: %s", prem, proc, knit_strerror(st));
    memcpy(ploc, &result, size);
    return 0;
}

/* ---------------------------------------------------------------- mutexes */

enum { TICKET = 0, SERVING = 1 };

/* the mutexes this process holds: unlocking one it does not hold, or
 * locking one it holds (which would wait for itself), ends the job */
static struct held { int mutex, proc; } *held;
static int nheld, capheld;

static int held_at(int mutex, int proc)
{
    for (int i = 0; i < nheld; i++)
        if (held[i].mutex == mutex && held[i].proc == proc)
            return i;
    return -1;
}

int ARMCI_Create_mutexes(int count)
{
    kn_armci_need_init(__func__);
    /* the others are in the collective: a bad count cannot just return */
    if (count < 0)
        kn_armci_die(__func__, "negative count %d", count);
    if (kn_armci.mutex_win) /* the same on every process: all return */
        return kn_armci_err(__func__, KNIT_ERR_EXISTS, "mutexes exist already (ARMCI_Destroy_mutexes first)");
    knit_win_t *win;
    knit_status_t st = knit_mem_alloc(kn_armci.world, (size_t)count * 2 * sizeof(int64_t), &win);
    if (st < 0)
        return kn_armci_err(__func__, st, "%d mutexes: %s", count, knit_strerror(st));
    kn_armci.mutex_win = win;
    return 0;
}

int ARMCI_Destroy_mutexes(void)
{
    kn_armci_need_init(__func__);
    if (!kn_armci.mutex_win)
        return kn_armci_err(__func__, KNIT_ERR_STATE, "no mutexes (ARMCI_Create_mutexes first)");
    knit_status_t st = knit_win_free(kn_armci.mutex_win);
    kn_armci.mutex_win = NULL;
    free(held);
    held = NULL;
    nheld = capheld = 0;
    if (st < 0)
        return kn_armci_err(__func__, st, "%s", knit_strerror(st));
    return 0;
}

/* The counter of mutex m at proc (an address in proc's space). */
static int64_t *counter(const char *fn, int mutex, int proc, int which)
{
    kn_armci_need_init(fn);
    if (!kn_armci.mutex_win)
        kn_armci_die(fn, "no mutexes (ARMCI_Create_mutexes first)");
    if (proc < 0 || proc >= kn_armci.nproc)
        kn_armci_die(fn, "process %d out of range [0, %d)", proc, kn_armci.nproc);
    size_t n = knit_win_size(kn_armci.mutex_win, proc) / (2 * sizeof(int64_t));
    if (mutex < 0 || (size_t)mutex >= n)
        kn_armci_die(fn, "mutex %d out of range: process %d has %zu", mutex, proc, n);
    return (int64_t *)knit_win_base(kn_armci.mutex_win, proc) + 2 * mutex + which;
}

static int64_t fetch_add(const char *fn, int64_t *remote, int64_t add, int proc)
{
    int64_t old = 0;
    knit_status_t st = knit_rma_atomic(kn_armci.mutex_win, KNIT_RMA_FETCH_ADD, KNIT_INT64, remote, &add, NULL,
                                       &old, proc);
    if (st < 0)
        kn_armci_die(fn, "atomic on process %d: %s", proc, knit_strerror(st));
    return old;
}

void ARMCI_Lock(int mutex, int proc)
{
    int64_t *serving = counter(__func__, mutex, proc, SERVING);
    if (held_at(mutex, proc) >= 0)
        kn_armci_die(__func__, "mutex %d of process %d is held by this process already", mutex, proc);
    if (nheld == capheld) {
        int cap = capheld ? 2 * capheld : 8;
        struct held *h = realloc(held, (size_t)cap * sizeof(*h));
        if (!h)
            kn_armci_die(__func__, "out of memory");
        held = h;
        capheld = cap;
    }
    int64_t ticket = fetch_add(__func__, counter(__func__, mutex, proc, TICKET), 1, proc);
    int64_t last = -1;
    for (unsigned polls = 0;; polls++) {
        int64_t now = fetch_add(__func__, serving, 0, proc);
        if (now != last) /* the queue moved: yield again before sleeping */
            polls = 0, last = now;
        if (now == ticket) {
            held[nheld].mutex = mutex;
            held[nheld].proc = proc;
            nheld++;
            return;
        }
        int64_t ahead = ticket - now;
        if (ahead < 1)
            kn_armci_die(__func__, "mutex %d of process %d is corrupt (ticket %lld, serving %lld)", mutex, proc,
                         (long long)ticket, (long long)now);
        if (ahead <= 1 && polls < 64) {
            sched_yield(); /* next in line: the holder may be done soon */
            continue;
        }
        /* ~20 us per process ahead, at most 1 ms between polls */
        long ns = ahead > 50 ? 1000000L : (long)ahead * 20000L;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
    }
}

void ARMCI_Unlock(int mutex, int proc)
{
    int64_t *serving = counter(__func__, mutex, proc, SERVING);
    int h = held_at(mutex, proc);
    if (h < 0)
        kn_armci_die(__func__, "mutex %d of process %d is not held by this process", mutex, proc);
    held[h] = held[--nheld];
    /* what the holder did under the lock is complete before the next one
     * gets it */
    knit_status_t st = kn_armci_complete(-1, NULL, 0);
    if (st >= 0)
        st = kn_armci_fence_remote();
    if (st < 0)
        kn_armci_die(__func__, "an operation failed: %s", knit_strerror(st));
    fetch_add(__func__, serving, 1, proc);
}
