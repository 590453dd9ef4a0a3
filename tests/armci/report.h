/*
 * What the ARMCI test programs share: report() gathers every rank's
 * verdict of a check (the first failing rank says why) and prints
 * "PASS name" / "FAIL name: why" once; EXPECT records the first failed
 * condition of a check in `ok` and `why`.  The including program defines
 * me, nproc and failures (int) before including this.
 */
#ifndef KN_TEST_ARMCI_REPORT_H
#define KN_TEST_ARMCI_REPORT_H

#include <stdio.h>

#include <armci.h>

static void report(const char *name, int ok, const char *why)
{
    char msg[300];
    int first = ok ? nproc : me;
    armci_msg_igop(&first, 1, "min");
    if (first == nproc) {
        if (me == 0)
            printf("PASS %s\n", name);
    } else {
        snprintf(msg, sizeof(msg), "rank %d: %s", me, why ? why : "failed");
        armci_msg_brdcst(msg, sizeof(msg), first);
        if (me == 0)
            printf("FAIL %s: %s\n", name, msg);
        failures++;
    }
    fflush(stdout);
}

static char why[256];
#define EXPECT(cond, ...) \
    do { if (ok && !(cond)) { ok = 0; snprintf(why, sizeof(why), __VA_ARGS__); } } while (0)

#endif
