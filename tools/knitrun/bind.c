/*
 * Where a host's processes of the job run: each rank bound to a part of
 * the host's cpus (KNIT_BIND_TO, --bind-to), placed in order over the
 * host's objects of one kind (KNIT_MAP_BY, --map-by); the daemons on the
 * cpus the ranks leave.  The host's topology comes from hwloc, restricted
 * to the cpus knitrun (or the proxy) may use itself.
 *
 * Placement.  The host's ranks take slots 0, 1, ... in order (a proxy
 * sharing its machine with other proxies of the job, as network
 * namespaces do, continues after them: kb_machine_offset).  With units =
 * cores (hardware threads when mapping or binding by hwthread) and M the
 * map-by objects, slot s lands on the (s / |M|)-th unit of object
 * M[s mod |M|] (the unit itself when mapping by units): round robin over
 * the objects, filling each one's units in order, and around again when
 * there are more slots than units.  The rank is then bound to the
 * bind-to object that holds its unit.
 *
 * auto (the default): bound to cores, in order and around again, where
 * the host's ranks are at most twice its cores; no binding beyond.
 * Measured here (2 cpus, docs/knitrun.md, "Binding"): with 2 ranks,
 * unbound ones sometimes share a cpu (a 2-rank barrier of 45 us instead
 * of 0.2 in one run of 8); with 4, two to a core is as fast or faster
 * than the scheduler's placement in every row and stable run to run
 * (8-byte ping-pong 0.75 us against 0.75-1.29); with 8, neither wins.
 * Ranks bound so are told the job's cpus (KNIT_UNBIND_CPUS): once a
 * module is loaded at the agent or the switch where the host then has
 * more busy processes than cpus, they widen to them (util/cpus.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "knitrun.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/env.h"
#include "util/log.h"

/* KNIT_BIND_TO's choices after auto and none, and KNIT_MAP_BY's: levels */
enum { LV_HWTHREAD, LV_CORE, LV_L2, LV_L3, LV_NUMA, LV_SOCKET, LV_N };
static const char *const level_name[LV_N] = {"hwthread", "core", "l2cache", "l3cache", "numa", "socket"};
static const hwloc_obj_type_t level_type[LV_N] = {HWLOC_OBJ_PU, HWLOC_OBJ_CORE, HWLOC_OBJ_L2CACHE,
                                                  HWLOC_OBJ_L3CACHE, HWLOC_OBJ_NUMANODE,
                                                  HWLOC_OBJ_PACKAGE};
#define BIND_AUTO 0
#define BIND_NONE 1
#define BIND_LEVEL(v) ((v)-2) /* KNIT_BIND_TO index -> level */
#define BIND_TO(level) ((level) + 2) /* and back */
/* KNIT_MAP_BY's choices in its own order */
static const int map_level[] = {LV_CORE, LV_HWTHREAD, LV_L2, LV_L3, LV_NUMA, LV_SOCKET};

/* The objects of one level that hold some of our cpus, in logical order. */
typedef struct objs {
    hwloc_obj_t *v;
    int n;
} objs_t;

static int objs_get(hwloc_topology_t t, int level, objs_t *o)
{
    int n = hwloc_get_nbobjs_by_type(t, level_type[level]);
    o->n = 0;
    o->v = calloc(n > 0 ? (size_t)n : 1, sizeof(*o->v));
    if (!o->v)
        return -1;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t x = hwloc_get_obj_by_type(t, level_type[level], (unsigned)i);
        if (x && x->cpuset && !hwloc_bitmap_iszero(x->cpuset))
            o->v[o->n++] = x;
    }
    return 0;
}

/* The object of o holding unit u (NULL: none does, as l3cache on a host
 * whose caches hwloc does not see). */
static hwloc_obj_t holder(const objs_t *o, hwloc_obj_t u)
{
    for (int i = 0; i < o->n; i++)
        if (hwloc_bitmap_isincluded(u->cpuset, o->v[i]->cpuset))
            return o->v[i];
    return NULL;
}

static void describe(hwloc_obj_t x, int level, char *buf, size_t len)
{
    char cpus[256];
    hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), x->cpuset);
    snprintf(buf, len, "%s %u (cpu%s %s)", level_name[level], x->logical_index,
             hwloc_bitmap_weight(x->cpuset) > 1 ? "s" : "", cpus);
}

int kb_plan(kb_plan_t *p, const struct kn_config *cfg, int offset, int n, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    int bind = cfg->bind_to, map = map_level[cfg->map_by];
    hwloc_topology_t t;
    objs_t units = {0}, ms = {0}, bs = {0};
    int rc = -1;
    CPU_ZERO(&p->daemons);
    p->n = n;
    int inited = hwloc_topology_init(&t) == 0;
    if (!inited || hwloc_topology_load(t) < 0) {
        int e = errno;
        if (inited)
            hwloc_topology_destroy(t);
        if (bind != BIND_AUTO) {
            snprintf(err, errlen, "cannot read this host's topology (hwloc): %s", strerror(e));
            return -1;
        }
        snprintf(p->policy, sizeof(p->policy), "auto: none (hwloc cannot read this host's topology)");
        sched_getaffinity(0, sizeof(p->daemons), &p->daemons);
        p->host_cpus = CPU_COUNT(&p->daemons);
        return 0;
    }
    hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(t);
    p->host_cpus = hwloc_bitmap_weight(allowed);
    hwloc_cpuset_to_glibc_sched_affinity(t, allowed, &p->daemons, sizeof(p->daemons));
    int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(t, allowed, HWLOC_OBJ_CORE);
    if (ncores <= 0)
        ncores = p->host_cpus;
    if (bind == BIND_AUTO) {
        int fit = offset + n <= 2 * ncores;
        snprintf(p->policy, sizeof(p->policy), "auto: %s (%d rank%s on this host's %d core%s)",
                 fit ? "core" : "none", offset + n, offset + n == 1 ? "" : "s", ncores,
                 ncores == 1 ? "" : "s");
        bind = fit ? BIND_TO(LV_CORE) : BIND_NONE;
        if (fit) {
            map = LV_CORE;
            /* p->daemons is every cpu of ours here */
            kn_cpus_format(&p->daemons, p->unbind, sizeof(p->unbind));
        }
    } else {
        if (bind == BIND_NONE)
            snprintf(p->policy, sizeof(p->policy), "none");
        else
            snprintf(p->policy, sizeof(p->policy), "%s, mapped by %s", level_name[BIND_LEVEL(bind)],
                     level_name[map]);
    }
    if (bind == BIND_NONE) {
        rc = 0;
        goto out;
    }
    int blevel = BIND_LEVEL(bind);
    int ulevel = blevel == LV_HWTHREAD || map == LV_HWTHREAD ? LV_HWTHREAD : LV_CORE;
    if (objs_get(t, ulevel, &units) < 0 || objs_get(t, map, &ms) < 0 || objs_get(t, blevel, &bs) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!units.n || !ms.n || !bs.n) {
        int none = !ms.n ? map : !bs.n ? blevel : ulevel;
        snprintf(err, errlen, "--%s %s: this host shows no %s to hwloc", !ms.n ? "map-by" : "bind-to",
                 level_name[!ms.n ? map : blevel], level_name[none]);
        goto out;
    }
    p->rank = calloc((size_t)n, sizeof(*p->rank));
    p->what = calloc((size_t)n, sizeof(*p->what));
    if (!p->rank || !p->what) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    if (!used) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        int s = offset + i;
        hwloc_obj_t u;
        if (map == ulevel) {
            u = units.v[s % units.n];
        } else {
            /* the units of map object s mod |M|, its (s / |M|)-th one */
            hwloc_obj_t m = ms.v[s % ms.n];
            int k = s / ms.n, in = 0;
            u = NULL;
            for (int j = 0; j < units.n; j++)
                in += hwloc_bitmap_isincluded(units.v[j]->cpuset, m->cpuset);
            for (int j = 0, seen = 0; j < units.n && in; j++)
                if (hwloc_bitmap_isincluded(units.v[j]->cpuset, m->cpuset) && seen++ == k % in)
                    u = units.v[j];
            if (!u) {
                snprintf(err, errlen, "--map-by %s: %s %u holds no %s", level_name[map], level_name[map],
                         m->logical_index, level_name[ulevel]);
                hwloc_bitmap_free(used);
                goto out;
            }
        }
        hwloc_obj_t b = blevel == ulevel ? u : holder(&bs, u);
        if (!b) {
            char where[300];
            describe(u, ulevel, where, sizeof(where));
            snprintf(err, errlen, "--bind-to %s: no %s holds %s", level_name[blevel], level_name[blevel], where);
            hwloc_bitmap_free(used);
            goto out;
        }
        hwloc_cpuset_to_glibc_sched_affinity(t, b->cpuset, &p->rank[i], sizeof(p->rank[i]));
        hwloc_bitmap_or(used, used, b->cpuset);
        char d[320];
        describe(b, blevel, d, sizeof(d));
        if (!(p->what[i] = strdup(d))) {
            snprintf(err, errlen, "out of memory");
            hwloc_bitmap_free(used);
            goto out;
        }
    }
    /* the daemons on what the ranks leave (all of it when they leave nothing) */
    hwloc_bitmap_t rest = hwloc_bitmap_alloc();
    if (rest) {
        hwloc_bitmap_andnot(rest, allowed, used);
        if (!hwloc_bitmap_iszero(rest))
            hwloc_cpuset_to_glibc_sched_affinity(t, rest, &p->daemons, sizeof(p->daemons));
        hwloc_bitmap_free(rest);
    }
    hwloc_bitmap_free(used);
    rc = 0;
out:
    if (rc < 0)
        kb_free(p);
    free(units.v);
    free(ms.v);
    free(bs.v);
    hwloc_topology_destroy(t);
    return rc;
}

const cpu_set_t *kb_rank_cpus(const kb_plan_t *p, int i)
{
    return p->rank && i >= 0 && i < p->n ? &p->rank[i] : NULL;
}

void kb_report(const kb_plan_t *p, const char *host, int first_rank, int (*node_of)(int rank),
               int daemons_here)
{
    char cpus[256];
    fprintf(stderr, "knitrun: bindings on %s: %s\n", host, p->policy);
    for (int i = 0; i < p->n; i++) {
        if (p->rank)
            fprintf(stderr, "knitrun: rank %d (node %d) on %s: bound to %s\n", first_rank + i,
                    node_of(first_rank + i), host, p->what[i]);
        else
            fprintf(stderr, "knitrun: rank %d (node %d) on %s: not bound\n", first_rank + i,
                    node_of(first_rank + i), host);
    }
    if (daemons_here) {
        kn_cpus_format(&p->daemons, cpus, sizeof(cpus));
        fprintf(stderr, "knitrun: daemons on %s: cpus %s\n", host, cpus);
    }
}

int kb_env(const kb_plan_t *p, strv_t *env)
{
    int bad = strv_addf(env, "%s=%d", KN_ENV_HOST_CPUS, p->host_cpus) < 0;
    if (p->rank && p->unbind[0])
        bad |= strv_addf(env, "%s=%s", KN_ENV_UNBIND_CPUS, p->unbind) < 0;
    return bad ? -1 : 0;
}

void kb_free(kb_plan_t *p)
{
    for (int i = 0; p->what && i < p->n; i++)
        free(p->what[i]);
    free(p->what);
    free(p->rank);
    p->what = NULL;
    p->rank = NULL;
}

int kb_machine_offset(const char *jobid, int n)
{
    char path[256];
    snprintf(path, sizeof(path), "/dev/shm/knit-%s-slots", jobid);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return 0;
    int off = 0;
    if (flock(fd, LOCK_EX) == 0) {
        char buf[32] = {0};
        ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);
        if (r > 0)
            off = atoi(buf);
        if (off < 0 || off > 1 << 20)
            off = 0;
        int len = snprintf(buf, sizeof(buf), "%d\n", off + n);
        if (pwrite(fd, buf, (size_t)len, 0) != len)
            kn_debug("%s: %m", path);
        flock(fd, LOCK_UN);
    }
    close(fd);
    return off;
}
