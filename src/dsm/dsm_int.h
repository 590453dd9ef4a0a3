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

typedef struct kn_dsm {
    knit_ctx_t *ctx;
    knit_module_t *mod;
    char *base;
    size_t size;
    uint64_t npages;
    int nnodes;
    int node;
    int protect;                 /* writes are tracked (more than one node) */
    int invalidate;              /* KNIT_DSM_PROTOCOL=invalidate */
    uint64_t home_pages;         /* invalidate: page p's home is node (p / home_pages) % nnodes */
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
    uint32_t *dirty, *work;      /* [npages] each: the list, and a release's copy */
    uint64_t ndirty;
    atomic_flag dirty_lock;
    size_t bits_len, list_len;
    kn_dsm_run_t *runs;          /* a release's runs */
    uint64_t runs_cap;
    unsigned char *masks;        /* ... and the masks of its scattered pages */
    uint64_t masks_cap;
    pthread_mutex_t call;        /* one request to the agent at a time (and one release) */
    uint64_t held[KN_DSM_HELD_MAX];
    int nheld;
    struct sigaction old_segv;
    char err[320];
} kn_dsm_t;

extern kn_dsm_t kn_dsm;

/* this process's last error, also logged at debug level */
void kn_dsm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* write.c */
int kn_dsm_track_start(void);   /* 0, or -1 (kn_dsm.err says why) */
void kn_dsm_track_stop(void);
knit_status_t kn_dsm_release(void);   /* under kn_dsm.call */
/* invalidate: the pages of an acquire's answer lose their access */
void kn_dsm_invalidate(const kn_dsm_delta_t *d);

/* One request to the node's agent and its answer (under kn_dsm.call). */
knit_status_t kn_dsm_ask(const void *args, size_t len, void *result, size_t cap);

#endif
