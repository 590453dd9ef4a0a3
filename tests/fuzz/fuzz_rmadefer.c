/*
 * knit_rma_barrier's messages of held puts (src/rma/defer.c,
 * kn_rma_defer_apply): a message from another rank may say anything.  The
 * target's window is 64 KiB at a fixed address (KN_FZ_DEFER_BASE, so that
 * the seeds' addresses mean something) between two guard areas of 64 KiB.
 * The input is the message.
 * Properties: no byte outside the window changes; a message refused
 * (KNIT_ERR_PEER) changes nothing at all; the answer is OK or PEER.
 */
#include <sys/mman.h>

#include "fuzz.h"
#include "rma/rma.h"

#define WINB (64u << 10)

KN_FUZZ_TARGET(rmadefer)
{
    static uint8_t *area, *snap;
    if (!area) {
        area = mmap((void *)(uintptr_t)(KN_FZ_DEFER_BASE - WINB), 3 * WINB, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (area == MAP_FAILED) /* (taken: the seeds then reach only the checks) */
            area = mmap(NULL, 3 * WINB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        KN_FUZZ_CHECK(area != MAP_FAILED);
        snap = malloc(3 * WINB);
        KN_FUZZ_CHECK(snap);
    }
    memset(area, 0xa5, 3 * WINB);
    memcpy(snap, area, 3 * WINB);
    kn_rma_peer_t me = {.base = (uint64_t)(uintptr_t)(area + WINB), .size = WINB};
    knit_status_t st = kn_rma_defer_apply(&me, data, size, 7);
    KN_FUZZ_CHECK(st == KNIT_OK || st == KNIT_ERR_PEER);
    KN_FUZZ_CHECK(!memcmp(area, snap, WINB) && !memcmp(area + 2 * WINB, snap + 2 * WINB, WINB));
    if (st != KNIT_OK)
        KN_FUZZ_CHECK(!memcmp(area + WINB, snap + WINB, WINB));
    return 0;
}
