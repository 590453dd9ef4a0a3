/*
 * The shared heap: a rank's large allocations live in one memfd that its
 * node's peers can map, so that a copy between two ranks is one memcpy
 * instead of the kernel's cross-memory attach (which pins and copies page
 * by page at about 2/3 of memcpy's speed: 1 MiB 20 vs 31 GB/s here, 64 KiB
 * 25 vs 54).  XPMEM does this with a kernel module; here the rank's
 * allocator does it with what every Linux since 5.6 has (memfd_create,
 * pidfd_getfd).
 *
 * heap.c replaces malloc, calloc, realloc, free and the aligned forms
 * (glibc supports this): blocks of KNIT_HEAP_MIN bytes and more come from
 * the memfd, mapped once over a reserved range of KNIT_HEAP_SIZE, at the
 * same offset in the file as in the range; everything else goes to glibc
 * (__libc_malloc & co).  Only processes knitrun started as ranks use it
 * (KNIT_RANK is set), and KNIT_HEAP=0 turns it off.  Freed blocks stay
 * populated up to KNIT_HEAP_CACHE bytes (as glibc's heap keeps them);
 * beyond, their pages go back (MADV_REMOVE, which also drops them from
 * every peer's mapping: a peer never sees stale pages).  A forked child
 * copies its blocks into private memory and allocates from glibc after.
 *
 * Not in sanitizer builds (ASan brings its own malloc).
 */
#ifndef KN_UTIL_HEAP_H
#define KN_UTIL_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* This process's heap for its peers: the range and the memfd's number.
 * Returns 0 (and *size 0) where there is none (off, not a rank, failed). */
int kn_heap_export(uint64_t *base, uint64_t *size, int *fd);

/* Statistics for knit-info and the tests. */
typedef struct kn_heap_stats {
    int on;             /* the heap is in use in this process */
    uint64_t size;      /* reserved range */
    uint64_t live;      /* bytes in live blocks (page-rounded) */
    uint64_t blocks;    /* live blocks */
    uint64_t cached;    /* freed bytes kept populated */
    uint64_t allocs;    /* blocks handed out so far */
    uint64_t fallbacks; /* large requests glibc served (range full) */
} kn_heap_stats_t;
void kn_heap_stats(kn_heap_stats_t *st);

/* n zeroed bytes from the heap whatever n (KNIT_HEAP_MIN does not
 * apply: one-sided windows want their memory where the node's peers copy
 * with memcpy), 64-byte aligned, a whole number of pages; free() frees
 * it.  NULL where the heap is off or full (the caller asks glibc). */
void *kn_heap_alloc_any(size_t n);

/* 1 where this build replaces malloc (not in sanitizer builds). */
int kn_heap_built(void);

/* 1 when p lies in this process's heap; holds: all of [p, p + len). */
int kn_heap_owns(const void *p);
int kn_heap_holds(const void *p, size_t len);

#endif
