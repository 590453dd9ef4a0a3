/*
 * Mutual exclusion and tasks (docs/openmp.md): critical (named and
 * unnamed), GOMP_atomic_start/end, the omp_*_lock API, tasks, and the
 * entry points of what is not supported (they stop the program saying
 * so, never a wrong answer).
 *
 * A lock of the job is a lock id: a process-wide mutex for the threads of
 * one process, and across nodes the region's lock of the same id (its
 * grant is an acquire, its unlock a release: OpenMP's flushes at critical
 * and lock calls).  Named critical sections use the address of gcc's
 * `.gomp_critical_user_NAME` word, locks their own address: the
 * program's data is at one address on every node.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/dsm_int.h"
#include "omp/komp.h"

#define ID_CRITICAL 0x4b4f4d5000000001ull  /* "KOMP" */
#define ID_ATOMIC 0x4b4f4d5000000002ull
#define ID_NAMED (1ull << 60)
#define ID_LOCK (2ull << 60)

/* ------------------------------------------------------------ the process's half */

typedef struct entry {
    struct entry *next;
    uint64_t id;
    pthread_mutex_t m;
    komp_thr_t *owner;         /* nest locks */
    int count;
} entry_t;

#define BUCKETS 1024
static entry_t *table[BUCKETS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static entry_t *entry_of(uint64_t id)
{
    uint64_t h = (id * 0x9e3779b97f4a7c15ull) >> 54;
    pthread_mutex_lock(&table_lock);
    entry_t *e = table[h];
    while (e && e->id != id)
        e = e->next;
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e)
            komp_fatal("no memory for a lock");
        e->id = id;
        pthread_mutex_init(&e->m, NULL);
        e->next = table[h];
        table[h] = e;
    }
    pthread_mutex_unlock(&table_lock);
    return e;
}

int komp_multi_team(void)
{
    return komp.multi;
}

static void global_take(uint64_t id)
{
    komp_own_live(komp_thr());
    knit_status_t st = knit_dsm_lock(id);
    if (st != KNIT_OK)
        komp_fatal("a lock of the job (%#llx): %s", (unsigned long long)id, knit_dsm_last_error());
}

static void global_give(uint64_t id, const void *p, size_t n)
{
    komp_own_live(komp_thr());
    knit_status_t st = p ? kn_dsm_unlock_range(id, p, n) : knit_dsm_unlock(id);
    if (st != KNIT_OK)
        komp_fatal("a lock of the job (%#llx): %s", (unsigned long long)id, knit_dsm_last_error());
}

void komp_lock_global(uint64_t id)
{
    entry_t *e = entry_of(id);
    pthread_mutex_lock(&e->m);
    if (komp.multi)
        global_take(id);
}

void komp_unlock_global(uint64_t id)
{
    entry_t *e = entry_of(id);
    if (komp.multi)
        global_give(id, NULL, 0);
    pthread_mutex_unlock(&e->m);
}

void komp_unlock_global_atomic(uint64_t id, const void *p, size_t n, int mo)
{
    entry_t *e = entry_of(id);
    if (komp.multi) {
        int narrow = mo == __ATOMIC_RELAXED || mo == __ATOMIC_CONSUME || mo == __ATOMIC_ACQUIRE;
        global_give(id, narrow ? p : NULL, n);
    }
    pthread_mutex_unlock(&e->m);
}

/* ------------------------------------------------------------ critical, atomic */

void GOMP_critical_start(void)
{
    komp_lock_global(ID_CRITICAL);
}

void GOMP_critical_end(void)
{
    komp_unlock_global(ID_CRITICAL);
}

void GOMP_critical_name_start(void **pptr)
{
    komp_lock_global(ID_NAMED | (uint64_t)(uintptr_t)pptr);
}

void GOMP_critical_name_end(void **pptr)
{
    komp_unlock_global(ID_NAMED | (uint64_t)(uintptr_t)pptr);
}

void GOMP_atomic_start(void)
{
    komp_lock_global(ID_ATOMIC);
}

void GOMP_atomic_end(void)
{
    komp_unlock_global(ID_ATOMIC);
}

/* ------------------------------------------------------------ locks */

typedef struct { unsigned char x[4]; } omp_lock_t;
typedef struct { unsigned char x[16]; } omp_nest_lock_t;

static uint64_t lock_id(const void *l)
{
    return ID_LOCK | (uint64_t)(uintptr_t)l;
}

void omp_init_lock(omp_lock_t *l)
{
    memset(l, 0, sizeof(*l));
    entry_of(lock_id(l));
}

void omp_init_lock_with_hint(omp_lock_t *l, int hint)
{
    (void)hint;
    omp_init_lock(l);
}

void omp_destroy_lock(omp_lock_t *l)
{
    (void)l;
}

void omp_set_lock(omp_lock_t *l)
{
    komp_lock_global(lock_id(l));
}

void omp_unset_lock(omp_lock_t *l)
{
    komp_unlock_global(lock_id(l));
}

int omp_test_lock(omp_lock_t *l)
{
    entry_t *e = entry_of(lock_id(l));
    if (pthread_mutex_trylock(&e->m))
        return 0;
    if (komp.multi) {
        komp_own_live(komp_thr());
        knit_status_t st = kn_dsm_trylock(lock_id(l));
        if (st == KNIT_ERR_AGAIN) {
            pthread_mutex_unlock(&e->m);
            return 0;
        }
        if (st != KNIT_OK)
            komp_fatal("a lock of the job (%#llx): %s", (unsigned long long)lock_id(l), knit_dsm_last_error());
    }
    return 1;
}

void omp_init_nest_lock(omp_nest_lock_t *l)
{
    memset(l, 0, sizeof(*l));
    entry_of(lock_id(l));
}

void omp_init_nest_lock_with_hint(omp_nest_lock_t *l, int hint)
{
    (void)hint;
    omp_init_nest_lock(l);
}

void omp_destroy_nest_lock(omp_nest_lock_t *l)
{
    (void)l;
}

void omp_set_nest_lock(omp_nest_lock_t *l)
{
    entry_t *e = entry_of(lock_id(l));
    komp_thr_t *me = komp_thr();
    if (e->owner == me) {
        e->count++;
        return;
    }
    komp_lock_global(lock_id(l));
    e->owner = me;
    e->count = 1;
}

void omp_unset_nest_lock(omp_nest_lock_t *l)
{
    entry_t *e = entry_of(lock_id(l));
    if (e->owner != komp_thr() || e->count < 1)
        komp_fatal("omp_unset_nest_lock: the calling thread does not hold the lock");
    if (--e->count)
        return;
    e->owner = NULL;
    komp_unlock_global(lock_id(l));
}

int omp_test_nest_lock(omp_nest_lock_t *l)
{
    entry_t *e = entry_of(lock_id(l));
    komp_thr_t *me = komp_thr();
    if (e->owner == me)
        return ++e->count;
    if (!omp_test_lock((omp_lock_t *)l))
        return 0;
    e->owner = me;
    e->count = 1;
    return 1;
}

/* ------------------------------------------------------------ tasks */

#define TASK_FLAG_DETACH (1u << 13)
#define TASK_FLAG_REDUCTION (1u << 12)

/* A task runs at once, on the thread that makes it (an undeferred task:
 * its dependences are met in the order the thread makes its tasks). */
static void task_run(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
                     long long start, long long end, int loop)
{
    if (!cpyfn && !loop) {
        fn(data);
        return;
    }
    if (arg_align < 1)
        arg_align = 1;
    char *raw = __builtin_alloca((size_t)(arg_size + arg_align - 1));
    char *arg = (char *)(((uintptr_t)raw + (uintptr_t)arg_align - 1) & ~((uintptr_t)arg_align - 1));
    if (cpyfn)
        cpyfn(arg, data);
    else
        memcpy(arg, data, (size_t)arg_size);
    if (loop) { /* a taskloop's task: its range in its first two words */
        ((long long *)arg)[0] = start;
        ((long long *)arg)[1] = end;
    }
    fn(arg);
}

void GOMP_task(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
               bool if_clause, unsigned flags, void **depend, int priority, void *detach)
{
    (void)if_clause;
    (void)depend;
    (void)priority;
    if ((flags & TASK_FLAG_DETACH) && detach)
        komp_not_supported("detachable tasks (detach clause)");
    task_run(fn, data, cpyfn, arg_size, arg_align, 0, 0, 0);
}

void GOMP_taskloop(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
                   unsigned flags, unsigned long num_tasks, int priority, long start, long end, long step)
{
    (void)num_tasks;
    (void)priority;
    (void)step;
    if (flags & TASK_FLAG_REDUCTION)
        komp_not_supported("taskloop reductions");
    if ((step > 0 && start >= end) || (step < 0 && start <= end))
        return;
    task_run(fn, data, cpyfn, arg_size, arg_align, start, end, 1);
}

void GOMP_taskloop_ull(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size,
                       long arg_align, unsigned flags, unsigned long num_tasks, int priority, unsigned long long start,
                       unsigned long long end, unsigned long long step)
{
    (void)num_tasks;
    (void)priority;
    (void)step;
    if (flags & TASK_FLAG_REDUCTION)
        komp_not_supported("taskloop reductions");
    if (start == end)
        return;
    task_run(fn, data, cpyfn, arg_size, arg_align, (long long)start, (long long)end, 1);
}

void GOMP_taskwait(void) {}
void GOMP_taskwait_depend(void **depend) { (void)depend; }
void GOMP_taskyield(void) {}
void GOMP_taskgroup_start(void) {}
void GOMP_taskgroup_end(void) {}

/* ------------------------------------------------------------ cancellation */

/* OMP_CANCELLATION=true stops at the start (start.c); without it a
 * cancel construct does nothing, as OpenMP says. */
bool GOMP_cancel(int which, bool do_cancel)
{
    (void)which;
    (void)do_cancel;
    return false;
}

bool GOMP_cancellation_point(int which)
{
    (void)which;
    return false;
}

bool GOMP_barrier_cancel(void)
{
    komp_barrier(komp_thr());
    return false;
}

/* ------------------------------------------------------------ not supported */

#define NOT_SUPPORTED(decl, what)                                                                            \
    void decl                                                                                                \
    {                                                                                                        \
        komp_not_supported(what);                                                                            \
    }

NOT_SUPPORTED(GOMP_target_ext(void), "target offloading (omp target)")
NOT_SUPPORTED(GOMP_target(void), "target offloading (omp target)")
NOT_SUPPORTED(GOMP_target_data(void), "target offloading (omp target data)")
NOT_SUPPORTED(GOMP_target_data_ext(void), "target offloading (omp target data)")
NOT_SUPPORTED(GOMP_target_end_data(void), "target offloading (omp target data)")
NOT_SUPPORTED(GOMP_target_update(void), "target offloading (omp target update)")
NOT_SUPPORTED(GOMP_target_update_ext(void), "target offloading (omp target update)")
NOT_SUPPORTED(GOMP_target_enter_exit_data(void), "target offloading (omp target enter/exit data)")
NOT_SUPPORTED(GOMP_teams(void), "teams")
NOT_SUPPORTED(GOMP_teams_reg(void), "teams")
NOT_SUPPORTED(GOMP_teams4(void), "teams")
NOT_SUPPORTED(GOMP_parallel_reductions(void), "task reductions on a parallel region")
NOT_SUPPORTED(GOMP_taskgroup_reduction_register(void), "task reductions")
NOT_SUPPORTED(GOMP_taskgroup_reduction_unregister(void), "task reductions")
NOT_SUPPORTED(GOMP_task_reduction_remap(void), "task reductions")
NOT_SUPPORTED(GOMP_workshare_task_reduction_unregister(void), "task reductions")
NOT_SUPPORTED(GOMP_loop_doacross_start(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_loop_doacross_static_start(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_loop_doacross_dynamic_start(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_loop_doacross_guided_start(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_loop_doacross_runtime_start(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_loop_ull_doacross_start(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_doacross_post(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_doacross_wait(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_doacross_ull_post(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_doacross_ull_wait(void), "doacross loops (ordered(n) with depend)")
NOT_SUPPORTED(GOMP_scope_start(void), "omp scope with reductions")
NOT_SUPPORTED(GOMP_alloc(void), "OpenMP allocators (allocate clause)")
NOT_SUPPORTED(GOMP_free(void), "OpenMP allocators (allocate clause)")
NOT_SUPPORTED(GOMP_offload_register_ver(void), "target offloading (an offload image)")
NOT_SUPPORTED(GOMP_offload_unregister_ver(void), "target offloading (an offload image)")

/* The error directive (OpenMP 5.1): at execution, fatal. */
void GOMP_error(const char *msg, size_t len)
{
    if (msg)
        komp_fatal("error directive: %.*s", (int)(len == (size_t)-1 ? strlen(msg) : len), msg);
    komp_fatal("error directive");
}

void GOMP_warning(const char *msg, size_t len)
{
    if (msg)
        fprintf(stderr, "knit: komp: warning directive: %.*s\n", (int)(len == (size_t)-1 ? strlen(msg) : len), msg);
}
