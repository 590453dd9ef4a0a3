/*
 * Shared-memory transport.
 *
 * Segment layout (one file per node, /dev/shm/knit-<jobid>-n<node>-p2p;
 * kn_shm_layout computes it, n = ranks of the node):
 *   seg_hdr_t                   geometry, fast-box counter, node budget
 *   rank_area_t[n]              pid, doorbell flags, the rank's cooperative copy
 *   help map [n][words]         bit i of rank h: rank i asks h to help copy
 *   wait map [n][words]         bit i of rank r: rank i waits for room in r's queue
 *   qctl_t[n]                   each inbound queue's head (the producers' counter)
 *   cell_t[n][Q]                each rank's inbound queue
 *   send buffer [n][B]          each rank's payloads on their way through queues
 *   box_hdr_t[boxes]            fast boxes' credit counters and owners
 *   --- allocated at creation above, as fast boxes are handed out below ---
 *   fast box [boxes]            ring of R desc_t, then a buffer of B bytes
 * So a node takes O(n): n (Q·64 + B + 384) bytes at start plus
 * boxes · (R·64 + B + 192), boxes = min(n·KNIT_SHM_FASTBOXES, n(n-1), what
 * the node's plan under KNIT_SHM_MAX leaves them: core/nodeshm.c);
 * docs/guide.md has the whole node's formula.
 *
 * The path of a packet from rank s to rank r (state machine, per ordered
 * pair, on the sender's side; the receiver follows it through its queue):
 *
 *   QUEUE ---(after KNIT_SHM_FASTBOX_AFTER packets: a box b is claimed)--->
 *   SWITCHING ---(the marker FBOX(b) is in r's queue)---> BOX
 *   (no box to be had: s stays in QUEUE for good)
 *
 *   QUEUE: r's queue is a bounded multi-producer single-consumer ring of
 *     one-cache-line cells with per-cell sequence numbers (Vyukov's): a
 *     cell for position p is free when its seq is p; a producer claims it
 *     by advancing the shared head p -> p+1 (compare-and-swap), fills it
 *     and publishes it with seq = p+1 (release); the consumer, polling the
 *     one cell at its tail (acquire), delivers it and frees it with
 *     seq = p+Q.  No free cell: KNIT_ERR_AGAIN (the p2p layer keeps the
 *     packet, in order, and retries).  A payload beyond the cell's 28
 *     inline bytes is first copied into s's own send buffer (packed,
 *     64-byte aligned, never across the end, like a box buffer), after a
 *     word that s clears; the cell carries its position; the consumer,
 *     once it delivered it, sets that word, and s reclaims its buffer in
 *     allocation order as those words come back.  A receiver polls one
 *     queue (and its at most KNIT_SHM_FASTBOXES boxes) whatever n is,
 *     where it polled n-1 pair rings before.
 *   SWITCHING: s took a box from the node's pool (a counter: boxes are
 *     never given back), a place among r's at most KNIT_SHM_FASTBOXES
 *     inbound boxes (r's fbox_in) and allocated its pages.  It sends the
 *     marker cell FBOX(b) through r's queue; until that is in, packets
 *     still wait (AGAIN) so that none overtakes it.
 *   BOX: a box is a single-producer single-consumer queue, the pair queue
 *     of earlier knit: the producer writes a desc_t, then publishes it by
 *     storing seq = position + 1 (release); the consumer polls the one at
 *     its tail (acquire).  Free entries are the credits: the producer
 *     never writes past the consumer's published tail.  Eager payloads go
 *     through the box's buffer, packed one after the other and released
 *     in order.  r starts polling the box when it takes FBOX(b) from its
 *     queue: everything s sent before the marker was ahead of it there,
 *     everything after it is in the box, so s's packets stay in order.
 *
 * Doorbell: every rank has a datagram socket (abstract name
 * knit-<jobid>-n<node>-<local rank>).  A rank about to sleep sets
 * "sleeping", re-checks what it waits for (its queue, its boxes, room in
 * the queues and boxes whose last send found none, its send buffer) and
 * polls the socket (together with the other transports' descriptors, so
 * one poll waits on all); a producer (or a consumer that freed credits, or
 * released a send buffer's payload) that sees "sleeping" after its publish
 * sends it one byte, unless another one already did ("rung").  A sender
 * whose packet found a peer's queue full sets its bit in that peer's wait
 * map (and clears it once a packet goes in); the consumer rings every rank
 * in its map after each batch it took, so room in a queue is a wake-up
 * like any other.  On waking the sleeper takes "rung" back and reads
 * exactly the bytes it took, so it never swallows the byte of a ring that
 * set "rung" after that (it would then sleep with "rung" set and nobody
 * sending).  At most a few bytes are ever queued.  Each side's store must
 * be ordered before its load, or a wake-up is lost.  A full fence on every
 * send cost half of a sender's time in a message-rate test (the fence
 * waits for the entry's cache line to leave the consumer's cache), so when
 * every rank of the node could register for membarrier(2) the barrier is
 * asymmetric: the sender has only a compiler barrier, and the rank about
 * to sleep calls membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which runs a
 * full barrier on every cpu that is running one of the registered
 * processes.  A send whose check raced with the sleeper is then either
 * complete in memory before the sleeper re-checks or sees "sleeping".
 */
#include "shm/shm_int.h"

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
#include "util/heap.h"
#include "util/log.h"
#include "util/shmfile.h"
#include "util/time.h"


static volatile uint64_t probe_word = PROBE_VALUE;

void kn_shm_segment_name(char *buf, size_t len, const char *jobid, int node)
{
    snprintf(buf, len, "/knit-%s-n%d-p2p", jobid, node);
}

/* ------------------------------------------------------------ layout */

static void layout(unsigned n, unsigned queue, unsigned ring, size_t buf, unsigned nboxes, layout_t *L)
{
    memset(L, 0, sizeof(*L));
    L->words = (n + 63) / 64;
    L->nboxes = nboxes;
    L->map_stride = KN_ALIGN_UP((size_t)L->words * sizeof(uint64_t), (size_t)KN_CACHELINE);
    L->box_size = KN_ALIGN_UP((size_t)ring * sizeof(desc_t), (size_t)PAGE) + buf;
    size_t off = KN_ALIGN_UP(sizeof(seg_hdr_t), (size_t)KN_CACHELINE);
    L->areas = off;
    off += (size_t)n * sizeof(rank_area_t);
    L->help = off;
    off += (size_t)n * L->map_stride;
    L->wait = off;
    off += (size_t)n * L->map_stride;
    L->qctl = off;
    off += (size_t)n * sizeof(qctl_t);
    L->cells = off = KN_ALIGN_UP(off, (size_t)PAGE);
    off += (size_t)n * queue * sizeof(cell_t);
    L->sbufs = off = KN_ALIGN_UP(off, (size_t)PAGE);
    off += (size_t)n * buf;
    L->boxhdr = off;
    off += (size_t)nboxes * sizeof(box_hdr_t);
    L->reserved = L->boxes = KN_ALIGN_UP(off, (size_t)PAGE);
    L->size = L->boxes + (size_t)nboxes * L->box_size;
}

static int pow2_in(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v >= lo && v <= hi && !(v & (v - 1));
}

static int check_params(const kn_shm_params_t *p)
{
    if (p->local_size < 1 || p->local_size > MAX_RANKS || p->local_rank < 0 || p->local_rank >= p->local_size) {
        kn_error("shared memory: local rank %d of %d is out of range (at most %d ranks on a node)", p->local_rank,
                 p->local_size, MAX_RANKS);
        return -1;
    }
    if (!pow2_in(p->queue_entries, 2, 1u << 16)) {
        kn_error("KNIT_SHM_QUEUE: %u is not a power of two between 2 and 65536", p->queue_entries);
        return -1;
    }
    if (!pow2_in(p->ring_entries, 2, 1u << 16)) {
        kn_error("KNIT_SHM_RING: %u is not a power of two between 2 and 65536", p->ring_entries);
        return -1;
    }
    if (!pow2_in(p->buf_size, 4096, 64u << 20)) {
        kn_error("KNIT_SHM_BUFFER: %zu is not a power of two between 4k and 64m", p->buf_size);
        return -1;
    }
    if (p->fbox_max > (unsigned)MAX_RANKS) {
        kn_error("KNIT_SHM_FASTBOXES: %u is more than %d", p->fbox_max, MAX_RANKS);
        return -1;
    }
    return 0;
}

knit_status_t kn_shm_layout(const kn_shm_params_t *p, kn_shm_layout_t *out)
{
    if (check_params(p) < 0)
        return KNIT_ERR_INVAL;
    unsigned n = (unsigned)p->local_size;
    layout_t L;
    layout(n, p->queue_entries, p->ring_entries, p->buf_size, 0, &L);
    out->minimum = L.size;
    out->box_size = L.box_size;
    uint64_t want = KN_MIN((uint64_t)n * p->fbox_max, (uint64_t)n * (n - 1));
    if (p->max_bytes && L.size > p->max_bytes) {
        out->size = out->reserved = L.size;
        out->boxes = 0;
        return KNIT_ERR_NOMEM;
    }
    if (p->max_bytes) /* what fits, less for the header array's page rounding */
        want = KN_MIN(want, (p->max_bytes - L.size) / (L.box_size + sizeof(box_hdr_t)));
    for (;; want--) {
        layout(n, p->queue_entries, p->ring_entries, p->buf_size, (unsigned)want, &L);
        if (!p->max_bytes || L.size <= p->max_bytes || want == 0)
            break;
    }
    out->size = L.size;
    out->reserved = L.reserved;
    out->boxes = (unsigned)want;
    return KNIT_OK;
}

/* ------------------------------------------------------------ creation */

knit_status_t kn_shm_create(const kn_shm_params_t *p)
{
    kn_shm_layout_t lay;
    knit_status_t st = kn_shm_layout(p, &lay);
    if (st == KNIT_ERR_NOMEM)
        kn_error("node segment: %d ranks need %zu bytes, more than the %zu allowed", p->local_size, lay.minimum,
                 p->max_bytes);
    if (st != KNIT_OK)
        return st;
    char name[128];
    kn_shm_segment_name(name, sizeof(name), p->jobid, p->node);
    int fd = kn_shm_file_create(name, lay.size, lay.reserved, 0);
    if (fd < 0) {
        kn_error("node segment %s of %zu bytes in /dev/shm: %m", name, lay.reserved);
        return KNIT_ERR_IO;
    }
    layout_t L;
    unsigned n = (unsigned)p->local_size;
    layout(n, p->queue_entries, p->ring_entries, p->buf_size, lay.boxes, &L);
    void *base = mmap(NULL, L.reserved, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        kn_error("mmap %s: %m", name);
        close(fd);
        shm_unlink(name);
        return KNIT_ERR_IO;
    }
    close(fd);
    /* a cell for position p is free when its seq is p */
    for (unsigned r = 0; r < n; r++) {
        cell_t *c = (cell_t *)((char *)base + L.cells) + (size_t)r * p->queue_entries;
        for (unsigned i = 0; i < p->queue_entries; i++)
            atomic_store_explicit(&c[i].seq, i, memory_order_relaxed);
    }
    seg_hdr_t *h = base;
    h->magic = SEG_MAGIC;
    h->version = SEG_VERSION;
    h->nranks = n;
    h->size = L.size;
    h->reserved_size = L.reserved;
    h->queue_entries = p->queue_entries;
    h->ring_entries = p->ring_entries;
    h->buf_size = p->buf_size;
    h->boxes = L.nboxes;
    h->fbox_max = p->fbox_max;
    h->budget_limit = p->budget;
    atomic_store_explicit(&h->ready, 1, memory_order_release);
    munmap(base, L.reserved);
    kn_debug("node segment: %u ranks, %zu bytes now, %zu with all %u fast boxes", n, L.reserved, L.size,
             L.nboxes);
    return KNIT_OK;
}

static inline cell_t *queue_of(shm_tl_t *s, unsigned li)
{
    return (cell_t *)((char *)s->seg + s->L.cells) + (size_t)li * s->queue_entries;
}

static inline qctl_t *qctl_of(shm_tl_t *s, unsigned li)
{
    return (qctl_t *)((char *)s->seg + s->L.qctl) + li;
}

static inline char *sbuf_of(shm_tl_t *s, unsigned li)
{
    return (char *)s->seg + s->L.sbufs + (size_t)li * s->buf_size;
}

/* pos's offset in a buffer of buf_size bytes, a power of two (checked
 * where KNIT_SHM_BUFFER is read): a mask, not the 64-bit division that
 * `%` by a run-time value compiles to (tens of cycles, twice or three
 * times a message between 29 bytes and the eager limit). */
static inline size_t buf_off(uint64_t pos, size_t buf_size)
{
    return (size_t)(pos & (buf_size - 1));
}

/* A payload in a send buffer: this word, then the bytes.  The receiver
 * sets it once it delivered them; the sender clears it when it hands the
 * space out again.  In the payload's own first cache line, which the
 * receiver has just read: no line shared with other payloads' receivers. */
#define CHUNK_HDR 8

static inline _Atomic uint64_t *chunk_word(char *sbuf, uint64_t pos, size_t buf_size)
{
    return (_Atomic uint64_t *)(sbuf + buf_off(pos, buf_size));
}

static inline box_hdr_t *boxhdr_of(shm_tl_t *s, unsigned b)
{
    return (box_hdr_t *)((char *)s->seg + s->L.boxhdr) + b;
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

static inline void bell_fence(shm_tl_t *s)
{
    if (kn_likely(s->asym))
        atomic_signal_fence(memory_order_seq_cst); /* the sleeper's membarrier orders us */
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* The caller published something li may wait for (and fenced). */
static inline void bell_send(shm_tl_t *s, unsigned li)
{
    rank_area_t *a = &s->areas[li];
    if (kn_unlikely(atomic_load_explicit(&a->sleeping, memory_order_relaxed)) &&
        !atomic_exchange_explicit(&a->rung, 1, memory_order_acq_rel)) {
        char b = 1;
        /* the socket never holds more than a few bytes (above); nothing
         * else can fail here that the sleeper's timeout would not cover */
        (void)sendto(s->bell_fd, &b, 1, MSG_DONTWAIT, (struct sockaddr *)&s->bell_addr[li], s->bell_addrlen);
    }
}

void kn_shm_ring(shm_tl_t *s, unsigned li)
{
    bell_fence(s);
    bell_send(s, li);
}

static void shm_wake(kn_tl_t *tl, int peer)
{
    kn_shm_ring(shm_of(tl), (unsigned)local_index(shm_of(tl), peer));
}

/* Remember a peer whose last send found no room, for the sleep check. */
static __attribute__((noinline)) void mark_blocked(shm_tl_t *s, unsigned li, int why)
{
    peer_out_t *o = &s->out[li];
    o->blocked = (uint8_t)why;
    if (!o->listed) {
        o->listed = 1;
        s->blocked_list[s->nblocked++] = (int)li;
    }
}

/* ------------------------------------------------------------ send buffer */

/* Where a payload of len bytes goes, given the position after the last
 * one: 64-byte aligned, never across the end of the buffer.  Producer and
 * consumer of a box both run this, so descriptors need not carry offsets. */
static inline uint64_t buf_place(uint64_t pos, size_t len, size_t buf_size)
{
    uint64_t start = KN_ALIGN_UP(pos, (uint64_t)KN_CACHELINE);
    if (buf_off(start, buf_size) + len > buf_size)
        start += buf_size - buf_off(start, buf_size);
    return start;
}

/* Take back the space of payloads that their receivers released, oldest
 * first.  Returns whether any came back. */
static int sbuf_reclaim(shm_tl_t *s)
{
    int got = 0;
    while (s->chunk_count) {
        unsigned i = s->chunk_first;
        uint64_t start = s->chunk_start[i];
        if (!atomic_load_explicit(chunk_word(s->sbuf, start, s->buf_size), memory_order_acquire))
            break;
        s->s_tail = s->chunk_end[i];
        s->chunk_first = (i + 1) & (s->chunk_cap - 1);
        s->chunk_count--;
        got = 1;
    }
    if (!s->chunk_count)
        s->s_tail = s->s_head;
    return got;
}

/* Room for len bytes in our send buffer: its position, or -1. */
static int64_t sbuf_alloc(shm_tl_t *s, size_t len)
{
    uint64_t start = buf_place(s->s_head, len, s->buf_size);
    if (start + len - s->s_tail > s->buf_size || s->chunk_count == s->chunk_cap) {
        sbuf_reclaim(s);
        start = buf_place(s->s_head, len, s->buf_size);
        if (start + len - s->s_tail > s->buf_size || s->chunk_count == s->chunk_cap)
            return -1;
    }
    s->sbuf_blocked = 0;
    return (int64_t)start;
}

static void sbuf_commit(shm_tl_t *s, uint64_t start, size_t len)
{
    unsigned i = (s->chunk_first + s->chunk_count) & (s->chunk_cap - 1);
    s->chunk_start[i] = start;
    s->chunk_end[i] = start + len;
    s->chunk_count++;
    s->s_head = start + len;
}

/* Are payloads released that we have not taken back? */
static int sbuf_released(shm_tl_t *s)
{
    return s->chunk_count &&
           atomic_load_explicit(chunk_word(s->sbuf, s->chunk_start[s->chunk_first], s->buf_size),
                                memory_order_acquire);
}

/* ------------------------------------------------------------ queues */

/* Is there a free cell in li's queue? */
static int queue_room(shm_tl_t *s, unsigned li)
{
    uint64_t pos = atomic_load_explicit(&qctl_of(s, li)->head, memory_order_relaxed);
    cell_t *c = &queue_of(s, li)[pos & (s->queue_entries - 1)];
    return (int32_t)(atomic_load_explicit(&c->seq, memory_order_acquire) - (uint32_t)pos) >= 0;
}

/* Our bit in li's wait map: li rings us when it frees cells. */
static void wait_set(shm_tl_t *s, unsigned li)
{
    peer_out_t *o = &s->out[li];
    if (o->waiting)
        return;
    o->waiting = 1;
    atomic_fetch_or_explicit(&map_of(s, s->L.wait, li)[s->me / 64], 1ull << (s->me % 64), memory_order_relaxed);
}

static void wait_clear(shm_tl_t *s, unsigned li)
{
    peer_out_t *o = &s->out[li];
    o->waiting = 0;
    atomic_fetch_and_explicit(&map_of(s, s->L.wait, li)[s->me / 64], ~(1ull << (s->me % 64)),
                              memory_order_relaxed);
}

/*
 * One cell into li's queue: a packet (payload inline, or already in our
 * send buffer at pos), or a marker (flags CELL_F_FBOX, aux the box).
 * KNIT_ERR_AGAIN when the queue is full.
 */
static knit_status_t queue_put(shm_tl_t *s, unsigned li, const kn_pkt_hdr_t *hdr, const void *inl, size_t plen,
                               unsigned flags, uint32_t aux, uint64_t pos_in_buf)
{
    qctl_t *qc = qctl_of(s, li);
    cell_t *cells = queue_of(s, li);
    uint64_t mask = s->queue_entries - 1;
    uint64_t pos = atomic_load_explicit(&qc->head, memory_order_relaxed);
    cell_t *c;
    for (;;) {
        c = &cells[pos & mask];
        int32_t dif = (int32_t)(atomic_load_explicit(&c->seq, memory_order_acquire) - (uint32_t)pos);
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&qc->head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return KNIT_ERR_AGAIN;
        } else {
            pos = atomic_load_explicit(&qc->head, memory_order_relaxed);
        }
    }
    c->plen = (uint8_t)plen;
    c->flags = (uint8_t)flags;
    c->src = (uint16_t)s->me;
    if (hdr)
        c->hdr = *hdr;
    c->aux = aux;
    if (flags & CELL_F_BUF)
        memcpy(c->data, &pos_in_buf, sizeof(pos_in_buf));
    else if (plen)
        memcpy(c->data, inl, plen);
    atomic_store_explicit(&c->seq, (uint32_t)(pos + 1), memory_order_release);
    return KNIT_OK;
}

static knit_status_t queue_send(shm_tl_t *s, unsigned li, const kn_pkt_hdr_t *hdr, const void *payload,
                                size_t len)
{
    peer_out_t *o = &s->out[li];
    knit_status_t st;
    if (len <= DESC_INLINE) {
        st = queue_put(s, li, hdr, payload, len, 0, 0, 0);
    } else {
        /* look for a cell before copying the payload */
        if (!queue_room(s, li)) {
            st = KNIT_ERR_AGAIN;
        } else {
            int64_t start = sbuf_alloc(s, CHUNK_HDR + len);
            if (start < 0) {
                s->sbuf_blocked = 1;
                mark_blocked(s, li, BLK_SBUF);
                return KNIT_ERR_AGAIN;
            }
            uint64_t at = (uint64_t)start;
            atomic_store_explicit(chunk_word(s->sbuf, at, s->buf_size), 0, memory_order_relaxed);
            memcpy(s->sbuf + buf_off(at, s->buf_size) + CHUNK_HDR, payload, len);
            st = queue_put(s, li, hdr, NULL, 0, CELL_F_BUF, (uint32_t)len, at);
            if (st == KNIT_OK)
                sbuf_commit(s, at, CHUNK_HDR + len);
        }
    }
    if (kn_unlikely(st != KNIT_OK)) {
        wait_set(s, li);
        mark_blocked(s, li, BLK_ROOM);
        return st;
    }
    if (kn_unlikely(o->waiting))
        wait_clear(s, li);
    o->blocked = BLK_NONE;
    o->sent++;
    kn_shm_ring(s, li);
    return KNIT_OK;
}

/* Ring every rank that waits for room in our queue: we just freed cells. */
static void wake_waiters(shm_tl_t *s)
{
    bell_fence(s);
    for (unsigned w = 0; w < s->L.words; w++) {
        uint64_t bits = atomic_load_explicit(&s->wait_map[w], memory_order_relaxed);
        while (bits) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            bell_send(s, w * 64 + b);
        }
    }
}

/* ------------------------------------------------------------ fast boxes */

static void box_map(shm_tl_t *s, box_local_t *q, unsigned b, int peer)
{
    char *base = (char *)s->seg + s->L.boxes + (size_t)b * s->L.box_size;
    memset(q, 0, sizeof(*q));
    q->ctl = boxhdr_of(s, b);
    q->ring = (desc_t *)base;
    q->buf = base + KN_ALIGN_UP((size_t)s->ring_entries * sizeof(desc_t), (size_t)PAGE);
    q->peer = peer;
}

/* A fast box towards li, if one can be had: a place among li's inbound
 * boxes, a box from the pool, and its pages.  Leaves o SWITCHING. */
static void box_claim(shm_tl_t *s, unsigned li)
{
    peer_out_t *o = &s->out[li];
    o->tried = 1;
    if (s->no_boxes || s->n_obox >= s->p.fbox_max)
        return;
    rank_area_t *a = &s->areas[li];
    uint32_t in = atomic_load_explicit(&a->fbox_in, memory_order_relaxed);
    do {
        if (in >= s->hdr->fbox_max)
            return;
    } while (!atomic_compare_exchange_weak_explicit(&a->fbox_in, &in, in + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    uint32_t b = atomic_fetch_add_explicit(&s->hdr->boxes_taken, 1, memory_order_relaxed);
    if (b >= s->L.nboxes) {
        s->no_boxes = 1;
        goto undo;
    }
    if (kn_shm_file_reserve(s->seg_fd, s->L.boxes + (size_t)b * s->L.box_size, s->L.box_size) < 0) {
        kn_info("shared memory: no room in /dev/shm for a fast box (%zu bytes: %m); packets keep going "
                "through the queues", s->L.box_size);
        s->no_boxes = 1;
        goto undo;
    }
    box_local_t *q = &s->obox[s->n_obox++];
    box_map(s, q, b, (int)li);
    memset(q->ring, 0, (size_t)s->ring_entries * sizeof(desc_t));
    atomic_store_explicit(&q->ctl->tail, 0, memory_order_relaxed);
    atomic_store_explicit(&q->ctl->buf_tail, 0, memory_order_relaxed);
    q->ctl->sender = s->me;
    q->ctl->receiver = li;
    o->switching = q; /* published by the marker's release */
    return;
undo:
    atomic_fetch_sub_explicit(&a->fbox_in, 1, memory_order_relaxed);
}

/* SWITCHING -> BOX once the marker is in li's queue. */
static knit_status_t box_announce(shm_tl_t *s, unsigned li)
{
    peer_out_t *o = &s->out[li];
    box_local_t *q = o->switching;
    uint32_t b = (uint32_t)(q->ctl - boxhdr_of(s, 0));
    knit_status_t st = queue_put(s, li, NULL, NULL, 0, CELL_F_FBOX, b, 0);
    if (st != KNIT_OK) {
        wait_set(s, li);
        mark_blocked(s, li, BLK_ROOM);
        return st;
    }
    if (o->waiting)
        wait_clear(s, li);
    o->switching = NULL;
    o->box = q;
    o->blocked = BLK_NONE;
    kn_shm_ring(s, li);
    return KNIT_OK;
}

/* Inlined: the hot path of a pair that talks often, as the pair queues of
 * earlier knit were. */
static inline __attribute__((always_inline)) knit_status_t box_send(shm_tl_t *s, unsigned li, box_local_t *q,
                                                                    const kn_pkt_hdr_t *hdr, const void *payload,
                                                                    size_t len)
{
    if (kn_unlikely(q->head - q->cached_tail >= s->ring_entries)) {
        q->cached_tail = atomic_load_explicit(&q->ctl->tail, memory_order_acquire);
        if (q->head - q->cached_tail >= s->ring_entries) {
            mark_blocked(s, li, BLK_ROOM);
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
                mark_blocked(s, li, BLK_ROOM);
                return KNIT_ERR_AGAIN;
            }
        }
    }
    desc_t *d = &q->ring[q->head & (s->ring_entries - 1)];
    d->hdr = *hdr;
    d->plen = (uint16_t)(in_buf ? 0 : len);
    d->flags = in_buf ? DESC_F_BUF : 0;
    if (in_buf) {
        memcpy(q->buf + buf_off(start, s->buf_size), payload, len);
        d->buf_len = (uint32_t)len;
        q->buf_head = start + len;
    } else if (len) {
        memcpy(d->data, payload, len);
    }
    atomic_store_explicit(&d->seq, (uint32_t)(q->head + 1), memory_order_release);
    q->head++;
    s->out[li].blocked = BLK_NONE;
    kn_shm_ring(s, li);
    return KNIT_OK;
}

/* Does the box have room again since its last send found none? */
static int box_credits_back(box_local_t *q)
{
    return atomic_load_explicit(&q->ctl->tail, memory_order_acquire) != q->cached_tail ||
           atomic_load_explicit(&q->ctl->buf_tail, memory_order_acquire) != q->cached_buf_tail;
}

/* The marker FBOX(b) from src came out of our queue: poll that box from now on. */
static void box_accept(shm_tl_t *s, unsigned src, uint32_t b)
{
    if (b >= s->L.nboxes || s->n_ibox >= s->hdr->fbox_max || boxhdr_of(s, b)->sender != src ||
        boxhdr_of(s, b)->receiver != s->me) {
        kn_error("shared memory: rank %u announced fast box %u, which is not its box towards this rank "
                 "(node segment corrupted?)", s->p.first_rank + src, b);
        return;
    }
    box_map(s, &s->ibox[s->n_ibox++], b, (int)src);
}

/* Deliver what a box holds; returns packets. */
static int box_drain(shm_tl_t *s, box_local_t *q)
{
    kn_tl_t *tl = &s->base;
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
            payload = q->buf + buf_off(start, s->buf_size);
        } else if (kn_unlikely(len > DESC_INLINE)) {
            len = DESC_INLINE;
        }
        kn_pkt_hdr_t hdr = d->hdr;
        tl->recv_cb(tl->cb_arg, s->p.first_rank + q->peer, &hdr, payload, len);
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
    if (got)
        kn_shm_ring(s, (unsigned)q->peer); /* the producer may wait for credits */
    return got;
}

/* Deliver what our queue holds (up to one lap); returns packets. */
static int queue_drain(shm_tl_t *s)
{
    kn_tl_t *tl = &s->base;
    uint64_t mask = s->queue_entries - 1;
    int got = 0;
    for (;;) {
        cell_t *c = &s->cells[s->q_tail & mask];
        if (atomic_load_explicit(&c->seq, memory_order_acquire) != (uint32_t)(s->q_tail + 1))
            break;
        unsigned src = c->src;
        if (kn_unlikely(src >= s->n || src == s->me)) {
            kn_error("shared memory: a queue entry from local rank %u, which is not a peer (node segment "
                     "corrupted?)", src);
        } else if (c->flags & CELL_F_FBOX) {
            box_accept(s, src, c->aux);
        } else if (c->flags & CELL_F_BUF) {
            uint64_t pos;
            memcpy(&pos, c->data, sizeof(pos));
            size_t len = c->aux, off = buf_off(pos, s->buf_size);
            char *sb = sbuf_of(s, src);
            if (kn_unlikely(len > tl->max_payload || off % KN_CACHELINE || off + CHUNK_HDR + len > s->buf_size)) {
                kn_error("shared memory: a payload of %zu bytes at %zu from rank %u is out of bounds (node "
                         "segment corrupted?)", len, off, s->p.first_rank + src);
            } else {
                kn_pkt_hdr_t hdr = c->hdr;
                tl->recv_cb(tl->cb_arg, s->p.first_rank + (int)src, &hdr, sb + off + CHUNK_HDR, len);
            }
            atomic_store_explicit(chunk_word(sb, pos, s->buf_size), 1, memory_order_release);
            kn_shm_ring(s, src); /* its send buffer may be full */
        } else {
            kn_pkt_hdr_t hdr = c->hdr;
            size_t len = KN_MIN((size_t)c->plen, (size_t)DESC_INLINE);
            tl->recv_cb(tl->cb_arg, s->p.first_rank + (int)src, &hdr, c->data, len);
        }
        atomic_store_explicit(&c->seq, (uint32_t)(s->q_tail + s->queue_entries), memory_order_release);
        s->q_tail++;
        if (++got >= (int)s->queue_entries)
            break;
    }
    if (got)
        wake_waiters(s);
    return got;
}

/* ------------------------------------------------------------ transport ops */

static knit_status_t shm_send(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *hdr, const void *payload,
                              size_t len)
{
    shm_tl_t *s = shm_of(tl);
    unsigned li = (unsigned)local_index(s, peer);
    peer_out_t *o = &s->out[li];
    if (kn_unlikely(len > tl->max_payload))
        return KNIT_ERR_INVAL;
    if (kn_likely(o->box != NULL))
        return box_send(s, li, o->box, hdr, payload, len);
    if (kn_unlikely(!o->tried) && o->sent >= s->p.fbox_after && s->p.fbox_max)
        box_claim(s, li);
    if (o->switching) {
        knit_status_t st = box_announce(s, li);
        return st == KNIT_OK ? box_send(s, li, o->box, hdr, payload, len) : st;
    }
    return queue_send(s, li, hdr, payload, len);
}

static int shm_progress(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    int events = kn_shm_coop_reap(s);
    for (unsigned i = 0; i < s->n_ibox; i++)
        events += box_drain(s, &s->ibox[i]);
    events += queue_drain(s);
    /* help a peer's copy only with nothing of our own to do (a packet may
     * start a copy of ours): where both copy (opposite streams), helping
     * each other only moves cache lines between the cores (2 ranks, 1 MiB
     * both ways: 30 -> 36 GB/s) */
    if (!events && !s->base.busy)
        events += kn_shm_coop_help(s);
    return events;
}

/* Something to do: a packet arrived, room came back where a send found
 * none, a helper finished or needs us. */
static int shm_pending(shm_tl_t *s)
{
    if (atomic_load_explicit(&s->areas[s->me].help_pending, memory_order_acquire))
        return 1;
    cell_t *c = &s->cells[s->q_tail & (s->queue_entries - 1)];
    if (atomic_load_explicit(&c->seq, memory_order_acquire) == (uint32_t)(s->q_tail + 1))
        return 1;
    for (unsigned i = 0; i < s->n_ibox; i++) {
        box_local_t *q = &s->ibox[i];
        desc_t *d = &q->ring[q->tail & (s->ring_entries - 1)];
        if (atomic_load_explicit(&d->seq, memory_order_acquire) == (uint32_t)(q->tail + 1))
            return 1;
    }
    if (s->coop_comp && kn_shm_coop_helper_done(s))
        return 1; /* our copy's helper finished */
    if (s->sbuf_blocked && sbuf_released(s))
        return 1;
    for (unsigned i = 0; i < s->nblocked; i++) {
        unsigned li = (unsigned)s->blocked_list[i];
        peer_out_t *o = &s->out[li];
        if (o->blocked == BLK_ROOM && (o->box ? box_credits_back(o->box) : queue_room(s, li)))
            return 1; /* room came back since the send that found none */
    }
    return 0;
}

static int shm_arm(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    rank_area_t *me = &s->areas[s->me];
    /* forget peers that took a packet since; the rest are what we wait for */
    unsigned k = 0;
    for (unsigned i = 0; i < s->nblocked; i++) {
        peer_out_t *o = &s->out[s->blocked_list[i]];
        if (o->blocked)
            s->blocked_list[k++] = s->blocked_list[i];
        else
            o->listed = 0;
    }
    s->nblocked = k;
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
    rank_area_t *me = &s->areas[s->me];
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

static void shm_free(shm_tl_t *s)
{
    if (s->bell_fd >= 0)
        close(s->bell_fd);
    if (s->seg_fd >= 0)
        close(s->seg_fd);
    free(s->bell_addr);
    free(s->out);
    free(s->blocked_list);
    free(s->obox);
    free(s->ibox);
    free(s->chunk_start);
    free(s->chunk_end);
    free(s->rma_ok);
    for (unsigned li = 0; s->heaps && li < s->n; li++)
        kn_peer_heap_unmap(&s->heaps[li]);
    free(s->heaps);
    free(s);
}

static void shm_destroy(kn_tl_t *tl)
{
    shm_tl_t *s = shm_of(tl);
    if (!s->unlinked && s->p.local_rank == 0) {
        char name[128];
        kn_shm_segment_name(name, sizeof(name), s->p.jobid, s->p.node);
        shm_unlink(name);
    }
    kn_shm_budget_detach();
    munmap(s->seg, s->L.size);
    shm_free(s);
}

static const kn_tl_ops_t shm_ops = {
    .name = "shm",
    .send = shm_send,
    .progress = shm_progress,
    .caps = shm_caps,
    .get = kn_shm_get,
    .put = kn_shm_put,
    .rwv = kn_shm_rwv,
    .map = kn_shm_map,
    .arm = shm_arm,
    .disarm = shm_disarm,
    .wake = shm_wake,
    .destroy = shm_destroy,
};

/* ------------------------------------------------------------ start-up */

/* The doorbell sockets: ours bound, everyone's address computed. */
static knit_status_t bell_open(shm_tl_t *s)
{
    s->bell_addr = calloc(s->n, sizeof(*s->bell_addr));
    if (!s->bell_addr)
        return KNIT_ERR_NOMEM;
    for (unsigned li = 0; li < s->n; li++) {
        struct sockaddr_un *a = &s->bell_addr[li];
        a->sun_family = AF_UNIX;
        /* abstract name: sun_path[0] = 0 */
        int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "knit-%s-n%d-%05u", s->p.jobid, s->p.node, li);
        s->bell_addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    }
    s->bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->bell_fd < 0) {
        kn_error("doorbell socket: %m");
        return KNIT_ERR_IO;
    }
    /* fixed-width rank numbers: one address length serves every peer */
    struct sockaddr_un *mine = &s->bell_addr[s->me];
    if (bind(s->bell_fd, (struct sockaddr *)mine, s->bell_addrlen) < 0) {
        kn_error("doorbell socket %s: bind: %m", mine->sun_path + 1);
        close(s->bell_fd);
        s->bell_fd = -1;
        return KNIT_ERR_IO;
    }
    return KNIT_OK;
}

knit_status_t kn_shm_attach(const kn_shm_params_t *p, kn_tl_recv_cb_t cb, void *cb_arg, kn_tl_t **out)
{
    kn_shm_layout_t lay;
    knit_status_t lst = kn_shm_layout(p, &lay);
    if (lst == KNIT_ERR_INVAL)
        return lst;
    char name[128];
    kn_shm_segment_name(name, sizeof(name), p->jobid, p->node);
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0 && errno == ENOENT) {
        kn_debug("shm_open %s: %m", name);
        return KNIT_ERR_NOT_FOUND;
    }
    if (fd < 0) {
        kn_error("shm_open %s: %m", name);
        return KNIT_ERR_IO;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(seg_hdr_t)) {
        kn_error("node segment %s is too small or unreadable", name);
        close(fd);
        return KNIT_ERR_PROTO;
    }
    void *seg = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (seg == MAP_FAILED) {
        kn_error("mmap %s (%lld bytes): %m", name, (long long)st.st_size);
        close(fd);
        return KNIT_ERR_IO;
    }
    seg_hdr_t *h = seg;
    layout_t L;
    layout((unsigned)p->local_size, p->queue_entries, p->ring_entries, p->buf_size, lay.boxes, &L);
    if (!atomic_load_explicit(&h->ready, memory_order_acquire) || h->magic != SEG_MAGIC ||
        h->version != SEG_VERSION || h->nranks != (uint32_t)p->local_size || h->size != (uint64_t)st.st_size ||
        lst != KNIT_OK || h->size != L.size || h->reserved_size != L.reserved ||
        h->queue_entries != p->queue_entries || h->ring_entries != p->ring_entries ||
        h->buf_size != p->buf_size || h->boxes != L.nboxes || h->fbox_max != p->fbox_max) {
        kn_error("node segment %s has an unexpected layout (another job's file, or other KNIT_SHM_* "
                 "settings than local rank 0's?)", name);
        munmap(seg, (size_t)st.st_size);
        close(fd);
        return KNIT_ERR_PROTO;
    }
    shm_tl_t *s = calloc(1, sizeof(*s));
    if (!s) {
        munmap(seg, (size_t)st.st_size);
        close(fd);
        return KNIT_ERR_NOMEM;
    }
    s->p = *p;
    s->L = L;
    s->seg = seg;
    s->seg_fd = fd;
    s->bell_fd = -1;
    s->hdr = h;
    s->n = (unsigned)p->local_size;
    s->me = (unsigned)p->local_rank;
    s->areas = (rank_area_t *)((char *)seg + L.areas);
    s->queue_entries = p->queue_entries;
    s->ring_entries = p->ring_entries;
    s->buf_size = p->buf_size;
    s->cells = queue_of(s, s->me);
    s->wait_map = map_of(s, L.wait, s->me);
    s->help_map = map_of(s, L.help, s->me);
    s->sbuf = sbuf_of(s, s->me);
    s->chunk_cap = (unsigned)(p->buf_size / KN_CACHELINE);
    s->chunk_start = malloc(s->chunk_cap * sizeof(uint64_t));
    s->chunk_end = malloc(s->chunk_cap * sizeof(uint64_t));
    s->out = calloc(s->n, sizeof(peer_out_t));
    s->blocked_list = calloc(s->n, sizeof(int));
    s->obox = calloc(p->fbox_max ? p->fbox_max : 1, sizeof(box_local_t));
    s->ibox = calloc(p->fbox_max ? p->fbox_max : 1, sizeof(box_local_t));
    s->rma_ok = calloc(s->n, 1);
    s->heaps = calloc(s->n, sizeof(kn_peer_heap_t));
    if (!s->chunk_start || !s->chunk_end || !s->out || !s->blocked_list || !s->obox || !s->ibox || !s->rma_ok ||
        !s->heaps) {
        munmap(seg, L.size);
        shm_free(s);
        return KNIT_ERR_NOMEM;
    }
    knit_status_t bst = bell_open(s);
    if (bst != KNIT_OK) {
        munmap(seg, L.size);
        shm_free(s);
        return bst;
    }
    if (h->budget_limit)
        kn_shm_budget_attach(&h->budget_used, h->budget_limit);
    rank_area_t *me = &s->areas[s->me];
    me->probe_addr = (uint64_t)(uintptr_t)&probe_word;
    int heap_fd;
    kn_heap_export(&me->heap_base, &me->heap_size, &heap_fd);
    me->heap_fd = heap_fd;
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
    for (unsigned li = 0; li < s->n; li++)
        s->asym &= s->areas[li].membarrier != 0;
    if (s->p.local_rank == 0)
        kn_debug("shared memory: %s", s->asym ? "senders skip the fence; a rank about to sleep runs membarrier"
                                              : "a full fence on every send (membarrier not used)");
    if (s->p.cma_mode == 2) {
        snprintf(s->mech, sizeof(s->mech), "pipelined copy (KNIT_CMA=off)");
        return KNIT_OK;
    }
    int failures = 0, first_errno = 0;
    for (unsigned li = 0; li < s->n; li++) {
        if (li == s->me)
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
        snprintf(s->mech, sizeof(s->mech), "cross-memory attach (process_vm_readv/writev)%s",
                 s->areas[s->me].heap_size ? "; blocks in the shared heap by memcpy (KNIT_HEAP)" : "");
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

void kn_shm_fbox_count(kn_tl_t *tl, unsigned *out, unsigned *in)
{
    *out = shm_of(tl)->n_obox;
    *in = shm_of(tl)->n_ibox;
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
