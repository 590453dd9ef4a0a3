/* komp: run with OMP_CANCELLATION=true, must fail (nonzero exit) with a message containing "not supported" (cancellation); libgomp: cancels the loop and prints "ok". */
/* cancel for (GOMP_cancel, GOMP_cancellation_point): with cancellation
 * enabled, komp must refuse the construct rather than ignore it. */
#include "omp_test.h"

int main(void)
{
    int found = -1;
#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 4)
        for (int i = 0; i < 100000; i++) {
            if (i == 777) {
#pragma omp atomic write
                found = i;
#pragma omp cancel for
            }
#pragma omp cancellation point for
        }
    }
    CHECK(found == 777, "found %d", found);
    printf("cancel for: found %d\n", found);
    return OK();
}
