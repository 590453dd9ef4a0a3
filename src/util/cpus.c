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

void kn_cpus_unbind_crowded(int host_procs, int busy_daemons)
{
    static int done;
    const char *v = getenv(KN_ENV_UNBIND_CPUS);
    if (done || !v || host_procs + busy_daemons <= kn_cpus_host())
        return;
    done = 1;
    cpu_set_t set;
    if (kn_cpus_parse(v, &set) < 0) {
        kn_warn("%s=%s: not a list of cpus, left bound", KN_ENV_UNBIND_CPUS, v);
        return;
    }
    if (sched_setaffinity(0, sizeof(set), &set) < 0)
        kn_warn("widening to cpus %s for the offload daemons: %m", v);
    else
        kn_debug("offload daemons at work on a crowded host: widened to cpus %s", v);
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
