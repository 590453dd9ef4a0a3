/* critical: a counter incremented 1000 times per thread under an unnamed
 * critical (one thread inside at a time: an occupancy count), named
 * criticals (alpha, beta: a non-atomic long and double), the same name in
 * two functions excludes both, nested criticals with different names
 * (critical(outer) enclosing critical(inner)). */
#include "omp_test.h"

static long counter, alpha, gamma_v;
static double beta;
static int inside, inside_g, inside_o, inside_i;

static void gamma_a(void)
{
#pragma omp critical(gamma)
    {
        FLAG(++inside_g == 1);
        gamma_v += 2;
        inside_g--;
    }
}

static void gamma_b(void)
{
#pragma omp critical(gamma)
    {
        FLAG(++inside_g == 1);
        gamma_v += 3;
        inside_g--;
    }
}

int main(void)
{
    int n = 0;
    long nested = 0;
#pragma omp parallel
    {
#pragma omp master
        n = omp_get_num_threads();
        for (int k = 0; k < 1000; k++) {
#pragma omp critical
            {
                FLAG(++inside == 1);
                counter++;
                inside--;
            }
        }
#pragma omp for schedule(dynamic, 3)
        for (int i = 0; i < 300; i++) {
#pragma omp critical(alpha)
            alpha += i;
#pragma omp critical(beta)
            beta += 0.25 * (i % 8);
            if (i % 2)
                gamma_a();
            else
                gamma_b();
#pragma omp critical(outer)
            {
                FLAG(++inside_o == 1);
#pragma omp critical(inner)
                {
                    FLAG(++inside_i == 1);
                    nested += i % 10;
                    inside_i--;
                }
                inside_o--;
            }
        }
    }
    REPORT("critical");
    CHECK(counter == 1000L * n, "unnamed critical: %ld increments, %d threads x 1000", counter, n);
    printf("unnamed critical: 1000 increments per thread, none lost, one thread inside at a time\n");
    CHECK(alpha == 44850 && beta == 260.5, "named: alpha %ld, beta %g", alpha, beta);
    printf("critical(alpha): %ld, critical(beta): %g\n", alpha, beta);
    CHECK(gamma_v == 750, "critical(gamma) in two functions: %ld", gamma_v);
    printf("critical(gamma) in two functions: %ld\n", gamma_v);
    CHECK(nested == 1350, "nested critical(outer) { critical(inner) }: %ld", nested);
    printf("critical(outer) enclosing critical(inner): %ld\n", nested);
    return OK();
}
