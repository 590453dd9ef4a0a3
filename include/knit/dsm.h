/*
 * knit: a distributed shared memory replicated on every node (docs/dsm.md).
 *
 * knit_dsm_init maps one region of `size` bytes at the same virtual
 * address in every rank of the job.  Each node keeps one replica (a
 * shared-memory file that the node's ranks and its agent map), so ranks
 * of a node see each other's writes at once, like processors on one
 * memory board.  Reads are always local.  Writes reach the other nodes at
 * release points: knit_dsm_flush, knit_dsm_unlock, knit_dsm_barrier.
 *
 * Consistency is release consistency (TreadMarks', OpenMP's): a program
 * that orders its conflicting accesses with the region's locks and
 * barriers reads what it would on one machine; two nodes writing
 * different bytes of one page both keep their bytes.
 *   knit_dsm_flush     this rank's writes so far are in every replica when
 *                      it returns (a release)
 *   knit_dsm_push      this rank's writes so far start out to every replica,
 *                      and it returns without waiting for them (the next
 *                      flush, unlock or barrier does); while one push
 *                      travels, another does nothing.  Not a release: it
 *                      orders nothing, it only lets others see writes
 *                      sooner (a progress view; under invalidate the
 *                      writes reach their pages' homes, and readers see
 *                      them at their next acquire).
 *   knit_dsm_unlock    flush, then the lock goes to its next holder
 *   knit_dsm_lock      the lock is the rank's; what the previous holders
 *                      wrote before they unlocked is visible (an acquire)
 *   knit_dsm_barrier   flush, barrier of every rank, acquire
 *
 * Protocols (KNIT_DSM_PROTOCOL), the same calls and guarantees:
 *   update      the write-update ring of the node agents: writes found by
 *               page protection (a twin, a diff at the release) go around
 *               the ring, every node applies them in one order; reads
 *               never fault.
 *   invalidate  home-based lazy release consistency (SCASH, ArgoDSM): a
 *               release sends the diffs to the pages' home nodes and
 *               notes which pages it wrote; an acquire invalidates the
 *               pages other nodes wrote since, and the next access to one
 *               fetches it from its home.
 * The region needs the node agents (knitrun without --no-offload):
 * knit_dsm_init fails with KNIT_ERR_NOT_SUPPORTED without.
 *
 * The region's pages are write-protected between a release and the
 * rank's next write to them (under invalidate, pages invalidated by an
 * acquire are not even readable until touched): hand region memory to
 * knit calls and to other processes only after touching it yourself
 * since the last release or acquire (writing it, for a buffer knit or a
 * peer writes), or go through a buffer of your own and copy.  Under
 * invalidate, one thread of a process touches the region at a time.
 */
#ifndef KNIT_DSM_H
#define KNIT_DSM_H

#include <stddef.h>
#include <stdint.h>

#include "knit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over the job: map the region (size 0: KNIT_DSM_SIZE; a
 * multiple of 4096), zeroed, at the same address in every rank.
 * KNIT_ERR_STATE: already mapped; KNIT_ERR_NOT_SUPPORTED: no agents;
 * KNIT_ERR_INVAL: a bad size or KNIT_DSM_* setting; KNIT_ERR_NOMEM: some
 * rank cannot map it there
 * (knit_dsm_last_error names the rank and what it has at that address). */
knit_status_t knit_dsm_init(knit_ctx_t *ctx, size_t size);
/* Collective: a barrier, then the region is gone. */
knit_status_t knit_dsm_finalize(knit_ctx_t *ctx);

void *knit_dsm_base(void);       /* NULL before knit_dsm_init */
size_t knit_dsm_size(void);

/* Memory of the region, for any rank and thread: 16-byte aligned (4096
 * from 4096 bytes up), not zeroed; NULL when there is none.  Any rank may
 * free what any rank allocated; knit_dsm_free(NULL) does nothing, and a
 * pointer that is not an allocation's start is refused (KNIT_ERR_INVAL). */
void *knit_dsm_alloc(size_t size);
knit_status_t knit_dsm_free(void *p);

knit_status_t knit_dsm_flush(void);
knit_status_t knit_dsm_push(void);
knit_status_t knit_dsm_barrier(void);
/* Named locks: any 64-bit id, no creation.  KNIT_ERR_STATE: this process
 * holds it already (lock) or does not hold it (unlock). */
knit_status_t knit_dsm_lock(uint64_t id);
knit_status_t knit_dsm_unlock(uint64_t id);

/* Text of this process's last DSM error. */
const char *knit_dsm_last_error(void);

/* What the rank's node did so far (the node's ranks and agent together). */
typedef struct knit_dsm_stats {
    uint64_t faults;      /* first writes to protected pages */
    uint64_t diffs;       /* pages compared with their twins */
    uint64_t runs;        /* changed byte ranges found */
    uint64_t released;    /* bytes in them */
    uint64_t releases;    /* releases that had something to send */
    uint64_t frames_out;  /* update frames sent by this node's agent */
    uint64_t bytes_out;
    uint64_t frames_in;   /* update frames of other nodes applied here */
    uint64_t bytes_in;
    uint64_t bad_crc;     /* frames that failed their check here */
    uint64_t fetches;     /* invalidate: pages fetched from their homes */
    uint64_t invalidated; /* invalidate: pages invalidated at acquires */
    uint64_t moved;       /* invalidate, node 0's: pages whose homes moved to their writers (KNIT_DSM_MIGRATE) */
} knit_dsm_stats_t;
knit_status_t knit_dsm_stats(knit_dsm_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif
