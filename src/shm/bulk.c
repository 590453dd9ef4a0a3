/*
 * The shared-memory transport's rendezvous copies (shm_int.h): a block of
 * a local peer is read or written with one memcpy where both blocks are in
 * shared heaps (util/heap.h, peerheap.h), else by cross-memory attach
 * (process_vm_readv/writev); a large one is shared with the peer, which
 * copies chunks from the other end while it waits (cooperative copies,
 * docs/guide.md).
 */
#include "shm/shm_int.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "util/heap.h"
#include "util/log.h"
#include "util/mem.h"

/* Where the peer's block lies in our mapping of its shared heap, mapping
 * the heap on first use; NULL: cross-memory attach. */
static char *heap_at(shm_tl_t *s, unsigned li, uint64_t raddr, size_t len)
{
    const rank_area_t *a = &s->areas[li];
    return kn_peer_heap_reach(&s->heaps[li], peer_pid(s, li), a->heap_fd, a->heap_base, a->heap_size, raddr, len);
}

/* One full copy of a block of local peer li: a memcpy where both blocks
 * are in shared heaps (ours too: memory we can trust not to fault, where
 * the kernel's copy would report a bad buffer as EFAULT), else
 * cross-memory attach (the kernel may stop short). */
static knit_status_t cma_raw(shm_tl_t *s, unsigned li, void *local, size_t len, uint64_t raddr, int write)
{
    char *mapped = kn_heap_holds(local, len) ? heap_at(s, li, raddr, len) : NULL;
    if (mapped) {
        if (write)
            memcpy(mapped, local, len);
        else
            memcpy(local, mapped, len);
        return KNIT_OK;
    }
    pid_t pid = peer_pid(s, li);
    int peer = s->p.first_rank + (int)li;
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

void *kn_shm_map(kn_tl_t *tl, int peer, uint64_t raddr, size_t len)
{
    shm_tl_t *s = shm_of(tl);
    return len ? heap_at(s, local_index(s, peer), raddr, len) : NULL;
}

/* The pieces of v (n) less their first skip bytes, into out (which may be
 * v); returns how many are left. */
static int iov_drop(const struct iovec *v, int n, size_t skip, struct iovec *out)
{
    int k = 0;
    while (skip >= v[k].iov_len)
        skip -= v[k++].iov_len;
    memmove(out, v + k, (size_t)(n - k) * sizeof(*v));
    out[0].iov_base = (char *)out[0].iov_base + skip;
    out[0].iov_len -= skip;
    return n - k;
}

knit_status_t kn_shm_rwv(kn_tl_t *tl, int peer, int write, const struct iovec *local, int nl,
                        const struct iovec *remote, int nr)
{
    shm_tl_t *s = shm_of(tl);
    unsigned li = local_index(s, peer);
    if (!s->rma_ok[li])
        return KNIT_ERR_NOT_SUPPORTED;
    size_t total = 0;
    for (int i = 0; i < nl; i++)
        total += local[i].iov_len;
    /* every remote piece in the peer's shared heap: memcpy, no system call
     * (the local pieces are checked as a send's are: cheaply) */
    uint64_t lo = UINT64_MAX, hi = 0;
    int plausible = 1;
    for (int j = 0; j < nr; j++) {
        uint64_t a = (uint64_t)(uintptr_t)remote[j].iov_base;
        lo = KN_MIN(lo, a);
        hi = KN_MAX(hi, a + remote[j].iov_len);
    }
    for (int i = 0; i < nl && plausible; i++)
        plausible = !kn_mem_implausible(local[i].iov_base, local[i].iov_len);
    char *mapped = nr && total && plausible ? heap_at(s, li, lo, hi - lo) : NULL;
    if (mapped) {
        int i = 0, j = 0;
        size_t io = 0, jo = 0;
        while (i < nl && j < nr) {
            size_t n = KN_MIN(local[i].iov_len - io, remote[j].iov_len - jo);
            char *l = (char *)local[i].iov_base + io;
            char *r = mapped + ((uint64_t)(uintptr_t)remote[j].iov_base - lo) + jo;
            if (write)
                memcpy(r, l, n);
            else
                memcpy(l, r, n);
            if ((io += n) == local[i].iov_len)
                i++, io = 0;
            if ((jo += n) == remote[j].iov_len)
                j++, jo = 0;
        }
        return KNIT_OK;
    }
    pid_t pid = peer_pid(s, li);
    /* the kernel may stop short (a page not there): go on from where it did */
    struct iovec lbuf[KN_SHM_RWV_MAX], rbuf[KN_SHM_RWV_MAX];
    const struct iovec *l = local, *r = remote;
    size_t done = 0;
    while (done < total) {
        ssize_t n = write ? process_vm_writev(pid, l, (unsigned long)nl, r, (unsigned long)nr, 0)
                          : process_vm_readv(pid, l, (unsigned long)nl, r, (unsigned long)nr, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0 && errno == EFAULT)
                return KNIT_ERR_FAULT;
            if (n < 0 && errno == EINVAL)
                return KNIT_ERR_INVAL;
            kn_error("%s rank %d (pid %d), %zu bytes: %m", write ? "process_vm_writev to" : "process_vm_readv from",
                     peer, (int)pid, total - done);
            return n < 0 && errno == ESRCH ? KNIT_ERR_PEER : KNIT_ERR_IO;
        }
        done += (size_t)n;
        if (done == total)
            break;
        if (nl > KN_SHM_RWV_MAX || nr > KN_SHM_RWV_MAX)
            return KNIT_ERR_INVAL;
        /* drop what moved from the front of both sides */
        nl = iov_drop(l, nl, (size_t)n, lbuf);
        nr = iov_drop(r, nr, (size_t)n, rbuf);
        l = lbuf;
        r = rbuf;
    }
    return KNIT_OK;
}

/* Help the peers whose bits are in our help map: take chunks of their
 * published copies from the back.  Returns chunks copied. */
int kn_shm_coop_help(shm_tl_t *s)
{
    rank_area_t *me = &s->areas[s->me];
    if (kn_likely(!atomic_load_explicit(&me->help_pending, memory_order_relaxed)))
        return 0;
    int events = 0;
    for (unsigned w = 0; w < s->L.words; w++) {
        uint64_t bits = atomic_load_explicit(&s->help_map[w], memory_order_acquire);
        while (bits) {
            unsigned li = w * 64 + (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            if (li >= s->n || li == s->me || !s->rma_ok[li])
                continue;
            coop_t *c = &s->areas[li].coop;
            uint32_t gen = atomic_load_explicit(&c->active, memory_order_acquire);
            if (!gen || c->helper != s->me)
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
                knit_status_t st = cma_raw(s, li, (void *)(uintptr_t)(help_addr + off), n, init_addr + off, !write);
                if (st != KNIT_OK)
                    atomic_store_explicit(&c->error, st == KNIT_ERR_FAULT ? EFAULT : EIO, memory_order_relaxed);
                atomic_fetch_add_explicit(&c->helper_done, 1, memory_order_release);
                kn_shm_ring(s, li); /* the initiator may sleep on its last chunks */
                events++;
                cl = atomic_load_explicit(&c->claim, memory_order_acquire);
            }
        }
    }
    return events;
}

/* The end of our cooperative copy: the helper has done its part. */
static knit_status_t coop_finish(shm_tl_t *s, knit_status_t st)
{
    coop_t *c = &s->areas[s->me].coop;
    unsigned li = c->helper;
    atomic_store_explicit(&c->active, 0, memory_order_release);
    atomic_fetch_and_explicit(&map_of(s, s->L.help, li)[s->me / 64], ~(1ull << (s->me % 64)),
                              memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->areas[li].help_pending, 1, memory_order_acq_rel);
    s->coop_busy = 0;
    int err = atomic_load_explicit(&c->error, memory_order_relaxed);
    if (st == KNIT_OK && err == EFAULT) {
        st = KNIT_ERR_FAULT; /* a buffer, as in cma_raw */
    } else if (st == KNIT_OK && err) {
        kn_error("rank %d failed to copy its part of a block for this rank", s->p.first_rank + (int)li);
        st = KNIT_ERR_IO;
    }
    return st;
}

int kn_shm_coop_helper_done(shm_tl_t *s)
{
    return atomic_load_explicit(&s->areas[s->me].coop.helper_done, memory_order_acquire) == s->coop_theirs;
}

/* Complete our cooperative copy once its helper finished. */
int kn_shm_coop_reap(shm_tl_t *s)
{
    if (kn_likely(!s->coop_comp) || !kn_shm_coop_helper_done(s))
        return 0;
    kn_tl_comp_t *comp = s->coop_comp;
    s->coop_comp = NULL;
    comp->cb(comp, coop_finish(s, s->coop_st));
    return 1;
}

/* Copy with the peer's help when the block is large enough; comp NULL:
 * alone, complete on return (the caller's peers have copies of their own
 * to make: a collective reading from every rank at once). */
static knit_status_t cma_copy(shm_tl_t *s, int peer, void *local, size_t len, uint64_t raddr, int write,
                              kn_tl_comp_t *comp)
{
    unsigned li = (unsigned)local_index(s, peer);
    /* alone also when the peer is copying a block of its own: it would
     * not help (opposite streams) */
    if (!comp || !s->coop_chunk || len < 2 * s->coop_chunk || !s->rma_ok[li] || s->coop_busy ||
        atomic_load_explicit(&s->areas[li].coop.active, memory_order_relaxed))
        return cma_raw(s, li, local, len, raddr, write);
    coop_t *c = &s->areas[s->me].coop;
    uint32_t nchunks = (uint32_t)((len + s->coop_chunk - 1) / s->coop_chunk);
    if (nchunks >= (1u << 24))
        return cma_raw(s, li, local, len, raddr, write);
    uint16_t gen = ++s->coop_gen ? s->coop_gen : ++s->coop_gen; /* never 0 */
    s->coop_busy = 1;
    c->init_addr = (uint64_t)(uintptr_t)local;
    c->help_addr = raddr;
    c->len = len;
    c->chunk = s->coop_chunk;
    c->write = (uint32_t)write;
    c->helper = li;
    atomic_store_explicit(&c->helper_done, 0, memory_order_relaxed);
    atomic_store_explicit(&c->error, 0, memory_order_relaxed);
    atomic_store_explicit(&c->claim, COOP_PACK(gen, 0, nchunks), memory_order_relaxed);
    atomic_store_explicit(&c->active, gen, memory_order_release);
    atomic_fetch_or_explicit(&map_of(s, s->L.help, li)[s->me / 64], 1ull << (s->me % 64), memory_order_release);
    atomic_fetch_add_explicit(&s->areas[li].help_pending, 1, memory_order_acq_rel);
    kn_shm_ring(s, li); /* a sleeping peer wakes up and helps */

    /* Claim from the front: a chunk at a time while the helper helps;
     * after two chunks with none taken by the helper (busy with copies of
     * its own, or asleep), twice as many each time: fewer, larger copies
     * cost less per byte (1 MiB both ways between 2 ranks: 31 -> 38 GB/s). */
    knit_status_t st = KNIT_OK;
    uint32_t mine = 0, want = 1;
    uint64_t cl = atomic_load_explicit(&c->claim, memory_order_acquire);
    while (COOP_FRONT(cl) < COOP_BACK(cl)) {
        uint32_t idx = COOP_FRONT(cl), k = KN_MIN(want, COOP_BACK(cl) - idx);
        if (!atomic_compare_exchange_weak_explicit(&c->claim, &cl, COOP_PACK(gen, idx + k, COOP_BACK(cl)),
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        if (COOP_BACK(cl) == nchunks && mine + k >= 2)
            want = KN_MIN(want * 2, 64u);
        else if (COOP_BACK(cl) != nchunks)
            want = 1;
        uint64_t off = (uint64_t)idx * s->coop_chunk, n = KN_MIN((uint64_t)k * s->coop_chunk, len - off);
        knit_status_t r = cma_raw(s, li, (char *)local + off, n, raddr + off, write);
        if (r != KNIT_OK && st == KNIT_OK)
            st = r;
        mine += k;
        cl = atomic_load_explicit(&c->claim, memory_order_acquire);
    }
    /* every chunk is claimed: the helper's last ones complete later */
    s->coop_theirs = nchunks - mine;
    for (unsigned spins = 0; !kn_shm_coop_helper_done(s); spins++) {
        if (spins < 1000) { /* a running helper ends its chunk about when we do */
            kn_cpu_relax();
        } else { /* a descheduled one: progress completes the copy */
            s->coop_comp = comp;
            s->coop_st = st;
            return KNIT_INPROGRESS;
        }
    }
    return coop_finish(s, st);
}

knit_status_t kn_shm_get(kn_tl_t *tl, int peer, void *local, size_t len, uint64_t raddr, uint64_t rkey,
                             kn_tl_comp_t *comp)
{
    (void)rkey;
    return cma_copy(shm_of(tl), peer, local, len, raddr, 0, comp);
}

knit_status_t kn_shm_put(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr,
                             uint64_t rkey, kn_tl_comp_t *comp)
{
    (void)rkey;
    return cma_copy(shm_of(tl), peer, (void *)local, len, raddr, 1, comp);
}
