/* tasks: a recursive Fibonacci with two tasks per call and a taskwait
 * (the results land in the parent's frame), started from a single, serial
 * below a cutoff; the same with if() tasks (undeferred near the leaves);
 * fib(1..25) as 25 tasks of a single. */
#include "omp_test.h"

static long fib_serial(int n)
{
    return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static long fib(int n)
{
    if (n < 15)
        return fib_serial(n);
    long x, y;
#pragma omp task shared(x) firstprivate(n)
    x = fib(n - 1);
#pragma omp task shared(y) firstprivate(n)
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

static long fib_if(int n)
{
    if (n < 2)
        return n;
    long x, y;
#pragma omp task shared(x) if(n > 13)
    x = fib_if(n - 1);
#pragma omp task shared(y) if(n > 13)
    y = fib_if(n - 2);
#pragma omp taskwait
    return x + y;
}

int main(void)
{
    long r = 0, r2 = 0;
#pragma omp parallel
#pragma omp single
    r = fib(25);
    CHECK(r == 75025, "fib(25) = %ld", r);
    printf("fib(25) with tasks and taskwait: %ld\n", r);
#pragma omp parallel
    {
#pragma omp single nowait
        r2 = fib_if(18);
    }
    CHECK(r2 == 2584, "fib(18) with if() tasks = %ld", r2);
    printf("fib(18) with if(n > 13) tasks: %ld\n", r2);
    static long small[26];
#pragma omp parallel
#pragma omp single
    for (int n = 1; n < 26; n++) {
#pragma omp task firstprivate(n)
        small[n] = fib(n);
    }
    for (int n = 1; n < 26; n++)
        CHECK(small[n] == fib_serial(n), "fib(%d) = %ld", n, small[n]);
    printf("fib(1..25) as 25 tasks from a single: fib(25) = %ld\n", small[25]);
    return OK();
}
