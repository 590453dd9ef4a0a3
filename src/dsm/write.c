/*
 * Finding this process's writes to the region and releasing them, and
 * (invalidate) the pages an acquire takes away (docs/dsm.md).
 *
 * Every page is read-only in a process until it writes there.  The first
 * write faults; the handler takes the page's lock, makes the node's twin
 * of the page if no rank of the node has the page writable yet (its
 * count in the page's word), counts itself in, notes the page in this
 * process's list and makes it writable.  The node's agent writes remote
 * updates into the replica and into the twin alike, so a page differs
 * from its twin exactly where ranks of this node wrote.
 *
 * A release takes this process's list; write-protects its pages (a
 * thread that writes again faults and notes the page anew); takes a
 * ticket of the node; compares each page with its twin under the page's
 * lock, byte for byte (two nodes that write different bytes of one page
 * both keep theirs), copies what differs into the twin where other ranks
 * of the node still write the page (so that their diffs leave it out);
 * and hands the changed byte ranges to the agent with the ticket and a
 * bound, the node's last ticket once the diffs are done.  The agent sends
 * the bytes from its replica and completes the release when every ticket
 * of the node up to the bound came back around the ring: a diff of
 * another rank of the node may have sent (and taken into the twin) what
 * this one wrote, and that rank's ticket, taken before its diff, is then
 * within the bound.  A page whose changes are scattered goes as one
 * masked run (dsm_mod.h).  Under invalidate the agent sends the runs to
 * the pages' homes rather than around the ring (a page homed on this
 * node is in place: not even diffed), and the release's last part names
 * its pages for node 0's log of write notices.
 *
 * Under invalidate an acquire (sync.c) takes every access to the pages
 * other nodes wrote; the next access faults here and fetches the page
 * (and, for a reader going on from the page before, the invalid pages
 * after it of the same home) from its home through the agent, with a
 * request that allocates nothing (the fault may come inside knit).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "dsm/dsm_int.h"
#include "offload/offload.h"
#include "util/compiler.h"
#include "util/log.h"

/* ------------------------------------------------------------ the fault */

static void dirty_add(uint32_t p)
{
    while (atomic_flag_test_and_set_explicit(&kn_dsm.dirty_lock, memory_order_acquire))
        kn_cpu_relax();
    kn_dsm.dirty[kn_dsm.ndirty++] = p;
    atomic_flag_clear_explicit(&kn_dsm.dirty_lock, memory_order_release);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *o = &kn_dsm.old_segv;
    if ((o->sa_flags & SA_SIGINFO) && o->sa_sigaction) {
        o->sa_sigaction(sig, si, uc);
    } else if (o->sa_handler == SIG_IGN) {
        return;
    } else if (o->sa_handler != SIG_DFL) {
        o->sa_handler(sig);
    } else { /* the default: fault again, unhandled */
        signal(sig, SIG_DFL);
    }
}

/* Page p becomes writable in this process (its bit is set): the node's
 * twin if it is the first rank of the node to write it, the count, the
 * list. */
/* This process counts itself in page p's writers, its twin made by the
 * first of the node (fresh: page and twin are zeros, never written). */
static void count_in(uint64_t p, int fresh)
{
    kn_dsm_page_t *pg = &kn_dsm.pages[p];
    kn_dsm_page_lock(pg);
    /* (under invalidate a page homed here is never diffed: no twin) */
    if (!fresh && !(atomic_load_explicit(pg, memory_order_relaxed) & KN_DSM_PG_REFS) &&
        !(kn_dsm.invalidate && kn_dsm_home(&kn_dsm.homes, p) == kn_dsm.node))
        memcpy(kn_dsm.twin + p * KN_DSM_PAGE, kn_dsm.base + p * KN_DSM_PAGE, KN_DSM_PAGE);
    atomic_fetch_add_explicit(pg, 1, memory_order_relaxed);
    kn_dsm_page_unlock(pg);
}

static void take(uint64_t p)
{
    count_in(p, 0);
    dirty_add((uint32_t)p);
}

#define AHEAD 16       /* pages a sequential writer's fault opens, */
#define AHEAD_MAX 256  /* ... twice as many each time it goes on from the last ones, up to this */
#define STREAMS 16 /* sequential readers a thread's fetches follow */

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    char *a = si->si_addr;
    char *base = kn_dsm.base;
    if (si->si_code != SEGV_ACCERR || !base || a < base || a >= base + kn_dsm.size ||
        !kn_dsm_holds((uint64_t)(a - base))) {
        chain(sig, si, uc);
        return;
    }
    int saved = errno;
    uint64_t p = (uint64_t)(a - base) / KN_DSM_PAGE;
    uint64_t bit = 1ull << (p % 64);
    if (kn_dsm.homes.slice && p >= kn_dsm.homes.zone && (p - kn_dsm.homes.zone) / kn_dsm.homes.slice == (uint64_t)kn_dsm.node) {
        /* this node's stacks are always writable: a guard page, or an overflow */
        chain(sig, si, uc);
        return;
    }
    if (kn_dsm.inval && (atomic_load(&kn_dsm.inval[p / 64]) & bit)) {
        /* invalidate: another node wrote the page since; its home has it.
         * A reader going on from a page it fetched before (one of the
         * last STREAMS streams: a loop reads several arrays at once)
         * fetches the invalid pages after it too, as far as they share
         * the home. */
        static __thread __attribute__((tls_model("initial-exec"))) uint64_t next[STREAMS]; /* (0: none) */
        static __thread __attribute__((tls_model("initial-exec"))) unsigned oldest;
        unsigned at = 0;
        while (at < STREAMS && (!p || next[at] != p))
            at++;
        uint64_t n = 1;
        if (at == STREAMS) { /* a new stream, in the oldest's place */
            at = oldest;
            oldest = (oldest + 1) % STREAMS;
        } else {
            int32_t home = kn_dsm_home(&kn_dsm.homes, p);
            while (n < KN_DSM_FETCH_MAX && p + n < kn_dsm.npages &&
                   (atomic_load(&kn_dsm.inval[(p + n) / 64]) & (1ull << ((p + n) % 64))) &&
                   kn_dsm_home(&kn_dsm.homes, p + n) == home)
                n++;
        }
        kn_dsm_q_t q = {.op = KN_DSM_Q_FETCH, .a = p, .b = n};
        knit_status_t st = kn_off_request_quiet(kn_dsm.mod, &q, sizeof(q));
        if (st != KNIT_OK) {
            static const char msg[] = "knit: dsm: a page of the region could not be fetched from its home node "
                                      "(knit_dsm_last_error has no caller here): the process stops\n";
            if (write(2, msg, sizeof(msg) - 1) < 0)
                abort();
            abort();
        }
        for (uint64_t i = 0; i < n; i++)
            atomic_fetch_and(&kn_dsm.inval[(p + i) / 64], ~(1ull << ((p + i) % 64)));
        next[at] = p + n;
        atomic_fetch_add_explicit(&kn_dsm.meta->c.fetches, n, memory_order_relaxed);
        mprotect(base + p * KN_DSM_PAGE, n * KN_DSM_PAGE, PROT_READ); /* a write faults once more, below */
        errno = saved;
        return;
    }
    /* (no release seals its pages while this thread makes pages writable:
     * it would protect a page this thread then opens again, unlisted) */
    for (;;) {
        while (atomic_load(&kn_dsm.sealing))
            kn_cpu_relax();
        atomic_fetch_add(&kn_dsm.faulting, 1);
        if (!atomic_load(&kn_dsm.sealing))
            break;
        atomic_fetch_sub(&kn_dsm.faulting, 1);
    }
    if (!(atomic_fetch_or(&kn_dsm.bits[p / 64], bit) & bit)) {
        take(p);
        /* writing on from the page before: the next ones too, at one
         * fault and one mprotect (pages not written cost a compare that
         * finds nothing at the release); more of them while the writer
         * goes on through the ones its last fault opened */
        static __thread __attribute__((tls_model("initial-exec"))) uint64_t wnext, wahead = AHEAD;
        uint64_t k = 1, ahead = p != wnext ? AHEAD : 2 * wahead < AHEAD_MAX ? 2 * wahead : AHEAD_MAX;
        if (p > 0 && (atomic_load(&kn_dsm.bits[(p - 1) / 64]) & (1ull << ((p - 1) % 64)))) {
            for (; k < ahead && p + k < kn_dsm.npages && kn_dsm_holds((p + k) * KN_DSM_PAGE); k++) {
                uint64_t q = p + k, qb = 1ull << (q % 64);
                if ((kn_dsm.inval && (atomic_load(&kn_dsm.inval[q / 64]) & qb)) ||
                    (atomic_fetch_or(&kn_dsm.bits[q / 64], qb) & qb))
                    break;
                take(q);
            }
            wahead = ahead;
            wnext = p + k;
        }
        atomic_fetch_add_explicit(&kn_dsm.meta->c.faults, 1, memory_order_relaxed);
        mprotect(base + p * KN_DSM_PAGE, k * KN_DSM_PAGE, PROT_READ | PROT_WRITE);
    }
    atomic_fetch_sub(&kn_dsm.faulting, 1);
    /* else another thread of this process is making it writable: the write
     * faults again until it has */
    errno = saved;
}

/* ------------------------------------------------------------ owned ranges */

int kn_dsm_own(void *lo, size_t len, int fresh)
{
    char *a = lo;
    if (!kn_dsm.base || a < kn_dsm.base || (uint64_t)(a - kn_dsm.base) % KN_DSM_PAGE || len % KN_DSM_PAGE || !len ||
        len > kn_dsm.size - (uint64_t)(a - kn_dsm.base)) {
        kn_dsm_error("kn_dsm_own(%p, %zu): not whole pages of the region", lo, len);
        return -1;
    }
    uint64_t p0 = (uint64_t)(a - kn_dsm.base) / KN_DSM_PAGE, n = len / KN_DSM_PAGE;
    pthread_mutex_lock(&kn_dsm.call);
    int slot = -1;
    for (int i = 0; i < kn_dsm.nown; i++)
        if (!kn_dsm.own[i].lo)
            slot = i;
    if (slot < 0 && kn_dsm.nown < KN_DSM_OWN_MAX)
        slot = kn_dsm.nown;
    if (slot < 0) {
        kn_dsm_error("kn_dsm_own: this process owns %d ranges, the most it may", KN_DSM_OWN_MAX);
        pthread_mutex_unlock(&kn_dsm.call);
        return -1;
    }
    if (kn_dsm.protect) {
        for (uint64_t p = p0; p < p0 + n; p++) {
            uint64_t bit = 1ull << (p % 64);
            if ((kn_dsm.inval && (atomic_load(&kn_dsm.inval[p / 64]) & bit)) ||
                (atomic_fetch_or(&kn_dsm.bits[p / 64], bit) & bit)) {
                for (uint64_t q = p0; q < p; q++) /* (undo: they were not written) */
                    atomic_fetch_and(&kn_dsm.bits[q / 64], ~(1ull << (q % 64)));
                kn_dsm_error("kn_dsm_own(%p, %zu): a page was written since the last release", lo, len);
                pthread_mutex_unlock(&kn_dsm.call);
                return -1;
            }
            count_in(p, fresh);
        }
        mprotect(a, len, PROT_READ | PROT_WRITE);
    }
    kn_dsm.own[slot].lo = a;
    kn_dsm.own[slot].hi = a + len;
    atomic_store(&kn_dsm.own[slot].live, a + len);
    if (slot == kn_dsm.nown)
        kn_dsm.nown++;
    pthread_mutex_unlock(&kn_dsm.call);
    return slot;
}

void kn_dsm_own_live(int slot, const void *live)
{
    if (slot < 0 || slot >= kn_dsm.nown)
        return;
    kn_dsm_own_t *o = &kn_dsm.own[slot];
    char *l = (char *)((uintptr_t)live & ~(uintptr_t)(KN_DSM_PAGE - 1));
    atomic_store_explicit(&o->live, l < o->lo ? o->lo : l > o->hi ? o->hi : l, memory_order_relaxed);
}

/* The owned pages in use now, after list[0, n): how many. */
/* The pages [*from, *to) of owned range o in use (none when the slot is free). */
static void own_in_use(const kn_dsm_own_t *o, uint64_t *from, uint64_t *to)
{
    *from = *to = 0;
    if (!o->lo)
        return;
    *from = (uint64_t)(atomic_load_explicit(&o->live, memory_order_relaxed) - kn_dsm.base) / KN_DSM_PAGE;
    *to = (uint64_t)(o->hi - kn_dsm.base) / KN_DSM_PAGE;
}

static uint64_t owned_live(uint32_t *list, uint64_t n)
{
    uint64_t k = 0;
    for (int i = 0; i < kn_dsm.nown; i++) {
        uint64_t from, to;
        own_in_use(&kn_dsm.own[i], &from, &to);
        for (uint64_t p = from; p < to && n + k < kn_dsm.npages; p++)
            list[n + k++] = (uint32_t)p;
    }
    return k;
}

static void *map_anon(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int kn_dsm_track_start(void)
{
    kn_dsm.bits_len = (kn_dsm.npages + 63) / 64 * sizeof(uint64_t);
    kn_dsm.list_len = kn_dsm.npages * sizeof(uint32_t);
    kn_dsm.bits = map_anon(kn_dsm.bits_len);
    kn_dsm.dirty = map_anon(kn_dsm.list_len);
    kn_dsm.work = map_anon(kn_dsm.list_len);
    kn_dsm.inval = kn_dsm.invalidate ? map_anon(kn_dsm.bits_len) : NULL;
    kn_dsm.keep = kn_dsm.keep_max ? map_anon(kn_dsm.npages) : NULL;
    kn_dsm.seen = kn_dsm.keep_max ? map_anon(kn_dsm.list_len) : NULL;
    kn_dsm.ndirty = 0;
    kn_dsm.nrel = 0;
    if (!kn_dsm.bits || !kn_dsm.dirty || !kn_dsm.work || (kn_dsm.invalidate && !kn_dsm.inval) ||
        (kn_dsm.keep_max && (!kn_dsm.keep || !kn_dsm.seen))) {
        kn_dsm_error("rank %d: no memory for the region's page lists", knit_rank(kn_dsm.ctx));
        kn_dsm_track_stop();
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &kn_dsm.old_segv) < 0) {
        kn_dsm_error("rank %d: sigaction(SIGSEGV): %s", knit_rank(kn_dsm.ctx), strerror(errno));
        kn_dsm_track_stop();
        return -1;
    }
    return 0;
}

void kn_dsm_track_stop(void)
{
    struct sigaction cur;
    if (sigaction(SIGSEGV, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault)
        sigaction(SIGSEGV, &kn_dsm.old_segv, NULL);
    if (kn_dsm.bits)
        munmap(kn_dsm.bits, kn_dsm.bits_len);
    if (kn_dsm.dirty)
        munmap(kn_dsm.dirty, kn_dsm.list_len);
    if (kn_dsm.work)
        munmap(kn_dsm.work, kn_dsm.list_len);
    if (kn_dsm.inval)
        munmap(kn_dsm.inval, kn_dsm.bits_len);
    if (kn_dsm.keep)
        munmap(kn_dsm.keep, kn_dsm.npages);
    if (kn_dsm.seen)
        munmap(kn_dsm.seen, kn_dsm.list_len);
    kn_dsm.inval = NULL;
    kn_dsm.keep = NULL;
    kn_dsm.seen = NULL;
    free(kn_dsm.delta);
    kn_dsm.delta = NULL;
    kn_dsm.delta_cap = 0;
    kn_dsm.bits = NULL;
    kn_dsm.dirty = kn_dsm.work = NULL;
    free(kn_dsm.runs);
    kn_dsm.runs = NULL;
    kn_dsm.runs_cap = 0;
    free(kn_dsm.masks);
    kn_dsm.masks = NULL;
    kn_dsm.masks_cap = 0;
}

/* ------------------------------------------------------------ the diff */

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* A release's runs so far (the part not yet handed over: kn_dsm.runs,
 * and the masks of its scattered pages) */
typedef struct diff {
    uint64_t n, nmasks, bytes;
    kn_dsm_run_t page[KN_DSM_SCATTER + 1]; /* one page's, while it is compared */
    unsigned npage;
} diff_t;

static int run_push(diff_t *d, kn_dsm_run_t r)
{
    kn_dsm_run_t *last = d->n ? &kn_dsm.runs[d->n - 1] : NULL;
    if (last && !last->mask && !r.mask && last->off + last->len == r.off && last->len + r.len <= KN_DSM_RUN_MAX) {
        last->len += r.len;
        return 0;
    }
    if (d->n == kn_dsm.runs_cap) {
        uint64_t cap = kn_dsm.runs_cap ? 2 * kn_dsm.runs_cap : 1024;
        kn_dsm_run_t *nr = realloc(kn_dsm.runs, cap * sizeof(*nr));
        if (!nr)
            return -1;
        kn_dsm.runs = nr;
        kn_dsm.runs_cap = cap;
    }
    kn_dsm.runs[d->n++] = r;
    return 0;
}

/* A page's changed bytes [from, to), bytes into the page p */
static void page_run(diff_t *d, uint64_t from, uint64_t to)
{
    if (d->npage <= KN_DSM_SCATTER)
        d->page[d->npage] = (kn_dsm_run_t){.off = from, .len = (uint32_t)(to - from)};
    d->npage++;
    d->bytes += to - from;
}

/* 1: every byte of the page differs from the twin's (the common case of
 * a page rewritten: one run), in one vectorized pass. */
KN_VECTORIZED static int all_differ(const uint64_t *cur, const uint64_t *old)
{
    uint64_t acc = 0;
    for (unsigned w = 0; w < KN_DSM_PAGE / 8; w++) {
        uint64_t x = cur[w] ^ old[w];
        acc |= (x - ONES) & ~x & HIGHS; /* a byte of x is 0 */
    }
    return acc == 0;
}

/* Where page p differs from its twin: its runs, or one masked run when
 * they are more than KN_DSM_SCATTER; -1: no memory. */
static int diff_page(uint64_t p, diff_t *d)
{
    const uint64_t *cur = (const uint64_t *)(kn_dsm.base + p * KN_DSM_PAGE);
    const uint64_t *old = (const uint64_t *)(kn_dsm.twin + p * KN_DSM_PAGE);
    uint64_t start = 0, open = 0; /* a run from start (bytes into the page), while open */
    d->npage = 0;
    if (all_differ(cur, old)) {
        d->bytes += KN_DSM_PAGE;
        return run_push(d, (kn_dsm_run_t){.off = p * KN_DSM_PAGE, .len = KN_DSM_PAGE});
    }
    if (!memcmp(cur, old, KN_DSM_PAGE)) /* (opened ahead of a writer that stopped short) */
        return 0;
    uint64_t bytes0 = d->bytes;
    for (unsigned w = 0; w < KN_DSM_PAGE / 8 && d->npage <= KN_DSM_SCATTER; w++) {
        /* (a page found scattered stops here: its mask is built below in
         * one pass, not byte by byte) */
        uint64_t x = cur[w] ^ old[w];
        if (!x) {
            if (open)
                page_run(d, start, w * 8);
            open = 0;
            continue;
        }
        if (open && !((x - ONES) & ~x & HIGHS)) /* every byte differs: the run goes on */
            continue;
        for (unsigned b = 0; b < 8; b++) {
            int differs = (x >> (8 * b)) & 0xff;
            uint64_t at = w * 8 + b;
            if (differs && !open) {
                start = at;
                open = 1;
            } else if (!differs && open) {
                page_run(d, start, at);
                open = 0;
            }
        }
    }
    if (open && d->npage <= KN_DSM_SCATTER)
        page_run(d, start, KN_DSM_PAGE);
    uint64_t base = p * KN_DSM_PAGE;
    if (d->npage <= KN_DSM_SCATTER) {
        for (unsigned i = 0; i < d->npage; i++) {
            kn_dsm_run_t r = d->page[i];
            r.off += base;
            if (run_push(d, r) < 0)
                return -1;
        }
        return 0;
    }
    /* scattered: from the first changed word to the last, with a mask */
    unsigned first = (unsigned)d->page[0].off / 8, last = KN_DSM_PAGE / 8;
    while (cur[last - 1] == old[last - 1])
        last--;
    if (d->nmasks == kn_dsm.masks_cap) {
        uint64_t cap = kn_dsm.masks_cap ? 2 * kn_dsm.masks_cap : 64;
        unsigned char *m = realloc(kn_dsm.masks, cap * KN_DSM_MASK);
        if (!m)
            return -1;
        kn_dsm.masks = m;
        kn_dsm.masks_cap = cap;
    }
    unsigned char *mask = kn_dsm.masks + d->nmasks * KN_DSM_MASK;
    uint64_t changed = 0;
    for (unsigned w = first; w < last; w++) { /* a bit per byte: its byte of cur ^ old is not 0 */
        uint64_t x = cur[w] ^ old[w];
        uint64_t y = (((x & ~HIGHS) + ~HIGHS) | x) & HIGHS;
        mask[w - first] = (unsigned char)(((y >> 7) * 0x0102040810204080ull) >> 56);
        changed += ((y >> 7) * ONES) >> 56; /* (its bytes that differ) */
    }
    d->bytes = bytes0 + changed;
    d->nmasks++;
    return run_push(d, (kn_dsm_run_t){.off = base + first * 8, .len = (last - first) * 8, .mask = (uint32_t)d->nmasks});
}

/* Page p's twin takes this release's bytes of runs [from, to): exactly
 * the changed ones (the others of a masked run may be another rank's of
 * the node, written since the diff and still to go out with its own). */
static void twin_take(uint64_t p, uint64_t from, uint64_t to)
{
    uint64_t lo = p * KN_DSM_PAGE, hi = lo + KN_DSM_PAGE;
    for (uint64_t r = from; r < to; r++) {
        const kn_dsm_run_t *run = &kn_dsm.runs[r];
        uint64_t a = run->off, b = a + run->len;
        a = a < lo ? lo : a;
        b = b > hi ? hi : b;
        if (a >= b)
            continue;
        if (!run->mask) {
            memcpy(kn_dsm.twin + a, kn_dsm.base + a, b - a);
            continue;
        }
        /* (a word at a time: only this rank and the agent write the twin,
         * both under the page's lock) */
        const unsigned char *mask = kn_dsm.masks + (uint64_t)(run->mask - 1) * KN_DSM_MASK;
        for (uint64_t w = 0; w < run->len / 8; w++) {
            uint64_t m = kn_dsm_spread[mask[w]], tv, cv;
            if (!m)
                continue;
            char *t = kn_dsm.twin + run->off + w * 8;
            memcpy(&tv, t, 8);
            memcpy(&cv, kn_dsm.base + run->off + w * 8, 8);
            tv = (tv & ~m) | (cv & m);
            memcpy(t, &tv, 8);
        }
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The pages of list (sorted) get access prot, a range per call. */
static void protect(const uint32_t *list, uint64_t n, int prot)
{
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i + 1;
        while (j < n && list[j] == list[j - 1] + 1)
            j++;
        mprotect(kn_dsm.base + (uint64_t)list[i] * KN_DSM_PAGE, (j - i) * KN_DSM_PAGE, prot);
        i = j;
    }
}

/* A release's runs go to the agent in parts while the diff goes on, so
 * that the agent sends while the rank compares: KN_DSM_QF_MORE parts of
 * what is diffed so far (complete once the agent copied them), then the
 * last part with the bound, which completes once the release is around. */
#define PART_BYTES (1u << 20)   /* a part once its runs hold this much */
#define PARTS_MAX 64            /* parts of one release in flight */

typedef struct parts {
    knit_mreq_t *req[PARTS_MAX];
    void *buf[PARTS_MAX];
    int n;
    int push;                   /* the last part too stays in flight (kn_dsm_push) */
    knit_status_t st;
} parts_t;

/* A part's request has completed with st and answer (n bytes: the
 * agent's reason for a failure; under invalidate a last part's answer is
 * the log position of its notes, taken by acquires, not here). */
static void part_done(parts_t *ps, int i, knit_status_t st, const char *answer, size_t n)
{
    if (ps->st == KNIT_OK && st != KNIT_OK) {
        ps->st = st;
        if (n)
            kn_dsm_error("%.*s", (int)n, answer);
    }
    free(ps->buf[i]);
}

#define ANSWER_MAX 256

static void parts_wait(parts_t *ps)
{
    for (int i = 0; i < ps->n; i++) {
        char answer[ANSWER_MAX];
        size_t n = 0;
        knit_status_t st = knit_request_wait(&ps->req[i], answer, sizeof(answer) - 1, &n);
        part_done(ps, i, st, answer, n < sizeof(answer) ? n : sizeof(answer) - 1);
    }
    ps->n = 0;
}

/* Whether every part has completed (those that did are let go). */
static int parts_done(parts_t *ps)
{
    int left = 0;
    for (int i = 0; i < ps->n; i++) {
        char answer[ANSWER_MAX];
        size_t n = 0;
        int done = 0;
        knit_status_t st = knit_request_test(&ps->req[i], &done, answer, sizeof(answer) - 1, &n);
        if (!done && st == KNIT_OK) {
            ps->req[left] = ps->req[i];
            ps->buf[left++] = ps->buf[i];
            continue;
        }
        part_done(ps, i, st, answer, n < sizeof(answer) ? n : sizeof(answer) - 1);
    }
    ps->n = left;
    return !left;
}

/* The runs so far (and their masks) as a part of ticket t (the last
 * one: with the bound and, under invalidate, the pages the release wrote
 * for node 0's log of write notices; waited for, but for a push's); the
 * diff starts afresh. */
static void part_send(parts_t *ps, diff_t *d, uint64_t t, uint64_t bound, int last, const uint32_t *notes,
                      uint64_t nnotes)
{
    size_t len = sizeof(kn_dsm_q_t) + d->n * sizeof(kn_dsm_run_t) + d->nmasks * KN_DSM_MASK +
                 nnotes * sizeof(uint32_t);
    char *buf = ps->st == KNIT_OK ? malloc(len) : NULL;
    if (ps->st == KNIT_OK && !buf) {
        ps->st = KNIT_ERR_NOMEM;
        kn_dsm_error("rank %d: no memory for a release's list of changes", knit_rank(kn_dsm.ctx));
    }
    if (buf) {
        kn_dsm_q_t *q = (kn_dsm_q_t *)buf;
        *q = (kn_dsm_q_t){.op = KN_DSM_Q_RELEASE, .flags = last ? 0 : KN_DSM_QF_MORE, .a = t, .b = bound,
                          .nruns = d->n, .nmasks = d->nmasks, .nnotes = nnotes};
        char *at = (char *)(q + 1);
        memcpy(at, kn_dsm.runs, d->n * sizeof(kn_dsm_run_t));
        at += d->n * sizeof(kn_dsm_run_t);
        memcpy(at, kn_dsm.masks, d->nmasks * KN_DSM_MASK);
        memcpy(at + d->nmasks * KN_DSM_MASK, notes, nnotes * sizeof(uint32_t));
    }
    d->n = d->nmasks = 0;
    if (!buf)
        return;
    if (last && !ps->push) {
        ps->st = kn_dsm_ask(buf, len, NULL, 0);
        free(buf);
        return;
    }
    if (ps->n == PARTS_MAX)
        parts_wait(ps);
    knit_status_t st = knit_module_request(kn_dsm.mod, buf, len, &ps->req[ps->n]);
    if (st != KNIT_OK) {
        free(buf);
        ps->st = st;
        return;
    }
    ps->buf[ps->n++] = buf;
}

void kn_dsm_invalidate(const kn_dsm_delta_t *d)
{
    uint32_t *pages = (uint32_t *)(uintptr_t)(d + 1);
    uint64_t n = 0;
    for (uint64_t i = 0; i < d->npages; i++) {
        uint32_t p = pages[i];
        /* a page homed here is always current; one this process wrote
         * since its release keeps what it wrote (none: acquires release
         * first); one still invalid since an earlier acquire is so already
         * (no mprotect: each waits for the other cpus' TLBs) */
        if (p >= kn_dsm.npages || kn_dsm_home(&kn_dsm.homes, p) == kn_dsm.node ||
            (atomic_load(&kn_dsm.bits[p / 64]) & (1ull << (p % 64))) ||
            (atomic_load(&kn_dsm.inval[p / 64]) & (1ull << (p % 64))))
            continue;
        pages[n++] = p;
    }
    qsort(pages, n, sizeof(uint32_t), cmp_u32);
    for (uint64_t i = 0; i < n; i++)
        atomic_fetch_or(&kn_dsm.inval[pages[i] / 64], 1ull << (pages[i] % 64));
    protect(pages, n, PROT_NONE);
    atomic_fetch_add_explicit(&kn_dsm.meta->c.invalidated, n, memory_order_relaxed);
    kn_dsm.pos = d->pos;
}

/* Whether page p holds writes of this process not yet released: its
 * twin is out (the dirty bit), or it is in use in one of its own ranges. */
static int written_here(uint64_t p)
{
    if (atomic_load_explicit(&kn_dsm.bits[p / 64], memory_order_relaxed) & (1ull << (p % 64)))
        return 1;
    for (int i = 0; i < kn_dsm.nown; i++) {
        uint64_t from, to;
        own_in_use(&kn_dsm.own[i], &from, &to);
        if (p >= from && p < to)
            return 1;
    }
    return 0;
}

/* A release's pages diffed, runs and bytes, in the node's counters (KNIT_STATS). */
static void count_release(uint64_t pages, uint64_t runs, uint64_t bytes)
{
    kn_dsm_counters_t *c = &kn_dsm.meta->c;
    atomic_fetch_add_explicit(&c->diffs, pages, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->runs, runs, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->released, bytes, memory_order_relaxed);
}

/* more than this goes out as a whole release (its runs would not fit one part) */
#define RANGE_PAGES_MAX 16

knit_status_t kn_dsm_release_range(const void *addr, size_t len)
{
    const char *a = addr;
    if (!kn_dsm.protect || kn_dsm.invalidate || !len || a < kn_dsm.base || len > kn_dsm.size ||
        (size_t)(a - kn_dsm.base) > kn_dsm.size - len)
        return kn_dsm_release();
    uint64_t from = (uint64_t)(a - kn_dsm.base) / KN_DSM_PAGE, to = (uint64_t)(a + len - 1 - kn_dsm.base) / KN_DSM_PAGE;
    if (to - from >= RANGE_PAGES_MAX)
        return kn_dsm_release();
    diff_t d = {0};
    uint64_t np = 0;
    for (uint64_t p = from; p <= to; p++) {
        if (!written_here(p))
            continue;
        kn_dsm_page_t *pg = &kn_dsm.pages[p];
        uint64_t first = d.n;
        kn_dsm_page_lock(pg);
        int rc = diff_page(p, &d);
        if (rc >= 0) /* the page stays written: its twin takes what goes out */
            twin_take(p, first ? first - 1 : 0, d.n);
        kn_dsm_page_unlock(pg);
        if (rc < 0) {
            kn_dsm_error("rank %d: no memory for a release's list of changes", knit_rank(kn_dsm.ctx));
            return KNIT_ERR_NOMEM;
        }
        np++;
    }
    if (!d.n)
        return KNIT_OK; /* nothing of it changed since it last went out */
    uint64_t t = atomic_fetch_add(&kn_dsm.meta->ticket, 1) + 1;
    parts_t ps = {.st = KNIT_OK};
    uint64_t nruns = d.n, bytes = d.bytes;
    part_send(&ps, &d, t, atomic_load(&kn_dsm.meta->ticket), 1, NULL, 0);
    count_release(np, nruns, bytes);
    return ps.st;
}

/* Update (KNIT_DSM_KEEP): which pages of a release's sorted list stay
 * writable.  A page listed again within KEEP_WINDOW releases of its last
 * one is kept; a kept page goes back to write protection once keep_max
 * releases in a row found it unchanged (it was compared each time).
 * Moves the kept pages, in order, to the end of the list and lists them
 * for the next release; returns how many are sealed (protected).  Under
 * kn_dsm.call, while the release seals. */
#define KEEP_WINDOW 4

static uint64_t keep_split(uint32_t *list, uint64_t np)
{
    if (!kn_dsm.keep_max)
        return np;
    uint32_t rel = ++kn_dsm.nrel;
    /* (no thread adds to the list while the release seals: faults wait) */
    while (atomic_flag_test_and_set_explicit(&kn_dsm.dirty_lock, memory_order_acquire))
        kn_cpu_relax();
    uint32_t *kept = kn_dsm.dirty + kn_dsm.ndirty;
    uint64_t nsealed = 0, nkept = 0;
    for (uint64_t i = 0; i < np; i++) {
        uint32_t p = list[i];
        uint8_t k = kn_dsm.keep[p];
        int keep = k ? k <= kn_dsm.keep_max : kn_dsm.seen[p] && rel - kn_dsm.seen[p] <= KEEP_WINDOW;
        kn_dsm.seen[p] = rel;
        kn_dsm.keep[p] = keep ? (k ? k : 1) : 0;
        if (keep)
            kept[nkept++] = p;
        else
            list[nsealed++] = p;
    }
    memcpy(list + nsealed, kept, nkept * sizeof(uint32_t));
    kn_dsm.ndirty += nkept;
    atomic_flag_clear_explicit(&kn_dsm.dirty_lock, memory_order_release);
    return nsealed;
}

/* what's (a release's, a push's) changes did not all leave the node: st */
static void not_out(const char *what, knit_status_t st)
{
    kn_dsm_error("rank %d: %s's changes could not go to the agent (%s): its writes did not all leave the node",
                 knit_rank(kn_dsm.ctx), what, knit_strerror(st));
}

/* The push in flight (kn_dsm_push): its parts, the last one's included. */
static parts_t pushed;

/* A release of everything this process wrote; wait: it returns once every
 * replica has it (a release), else once its changes are with the agent,
 * its parts left in flight in pushed (a push). */
static knit_status_t release(int wait)
{
    if (!kn_dsm.protect) { /* one node: the only replica is everyone's */
        atomic_thread_fence(memory_order_seq_cst);
        return KNIT_OK;
    }
    atomic_store(&kn_dsm.sealing, 1);
    while (atomic_load(&kn_dsm.faulting))
        kn_cpu_relax();
    while (atomic_flag_test_and_set_explicit(&kn_dsm.dirty_lock, memory_order_acquire))
        kn_cpu_relax();
    uint32_t *list = kn_dsm.dirty;
    uint64_t np = kn_dsm.ndirty;
    kn_dsm.dirty = kn_dsm.work;
    kn_dsm.work = list;
    kn_dsm.ndirty = 0;
    atomic_flag_clear_explicit(&kn_dsm.dirty_lock, memory_order_release);
    qsort(list, np, sizeof(uint32_t), cmp_u32);
    /* the pages kept writable go to the end of the list, and into the
     * next release's list (their bits stay) */
    uint64_t nsealed = keep_split(list, np);
    protect(list, nsealed, PROT_READ);
    for (uint64_t i = 0; i < nsealed; i++)
        atomic_fetch_and(&kn_dsm.bits[list[i] / 64], ~(1ull << (list[i] % 64)));
    atomic_store(&kn_dsm.sealing, 0);
    /* then the owned pages in use: kept and owned pages stay writable, and
     * their twins take all that goes out */
    uint64_t nowned = nsealed;
    np += owned_live(list, np);
    if (!np)
        return KNIT_OK; /* nothing written since the last release (which waited for it all) */
    uint64_t t = atomic_fetch_add(&kn_dsm.meta->ticket, 1) + 1;
    diff_t d = {0};
    uint64_t nruns = 0, part_from = 0;
    parts_t ps = {.st = KNIT_OK, .push = !wait};
    for (uint64_t i = 0; i < np; i++) { /* (after a failure, the pages' counts still go down) */
        uint64_t p = list[i];
        kn_dsm_page_t *pg = &kn_dsm.pages[p];
        uint64_t first = d.n, bytes = d.bytes;
        kn_dsm_page_lock(pg);
        int home_here = kn_dsm.invalidate && kn_dsm_home(&kn_dsm.homes, p) == kn_dsm.node;
        if (ps.st == KNIT_OK && !home_here && diff_page(p, &d) < 0) /* (a page homed here is in place) */
            ps.st = KNIT_ERR_NOMEM;
        uint32_t refs = atomic_load_explicit(pg, memory_order_relaxed) & KN_DSM_PG_REFS;
        int owned = i >= nowned;
        if ((refs > 1 || owned) && !home_here) /* others of the node still write it: the twin takes what goes out */
            twin_take(p, first ? first - 1 : 0, d.n);
        if (refs && !owned)
            atomic_fetch_sub_explicit(pg, 1, memory_order_relaxed);
        kn_dsm_page_unlock(pg);
        nruns += d.n - first;
        if (kn_dsm.keep_max && kn_dsm.keep[p] && kn_dsm.keep[p] <= kn_dsm.keep_max) /* kept: changed or not */
            kn_dsm.keep[p] = d.bytes > bytes ? 1 : (uint8_t)(kn_dsm.keep[p] + 1);
        if (ps.st == KNIT_OK && i + 1 < np &&
            (d.bytes - part_from >= PART_BYTES || d.n + KN_DSM_SCATTER + 1 > KN_DSM_RUNS_MAX ||
             d.nmasks == KN_DSM_MASKS_MAX)) {
            part_send(&ps, &d, t, 0, 0, NULL, 0);
            part_from = d.bytes;
        }
    }
    knit_status_t failed = ps.st;
    if (failed != KNIT_OK) /* the ticket still goes, so that the node's later releases are not held up */
        d.n = d.nmasks = 0;
    ps.st = KNIT_OK;
    /* (a release that failed still notes its pages: a page it half sent
     * is better fetched than trusted) */
    part_send(&ps, &d, t, atomic_load(&kn_dsm.meta->ticket), 1, list, kn_dsm.invalidate ? np : 0);
    knit_status_t last = ps.st; /* (the last part's request said why: kn_dsm_ask) */
    if (wait) {
        parts_wait(&ps);
    } else {
        pushed = ps; /* (parts_done found it empty) */
        pushed.st = KNIT_OK;
        ps.n = 0;
        if (failed == KNIT_OK)
            failed = last; /* (the last part could not be handed over) */
    }
    if (last == KNIT_OK && failed == KNIT_OK && ps.st != KNIT_OK) /* an earlier part's */
        failed = ps.st;
    count_release(np, nruns, d.bytes);
    if (failed != KNIT_OK) {
        not_out("a release", failed);
        return failed;
    }
    return ps.st;
}

/* A push that failed says so at the next push or release. */
static knit_status_t push_failed(void)
{
    knit_status_t st = pushed.st;
    pushed.st = KNIT_OK;
    if (st != KNIT_OK)
        not_out("a push", st);
    return st;
}

knit_status_t kn_dsm_release(void)
{
    knit_status_t st = release(1);
    /* a push before it is around too now (the release's bound covers its ticket) */
    parts_wait(&pushed);
    knit_status_t pst = push_failed();
    return st != KNIT_OK ? st : pst;
}

knit_status_t kn_dsm_push(void)
{
    if (!parts_done(&pushed))
        return KNIT_OK; /* the last one still travels: what was written since goes with a later one */
    knit_status_t st = push_failed();
    return st != KNIT_OK ? st : release(0);
}
