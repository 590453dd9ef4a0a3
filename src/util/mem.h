/*
 * Is a buffer accessible?  For reports of a bad buffer that name the
 * process it belongs to, without a SIGSEGV handler.
 *
 *   kn_mem_implausible  cheap (compares only): the range is very unlikely
 *                       to be user memory (in the first MiB, where nothing
 *                       is mapped unless a program asks for that address,
 *                       and the kernel refuses anything below
 *                       vm.mmap_min_addr; wrapping around; beyond the user
 *                       half of the address space); only such a range is
 *                       worth the exact check on a hot path
 *   kn_mem_check        exact: passes one byte of every page of the
 *                       range through a pipe, so that the kernel's copy
 *                       finds what a copy here would fault on (EFAULT
 *                       instead of a signal); a write check puts each byte
 *                       back.  Two system calls per 4 MiB (1024 pages),
 *                       no bulk copy: cheap where a registration is made
 *                       anyway, and on error paths.
 */
#ifndef KN_UTIL_MEM_H
#define KN_UTIL_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Addresses below are implausible: 1 MiB, or vm.mmap_min_addr where
 * that is higher (kn_mem_init reads it). */
extern uintptr_t kn_mem_min_addr;

void kn_mem_init(void); /* idempotent */

static inline int kn_mem_implausible(const void *buf, size_t len)
{
    uintptr_t a = (uintptr_t)buf;
    /* 2^56: above any user address on x86-64 (5-level paging included) and arm64 */
    return len && (a < kn_mem_min_addr || a + len < a || a + len > ((uintptr_t)1 << 56));
}

/* Clear n bytes through glibc's memset (vector stores for small sizes).
 * A memset of a fixed size that GCC inlines becomes `rep stosq` from about
 * 128 bytes on, whose start-up stalls the stores after it: on this
 * machine's virtual cpus, clearing a request that way took half of an MPI
 * isend (2 ranks, 8-byte message rate 7.8 Mmsg/s).  Not inlined, on
 * purpose: its size is not a constant where the call is made. */
void kn_mem_zero(void *p, size_t n);

/* 1: [buf, buf + len) can be read (writable: and written), 0: it
 * cannot, -1: could not tell (no pipe). */
int kn_mem_check(const void *buf, size_t len, int writable);

#endif
