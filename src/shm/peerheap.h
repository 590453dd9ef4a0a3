/*
 * A local peer's shared heap (util/heap.h), mapped here: a copy from or to
 * a block of the peer's large allocations is a memcpy through this mapping
 * instead of cross-memory attach.  The peer publishes its range and its
 * memfd's number; the first copy that touches the range takes the file
 * (pidfd_getfd: the same ptrace permission as process_vm_readv) and maps
 * it whole.  A failure leaves the peer to cross-memory attach for good.
 */
#ifndef KN_SHM_PEERHEAP_H
#define KN_SHM_PEERHEAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct kn_peer_heap {
    char *map;     /* our mapping of the peer's heap; NULL: none */
    uint64_t base; /* the range in the peer's address space */
    uint64_t size;
    int state;     /* 0 not tried yet, 1 mapped, -1 failed (cross-memory attach) */
} kn_peer_heap_t;

/* Map the peer's heap (pid, its memfd's number, its range); 1 on success. */
int kn_peer_heap_map(kn_peer_heap_t *h, pid_t pid, int fd, uint64_t base, uint64_t size);
void kn_peer_heap_unmap(kn_peer_heap_t *h);

/* Where [raddr, raddr + len) of the peer lies in our mapping; NULL: not
 * (wholly) in its heap, or not mapped. */
static inline char *kn_peer_heap_at(const kn_peer_heap_t *h, uint64_t raddr, size_t len)
{
    uint64_t off = raddr - h->base;
    return h->map && off < h->size && len <= h->size - off ? h->map + off : NULL;
}

/* Where [addr, addr + len) of the peer lies in our mapping, mapping the
 * heap (the peer's pid, memfd number and range) when its range is first
 * touched; NULL: not (wholly) in it, or it cannot be mapped (then
 * cross-memory attach, for good). */
static inline char *kn_peer_heap_reach(kn_peer_heap_t *h, pid_t pid, int fd, uint64_t base, uint64_t size,
                                       uint64_t addr, size_t len)
{
    if (h->state > 0)
        return kn_peer_heap_at(h, addr, len);
    if (h->state < 0 || !size || addr - base >= size)
        return NULL;
    kn_peer_heap_map(h, pid, fd, base, size);
    return kn_peer_heap_at(h, addr, len);
}

#endif
