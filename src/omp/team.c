/*
 * Parallel regions (docs/openmp.md): the team, the process's pool of
 * threads, barriers, komp_serve, and the omp_* API of threads and teams.
 *
 * A region across nodes: the master releases what it wrote (its stack
 * too, where gcc put the data the region's function gets), then
 * broadcasts the function (as an offset into the program: the nodes may
 * have it elsewhere), its data's address and the team's size; each node
 * taking part acquires (invalidate), wakes its threads and runs its part.
 * A barrier: the node's threads meet, the last of them releases, meets
 * the other nodes (knit_barrier) and acquires, then wakes the others.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dsm/dsm_int.h"
#include "util/time.h"
#include "omp/komp.h"
#include "util/compiler.h"

static __thread __attribute__((tls_model("initial-exec"))) komp_thr_t thr = {.own = -1};

komp_thr_t *komp_thr(void)
{
    return &thr;
}

/* ------------------------------------------------------------ waiting */

void komp_wait_change(_Atomic unsigned *word, unsigned old)
{
    for (int i = 0; i < 2000; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != old)
            return;
        kn_cpu_relax();
    }
    for (int i = 0; i < 20; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != old)
            return;
        sched_yield();
    }
    while (atomic_load_explicit(word, memory_order_acquire) == old)
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
}

void komp_wake(_Atomic unsigned *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* ------------------------------------------------------------ barriers */

static void cluster_sync(komp_team_t *tm)
{
    knit_status_t st = kn_dsm_barrier_on(tm->comm);
    if (st != KNIT_OK)
        komp_fatal("a barrier across nodes failed: %s (%s)", knit_strerror(st), knit_dsm_last_error());
}

void komp_barrier(komp_thr_t *t)
{
    komp_team_t *tm = t->team;
    if (!tm || tm->nthreads == 1)
        return;
    komp_own_live(t);
    unsigned gen = atomic_load_explicit(&tm->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&tm->bar_count, 1, memory_order_acq_rel) + 1 == (unsigned)tm->nlocal) {
        atomic_store_explicit(&tm->bar_count, 0, memory_order_relaxed);
        if (tm->comm)
            cluster_sync(tm);
        atomic_fetch_add_explicit(&tm->bar_gen, 1, memory_order_release);
        komp_wake(&tm->bar_gen);
    } else {
        komp_wait_change(&tm->bar_gen, gen);
    }
}

/* ------------------------------------------------------------ the pool */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static uint64_t pool_seq;   /* regions dispatched to the pool */

/* A combined parallel loop (or sections): the thread is in it from the start. */
static void preset_loop(komp_thr_t *t, const komp_team_t *tm)
{
    if (tm->pre_kind)
        komp_loop_init(t, 0, 1, tm->pre_start, tm->pre_end, tm->pre_incr,
                       tm->pre_kind < 0 ? KOMP_DYNAMIC : tm->pre_kind - 1, tm->pre_kind < 0 ? 1 : tm->pre_chunk, 0);
}

void komp_run_team(komp_team_t *tm, int local)
{
    komp_thr_t *t = &thr;
    t->team = tm;
    t->tid = tm->first + local;
    t->local = local;
    t->ws = 0;
    t->single = 0;
    t->level = tm->level;
    t->active_level = tm->nthreads > 1 ? 1 : 0;
    t->outer_tid = t->tid;
    t->outer_n = tm->nthreads;
    memset(&t->loop, 0, sizeof(t->loop));
    komp_own_live(t);
    preset_loop(t, tm);
    tm->fn(tm->data);
    komp_barrier(t);
    t->team = NULL;
    t->level = t->active_level = 0;
}

static void *pool_main(int local, uint64_t seen)
{
    thr.local = local;
    pthread_mutex_lock(&pool_lock);
    komp.pool_thr[local] = &thr;
    for (;;) {
        while (pool_seq == seen)
            pthread_cond_wait(&pool_cond, &pool_lock);
        seen = pool_seq;
        komp_team_t *tm = komp.pool_team;
        int member = local < tm->nlocal;
        pthread_mutex_unlock(&pool_lock);
        if (member)
            komp_run_team(tm, local);
        pthread_mutex_lock(&pool_lock);
    }
    return NULL;
}

typedef struct pool_start {
    int local, own;
    uint64_t seq;              /* the regions dispatched before it: not its */
} pool_start_t;

static void *pool_entry(void *arg)
{
    pool_start_t *ps = arg;
    thr.own = ps->own;
    int local = ps->local;
    uint64_t seq = ps->seq;
    free(ps);
    return pool_main(local, seq);
}

/* Threads 1 .. n - 1 of this process exist (their stacks in the region's
 * slots when it is up). */
static void pool_grow(int n)
{
    for (int i = komp.npool + 1; i < n; i++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pool_start_t *ps = malloc(sizeof(*ps));
        if (!ps)
            komp_fatal("no memory for a thread");
        ps->local = i;
        ps->own = -1;
        pthread_mutex_lock(&pool_lock);
        ps->seq = pool_seq;
        pthread_mutex_unlock(&pool_lock);
        if (komp.multi) {
            char *lo, *hi;
            komp_slot(i, &lo, &hi);
            ps->own = komp_own_slot(i);
            pthread_attr_setstack(&a, lo, (size_t)(hi - lo));
        } else {
            pthread_attr_setstacksize(&a, komp.stack_size);
        }
        int e = pthread_create(&komp.pool[i], &a, pool_entry, ps);
        pthread_attr_destroy(&a);
        if (e)
            komp_fatal("cannot start thread %d of node %d: %s", i, komp.node, strerror(e));
        komp.npool = i;
    }
}

/* This process's part of team tm: its threads run it, thread 0 here. */
static void run_here(komp_team_t *tm)
{
    if (tm->nlocal > 1) {
        pool_grow(tm->nlocal);
        pthread_mutex_lock(&pool_lock);
        komp.pool_team = tm;
        pool_seq++;
        pthread_cond_broadcast(&pool_cond);
        pthread_mutex_unlock(&pool_lock);
    }
    komp_thr_t saved = thr;
    komp_run_team(tm, 0);
    int own = thr.own;
    thr = saved;
    thr.own = own;
}

/* ------------------------------------------------------------ regions */

typedef struct cmd {
    uint64_t op;               /* 1 parallel, 2 the end (fn = exit code) */
    uint64_t fn, data, nthreads, gen, sched, chunk;
    int64_t pre_kind, pre_start, pre_end, pre_incr, pre_chunk;
} cmd_t;

/* The team of n threads over the job's nodes: this node's part. */
static void team_shape(komp_team_t *tm, int n)
{
    int nodes = komp.multi ? komp.nnodes : 1;
    int m = n < nodes ? n : nodes;
    tm->nthreads = n;
    tm->nodes = m;
    tm->first = 0;
    tm->nlocal = 0;
    for (int i = 0; i < m; i++) {
        int here = n / m + (i < n % m);
        if (i == komp.node) {
            tm->nlocal = here;
            break;
        }
        tm->first += here;
    }
    if (!komp.multi)
        tm->nlocal = n;
    tm->comm = NULL;
    if (komp.multi && m > 1 && komp.node < m) {
        if (m == komp.nnodes) {
            tm->comm = knit_comm_world(komp.ctx);
        } else {
            if (!komp.comms[m]) {
                int ranks[KOMP_SLOTS + 1];
                for (int i = 0; i < m; i++)
                    ranks[i] = i;
                if (knit_comm_create(komp.ctx, ranks, m, 0x2b000000u | (uint32_t)m, &komp.comms[m]) != KNIT_OK)
                    komp_fatal("a communicator of %d nodes could not be made", m);
            }
            tm->comm = komp.comms[m];
        }
    }
}

static void preset_of(komp_team_t *tm, const cmd_t *c)
{
    tm->pre_kind = (int)c->pre_kind;
    tm->pre_start = c->pre_start;
    tm->pre_end = c->pre_end;
    tm->pre_incr = c->pre_incr;
    tm->pre_chunk = c->pre_chunk;
}

static void team_reset(komp_team_t *tm, uint64_t gen, void (*fn)(void *), void *data, const cmd_t *c)
{
    preset_of(tm, c);
    tm->gen = gen;
    tm->fn = fn;
    tm->data = data;
    tm->level = 1;
    atomic_store(&tm->bar_count, 0);
    memset(tm->ws, 0, sizeof(tm->ws));
    tm->copy = NULL;
}

/* A region inside a region: this thread alone (max-active-levels 1). */
static void nested(void (*fn)(void *), void *data, const cmd_t *c)
{
    komp_team_t tm;
    memset(&tm, 0, sizeof(tm));
    preset_of(&tm, c);
    pthread_mutex_init(&tm.ws_lock, NULL);
    tm.nthreads = tm.nodes = tm.nlocal = 1;
    tm.gen = ~(uint64_t)0; /* (its constructs are this thread's alone) */
    tm.fn = fn;
    tm.data = data;
    komp_thr_t saved = thr;
    thr.team = &tm;
    thr.tid = 0;
    thr.ws = 0;
    thr.single = 0;
    thr.level = saved.level + 1;
    memset(&thr.loop, 0, sizeof(thr.loop));
    preset_loop(&thr, &tm);
    fn(data);
    int own = thr.own;
    thr = saved;
    thr.own = own;
    pthread_mutex_destroy(&tm.ws_lock);
}

static void region(void (*fn)(void *), void *data, unsigned nthreads, cmd_t *c)
{
    if (thr.team) {
        nested(fn, data, c);
        return;
    }
    int n = nthreads ? (int)nthreads : komp.nthreads_var;
    int cap = (komp.multi ? komp.nnodes : 1) * (KOMP_SLOTS - 1);
    if (n > cap)
        n = cap;
    if (n < 1)
        n = 1;
    komp_team_t *tm = &komp.team;
    static int init;
    if (!init) {
        pthread_mutex_init(&tm->ws_lock, NULL);
        init = 1;
    }
    team_reset(tm, ++komp.gen, fn, data, c);
    team_shape(tm, n);
    if (komp.multi) {
        /* what the master wrote, its stack with the region's data first */
        komp_own_live(&thr);
        knit_status_t st = knit_dsm_flush();
        c->op = 1;
        c->fn = komp_fn_offset(fn);
        c->data = (uint64_t)(uintptr_t)data;
        c->nthreads = (uint64_t)n;
        c->gen = komp.gen;
        c->sched = (uint64_t)komp.run_sched;
        c->chunk = (uint64_t)komp.run_chunk;
        if (st != KNIT_OK || knit_bcast(knit_comm_world(komp.ctx), c, sizeof(*c), KNIT_BYTE, 0) != KNIT_OK)
            komp_fatal("a parallel region could not start on the other nodes: %s", knit_dsm_last_error());
    }
    run_here(tm);
}

void komp_region(void (*fn)(void *), void *data, unsigned nthreads)
{
    cmd_t c = {0};
    region(fn, data, nthreads, &c);
}

void komp_region_loop(void (*fn)(void *), void *data, unsigned nthreads, int kind, long start, long end, long incr,
                      long chunk)
{
    cmd_t c = {.pre_kind = kind < 0 ? -1 : kind + 1, .pre_start = start, .pre_end = end, .pre_incr = incr,
               .pre_chunk = chunk};
    region(fn, data, nthreads, &c);
}

/* The nodes but the master: a region at a time until the end. */
void komp_serve(void)
{
    knit_comm_t *world = knit_comm_world(komp.ctx);
    komp_team_t *tm = &komp.team;
    pthread_mutex_init(&tm->ws_lock, NULL);
    for (;;) {
        cmd_t c;
        komp_own_live(&thr);
        if (knit_bcast(world, &c, sizeof(c), KNIT_BYTE, 0) != KNIT_OK)
            komp_fatal("node %d lost the master", komp.node);
        if (c.op == 2)
            komp_node_end((int)(int64_t)c.fn);
        komp.run_sched = (int)c.sched;
        komp.run_chunk = (int)c.chunk;
        komp.gen = c.gen;
        team_reset(tm, c.gen, komp_fn_at((uintptr_t)c.fn), (void *)(uintptr_t)c.data, &c);
        team_shape(tm, (int)c.nthreads);
        if (komp.node >= tm->nodes)
            continue;
        if (kn_dsm_acquire() != KNIT_OK)
            komp_fatal("node %d could not learn what the master wrote: %s", komp.node, knit_dsm_last_error());
        run_here(tm);
    }
}

void komp_bcast_end(int code)
{
    cmd_t c = {.op = 2, .fn = (uint64_t)(int64_t)code};
    knit_bcast(knit_comm_world(komp.ctx), &c, sizeof(c), KNIT_BYTE, 0);
}

/* ------------------------------------------------------------ GOMP_parallel */

void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags)
{
    (void)flags;
    komp_region(fn, data, num_threads);
}

void GOMP_parallel_start(void (*fn)(void *), void *data, unsigned num_threads)
{
    (void)fn;
    (void)data;
    (void)num_threads;
    komp_not_supported("GOMP_parallel_start (code of gcc before 4.9)");
}

void GOMP_parallel_end(void)
{
    komp_not_supported("GOMP_parallel_end (code of gcc before 4.9)");
}

void GOMP_barrier(void)
{
    komp_barrier(&thr);
}

/* ------------------------------------------------------------ omp_* */

int omp_get_thread_num(void)
{
    return thr.team ? thr.tid : 0;
}

int omp_get_num_threads(void)
{
    return thr.team ? thr.team->nthreads : 1;
}

int omp_get_max_threads(void)
{
    return komp.nthreads_var;
}

void omp_set_num_threads(int n)
{
    if (n > 0)
        komp.nthreads_var = n;
}

int omp_get_num_procs(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (int)(cpus > 0 ? cpus : 1) * (komp.multi ? komp.nnodes : 1);
}

int omp_in_parallel(void)
{
    return thr.active_level > 0;
}

int omp_get_level(void)
{
    return thr.level;
}

int omp_get_active_level(void)
{
    return thr.active_level;
}

/* Level 1 is the outermost region (its team, thr.outer_*); the levels
 * inside it are one thread each (one active level). */
int omp_get_ancestor_thread_num(int level)
{
    if (level < 0 || level > thr.level)
        return -1;
    return level == 1 ? thr.outer_tid : 0;
}

int omp_get_team_size(int level)
{
    if (level < 0 || level > thr.level)
        return -1;
    return level == 1 ? thr.outer_n : 1;
}

void omp_set_dynamic(int v)
{
    komp.dyn_var = v != 0;
}

int omp_get_dynamic(void)
{
    return komp.dyn_var;
}

void omp_set_nested(int v)
{
    komp.max_active_levels = v ? INT_MAX : 1;
}

int omp_get_nested(void)
{
    return komp.max_active_levels > 1;
}

void omp_set_max_active_levels(int v)
{
    if (v >= 0)
        komp.max_active_levels = v;
}

int omp_get_max_active_levels(void)
{
    return komp.max_active_levels;
}

int omp_get_supported_active_levels(void)
{
    return 1;
}

int omp_get_thread_limit(void)
{
    return (komp.multi ? komp.nnodes : 1) * (KOMP_SLOTS - 1);
}

void omp_set_schedule(int kind, int chunk)
{
    int k = kind & ~(int)0x80000000u;
    if (k >= KOMP_STATIC && k <= KOMP_AUTO) {
        komp.run_sched = k;
        komp.run_chunk = chunk < 1 ? 0 : chunk;
    }
}

void omp_get_schedule(int *kind, int *chunk)
{
    *kind = komp.run_sched;
    *chunk = komp.run_chunk ? komp.run_chunk : 1;
}

double omp_get_wtime(void)
{
    return kn_time_sec();
}

double omp_get_wtick(void)
{
    struct timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int omp_in_final(void) { return 0; }
int omp_get_cancellation(void) { return 0; }
int omp_get_proc_bind(void) { return 0; }
int omp_get_num_places(void) { return 0; }
int omp_get_place_num(void) { return -1; }
int omp_get_default_device(void) { return 0; }
void omp_set_default_device(int d) { (void)d; }
int omp_get_num_devices(void) { return 0; }
int omp_get_device_num(void) { return 0; }
int omp_get_num_teams(void) { return 1; }
int omp_get_team_num(void) { return 0; }
int omp_is_initial_device(void) { return 1; }
int omp_get_initial_device(void) { return 0; }
int omp_get_max_task_priority(void) { return 0; }

/* knit's own: the node of the calling thread, and how many there are
 * (examples/omp/mandel.c colors rows by node). */
int knit_omp_node(void)
{
    return komp.multi ? komp.node : 0;
}

int knit_omp_num_nodes(void)
{
    return komp.multi ? komp.nnodes : 1;
}
