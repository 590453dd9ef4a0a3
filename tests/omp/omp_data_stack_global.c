/* data: a local array of main (on the master's stack), an initialized
 * global (.data), a zeroed global (.bss) and a static local, written and
 * read in parallel; values the master wrote before the region seen by
 * every thread; a struct in main's frame updated under critical. */
#include "omp_test.h"

#define N 20000
int gdata[N] = {5, 6, 7};
static long gbss[N];
const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};

int main(void)
{
    int loc[N];
    static short sloc[N];
    struct {
        long hits;
        double acc;
    } frame = {0, 0};
    for (int i = 0; i < N; i++)
        loc[i] = i % 1000;
    gdata[N - 1] = 77;
#pragma omp parallel
    {
        FLAG(gdata[0] == 5 && gdata[1] == 6 && gdata[2] == 7 && gdata[N - 1] == 77);
#pragma omp for schedule(dynamic, 64)
        for (int i = 0; i < N; i++) {
            gbss[i] = (long)loc[i] * 3 + table[i % 8];
            if (i >= 3 && i < N - 1)
                gdata[i] = i;
            sloc[i] = (short)(i % 300);
            loc[i] += 1;
        }
#pragma omp for schedule(static, 5)
        for (int i = 0; i < N; i += 40) {
#pragma omp critical
            {
                frame.hits++;
                frame.acc += 0.5;
            }
        }
    }
    REPORT("data");
    long s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    for (int i = 0; i < N; i++) {
        CHECK(gbss[i] == (long)(i % 1000) * 3 + table[i % 8], ".bss[%d] = %ld", i, gbss[i]);
        CHECK(loc[i] == i % 1000 + 1, "stack[%d] = %d", i, loc[i]);
        s1 += gbss[i];
        s2 += gdata[i];
        s3 += sloc[i];
        s4 += loc[i];
    }
    CHECK(gdata[0] == 5 && gdata[2] == 7 && gdata[3] == 3 && gdata[N - 1] == 77, ".data: %d %d %d %d", gdata[0], gdata[2], gdata[3], gdata[N - 1]);
    CHECK(frame.hits == N / 40 && frame.acc == N / 80, "frame: %ld %g", frame.hits, frame.acc);
    printf(".bss sum %ld, .data sum %ld, static local sum %ld, main's stack sum %ld\n", s1, s2, s3, s4);
    printf("a struct in main's frame under critical: %ld hits, %g\n", frame.hits, frame.acc);
    return OK();
}
