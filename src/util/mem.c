#include "util/mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Executables, libraries, heap and stacks are mapped far above 1 MiB
 * (non-PIE x86-64 programs start at 4 MiB); the first MiB holds NULL plus
 * an offset, or a small integer taken for a pointer (0x1000), and costs an
 * exact check should a program really map a buffer there. */
uintptr_t kn_mem_min_addr = (uintptr_t)1 << 20;

void kn_mem_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "r");
    unsigned long v;
    if (f && fscanf(f, "%lu", &v) == 1 && v > kn_mem_min_addr)
        kn_mem_min_addr = (uintptr_t)v;
    if (f)
        fclose(f);
}

/* Access rights are per page: one byte of each page the range touches
 * tells about all of it.  Up to SAMPLES pages per writev/readv pair. */
#define SAMPLE_PAGE 4096u
#define SAMPLES 1024

int kn_mem_check(const void *buf, size_t len, int writable)
{
    uintptr_t at = (uintptr_t)buf, end = at + len;
    if (!len)
        return 1;
    if (end < at)
        return 0;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    struct iovec iov[SAMPLES];
    char sink[SAMPLES];
    int ok = 1;
    while (at < end) {
        int k = 0;
        for (; k < SAMPLES && at < end; k++) {
            iov[k].iov_base = (void *)at;
            iov[k].iov_len = 1;
            at = (at & ~(uintptr_t)(SAMPLE_PAGE - 1)) + SAMPLE_PAGE;
        }
        /* the kernel's copies stop at the first byte they cannot access:
         * a short count or EFAULT instead of a signal */
        ssize_t w = writev(p[1], iov, k);
        if (w != k) {
            ok = w >= 0 || errno == EFAULT ? 0 : -1;
            break;
        }
        /* a write check puts each byte back where it was read from */
        ssize_t r = writable ? readv(p[0], iov, k) : read(p[0], sink, (size_t)k);
        if (r != k) {
            ok = r >= 0 || errno == EFAULT ? 0 : -1;
            break;
        }
    }
    close(p[0]);
    close(p[1]);
    return ok;
}

void kn_mem_zero(void *p, size_t n)
{
    memset(p, 0, n);
}
