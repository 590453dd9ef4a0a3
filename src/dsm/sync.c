/*
 * The calls that order the region's accesses (flush, locks, barrier) and
 * its memory (docs/dsm.md).  Locks and memory are node 0's agent's (the
 * lockmgr, modules/builtin/dsm_lockmgr.c).  A process makes one request to its
 * agent at a time (kn_dsm.call), so the calls may come from any thread;
 * under update a thread waiting for a lock lets the process's other DSM
 * calls go on (under invalidate it holds them up until the grant).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsm/dsm_int.h"

static knit_status_t not_mapped(void)
{
    kn_dsm_error("the region is not mapped (knit_dsm_init)");
    return KNIT_ERR_STATE;
}

/* fn (a release or a push) under kn_dsm.call */
static knit_status_t under_call(knit_status_t (*fn)(void))
{
    if (!kn_dsm.base)
        return not_mapped();
    pthread_mutex_lock(&kn_dsm.call);
    knit_status_t st = fn();
    pthread_mutex_unlock(&kn_dsm.call);
    return st;
}

knit_status_t knit_dsm_flush(void)
{
    return under_call(kn_dsm_release);
}

knit_status_t knit_dsm_push(void)
{
    return under_call(kn_dsm_push);
}

/* invalidate: ask (a request whose answer is a kn_dsm_delta_t) and
 * invalidate what it names.  Under kn_dsm.call. */
static knit_status_t acquire(const kn_dsm_q_t *q)
{
    size_t cap = sizeof(kn_dsm_delta_t) + kn_dsm.npages * sizeof(uint32_t);
    if (!kn_dsm.delta && !(kn_dsm.delta = malloc(cap)))
        return KNIT_ERR_NOMEM;
    knit_status_t st = kn_dsm_ask(q, sizeof(*q), kn_dsm.delta, cap);
    if (st == KNIT_OK)
        kn_dsm_invalidate(kn_dsm.delta);
    return st;
}

/* bar: the number of this world barrier (0: the rank's acquire alone) */
static knit_status_t acquire_at(uint64_t bar)
{
    if (!kn_dsm.base)
        return not_mapped();
    if (!kn_dsm.invalidate || !kn_dsm.protect)
        return KNIT_OK; /* (update: a release is complete once it is in every replica) */
    pthread_mutex_lock(&kn_dsm.call);
    kn_dsm_q_t q = {.op = KN_DSM_Q_ACQUIRE, .flags = bar ? KN_DSM_QF_BARRIER : 0, .a = kn_dsm.pos, .b = bar};
    knit_status_t st = acquire(&q);
    pthread_mutex_unlock(&kn_dsm.call);
    return st;
}

knit_status_t kn_dsm_acquire(void)
{
    return acquire_at(0);
}

knit_status_t kn_dsm_barrier_on(knit_comm_t *comm)
{
    knit_status_t st = knit_dsm_flush();
    /* every rank's release is complete once every rank is here: under
     * update the acquire has nothing left to do, under invalidate it
     * learns what the others wrote (and, at a barrier of every rank,
     * homes may move to the pages' writers first: docs/dsm.md) */
    knit_status_t st2 = kn_dsm.base ? knit_barrier(comm) : KNIT_ERR_STATE;
    if (st2 == KNIT_OK) {
        int all = knit_comm_size(comm) == knit_size(kn_dsm.ctx);
        st2 = acquire_at(all ? ++kn_dsm.barriers : 0);
    }
    return st != KNIT_OK ? st : st2;
}

knit_status_t knit_dsm_barrier(void)
{
    if (!kn_dsm.base)
        return not_mapped();
    return kn_dsm_barrier_on(knit_comm_world(kn_dsm.ctx));
}

knit_status_t kn_dsm_count(uint64_t id, uint64_t step, uint64_t limit, uint64_t askers, uint64_t parts,
                           unsigned flags, kn_dsm_count_t *out)
{
    if (!kn_dsm.base)
        return not_mapped();
    kn_dsm_q_t q = {.op = KN_DSM_Q_COUNT, .flags = flags, .a = id, .b = step, .nruns = limit, .nmasks = askers,
                    .nnotes = parts};
    pthread_mutex_lock(&kn_dsm.call);
    knit_status_t st = kn_dsm_ask(&q, sizeof(q), out, sizeof(*out));
    pthread_mutex_unlock(&kn_dsm.call);
    return st;
}

/* A request whose answer may be long in coming (a lock's grant): the
 * process's other DSM calls go on meanwhile (kn_dsm.call is let go
 * between looks).  Under kn_dsm.call. */
static knit_status_t ask_waiting(const void *args, size_t len)
{
    knit_mreq_t *r;
    knit_status_t st = knit_module_request(kn_dsm.mod, args, len, &r);
    if (st != KNIT_OK) {
        kn_dsm_error("a request to the node's agent failed: %s", knit_strerror(st));
        return st;
    }
    for (unsigned look = 0;; look++) {
        int done = 0;
        char why[256] = "";
        size_t n = 0;
        st = knit_request_test(&r, &done, why, sizeof(why) - 1, &n);
        if (done || st != KNIT_OK) {
            if (st != KNIT_OK && n) /* the agent's reason */
                kn_dsm_error("%.*s", (int)(n < sizeof(why) ? n : sizeof(why) - 1), why);
            else if (st != KNIT_OK)
                kn_dsm_error("a request to the node's agent failed: %s", knit_strerror(st));
            return st;
        }
        pthread_mutex_unlock(&kn_dsm.call);
        if (look < 64)
            sched_yield();
        else
            nanosleep(&(struct timespec){0, look < 256 ? 20000 : 100000}, NULL);
        pthread_mutex_lock(&kn_dsm.call);
    }
}

static int held_at(uint64_t id)
{
    for (int i = 0; i < kn_dsm.nheld; i++)
        if (kn_dsm.held[i] == id)
            return i;
    return -1;
}

static knit_status_t lock(uint64_t id, unsigned flags)
{
    if (!kn_dsm.base)
        return not_mapped();
    pthread_mutex_lock(&kn_dsm.call);
    knit_status_t st;
    if (held_at(id) >= 0) {
        kn_dsm_error("lock %llu: this process holds it already", (unsigned long long)id);
        st = KNIT_ERR_STATE;
    } else if (kn_dsm.nheld == KN_DSM_HELD_MAX) {
        kn_dsm_error("lock %llu: this process holds %d locks, the most it may", (unsigned long long)id,
                     KN_DSM_HELD_MAX);
        st = KNIT_ERR_AGAIN;
    } else if (kn_dsm.invalidate && kn_dsm.protect) {
        /* what this process wrote goes home first, so that the pages the
         * grant invalidates hold nothing of it */
        st = kn_dsm_release();
        kn_dsm_q_t q = {.op = KN_DSM_Q_LOCK, .flags = flags, .a = id, .b = kn_dsm.pos};
        if (st == KNIT_OK)
            st = acquire(&q);
        if (st == KNIT_OK)
            kn_dsm.held[kn_dsm.nheld++] = id;
    } else {
        /* (held while asked for, so that the process asks once) */
        kn_dsm.held[kn_dsm.nheld++] = id;
        kn_dsm_q_t q = {.op = KN_DSM_Q_LOCK, .flags = flags, .a = id};
        st = ask_waiting(&q, sizeof(q));
        if (st != KNIT_OK)
            kn_dsm.held[held_at(id)] = kn_dsm.held[--kn_dsm.nheld];
    }
    pthread_mutex_unlock(&kn_dsm.call);
    return st;
}

knit_status_t knit_dsm_lock(uint64_t id)
{
    return lock(id, 0);
}

knit_status_t kn_dsm_trylock(uint64_t id)
{
    return lock(id, KN_DSM_QF_TRY);
}

/* The unlock of id, after a release of everything this process wrote
 * (addr NULL) or of [addr, addr + len) only. */
static knit_status_t unlock(uint64_t id, const void *addr, size_t len)
{
    if (!kn_dsm.base)
        return not_mapped();
    pthread_mutex_lock(&kn_dsm.call);
    knit_status_t st;
    int at = held_at(id);
    if (at < 0) {
        kn_dsm_error("lock %llu: this process does not hold it", (unsigned long long)id);
        st = KNIT_ERR_STATE;
    } else {
        /* what was written under it is everywhere before the next holder */
        st = addr ? kn_dsm_release_range(addr, len) : kn_dsm_release();
        kn_dsm_q_t q = {.op = KN_DSM_Q_UNLOCK, .a = id};
        knit_status_t st2 = kn_dsm_ask(&q, sizeof(q), NULL, 0);
        kn_dsm.held[at] = kn_dsm.held[--kn_dsm.nheld];
        if (st == KNIT_OK)
            st = st2;
    }
    pthread_mutex_unlock(&kn_dsm.call);
    return st;
}

knit_status_t knit_dsm_unlock(uint64_t id)
{
    return unlock(id, NULL, 0);
}

knit_status_t kn_dsm_unlock_range(uint64_t id, const void *addr, size_t len)
{
    return unlock(id, addr, len);
}

void *knit_dsm_alloc(size_t size)
{
    if (!kn_dsm.base) {
        not_mapped();
        return NULL;
    }
    if (!size || size > kn_dsm.size) {
        kn_dsm_error("knit_dsm_alloc(%zu): the size must be 1 .. the region's %zu bytes", size, kn_dsm.size);
        return NULL;
    }
    kn_dsm_q_t q = {.op = KN_DSM_Q_ALLOC, .a = size, .b = size >= KN_DSM_PAGE ? KN_DSM_PAGE : 16};
    uint64_t off = 0;
    pthread_mutex_lock(&kn_dsm.call);
    knit_status_t st = kn_dsm_ask(&q, sizeof(q), &off, sizeof(off));
    pthread_mutex_unlock(&kn_dsm.call);
    if (st != KNIT_OK || off >= kn_dsm.size) {
        kn_dsm_error("knit_dsm_alloc(%zu): %s", size,
                     st == KNIT_ERR_NOMEM ? "the region has no free range that large" : knit_strerror(st));
        return NULL;
    }
    return kn_dsm.base + off;
}

knit_status_t knit_dsm_free(void *p)
{
    if (!p)
        return KNIT_OK;
    if (!kn_dsm.base)
        return not_mapped();
    char *c = p;
    if (c < kn_dsm.base || c >= kn_dsm.base + kn_dsm.size) {
        kn_dsm_error("knit_dsm_free(%p): not in the region", p);
        return KNIT_ERR_INVAL;
    }
    kn_dsm_q_t q = {.op = KN_DSM_Q_FREE, .a = (uint64_t)(c - kn_dsm.base)};
    uint64_t len = 0;
    pthread_mutex_lock(&kn_dsm.call);
    knit_status_t st = kn_dsm_ask(&q, sizeof(q), &len, sizeof(len));
    pthread_mutex_unlock(&kn_dsm.call);
    if (st == KNIT_ERR_NOT_FOUND) {
        kn_dsm_error("knit_dsm_free(%p): not the start of an allocation (or freed already)", p);
        return KNIT_ERR_INVAL;
    }
    return st;
}
