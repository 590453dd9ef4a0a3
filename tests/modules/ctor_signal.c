/* A module whose constructor takes the fault signals back to their
 * default handling and raises SIGSEGV: where it runs, later faults of
 * other modules must still be contained (tests/job/test_hostile.sh). */
#include <signal.h>

#include "plain.h"

__attribute__((constructor)) static void grab(void)
{
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    raise(SIGSEGV);
}

PLAIN_MODULE("ctor_signal")
