/* for ordered: the ordered blocks run in iteration order whatever the
 * schedule (dynamic,3, static, static,1, guided, a negative step), with
 * uneven work outside them; each ordered block appends its iteration to a
 * shared buffer which the master prints afterwards. */
#include "omp_test.h"
#include <string.h>

#define N 60
static int buf[N], pos;

static void print_check(const char *what, int first, int step)
{
    CHECK(pos == N, "%s: %d ordered blocks ran, not %d", what, pos, N);
    printf("%s:", what);
    for (int k = 0; k < N; k++) {
        CHECK(buf[k] == first + k * step, "%s: block %d was iteration %d, not %d", what, k, buf[k], first + k * step);
        printf(" %d", buf[k]);
    }
    printf("\n");
    pos = 0;
    memset(buf, 0xff, sizeof buf);
}

int main(void)
{
    long w = 0;
#pragma omp parallel for ordered schedule(dynamic, 3) reduction(+ : w)
    for (int i = 0; i < N; i++) {
        w += work(i * 5);
#pragma omp ordered
        buf[pos++] = i;
    }
    print_check("ordered dynamic,3", 0, 1);
#pragma omp parallel for ordered schedule(static) reduction(+ : w)
    for (int i = 0; i < N; i++) {
        w += work(i * 3);
#pragma omp ordered
        buf[pos++] = i;
    }
    print_check("ordered static", 0, 1);
#pragma omp parallel
    {
#pragma omp for ordered schedule(static, 1) reduction(+ : w)
        for (int i = 0; i < N; i++) {
            w += work(i * 7);
#pragma omp ordered
            {
                buf[pos] = i;
                pos++;
            }
        }
#pragma omp master
        print_check("ordered static,1", 0, 1);
#pragma omp barrier
#pragma omp for ordered schedule(guided) reduction(+ : w)
        for (int i = 2 * N - 1; i > 0; i -= 2) {
            w += work(i);
#pragma omp ordered
            buf[pos++] = i;
        }
    }
    print_check("ordered guided, down by 2", 2 * N - 1, -2);
    long e = 0;
    for (int i = 0; i < N; i++)
        e += work_value(i * 5) + work_value(i * 3) + work_value(i * 7) + work_value(2 * N - 1 - 2 * i);
    CHECK(w == e, "work sum %ld, expected %ld", w, e);
    return OK();
}
