/* A module whose constructor writes through a null pointer: its load is
 * refused, nothing else happens (tests/job/test_hostile.sh). */
#include "plain.h"

__attribute__((constructor)) static void boom(void)
{
    volatile int *volatile p = 0;
    *p = 1;
}

PLAIN_MODULE("ctor_crash")
