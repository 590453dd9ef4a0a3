/*
 * Module sandboxes (KNIT_MODULE_ISOLATION=process): each module instance
 * of a daemon runs in a child process of its own, knit-modhost, under a
 * seccomp filter.  This header is what the daemon and the host share: the
 * segment between them and the rings in it.
 *
 * Segment (one memfd per instance, mapped by both; nothing on disk):
 *
 *   kn_sbx_seg_t   set-up written by the daemon before the host starts
 *                  (geometry, name, tunables), wake-up words, and what the
 *                  host reports (faults, counters: never trusted)
 *   call ring      daemon -> host: handler calls (init, request, message,
 *                  fini, stop), in order
 *   reply ring     daemon -> host: answers to the host's synchronous
 *                  services (read_rank, write_rank, deliver)
 *   svc ring       host -> daemon: services (send, multicast, complete,
 *                  and the synchronous ones), the load verdict
 *
 * Rings are single-producer single-consumer byte rings: free-running
 * 64-bit head and tail, records 32-byte aligned (a header's size), a
 * record never wraps (a PAD record fills the end).  A payload longer than KN_SBX_FRAG travels in
 * several records of the same type, all but the last flagged MORE; the
 * consumer joins them.  The daemon copies every header out of shared
 * memory before it checks it, and checks everything: the host runs code
 * nobody vouched for, which may scribble over the whole segment.
 *
 * Wake-ups (the Dekker pattern, as the command queue's): a side about to
 * sleep sets its "sleeping" word, fences, and looks at its rings again; a
 * producer fences after publishing and wakes the other side only when it
 * sleeps: the host sleeps on a futex (host_wake), the daemon in epoll on
 * an eventfd the host writes.
 */
#ifndef KN_OFFLOAD_SBX_H
#define KN_OFFLOAD_SBX_H

#include <stddef.h>
#include <stdint.h>

#include "knit/module.h"
#include "offload/offload.h"

#define KN_SBX_MAGIC 0x6b6e7362u /* "knsb" */
#define KN_SBX_VERSION 1
#define KN_SBX_RING (256u << 10) /* bytes of each ring's data */
#define KN_SBX_FRAG (64u << 10)  /* payload bytes of one record, at most */

/* The host's file descriptors (knit-modhost starts with these). */
#define KN_SBX_FD_SEG 3          /* the segment (memfd) */
#define KN_SBX_FD_MODULE 4       /* the module file (memfd), closed once loaded */
#define KN_SBX_FD_BELL 5         /* eventfd: wakes the daemon */

/* Record types.  Daemon -> host (call and reply rings): */
enum {
    KN_SBX_PAD = 0,      /* fills the end of the ring: skip */
    KN_SBX_C_REQUEST,    /* a = token, b = rank | node << 32; args */
    KN_SBX_C_MESSAGE,    /* a = from (int32), b = its header's length (send_hdr: on_header routes it); message */
    KN_SBX_C_STOP,       /* call fini (a = 1) and exit */
    KN_SBX_R_REPLY,      /* a = status; data (read_rank) */
    /* host -> daemon (svc ring): */
    KN_SBX_S_LOADED,     /* a = status, b = KN_SBX_HAS_* ; text: name, or why refused */
    KN_SBX_S_SEND,       /* a = dest (int32), b = its header's length (send_hdr; 0: send); message */
    KN_SBX_S_MULTICAST,  /* message */
    KN_SBX_S_COMPLETE,   /* a = token, b = status (int32); result */
    KN_SBX_S_READ,       /* a = rank, b = addr, c = len: answered by a REPLY with the data */
    KN_SBX_S_WRITE,      /* a = rank, b = addr; data: answered by a REPLY */
    KN_SBX_S_DELIVER,    /* a = rank; data: answered by a REPLY */
    KN_SBX_TYPE_MAX
};

#define KN_SBX_F_MORE 0x1        /* the payload goes on in the next record */

/* What a host runs (busy_what), for the messages. */
enum { KN_SBX_W_REQUEST, KN_SBX_W_MESSAGE, KN_SBX_W_TIMER, KN_SBX_W_FINI, KN_SBX_W_INIT, KN_SBX_W_CTORS,
       KN_SBX_W_DESC, KN_SBX_W_HEADER };

#define KN_SBX_HAS_MESSAGE 0x1   /* the descriptor has on_message */
#define KN_SBX_HAS_TIMER 0x2
#define KN_SBX_HAS_FINI 0x4
#define KN_SBX_HAS_HEADER 0x8    /* on_header (ABI 2) */

typedef struct kn_sbx_rec {
    uint32_t len;        /* payload bytes that follow */
    uint16_t type;
    uint16_t flags;
    uint64_t a, b, c;
} kn_sbx_rec_t;
_Static_assert(sizeof(kn_sbx_rec_t) == 32, "sandbox record header is 32 bytes");

typedef struct kn_sbx_ring {
    _Alignas(64) uint64_t tail;  /* producer: bytes published */
    _Alignas(64) uint64_t head;  /* consumer: bytes consumed */
} kn_sbx_ring_t;

/* What the host's fault handler saw (for the message; never trusted). */
typedef struct kn_sbx_fault {
    int32_t sig;
    int32_t code;
    uint64_t addr;
} kn_sbx_fault_t;

typedef struct kn_sbx_seg {
    uint32_t magic, version;
    uint64_t size;
    /* set-up, written by the daemon before the host starts */
    knit_mod_geometry_t geo;
    char name[KNIT_MOD_NAME_MAX];   /* the load's name (the descriptor's comes back) */
    char who[32];                   /* log prefix: "agent 0", "switch" */
    uint64_t spin_ns;               /* how long the idle host polls before it sleeps (kept up to date) */
    uint64_t yield_ns;              /* then how long it yields the cpu before it sleeps */
    int32_t log_level;
    int32_t daemon_pid;
    uint32_t probe;                 /* only load and check the module, then exit */
    uint32_t reserved0[5];
    /* reported by the host */
    kn_sbx_fault_t fault;
    uint64_t done_calls;            /* calls from the call ring finished */
    uint64_t busy_since;            /* a handler runs since (monotonic ns), 0: none */
    uint32_t busy_what;             /* which: KN_SBX_W_* */
    uint32_t reserved1;
    uint64_t alloc_bytes;           /* scratch memory in use */
    _Alignas(64) uint32_t host_sleeping;
    uint32_t host_wake;             /* futex word the host sleeps on */
    _Alignas(64) uint32_t daemon_sleeping;
    kn_sbx_ring_t call, reply, svc;
} kn_sbx_seg_t;

enum { KN_SBX_CALL, KN_SBX_REPLY, KN_SBX_SVC };

/* The data of ring `which` starts at this offset of the segment. */
static inline size_t kn_sbx_ring_offset(int which)
{
    return ((sizeof(kn_sbx_seg_t) + 4095) & ~(size_t)4095) + (size_t)which * KN_SBX_RING;
}

static inline size_t kn_sbx_seg_size(void)
{
    return kn_sbx_ring_offset(3);
}

/* Lay the rings out in a fresh segment of kn_sbx_seg_size() bytes. */
void kn_sbx_seg_init(kn_sbx_seg_t *s);

/* One side's end of a ring: its own index kept in private memory (the
 * shared one is only ever written by it, for the other side to read), so
 * that a scribbled segment can garble data but never send either side
 * outside the ring. */
typedef struct kn_sbx_end {
    kn_sbx_ring_t *r;
    unsigned char *data;    /* KN_SBX_RING bytes */
    uint64_t pos;           /* producer: tail; consumer: head */
} kn_sbx_end_t;

/* which: KN_SBX_CALL, _REPLY or _SVC of the segment mapped at s. */
void kn_sbx_end_init(kn_sbx_end_t *e, kn_sbx_seg_t *s, int which);

/*
 * Producer: publish one record (header + len bytes of payload, len at most
 * KN_SBX_FRAG).  Returns 1, or 0 when the ring has no room now (or its
 * consumer's index is nonsense: nothing is written then either).
 */
int kn_sbx_put(kn_sbx_end_t *e, const kn_sbx_rec_t *h, const void *p, uint32_t len);

/*
 * Consumer: the next record, its header copied out (*h), and where its
 * payload is (*p, in shared memory: it may change under the reader; copy
 * before parsing).  Returns its size in the ring (for kn_sbx_pop), 0 when
 * the ring is empty, -1 when it is corrupt (the producer's index or a
 * header out of bounds: the producer scribbled over it).
 */
int64_t kn_sbx_peek(kn_sbx_end_t *e, kn_sbx_rec_t *h, const void **p);
void kn_sbx_pop(kn_sbx_end_t *e, int64_t n);
/* Consumer: anything to read? */
int kn_sbx_pending(const kn_sbx_end_t *e);

/* A consumer's message in several records, joined (zero-initialized;
 * kn_sbx_rx_free frees it). */
typedef struct kn_sbx_rx {
    kn_sbx_rec_t h;     /* the first record's header */
    char *buf;          /* the payload, copied out of shared memory */
    uint64_t len, cap;
    int active;
} kn_sbx_rx_t;

/*
 * Take the next record out of the ring, copied: 1 when it ends a message
 * (rx->h its header, rx->buf and rx->len its payload, valid until the
 * next call), 0 when the ring is empty or the record only began or
 * continued one, -1 when the ring or the record is malformed (*why): out
 * of bounds, a fragment of another type than its message's, a message
 * over KN_OFF_MSG_MAX.  The daemon's side and the fuzz target
 * (tests/fuzz/fuzz_sbx.c) take records from module processes with it.
 */
int kn_sbx_take(kn_sbx_end_t *e, kn_sbx_rx_t *rx, const char **why);
void kn_sbx_rx_free(kn_sbx_rx_t *rx);

/* What a whole message from a module process must be, whatever the
 * daemon's state: a host -> daemon type; no payload for READ and a length
 * up to KN_OFF_MSG_MAX in c; for LOADED a NUL-terminated text shorter
 * than KN_OFF_ERR_MAX, a status that is 0 or an error, and with 0 a valid
 * module name.  1: acceptable; 0 with *why. */
int kn_sbx_svc_ok(const kn_sbx_rec_t *h, const char *p, uint64_t len, const char **why);

#endif
