/*
 * Job ids and the job's shared-memory files.  Every shared-memory file of
 * a job is /dev/shm/knit-<jobid>-<name> (node segments:
 * knit-<jobid>-n<node>-<name>).  The jobid names the host and pid of the
 * job's knitrun, "<host>.<pid>.<4 hex>", so files left by a knitrun that
 * is gone can be recognised and removed.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "knitrun.h"
#include "util/log.h"

#define SHM_DIR "/dev/shm"
#define HOST_TAG_MAX 24

static void host_tag(char *out, size_t len)
{
    char host[256];
    if (gethostname(host, sizeof(host)) < 0)
        snprintf(host, sizeof(host), "host");
    host[sizeof(host) - 1] = '\0';
    size_t o = 0;
    for (const char *p = host; *p && o + 1 < len && o < HOST_TAG_MAX; p++)
        if (isalnum((unsigned char)*p))
            out[o++] = *p;
    if (o == 0)
        o = (size_t)snprintf(out, len, "host");
    out[o] = '\0';
}

void shm_make_jobid(char *out, size_t len)
{
    char tag[HOST_TAG_MAX + 1];
    host_tag(tag, sizeof(tag));
    unsigned short r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) < 0)
        r = (unsigned short)getpid();
    snprintf(out, len, "%s.%d.%04x", tag, (int)getpid(), r);
}

/* Unlink every /dev/shm/knit-<jobid>-* for which keep() says no. */
static void sweep(int (*remove_it)(const char *jobid, size_t len, const void *arg),
                  const void *arg)
{
    DIR *d = opendir(SHM_DIR);
    if (!d) {
        if (errno != ENOENT)
            kn_warn("%s: %m", SHM_DIR);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "knit-", 5))
            continue;
        const char *jobid = e->d_name + 5;
        const char *dash = strchr(jobid, '-');
        if (!dash || dash == jobid)
            continue;
        if (!remove_it(jobid, (size_t)(dash - jobid), arg))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
            kn_warn("cannot remove %s/%s: %m", SHM_DIR, e->d_name);
        else
            kn_debug("removed %s/%s", SHM_DIR, e->d_name);
    }
    closedir(d);
}

static int is_job(const char *jobid, size_t len, const void *arg)
{
    return strlen(arg) == len && !memcmp(jobid, arg, len);
}

void shm_clean_job(const char *jobid)
{
    sweep(is_job, jobid);
}

/* A jobid of this host whose knitrun is no longer running. */
static int is_stale(const char *jobid, size_t len, const void *arg)
{
    const char *tag = arg;
    size_t tlen = strlen(tag);
    if (len <= tlen + 1 || memcmp(jobid, tag, tlen) || jobid[tlen] != '.')
        return 0;
    const char *p = jobid + tlen + 1;
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || *end != '.' || pid <= 0 || end > jobid + len)
        return 0;
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        return 1;
    /* alive: is it still a knitrun, or did its pid get reused? */
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* cannot tell: keep */
    ssize_t n = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    comm[n] = '\0';
    return strcmp(comm, "knitrun\n") != 0;
}

void shm_clean_stale(void)
{
    char tag[HOST_TAG_MAX + 1];
    host_tag(tag, sizeof(tag));
    sweep(is_stale, tag);
}
