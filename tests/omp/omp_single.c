/* single: runs once, its implied barrier publishes what it wrote; single
 * nowait (once, seen after a barrier); copyprivate of an int, a double and
 * a struct with an array (every thread gets the single's values); 50
 * singles in a loop each run once. */
#include "omp_test.h"

#define MAXT 4096
struct blob {
    int a[40];
    double d;
};

int main(void)
{
    int once = 0, once_nowait = 0, loop_once = 0, value = 0;
    static int got[MAXT];
#pragma omp parallel
    {
        int id = omp_get_thread_num();
#pragma omp single
        {
            once++;
            value = 42 + (int)work(11) * 0;
        }
        FLAG(value == 42);
#pragma omp single nowait
        {
#pragma omp atomic
            once_nowait++;
        }
#pragma omp barrier
        FLAG(once_nowait == 1);

        int cp;
        double cd;
        struct blob bl;
#pragma omp single copyprivate(cp, cd, bl)
        {
            cp = 1234;
            cd = 2.5;
            for (int k = 0; k < 40; k++)
                bl.a[k] = k * k;
            bl.d = -0.75;
        }
        int good = cp == 1234 && cd == 2.5 && bl.d == -0.75;
        for (int k = 0; k < 40; k++)
            good = good && bl.a[k] == k * k;
        if (id < MAXT)
            got[id] = good;

        for (int r = 0; r < 50; r++) {
#pragma omp single
            loop_once++;
        }
    }
    REPORT("single");
    int n = 0;
    while (n < MAXT && got[n])
        n++;
    CHECK(once == 1 && once_nowait == 1, "single ran %d times, single nowait %d times", once, once_nowait);
    CHECK(loop_once == 50, "50 singles ran %d times in all", loop_once);
    printf("single: ran %d time, its value seen by all after its barrier\n", once);
    printf("single nowait: ran %d time\n", once_nowait);
    printf("50 singles in a loop: %d runs\n", loop_once);
    int team = 0;
#pragma omp parallel
#pragma omp master
    team = omp_get_num_threads();
    CHECK(n >= team, "copyprivate: thread %d got wrong values (team of %d)", n, team);
    printf("copyprivate of an int, a double, a struct of 40 ints: every thread got them\n");
    return OK();
}
