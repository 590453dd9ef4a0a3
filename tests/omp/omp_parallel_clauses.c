/* parallel clauses: num_threads(1|2|3|5) gives that many threads (ids
 * 0..k-1 once each), if(0) and if(false variable) give one thread,
 * if(true) the default team, num_threads(3) if(0) one thread; the
 * region's body runs once per thread in each case. */
#include "omp_test.h"

#define MAXT 4096
static int seen[MAXT];

/* ids seen once each, returns the team size (as thread 0 saw it) */
static int check_team(const char *what, int n, int arrived)
{
    CHECK(arrived == n, "%s: %d threads arrived in a team of %d", what, arrived, n);
    for (int i = 0; i < MAXT; i++) {
        CHECK(seen[i] == (i < n), "%s: id %d seen %d times (team of %d)", what, i, seen[i], n);
        seen[i] = 0;
    }
    return n;
}

#define REGION(what, clauses)                                              \
    do {                                                                   \
        int n_ = 0, arrived_ = 0;                                          \
        _Pragma(clauses)                                                   \
        {                                                                  \
            int id = omp_get_thread_num();                                 \
            FLAG(id >= 0 && id < MAXT);                                    \
            if (id >= 0 && id < MAXT)                                      \
                seen[id]++;                                                \
            _Pragma("omp atomic") arrived_++;                              \
            if (id == 0)                                                   \
                n_ = omp_get_num_threads();                                \
        }                                                                  \
        REPORT(what);                                                      \
        result = check_team(what, n_, arrived_);                           \
    } while (0)

int main(void)
{
    int result;
    volatile int zero = 0, one = 1;
    int max = omp_get_max_threads();

    REGION("num_threads(1)", "omp parallel num_threads(1)");
    printf("num_threads(1): %d thread\n", result);
    REGION("num_threads(2)", "omp parallel num_threads(2)");
    printf("num_threads(2): %d threads\n", result);
    REGION("num_threads(3)", "omp parallel num_threads(3)");
    printf("num_threads(3): %d threads\n", result);
    REGION("num_threads(5)", "omp parallel num_threads(5)");
    printf("num_threads(5): %d threads\n", result);
    REGION("if(0)", "omp parallel if(0)");
    printf("if(0): %d thread\n", result);
    REGION("if(zero)", "omp parallel if(zero)");
    printf("if(variable 0): %d thread\n", result);
    REGION("if(one)", "omp parallel if(one)");
    CHECK(result == max, "if(1): a team of %d, omp_get_max_threads() %d", result, max);
    printf("if(variable 1): the default team (omp_get_max_threads())\n");
    REGION("num_threads(3) if(0)", "omp parallel num_threads(3) if(zero)");
    printf("num_threads(3) if(0): %d thread\n", result);
    REGION("num_threads(2) if(1)", "omp parallel num_threads(2) if(one)");
    printf("num_threads(2) if(1): %d threads\n", result);
    /* the clause does not change the default of later regions */
    REGION("default", "omp parallel");
    CHECK(result == max, "after num_threads: a team of %d, omp_get_max_threads() %d", result, max);
    printf("a region without clauses afterwards: the default team\n");
    return OK();
}
