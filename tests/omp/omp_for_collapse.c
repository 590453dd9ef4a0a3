/* for collapse(2) (static, dynamic,4 and guided) over 37 x 23 with
 * uneven work, collapse(3) over 5 x 7 x 11, collapse(2) with steps -2 and
 * +3: every (i, j) exactly once, sums right. */
#include "omp_test.h"

#define NI 37
#define NJ 23
static int count[NI][NJ];
static int count3[5][7][11];

static long check2(const char *what)
{
    long e = 0;
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < NJ; j++) {
            CHECK(count[i][j] == 1, "%s: (%d, %d) ran %d times", what, i, j, count[i][j]);
            count[i][j] = 0;
            e += work_value(i * NJ + j) + i * 100 + j;
        }
    return e;
}

int main(void)
{
    long s = 0, e;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : s)
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < NJ; j++) {
            count[i][j]++;
            s += work(i * NJ + j) + i * 100 + j;
        }
    e = check2("collapse(2) static");
    CHECK(s == e, "collapse(2) static: sum %ld, expected %ld", s, e);
    printf("collapse(2) static, %d x %d: each once, sum %ld\n", NI, NJ, s);

    s = 0;
#pragma omp parallel for collapse(2) schedule(dynamic, 4) reduction(+ : s)
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < NJ; j++) {
            count[i][j]++;
            s += work(i * NJ + j) + i * 100 + j;
        }
    e = check2("collapse(2) dynamic,4");
    CHECK(s == e, "collapse(2) dynamic,4: sum %ld, expected %ld", s, e);
    printf("collapse(2) dynamic,4: each once, sum %ld\n", s);

    s = 0;
#pragma omp parallel
#pragma omp for collapse(2) schedule(guided) reduction(+ : s)
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < NJ; j++) {
            count[i][j]++;
            s += work(i * NJ + j) + i * 100 + j;
        }
    e = check2("collapse(2) guided");
    CHECK(s == e, "collapse(2) guided: sum %ld, expected %ld", s, e);
    printf("collapse(2) guided: each once, sum %ld\n", s);

    s = 0;
#pragma omp parallel for collapse(3) schedule(dynamic, 3) reduction(+ : s)
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++)
            for (int k = 0; k < 11; k++) {
                count3[i][j][k]++;
                s += i * 10000 + j * 100 + k;
            }
    e = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++)
            for (int k = 0; k < 11; k++) {
                CHECK(count3[i][j][k] == 1, "collapse(3): (%d, %d, %d) ran %d times", i, j, k, count3[i][j][k]);
                e += i * 10000 + j * 100 + k;
            }
    CHECK(s == e, "collapse(3): sum %ld, expected %ld", s, e);
    printf("collapse(3) dynamic,3, 5 x 7 x 11: each once, sum %ld\n", s);

    s = 0;
#pragma omp parallel for collapse(2) reduction(+ : s)
    for (int i = 36; i > 0; i -= 2)
        for (int j = -10; j < 12; j += 3) {
            count[i][j + 10]++;
            s += i * 1000 + j;
        }
    e = 0;
    for (int i = 0; i < NI; i++)
        for (int j = -10; j < 13; j++) {
            int in = i > 0 && i <= 36 && i % 2 == 0 && (j + 10) % 3 == 0 && j < 12;
            CHECK(count[i][j + 10] == in, "collapse(2) steps -2, 3: (%d, %d) ran %d times", i, j, count[i][j + 10]);
            if (in)
                e += i * 1000 + j;
        }
    CHECK(s == e, "collapse(2) steps -2, 3: sum %ld, expected %ld", s, e);
    printf("collapse(2), i from 36 down by 2, j from -10 up by 3: sum %ld\n", s);
    return OK();
}
