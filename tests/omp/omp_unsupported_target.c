/* komp: must fail (nonzero exit) with a message containing "not supported" (target offloading); libgomp: runs the target region on the host and prints "ok". */
/* A target region (GOMP_target_ext): komp does not offload; it must say
 * so and end the program rather than run something else. */
#include "omp_test.h"

int main(void)
{
    int x = 0, a[16];
    for (int i = 0; i < 16; i++)
        a[i] = i;
#pragma omp target map(tofrom : x) map(to : a)
    {
        for (int i = 0; i < 16; i++)
            x += a[i];
    }
    CHECK(x == 120, "target region: %d", x);
    printf("target region: %d\n", x);
    return OK();
}
