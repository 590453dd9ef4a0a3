/*
 * Work sharing (docs/openmp.md): loops of every schedule, sections,
 * single, ordered.
 *
 * Iterations are numbered 0 .. n - 1 whatever the loop's bounds and step.
 * static: computed by each thread from its number, nothing shared.
 * dynamic, guided (and sections, a dynamic loop of chunk 1): a counter of
 * iterations handed out.  A team on one node keeps it in the process (a
 * ring of the constructs open at once); across nodes it is node 0's
 * agent's (kn_dsm_count: a round trip per chunk), made on first use and
 * dropped once every thread of the team was told the loop is over.
 * ordered: the turn goes chunk by chunk in iteration order; a thread
 * waits for its chunk's turn at its ordered region (or at its next chunk
 * when it had none), and passes it on at the next.  single: thread 0 runs
 * it (OpenMP leaves the choice to the runtime), so it needs nothing shared.
 */
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "dsm/dsm_int.h"
#include "omp/komp.h"

#define ORDERED_BIT (1ull << 63)
#define LIVE_FLUSH 0.1    /* seconds */
#define BATCH_PARTS 2     /* across nodes, a node's batch: what is left / (team threads * this) */

double omp_get_wtime(void);

uint64_t komp_ws_id(const komp_team_t *tm, uint64_t seq)
{
    return (tm->gen << 20) | (seq & 0xfffff);
}

static int across(const komp_team_t *tm)
{
    return tm->comm != NULL;
}

/* ------------------------------------------------------------ one node's constructs */

static komp_ws_t *ws_slot(komp_team_t *tm, uint64_t seq)
{
    komp_ws_t *w = &tm->ws[seq % KOMP_WS_RING];
    for (;;) {
        pthread_mutex_lock(&tm->ws_lock);
        if (w->seq == seq)
            return w;
        if (!w->seq) {
            memset(w, 0, sizeof(*w));
            w->seq = seq;
            return w;
        }
        /* an older construct some thread is still in: KOMP_WS_RING nowait
         * constructs ahead of it */
        unsigned v = atomic_load(&tm->ws_wait);
        pthread_mutex_unlock(&tm->ws_lock);
        komp_wait_change(&tm->ws_wait, v);
    }
}

/* (under ws_lock) a thread of the process saw the construct end */
static void ws_done(komp_team_t *tm, komp_ws_t *w)
{
    if (++w->done == tm->nlocal) {
        w->seq = 0;
        atomic_fetch_add(&tm->ws_wait, 1);
        komp_wake(&tm->ws_wait);
    }
}

/* ------------------------------------------------------------ the chunks */

static uint64_t iterations(int ull, int up, long long start, long long end, long long incr)
{
    if (ull) {
        unsigned long long s = (unsigned long long)start, e = (unsigned long long)end,
                           i = (unsigned long long)incr;
        if (up)
            return e > s ? (e - s + i - 1) / i : 0;
        return s > e ? (s - e - i - 1) / -i : 0;
    }
    if (incr > 0)
        return end > start ? ((unsigned long long)end - (unsigned long long)start + (unsigned long long)incr - 1) /
                                 (unsigned long long)incr
                           : 0;
    return start > end ? ((unsigned long long)start - (unsigned long long)end - (unsigned long long)incr - 1) /
                             (unsigned long long)-incr
                       : 0;
}

static int static_next(komp_thr_t *t, uint64_t *from, uint64_t *to)
{
    komp_loop_t *l = &t->loop;
    uint64_t T = (uint64_t)t->team->nthreads, id = (uint64_t)t->tid;
    if (!l->chunk) { /* one block each */
        if (l->next_static++)
            return 0;
        uint64_t q = l->n / T, r = l->n % T;
        uint64_t lo = id < r ? id * (q + 1) : r * (q + 1) + (id - r) * q;
        uint64_t len = q + (id < r);
        if (!len)
            return 0;
        *from = lo;
        *to = lo + len;
        return 1;
    }
    uint64_t c = l->next_static++ * T + id; /* chunks id, id + T, ... */
    if (c >= (l->n + l->chunk - 1) / l->chunk)
        return 0;
    *from = c * l->chunk;
    *to = *from + l->chunk < l->n ? *from + l->chunk : l->n;
    return 1;
}

/* Across nodes: the node's threads take chunks from a batch of the
 * team's counter, and the thread that finds it empty asks node 0 for the
 * next (the others wait for it): a guided share of what is left (at least
 * a chunk, whole chunks), so that a loop of many small chunks costs a few
 * round trips per node, not one per chunk. */
static int batch_take(komp_thr_t *t, komp_ws_t *w, uint64_t chunk)
{
    komp_loop_t *l = &t->loop;
    komp_team_t *tm = t->team;
    while (w->bfrom >= w->bto) {
        if (w->ended)
            return 0;
        kn_dsm_count_t c;
        knit_status_t st = kn_dsm_count(komp_ws_id(tm, l->seq), chunk, l->n, (uint64_t)tm->nodes,
                              (uint64_t)tm->nthreads * BATCH_PARTS, KN_DSM_QF_GUIDED, &c);
        if (st != KNIT_OK)
            komp_fatal("a loop's next chunks: %s", knit_dsm_last_error());
        if (!c.step)
            w->ended = 1;
        w->bfrom = c.from;
        w->bto = c.from + c.step;
    }
    return 1;
}

static int dynamic_next(komp_thr_t *t, uint64_t *from, uint64_t *to)
{
    komp_loop_t *l = &t->loop;
    komp_team_t *tm = t->team;
    uint64_t chunk = l->chunk ? l->chunk : 1;
    if (across(tm)) {
        /* every LIVE_FLUSH at most, a chunk handed out is a point where
         * what this node wrote starts out (a push: nothing waits for it,
         * OpenMP asks for no flush here): the master sees a loop's
         * results while it runs (examples/omp/mandel.c shows them) */
        static __thread double last;
        double now = omp_get_wtime();
        if (now - last >= LIVE_FLUSH) {
            if (knit_dsm_push() != KNIT_OK)
                komp_fatal("a loop's push: %s", knit_dsm_last_error());
            last = now;
        }
    }
    komp_ws_t *w = ws_slot(tm, l->seq);
    uint64_t at, left;
    if (across(tm)) {
        if (!batch_take(t, w, chunk)) {
            pthread_mutex_unlock(&tm->ws_lock);
            return 0;
        }
        at = w->bfrom;
        left = w->bto - w->bfrom;
    } else {
        at = w->next;
        left = w->next < l->n ? l->n - w->next : 0;
    }
    uint64_t step = chunk;
    if (l->kind == KOMP_GUIDED) {
        uint64_t q = (left + (uint64_t)tm->nlocal - 1) / (uint64_t)tm->nlocal;
        if (q > step)
            step = q;
    }
    if (step > left)
        step = left;
    *from = at;
    *to = at + step;
    if (across(tm))
        w->bfrom += step;
    else
        w->next += step;
    pthread_mutex_unlock(&tm->ws_lock);
    return step != 0;
}

/* ------------------------------------------------------------ ordered */

static uint64_t ordered_at(komp_thr_t *t, uint64_t step)
{
    komp_team_t *tm = t->team;
    komp_loop_t *l = &t->loop;
    if (across(tm)) {
        kn_dsm_count_t c;
        if (kn_dsm_count(komp_ws_id(tm, l->seq) | ORDERED_BIT, step, l->n, 1, 1, KN_DSM_QF_ORDERED, &c) != KNIT_OK)
            komp_fatal("an ordered loop's turn: %s", knit_dsm_last_error());
        return c.from;
    }
    komp_ws_t *w = ws_slot(tm, l->seq);
    uint64_t v = w->ordered;
    w->ordered += step;
    pthread_mutex_unlock(&tm->ws_lock);
    return v;
}

static void turn_wait(komp_thr_t *t)
{
    komp_loop_t *l = &t->loop;
    if (l->turn || !l->ordered || l->from == l->to)
        return;
    for (unsigned look = 0; ordered_at(t, 0) != l->from; look++) {
        if (look < 32)
            sched_yield();
        else
            nanosleep(&(struct timespec){0, across(t->team) ? 50000 : 10000}, NULL);
    }
    if (across(t->team) && kn_dsm_acquire() != KNIT_OK)
        komp_fatal("an ordered region's acquire: %s", knit_dsm_last_error());
    l->turn = 1;
}

/* The chunk [from, to) is over: the turn goes on. */
static void turn_pass(komp_thr_t *t)
{
    komp_loop_t *l = &t->loop;
    if (!l->ordered || l->from == l->to)
        return;
    turn_wait(t);
    if (across(t->team) && knit_dsm_flush() != KNIT_OK)
        komp_fatal("an ordered region's release: %s", knit_dsm_last_error());
    ordered_at(t, l->to - l->from);
    l->turn = 0;
    l->from = l->to;
}

void GOMP_ordered_start(void)
{
    komp_thr_t *t = komp_thr();
    if (t->team)
        turn_wait(t);
}

void GOMP_ordered_end(void)
{
}

/* ------------------------------------------------------------ loops */

int komp_loop_init(komp_thr_t *t, int ull, int up, long long start, long long end, long long incr, int kind,
                   long long chunk, int ordered)
{
    komp_loop_t *l = &t->loop;
    memset(l, 0, sizeof(*l));
    if (kind == 0) { /* runtime */
        kind = komp.run_sched;
        chunk = komp.run_chunk;
    }
    if (kind == KOMP_AUTO)
        kind = KOMP_STATIC;
    l->kind = kind;
    l->ull = ull;
    l->up = up;
    l->ordered = ordered;
    l->start = start;
    l->incr = incr;
    l->n = iterations(ull, up, start, end, incr);
    l->chunk = chunk > 0 ? (uint64_t)chunk : 0;
    l->seq = ++t->ws;
    return 0;
}

int komp_loop_next(komp_thr_t *t, uint64_t *from, uint64_t *to)
{
    komp_loop_t *l = &t->loop;
    if (l->ended)
        return 0;
    turn_pass(t);
    int more;
    if (!t->team) { /* outside a region: all of it, once */
        more = !l->next_static++ && l->n;
        *from = 0;
        *to = l->n;
    } else {
        more = l->kind == KOMP_STATIC ? static_next(t, from, to) : dynamic_next(t, from, to);
    }
    if (!more) {
        l->ended = 1;
        if (t->team && (l->kind != KOMP_STATIC || (l->ordered && !across(t->team)))) {
            /* (the construct's slot goes once every thread of the process is past it) */
            komp_ws_t *w = ws_slot(t->team, l->seq);
            ws_done(t->team, w);
            pthread_mutex_unlock(&t->team->ws_lock);
        }
        return 0;
    }
    l->from = *from;
    l->to = *to;
    return 1;
}

static bool next_long(long *istart, long *iend)
{
    komp_thr_t *t = komp_thr();
    uint64_t from, to;
    if (!komp_loop_next(t, &from, &to))
        return false;
    *istart = (long)(t->loop.start + (long long)from * t->loop.incr);
    *iend = (long)(t->loop.start + (long long)to * t->loop.incr);
    return true;
}

static bool next_ull(unsigned long long *istart, unsigned long long *iend)
{
    komp_thr_t *t = komp_thr();
    uint64_t from, to;
    if (!komp_loop_next(t, &from, &to))
        return false;
    unsigned long long s = (unsigned long long)t->loop.start, i = (unsigned long long)t->loop.incr;
    *istart = s + from * i;
    *iend = s + to * i;
    return true;
}

static bool start_long(long start, long end, long incr, int kind, long chunk, int ordered, long *istart,
                       long *iend)
{
    komp_thr_t *t = komp_thr();
    komp_loop_init(t, 0, 1, start, end, incr, kind, chunk, ordered);
    return next_long(istart, iend);
}

static bool start_ull(bool up, unsigned long long start, unsigned long long end, unsigned long long incr, int kind,
                      unsigned long long chunk, int ordered, unsigned long long *istart, unsigned long long *iend)
{
    komp_thr_t *t = komp_thr();
    komp_loop_init(t, 1, up, (long long)start, (long long)end, (long long)incr, kind, (long long)chunk, ordered);
    return next_ull(istart, iend);
}

/* The schedule of GOMP_loop_start's sched argument (GFS_*). */
static int gfs_kind(long sched)
{
    return (int)(sched & 0x7fffffffL);
}

#define LOOP_LONG(name, kind, ordered)                                                                       \
    bool GOMP_loop_##name##_start(long start, long end, long incr, long chunk, long *istart, long *iend)     \
    {                                                                                                        \
        return start_long(start, end, incr, kind, chunk, ordered, istart, iend);                             \
    }                                                                                                        \
    bool GOMP_loop_##name##_next(long *istart, long *iend)                                                   \
    {                                                                                                        \
        return next_long(istart, iend);                                                                      \
    }
#define LOOP_ULL(name, kind, ordered)                                                                        \
    bool GOMP_loop_ull_##name##_start(bool up, unsigned long long start, unsigned long long end,             \
                                      unsigned long long incr, unsigned long long chunk,                     \
                                      unsigned long long *istart, unsigned long long *iend)                  \
    {                                                                                                        \
        return start_ull(up, start, end, incr, kind, chunk, ordered, istart, iend);                          \
    }                                                                                                        \
    bool GOMP_loop_ull_##name##_next(unsigned long long *istart, unsigned long long *iend)                   \
    {                                                                                                        \
        return next_ull(istart, iend);                                                                       \
    }
#define LOOP_RUNTIME(name, ordered)                                                                          \
    bool GOMP_loop_##name##_start(long start, long end, long incr, long *istart, long *iend)                 \
    {                                                                                                        \
        return start_long(start, end, incr, 0, 0, ordered, istart, iend);                                    \
    }                                                                                                        \
    bool GOMP_loop_##name##_next(long *istart, long *iend)                                                   \
    {                                                                                                        \
        return next_long(istart, iend);                                                                      \
    }                                                                                                        \
    bool GOMP_loop_ull_##name##_start(bool up, unsigned long long start, unsigned long long end,             \
                                      unsigned long long incr, unsigned long long *istart,                   \
                                      unsigned long long *iend)                                              \
    {                                                                                                        \
        return start_ull(up, start, end, incr, 0, 0, ordered, istart, iend);                                 \
    }                                                                                                        \
    bool GOMP_loop_ull_##name##_next(unsigned long long *istart, unsigned long long *iend)                   \
    {                                                                                                        \
        return next_ull(istart, iend);                                                                       \
    }

LOOP_LONG(static, KOMP_STATIC, 0)
LOOP_LONG(dynamic, KOMP_DYNAMIC, 0)
LOOP_LONG(guided, KOMP_GUIDED, 0)
LOOP_LONG(nonmonotonic_dynamic, KOMP_DYNAMIC, 0)
LOOP_LONG(nonmonotonic_guided, KOMP_GUIDED, 0)
LOOP_LONG(ordered_static, KOMP_STATIC, 1)
LOOP_LONG(ordered_dynamic, KOMP_DYNAMIC, 1)
LOOP_LONG(ordered_guided, KOMP_GUIDED, 1)
LOOP_ULL(static, KOMP_STATIC, 0)
LOOP_ULL(dynamic, KOMP_DYNAMIC, 0)
LOOP_ULL(guided, KOMP_GUIDED, 0)
LOOP_ULL(nonmonotonic_dynamic, KOMP_DYNAMIC, 0)
LOOP_ULL(nonmonotonic_guided, KOMP_GUIDED, 0)
LOOP_ULL(ordered_static, KOMP_STATIC, 1)
LOOP_ULL(ordered_dynamic, KOMP_DYNAMIC, 1)
LOOP_ULL(ordered_guided, KOMP_GUIDED, 1)
LOOP_RUNTIME(runtime, 0)
LOOP_RUNTIME(nonmonotonic_runtime, 0)
LOOP_RUNTIME(maybe_nonmonotonic_runtime, 0)
LOOP_RUNTIME(ordered_runtime, 1)

static void no_reductions(uintptr_t *reductions, void **mem, const char *where)
{
    if (reductions || mem)
        komp_not_supported(where);
}

bool GOMP_loop_start(long start, long end, long incr, long sched, long chunk, long *istart, long *iend,
                     uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "task reductions and conditional lastprivate on a loop");
    if (!istart)
        komp_not_supported("a loop without bounds to return (GOMP_loop_start)");
    return start_long(start, end, incr, gfs_kind(sched), chunk, 0, istart, iend);
}

bool GOMP_loop_ordered_start(long start, long end, long incr, long sched, long chunk, long *istart, long *iend,
                             uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "task reductions on an ordered loop");
    if (!istart)
        komp_not_supported("a loop without bounds to return (GOMP_loop_ordered_start)");
    return start_long(start, end, incr, gfs_kind(sched), chunk, 1, istart, iend);
}

bool GOMP_loop_ull_start(bool up, unsigned long long start, unsigned long long end, unsigned long long incr,
                         long sched, unsigned long long chunk, unsigned long long *istart, unsigned long long *iend,
                         uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "task reductions and conditional lastprivate on a loop");
    if (!istart)
        komp_not_supported("a loop without bounds to return (GOMP_loop_ull_start)");
    return start_ull(up, start, end, incr, gfs_kind(sched), chunk, 0, istart, iend);
}

bool GOMP_loop_ull_ordered_start(bool up, unsigned long long start, unsigned long long end,
                                 unsigned long long incr, long sched, unsigned long long chunk,
                                 unsigned long long *istart, unsigned long long *iend, uintptr_t *reductions,
                                 void **mem)
{
    no_reductions(reductions, mem, "task reductions on an ordered loop");
    if (!istart)
        komp_not_supported("a loop without bounds to return (GOMP_loop_ull_ordered_start)");
    return start_ull(up, start, end, incr, gfs_kind(sched), chunk, 1, istart, iend);
}

/* The loop's end: an ordered loop's last turn goes on; then the barrier. */
static void loop_finish(void)
{
    komp_thr_t *t = komp_thr();
    if (!t->loop.ended) {
        uint64_t from, to;
        while (komp_loop_next(t, &from, &to)) /* (a thread that left the loop early: the rest is done) */
            ;
    }
}

void GOMP_loop_end(void)
{
    loop_finish();
    komp_barrier(komp_thr());
}

void GOMP_loop_end_nowait(void)
{
    loop_finish();
}

bool GOMP_loop_end_cancel(void)
{
    GOMP_loop_end();
    return false;
}

/* ------------------------------------------------------------ combined parallel loops */

#define PARALLEL_LOOP(name, kind)                                                                            \
    void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned nthreads, long start, long end,  \
                                   long incr, long chunk, unsigned flags)                                    \
    {                                                                                                        \
        (void)flags;                                                                                         \
        komp_region_loop(fn, data, nthreads, kind, start, end, incr, chunk);                                 \
    }

void komp_region_loop(void (*fn)(void *), void *data, unsigned nthreads, int kind, long start, long end, long incr,
                      long chunk);

PARALLEL_LOOP(static, KOMP_STATIC)
PARALLEL_LOOP(dynamic, KOMP_DYNAMIC)
PARALLEL_LOOP(guided, KOMP_GUIDED)
PARALLEL_LOOP(nonmonotonic_dynamic, KOMP_DYNAMIC)
PARALLEL_LOOP(nonmonotonic_guided, KOMP_GUIDED)

#define PARALLEL_LOOP_RUNTIME(name)                                                                          \
    void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned nthreads, long start, long end,  \
                                   long incr, unsigned flags)                                                \
    {                                                                                                        \
        (void)flags;                                                                                         \
        komp_region_loop(fn, data, nthreads, 0, start, end, incr, 0);                                        \
    }
PARALLEL_LOOP_RUNTIME(runtime)
PARALLEL_LOOP_RUNTIME(nonmonotonic_runtime)
PARALLEL_LOOP_RUNTIME(maybe_nonmonotonic_runtime)

/* ------------------------------------------------------------ sections */

unsigned GOMP_sections_start(unsigned count)
{
    komp_thr_t *t = komp_thr();
    komp_loop_init(t, 0, 1, 0, count, 1, KOMP_DYNAMIC, 1, 0);
    uint64_t from, to;
    return komp_loop_next(t, &from, &to) ? (unsigned)from + 1 : 0;
}

unsigned GOMP_sections2_start(unsigned count, uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "task reductions on sections");
    return GOMP_sections_start(count);
}

unsigned GOMP_sections_next(void)
{
    uint64_t from, to;
    return komp_loop_next(komp_thr(), &from, &to) ? (unsigned)from + 1 : 0;
}

void GOMP_sections_end(void)
{
    GOMP_loop_end();
}

void GOMP_sections_end_nowait(void)
{
    GOMP_loop_end_nowait();
}

bool GOMP_sections_end_cancel(void)
{
    GOMP_loop_end();
    return false;
}

void GOMP_parallel_sections(void (*fn)(void *), void *data, unsigned nthreads, unsigned count, unsigned flags)
{
    (void)flags;
    komp_region_loop(fn, data, nthreads, -1, 0, count, 1, 1);
}

/* ------------------------------------------------------------ single */

bool GOMP_single_start(void)
{
    komp_thr_t *t = komp_thr();
    return !t->team || t->tid == 0;
}

void *GOMP_single_copy_start(void)
{
    komp_thr_t *t = komp_thr();
    if (!t->team || t->tid == 0)
        return NULL;
    komp_barrier(t);
    return across(t->team) ? komp.shared->copy : t->team->copy;
}

void GOMP_single_copy_end(void *data)
{
    komp_thr_t *t = komp_thr();
    if (!t->team)
        return;
    if (across(t->team))
        komp.shared->copy = data;
    else
        t->team->copy = data;
    komp_barrier(t);
}
