/*
 * POSIX shared-memory files (/dev/shm) with their pages reserved at
 * creation: a /dev/shm without room fails there, with errno set, instead of
 * killing whoever first touches a page later with SIGBUS.
 */
#ifndef KN_UTIL_SHMFILE_H
#define KN_UTIL_SHMFILE_H

#include <stddef.h>

/* A new file (O_EXCL) of size bytes, every page allocated; flags are added
 * to O_RDWR | O_CREAT | O_EXCL (O_CLOEXEC, say).  Returns the descriptor,
 * or -1 with errno set and nothing left behind. */
int kn_shm_file_create(const char *name, size_t size, int flags);

#endif
