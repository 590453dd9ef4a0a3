/*
 * dsm: the agents' side of the replicated region (issue 26, docs/dsm.md):
 * the dsmring, which carries every node's updates around a ring of
 * agents in one total order (this file, with the pages' homes of the
 * invalidate protocol), and the lockmgr (at node 0's agent,
 * dsm_lockmgr.c), which hands out the region's named locks and its
 * memory and keeps the write notices.  Built into libknit
 * (scripts/embed.sh), loaded into every agent by knit_dsm_init; it runs
 * on the agents' threads, and maps its node's replica (src/dsm/dsm_mod.h).
 *
 * A release (src/dsm/write.c) hands the agent a ticket, a bound and the
 * byte ranges a rank changed.  The agent that holds the token sends them
 * as update messages (frames: offset, length, data read from its replica,
 * crc32c) to the next agent of the ring; each agent checks the frames,
 * writes them into its replica (and the twins of pages its ranks are
 * writing) under the pages' locks, and sends the message on; the agent
 * before the origin acknowledges to the origin instead.  Only the token's
 * holder adds messages, and every link keeps its order, so every agent
 * applies every message in the one order of the ring.  A release request
 * completes when every release of its node up to its bound came back
 * around (node-wide, because a rank's diff may send what another rank of
 * the node wrote; src/dsm/write.c says why).
 *
 * The token: whoever needs it and lacks it says so to every agent (WANT,
 * with an epoch); the holder passes it to the next agent once it has sent
 * what it had (or its window of bytes in flight is full) and someone's
 * want is newer than what the token served them; an agent that has
 * nothing to send passes it on at once.  A node's bytes in flight are at
 * most its window, so a slow agent backs the ring up instead of letting
 * queues grow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/crc32c.h"

#include "dsm.h"

const knit_mod_services_t *K;

/* ------------------------------------------------------------ the replica */

static void *map_file(const char *name, uint64_t len)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* INIT's settings, the replica at data, twin and meta (size bytes, as
 * mapped by the caller: map_replica, or tests/fuzz/fuzz_dsmmod.c). */
static int32_t replica_setup(state_t *s, const kn_dsm_init_t *in, char *data, char *twin, kn_dsm_meta_t *meta)
{
    uint64_t npages = in->size / KN_DSM_PAGE;
    s->size = in->size;
    s->data = data;
    s->twin = twin;
    s->meta = meta;
    s->pages = kn_dsm_pages(meta);
    s->window = in->window;
    s->frame = in->frame;
    s->corrupt_every = in->corrupt_every;
    s->protocol = in->protocol == 1;
    kn_dsm_homes_of(&s->homes, in->home_pages, in->own_zone, in->own_slice, s->nnodes);
    s->heap_from = in->heap_from;
    if (s->protocol)
        s->homes.words = s->pages;
    s->migrate = s->protocol && in->migrate && s->nnodes <= KN_DSM_NODES_MAX;
    if (s->protocol && s->self == 0 && !(s->mark = calloc((npages + 63) / 64, sizeof(uint64_t))))
        return KNIT_MOD_ERR_NOMEM;
    s->buf = malloc(sizeof(kn_dsm_msg_t) + s->frame + 64 * (sizeof(kn_dsm_frame_t) + 8));
    if (!s->buf)
        return KNIT_MOD_ERR_NOMEM;
    s->mapped = 1;
    atomic_store(&s->meta->ready, 1);
    return KNIT_MOD_OK;
}

static int32_t map_replica(knit_mod_ctx_t *m, state_t *s, const kn_dsm_init_t *in)
{
    if (s->mapped)
        return KNIT_MOD_ERR_STATE;
    /* (a masked frame, 4 KiB and its mask, fits any message) */
    if (!in->size || in->size % KN_DSM_PAGE || in->size > (1ull << 46) || in->frame < 8192 ||
        in->frame > (16u << 20) || !in->window || in->protocol > 1 || in->heap_from >= in->size ||
        !kn_dsm_homes_of(&(kn_dsm_homes_t){0}, in->home_pages, in->own_zone, in->own_slice, s->nnodes) ||
        (in->own_zone + (uint64_t)s->nnodes * in->own_slice) * KN_DSM_PAGE > in->size ||
        memchr(in->data, 0, sizeof(in->data)) == NULL || memchr(in->twin, 0, sizeof(in->twin)) == NULL ||
        memchr(in->meta, 0, sizeof(in->meta)) == NULL)
        return KNIT_MOD_ERR_INVAL;
    s->size = in->size; /* (what fini unmaps, whatever happens next) */
    s->meta_len = kn_dsm_meta_bytes(in->size / KN_DSM_PAGE);
    char *data = map_file(in->data, in->size), *twin = map_file(in->twin, in->size);
    kn_dsm_meta_t *meta = map_file(in->meta, s->meta_len);
    s->data = data;
    s->twin = twin;
    s->meta = meta;
    if (!data || !twin || !meta || meta->magic != KN_DSM_MAGIC || meta->size != in->size) {
        K->log(m, KNIT_MOD_LOG_ERROR, "dsm: node %d cannot map its replica (%s, %s, %s): %s", s->self, in->data,
               in->twin, in->meta, strerror(errno));
        return KNIT_MOD_ERR_IO;
    }
    return replica_setup(s, in, data, twin, meta);
}

/* Write len bytes at off of the region: into the replica and, where a
 * rank of this node has the page writable, its twin. */
static void apply(state_t *s, uint64_t off, const char *src, uint64_t len)
{
    while (len) {
        uint64_t p = off / KN_DSM_PAGE;
        uint64_t n = KN_DSM_PAGE - off % KN_DSM_PAGE;
        if (n > len)
            n = len;
        kn_dsm_page_t *pg = &s->pages[p];
        kn_dsm_page_lock(pg);
        memcpy(s->data + off, src, n);
        if (atomic_load_explicit(pg, memory_order_relaxed) & KN_DSM_PG_REFS)
            memcpy(s->twin + off, src, n);
        kn_dsm_page_unlock(pg);
        off += n;
        src += n;
        len -= n;
    }
}

/* The frame after f in a message ending at end (the last one's padding
 * may be missing: a message of one frame streamed from the replica). */
static const char *frame_next(const kn_dsm_frame_t *f, const char *end)
{
    uint64_t step = sizeof(*f) + kn_dsm_pad8(kn_dsm_frame_bytes(f));
    return (uint64_t)(end - (const char *)f) < step ? end : (const char *)f + step;
}

/* A masked frame: the bytes of [off, off + len) whose bit is set (one
 * page; a byte of mask per 8 bytes: all, none, or bit by bit). */
static void apply_masked(state_t *s, uint64_t off, const unsigned char *mask, const unsigned char *src, uint64_t len)
{
    kn_dsm_page_t *pg = &s->pages[off / KN_DSM_PAGE];
    unsigned char *d = (unsigned char *)s->data + off, *t = (unsigned char *)s->twin + off;
    kn_dsm_page_lock(pg);
    int twin = (atomic_load_explicit(pg, memory_order_relaxed) & KN_DSM_PG_REFS) != 0;
    if (!twin) { /* no rank of the node has the page writable, and none can make it so while its lock is
                  * held here: nobody writes it now, so a word at a time */
        for (uint64_t i = 0; i + 8 <= len; i += 8) {
            unsigned mb = mask[i / 8];
            if (!mb)
                continue;
            uint64_t m = kn_dsm_spread[mb], dv, sv;
            memcpy(&dv, d + i, 8);
            memcpy(&sv, src + i, 8);
            dv = (dv & ~m) | (sv & m);
            memcpy(d + i, &dv, 8);
        }
        for (uint64_t i = len & ~7ull, mb = len % 8 ? mask[i / 8] & ((1u << (len % 8)) - 1) : 0; mb; mb &= mb - 1)
            d[i + (unsigned)__builtin_ctzll(mb)] = src[i + (unsigned)__builtin_ctzll(mb)];
        kn_dsm_page_unlock(pg);
        return;
    }
    for (uint64_t i = 0; i < len; i += 8) {
        unsigned mb = mask[i / 8];
        uint64_t n = len - i < 8 ? len - i : 8;
        if (mb == 0xff && n == 8) {
            memcpy(d + i, src + i, 8);
            if (twin)
                memcpy(t + i, src + i, 8);
            continue;
        }
        for (mb &= (1u << n) - 1; mb; mb &= mb - 1) { /* byte by byte: a rank of the node may be writing the others */
            unsigned b = (unsigned)__builtin_ctz(mb);
            d[i + b] = src[i + b];
            if (twin)
                t[i + b] = src[i + b];
        }
    }
    kn_dsm_page_unlock(pg);
}

static uint32_t frame_crc(const kn_dsm_frame_t *f, const void *data)
{
    uint32_t c = kn_crc32c(0, &f->off, sizeof(f->off) + sizeof(f->len));
    return kn_crc32c(c, data, kn_dsm_frame_bytes(f));
}

/* ------------------------------------------------------------ releases */

/* Invalidate: pages a release wrote, to node 0's log; its answer
 * (REPLY) completes the release. */
static void note(knit_mod_ctx_t *m, state_t *s, uint64_t token, const uint32_t *pages, uint64_t n)
{
    kn_dsm_msg_t h = {.type = KN_DSM_M_NOTE, .origin = s->self, .ticket = token, .bytes = n * sizeof(uint32_t)};
    char *msg = malloc(sizeof(h) + h.bytes);
    if (!msg) {
        K->complete(m, token, KNIT_MOD_ERR_NOMEM, NULL, 0);
        return;
    }
    memcpy(msg, &h, sizeof(h));
    memcpy(msg + sizeof(h), pages, h.bytes);
    if (K->send(m, 0, msg, sizeof(h) + h.bytes) != KNIT_MOD_OK)
        K->complete(m, token, KNIT_MOD_ERR_IO, NULL, 0);
    free(msg);
}

static void fetch_try(knit_mod_ctx_t *m, state_t *s);

/* Invalidate: pages' homes move (a barrier's, KN_DSM_M_MOVE; node 0's
 * list or another node's message): every move is checked before any is
 * made. */
int32_t kn_dsm_moves_apply(state_t *s, const kn_dsm_move_t *mv, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (mv[i].page >= s->size / KN_DSM_PAGE || mv[i].home < 0 || mv[i].home >= s->nnodes ||
            kn_dsm_in_zone(&s->homes, mv[i].page))
            return KNIT_MOD_ERR_RANGE;
    for (uint64_t i = 0; i < n; i++) {
        kn_dsm_page_t *pg = &s->pages[mv[i].page];
        kn_dsm_page_lock(pg);
        uint32_t v = atomic_load_explicit(pg, memory_order_relaxed) & ~KN_DSM_PG_HOME;
        atomic_store_explicit(pg, v | ((uint32_t)(mv[i].home + 1) << KN_DSM_PG_HOME_SHIFT), memory_order_relaxed);
        kn_dsm_page_unlock(pg);
    }
    return KNIT_MOD_OK;
}

/* Complete the waiters whose bound is reached (and send the fetches that
 * waited for this node's releases). */
static void wake(knit_mod_ctx_t *m, state_t *s)
{
    if (s->fetches)
        fetch_try(m, s);
    for (waiter_t **pp = &s->waiters; *pp;) {
        waiter_t *w = *pp;
        if (w->bound > s->prefix && !s->error) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        if (w->nnotes && !s->error) /* invalidate: the release is home; now the others may learn of it */
            note(m, s, w->token, w->notes, w->nnotes);
        else
            K->complete(m, w->token, s->error, s->error ? s->why : NULL, s->error ? strlen(s->why) + 1 : 0);
        free(w);
    }
}

/* Ticket t of this node is all around. */
static void finish_ticket(knit_mod_ctx_t *m, state_t *s, uint64_t t)
{
    if (s->ndone == s->done_cap) {
        uint64_t cap = s->done_cap ? 2 * s->done_cap : 16;
        uint64_t *d = realloc(s->done, cap * sizeof(*d));
        if (!d) {
            K->log(m, KNIT_MOD_LOG_ERROR, "dsm: out of memory");
            return;
        }
        s->done = d;
        s->done_cap = cap;
    }
    s->done[s->ndone++] = t;
    for (int moved = 1; moved;) { /* advance the prefix over what is done */
        moved = 0;
        for (uint64_t i = 0; i < s->ndone; i++)
            if (s->done[i] == s->prefix + 1) {
                s->prefix++;
                s->done[i] = s->done[--s->ndone];
                moved = 1;
                break;
            }
    }
    wake(m, s);
}

static ticket_t *ticket_of(state_t *s, uint64_t t, int make)
{
    for (ticket_t *k = s->tickets; k; k = k->next)
        if (k->t == t)
            return k;
    if (!make)
        return NULL;
    ticket_t *k = calloc(1, sizeof(*k));
    if (k) {
        k->t = t;
        k->next = s->tickets;
        s->tickets = k;
    }
    return k;
}

static void ticket_check(knit_mod_ctx_t *m, state_t *s, ticket_t *k)
{
    if (!k->sent_all || k->msgs)
        return;
    for (ticket_t **pp = &s->tickets; *pp; pp = &(*pp)->next)
        if (*pp == k) {
            *pp = k->next;
            break;
        }
    uint64_t t = k->t;
    free(k);
    finish_ticket(m, s, t);
}

static int others_want(const state_t *s)
{
    for (int32_t r = 0; r < s->nnodes; r++)
        if (r != s->self && s->want[r] > s->served[r])
            return 1;
    return 0;
}

static void want_token(knit_mod_ctx_t *m, state_t *s)
{
    if (s->have_token || s->wanting)
        return;
    s->wanting = 1;
    s->want[s->self] = ++s->epoch;
    kn_dsm_msg_t w = {.type = KN_DSM_M_WANT, .origin = s->self, .a = s->epoch};
    for (int32_t r = 0; r < s->nnodes; r++)
        if (r != s->self)
            K->send(m, r, &w, sizeof(w));
}

static void pass_token(knit_mod_ctx_t *m, state_t *s)
{
    size_t arr = (size_t)s->nnodes * sizeof(uint32_t);
    char msg[sizeof(kn_dsm_msg_t) + 2 * arr];
    kn_dsm_msg_t h = {.type = KN_DSM_M_TOKEN, .origin = s->self};
    memcpy(msg, &h, sizeof(h));
    memcpy(msg + sizeof(h), s->served, arr);
    memcpy(msg + sizeof(h) + arr, s->want, arr);
    s->have_token = 0;
    K->send(m, s->next, msg, sizeof(msg));
}

/* A run of at least this much goes as a message of its own, its data
 * streamed by the daemon straight from the replica (send_hdr) rather
 * than copied into the message first. */
#define DIRECT_MIN (32u << 10)

static void sent(knit_mod_ctx_t *m, state_t *s, const part_t *p, int32_t st, uint64_t nf, uint64_t data)
{
    ticket_t *k = ticket_of(s, p->ticket, 1);
    if (st != KNIT_MOD_OK || !k) {
        s->error = KNIT_MOD_ERR_IO;
        snprintf(s->why, sizeof(s->why), "dsm: node %d could not send an update (%d)", s->self, st);
        K->log(m, KNIT_MOD_LOG_ERROR, "%s", s->why);
        return;
    }
    k->msgs++;
    s->inflight += data;
    atomic_fetch_add(&s->meta->c.frames_out, nf);
    atomic_fetch_add(&s->meta->c.bytes_out, data);
}

static void frame_seal(state_t *s, kn_dsm_frame_t *f, const void *data)
{
    f->crc = frame_crc(f, data);
    if (s->corrupt_every && ++s->nframes % s->corrupt_every == 0)
        f->crc ^= 0x10; /* testing (KNIT_DSM_CORRUPT): as if a bit of the data had flipped on the way */
}

/* The first part, once every run of it is sent, leaves the queue. */
static void part_done(knit_mod_ctx_t *m, state_t *s, part_t *p)
{
    if (p->at < p->nruns)
        return;
    s->parts = p->next;
    if (!s->parts)
        s->parts_tail = NULL;
    if (p->final) {
        ticket_t *k = ticket_of(s, p->ticket, 1);
        if (k) {
            k->sent_all = 1;
            ticket_check(m, s, k);
        }
    }
    free(p);
}

/* The next piece of part p's current run: at most max bytes and not
 * past limit (a masked run goes whole or not at all: 0). */
static uint64_t piece(const part_t *p, uint64_t max, uint64_t limit)
{
    const kn_dsm_run_t *r = &p->runs[p->at];
    uint64_t off = r->off + p->done, n = r->len - p->done;
    if (r->mask)
        return n + (n + 7) / 8 <= max ? n : 0;
    if (n > max)
        n = max;
    if (n > limit - off)
        n = limit - off;
    return n;
}

static void advance(part_t *p, uint64_t n)
{
    p->done += n;
    if (p->done == p->runs[p->at].len) {
        p->at++;
        p->done = 0;
    }
}

/* A frame of n bytes of the current run at *at (its data from the
 * replica); returns the bytes it takes in the message past its header. */
static uint64_t frame_put(state_t *s, const part_t *p, char *at, uint64_t n)
{
    const kn_dsm_run_t *r = &p->runs[p->at];
    kn_dsm_frame_t *f = (kn_dsm_frame_t *)at;
    unsigned char *d = (unsigned char *)(f + 1);
    f->off = r->off + p->done;
    f->len = (uint32_t)n;
    if (r->mask) {
        memcpy(d, p->masks + (uint64_t)(r->mask - 1) * KN_DSM_MASK, (n + 7) / 8);
        memcpy(d + (n + 7) / 8, s->data + f->off, n);
        f->len |= KN_DSM_FRAME_MASKED;
    } else {
        memcpy(d, s->data + f->off, n);
    }
    frame_seal(s, f, d);
    return kn_dsm_frame_bytes(f);
}

/* The frame of the next n bytes of p at `at`: where the next one goes. */
static char *frame_add(state_t *s, part_t *p, char *at, uint64_t n, uint64_t *data, uint64_t *nf)
{
    uint64_t b = frame_put(s, p, at, n);
    *data += b;
    (*nf)++;
    advance(p, n);
    return at + sizeof(kn_dsm_frame_t) + kn_dsm_pad8(b);
}

/* The message in s->buf, its frames ending at `at`, to dest (if any). */
static void msg_send(knit_mod_ctx_t *m, state_t *s, const part_t *p, uint32_t type, int32_t dest, const char *at,
                     uint64_t data, uint64_t nf)
{
    if (!nf)
        return;
    kn_dsm_msg_t *h = (kn_dsm_msg_t *)s->buf;
    *h = (kn_dsm_msg_t){.type = type, .origin = s->self, .ticket = p->ticket, .a = data,
                        .bytes = (uint64_t)(at - (char *)(h + 1))};
    sent(m, s, p, K->send(m, dest, s->buf, (uint64_t)(at - s->buf)), nf, data);
}

/* The ring's next message: a run of DIRECT_MIN bytes and more streamed
 * from the replica, else frames of the runs as far as they fit. */
static void ring_message(knit_mod_ctx_t *m, state_t *s, part_t *p, char *at)
{
    uint64_t data = 0, nf = 0;
    const kn_dsm_run_t *r = &p->runs[p->at];
    if (!r->mask && r->len - p->done >= DIRECT_MIN) {
        uint64_t n = r->len - p->done < s->frame ? r->len - p->done : s->frame;
        kn_dsm_frame_t *f = (kn_dsm_frame_t *)at;
        kn_dsm_msg_t *h = (kn_dsm_msg_t *)s->buf;
        f->off = r->off + p->done;
        f->len = (uint32_t)n;
        frame_seal(s, f, s->data + f->off);
        *h = (kn_dsm_msg_t){.type = KN_DSM_M_UPD, .origin = s->self, .ticket = p->ticket, .a = n,
                            .bytes = sizeof(*f) + n};
        sent(m, s, p, K->send_hdr(m, s->next, h, sizeof(*h) + sizeof(*f), s->data + f->off, n), 1, n);
        advance(p, n);
        return;
    }
    while (p->at < p->nruns && data < s->frame && nf < 64) {
        uint64_t n = piece(p, s->frame - data, s->size);
        if (!n)
            break;
        at = frame_add(s, p, at, n, &data, &nf);
    }
    msg_send(m, s, p, KN_DSM_M_UPD, s->next, at, data, nf);
}

/* The end (a byte offset) of the part's current run from `page` on, or
 * before it the first page not homed at hn (looked for a frame's worth
 * at most). */
static uint64_t same_home_end(const state_t *s, const part_t *p, uint64_t page, int32_t hn)
{
    const kn_dsm_run_t *r = &p->runs[p->at];
    uint64_t run_end = r->off + r->len, most = page + s->frame / KN_DSM_PAGE + 1, end = page + 1;
    while (end * KN_DSM_PAGE < run_end && end < most && kn_dsm_home(&s->homes, end) == hn)
        end++;
    return end * KN_DSM_PAGE < run_end ? end * KN_DSM_PAGE : run_end;
}

/* Invalidate: the next message to the home of the pages the part goes on
 * with (frames: pieces of runs up to the end of pages of one home);
 * pieces homed here are in place already. */
static void home_message(knit_mod_ctx_t *m, state_t *s, part_t *p, char *at)
{
    uint64_t data = 0, nf = 0;
    int32_t home = -1;
    while (p->at < p->nruns && data < s->frame && nf < 64) {
        uint64_t page = (p->runs[p->at].off + p->done) / KN_DSM_PAGE;
        int32_t hn = kn_dsm_home(&s->homes, page);
        uint64_t home_end = same_home_end(s, p, page, hn);
        if (hn == s->self) { /* in place */
            advance(p, piece(p, UINT64_MAX, home_end));
            continue;
        }
        if (home >= 0 && hn != home)
            break;
        uint64_t n = piece(p, s->frame - data, home_end);
        if (!n)
            break;
        home = hn;
        at = frame_add(s, p, at, n, &data, &nf);
    }
    msg_send(m, s, p, KN_DSM_M_HUPD, home, at, data, nf);
}

/* Build one update message from the parts and send it; 0 when there
 * was nothing (or no room in the window). */
static int send_one(knit_mod_ctx_t *m, state_t *s)
{
    part_t *p = s->parts;
    if (!p || s->inflight >= s->window)
        return 0;
    char *at = s->buf + sizeof(kn_dsm_msg_t);
    if (p->at < p->nruns) {
        if (s->protocol)
            home_message(m, s, p, at);
        else
            ring_message(m, s, p, at);
    }
    part_done(m, s, p);
    return 1;
}

/* Send what the window allows while holding the token, then keep it,
 * pass it, or ask for it. */
static void pump(knit_mod_ctx_t *m, state_t *s)
{
    if (s->nnodes == 1) { /* no ring: the node's ranks share the only replica */
        while (s->parts) {
            part_t *p = s->parts;
            s->parts = p->next;
            if (p->final)
                finish_ticket(m, s, p->ticket);
            free(p);
        }
        s->parts_tail = NULL;
        return;
    }
    if (s->protocol) { /* invalidate: to the homes, no ring, no token */
        while (send_one(m, s))
            ;
        return;
    }
    if (s->have_token)
        while (send_one(m, s))
            ;
    if (s->have_token && (!s->parts || s->inflight >= s->window) && others_want(s)) {
        pass_token(m, s);
        if (s->parts)
            want_token(m, s);
    } else if (!s->have_token && s->parts) {
        want_token(m, s);
    }
}

static void on_release(knit_mod_ctx_t *m, state_t *s, const knit_mod_request_t *req, const kn_dsm_q_t *q,
                       const kn_dsm_run_t *runs)
{
    if (q->nruns > KN_DSM_RUNS_MAX || q->nmasks > KN_DSM_MASKS_MAX || !q->a || q->nnotes > s->size / KN_DSM_PAGE ||
        (q->nnotes && ((q->flags & KN_DSM_QF_MORE) || !s->protocol)) ||
        req->len != sizeof(*q) + q->nruns * sizeof(kn_dsm_run_t) + q->nmasks * KN_DSM_MASK +
                        q->nnotes * sizeof(uint32_t)) {
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    for (uint64_t i = 0; i < q->nruns; i++) {
        const kn_dsm_run_t *r = &runs[i];
        if (!r->len || r->off >= s->size || r->len > s->size - r->off || r->mask > q->nmasks ||
            (r->mask && r->off % KN_DSM_PAGE + r->len > KN_DSM_PAGE)) {
            K->complete(m, req->token, KNIT_MOD_ERR_RANGE, NULL, 0);
            return;
        }
    }
    uint64_t rbytes = q->nruns * sizeof(kn_dsm_run_t) + q->nmasks * KN_DSM_MASK;
    const uint32_t *notes = (const uint32_t *)((const char *)runs + rbytes);
    for (uint64_t i = 0; i < q->nnotes; i++)
        if (notes[i] >= s->size / KN_DSM_PAGE) {
            K->complete(m, req->token, KNIT_MOD_ERR_RANGE, NULL, 0);
            return;
        }
    part_t *p = malloc(sizeof(*p) + rbytes);
    waiter_t *w = (q->flags & KN_DSM_QF_MORE) ? NULL : malloc(sizeof(*w) + q->nnotes * sizeof(uint32_t));
    if (!p || (!(q->flags & KN_DSM_QF_MORE) && !w)) {
        free(p);
        free(w);
        K->complete(m, req->token, KNIT_MOD_ERR_NOMEM, NULL, 0);
        return;
    }
    *p = (part_t){.ticket = q->a, .final = !(q->flags & KN_DSM_QF_MORE), .nruns = q->nruns};
    memcpy(p->runs, runs, rbytes);
    p->masks = (unsigned char *)(p->runs + q->nruns);
    if (s->parts_tail)
        s->parts_tail->next = p;
    else
        s->parts = p;
    s->parts_tail = p;
    atomic_fetch_add(&s->meta->c.releases, p->final);
    if (!w) {
        K->complete(m, req->token, KNIT_MOD_OK, NULL, 0); /* the rest comes */
    } else {
        *w = (waiter_t){.bound = q->b, .token = req->token, .next = s->waiters, .nnotes = q->nnotes};
        memcpy(w->notes, notes, q->nnotes * sizeof(uint32_t));
        s->waiters = w;
    }
    pump(m, s);
    wake(m, s);
}

/* An update message from the previous agent. */
static void on_update(knit_mod_ctx_t *m, state_t *s, const kn_dsm_msg_t *h, const char *msg, uint64_t len)
{
    const char *at = (const char *)(h + 1), *end = msg + len;
    int32_t origin = h->origin;
    if (h->bytes != (uint64_t)(end - at) || origin < 0 || origin >= s->nnodes || origin == s->self) {
        K->log(m, KNIT_MOD_LOG_ERROR, "dsm: node %d dropped a malformed update message (%llu bytes)", s->self,
               (unsigned long long)len);
        return;
    }
    /* check every frame before writing any */
    uint64_t nf = 0;
    for (const char *p = at; p < end; nf++) {
        const kn_dsm_frame_t *f = (const kn_dsm_frame_t *)p;
        /* (a header cut short is read no further) */
        uint64_t len = (uint64_t)(end - p) >= sizeof(*f) ? f->len & ~KN_DSM_FRAME_MASKED : 0;
        if ((uint64_t)(end - p) < sizeof(*f) || (uint64_t)(end - p) - sizeof(*f) < kn_dsm_frame_bytes(f) ||
            f->off >= s->size || len > s->size - f->off ||
            ((f->len & KN_DSM_FRAME_MASKED) && f->off % KN_DSM_PAGE + len > KN_DSM_PAGE) ||
            frame_crc(f, f + 1) != f->crc) {
            atomic_fetch_add(&s->meta->c.bad_crc, 1);
            kn_dsm_msg_t b = {.type = KN_DSM_M_BAD, .origin = origin, .ticket = h->ticket,
                              .a = (uint64_t)(end - p) >= sizeof(*f) ? f->off : 0, .b = (uint64_t)s->self};
            K->log(m, KNIT_MOD_LOG_ERROR,
                   "dsm: an update frame from node %d (offset %#llx, %u bytes) failed its crc32c check at node %d: "
                   "not applied",
                   origin, (unsigned long long)b.a, (uint32_t)((uint64_t)(end - p) >= sizeof(*f) ? len : 0),
                   s->self);
            K->send(m, origin, &b, sizeof(b));
            return;
        }
        p = frame_next(f, end);
    }
    for (const char *p = at; p < end;) {
        const kn_dsm_frame_t *f = (const kn_dsm_frame_t *)p;
        uint64_t len = f->len & ~KN_DSM_FRAME_MASKED;
        if (f->len & KN_DSM_FRAME_MASKED)
            apply_masked(s, f->off, (const unsigned char *)(f + 1), (const unsigned char *)(f + 1) + (len + 7) / 8,
                         len);
        else
            apply(s, f->off, (const char *)(f + 1), len);
        p = frame_next(f, end);
    }
    atomic_fetch_add(&s->meta->c.frames_in, nf);
    atomic_fetch_add(&s->meta->c.bytes_in, h->a);
    if (h->type == KN_DSM_M_HUPD || s->next == origin) {
        kn_dsm_msg_t a = {.type = KN_DSM_M_ACK, .origin = origin, .ticket = h->ticket, .a = h->a};
        K->send(m, origin, &a, sizeof(a));
    } else {
        K->send(m, s->next, msg, len);
    }
}

static void on_ack(knit_mod_ctx_t *m, state_t *s, const kn_dsm_msg_t *h)
{
    ticket_t *k = ticket_of(s, h->ticket, 0);
    if (!k || !k->msgs)
        return;
    k->msgs--;
    s->inflight -= h->a <= s->inflight ? h->a : s->inflight;
    if (h->type == KN_DSM_M_BAD && !s->error) {
        s->error = KNIT_MOD_ERR_IO;
        snprintf(s->why, sizeof(s->why),
                 "an update frame of node %d (region offset %#llx) failed its crc32c check at node %d: the "
                 "replicas differ",
                 s->self, (unsigned long long)h->a, (int)h->b);
    }
    ticket_check(m, s, k);
    pump(m, s);
    wake(m, s);
}

/* ------------------------------------------------------------ invalidate: pages from their homes */

/* At the home: pages [a, a + b) (all homed here) as its replica has
 * them now, each under its lock. */
static void fetch_serve(knit_mod_ctx_t *m, state_t *s, int32_t from, const kn_dsm_msg_t *h)
{
    uint64_t page = h->a, n = h->b;
    int here = n && n <= KN_DSM_FETCH_MAX && page < s->size / KN_DSM_PAGE && n <= s->size / KN_DSM_PAGE - page;
    for (uint64_t i = 0; here && i < n; i++)
        here = kn_dsm_home(&s->homes, page + i) == s->self;
    if (!here) {
        kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket, .b = (uint64_t)(int64_t)KNIT_MOD_ERR_RANGE};
        K->send(m, from, &r, sizeof(r));
        return;
    }
    char *msg = malloc(sizeof(kn_dsm_msg_t) + n * KN_DSM_PAGE);
    if (!msg) {
        kn_dsm_msg_t r = {.type = KN_DSM_M_REPLY, .ticket = h->ticket, .b = (uint64_t)(int64_t)KNIT_MOD_ERR_NOMEM};
        K->send(m, from, &r, sizeof(r));
        return;
    }
    kn_dsm_msg_t *r = (kn_dsm_msg_t *)msg;
    char *d = (char *)(r + 1);
    for (uint64_t i = 0; i < n; i++) {
        kn_dsm_page_t *pg = &s->pages[page + i];
        kn_dsm_page_lock(pg);
        memcpy(d + i * KN_DSM_PAGE, s->data + (page + i) * KN_DSM_PAGE, KN_DSM_PAGE);
        kn_dsm_page_unlock(pg);
    }
    *r = (kn_dsm_msg_t){.type = KN_DSM_M_PAGE, .origin = s->self, .ticket = h->ticket, .a = page,
                        .b = kn_crc32c(0, d, n * KN_DSM_PAGE), .c = n, .bytes = n * KN_DSM_PAGE};
    if (s->corrupt_every && ++s->nframes % s->corrupt_every == 0)
        r->b ^= 0x10; /* testing (KNIT_DSM_CORRUPT) */
    K->send(m, from, msg, sizeof(*r) + n * KN_DSM_PAGE);
    free(msg);
}

/* Send the fetches that wait, if no release of this node is on its way:
 * a release's bytes are in the replica (and maybe in a twin, taken as
 * sent) before they are at their home, and a merge of the home's older
 * copy would take them back. */
static void fetch_try(knit_mod_ctx_t *m, state_t *s)
{
    uint64_t started = atomic_load(&s->meta->ticket);
    if (s->prefix != started)
        return;
    for (fetch_t *f = s->fetches; f; f = f->next) {
        if (f->sent)
            continue;
        kn_dsm_msg_t h = {.type = KN_DSM_M_FETCH, .origin = s->self, .ticket = f->token, .a = f->page, .b = f->n};
        f->sent = 1;
        f->ticket = started;
        if (K->send(m, f->home, &h, sizeof(h)) != KNIT_MOD_OK)
            f->sent = 0; /* (next time) */
    }
}

static fetch_t *fetch_take(state_t *s, uint64_t token)
{
    for (fetch_t **pp = &s->fetches; *pp; pp = &(*pp)->next)
        if ((*pp)->token == token && (*pp)->sent) {
            fetch_t *f = *pp;
            *pp = f->next;
            return f;
        }
    return NULL;
}

/* Back from the home: into the replica, but for the bytes ranks of this
 * node changed and have not released (where a page differs from its
 * twin); the twin takes the home's bytes throughout, so that their
 * diffs hold their own writes only.  A release of this node that started
 * since the fetch went (its diff may have taken bytes into the twin that
 * are not home yet) sends the fetch again once it is home. */
static void fetch_got(knit_mod_ctx_t *m, state_t *s, const kn_dsm_msg_t *h, uint64_t len)
{
    const unsigned char *src = (const unsigned char *)(h + 1);
    fetch_t *f = fetch_take(s, h->ticket);
    if (!f) {
        K->log(m, KNIT_MOD_LOG_WARN, "dsm: node %d dropped pages it did not ask for", s->self);
        return;
    }
    uint64_t n = h->c;
    if (n != f->n || h->a != f->page || len != sizeof(*h) + n * KN_DSM_PAGE ||
        kn_crc32c(0, src, n * KN_DSM_PAGE) != (uint32_t)h->b) {
        atomic_fetch_add(&s->meta->c.bad_crc, 1);
        char why[160];
        snprintf(why, sizeof(why), "page %llu from node %d failed its crc32c check at node %d",
                 (unsigned long long)f->page, h->origin, s->self);
        K->log(m, KNIT_MOD_LOG_ERROR, "dsm: %s", why);
        K->complete(m, f->token, KNIT_MOD_ERR_IO, why, strlen(why) + 1);
        free(f);
        return;
    }
    for (uint64_t k = 0; k < n; k++, src += KN_DSM_PAGE) {
        kn_dsm_page_t *pg = &s->pages[h->a + k];
        unsigned char *d = (unsigned char *)s->data + (h->a + k) * KN_DSM_PAGE;
        unsigned char *t = (unsigned char *)s->twin + (h->a + k) * KN_DSM_PAGE;
        kn_dsm_page_lock(pg);
        /* (a release takes its ticket before it diffs a page under this lock) */
        if (atomic_load(&s->meta->ticket) != f->ticket) {
            kn_dsm_page_unlock(pg);
            f->sent = 0;
            f->next = s->fetches;
            s->fetches = f;
            fetch_try(m, s);
            return;
        }
        if (atomic_load_explicit(pg, memory_order_relaxed) & KN_DSM_PG_REFS) {
            /* a rank of the node writes the page now: its bytes (those
             * that differ from the twin) stay, the others take the home's,
             * a word at a time with a compare-and-swap, so that a byte it
             * writes meanwhile is never written over */
            for (unsigned w = 0; w < KN_DSM_PAGE / 8; w++) {
                uint64_t tv, sv, *dw = (uint64_t *)(void *)(d + 8 * w);
                memcpy(&tv, t + 8 * w, 8);
                memcpy(&sv, src + 8 * w, 8);
                uint64_t cur = __atomic_load_n(dw, __ATOMIC_RELAXED);
                for (;;) {
                    uint64_t x = cur ^ tv, hi = 0x8080808080808080ull;
                    uint64_t mine = ((((x & ~hi) + ~hi) | x) & hi) >> 7;
                    uint64_t want = (cur & mine * 0xff) | (sv & ~(mine * 0xff));
                    if (want == cur ||
                        __atomic_compare_exchange_n(dw, &cur, want, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                        break;
                }
                memcpy(t + 8 * w, &sv, 8);
            }
        } else {
            memcpy(d, src, KN_DSM_PAGE);
        }
        kn_dsm_page_unlock(pg);
    }
    atomic_fetch_add(&s->meta->c.frames_in, 1);
    atomic_fetch_add(&s->meta->c.bytes_in, n * KN_DSM_PAGE);
    K->complete(m, f->token, KNIT_MOD_OK, NULL, 0);
    free(f);
}

/* The answer to an acquire, to the rank that asked. */
static void delta_got(knit_mod_ctx_t *m, const kn_dsm_msg_t *h, uint64_t len)
{
    if (len != sizeof(*h) + h->bytes || h->bytes % sizeof(uint32_t)) {
        K->complete(m, h->ticket, KNIT_MOD_ERR_IO, NULL, 0);
        return;
    }
    uint64_t n = h->bytes / sizeof(uint32_t);
    kn_dsm_delta_t *d = malloc(sizeof(*d) + h->bytes);
    if (!d) {
        K->complete(m, h->ticket, KNIT_MOD_ERR_NOMEM, NULL, 0);
        return;
    }
    d->pos = h->a;
    d->npages = n;
    memcpy(d + 1, h + 1, h->bytes);
    K->complete(m, h->ticket, KNIT_MOD_OK, d, sizeof(*d) + h->bytes);
    free(d);
}

/* ------------------------------------------------------------ handlers */

static void dsm_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    state_t *s = S(m);
    const kn_dsm_q_t *q = args;
    if (!s || req->len < sizeof(*q)) { /* (a switch's instance has no state: nothing to ask it) */
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    if (q->op == KN_DSM_Q_INIT) {
        int32_t st = req->len == sizeof(*q) + sizeof(kn_dsm_init_t)
                         ? map_replica(m, s, (const kn_dsm_init_t *)(q + 1))
                         : KNIT_MOD_ERR_INVAL;
        K->complete(m, req->token, st, NULL, 0);
        return;
    }
    if (!s->mapped) {
        K->complete(m, req->token, KNIT_MOD_ERR_STATE, NULL, 0);
        return;
    }
    kn_dsm_msg_t h = {.origin = s->self, .ticket = req->token, .a = q->a, .b = q->b};
    switch (q->op) {
    case KN_DSM_Q_RELEASE:
        on_release(m, s, req, q, (const kn_dsm_run_t *)(q + 1));
        return;
    case KN_DSM_Q_LOCK:
        h.type = KN_DSM_M_LOCK;
        h.b = (uint64_t)req->rank;
        h.c = q->b; /* invalidate: the rank's log position */
        h.bytes = (q->flags & KN_DSM_QF_TRY) ? 1 : 0; /* (no payload: the try's mark) */
        break;
    case KN_DSM_Q_ACQUIRE:
        h.type = KN_DSM_M_ACQ;
        h.b = (uint64_t)req->rank;
        h.c = (q->flags & KN_DSM_QF_BARRIER) ? q->b : 0;
        break;
    case KN_DSM_Q_FETCH: { /* a = the first page, b = how many (of one home) */
        int32_t home = q->a < s->size / KN_DSM_PAGE ? kn_dsm_home(&s->homes, q->a) : -1;
        if (home < 0 || home == s->self) { /* the home's pages are never invalid */
            K->complete(m, req->token, home < 0 ? KNIT_MOD_ERR_RANGE : KNIT_MOD_OK, NULL, 0);
            return;
        }
        fetch_t *f = q->b && q->b <= KN_DSM_FETCH_MAX ? malloc(sizeof(*f)) : NULL;
        if (!f) {
            K->complete(m, req->token, q->b && q->b <= KN_DSM_FETCH_MAX ? KNIT_MOD_ERR_NOMEM : KNIT_MOD_ERR_RANGE,
                        NULL, 0);
            return;
        }
        *f = (fetch_t){.next = s->fetches, .token = req->token, .page = q->a, .n = q->b, .home = home};
        s->fetches = f;
        fetch_try(m, s);
        return;
    }
    case KN_DSM_Q_UNLOCK:
        h.type = KN_DSM_M_UNLOCK;
        h.b = (uint64_t)req->rank;
        /* node 0 takes messages from here in order: the next grant comes after it */
        K->send(m, 0, &h, sizeof(h));
        K->complete(m, req->token, KNIT_MOD_OK, NULL, 0);
        return;
    case KN_DSM_Q_ALLOC:
        h.type = KN_DSM_M_ALLOC;
        break;
    case KN_DSM_Q_FREE:
        h.type = KN_DSM_M_FREE;
        break;
    case KN_DSM_Q_COUNT: {
        struct {
            kn_dsm_msg_t h;
            kn_dsm_count_q_t c;
        } cm = {.h = h, .c = {.askers = q->nmasks, .flags = q->flags, .parts = q->nnotes}};
        cm.h.type = KN_DSM_M_COUNT;
        cm.h.c = q->nruns;
        cm.h.bytes = sizeof(cm.c);
        if (K->send(m, 0, &cm, sizeof(cm)) != KNIT_MOD_OK)
            K->complete(m, req->token, KNIT_MOD_ERR_IO, NULL, 0);
        return;
    }
    default:
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    if (K->send(m, 0, &h, sizeof(h)) != KNIT_MOD_OK)
        K->complete(m, req->token, KNIT_MOD_ERR_IO, NULL, 0);
}

static void dsm_message(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    state_t *s = S(m);
    const kn_dsm_msg_t *h = msg;
    if (!s || len < sizeof(*h) || from < 0 || from >= s->nnodes || kn_lockmgr_message(m, s, from, h, len))
        return;
    switch (h->type) {
    case KN_DSM_M_UPD:
    case KN_DSM_M_HUPD:
        if (s->mapped)
            on_update(m, s, h, msg, len);
        return;
    case KN_DSM_M_ACK:
    case KN_DSM_M_BAD:
        on_ack(m, s, h);
        return;
    case KN_DSM_M_WANT:
        if (h->origin >= 0 && h->origin < s->nnodes && h->a > s->want[h->origin])
            s->want[h->origin] = (uint32_t)h->a;
        if (s->mapped)
            pump(m, s);
        else if (s->have_token && others_want(s))
            pass_token(m, s);
        return;
    case KN_DSM_M_TOKEN: {
        size_t arr = (size_t)s->nnodes * sizeof(uint32_t);
        if (len != sizeof(*h) + 2 * arr)
            return;
        const uint32_t *served = (const uint32_t *)(h + 1), *want = served + s->nnodes;
        for (int32_t r = 0; r < s->nnodes; r++) {
            if (served[r] > s->served[r])
                s->served[r] = served[r];
            if (want[r] > s->want[r])
                s->want[r] = want[r];
        }
        s->have_token = 1;
        s->wanting = 0;
        s->served[s->self] = s->epoch;
        if (s->mapped) {
            pump(m, s);
        } else if (others_want(s)) {
            pass_token(m, s);
        }
        return;
    }
    case KN_DSM_M_GRANT:
        K->complete(m, h->ticket, KNIT_MOD_OK, NULL, 0);
        return;
    case KN_DSM_M_DELTA:
        delta_got(m, h, len);
        return;
    case KN_DSM_M_FETCH:
        if (s->mapped)
            fetch_serve(m, s, from, h);
        return;
    case KN_DSM_M_PAGE:
        if (s->mapped)
            fetch_got(m, s, h, len);
        return;
    case KN_DSM_M_MOVE: {
        kn_dsm_msg_t r = {.type = KN_DSM_M_MOVED, .origin = s->self, .a = h->a};
        int32_t st = !s->mapped || !s->protocol ? KNIT_MOD_ERR_STATE
                     : from != 0 || h->bytes % sizeof(kn_dsm_move_t) || len != sizeof(*h) + h->bytes
                         ? KNIT_MOD_ERR_INVAL
                         : kn_dsm_moves_apply(s, (const kn_dsm_move_t *)(h + 1), h->bytes / sizeof(kn_dsm_move_t));
        r.b = (uint64_t)(int64_t)st;
        K->send(m, 0, &r, sizeof(r));
        return;
    }
    case KN_DSM_M_REPLY: {
        int32_t st = (int32_t)(int64_t)h->b;
        uint64_t res[2] = {h->a, h->c}; /* (c only in a COUNT's answer: bytes 16) */
        K->complete(m, h->ticket, st, st == KNIT_MOD_OK ? res : NULL,
                    st != KNIT_MOD_OK ? 0 : h->bytes == sizeof(res) ? sizeof(res) : sizeof(h->a));
        return;
    }
    default:
        K->log(m, KNIT_MOD_LOG_WARN, "dsm: node %d dropped a message of unknown type %u", s->self, h->type);
    }
}

static int32_t dsm_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    K = svc;
    const knit_mod_geometry_t *g = K->geometry(m);
    if (g->self_kind != KNIT_MOD_AT_AGENT || g->nnodes < 1)
        return KNIT_MOD_OK; /* (a switch instance has nothing to do) */
    state_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->served = calloc((size_t)g->nnodes, sizeof(uint32_t))) ||
        !(s->want = calloc((size_t)g->nnodes, sizeof(uint32_t)))) {
        if (s)
            free(s->served);
        free(s);
        return KNIT_MOD_ERR_NOMEM;
    }
    s->self = g->self;
    s->nnodes = g->nnodes;
    s->nranks = g->nranks;
    if (!(s->rank_pos = calloc((size_t)g->nranks, sizeof(uint64_t)))) {
        free(s->served);
        free(s->want);
        free(s);
        return KNIT_MOD_ERR_NOMEM;
    }
    s->next = (g->self + 1) % g->nnodes;
    s->have_token = g->self == 0;
    K->set_state(m, s);
    return KNIT_MOD_OK;
}

static void dsm_fini(knit_mod_ctx_t *m)
{
    state_t *s = S(m);
    if (!s)
        return;
    if (s->data)
        munmap(s->data, s->size);
    if (s->twin)
        munmap(s->twin, s->size);
    if (s->meta)
        munmap(s->meta, s->meta_len);
    for (part_t *p = s->parts, *n; p; p = n) {
        n = p->next;
        free(p);
    }
    for (ticket_t *k = s->tickets, *n; k; k = n) {
        n = k->next;
        free(k);
    }
    for (waiter_t *w = s->waiters, *n; w; w = n) {
        n = w->next;
        free(w);
    }
    for (fetch_t *f = s->fetches, *n; f; f = n) {
        n = f->next;
        free(f);
    }
    kn_lockmgr_fini(s);
    free(s->done);
    free(s->buf);
    free(s->served);
    free(s->want);
    free(s);
    K->set_state(m, NULL);
}

static const knit_mod_descriptor_t desc = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(desc),
    .name = "dsm",
    .init = dsm_init,
    .fini = dsm_fini,
    .on_request = dsm_request,
    .on_message = dsm_message,
};
KNIT_MODULE(desc)
