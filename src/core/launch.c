/*
 * Starting under another launcher (boot/launcher.h says what it gives).
 *
 *   1. The launcher's client gives rank, size and every rank's node.
 *      knit numbers nodes by their first rank; a node's ranks must be
 *      consecutive (block placement, every launcher's default).
 *   2. Rank 0 starts knitrun --serve, knit's store for this job, which
 *      answers with "jobid cookie addresses"; rank 0 puts that line in the
 *      launcher's key-value space, every rank fences and gets it.
 *   3. Every rank sets the variables knitrun would have set; the node's
 *      first rank starts the node's knit-agent and the knit-switches that
 *      run beside it (offload/tree.h), as knitrun's proxy would.
 * From there knit_init goes on as under knitrun.  The store connection is
 * watched by a thread: knit's store closes it when the job fails (a rank
 * ended without finalizing, a daemon died), and it closes when rank 0
 * dies; the job then ends through the launcher's abort.  The daemons
 * end with the rank that started them (SIGTERM at knit_finalize,
 * PR_SET_PDEATHSIG otherwise).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot/launcher.h"
#include "core/launch.h"
#include "offload/tree.h"
#include "util/config.h"
#include "util/env.h"
#include "util/log.h"
#include "util/time.h"


extern char **environ;

static struct {
    kn_launcher_t *l;
    pid_t serve;         /* rank 0: knitrun --serve */
    int serve_in;        /* its stdin, open while we live */
    pid_t daemons[KN_TREE_LEVELS + 1];
    int ndaemons;
    pthread_t watcher;
    int wake[2];         /* tells the watcher to stop */
    int watching;
} L = {.serve_in = -1, .wake = {-1, -1}};

int kn_launch_active(void)
{
    return L.l != NULL;
}

/* knit's programs beside the library: <lib dir>/../bin, else PATH. */
static int find_tool(const char *name, char *out, size_t len)
{
    Dl_info info;
    if (dladdr((void *)kn_launch_start, &info) && info.dli_fname && strstr(info.dli_fname, "libknit")) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            int n = snprintf(out, len, "%s/../bin/%s", dir, name);
            if (n > 0 && (size_t)n < len && access(out, X_OK) == 0)
                return 0;
        }
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s/%s", (int)n, p, name);
        if (n && access(out, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    snprintf(out, len, "%s", name);
    return -1;
}

/* Our environment without the launcher's variables and this rank's own:
 * what a daemon or knit's store gets, plus the extra "K=V" strings. */
static char **child_env(char *const extra[])
{
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    while (extra && extra[k])
        k++;
    char **env = calloc(n + k + 1, sizeof(char *));
    if (!env)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (!strncmp(e, "PMI_", 4) || !strncmp(e, "PMIX_", 5) || !strncmp(e, "KNIT_RANK=", 10) ||
            !strncmp(e, "KNIT_LOCAL_RANK=", 16))
            continue;
        env[o++] = (char *)e;
    }
    for (size_t i = 0; i < k; i++)
        env[o++] = extra[i];
    return env;
}

/* fork + exec with stdin/stdout from the given fds (-1: /dev/null, ours).
 * The child dies with us. */
static pid_t spawn(const char *path, char *const argv[], char *const extra[], int in, int out)
{
    char **env = child_env(extra);
    if (!env)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (in < 0)
            in = open("/dev/null", O_RDONLY);
        if (in >= 0 && in != 0)
            dup2(in, 0);
        if (out >= 0 && out != 1)
            dup2(out, 1);
        execve(path, argv, env);
        fprintf(stderr, "knit: cannot run %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    free(env);
    if (pid < 0)
        kn_error("fork: %m");
    return pid;
}

/* Rank 0: start knit's store; its first line is "jobid cookie addrs". */
static knit_status_t start_serve(const char *sizes, int size, char *line, size_t cap)
{
    char path[PATH_MAX];
    if (find_tool("knitrun", path, sizeof(path)) < 0) {
        snprintf(line, cap, "cannot find knitrun (beside libknit, or on PATH) to serve the job's store");
        return KNIT_ERR_NOT_FOUND;
    }
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        snprintf(line, cap, "pipe: %s", strerror(errno));
        return KNIT_ERR_IO;
    }
    char e_size[32], e_sizes[strlen(sizes) + 32];
    snprintf(e_size, sizeof(e_size), "%s=%d", KN_ENV_SIZE, size);
    snprintf(e_sizes, sizeof(e_sizes), "%s=%s", KN_ENV_NODE_SIZES, sizes);
    char *argv[] = {path, "--serve", NULL}, *extra[] = {e_size, e_sizes, NULL};
    L.serve = spawn(path, argv, extra, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    L.serve_in = in[1];
    size_t n = 0;
    int ok = 0;
    uint64_t end = kn_time_ns() + (kn_cfg.boot_timeout ? kn_cfg.boot_timeout : 60 * KN_NSEC_PER_SEC);
    while (L.serve > 0 && n + 1 < cap) {
        struct pollfd p = {out[0], POLLIN, 0};
        int64_t left = (int64_t)(end - kn_time_ns());
        if (left <= 0 || poll(&p, 1, (int)(left / 1000000) + 1) == 0)
            break;
        ssize_t r = read(out[0], line + n, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (ok = line[n] == '\n'))
            break;
        n++;
    }
    close(out[0]);
    line[n] = '\0';
    if (!ok || n == 0) {
        snprintf(line, cap, "knitrun --serve did not start knit's store (see its message above)");
        return KNIT_ERR_IO;
    }
    return KNIT_OK;
}

/* The node's first rank: its agent, and the switches that run beside it
 * (at most one per level of the tree: KN_TREE_LEVELS + 1 in all). */
static knit_status_t start_daemons(int node, const kn_tree_t *tree)
{
    char agent[PATH_MAX], sw[PATH_MAX];
    if (find_tool("knit-agent", agent, sizeof(agent)) < 0 || find_tool("knit-switch", sw, sizeof(sw)) < 0) {
        kn_error("cannot start the offload daemons: knit-agent or knit-switch is not beside libknit "
                 "(../bin) nor on PATH (KNIT_OFFLOAD=0 runs without them)");
        return KNIT_ERR_NOT_FOUND;
    }
    for (int s = -1; s < tree->nswitches; s++) {
        if (s >= 0 && kn_tree_switch_node(tree, s) != node)
            continue;
        char e_sw[32];
        snprintf(e_sw, sizeof(e_sw), "%s=%d", KN_ENV_SWITCH, s);
        char *argv[] = {s < 0 ? agent : sw, NULL}, *extra[] = {s < 0 ? NULL : e_sw, NULL};
        pid_t pid = spawn(argv[0], argv, extra, -1, -1);
        if (pid < 0)
            return KNIT_ERR_IO;
        L.daemons[L.ndaemons++] = pid;
    }
    return KNIT_OK;
}

static int set(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set(const char *name, const char *fmt, ...)
{
    char v[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof(v), fmt, ap);
    va_end(ap);
    return setenv(name, v, 1);
}

/* knit's node numbers from the launcher's: in rank order, each node's
 * ranks consecutive.  Writes "k0,k1,..." into sizes. */
static knit_status_t number_nodes(const int *lnode, int size, int *node_of, int *nnodes, char *sizes, size_t cap)
{
    int n = 0, count = 0;
    size_t o = 0;
    for (int r = 0; r < size; r++) {
        if (r > 0 && lnode[r] != lnode[r - 1]) {
            for (int q = 0; q < r; q++)
                if (lnode[q] == lnode[r]) {
                    kn_error("rank %d runs on the node of rank %d but rank %d between them does not: knit "
                             "needs each node's ranks numbered consecutively (block placement: srun "
                             "--distribution=block, mpirun --map-by slot); other placements are not supported yet",
                             r, q, r - 1);
                    return KNIT_ERR_NOT_SUPPORTED;
                }
            o += (size_t)snprintf(sizes + o, o < cap ? cap - o : 0, "%s%d", n ? "," : "", count);
            n++;
            count = 0;
        }
        node_of[r] = n;
        count++;
    }
    o += (size_t)snprintf(sizes + o, o < cap ? cap - o : 0, "%s%d", n ? "," : "", count);
    if (o >= cap)
        return KNIT_ERR_NOMEM;
    *nnodes = n + 1;
    return KNIT_OK;
}

#define JOB_KEY "knit.job"

knit_status_t kn_launch_start(void)
{
    char why[512] = "";
    int kind;
    knit_status_t st = kn_launch_detect(&kind, why, sizeof(why));
    if (st != KNIT_OK) {
        kn_error("%s", why);
        return st;
    }
    if (kind == KN_BOOTSTRAP_KNITRUN || kind == KN_BOOTSTRAP_NONE)
        return KNIT_OK;
    kn_launcher_t *l = kind == KN_BOOTSTRAP_PMIX ? &kn_launch_pmix : &kn_launch_pmi;
    l->version = kind == KN_BOOTSTRAP_PMI1 ? 1 : kind == KN_BOOTSTRAP_PMI2 ? 2 : 0;
    l->rank = -1;
    st = l->init(l, why, sizeof(why));
    if (l->rank >= 0)
        kn_log_set_prefix("rank %d", l->rank);
    if (st != KNIT_OK) {
        kn_error("%s", why);
        return st;
    }
    L.l = l;
    int size = l->size, rank = l->rank, nnodes;
    int *lnode = calloc((size_t)size, sizeof(int)), *node_of = calloc((size_t)size, sizeof(int));
    char *sizes = malloc((size_t)size * 12 + 1), line[KN_LAUNCH_VAL_MAX];
    if (!lnode || !node_of || !sizes) {
        st = KNIT_ERR_NOMEM;
        goto out;
    }
    if ((st = l->nodes(l, lnode, why, sizeof(why))) != KNIT_OK) {
        kn_error("%s", why);
        goto out;
    }
    if ((st = number_nodes(lnode, size, node_of, &nnodes, sizes, (size_t)size * 12 + 1)) != KNIT_OK)
        goto out;
    if (rank == 0) {
        knit_status_t sst = start_serve(sizes, size, line, sizeof(line));
        if (sst != KNIT_OK)
            kn_error("%s", line);
        /* the others learn of a failure from the key, instead of waiting */
        for (char *p = line; sst == KNIT_OK && *p; p++)
            *p = *p == ' ' ? '!' : *p;
        st = l->put(l, JOB_KEY, sst == KNIT_OK ? line : "failed");
        if (st == KNIT_OK)
            st = sst;
    }
    knit_status_t fst = l->fence(l);
    if (st != KNIT_OK)
        goto out;
    if (fst != KNIT_OK || (st = l->get(l, 0, JOB_KEY, line, sizeof(line))) != KNIT_OK) {
        st = fst != KNIT_OK ? fst : st;
        kn_error("%s: the address of knit's store from rank 0: %s", l->name, knit_strerror(st));
        goto out;
    }
    char *jobid = line, *cookie = strchr(line, '!'), *addrs = cookie ? strchr(cookie + 1, '!') : NULL;
    if (!addrs) {
        kn_error("rank 0 could not start knit's store (its message says why)");
        st = KNIT_ERR_PEER;
        goto out;
    }
    *cookie++ = '\0';
    *addrs++ = '\0';
    int node = node_of[rank], first = rank;
    while (first > 0 && node_of[first - 1] == node)
        first--;
    int local_size = 0;
    for (int r = first; r < size && node_of[r] == node; r++)
        local_size++;
    kn_tree_t tree;
    if (kn_tree_init(&tree, nnodes, (int)kn_cfg.switch_fanin) < 0) {
        kn_error("KNIT_SWITCH_FANIN=%lld: must be at least 2", (long long)kn_cfg.switch_fanin);
        st = KNIT_ERR_INVAL;
        goto out;
    }
    int here = 1; /* the agent, and the switches beside it */
    for (int s = 0; s < tree.nswitches; s++)
        here += kn_tree_switch_node(&tree, s) == node;
    if (set(KN_ENV_RANK, "%d", rank) || set(KN_ENV_SIZE, "%d", size) || set(KN_ENV_NODE, "%d", node) ||
        set(KN_ENV_NNODES, "%d", nnodes) || set(KN_ENV_LOCAL_RANK, "%d", rank - first) ||
        set(KN_ENV_LOCAL_SIZE, "%d", local_size) || set(KN_ENV_NODE_SIZES, "%s", sizes) ||
        set(KN_ENV_JOBID, "%s", jobid) || set(KN_ENV_COOKIE, "%s", cookie) || set(KN_ENV_BOOT_ADDR, "%s", addrs) ||
        set(KN_ENV_HOST_PROCS, "%d", local_size) || set(KN_ENV_NSWITCHES, "%d", tree.nswitches) ||
        set(KN_ENV_HOST_DAEMONS, "%d", kn_cfg.offload ? here : 0)) {
        st = KNIT_ERR_NOMEM;
        goto out;
    }
    if (kn_cfg.offload && rank == first)
        st = start_daemons(node, &tree);
out:
    free(lnode);
    free(node_of);
    free(sizes);
    return st;
}

/* ------------------------------------------------------------ watching */

static atomic_int aborting;

static void *watch_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    struct pollfd p[2] = {{fd, POLLRDHUP, 0}, {L.wake[0], POLLIN, 0}};
    for (;;) {
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || p[1].revents || atomic_load(&aborting))
            return NULL;
        if (p[0].revents)
            break;
    }
    const char *why = "knit's store closed this rank's connection: a process of the job failed (see above), "
                      "or rank 0, which runs the store, ended";
    kn_error("%s", why);
    kn_launch_abort(1, why);
}

knit_status_t kn_launch_watch(int fd)
{
    if (!L.l || fd < 0)
        return KNIT_OK;
    if (pipe2(L.wake, O_CLOEXEC) < 0)
        return KNIT_ERR_IO;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the program's signals stay with its threads */
    int e = pthread_create(&L.watcher, NULL, watch_main, (void *)(intptr_t)fd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        kn_error("pthread_create: %s", strerror(e));
        return KNIT_ERR_NOMEM;
    }
    L.watching = 1;
    return KNIT_OK;
}

void kn_launch_unwatch(void)
{
    if (!L.watching)
        return;
    char c = 1;
    if (write(L.wake[1], &c, 1) == 1)
        pthread_join(L.watcher, NULL);
    close(L.wake[0]);
    close(L.wake[1]);
    L.watching = 0;
}

/* Wait for pid up to ns, then SIGKILL it. */
static void reap(pid_t pid, uint64_t ns)
{
    uint64_t end = kn_time_ns() + ns;
    struct timespec ms = {0, 1000000};
    while (waitpid(pid, NULL, WNOHANG) == 0) {
        if (kn_time_ns() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return;
        }
        nanosleep(&ms, NULL);
    }
}

void kn_launch_end(void)
{
    if (!L.l)
        return;
    uint64_t grace = kn_cfg.kill_grace ? kn_cfg.kill_grace : KN_NSEC_PER_SEC;
    for (int i = 0; i < L.ndaemons; i++)
        kill(L.daemons[i], SIGTERM); /* they print their reports (KNIT_STATS) and exit */
    for (int i = 0; i < L.ndaemons; i++)
        reap(L.daemons[i], grace);
    L.ndaemons = 0;
    if (L.serve > 0) /* it ends once every rank has finalized */
        reap(L.serve, kn_cfg.boot_timeout ? kn_cfg.boot_timeout : 60 * KN_NSEC_PER_SEC);
    if (L.serve_in >= 0)
        close(L.serve_in);
    L.serve = 0;
    L.serve_in = -1;
    L.l->finalize(L.l);
    L.l = NULL;
}

void kn_launch_abort(int code, const char *msg)
{
    if (code == 0)
        code = 1;
    if (L.l && !atomic_exchange(&aborting, 1))
        L.l->abort(L.l, code, msg ? msg : "");
    _exit(code & 0xff ? code & 0xff : 1);
}
