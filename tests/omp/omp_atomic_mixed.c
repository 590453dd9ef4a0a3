/* Relaxed atomics on words that share pages with plain writes (komp
 * releases only the atomic's pages at a relaxed atomic's unlock, and the
 * rest at the barrier): every thread fills its share of a global array
 * whose pages also hold counters, bumping a counter on the page it writes
 * after each store, and rewrites its share after the atomics; a second
 * region adds into every element (plain) and into the counters (atomic).
 * After each barrier every element and every counter is what the serial
 * program gives. */
#include "omp_test.h"

#define PAGE_LONGS 512         /* a 4 KiB page of longs */
#define NPAGES 8
#define N (PAGE_LONGS * NPAGES)

/* page p's counter is its element 0 (never written plainly) */
static long a[N] __attribute__((aligned(4096)));

static int counter(long i)
{
    return i % PAGE_LONGS == 0;
}

int main(void)
{
    long bumps = 0;
#pragma omp parallel
    {
#pragma omp for schedule(static, 100) reduction(+ : bumps)
        for (long i = 0; i < N; i++) {
            if (counter(i))
                continue;
            a[i] = i * 3;
#pragma omp atomic
            a[i / PAGE_LONGS * PAGE_LONGS] += 1;
            a[i] += 1; /* after the atomic: goes out with the barrier */
            bumps++;
        }
#pragma omp for schedule(dynamic, 37)
        for (long i = 0; i < N; i++) {
            if (counter(i))
                continue;
            a[i] += 5;
#pragma omp atomic
            a[i / PAGE_LONGS * PAGE_LONGS] += 2;
        }
    }
    long bad = 0, first = -1;
    for (long i = 0; i < N; i++) {
        long want = counter(i) ? 3L * (PAGE_LONGS - 1) : i * 3 + 6;
        if (a[i] != want) {
            bad++;
            if (first < 0)
                first = i;
        }
    }
    CHECK(bad == 0, "%ld elements wrong, the first a[%ld] = %ld", bad, first, first >= 0 ? a[first] : 0);
    CHECK(bumps == (long)NPAGES * (PAGE_LONGS - 1), "bumps %ld", bumps);
    printf("%d pages of plain writes and relaxed atomic counters: every element right\n", NPAGES);
    return OK();
}
