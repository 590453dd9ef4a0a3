/* A module whose constructor calls exit(0): its load is refused, its
 * daemon goes on (tests/job/test_hostile.sh). */
#include <stdlib.h>

#include "plain.h"

__attribute__((constructor)) static void leave(void)
{
    exit(0);
}

PLAIN_MODULE("ctor_exit")
