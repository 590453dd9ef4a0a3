/* Shared-memory files with reserved pages (shmfile.h). */
#include "util/shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

int kn_shm_file_create(const char *name, size_t size, int flags)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | flags, 0600);
    if (fd < 0)
        return -1;
    int err = ftruncate(fd, (off_t)size) < 0 ? errno : posix_fallocate(fd, 0, (off_t)size);
    if (err) {
        close(fd);
        shm_unlink(name);
        errno = err;
        return -1;
    }
    return fd;
}
