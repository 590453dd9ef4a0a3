/*
 * What the ranks (src/dsm) and the agents' built-in `dsm` module
 * (modules/builtin/dsm.c: the dsmring and the lockmgr) say to each other,
 * and the layout of a node's files that both of them map.  Header only:
 * the module includes it with <knit/module.h> and nothing else of knit.
 *
 * A node's replica of the region is three POSIX shared-memory files, made
 * by the node's lowest rank, mapped by its ranks and its agent:
 *   data   the region itself (sparse: a page costs memory once written)
 *   twin   page p's twin at the same offset, while some rank of the node
 *          has p writable (write-update: the page as it was when the
 *          first of them wrote it, plus what went out since)
 *   meta   kn_dsm_meta_t, then one kn_dsm_page_t per page
 * Every change of a page's twin, and every write of the agent into a page,
 * happens under the page's lock (KN_DSM_PG_LOCK in its word), so that a
 * rank's diff never sees a remote update as its own write.
 */
#ifndef KN_DSM_DSM_MOD_H
#define KN_DSM_DSM_MOD_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "util/compiler.h"

#define KN_DSM_VERSION 4
#define KN_DSM_PAGE 4096u
#define KN_DSM_MAGIC 0x6b6e6974647330ull   /* "knitds0" */
#define KN_DSM_NAME_MAX 96

/* A page's word: its lock, how many ranks of the node have it writable
 * (its twin exists while that is nonzero) and, under invalidate, where
 * the page's home moved (node + 1; 0: where kn_dsm_homes_t deals it).
 * Only the agent changes the home, at a barrier (KN_DSM_M_MOVE). */
#define KN_DSM_PG_LOCK 0x80000000u
#define KN_DSM_PG_HOME 0x7fff0000u
#define KN_DSM_PG_HOME_SHIFT 16
#define KN_DSM_PG_REFS 0x0000ffffu
#define KN_DSM_NODES_MAX 0x7ffe   /* nodes a home field can name */
typedef _Atomic uint32_t kn_dsm_page_t;

/* Counters of a node (KNIT_STATS): ranks and the agent add to them. */
typedef struct kn_dsm_counters {
    _Atomic uint64_t faults;      /* first writes to a protected page */
    _Atomic uint64_t diffs;       /* pages compared with their twins at a release */
    _Atomic uint64_t runs;        /* changed byte ranges found */
    _Atomic uint64_t released;    /* bytes in them */
    _Atomic uint64_t frames_out;  /* update frames this node's agent sent first */
    _Atomic uint64_t bytes_out;   /* their data bytes */
    _Atomic uint64_t frames_in;   /* update frames from other nodes applied here */
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bad_crc;     /* frames that failed their check here */
    _Atomic uint64_t releases;    /* releases that went to the agent */
    _Atomic uint64_t fetches;     /* invalidate: pages fetched from their homes */
    _Atomic uint64_t invalidated; /* invalidate: pages a rank of the node invalidated at an acquire */
    _Atomic uint64_t moved;       /* invalidate, node 0: pages whose homes moved to their writers */
} kn_dsm_counters_t;

typedef struct kn_dsm_meta {
    uint64_t magic, version;
    uint64_t size, npages;
    _Atomic uint64_t ticket;     /* releases started on the node (the last one's number) */
    _Atomic uint32_t ready;      /* the agent mapped the files */
    uint32_t pad;
    kn_dsm_counters_t c;
    char pad2[4096 - 48 - sizeof(kn_dsm_counters_t)];
    /* then kn_dsm_page_t page[npages] */
} kn_dsm_meta_t;

static inline kn_dsm_page_t *kn_dsm_pages(kn_dsm_meta_t *m)
{
    return (kn_dsm_page_t *)(m + 1);
}

static inline uint64_t kn_dsm_meta_bytes(uint64_t npages)
{
    return sizeof(kn_dsm_meta_t) + ((npages * sizeof(kn_dsm_page_t) + KN_DSM_PAGE - 1) & ~(uint64_t)(KN_DSM_PAGE - 1));
}

/* Requests (rank -> its agent): a kn_dsm_q_t, then for RELEASE nruns
 * kn_dsm_run_t (offsets in the region, sorted, disjoint) and nmasks masks
 * of KN_DSM_MASK bytes. */
enum kn_dsm_op {
    KN_DSM_Q_INIT = 1,   /* the node's lowest rank: map the files (kn_dsm_init_t follows) */
    KN_DSM_Q_RELEASE,    /* a = ticket, b = bound (complete when every release <= b is around), flags */
    KN_DSM_Q_LOCK,       /* a = lock id: complete when the lock is the rank's */
    KN_DSM_Q_UNLOCK,     /* a = lock id */
    KN_DSM_Q_ALLOC,      /* a = bytes, b = alignment: result a uint64_t offset */
    KN_DSM_Q_FREE,       /* a = offset: result the block's bytes */
    /* invalidate protocol */
    KN_DSM_Q_ACQUIRE,    /* a = the rank's log position: result kn_dsm_delta_t; KN_DSM_QF_BARRIER:
                          * b = the number of this world barrier (1, 2, ...) */
    KN_DSM_Q_FETCH,      /* a = a page, b = pages from it (of one home block, at most
                          * KN_DSM_FETCH_MAX): their home's copy into the node's replica */
    KN_DSM_Q_COUNT,      /* node 0's counter a (made at 0 on first use): result kn_dsm_count_t.
                          * b = the step; nruns = the limit: a step stops there; nmasks = the
                          * askers: the counter goes once that many were told it reached the
                          * limit (KN_DSM_QF_ORDERED: once it reaches it).  KN_DSM_QF_GUIDED:
                          * the step is the most of b and (limit - value) / nnotes, in whole b. */
};
#define KN_DSM_QF_MORE 1u    /* RELEASE: more runs of this ticket follow in another request */
#define KN_DSM_QF_GUIDED 2u  /* COUNT */
#define KN_DSM_QF_TRY 8u     /* LOCK: fails at once (KNIT_MOD_ERR_AGAIN) when another rank holds it */
#define KN_DSM_QF_ORDERED 4u /* COUNT */
#define KN_DSM_QF_BARRIER 16u /* ACQUIRE: every rank's, after a barrier of them all (homes may move) */

/* The answer to COUNT: the counter's value before, and the step taken
 * (0: it had reached its limit). */
typedef struct kn_dsm_count {
    uint64_t from, step;
} kn_dsm_count_t;

typedef struct kn_dsm_q {
    uint32_t op, flags;
    uint64_t a, b;
    uint64_t nruns, nmasks;
    uint64_t nnotes;        /* RELEASE, invalidate, the last part: its pages (uint32_t, after the masks), for
                             * node 0's log once the release is home */
} kn_dsm_q_t;

/* A page whose changes are scattered (more than KN_DSM_SCATTER runs)
 * goes as one masked run: its bytes from the first changed to the last,
 * and a mask of which of them changed (bit i of byte i / 8: byte off + i),
 * so that the unchanged bytes between, which another node may be writing,
 * are left alone everywhere. */
#define KN_DSM_MASK (KN_DSM_PAGE / 8)
#define KN_DSM_SCATTER 8
#define KN_DSM_RUN_MAX (1u << 30)   /* bytes of one run, at most */

/* A byte of a mask as a word: byte i all ones where bit i is set (a
 * table: a loop over the bits took a sixth of an agent's time applying
 * Himeno's masked pages, and of a rank's taking them into its twins). */
#define KN_DSM_SPB(x, i) ((x) & (1u << (i)) ? 0xffull << (8 * (i)) : 0)
#define KN_DSM_SP1(x)                                                                                         \
    (KN_DSM_SPB(x, 0) | KN_DSM_SPB(x, 1) | KN_DSM_SPB(x, 2) | KN_DSM_SPB(x, 3) | KN_DSM_SPB(x, 4) |           \
     KN_DSM_SPB(x, 5) | KN_DSM_SPB(x, 6) | KN_DSM_SPB(x, 7))
#define KN_DSM_SP4(x) KN_DSM_SP1(x), KN_DSM_SP1((x) + 1), KN_DSM_SP1((x) + 2), KN_DSM_SP1((x) + 3)
#define KN_DSM_SP16(x) KN_DSM_SP4(x), KN_DSM_SP4((x) + 4), KN_DSM_SP4((x) + 8), KN_DSM_SP4((x) + 12)
#define KN_DSM_SP64(x) KN_DSM_SP16(x), KN_DSM_SP16((x) + 16), KN_DSM_SP16((x) + 32), KN_DSM_SP16((x) + 48)
static const uint64_t kn_dsm_spread[256] = {KN_DSM_SP64(0u), KN_DSM_SP64(64u), KN_DSM_SP64(128u), KN_DSM_SP64(192u)};

typedef struct kn_dsm_run {
    uint64_t off;
    uint32_t len;
    uint32_t mask;          /* 0: every byte changed; else 1 + its mask's index (within one page) */
} kn_dsm_run_t;

typedef struct kn_dsm_init {
    uint64_t size;
    uint64_t window;        /* update bytes of this node in flight, at most */
    uint64_t frame;         /* data bytes of one update message, at most */
    uint64_t corrupt_every; /* testing: spoil the crc of every Nth frame sent (0: never) */
    uint64_t protocol;      /* 0 update, 1 invalidate */
    uint64_t home_pages;    /* invalidate: page p's home is node (p / home_pages) % nnodes, but for */
    uint64_t own_zone;      /* ... the pages [own_zone, own_zone + nnodes * own_slice): node i homes */
    uint64_t own_slice;     /*     slice i (komp's stacks; own_slice 0: no such zone) */
    uint64_t heap_from;     /* the allocator's memory starts at this offset (below it: the layout's) */
    uint64_t migrate;       /* invalidate: 1, a page one node alone wrote between two barriers moves its
                             * home there at the second (KNIT_DSM_MIGRATE) */
    char data[KN_DSM_NAME_MAX], twin[KN_DSM_NAME_MAX], meta[KN_DSM_NAME_MAX];
} kn_dsm_init_t;

#define KN_DSM_FETCH_MAX 16u     /* pages of one fetch */
#define KN_DSM_RUNS_MAX 65536u  /* runs in one RELEASE request */
#define KN_DSM_MASKS_MAX 1024u  /* masks in one RELEASE request */

/* Messages between agents.  UPD: `bytes` of frames follow, each a
 * kn_dsm_frame_t and its data, padded to 8 bytes; it goes around the
 * ring (node i -> i + 1) back to the node before its origin, which
 * answers ACK to the origin.  BAD: a frame failed its check (a = its
 * offset, b = the node that found it); the UPD goes no further. */
enum kn_dsm_msg_type {
    KN_DSM_M_UPD = 1, KN_DSM_M_ACK, KN_DSM_M_BAD,
    KN_DSM_M_WANT,       /* a = the sender's want epoch */
    KN_DSM_M_TOKEN,      /* 2 * nnodes uint32_t follow: served[], want[] */
    KN_DSM_M_LOCK,       /* to node 0: a = id, b = rank, ticket = request token (bytes 1: a try,
                          * answered by a REPLY of KNIT_MOD_ERR_AGAIN when it is held) */
    KN_DSM_M_GRANT,      /* from node 0: ticket = request token */
    KN_DSM_M_UNLOCK,     /* to node 0: a = id, b = rank */
    KN_DSM_M_ALLOC,      /* to node 0: a = bytes, b = alignment, ticket = token */
    KN_DSM_M_FREE,       /* to node 0: a = offset, ticket = token */
    KN_DSM_M_REPLY,      /* from node 0: ticket = token, a = result, b = status */
    /* invalidate protocol */
    KN_DSM_M_HUPD,       /* an update to the pages' home (frames as UPD); it answers ACK */
    KN_DSM_M_NOTE,       /* to node 0: `bytes` / 4 page numbers follow, ticket = token */
    KN_DSM_M_ACQ,        /* to node 0: a = log position, b = rank, ticket = token, c = the world
                          * barrier's number (0: an acquire of the rank alone) */
    KN_DSM_M_DELTA,      /* from node 0 (to ACQ, or a GRANT under invalidate): a = new
                          * position, `bytes` / 4 page numbers follow, ticket = token */
    KN_DSM_M_FETCH,      /* to a home: a = page, b = pages, ticket = token */
    KN_DSM_M_PAGE,       /* from the home: a = page, c = pages, b = their crc32c, c * KN_DSM_PAGE bytes follow */
    KN_DSM_M_COUNT,      /* to node 0: a = id, b = step, c = limit, ticket = token; a kn_dsm_count_q_t
                          * follows; the REPLY carries a = from, c = step (bytes = 16) */
    KN_DSM_M_MOVE,       /* from node 0 at a barrier: a = its number, `bytes` / 8 kn_dsm_move_t follow:
                          * the pages' new homes; answered by MOVED (a = the number, b = status) */
    KN_DSM_M_MOVED,
};

typedef struct kn_dsm_msg {
    uint32_t type;
    int32_t origin;
    uint64_t ticket;
    uint64_t a, b, c;       /* c: LOCK under invalidate, the rank's log position */
    uint64_t bytes;
} kn_dsm_msg_t;

typedef struct kn_dsm_count_q {
    uint64_t askers, flags, parts;
} kn_dsm_count_q_t;

/* The answer to ACQUIRE (and to LOCK under invalidate): the pages other
 * nodes wrote since the rank's position, and its new position. */
typedef struct kn_dsm_delta {
    uint64_t pos;
    uint64_t npages;
    /* then npages uint32_t */
} kn_dsm_delta_t;

/* Where pages are homed (invalidate): home blocks of `pages` pages round
 * robin over the nodes, except a zone of one slice per node, homed at its
 * node (the stacks of komp's threads: written by their node, read by the
 * others).  The zone and its slices are whole home blocks. */
typedef struct kn_dsm_homes {
    uint64_t pages;
    uint64_t zone, slice;   /* in pages; slice 0: no zone */
    int32_t nnodes;
    kn_dsm_page_t *words;   /* the node's page words (a home that moved), or NULL */
} kn_dsm_homes_t;

static inline int kn_dsm_in_zone(const kn_dsm_homes_t *h, uint64_t page)
{
    return h->slice && page >= h->zone && page - h->zone < (uint64_t)h->nnodes * h->slice;
}

static inline int32_t kn_dsm_home(const kn_dsm_homes_t *h, uint64_t page)
{
    if (kn_dsm_in_zone(h, page))
        return (int32_t)((page - h->zone) / h->slice);
    if (h->words) {
        uint32_t moved = (atomic_load_explicit(&h->words[page], memory_order_relaxed) & KN_DSM_PG_HOME) >>
                         KN_DSM_PG_HOME_SHIFT;
        if (moved)
            return (int32_t)moved - 1;
    }
    return (int32_t)((page / h->pages) % (uint64_t)h->nnodes);
}

/* A page's new home (KN_DSM_M_MOVE) */
typedef struct kn_dsm_move {
    uint32_t page;
    int32_t home;
} kn_dsm_move_t;

/* The homes an INIT describes (0 when they are not whole blocks). */
static inline int kn_dsm_homes_of(kn_dsm_homes_t *h, uint64_t home_pages, uint64_t zone, uint64_t slice,
                                  int32_t nnodes)
{
    *h = (kn_dsm_homes_t){.pages = home_pages, .zone = zone, .slice = slice, .nnodes = nnodes, .words = NULL};
    return home_pages && nnodes > 0 && zone % home_pages == 0 && slice % home_pages == 0;
}

typedef struct kn_dsm_frame {
    uint64_t off;
    uint32_t len;           /* | KN_DSM_FRAME_MASKED: the data starts with a mask of (len + 7) / 8 bytes */
    uint32_t crc;           /* crc32c of off, len and the data */
} kn_dsm_frame_t;
#define KN_DSM_FRAME_MASKED 0x80000000u

/* Bytes of a frame's data: its mask, if any, and its bytes. */
static inline uint64_t kn_dsm_frame_bytes(const kn_dsm_frame_t *f)
{
    uint64_t n = f->len & ~KN_DSM_FRAME_MASKED;
    return f->len & KN_DSM_FRAME_MASKED ? (n + 7) / 8 + n : n;
}

static inline uint64_t kn_dsm_pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

/* Take and drop page p's lock (spin, then give the cpu away: the holder
 * may be a descheduled process of the node). */
static inline void kn_dsm_page_lock(kn_dsm_page_t *pg)
{
    for (unsigned spins = 0;; spins++) {
        uint32_t v = atomic_load_explicit(pg, memory_order_relaxed);
        if (!(v & KN_DSM_PG_LOCK) &&
            atomic_compare_exchange_weak_explicit(pg, &v, v | KN_DSM_PG_LOCK, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        if (spins > 64)
            sched_yield();
        else
            kn_cpu_relax();
    }
}

static inline void kn_dsm_page_unlock(kn_dsm_page_t *pg)
{
    atomic_fetch_and_explicit(pg, ~KN_DSM_PG_LOCK, memory_order_release);
}

#endif
