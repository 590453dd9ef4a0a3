/*
 * System calls into shared memory (docs/openmp.md).  The region's pages
 * are write-protected between a release and the next write to them, and
 * the kernel does not fault like a program does: read(2) into such a
 * page fails with EFAULT.  The program's calls that have the kernel (or
 * the C library, with read(2) underneath) write into a buffer first touch
 * every page of the buffer that is the region's, so that each is
 * writable (a page another node wrote is fetched first, under
 * invalidate); then the call proceeds as it would.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "omp/komp.h"

static void touch(void *buf, size_t n)
{
    if (!komp.multi || !n || !komp_in_region(buf))
        return;
    uintptr_t p = (uintptr_t)buf & ~(uintptr_t)4095, end = (uintptr_t)buf + n;
    for (; p < end; p += 4096) {
        volatile char *c = (volatile char *)(p < (uintptr_t)buf ? (uintptr_t)buf : p);
        *c = *c;
    }
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t read(int fd, void *buf, size_t n)
{
    static __typeof__(&read) next;
    if (!next)
        next = NEXT(read);
    touch(buf, n);
    return next(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    static __typeof__(&pread) next;
    if (!next)
        next = NEXT(pread);
    touch(buf, n);
    return next(fd, buf, n, off);
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    static __typeof__(&readv) next;
    if (!next)
        next = NEXT(readv);
    for (int i = 0; i < cnt; i++)
        touch(iov[i].iov_base, iov[i].iov_len);
    return next(fd, iov, cnt);
}

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    static __typeof__(&recv) next;
    if (!next)
        next = NEXT(recv);
    touch(buf, n);
    return next(fd, buf, n, flags);
}

size_t fread(void *buf, size_t size, size_t cnt, FILE *f)
{
    static __typeof__(&fread) next;
    if (!next)
        next = NEXT(fread);
    touch(buf, size * cnt);
    return next(buf, size, cnt, f);
}
