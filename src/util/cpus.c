#include "util/cpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/env.h"
#include "util/log.h"

int kn_cpus_host(void)
{
    const char *v = getenv(KN_ENV_HOST_CPUS);
    if (v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end != v && !*end && n > 0 && n < 1 << 20)
            return (int)n;
    }
    cpu_set_t set;
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

void kn_cpus_format(const cpu_set_t *s, char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && o + 24 < len; c++) {
        if (!CPU_ISSET(c, s))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, s))
            e++;
        o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", c);
        if (e > c)
            o += (size_t)snprintf(buf + o, len - o, "-%d", e);
        c = e;
    }
}

int kn_cpus_parse(const char *text, cpu_set_t *out)
{
    CPU_ZERO(out);
    const char *p = text;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0 || a >= CPU_SETSIZE)
            return -1;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= CPU_SETSIZE)
                return -1;
            p = end;
        }
        for (long c = a; c <= b; c++)
            CPU_SET((int)c, out);
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return CPU_COUNT(out) ? 0 : -1;
}

/* To the cpus of KNIT_UNBIND_CPUS: 0, 1 where it is unset, -1 (logged)
 * where it is not a list or the kernel refused; why: what it is for. */
static int widen_to_job(const char *why)
{
    const char *v = getenv(KN_ENV_UNBIND_CPUS);
    if (!v)
        return 1;
    cpu_set_t set;
    if (kn_cpus_parse(v, &set) < 0) {
        kn_warn("%s=%s: not a list of cpus, left bound", KN_ENV_UNBIND_CPUS, v);
        return -1;
    }
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        kn_warn("widening to cpus %s for %s: %m", v, why);
        return -1;
    }
    kn_debug("%s: widened to cpus %s", why, v);
    return 0;
}

void kn_cpus_unbind_crowded(int host_procs, int busy_daemons)
{
    static int done;
    if (done || !getenv(KN_ENV_UNBIND_CPUS) || host_procs + busy_daemons <= kn_cpus_host())
        return;
    done = 1;
    widen_to_job("the offload daemons at work on a crowded host");
}

int kn_cpus_widen(void)
{
    int rc = widen_to_job("the process's threads");
    if (rc <= 0)
        return rc;
    cpu_set_t all;
    CPU_ZERO(&all);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < cpus && i < CPU_SETSIZE; i++)
        CPU_SET(i, &all);
    if (sched_setaffinity(0, sizeof(all), &all) < 0) {
        kn_warn("widening to every cpu for the process's threads: %m");
        return -1;
    }
    return 0;
}

int kn_cpus_set_slice(uint64_t slice_ns)
{
#ifdef SYS_sched_setattr
    /* struct sched_attr, its first version (glibc has no wrapper) */
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } a = {.size = 48, .policy = SCHED_OTHER, .runtime = slice_ns};
    if (syscall(SYS_sched_setattr, 0, &a, 0) == 0)
        return 0;
    kn_debug("sched_setattr (a %llu ns slice): %m", (unsigned long long)slice_ns);
#else
    (void)slice_ns;
#endif
    return -1;
}
