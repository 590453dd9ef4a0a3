/* A local peer's shared heap, mapped (peerheap.h). */
#include "shm/peerheap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/log.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* the file is the peer's heap: a memfd of the size it published */
static int is_heap(int fd, uint64_t size)
{
    struct stat st;
    char path[64], name[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, name, sizeof(name) - 1);
    if (n < 0 || fstat(fd, &st) < 0)
        return 0;
    name[n] = '\0';
    return (uint64_t)st.st_size == size && strncmp(name, "/memfd:knit-heap", 16) == 0;
}

int kn_peer_heap_map(kn_peer_heap_t *h, pid_t pid, int fd, uint64_t base, uint64_t size)
{
    h->state = -1;
    const char *why = NULL;
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int hfd = pfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
    int err = errno;
    if (pfd >= 0)
        close(pfd);
    if (hfd < 0) {
        why = pfd < 0 ? "pidfd_open" : "pidfd_getfd";
    } else if (!is_heap(hfd, size)) {
        why = "the file is not its heap";
        err = 0;
    } else {
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, hfd, 0);
        err = errno;
        if (m == MAP_FAILED) {
            why = "mmap";
        } else {
            h->map = m;
            h->base = base;
            h->size = size;
            h->state = 1;
        }
    }
    if (hfd >= 0)
        close(hfd);
    if (why)
        kn_debug("the heap of pid %d stays with cross-memory attach: %s%s%s", (int)pid, why, err ? ": " : "",
                 err ? strerror(err) : "");
    else
        kn_debug("pid %d's shared heap is mapped: copies to and from its blocks are memcpy", (int)pid);
    return h->state > 0;
}

void kn_peer_heap_unmap(kn_peer_heap_t *h)
{
    if (h->map)
        munmap(h->map, h->size);
    h->map = NULL;
    h->state = 0;
}
