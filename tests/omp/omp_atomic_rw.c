/* atomic read and write: one thread writes (atomic write) a long and a
 * double, a barrier, every thread reads them (atomic read); a value
 * written by each thread in its own slot read by all after a barrier;
 * atomic write of the last iteration's value in a loop, read after. */
#include "omp_test.h"

#define MAXT 4096
static long slot[MAXT];

int main(void)
{
    long lv = 0;
    double dv = 0;
    int n = 0, last = -1;
#pragma omp parallel
    {
        int id = omp_get_thread_num(), nt = omp_get_num_threads();
        if (id == nt - 1) {
#pragma omp atomic write
            lv = 0x123456789abcL;
#pragma omp atomic write
            dv = -3.25;
        }
        if (id < MAXT) {
#pragma omp atomic write
            slot[id] = 1000L * id + 7;
        }
#pragma omp barrier
        long l;
        double d;
#pragma omp atomic read
        l = lv;
#pragma omp atomic read
        d = dv;
        FLAG(l == 0x123456789abcL && d == -3.25);
        for (int k = 0; k < nt && k < MAXT; k++) {
            long s;
#pragma omp atomic read
            s = slot[k];
            FLAG(s == 1000L * k + 7);
        }
#pragma omp master
        n = nt;
#pragma omp for schedule(static, 1)
        for (int i = 0; i < 500; i++) {
            if (i == 499) {
#pragma omp atomic write
                last = i;
            }
        }
        int lr;
#pragma omp atomic read
        lr = last;
        FLAG(lr == 499);
    }
    REPORT("atomic read/write");
    CHECK(lv == 0x123456789abcL && dv == -3.25 && last == 499, "after: %#lx %g %d", lv, dv, last);
    printf("atomic write by the last thread, barrier, atomic read by all: %#lx %g\n", lv, dv);
    CHECK(n >= 1, "no team");
    printf("each thread's slot written atomically, read by all after a barrier\n");
    printf("written in the last iteration, read after the loop: %d\n", last);
    return OK();
}
