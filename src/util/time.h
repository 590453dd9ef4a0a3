/* Monotonic time. */
#ifndef KN_UTIL_TIME_H
#define KN_UTIL_TIME_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#define KN_NSEC_PER_USEC 1000ull
#define KN_NSEC_PER_MSEC 1000000ull
#define KN_NSEC_PER_SEC 1000000000ull

/* Nanoseconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
static inline uint64_t kn_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * KN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Processor time of a getrusage() record, user and system, in ms. */
static inline double kn_rusage_ms(const struct rusage *r, double *user, double *sys)
{
    double u = (double)r->ru_utime.tv_sec * 1e3 + (double)r->ru_utime.tv_usec / 1e3;
    double s = (double)r->ru_stime.tv_sec * 1e3 + (double)r->ru_stime.tv_usec / 1e3;
    if (user)
        *user = u;
    if (sys)
        *sys = s;
    return u + s;
}

static inline double kn_time_sec(void)
{
    return (double)kn_time_ns() * 1e-9;
}

#endif
