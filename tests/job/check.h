/*
 * Checks for the job-test programs: a failed check names the rank, the
 * place and the condition, and ends the process (knitrun then ends the
 * job).  The including file defines `static int rank` (or CHECK_RANK).
 */
#ifndef KN_TEST_JOB_CHECK_H
#define KN_TEST_JOB_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "knit.h"

/* The including file may name its rank variable and a label of the case
 * being checked (a string expression) before including this. */
#ifndef CHECK_RANK
#define CHECK_RANK rank
#endif
#ifndef CHECK_WHAT
#define CHECK_WHAT ""
#endif

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "rank %d: %s:%d: %s%s%scheck failed: %s: ", CHECK_RANK, __FILE__, \
                    __LINE__, *CHECK_WHAT ? "[" : "", CHECK_WHAT, *CHECK_WHAT ? "] " : "",    \
                    #cond);                                                                   \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

/* Seconds on the monotonic clock, for checks of how long something took. */
static inline double check_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define OK(call)                                                            \
    do {                                                                    \
        knit_status_t st_ = (call);                                         \
        CHECK(st_ == KNIT_OK, "%s returned %s", #call, knit_strerror(st_)); \
    } while (0)

/* "64", "8k", "4m", "8g" */
static inline size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    if (*end == 'k')
        v <<= 10;
    if (*end == 'm')
        v <<= 20;
    if (*end == 'g')
        v <<= 30;
    return v;
}

#endif
