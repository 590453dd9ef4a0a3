/*
 * libfabric, loaded when a job first needs the network.
 *
 * Debian's libfabric links the PSM libraries, whose ELF constructors sleep
 * about 100 ms each to calibrate a clock: a process that merely links
 * libfabric starts 200 ms late, on every node, even when it never leaves
 * its node.  knit therefore does not link libfabric: the five functions
 * of it that knit calls (everything else in libfabric's API is inline,
 * through the objects' operation tables) are defined here, hidden, and
 * forward to the library opened with dlopen on first use.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "net/net.h"

#define HIDDEN __attribute__((visibility("hidden")))

static struct {
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *, struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror)(int);
    char why[256];
    int ok;
} fab;
static pthread_once_t fab_once = PTHREAD_ONCE_INIT;

/* The PSM libraries' constructors also install handlers for fault signals
 * (they print a backtrace and exit): a knit process keeps its own, so a
 * crashing rank is reported as killed by its signal and an agent's module
 * fault protection keeps working. */
static const int kept_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM, SIGINT, SIGTERM};

static void fab_open(void)
{
    struct sigaction saved[sizeof(kept_signals) / sizeof(kept_signals[0])];
    for (size_t i = 0; i < sizeof(kept_signals) / sizeof(kept_signals[0]); i++)
        sigaction(kept_signals[i], NULL, &saved[i]);
    void *h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < sizeof(kept_signals) / sizeof(kept_signals[0]); i++)
        sigaction(kept_signals[i], &saved[i], NULL);
    if (!h) {
        snprintf(fab.why, sizeof(fab.why), "cannot load libfabric: %s", dlerror());
        return;
    }
    fab.getinfo = (__typeof__(fab.getinfo))dlsym(h, "fi_getinfo");
    fab.freeinfo = (__typeof__(fab.freeinfo))dlsym(h, "fi_freeinfo");
    fab.dupinfo = (__typeof__(fab.dupinfo))dlsym(h, "fi_dupinfo");
    fab.fabric = (__typeof__(fab.fabric))dlsym(h, "fi_fabric");
    fab.strerror = (__typeof__(fab.strerror))dlsym(h, "fi_strerror");
    if (!fab.getinfo || !fab.freeinfo || !fab.dupinfo || !fab.fabric || !fab.strerror) {
        snprintf(fab.why, sizeof(fab.why), "libfabric.so.1 lacks a function knit needs (fi_getinfo, "
                                           "fi_freeinfo, fi_dupinfo, fi_fabric, fi_strerror)");
        return;
    }
    fab.ok = 1;
}

const char *kn_net_fabric_load(void)
{
    pthread_once(&fab_once, fab_open);
    return fab.ok ? NULL : fab.why;
}

HIDDEN int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                      const struct fi_info *hints, struct fi_info **info)
{
    if (kn_net_fabric_load())
        return -FI_ENOSYS;
    return fab.getinfo(version, node, service, flags, hints, info);
}

HIDDEN void fi_freeinfo(struct fi_info *info)
{
    if (!kn_net_fabric_load())
        fab.freeinfo(info);
}

HIDDEN struct fi_info *fi_dupinfo(const struct fi_info *info)
{
    return kn_net_fabric_load() ? NULL : fab.dupinfo(info);
}

HIDDEN int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    if (kn_net_fabric_load())
        return -FI_ENOSYS;
    return fab.fabric(attr, fabric, context);
}

HIDDEN const char *fi_strerror(int errnum)
{
    if (kn_net_fabric_load())
        return strerror(errnum);
    return fab.strerror(errnum);
}
