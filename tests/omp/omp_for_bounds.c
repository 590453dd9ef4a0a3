/* for with unusual bounds: long long from 3e9 (static and dynamic), long
 * long down by 7 from 5e9 (guided), int down by 3 across zero (static,2
 * and dynamic,5), unsigned long long above 2^63 up by 3 (dynamic, the
 * _ull entry points) and down by 5 (static), loops that run no
 * iteration, a bound computed at run time. */
#include "omp_test.h"

static int count[4000];

static void check_hits(const char *what, long n)
{
    for (long k = 0; k < 4000; k++) {
        CHECK(count[k] == (k < n), "%s: iteration %ld ran %d times (%ld iterations)", what, k, count[k], n);
        count[k] = 0;
    }
}

int main(void)
{
    long long s = 0, e = 0;
    const long long B = 3000000000LL;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (long long i = B; i < B + 1000; i++) {
        count[i - B]++;
        s += i - B + work(i);
    }
    for (long long i = B; i < B + 1000; i++)
        e += i - B + work_value(i);
    check_hits("long long from 3e9, static", 1000);
    CHECK(s == e, "long long static: sum %lld, expected %lld", s, e);
    printf("long long [3e9, 3e9+1000) static: sum %lld\n", s);

    s = 0;
#pragma omp parallel for schedule(dynamic, 9) reduction(+ : s)
    for (long long i = B + 999; i >= B; i--) {
        count[i - B]++;
        s += i - B + work(i);
    }
    check_hits("long long from 3e9 down, dynamic,9", 1000);
    CHECK(s == e, "long long dynamic: sum %lld, expected %lld", s, e);
    printf("long long from 3e9+999 down to 3e9, dynamic,9: sum %lld\n", s);

    const long long C = 5000000000LL;
    s = e = 0;
#pragma omp parallel for schedule(guided, 3) reduction(+ : s)
    for (long long i = C; i > C - 7000; i -= 7) {
        count[(C - i) / 7]++;
        s += (C - i) + work(i);
    }
    for (long long i = C; i > C - 7000; i -= 7)
        e += (C - i) + work_value(i);
    check_hits("long long from 5e9 down by 7, guided,3", 1000);
    CHECK(s == e, "long long guided: sum %lld, expected %lld", s, e);
    printf("long long from 5e9 down by 7, 1000 iterations, guided,3: sum %lld\n", s);

    long si = 0, ei = 0;
#pragma omp parallel
    {
#pragma omp for schedule(static, 2) reduction(+ : si)
        for (int i = 1000; i >= -1000; i -= 3) {
            count[(1000 - i) / 3]++;
            si += i * 3 + work(i);
        }
#pragma omp master
        {
            for (int i = 1000; i >= -1000; i -= 3)
                ei += i * 3 + work_value(i);
            check_hits("int from 1000 to -1000 by -3, static,2", 667);
        }
#pragma omp barrier
#pragma omp for schedule(dynamic, 5) reduction(+ : si)
        for (int i = 1000; i >= -1000; i -= 3) {
            count[(1000 - i) / 3]++;
            si += i * 3 + work(i);
        }
    }
    check_hits("int from 1000 to -1000 by -3, dynamic,5", 667);
    CHECK(si == 2 * ei, "int down by 3: sum %ld, expected %ld", si, 2 * ei);
    printf("int from 1000 down to -1000 by 3, static,2 then dynamic,5: sum %ld\n", si);

    unsigned long long us = 0, ue = 0;
    const unsigned long long U = 0x8000000000000000ULL - 1500;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : us)
    for (unsigned long long u = U; u < U + 3000; u += 3) {
        count[(u - U) / 3]++;
        us += (u - U) * 2 + (unsigned long long)work((long)(u % 1000));
    }
    for (unsigned long long u = U; u < U + 3000; u += 3)
        ue += (u - U) * 2 + (unsigned long long)work_value((long)(u % 1000));
    check_hits("unsigned long long across 2^63 by 3, dynamic,4", 1000);
    CHECK(us == ue, "unsigned long long dynamic: sum %llu, expected %llu", us, ue);
    printf("unsigned long long across 2^63 by 3, dynamic,4: sum %llu\n", us);

    us = ue = 0;
    const unsigned long long V = 0xfffffffffffff000ULL;
#pragma omp parallel for schedule(static) reduction(+ : us)
    for (unsigned long long u = V + 4000; u > V; u -= 5) {
        count[(V + 4000 - u) / 5]++;
        us += V + 4000 - u;
    }
    for (unsigned long long u = V + 4000; u > V; u -= 5)
        ue += V + 4000 - u;
    check_hits("unsigned long long near 2^64 down by 5, static", 800);
    CHECK(us == ue, "unsigned long long static: sum %llu, expected %llu", us, ue);
    printf("unsigned long long near 2^64 down by 5, static: sum %llu\n", us);

    volatile int lo = 10, hi = 10;
    int none = 0;
#pragma omp parallel
    {
#pragma omp for schedule(dynamic) reduction(+ : none)
        for (int i = lo; i < hi; i++)
            none++;
#pragma omp for schedule(static) reduction(+ : none)
        for (long long i = B; i > B + hi; i--)
            none++;
#pragma omp for schedule(guided) reduction(+ : none)
        for (unsigned long long u = U; u < U + (unsigned)lo - 10; u++)
            none++;
    }
    CHECK(none == 0, "%d iterations of empty loops", none);
    hi = 1777;
    long rs = 0;
#pragma omp parallel for schedule(guided) reduction(+ : rs)
    for (int i = lo; i < hi; i += lo)
        rs += i;
    long re = 0;
    for (int i = lo; i < hi; i += lo)
        re += i;
    CHECK(rs == re, "a run-time bound: sum %ld, expected %ld", rs, re);
    printf("empty loops: %d iterations; bounds known at run time: sum %ld\n", none, rs);
    return OK();
}
