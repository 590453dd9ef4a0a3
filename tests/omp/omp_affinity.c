/* The team's threads may run on as many cpus, together, as the team has
 * threads (up to the machine's): a launcher that binds each rank to a
 * core must not leave an OpenMP process's threads sharing it.  Prints the
 * same under libgomp, unbound, and komp under knitrun. */
#define _GNU_SOURCE
#include <sched.h>
#include <unistd.h>

#include "omp_test.h"

int main(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned long cpus = 0; /* the union of the threads' cpus (the first 64) */
    int nt = 1;
#pragma omp parallel
    {
        cpu_set_t s;
        unsigned long mine = 0;
        if (sched_getaffinity(0, sizeof(s), &s) == 0)
            for (int c = 0; c < 64; c++)
                if (CPU_ISSET(c, &s))
                    mine |= 1ul << c;
#pragma omp atomic
        cpus |= mine;
#pragma omp master
        nt = omp_get_num_threads();
    }
    long want = nt < online ? nt : online;
    want = want < 64 ? want : 64;
    CHECK(__builtin_popcountl(cpus) >= want, "a team of %d threads may run on %d cpus", nt, __builtin_popcountl(cpus));
    printf("the team may run on as many cpus as it has threads\n");
    return OK();
}
