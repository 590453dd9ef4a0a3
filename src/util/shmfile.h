/*
 * POSIX shared-memory files (/dev/shm) with their pages reserved when they
 * are made: a /dev/shm without room fails there, with errno set, instead
 * of killing whoever first touches a page later with SIGBUS.
 *
 * The node budget: the files a job makes on a node after its start
 * (collectives' segments, one per communicator) are charged against what
 * KNIT_SHM_MAX leaves them; the shared-memory transport keeps the count in
 * its node segment and hands it here (kn_shm_budget_attach).
 */
#ifndef KN_UTIL_SHMFILE_H
#define KN_UTIL_SHMFILE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A new file (O_EXCL) of size bytes, its first reserve bytes allocated
 * (the rest stays a hole until kn_shm_file_reserve); flags are added to
 * O_RDWR | O_CREAT | O_EXCL (O_CLOEXEC, say).  Returns the descriptor, or
 * -1 with errno set and nothing left behind. */
int kn_shm_file_create(const char *name, size_t size, size_t reserve, int flags);

/* Allocate the pages of [off, off + len) of such a file: 0, or -1 with
 * errno set (ENOSPC: /dev/shm is full). */
int kn_shm_file_reserve(int fd, size_t off, size_t len);

/* The node budget: *used counts bytes charged by the node's processes,
 * limit is what they may take together.  Until a process attaches one,
 * charges always succeed. */
void kn_shm_budget_attach(_Atomic uint64_t *used, uint64_t limit);
void kn_shm_budget_detach(void);
/* Charge bytes: 0, or -1 (errno ENOSPC) when the budget has no room. */
int kn_shm_budget_take(uint64_t bytes);
void kn_shm_budget_give(uint64_t bytes);

#endif
