/*
 * The shared-memory transport's insides, for its files: shm.c (segment,
 * queues, fast boxes, doorbells, start-up) and bulk.c (rendezvous copies:
 * cross-memory attach, peers' shared heaps, cooperative copies).  The
 * layout and the protocols are described at the top of shm.c.
 */
#ifndef KN_SHM_INT_H
#define KN_SHM_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "shm/peerheap.h"
#include "shm/shm.h"
#include "util/compiler.h"

#define SEG_MAGIC 0x6b6e697473686d32ull /* "knitshm2" */
#define SEG_VERSION 2
#define DESC_INLINE 28
#define DESC_F_BUF 0x1
#define CELL_F_BUF 0x1  /* payload in the sender's send buffer */
#define CELL_F_FBOX 0x2 /* marker: the sender's next packets are in fast box aux */
#define PROBE_VALUE 0x70726f6265636d61ull
#define PAGE 4096u
#define MAX_RANKS 65535 /* cell_t.src is 16 bits */

typedef struct seg_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t nranks;
    uint64_t size;
    uint64_t reserved_size;
    uint32_t queue_entries;
    uint32_t ring_entries;
    uint64_t buf_size;
    uint32_t boxes;
    uint32_t fbox_max;
    _Atomic uint32_t ready;       /* creator finished initializing */
    _Atomic uint32_t boxes_taken; /* fast boxes handed out (may pass boxes: then none is left) */
    uint64_t budget_limit;        /* what files made later may take (util/shmfile.h) */
    uint32_t reserved[4];
    _Alignas(KN_CACHELINE) _Atomic uint64_t budget_used;
} seg_hdr_t;

/*
 * Cooperative copy.  A rank that copies a large block to or from a peer
 * (a push or a pull) publishes it here, in its own rank area, sets its bit
 * in the peer's help map and raises the peer's help_pending count.  Both
 * then take chunks: the initiator from the front, the helper (in its
 * progress, when it is inside a knit call) from the back, so that two
 * cores copy instead of one.  The claim word packs (generation, front,
 * back): a helper that read a stale generation can never claim a chunk of
 * a later copy.  Once every chunk is claimed, the initiator spins briefly
 * for the helper's last chunks, then returns KNIT_INPROGRESS if the helper
 * still copies (it does not wait on a helper that its host descheduled
 * mid-chunk: with more ranks than cpus that wait lasted milliseconds); its
 * progress completes the copy when the helper's count is in, and the
 * helper rings its doorbell after every chunk in case it sleeps.  One
 * copy per rank is published at a time; another one meanwhile is copied
 * alone.
 */
typedef struct coop {
    _Atomic uint64_t claim;        /* gen:16 | front:24 | back:24 (chunk indices) */
    _Atomic uint32_t active;       /* generation while published, else 0 */
    _Atomic uint32_t helper_done;  /* chunks the helper finished */
    _Atomic uint32_t error;        /* errno of a failed helper copy */
    uint32_t write;                /* 1: data goes initiator -> helper */
    uint32_t helper;               /* local rank asked to help */
    uint32_t reserved;
    uint64_t init_addr;            /* the block in the initiator's memory */
    uint64_t help_addr;            /* the block in the helper's memory */
    uint64_t len, chunk;
} coop_t;

#define COOP_GEN(c) ((uint32_t)((c) >> 48))
#define COOP_FRONT(c) ((uint32_t)((c) >> 24) & 0xffffffu)
#define COOP_BACK(c) ((uint32_t)(c)&0xffffffu)
#define COOP_PACK(g, f, b) ((uint64_t)(g) << 48 | (uint64_t)(f) << 24 | (uint64_t)(b))

typedef struct rank_area {
    _Alignas(KN_CACHELINE) _Atomic int32_t pid;
    uint32_t membarrier;        /* registered for global expedited membarrier */
    uint64_t probe_addr;        /* address of a word holding PROBE_VALUE */
    uint64_t heap_base;         /* its shared heap (util/heap.h); size 0: none */
    uint64_t heap_size;
    int32_t heap_fd;            /* the heap's memfd, in its process */
    _Alignas(KN_CACHELINE) _Atomic uint32_t sleeping;
    _Atomic uint32_t rung;         /* a wake-up byte is on its way */
    _Atomic uint32_t help_pending; /* peers asking this rank to help copy */
    _Atomic uint32_t fbox_in;      /* fast boxes towards this rank */
    _Alignas(KN_CACHELINE) coop_t coop; /* this rank's cooperative copy */
} rank_area_t;

/* A rank's inbound queue: the producers' shared counter. */
typedef struct qctl {
    _Alignas(KN_CACHELINE) _Atomic uint64_t head; /* next position to claim */
} qctl_t;
_Static_assert(sizeof(qctl_t) == KN_CACHELINE, "a queue's head is one cache line");
_Static_assert(sizeof(rank_area_t) == 3 * KN_CACHELINE, "a rank area is three cache lines");

typedef struct cell {
    _Atomic uint32_t seq;       /* free for position p: p; published: p + 1 */
    uint8_t plen;               /* inline payload length */
    uint8_t flags;              /* CELL_F_* */
    uint16_t src;               /* sender's local rank */
    kn_pkt_hdr_t hdr;
    uint32_t aux;               /* CELL_F_BUF: payload length; CELL_F_FBOX: box index */
    uint8_t data[DESC_INLINE];  /* inline payload; CELL_F_BUF: u64 position in the send buffer */
} cell_t;
_Static_assert(sizeof(cell_t) == KN_CACHELINE, "a cell is one cache line");

/* A fast box's entry (the pair queues' entry of earlier knit). */
typedef struct desc {
    _Atomic uint32_t seq;       /* position + 1 once published */
    uint16_t plen;              /* inline payload length */
    uint16_t flags;             /* DESC_F_BUF: payload in the box's buffer */
    kn_pkt_hdr_t hdr;
    uint32_t buf_len;           /* payload length when in the buffer */
    uint8_t data[DESC_INLINE];
} desc_t;
_Static_assert(sizeof(desc_t) == KN_CACHELINE, "a descriptor is one cache line");

typedef struct box_hdr {
    _Alignas(KN_CACHELINE) _Atomic uint64_t tail;      /* consumer: next entry to read */
    _Alignas(KN_CACHELINE) _Atomic uint64_t buf_tail;  /* consumer: buffer bytes released */
    _Alignas(KN_CACHELINE) uint32_t sender;            /* local ranks, set before the marker */
    uint32_t receiver;
} box_hdr_t;
_Static_assert(sizeof(box_hdr_t) == 3 * KN_CACHELINE, "a box header is three cache lines");

/* Where everything is, from the geometry alone (create, attach, plan). */
typedef struct layout {
    size_t areas, help, wait, qctl, cells, sbufs, boxhdr, reserved, boxes, size;
    size_t map_stride, box_size;
    unsigned words, nboxes;
} layout_t;

/* Process-local state of one fast box, producer and consumer halves. */
typedef struct box_local {
    box_hdr_t *ctl;
    desc_t *ring;
    char *buf;
    uint64_t head, cached_tail;           /* producer */
    uint64_t buf_head, cached_buf_tail;   /* producer: monotonic byte positions */
    uint64_t tail, buf_pos;               /* consumer */
    int peer;                             /* local rank at the other end */
} box_local_t;

enum { BLK_NONE = 0, BLK_ROOM, BLK_SBUF }; /* what the last send to a peer found missing */

/* This rank's side of its packets to one peer. */
typedef struct peer_out {
    box_local_t *box;       /* BOX: the fast box; NULL: QUEUE or SWITCHING */
    box_local_t *switching; /* SWITCHING: the box whose marker is not in yet */
    uint32_t sent;          /* packets through the peer's queue */
    uint8_t tried;          /* a box was asked for (at most once) */
    uint8_t blocked;        /* BLK_* */
    uint8_t waiting;        /* our bit is set in the peer's wait map */
    uint8_t listed;         /* in blocked_list */
} peer_out_t;

typedef struct shm_tl {
    kn_tl_t base;
    kn_shm_params_t p;
    layout_t L;
    void *seg;
    int seg_fd;            /* kept open to allocate fast boxes' pages */
    seg_hdr_t *hdr;
    rank_area_t *areas;
    unsigned n, me;
    unsigned queue_entries, ring_entries;
    size_t buf_size;
    /* consumer of our queue */
    cell_t *cells;         /* ours */
    uint64_t q_tail;
    _Atomic uint64_t *wait_map;  /* ours */
    _Atomic uint64_t *help_map;  /* ours */
    /* producer: our send buffer */
    char *sbuf;
    uint64_t s_head, s_tail;
    uint64_t *chunk_start, *chunk_end; /* ring of outstanding payloads, in allocation order */
    unsigned chunk_first, chunk_count, chunk_cap;
    int sbuf_blocked;
    /* peers */
    peer_out_t *out;       /* [n] */
    int *blocked_list;     /* peers whose last send found no room (some may have it by now) */
    unsigned nblocked;
    box_local_t *obox, *ibox; /* [fbox_max]: boxes we send on / receive on */
    unsigned n_obox, n_ibox;
    int no_boxes;          /* the pool is empty, or /dev/shm could not take one */
    unsigned char *rma_ok; /* [n] */
    kn_peer_heap_t *heaps; /* [n] peers' shared heaps, mapped on first use */
    size_t coop_chunk;     /* 0: no cooperative copies */
    kn_tl_comp_t *coop_comp; /* a cooperative copy whose helper still copies (NULL: none) */
    uint32_t coop_theirs;  /* chunks the helper took */
    knit_status_t coop_st; /* the initiator's own result */
    int coop_busy;         /* our coop_t is published */
    uint16_t coop_gen;
    int bell_fd;           /* this rank's doorbell socket */
    struct sockaddr_un *bell_addr; /* [n] */
    socklen_t bell_addrlen;
    char mech[256];
    int unlinked;
    int asym;              /* every rank of the node registered: asymmetric doorbell */
    int membarrier_warned;
    uint32_t bell_owed;    /* wake-up bytes taken from "rung" but not read yet */
} shm_tl_t;

static inline shm_tl_t *shm_of(kn_tl_t *tl)
{
    return (shm_tl_t *)tl;
}

static inline int local_index(shm_tl_t *s, int rank)
{
    return rank - s->p.first_rank;
}

static inline _Atomic uint64_t *map_of(shm_tl_t *s, size_t which, unsigned li)
{
    return (_Atomic uint64_t *)((char *)s->seg + which + (size_t)li * s->L.map_stride);
}

static inline pid_t peer_pid(shm_tl_t *s, unsigned li)
{
    return atomic_load_explicit(&s->areas[li].pid, memory_order_relaxed);
}

/* shm.c: wake local rank li if it sleeps (after a fence) */
void kn_shm_ring(shm_tl_t *s, unsigned li);

/* bulk.c: the transport's get/put, and the cooperative copies' part of
 * progress: help peers that asked (chunks copied), complete our own copy
 * once its helper is done (1), whether it is */
knit_status_t kn_shm_get(kn_tl_t *tl, int peer, void *local, size_t len, uint64_t raddr, uint64_t rkey,
                         kn_tl_comp_t *comp);
/* the vectored copy (tl.h rwv): at most KN_SHM_RWV_MAX pieces a side */
#define KN_SHM_RWV_MAX 1024
void *kn_shm_map(kn_tl_t *tl, int peer, uint64_t raddr, size_t len);
knit_status_t kn_shm_rwv(kn_tl_t *tl, int peer, int write, const struct iovec *local, int nl,
                        const struct iovec *remote, int nr);
knit_status_t kn_shm_put(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr, uint64_t rkey,
                         kn_tl_comp_t *comp);
int kn_shm_coop_help(shm_tl_t *s);
int kn_shm_coop_reap(shm_tl_t *s);
int kn_shm_coop_helper_done(shm_tl_t *s);

#endif
