/* Shared-memory files with reserved pages, and the node budget (shmfile.h). */
#include "util/shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

int kn_shm_file_create(const char *name, size_t size, size_t reserve, int flags)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | flags, 0600);
    if (fd < 0)
        return -1;
    if (reserve > size)
        reserve = size;
    int err = ftruncate(fd, (off_t)size) < 0 ? errno : reserve ? posix_fallocate(fd, 0, (off_t)reserve) : 0;
    if (err) {
        close(fd);
        shm_unlink(name);
        errno = err;
        return -1;
    }
    return fd;
}

int kn_shm_file_reserve(int fd, size_t off, size_t len)
{
    int err = posix_fallocate(fd, (off_t)off, (off_t)len);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

static _Atomic uint64_t *budget_used;
static uint64_t budget_limit;

void kn_shm_budget_attach(_Atomic uint64_t *used, uint64_t limit)
{
    budget_used = used;
    budget_limit = limit;
}

void kn_shm_budget_detach(void)
{
    budget_used = NULL;
}

int kn_shm_budget_take(uint64_t bytes)
{
    if (!budget_used)
        return 0;
    uint64_t cur = atomic_load_explicit(budget_used, memory_order_relaxed);
    do {
        if (bytes > budget_limit || cur > budget_limit - bytes) {
            errno = ENOSPC;
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(budget_used, &cur, cur + bytes, memory_order_relaxed,
                                                    memory_order_relaxed));
    return 0;
}

void kn_shm_budget_give(uint64_t bytes)
{
    if (budget_used)
        atomic_fetch_sub_explicit(budget_used, bytes, memory_order_relaxed);
}
