/*
 * Shared-memory transport.
 *
 * Segment layout (one file per node, /dev/shm/knit-<jobid>-n<node>-p2p):
 *   seg_hdr_t                     geometry, written by the creator
 *   rank_area_t[n]                pid, sleeping flag, probe word of each rank
 *   pair_t[n][n] (sender, receiver): control lines, ring of desc_t, buffer
 *
 * Each pair is a single-producer single-consumer queue.  The producer
 * writes a descriptor, then publishes it by storing seq = position + 1
 * (release); the consumer polls the descriptor at its tail (acquire), so a
 * poll touches one cache line per peer.  Free entries are the credits: the
 * producer never writes past the consumer's published tail.  Eager payloads
 * larger than the descriptor's inline area go through the pair's buffer,
 * packed one after the other (64-byte aligned; a payload that would cross
 * the end starts again at the beginning) and released in order.
 *
 * Doorbell: every rank has a datagram socket (abstract name
 * knit-<jobid>-n<node>-<local rank>).  A rank about to sleep sets
 * "sleeping", re-checks its queues and polls the socket (together with the
 * other transports' descriptors, so one poll waits on all); a producer (or
 * a consumer that freed credits) that sees "sleeping" after its publish
 * sends it one byte, unless another one already did ("rung").  On waking
 * the sleeper takes "rung" back and reads exactly the bytes it took, so it
 * never swallows the byte of a ring that set "rung" after that (it would
 * then sleep with "rung" set and nobody sending).  At most a few bytes are
 * ever queued.  Each side's store must be ordered before its load,
 * or a wake-up is lost.  A full fence on every send cost half of a
 * sender's time in a message-rate test (the fence waits for the entry's
 * cache line to leave the consumer's cache), so when every rank of the node
 * could register for membarrier(2) the barrier is asymmetric: the sender
 * has only a compiler barrier, and the rank about to sleep calls
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which runs a full barrier
 * on every cpu that is running one of the registered processes.  A send
 * whose check raced with the sleeper is then either complete in memory
 * before the sleeper re-checks its queues or sees "sleeping".
 */
#include "shm/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/compiler.h"
#include "util/log.h"
#include "util/shmfile.h"
#include "util/time.h"

#define SEG_MAGIC 0x6b6e697473686d31ull /* "knitshm1" */
#define SEG_VERSION 1
#define DESC_INLINE 28
#define DESC_F_BUF 0x1
#define PROBE_VALUE 0x70726f6265636d61ull

typedef struct seg_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t nranks;
    uint64_t size;
    uint32_t ring_entries;
    uint32_t reserved0;
    uint64_t buf_size;
    uint64_t pair_size;
    uint64_t pairs_offset;
    _Atomic uint32_t ready; /* creator finished initializing */
    uint32_t reserved[7];
} seg_hdr_t;

typedef struct rank_area {
    _Alignas(KN_CACHELINE) _Atomic int32_t pid;
    uint32_t membarrier;        /* registered for global expedited membarrier */
    uint64_t probe_addr;        /* address of a word holding PROBE_VALUE */
    _Alignas(KN_CACHELINE) _Atomic uint32_t sleeping;
    _Atomic uint32_t rung;         /* a wake-up byte is on its way */
    _Atomic uint32_t help_pending; /* peers asking this rank to help copy */
} rank_area_t;

typedef struct desc {
    _Atomic uint32_t seq;       /* position + 1 once published */
    uint16_t plen;              /* inline payload length */
    uint16_t flags;             /* DESC_F_BUF: payload in the pair's buffer */
    kn_pkt_hdr_t hdr;
    uint32_t buf_len;           /* payload length when in the buffer */
    uint8_t data[DESC_INLINE];
} desc_t;
_Static_assert(sizeof(desc_t) == KN_CACHELINE, "a descriptor is one cache line");

/*
 * Cooperative copy.  A rank that copies a large block to or from a peer
 * (a push or a pull) publishes it here, in its pair towards that peer, and
 * raises the peer's help_pending count.  Both then take chunks: the
 * initiator from the front, the helper (in its progress, when it is inside
 * a knit call) from the back, so that two cores copy instead of one.  The
 * claim word packs (generation, front, back): a helper that read a stale
 * generation can never claim a chunk of a later copy.  Once every chunk is
 * claimed, the initiator spins briefly for the helper's last chunks, then
 * returns KNIT_INPROGRESS if the helper still copies (it does not wait on a
 * helper that its host descheduled mid-chunk: with more ranks than cpus
 * that wait lasted milliseconds); its progress completes the copy when the
 * helper's count is in, and the
 * helper rings its doorbell after every chunk in case it sleeps.  One
 * copy per pair is published at a time; another one to the same peer
 * meanwhile is copied alone.
 */
typedef struct coop {
    _Atomic uint64_t claim;        /* gen:16 | front:24 | back:24 (chunk indices) */
    _Atomic uint32_t active;       /* generation while published, else 0 */
    _Atomic uint32_t helper_done;  /* chunks the helper finished */
    _Atomic uint32_t error;        /* errno of a failed helper copy */
    uint32_t write;                /* 1: data goes initiator -> helper */
    uint64_t init_addr;            /* the block in the initiator's memory */
    uint64_t help_addr;            /* the block in the helper's memory */
    uint64_t len, chunk;
} coop_t;

#define COOP_GEN(c) ((uint32_t)((c) >> 48))
#define COOP_FRONT(c) ((uint32_t)((c) >> 24) & 0xffffffu)
#define COOP_BACK(c) ((uint32_t)(c)&0xffffffu)
#define COOP_PACK(g, f, b) ((uint64_t)(g) << 48 | (uint64_t)(f) << 24 | (uint64_t)(b))

typedef struct pair_ctl {
    _Alignas(KN_CACHELINE) _Atomic uint64_t tail;      /* consumer: next entry to read */
    _Alignas(KN_CACHELINE) _Atomic uint64_t buf_tail;  /* consumer: buffer bytes released */
    _Alignas(KN_CACHELINE) coop_t coop;                /* producer's cooperative copy */
} pair_ctl_t;

/* Process-local state of one pair, producer and consumer halves. */
typedef struct pair_local {
    pair_ctl_t *ctl;
    desc_t *ring;
    char *buf;
    uint64_t head, cached_tail;           /* producer */
    uint64_t buf_head, cached_buf_tail;   /* producer: monotonic byte positions */
    uint64_t tail, buf_pos;               /* consumer */
    int blocked;                          /* producer: last send found no credit */
    /* a cooperative copy towards this peer whose helper still copies */
    kn_tl_comp_t *coop_comp;              /* NULL: none pending */
    uint32_t coop_theirs;                 /* chunks the helper took */
    knit_status_t coop_st;                /* the initiator's own result */
} pair_local_t;

typedef struct shm_tl {
    kn_tl_t base;
    kn_shm_params_t p;
    void *seg;
    size_t seg_size;
    seg_hdr_t *hdr;
    rank_area_t *areas;
    pair_local_t *out; /* [local_size]: me -> peer */
    pair_local_t *in;  /* [local_size]: peer -> me */
    unsigned ring_entries;
    size_t buf_size;
    unsigned char *rma_ok; /* [local_size] */
    size_t coop_chunk;     /* 0: no cooperative copies */
    int bell_fd;           /* this rank's doorbell socket */
    struct sockaddr_un *bell_addr; /* [local_size] */
    socklen_t bell_addrlen;
    uint16_t coop_gen;
    char mech[256];
    int unlinked;
    int asym;              /* every rank of the node registered: asymmetric doorbell */
    int membarrier_warned;
    uint32_t bell_owed;    /* wake-up bytes taken from "rung" but not read yet */
} shm_tl_t;

static volatile uint64_t probe_word = PROBE_VALUE;

static int coop_help(shm_tl_t *s);
static int coop_reap(shm_tl_t *s);
static int coop_helper_done(shm_tl_t *s, int li);

void kn_shm_segment_name(char *buf, size_t len, const char *jobid, int node)
{
    snprintf(buf, len, "/knit-%s-n%d-p2p", jobid, node);
}

static size_t pair_size(unsigned ring_entries, size_t buf_size)
{
    return KN_ALIGN_UP(sizeof(pair_ctl_t) + (size_t)ring_entries * sizeof(desc_t), 4096) + buf_size;
}

/* Where a payload of len bytes goes, given the position after the last
 * one: 64-byte aligned, never across the end of the buffer.  Producer and
 * consumer both run this, so descriptors need not carry offsets. */
static inline uint64_t buf_place(uint64_t pos, size_t len, size_t buf_size)
{
    uint64_t start = KN_ALIGN_UP(pos, (uint64_t)KN_CACHELINE);
    if (start % buf_size + len > buf_size)
        start += buf_size - start % buf_size;
    return start;
}

static size_t seg_layout(unsigned n, unsigned ring, size_t buf_size, size_t *pairs_off)
{
    size_t off = KN_ALIGN_UP(sizeof(seg_hdr_t), KN_CACHELINE) + (size_t)n * sizeof(rank_area_t);
    off = KN_ALIGN_UP(off, 4096);
    *pairs_off = off;
    return off + (size_t)n * n * pair_size(ring, buf_size);
}

static int check_params(const kn_shm_params_t *p)
{
    if (p->ring_entries < 2 || p->ring_entries > (1u << 16) || (p->ring_entries & (p->ring_entries - 1))) {
        kn_error("KNIT_SHM_RING: %u is not a power of two between 2 and 65536", p->ring_entries);
        return -1;
    }
    if (p->buf_size < 4096 || p->buf_size > (64u << 20) || (p->buf_size & (p->buf_size - 1))) {
        kn_error("KNIT_SHM_BUFFER: %zu is not a power of two between 4k and 64m", p->buf_size);
        return -1;
    }
    return 0;
}

knit_status_t kn_shm_create(const kn_shm_params_t *p)
{
    if (check_params(p) < 0)
        return KNIT_ERR_INVAL;
    char name[128];
    kn_shm_segment_name(name, sizeof(name), p->jobid, p->node);
    size_t pairs_off;
    size_t size = seg_layout((unsigned)p->local_size, p->ring_entries, p->buf_size, &pairs_off);
    int fd = kn_shm_file_create(name, size, 0);
    if (fd < 0) {
        kn_error("node segment %s of %zu bytes in /dev/shm: %m", name, size);
        return KNIT_ERR_IO;
    }
    seg_hdr_t *h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        kn_error("mmap %s: %m", name);
        goto err;
    }
    h->magic = SEG_MAGIC;
    h->version = SEG_VERSION;
    h->nranks = (uint32_t)p->local_size;
    h->size = size;
    h->ring_entries = p->ring_entries;
    h->buf_size = p->buf_size;
    h->pair_size = pair_size(p->ring_entries, p->buf_size);
    h->pairs_offset = pairs_off;
    atomic_store_explicit(&h->ready, 1, memory_order_release);
    munmap(h, sizeof(*h));
    close(fd);
    return KNIT_OK;
err:
    close(fd);
    shm_unlink(name);
    return KNIT_ERR_IO;
}

static inline shm_tl_t *shm_of(kn_tl_t *tl)
{
    return (shm_tl_t *)tl;
}

static inline int local_index(shm_tl_t *s, int rank)
{
    return rank - s->p.first_rank;
}

static int membarrier(int cmd)
{
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* Can this process take part in the asymmetric doorbell? */
static int membarrier_register(void)
{
    int cmds = membarrier(MEMBARRIER_CMD_QUERY);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
           membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

static void doorbell_ring(shm_tl_t *s, int li)
{
    rank_area_t *a = &s->areas[li];
    if (kn_likely(s->asym))
        atomic_signal_fence(memory_order_seq_cst); /* the sleeper's membarrier orders us */
    else
        atomic_thread_fence(memory_order_seq_cst);
    if (kn_unlikely(atomic_load_explicit(&a->sleeping, memory_order_relaxed)) &&
        !atomic_exchange_explicit(&a->rung, 1, memory_order_acq_rel)) {
        char b = 1;
        /* the socket never holds more than a few bytes (above); nothing
         * else can fail here that the sleeper's timeout would not cover */
        (void)sendto(s->bell_fd, &b, 1, MSG_DONTWAIT, (struct sockaddr *)&s->bell_addr[li], s->bell_addrlen);
    }
}

static void shm_wake(kn_tl_t *tl, int peer)
{
    doorbell_ring(shm_of(tl), local_index(shm_of(tl), peer));
}

static knit_status_t shm_send(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *hdr, const void *payload,
                              size_t len)
{
    shm_tl_t *s = shm_of(tl);
    int li = local_index(s, peer);
    pair_local_t *q = &s->out[li];
    if (kn_unlikely(len > tl->max_payload))
        return KNIT_ERR_INVAL;
    if (kn_unlikely(q->head - q->cached_tail >= s->ring_entries)) {
        q->cached_tail = atomic_load_explicit(&q->ctl->tail, memory_order_acquire);
        if (q->head - q->cached_tail >= s->ring_entries) {
            q->blocked = 1;
            return KNIT_ERR_AGAIN;
        }
    }
    int in_buf = len > DESC_INLINE;
    uint64_t start = 0;
    if (in_buf) {
        start = buf_place(q->buf_head, len, s->buf_size);
        if (start + len - q->cached_buf_tail > s->buf_size) {
            q->cached_buf_tail = atomic_load_explicit(&q->ctl->buf_tail, memory_order_acquire);
            if (start + len - q->cached_buf_tail > s->buf_size) {
                q->blocked = 1;
                return KNIT_ERR_AGAIN;
            }
        }
    }
    desc_t *d = &q->ring[q->head & (s->ring_entries - 1)];
    d->hdr = *hdr;
    d->plen = (uint16_t)(in_buf ? 0 : len);
    d->flags = in_buf ? DESC_F_BUF : 0;
    if (in_buf) {
        memcpy(q->buf + start % s->buf_size, payload, len);
        d->buf_len = (uint32_t)len;
        q->buf_head = start + len;
    } else if (len) {
        memcpy(d->data, payload, len);
    }
    atomic_store_explicit(&d->seq, (uint32_t)(q->head + 1), memory_order_release);
    q->head++;
    q->blocked = 0;
    doorbell_ring(s, li);
    return KNIT_OK;
}

static int shm_progress(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    int events = coop_help(s) + coop_reap(s);
    for (int li = 0; li < s->p.local_size; li++) {
        if (li == s->p.local_rank)
            continue;
        pair_local_t *q = &s->in[li];
        int got = 0;
        for (;;) {
            desc_t *d = &q->ring[q->tail & (s->ring_entries - 1)];
            if (atomic_load_explicit(&d->seq, memory_order_acquire) != (uint32_t)(q->tail + 1))
                break;
            const void *payload = d->data;
            size_t len = d->plen;
            uint64_t start = 0;
            if (d->flags & DESC_F_BUF) {
                len = d->buf_len;
                if (kn_unlikely(len > tl->max_payload))
                    len = tl->max_payload; /* only if the segment was scribbled on */
                start = buf_place(q->buf_pos, len, s->buf_size);
                payload = q->buf + start % s->buf_size;
            }
            kn_pkt_hdr_t hdr = d->hdr;
            tl->recv_cb(tl->cb_arg, s->p.first_rank + li, &hdr, payload, len);
            if (d->flags & DESC_F_BUF) {
                q->buf_pos = start + len;
                atomic_store_explicit(&q->ctl->buf_tail, q->buf_pos, memory_order_release);
            }
            q->tail++;
            atomic_store_explicit(&q->ctl->tail, q->tail, memory_order_release);
            got++;
            if (got >= (int)s->ring_entries)
                break; /* let other peers have a turn */
        }
        if (got) {
            events += got;
            doorbell_ring(s, li); /* the producer may wait for credits */
        }
    }
    return events;
}

/* Something to do: a packet arrived, or credits came back to a queue whose
 * last send found none. */
static int shm_pending(shm_tl_t *s)
{
    if (atomic_load_explicit(&s->areas[s->p.local_rank].help_pending, memory_order_acquire))
        return 1;
    for (int li = 0; li < s->p.local_size; li++) {
        if (li == s->p.local_rank)
            continue;
        pair_local_t *o = &s->out[li];
        if (o->blocked && (atomic_load_explicit(&o->ctl->tail, memory_order_acquire) != o->cached_tail ||
                           atomic_load_explicit(&o->ctl->buf_tail, memory_order_acquire) != o->cached_buf_tail))
            return 1; /* credits came back since the send that found none */
        pair_local_t *q = &s->in[li];
        desc_t *d = &q->ring[q->tail & (s->ring_entries - 1)];
        if (atomic_load_explicit(&d->seq, memory_order_acquire) == (uint32_t)(q->tail + 1))
            return 1;
        if (o->coop_comp && coop_helper_done(s, li))
            return 1; /* our copy's helper finished */
    }
    return 0;
}

static int shm_arm(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    rank_area_t *me = &s->areas[s->p.local_rank];
    atomic_store_explicit(&me->sleeping, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    /* without the barrier a send may not have seen "sleeping": no sleep
     * then (the caller yields instead) */
    int barrier_failed = s->asym && membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0;
    if (kn_unlikely(barrier_failed) && !s->membarrier_warned) {
        s->membarrier_warned = 1;
        kn_warn("membarrier: %m; this rank yields instead of sleeping");
    }
    if (barrier_failed || shm_pending(s)) {
        atomic_store_explicit(&me->sleeping, 0, memory_order_relaxed);
        return -1;
    }
    return s->bell_fd;
}

static void shm_disarm(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    rank_area_t *me = &s->areas[s->p.local_rank];
    atomic_store_explicit(&me->sleeping, 0, memory_order_relaxed);
    /* Read only the bytes of the rings we took: a byte read beyond them
     * would belong to a ring whose "rung" is still set, and the next sleep
     * would then wait for a byte that nobody sends (seen as a lost wake-up
     * in the wakes test).  One not here yet is read after a later sleep. */
    s->bell_owed += atomic_exchange_explicit(&me->rung, 0, memory_order_acq_rel);
    char b;
    while (s->bell_owed && recv(s->bell_fd, &b, 1, MSG_DONTWAIT) == 1)
        s->bell_owed--;
}

static unsigned shm_caps(kn_tl_t *tl, int peer)
{
    shm_tl_t *s = shm_of(tl);
    return s->rma_ok[local_index(s, peer)] ? KN_TL_CAP_RMA : 0;
}

/* One full copy by cross-memory attach (the kernel may stop short). */
static knit_status_t cma_raw(pid_t pid, int peer, void *local, size_t len, uint64_t raddr, int write)
{
    size_t done = 0;
    while (done < len) {
        struct iovec l = {(char *)local + done, len - done};
        struct iovec r = {(void *)(uintptr_t)(raddr + done), len - done};
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            if (n < 0 && errno == EFAULT) /* a buffer: the engine finds whose and says so */
                return KNIT_ERR_FAULT;
            kn_error("%s rank %d (pid %d), %zu bytes: %m",
                     write ? "process_vm_writev to" : "process_vm_readv from", peer, (int)pid, len - done);
            return errno == ESRCH ? KNIT_ERR_PEER : KNIT_ERR_IO;
        }
        done += (size_t)n;
    }
    return KNIT_OK;
}

static inline pid_t peer_pid(shm_tl_t *s, int li)
{
    return atomic_load_explicit(&s->areas[li].pid, memory_order_relaxed);
}

/* Help peers that published a cooperative copy towards us: take chunks
 * from the back.  Returns chunks copied. */
static int coop_help(shm_tl_t *s)
{
    rank_area_t *me = &s->areas[s->p.local_rank];
    if (kn_likely(!atomic_load_explicit(&me->help_pending, memory_order_relaxed)))
        return 0;
    int events = 0;
    for (int li = 0; li < s->p.local_size; li++) {
        if (li == s->p.local_rank || !s->rma_ok[li])
            continue;
        coop_t *c = &s->in[li].ctl->coop;
        uint32_t gen = atomic_load_explicit(&c->active, memory_order_acquire);
        if (!gen)
            continue;
        uint64_t init_addr = c->init_addr, help_addr = c->help_addr, len = c->len, chunk = c->chunk;
        int write = (int)c->write;
        uint64_t cl = atomic_load_explicit(&c->claim, memory_order_acquire);
        for (;;) {
            if (COOP_GEN(cl) != (gen & 0xffff) || COOP_FRONT(cl) >= COOP_BACK(cl))
                break;
            uint32_t idx = COOP_BACK(cl) - 1;
            if (!atomic_compare_exchange_weak_explicit(&c->claim, &cl, COOP_PACK(gen, COOP_FRONT(cl), idx),
                                                       memory_order_acq_rel, memory_order_acquire))
                continue;
            uint64_t off = (uint64_t)idx * chunk, n = KN_MIN(chunk, len - off);
            /* the mirror of the initiator's direction */
            knit_status_t st = cma_raw(peer_pid(s, li), s->p.first_rank + li, (void *)(uintptr_t)(help_addr + off),
                                       n, init_addr + off, !write);
            if (st != KNIT_OK)
                atomic_store_explicit(&c->error, st == KNIT_ERR_FAULT ? EFAULT : EIO, memory_order_relaxed);
            atomic_fetch_add_explicit(&c->helper_done, 1, memory_order_release);
            doorbell_ring(s, li); /* the initiator may sleep on its last chunks */
            events++;
            cl = atomic_load_explicit(&c->claim, memory_order_acquire);
        }
    }
    return events;
}

/* The end of a cooperative copy towards li: the helper has done its part. */
static knit_status_t coop_finish(shm_tl_t *s, int li, knit_status_t st)
{
    coop_t *c = &s->out[li].ctl->coop;
    atomic_store_explicit(&c->active, 0, memory_order_release);
    atomic_fetch_sub_explicit(&s->areas[li].help_pending, 1, memory_order_acq_rel);
    int err = atomic_load_explicit(&c->error, memory_order_relaxed);
    if (st == KNIT_OK && err == EFAULT) {
        st = KNIT_ERR_FAULT; /* a buffer, as in cma_raw */
    } else if (st == KNIT_OK && err) {
        kn_error("rank %d failed to copy its part of a block for this rank", s->p.first_rank + li);
        st = KNIT_ERR_IO;
    }
    return st;
}

static int coop_helper_done(shm_tl_t *s, int li)
{
    return atomic_load_explicit(&s->out[li].ctl->coop.helper_done, memory_order_acquire) == s->out[li].coop_theirs;
}

/* Complete the cooperative copies whose helpers finished. */
static int coop_reap(shm_tl_t *s)
{
    int events = 0;
    for (int li = 0; li < s->p.local_size; li++) {
        pair_local_t *q = &s->out[li];
        if (!q->coop_comp || !coop_helper_done(s, li))
            continue;
        kn_tl_comp_t *comp = q->coop_comp;
        q->coop_comp = NULL;
        comp->cb(comp, coop_finish(s, li, q->coop_st));
        events++;
    }
    return events;
}

/* Copy with the peer's help when the block is large enough; comp NULL:
 * alone, complete on return (the caller's peers have copies of their own
 * to make: a collective reading from every rank at once). */
static knit_status_t cma_copy(shm_tl_t *s, int peer, void *local, size_t len, uint64_t raddr, int write,
                              kn_tl_comp_t *comp)
{
    int li = local_index(s, peer);
    pid_t pid = peer_pid(s, li);
    if (!comp || !s->coop_chunk || len < 2 * s->coop_chunk || !s->rma_ok[li] || s->out[li].coop_comp)
        return cma_raw(pid, peer, local, len, raddr, write);
    coop_t *c = &s->out[li].ctl->coop;
    uint32_t nchunks = (uint32_t)((len + s->coop_chunk - 1) / s->coop_chunk);
    if (nchunks >= (1u << 24))
        return cma_raw(pid, peer, local, len, raddr, write);
    uint16_t gen = ++s->coop_gen ? s->coop_gen : ++s->coop_gen; /* never 0 */
    c->init_addr = (uint64_t)(uintptr_t)local;
    c->help_addr = raddr;
    c->len = len;
    c->chunk = s->coop_chunk;
    c->write = (uint32_t)write;
    atomic_store_explicit(&c->helper_done, 0, memory_order_relaxed);
    atomic_store_explicit(&c->error, 0, memory_order_relaxed);
    atomic_store_explicit(&c->claim, COOP_PACK(gen, 0, nchunks), memory_order_relaxed);
    atomic_store_explicit(&c->active, gen, memory_order_release);
    rank_area_t *a = &s->areas[li];
    atomic_fetch_add_explicit(&a->help_pending, 1, memory_order_acq_rel);
    doorbell_ring(s, li); /* a sleeping peer wakes up and helps */

    knit_status_t st = KNIT_OK;
    uint32_t mine = 0;
    uint64_t cl = atomic_load_explicit(&c->claim, memory_order_acquire);
    while (COOP_FRONT(cl) < COOP_BACK(cl)) {
        uint32_t idx = COOP_FRONT(cl);
        if (!atomic_compare_exchange_weak_explicit(&c->claim, &cl, COOP_PACK(gen, idx + 1, COOP_BACK(cl)),
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        uint64_t off = (uint64_t)idx * s->coop_chunk, n = KN_MIN(s->coop_chunk, len - off);
        knit_status_t r = cma_raw(pid, peer, (char *)local + off, n, raddr + off, write);
        if (r != KNIT_OK && st == KNIT_OK)
            st = r;
        mine++;
        cl = atomic_load_explicit(&c->claim, memory_order_acquire);
    }
    /* every chunk is claimed: the helper's last ones complete later */
    s->out[li].coop_theirs = nchunks - mine;
    for (unsigned spins = 0; !coop_helper_done(s, li); spins++) {
        if (spins < 1000) { /* a running helper ends its chunk about when we do */
            kn_cpu_relax();
        } else { /* a descheduled one: progress completes the copy */
            s->out[li].coop_comp = comp;
            s->out[li].coop_st = st;
            return KNIT_INPROGRESS;
        }
    }
    return coop_finish(s, li, st);
}

static knit_status_t shm_get(kn_tl_t *tl, int peer, void *local, size_t len, uint64_t raddr, uint64_t rkey,
                             kn_tl_comp_t *comp)
{
    (void)rkey;
    return cma_copy(shm_of(tl), peer, local, len, raddr, 0, comp);
}

static knit_status_t shm_put(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr,
                             uint64_t rkey, kn_tl_comp_t *comp)
{
    (void)rkey;
    return cma_copy(shm_of(tl), peer, (void *)local, len, raddr, 1, comp);
}

static void shm_destroy(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    if (!s->unlinked && s->p.local_rank == 0) {
        char name[128];
        kn_shm_segment_name(name, sizeof(name), s->p.jobid, s->p.node);
        shm_unlink(name);
    }
    munmap(s->seg, s->seg_size);
    if (s->bell_fd >= 0)
        close(s->bell_fd);
    free(s->bell_addr);
    free(s->out);
    free(s->in);
    free(s->rma_ok);
    free(s);
}

static const kn_tl_ops_t shm_ops = {
    .name = "shm",
    .send = shm_send,
    .progress = shm_progress,
    .caps = shm_caps,
    .get = shm_get,
    .put = shm_put,
    .arm = shm_arm,
    .disarm = shm_disarm,
    .wake = shm_wake,
    .destroy = shm_destroy,
};

/* The doorbell sockets: ours bound, everyone's address computed. */
static knit_status_t bell_open(shm_tl_t *s)
{
    s->bell_addr = calloc((size_t)s->p.local_size, sizeof(*s->bell_addr));
    if (!s->bell_addr)
        return KNIT_ERR_NOMEM;
    for (int li = 0; li < s->p.local_size; li++) {
        struct sockaddr_un *a = &s->bell_addr[li];
        a->sun_family = AF_UNIX;
        /* abstract name: sun_path[0] = 0 */
        int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "knit-%s-n%d-%05d", s->p.jobid, s->p.node, li);
        s->bell_addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    }
    s->bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->bell_fd < 0) {
        kn_error("doorbell socket: %m");
        return KNIT_ERR_IO;
    }
    /* fixed-width rank numbers: one address length serves every peer */
    struct sockaddr_un *mine = &s->bell_addr[s->p.local_rank];
    if (bind(s->bell_fd, (struct sockaddr *)mine, s->bell_addrlen) < 0) {
        kn_error("doorbell socket %s: bind: %m", mine->sun_path + 1);
        close(s->bell_fd);
        s->bell_fd = -1;
        return KNIT_ERR_IO;
    }
    return KNIT_OK;
}

static void pair_setup(shm_tl_t *s, pair_local_t *q, int sender, int receiver)
{
    char *base = (char *)s->seg + s->hdr->pairs_offset +
                 ((size_t)sender * (size_t)s->p.local_size + (size_t)receiver) * s->hdr->pair_size;
    memset(q, 0, sizeof(*q));
    q->ctl = (pair_ctl_t *)base;
    q->ring = (desc_t *)(base + sizeof(pair_ctl_t));
    q->buf = base + KN_ALIGN_UP(sizeof(pair_ctl_t) + (size_t)s->ring_entries * sizeof(desc_t), 4096);
}

knit_status_t kn_shm_attach(const kn_shm_params_t *p, kn_tl_recv_cb_t cb, void *cb_arg, kn_tl_t **out)
{
    char name[128];
    kn_shm_segment_name(name, sizeof(name), p->jobid, p->node);
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        kn_error("shm_open %s: %m (was it created by local rank 0?)", name);
        return KNIT_ERR_IO;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(seg_hdr_t)) {
        kn_error("node segment %s is too small or unreadable", name);
        close(fd);
        return KNIT_ERR_PROTO;
    }
    void *seg = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) {
        kn_error("mmap %s (%lld bytes): %m", name, (long long)st.st_size);
        return KNIT_ERR_IO;
    }
    seg_hdr_t *h = seg;
    size_t pairs_off;
    if (!atomic_load_explicit(&h->ready, memory_order_acquire) || h->magic != SEG_MAGIC ||
        h->version != SEG_VERSION || h->nranks != (uint32_t)p->local_size ||
        h->size != (uint64_t)st.st_size ||
        h->size != seg_layout(h->nranks, h->ring_entries, h->buf_size, &pairs_off) ||
        h->pairs_offset != pairs_off) {
        kn_error("node segment %s has an unexpected layout (another job's file?)", name);
        munmap(seg, (size_t)st.st_size);
        return KNIT_ERR_PROTO;
    }
    shm_tl_t *s = calloc(1, sizeof(*s));
    if (!s)
        goto nomem;
    s->p = *p;
    s->seg = seg;
    s->seg_size = (size_t)st.st_size;
    s->hdr = h;
    s->areas = (rank_area_t *)((char *)seg + KN_ALIGN_UP(sizeof(seg_hdr_t), KN_CACHELINE));
    s->ring_entries = h->ring_entries;
    s->buf_size = h->buf_size;
    s->out = calloc((size_t)p->local_size, sizeof(pair_local_t));
    s->in = calloc((size_t)p->local_size, sizeof(pair_local_t));
    s->rma_ok = calloc((size_t)p->local_size, 1);
    if (!s->out || !s->in || !s->rma_ok)
        goto nomem;
    for (int li = 0; li < p->local_size; li++) {
        pair_setup(s, &s->out[li], p->local_rank, li);
        pair_setup(s, &s->in[li], li, p->local_rank);
    }
    s->bell_fd = -1;
    if (bell_open(s) != KNIT_OK) {
        free(s->out);
        free(s->in);
        free(s->rma_ok);
        free(s->bell_addr);
        free(s);
        munmap(seg, (size_t)st.st_size);
        return KNIT_ERR_IO;
    }
    rank_area_t *me = &s->areas[p->local_rank];
    me->probe_addr = (uint64_t)(uintptr_t)&probe_word;
    me->membarrier = p->membarrier && membarrier_register();
    atomic_store_explicit(&me->pid, (int32_t)getpid(), memory_order_release);
    s->base.ops = &shm_ops;
    s->base.max_inline = DESC_INLINE;
    s->base.max_payload = s->buf_size / 4;
    s->base.bulk_inflight = 1;
    /* the receiver's process_vm_readv writes into its own cache; a push
     * writes into lines another cpu holds (measured: docs/protocols.md) */
    s->base.pull_preferred = 1;
    s->coop_chunk = p->coop_chunk;
    s->base.recv_cb = cb;
    s->base.cb_arg = cb_arg;
    *out = &s->base;
    return KNIT_OK;
nomem:
    if (s) {
        free(s->out);
        free(s->in);
        free(s->rma_ok);
        free(s);
    }
    munmap(seg, (size_t)st.st_size);
    return KNIT_ERR_NOMEM;
}

knit_status_t kn_shm_ready(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    if (s->p.local_rank == 0) {
        char name[128];
        kn_shm_segment_name(name, sizeof(name), s->p.jobid, s->p.node);
        if (shm_unlink(name) == 0)
            s->unlinked = 1;
    }
    /* every rank has attached (the caller's fence), so all decide alike;
     * none arms for sleep before this */
    s->asym = 1;
    for (int li = 0; li < s->p.local_size; li++)
        s->asym &= s->areas[li].membarrier != 0;
    if (s->p.local_rank == 0)
        kn_debug("shared memory: %s", s->asym ? "senders skip the fence; a rank about to sleep runs membarrier"
                                              : "a full fence on every send (membarrier not used)");
    if (s->p.cma_mode == 2) {
        snprintf(s->mech, sizeof(s->mech), "pipelined copy (KNIT_CMA=off)");
        return KNIT_OK;
    }
    int failures = 0, first_errno = 0;
    for (int li = 0; li < s->p.local_size; li++) {
        if (li == s->p.local_rank)
            continue;
        rank_area_t *a = &s->areas[li];
        uint64_t v = 0;
        struct iovec l = {&v, sizeof(v)}, r = {(void *)(uintptr_t)a->probe_addr, sizeof(v)};
        pid_t pid = atomic_load_explicit(&a->pid, memory_order_acquire);
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n == (ssize_t)sizeof(v) && v == PROBE_VALUE) {
            /* write permission is the same ptrace check as read */
            s->rma_ok[li] = 1;
        } else if (n < 0 && errno == ESRCH) {
            /* the peer has already ended (knitrun reports how): it tells
             * nothing about cross-memory attach, and gets no traffic */
        } else {
            if (!first_errno)
                first_errno = n < 0 ? errno : EIO;
            failures++;
        }
    }
    if (!failures) {
        snprintf(s->mech, sizeof(s->mech), "cross-memory attach (process_vm_readv/writev)");
        return KNIT_OK;
    }
    snprintf(s->mech, sizeof(s->mech), "pipelined copy (cross-memory attach failed: %s)",
             strerror(first_errno));
    if (s->p.cma_mode == 1) {
        kn_error("KNIT_CMA=on but cross-memory attach to %d local peer(s) failed: %s", failures,
                 strerror(first_errno));
        return KNIT_ERR_IO;
    }
    if (s->p.local_rank == 0)
        kn_warn("cross-memory attach unavailable (process_vm_readv: %s); large messages use the "
                "slower pipelined copy. Fix: allow ptrace between the job's processes "
                "(sysctl kernel.yama.ptrace_scope=0, or run the container with CAP_SYS_PTRACE / "
                "a seccomp profile that allows process_vm_readv); KNIT_CMA=off silences this",
                strerror(first_errno));
    return KNIT_OK;
}

const char *kn_shm_bulk_mechanism(kn_tl_t *tl)
{
    return shm_of(tl)->mech;
}

int kn_shm_cma_probe(char *why, size_t len)
{
    int pfd[2];
    if (pipe(pfd) < 0) {
        snprintf(why, len, "pipe: %s", strerror(errno));
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, len, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return 0;
    }
    if (pid == 0) {
        char c;
        close(pfd[1]);
        ssize_t r = read(pfd[0], &c, 1); /* until the parent is done */
        _exit(r < 0);
    }
    close(pfd[0]);
    uint64_t v = 0;
    struct iovec l = {&v, sizeof(v)}, r = {(void *)&probe_word, sizeof(v)};
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    int ok = n == (ssize_t)sizeof(v) && v == PROBE_VALUE;
    if (!ok)
        snprintf(why, len, "process_vm_readv: %s", n < 0 ? strerror(errno) : "short read");
    else
        snprintf(why, len, "works");
    close(pfd[1]);
    int status;
    waitpid(pid, &status, 0);
    return ok;
}
