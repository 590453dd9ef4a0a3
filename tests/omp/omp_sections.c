/* sections: nine sections (more than threads, for small teams) and two
 * (fewer than threads, for big ones), each run exactly once, with uneven
 * work; sections nowait then a barrier; lastprivate and firstprivate;
 * a combined parallel sections; sections repeated in a loop. */
#include "omp_test.h"

static int ran[16];
static long out[16];

int main(void)
{
    int lp = -1, fp = 7;
#pragma omp parallel
    {
#pragma omp sections firstprivate(fp) lastprivate(lp)
        {
#pragma omp section
            { ran[0]++; out[0] = work(1) + fp; lp = 100; }
#pragma omp section
            { ran[1]++; out[1] = work(16) + fp; lp = 101; }
#pragma omp section
            { ran[2]++; out[2] = work(5) + fp; lp = 102; }
#pragma omp section
            { ran[3]++; out[3] = work(9) + fp; lp = 103; }
#pragma omp section
            { ran[4]++; out[4] = work(3) + fp; lp = 104; }
#pragma omp section
            { ran[5]++; out[5] = work(12) + fp; lp = 105; }
#pragma omp section
            { ran[6]++; out[6] = work(0) + fp; lp = 106; }
#pragma omp section
            { ran[7]++; out[7] = work(15) + fp; lp = 107; }
#pragma omp section
            { ran[8]++; out[8] = work(2) + fp; lp = 108; }
        }
#pragma omp sections nowait
        {
#pragma omp section
            { ran[9]++; out[9] = work(14); }
#pragma omp section
            { ran[10]++; out[10] = work(6); }
        }
#pragma omp barrier
#pragma omp master
        {
            for (int k = 0; k < 11; k++)
                FLAG(ran[k] == 1);
        }
    }
    REPORT("sections");
    const int arg[11] = {1, 16, 5, 9, 3, 12, 0, 15, 2, 14, 6};
    printf("9 sections, then 2 nowait: each ran once:");
    for (int k = 0; k < 11; k++) {
        CHECK(ran[k] == 1, "section %d ran %d times", k, ran[k]);
        CHECK(out[k] == work_value(arg[k]) + (k < 9 ? 7 : 0), "section %d computed %ld", k, out[k]);
        printf(" %ld", out[k]);
    }
    printf("\n");
    CHECK(lp == 108, "lastprivate: %d, expected 108 (the last section's)", lp);
    printf("lastprivate: %d\n", lp);

    int a = 0, b = 0, c = 0;
#pragma omp parallel sections
    {
#pragma omp section
        a = 1 + (int)work(10) * 0;
#pragma omp section
        b = 2;
#pragma omp section
        c = 3;
    }
    CHECK(a == 1 && b == 2 && c == 3, "parallel sections: %d %d %d", a, b, c);
    printf("parallel sections: %d %d %d\n", a, b, c);

    int total[3] = {0, 0, 0};
#pragma omp parallel
    for (int r = 0; r < 20; r++) {
#pragma omp sections
        {
#pragma omp section
            total[0] += r;
#pragma omp section
            total[1] += 2 * r;
#pragma omp section
            total[2] += 3 * r;
        }
    }
    CHECK(total[0] == 190 && total[1] == 380 && total[2] == 570, "sections in a loop: %d %d %d", total[0], total[1], total[2]);
    printf("3 sections, 20 times: %d %d %d\n", total[0], total[1], total[2]);
    return OK();
}
