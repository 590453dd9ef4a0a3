/*
 * The replicated region inside a rank (docs/dsm.md): region.c maps it and
 * its node's files, write.c finds this process's writes and releases
 * them, sync.c has the calls that order them (flush, locks, barrier) and
 * the region's memory.
 */
#ifndef KN_DSM_DSM_INT_H
#define KN_DSM_DSM_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "knit.h"
#include "knit/dsm.h"
#include "dsm/dsm_mod.h"

#define KN_DSM_HELD_MAX 64   /* locks one process holds at once */
#define KN_DSM_ADOPT_MAX 4
#define KN_DSM_OWN_MAX 256   /* owned ranges of one process */

/* Where the region goes and what is in it (knit_dsm_init: anywhere, all
 * fresh; komp: the program's globals, its threads' stacks, its heap). */
typedef struct kn_dsm_layout {
    uintptr_t base;              /* 0: KNIT_DSM_ADDR or a place the ranks agree on */
    uint64_t size;
    /* the process's own memory at base + off becomes the region's,
     * content and all (the node's lowest rank's content); below
     * map_from nothing else of [base, base + size) is the region's */
    struct {
        uint64_t off, len;
    } adopt[KN_DSM_ADOPT_MAX];
    int nadopt;
    uint64_t map_from;           /* [map_from, size): fresh memory, mapped where nothing is */
    uint64_t own_zone, own_slice; /* bytes: node i's slice of the zone is homed at node i */
    uint64_t heap_from;          /* knit_dsm_alloc's memory starts here */
} kn_dsm_layout_t;

/* A range of this process's that stays writable and goes out whole (from
 * its live bound) at every release: a thread's stack. */
typedef struct kn_dsm_own {
    char *lo, *hi;
    _Atomic(char *) live;        /* [live, hi) is in use */
} kn_dsm_own_t;

typedef struct kn_dsm {
    knit_ctx_t *ctx;
    kn_dsm_layout_t layout;
    knit_module_t *mod;
    char *base;
    size_t size;
    uint64_t npages;
    int nnodes;
    int node;
    int protect;                 /* writes are tracked (more than one node) */
    int invalidate;              /* KNIT_DSM_PROTOCOL=invalidate */
    kn_dsm_homes_t homes;        /* invalidate: where pages are homed */
    uint64_t barriers;           /* barriers of every rank so far (invalidate: their acquires' numbers) */
    _Atomic uint64_t *inval;     /* invalidate: [npages / 64] pages this process must fetch first */
    uint64_t pos;                /* invalidate: the write notices seen (node 0's log position) */
    kn_dsm_delta_t *delta;       /* an acquire's answer */
    size_t delta_cap;
    char *twin;
    kn_dsm_meta_t *meta;
    kn_dsm_page_t *pages;
    size_t meta_len;
    char name[3][KN_DSM_NAME_MAX]; /* data, twin, meta */
    /* pages this process made writable since its last release */
    _Atomic uint64_t *bits;      /* [npages / 64] */
    /* update: pages kept writable across releases (write.c, KNIT_DSM_KEEP):
     * keep[p] 0, or 1 + the releases in a row that found p unchanged;
     * seen[p] the last release that had p in its list */
    uint8_t *keep;
    uint32_t *seen;
    uint32_t nrel;
    int keep_max;
    uint32_t *dirty, *work;      /* [npages] each: the list, and a release's copy */
    uint64_t ndirty;
    atomic_flag dirty_lock;
    /* a release seals the pages it takes (list, protection, bits) while no
     * thread of the process is between a page's bit and its mprotect */
    _Atomic int faulting, sealing;
    size_t bits_len, list_len;
    kn_dsm_run_t *runs;          /* a release's runs */
    uint64_t runs_cap;
    unsigned char *masks;        /* ... and the masks of its scattered pages */
    uint64_t masks_cap;
    kn_dsm_own_t own[KN_DSM_OWN_MAX];
    _Atomic int nown;
    pthread_mutex_t call;        /* one request to the agent at a time (and one release) */
    uint64_t held[KN_DSM_HELD_MAX];
    int nheld;
    struct sigaction old_segv;
    char err[320];
} kn_dsm_t;

extern kn_dsm_t kn_dsm;

/* Offset off of the region is mapped in this process (a layout's holes
 * are not the region's). */
static inline int kn_dsm_holds(uint64_t off)
{
    if (off >= kn_dsm.layout.map_from)
        return off < kn_dsm.size;
    for (int k = 0; k < kn_dsm.layout.nadopt; k++)
        if (off - kn_dsm.layout.adopt[k].off < kn_dsm.layout.adopt[k].len)
            return 1;
    return 0;
}

/* this process's last error, also logged at debug level */
void kn_dsm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* write.c */
int kn_dsm_track_start(void);   /* 0, or -1 (kn_dsm.err says why) */
void kn_dsm_track_stop(void);
knit_status_t kn_dsm_release(void);   /* under kn_dsm.call */
/* knit_dsm_push: a release not waited for (at most one in flight; the next
 * release collects it).  Under kn_dsm.call. */
knit_status_t kn_dsm_push(void);
/* A release of the pages of [addr, addr + len) that this process wrote,
 * and of nothing else it wrote (the word of a relaxed atomic operation);
 * under update only: under invalidate (write notices go with every
 * release) and with one node, kn_dsm_release's.  Under kn_dsm.call. */
knit_status_t kn_dsm_release_range(const void *addr, size_t len);
/* invalidate: the pages of an acquire's answer lose their access */
void kn_dsm_invalidate(const kn_dsm_delta_t *d);

/* One request to the node's agent and its answer (under kn_dsm.call). */
knit_status_t kn_dsm_ask(const void *args, size_t len, void *result, size_t cap);

/* ---- for komp (src/omp), the region as an OpenMP program's memory ---- */

/* knit_dsm_init with a layout (collective). */
knit_status_t kn_dsm_init_layout(knit_ctx_t *ctx, const kn_dsm_layout_t *l);
/* Collective, at the end: flush and barrier, then the region is this
 * process's memory only (mapped, writable, no longer replicated). */
knit_status_t kn_dsm_detach(void);
/* [lo, lo + len) (pages not written since the last release; fresh: never
 * written at all) stays writable in this process and goes out at its
 * releases from the range's live bound: a slot, or -1. */
int kn_dsm_own(void *lo, size_t len, int fresh);
void kn_dsm_own_live(int slot, const void *live);
/* knit_dsm_lock, or KNIT_ERR_AGAIN at once when another rank holds it. */
knit_status_t kn_dsm_trylock(uint64_t id);
/* knit_dsm_unlock whose release is kn_dsm_release_range's (addr, len). */
knit_status_t kn_dsm_unlock_range(uint64_t id, const void *addr, size_t len);
/* knit_dsm_barrier among comm's ranks only. */
knit_status_t kn_dsm_barrier_on(knit_comm_t *comm);
/* invalidate: learn what other nodes wrote (an acquire); update: nothing. */
knit_status_t kn_dsm_acquire(void);
/* A step of node 0's counter id (dsm_mod.h, KN_DSM_Q_COUNT). */
knit_status_t kn_dsm_count(uint64_t id, uint64_t step, uint64_t limit, uint64_t askers, uint64_t parts,
                           unsigned flags, kn_dsm_count_t *out);

#endif
