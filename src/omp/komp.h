/*
 * komp: knit's OpenMP runtime (docs/openmp.md).  It exports libgomp's ABI
 * (the GOMP_* entry points gcc 12 emits and the omp_* API), so that
 * `knitcc -fopenmp` programs link against it instead of libgomp, and runs
 * them across nodes: one process per node, OpenMP threads inside each,
 * over the replicated region (src/dsm).
 *
 *   start.c   the process: the region's layout (the program's globals,
 *             the threads' stacks, the heap), main on the master node,
 *             the other nodes serving parallel regions, the end
 *   team.c    parallel regions, the thread pool, barriers, the omp_* API
 *   loop.c    work sharing: loops, sections, single, ordered
 *   sync.c    critical, atomic, locks, tasks, what is not supported
 *   atomic.c  gcc's out-of-line atomics (-fno-inline-atomics), cluster-wide
 *   heap.c    malloc and friends of the program: the region's heap
 *
 * Teams: T threads over the job's N nodes, node-major (node i has threads
 * [first_i, first_i + nlocal_i)); when T < N only nodes 0..T-1 take part.
 */
#ifndef KN_OMP_KOMP_H
#define KN_OMP_KOMP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "knit.h"

#define KOMP_SLOTS 64          /* threads of one node, at most (the stacks' slots) */
#define KOMP_WS_RING 64        /* one-node teams: work sharing constructs open at once */

enum komp_sched { KOMP_STATIC = 1, KOMP_DYNAMIC = 2, KOMP_GUIDED = 3, KOMP_AUTO = 4 };

/* A dynamic or guided loop (or sections) in the process: a one-node
 * team's counter, or across nodes the batch this node took. */
typedef struct komp_ws {
    uint64_t seq;              /* the construct (0: the slot is free) */
    uint64_t next;             /* iterations handed out */
    int done;                  /* threads that saw it end */
    uint64_t ordered;          /* ordered: the next iteration whose turn it is */
    uint64_t bfrom, bto;       /* across nodes: this node's batch of iterations left */
    int ended;                 /* across nodes: the team's counter is spent */
} komp_ws_t;

typedef struct komp_team {
    uint64_t gen;              /* the job's parallel region count: part of counter ids */
    int nthreads, nodes, first, nlocal;
    knit_comm_t *comm;         /* the team's nodes (NULL: one node) */
    void (*fn)(void *);
    void *data;
    int level;                 /* nesting: 1 for the outermost */
    _Atomic unsigned bar_count;
    _Atomic unsigned bar_gen;
    pthread_mutex_t ws_lock;
    komp_ws_t ws[KOMP_WS_RING];
    _Atomic unsigned ws_wait;  /* futex: a slot was freed */
    void *copy;                /* one node: single copyprivate's data */
    /* a combined parallel loop (or sections, kind -1): every thread is in it from the start */
    int pre_kind;              /* 0: none; else enum komp_sched + 1, or -1 */
    long long pre_start, pre_end, pre_incr, pre_chunk;
} komp_team_t;

/* The loop a thread is in. */
typedef struct komp_loop {
    int kind;                  /* enum komp_sched */
    int ull, up;               /* unsigned long long iteration space (up: counting up) */
    int ordered;
    long long start, incr;     /* (ull: as unsigned) */
    uint64_t n;                /* iterations */
    uint64_t chunk;
    uint64_t seq;              /* the construct */
    uint64_t next_static;      /* static: the next chunk's number for this thread */
    uint64_t from, to;         /* the chunk being run (iterations) */
    int turn;                  /* ordered: this thread has the turn for [from, to) */
    int ended;                 /* told there is no more */
} komp_loop_t;

typedef struct komp_thr {
    komp_team_t *team;         /* NULL outside parallel regions */
    int tid;
    int local;                 /* the thread's index in its process */
    int own;                   /* its stack's owned range (-1: none) */
    uint64_t ws;               /* work sharing constructs begun in this team */
    komp_loop_t loop;
    int level;                 /* parallel regions around it (active or not) */
    int outer_tid, outer_n;    /* its number and team size at level 1 */
    int active_level;
    int single;                /* one-node teams: singles begun */
} komp_thr_t;

/* The shared block: in the region, one for the job. */
typedef struct komp_shared {
    void *copy;                /* single copyprivate: the executing thread's data */
} komp_shared_t;

typedef struct komp {
    int ready;                 /* komp_main ran (else the process runs alone, like libgomp) */
    int multi;                 /* more than one node: the region is up */
    knit_ctx_t *ctx;
    int node, nnodes;
    int threads_per_node;      /* OMP_NUM_THREADS (default: the node's cpus) */
    int nthreads_var;          /* the team size a parallel region gets by default */
    int dyn_var, max_active_levels;
    int run_sched, run_chunk;  /* OMP_SCHEDULE */
    size_t stack_size;
    char *slice;               /* this node's slots of stacks */
    komp_shared_t *shared;
    uint64_t gen;
    komp_team_t team;          /* the process's part of the current team */
    knit_comm_t *comms[KOMP_SLOTS + 1]; /* teams of m nodes, m < nnodes */
    /* the pool */
    pthread_t pool[KOMP_SLOTS];
    komp_thr_t *pool_thr[KOMP_SLOTS];
    int npool;
    _Atomic unsigned pool_gen;
    komp_team_t *pool_team;
    int exiting;
    int exit_code;
    uintptr_t text_lo, text_hi; /* the program's code: its malloc calls get the region */
} komp_t;

extern komp_t komp;
komp_thr_t *komp_thr(void);

/* start.c */
_Noreturn void komp_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void komp_not_supported(const char *what) __attribute__((noreturn));
void komp_own_live(komp_thr_t *t);   /* the thread's stack in use is from here up */
/* a function of the program as an offset into it, and back (the nodes may load it elsewhere) */
uintptr_t komp_fn_offset(void (*fn)(void *));
void (*komp_fn_at(uintptr_t off))(void *);
void komp_slot(int i, char **lo, char **hi);  /* this node's stack slot i */
int komp_own_slot(int i);                     /* ... owned by this process: its owned range */
void komp_node_end(int code) __attribute__((noreturn)); /* told to end by the master */
/* src/omp/link/komp_begin.c's __wrap_main and __wrap_exit call these */
int komp_main(int argc, char **argv, char **envp, int (*main_fn)(int, char **, char **), char *const marks[4]);
void komp_exit(int code);

/* The region's memory (the adopted globals, the stacks, the heap; not
 * the holes between). */
int komp_in_region(const void *p);

/* team.c */
void komp_bcast_end(int code);   /* the master: the others leave komp_serve */
void komp_barrier(komp_thr_t *t);
void komp_run_team(komp_team_t *tm, int local); /* a thread of this process runs its part */
void komp_serve(void) __attribute__((noreturn));
void komp_wait_change(_Atomic unsigned *word, unsigned old);
void komp_wake(_Atomic unsigned *word);
void komp_region(void (*fn)(void *), void *data, unsigned nthreads);
/* kind: enum komp_sched, 0 runtime, -1 sections (count = end) */
void komp_region_loop(void (*fn)(void *), void *data, unsigned nthreads, int kind, long start, long end, long incr,
                      long chunk);

/* loop.c */
int komp_loop_init(komp_thr_t *t, int ull, int up, long long start, long long end, long long incr, int kind,
                   long long chunk, int ordered);
int komp_loop_next(komp_thr_t *t, uint64_t *from, uint64_t *to);
uint64_t komp_ws_id(const komp_team_t *tm, uint64_t seq);

/* sync.c */
void komp_lock_global(uint64_t id);
void komp_unlock_global(uint64_t id);
/* komp_unlock_global after an atomic operation of order mo on [p, p + n):
 * relaxed, consume or acquire releases only the pages of [p, p + n) this
 * process wrote (OpenMP's atomic without a memory-order clause orders
 * nothing else); release and stronger, everything. */
void komp_unlock_global_atomic(uint64_t id, const void *p, size_t n, int mo);
int komp_multi_team(void);  /* the calling thread's team spans nodes */

/* heap.c */
void komp_heap_start(void);

#endif
