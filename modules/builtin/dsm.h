/*
 * The agents' dsm module (modules/builtin/dsm.c: the dsmring and the
 * pages' homes; dsm_lockmgr.c: node 0's locks, memory and write
 * notices): what its two files share.  Built together into one .so.
 */
#ifndef KN_MODULES_DSM_H
#define KN_MODULES_DSM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "knit/module.h"
#include "dsm/dsm_mod.h"

extern const knit_mod_services_t *K;

/* A release's runs still to send (one request's worth). */
typedef struct part {
    struct part *next;
    uint64_t ticket;
    int final;
    uint64_t nruns, at;      /* runs[at] is the next, ... */
    uint64_t done;           /* ... its first `done` bytes sent */
    unsigned char *masks;    /* [KN_DSM_MASK] per masked run (after the runs) */
    kn_dsm_run_t runs[];
} part_t;

/* A ticket of this node: sent and not yet all around, or done out of
 * order (above the prefix). */
typedef struct ticket {
    struct ticket *next;
    uint64_t t;
    uint64_t msgs;           /* update messages not yet acknowledged */
    int sent_all;            /* its last part is sent */
} ticket_t;

/* invalidate: a rank's fetch, sent once no release of the node is on
 * its way (the home's copy then holds all that the node released) */
typedef struct fetch {
    struct fetch *next;
    uint64_t token, page, n;
    int32_t home;
    int sent;
    uint64_t ticket;         /* the node's releases started when it was sent */
} fetch_t;

typedef struct waiter {
    struct waiter *next;
    uint64_t bound, token;
    uint64_t nnotes;         /* invalidate: pages for node 0's log once the release is home */
    uint32_t notes[];
} waiter_t;

/* node 0: a named lock */
typedef struct lwait {
    struct lwait *next;
    int32_t node;
    uint64_t token;
    int64_t rank;
    uint64_t pos;            /* invalidate: the rank's log position */
} lwait_t;

typedef struct lock {
    struct lock *next;
    uint64_t id;
    int64_t holder;          /* rank, -1: free */
    lwait_t *head, *tail;
} lock_t;

/* node 0: the region's memory, free extents in address order */
typedef struct ext {
    uint64_t off, len;
} ext_t;

/* node 0: a counter (komp's loops) */
typedef struct counter {
    struct counter *next;
    uint64_t id, value, told;  /* told: askers that learnt it reached its limit */
} counter_t;

typedef struct blk {
    uint64_t off, len;       /* len 0: empty slot */
} blk_t;

/* node 0: an acquire held until a barrier's homes have moved */
typedef struct acqwait {
    struct acqwait *next;
    int32_t node;
    int64_t rank;
    uint64_t pos, token;
} acqwait_t;

typedef struct state {
    int32_t self, nnodes, next;
    int mapped;
    char *data, *twin;
    kn_dsm_meta_t *meta;
    kn_dsm_page_t *pages;
    uint64_t size, meta_len;   /* the region's bytes (data and twin alike), the meta file's */
    uint64_t window, frame, corrupt_every, nframes;
    int protocol;            /* 0 update (the ring), 1 invalidate (homes) */
    kn_dsm_homes_t homes;
    uint64_t heap_from;      /* the allocator's memory starts here */
    int32_t nranks;
    /* the ring */
    int have_token, wanting;
    uint32_t epoch;          /* this node's want epoch */
    uint32_t *served, *want; /* [nnodes] */
    part_t *parts, *parts_tail;
    ticket_t *tickets;       /* in flight */
    uint64_t prefix;         /* every ticket <= prefix is around */
    uint64_t *done;          /* finished above the prefix (unsorted) */
    uint64_t ndone, done_cap;
    waiter_t *waiters;
    fetch_t *fetches;        /* invalidate: waiting to go, or for their pages */
    uint64_t inflight;       /* bytes of this node's messages not acknowledged */
    char *buf;               /* one message being built */
    int32_t error;           /* sticky: a frame failed its check */
    char why[200];
    /* node 0 */
    lock_t *locks;
    counter_t *counters;
    ext_t *free;
    uint64_t nfree, free_cap;
    blk_t *blk;              /* open addressing by offset */
    uint64_t blk_cap, nblk;
    /* node 0, invalidate: the write notices, entry i at position log_first + i */
    uint32_t *log_page;
    int32_t *log_node;
    uint64_t log_first, log_len, log_cap;
    uint64_t *rank_pos;      /* [nranks]: each rank's position after its last acquire */
    uint64_t *mark;          /* [npages / 64]: a delta's pages, while it is built */
    /* node 0, invalidate, homes that follow their writers (KNIT_DSM_MIGRATE) */
    int migrate;
    uint64_t bar_done;       /* the last world barrier whose moves are made everywhere */
    uint64_t bar_pos;        /* the log's end at that barrier's first acquire */
    int bar_lost;            /* the log since grew too long to keep: the next barrier moves nothing */
    uint64_t moving;         /* the barrier whose moves the nodes are making (0: none) */
    int32_t moves_left;      /* nodes yet to answer MOVED */
    int32_t move_error;      /* a node could not make them */
    int32_t *who;            /* [npages], between two barriers: the one node that wrote a page, + 1 (-1: more) */
    acqwait_t *held;         /* acquires of the barrier being moved */
} state_t;

static inline state_t *S(knit_mod_ctx_t *m)
{
    return K->state(m);
}

/* dsm_lockmgr.c: node 0's side of a message, 1 when it was one of its
 * (LOCK, UNLOCK, ALLOC, FREE, NOTE, ACQ, COUNT); and what it holds, freed. */
int kn_lockmgr_message(knit_mod_ctx_t *m, state_t *s, int32_t from, const kn_dsm_msg_t *h, uint64_t len);
void kn_lockmgr_fini(state_t *s);
int32_t kn_dsm_moves_apply(state_t *s, const kn_dsm_move_t *mv, uint64_t n);

#endif
