/*
 * Module processes, the daemon's side (sandbox.h; the segment: sbx.h).
 *
 * Life of a host:
 *
 *   LOADING   started (posix_spawn of knit-modhost beside the daemon's
 *             executable, the segment, module file and doorbell as fds
 *             3-5); it loads the module under its filter and runs init,
 *             then sends LOADED, which gives the load's verdict
 *   RUNNING   calls go into the call ring; services come back in the svc
 *             ring and are done here: sends, completions, and the rank
 *             memory services, answered in the reply ring
 *   STOPPING  detached from its instance (unload, fault): told to run
 *             fini and exit, or killed at once
 *   gone      its pidfd said it ended: reaped and freed
 *
 * Whatever the host does, the daemon never waits for it: a record that
 * does not fit waits in a backlog, flushed from the loop.  A host is
 * killed (SIGKILL, which no signal mask stops) and its instance disabled
 * when a call it took, or a handler it says it runs, has run past
 * KNIT_MODULE_BUDGET, when it sends anything malformed, or when a load or
 * a stop takes longer than the budget plus start-up slack.  Its death
 * (a fault, exit, abort, our kill) is told by its pidfd, with the reason
 * read from its wait status and, for a fault, from what its handler left
 * in the segment (an address: never trusted, only printed).
 */
#include "offload/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "offload/daemon_int.h"
#include "offload/sbx.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/log.h"
#include "util/time.h"

extern char **environ;

/* Start-up of a host (exec, dynamic loading) beyond the module's own
 * budget, before a load counts as hung. */
#define START_SLACK_NS (10 * KN_NSEC_PER_SEC)
/* ... and beyond fini's budget before a stop does. */
#define STOP_SLACK_NS (1 * KN_NSEC_PER_SEC)
/* Calls in flight to one host at most (the rest wait in the backlog). */
#define KINDS 1024

enum { S_LOADING, S_RUNNING, S_STOPPING };

typedef struct pend {
    kn_list_t link;
    kn_sbx_rec_t h;
    const char *src;       /* the payload (data, once queued) */
    uint64_t len, off;     /* its length, and how much of it is out */
    int call;              /* a handler call (counted for the budget) */
    char data[];
} pend_t;

struct kn_sbx {
    kn_list_t link;
    kn_inst_t *in;             /* NULL once detached */
    int state;
    pid_t pid;
    int pidfd, bell, segfd;
    kn_sbx_seg_t *seg;
    kn_sbx_end_t call, reply, svc;
    kn_list_t backlog[2];      /* call, reply */
    /* budget: calls posted, the host's count of calls done as last seen,
     * and when that count last moved (or the first call was posted); the
     * host's processor time then (cpu), its word of a handler running as
     * last seen, and when that word changed, in both clocks */
    uint64_t posted, done, clock, cpu;
    uint64_t busy, busy_wall, busy_cpu;
    uint64_t next_check;       /* the words are looked at from then on */
    clockid_t cpuclk;          /* the host's processor-time clock */
    int cpuclk_ok;
    uint8_t kind[KINDS];       /* KN_SBX_W_REQUEST or _MESSAGE: of call n at n % KINDS */
    uint64_t deadline;         /* LOADING, STOPPING: kill after */
    int killed;                /* we killed it */
    char why[KN_OFF_ERR_MAX];  /* and why */
    kn_sbx_rx_t rx;            /* what the host sends, joined */
    uint32_t gone_id;          /* stopping after an unload: kn_d_inst_gone(it) when ended */
    int probe;                 /* a probe: nobody to tell but the prober */
    int counted;               /* in nlive */
    int32_t probe_status;      /* its verdict */
};

static kn_list_t hosts = {&hosts, &hosts};
static int nlive;      /* hosts started and not reaped */
static int cpus = -1;  /* cpus of the job on this host (util/cpus.h) */

/*
 * Spinning.  An idle host polls its call ring for KNIT_AGENT_SPIN, as its
 * daemon does, before it sleeps: a call then reaches it in a cache miss.
 * That pays only where the host has a cpu of its own: on a node whose
 * ranks, daemon and hosts outnumber its cpus, a polling host takes the cpu
 * that the daemon or a rank needs, and every call waits for a time slice
 * to end (seen: 140 us a request with 3 processes on 2 cpus).  There a
 * host does not poll, and the daemon, while a call of such a host is out,
 * yields its cpu instead of polling (kn_sbx_defer), so that the host gets
 * a cpu at once; both yield for KNIT_YIELD_TIME before they sleep, as
 * waiting ranks do, because waking a process that sleeps costs far more
 * here (70 us and more on this virtual machine) than a yield.
 */
static void set_spin(void)
{
    if (cpus < 0)
        cpus = kn_cpus_host();
    int ranks = kn_dmn.host_procs > 0 ? kn_dmn.host_procs : kn_dmn.g.local_size;
    int poll = kn_cfg.module_poll == 0 ? ranks + 1 + nlive <= cpus : kn_cfg.module_poll == 1;
    uint64_t spin = poll ? kn_dmn.spin : 0;
    kn_list_t *e;
    kn_list_for_each(e, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        __atomic_store_n(&s->seg->spin_ns, spin, __ATOMIC_RELAXED);
    }
}

int kn_sbx_defer(void)
{
    kn_list_t *e;
    kn_list_for_each(e, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        if (!s->killed && s->posted > s->done && !s->seg->spin_ns)
            return 1;
    }
    return 0;
}

/* by KN_SBX_W_* */
static const char *kind_name[] = {"on_request", "on_message", "on_timer", "fini", "init",
                                  "the module's constructors", KNIT_MOD_SYMBOL "() or its descriptor", "on_header"};

/* ------------------------------------------------------------ helpers */

static int futex_wake(uint32_t *w)
{
    return (int)syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void wake_host(kn_sbx_t *s)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&s->seg->host_sleeping, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&s->seg->host_wake, 1, __ATOMIC_RELEASE);
        futex_wake(&s->seg->host_wake);
    }
}

/* Push what fits of p's payload (from p->off) as records: how many went
 * (*all: the whole payload is out). */
static int put_frags(kn_sbx_t *s, kn_sbx_end_t *e, pend_t *p, int *all)
{
    int n = 0;
    *all = 0;
    do {
        uint64_t k = KN_MIN(p->len - p->off, (uint64_t)KN_SBX_FRAG);
        kn_sbx_rec_t h = p->h;
        h.flags = p->off + k < p->len ? KN_SBX_F_MORE : 0;
        if (p->call && p->off == 0 && s->posted - s->done >= KINDS)
            return n; /* enough calls in flight */
        if (!kn_sbx_put(e, &h, p->src + p->off, (uint32_t)k))
            return n;
        if (p->call && p->off == 0) {
            if (s->posted == s->done) {
                s->clock = kn_time_ns();
                s->cpu = UINT64_MAX; /* read at the next look */
            }
            s->kind[s->posted % KINDS] = (uint8_t)p->h.c;
            s->posted++;
        }
        p->off += k;
        n++;
    } while (p->off < p->len);
    *all = 1;
    return n;
}

/* Queue a record (any payload size) for the host, in order: ring 0 call,
 * 1 reply.  Never blocks: what does not fit waits in the backlog. */
static void post(kn_sbx_t *s, int which, const kn_sbx_rec_t *h, const void *data, uint64_t len, int call)
{
    pend_t tmp = {.h = *h, .src = data, .len = len, .call = call};
    if (kn_list_empty(&s->backlog[which])) {
        int all;
        int n = put_frags(s, which ? &s->reply : &s->call, &tmp, &all);
        if (n)
            wake_host(s);
        if (all)
            return;
    }
    pend_t *p = malloc(sizeof(*p) + len);
    if (!p) {
        kn_error("out of memory for a %llu-byte call to module '%s'", (unsigned long long)len, s->seg->name);
        return;
    }
    *p = tmp;
    if (len)
        memcpy(p->data, data, len);
    p->src = p->data;
    kn_list_push_back(&s->backlog[which], &p->link);
}

static int flush(kn_sbx_t *s)
{
    int n = 0;
    for (int which = 0; which < 2; which++) {
        kn_sbx_end_t *e = which ? &s->reply : &s->call;
        while (!kn_list_empty(&s->backlog[which])) {
            pend_t *p = kn_list_first(&s->backlog[which], pend_t, link);
            int all;
            n += put_frags(s, e, p, &all);
            if (!all)
                break;
            kn_list_del(&p->link);
            free(p);
        }
    }
    if (n)
        wake_host(s);
    return n;
}

static void sbx_free(kn_sbx_t *s)
{
    for (int which = 0; which < 2; which++)
        while (!kn_list_empty(&s->backlog[which])) {
            pend_t *p = kn_list_first(&s->backlog[which], pend_t, link);
            kn_list_del(&p->link);
            free(p);
        }
    if (s->pidfd >= 0) {
        kn_d_unwatch(s->pidfd);
        close(s->pidfd);
    }
    if (s->bell >= 0) {
        kn_d_unwatch(s->bell);
        close(s->bell);
    }
    if (s->segfd >= 0)
        close(s->segfd);
    if (s->seg)
        munmap(s->seg, kn_sbx_seg_size());
    kn_sbx_rx_free(&s->rx);
    kn_list_del(&s->link);
    if (s->counted) {
        nlive--;
        set_spin();
    }
    free(s);
}

static void kill_host(kn_sbx_t *s, const char *why)
{
    if (!s->killed) {
        s->killed = 1;
        snprintf(s->why, sizeof(s->why), "%s", why);
    }
    if (s->pid > 0)
        kill(s->pid, SIGKILL);
}

/* What ended the host, for the messages. */
static void death_text(kn_sbx_t *s, int status, char *buf, size_t len)
{
    if (s->killed) {
        snprintf(buf, len, "%.90s", s->why);
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        kn_sbx_fault_t f = s->seg->fault; /* the host's own word: only printed */
        void *addr = f.sig == sig ? (void *)(uintptr_t)f.addr : NULL;
        if (sig == SIGABRT)
            snprintf(buf, len, "SIGABRT (abort() called)");
        else if (sig == SIGSYS)
            snprintf(buf, len, "SIGSYS (a system call the module filter forbids)");
        else if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGILL) && f.sig != sig)
            snprintf(buf, len, "SIG%s (address unknown: the module changed the handling of the signal)",
                     sigabbrev_np(sig));
        else
            kn_d_sig_text(sig, addr, buf, len);
    } else if (WIFEXITED(status)) {
        snprintf(buf, len, "its process exited with status %d (exit or _exit called)", WEXITSTATUS(status));
    } else {
        snprintf(buf, len, "its process ended (wait status %#x)", status);
    }
}

/* Which handler the host was in: the oldest call it has not finished, or
 * what it says it runs (its timers and messages to itself). */
static const char *running(kn_sbx_t *s)
{
    if (s->state == S_LOADING) {
        uint32_t w = __atomic_load_n(&s->seg->busy_what, __ATOMIC_RELAXED);
        return w >= KN_SBX_W_INIT && w < KN_ARRAY_SIZE(kind_name) ? kind_name[w] : "init";
    }
    if (s->posted > s->done)
        return kind_name[s->kind[s->done % KINDS] == KN_SBX_W_MESSAGE ? KN_SBX_W_MESSAGE : KN_SBX_W_REQUEST];
    uint32_t w = __atomic_load_n(&s->seg->busy_what, __ATOMIC_RELAXED);
    return w < KN_ARRAY_SIZE(kind_name) ? kind_name[w] : "a handler";
}

static void on_death(int fd, uint32_t ev, void *arg);
static void on_bell(int fd, uint32_t ev, void *arg);

/* ------------------------------------------------------------ start */

/* knit-modhost lives beside the daemon's executable. */
static int host_path(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return snprintf(buf, len, "%s/knit-modhost", exe) < (int)len ? 0 : -1;
}

static int high_fd(int fd)
{
    if (fd < 0)
        return -1;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 16);
    close(fd);
    return h;
}

static int32_t spawn(kn_sbx_t *s, const char *name, const void *bytes, uint64_t len, char *err, size_t elen)
{
    char path[PATH_MAX];
    if (host_path(path, sizeof(path)) < 0 || access(path, X_OK) < 0) {
        snprintf(err, elen, "no knit-modhost beside the daemon (%s)", path);
        return KNIT_ERR_NOT_FOUND;
    }
    s->segfd = high_fd(memfd_create("knit-sandbox", MFD_CLOEXEC));
    int modfd = high_fd(memfd_create(name, MFD_CLOEXEC));
    s->bell = high_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    size_t size = kn_sbx_seg_size();
    if (s->segfd < 0 || modfd < 0 || s->bell < 0 || ftruncate(s->segfd, (off_t)size) < 0) {
        snprintf(err, elen, "memfd/eventfd: %s", strerror(errno));
        if (modfd >= 0)
            close(modfd);
        return KNIT_ERR_IO;
    }
    for (uint64_t off = 0; off < len;) {
        ssize_t w = write(modfd, (const char *)bytes + off, len - off);
        if (w <= 0 && errno != EINTR) {
            snprintf(err, elen, "writing the module file: %s", strerror(errno));
            close(modfd);
            return KNIT_ERR_IO;
        }
        off += w > 0 ? (uint64_t)w : 0;
    }
    s->seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->segfd, 0);
    if (s->seg == MAP_FAILED) {
        s->seg = NULL;
        snprintf(err, elen, "mmap: %s", strerror(errno));
        close(modfd);
        return KNIT_ERR_IO;
    }
    kn_sbx_seg_init(s->seg);
    kn_sbx_end_init(&s->call, s->seg, KN_SBX_CALL);
    kn_sbx_end_init(&s->reply, s->seg, KN_SBX_REPLY);
    kn_sbx_end_init(&s->svc, s->seg, KN_SBX_SVC);
    snprintf(s->seg->name, sizeof(s->seg->name), "%s", name);
    kn_d_self_name(s->seg->who, sizeof(s->seg->who));
    s->seg->spin_ns = kn_dmn.spin;
    s->seg->yield_ns = kn_cfg.yield_time;
    s->seg->log_level = kn_log_level;
    s->seg->daemon_pid = getpid();
    s->seg->probe = (uint32_t)s->probe;
    if (s->in)
        s->seg->geo = s->in->geo;

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, s->segfd, KN_SBX_FD_SEG);
    posix_spawn_file_actions_adddup2(&fa, modfd, KN_SBX_FD_MODULE);
    posix_spawn_file_actions_adddup2(&fa, s->bell, KN_SBX_FD_BELL);
    posix_spawnattr_init(&at);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGHUP);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {"knit-modhost", NULL};
    int rc = posix_spawn(&s->pid, path, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(modfd);
    if (rc) {
        s->pid = 0;
        snprintf(err, elen, "starting %s: %s", path, strerror(rc));
        return KNIT_ERR_IO;
    }
    s->cpuclk_ok = clock_getcpuclockid(s->pid, &s->cpuclk) == 0;
    s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
    if (s->pidfd < 0) {
        snprintf(err, elen, "pidfd_open: %s", strerror(errno));
        kill_host(s, "pidfd_open failed");
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
        return KNIT_ERR_IO;
    }
    return KNIT_OK;
}

static kn_sbx_t *sbx_new(kn_inst_t *in)
{
    kn_sbx_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->in = in;
    s->pidfd = s->bell = s->segfd = -1;
    kn_list_init(&s->backlog[0]);
    kn_list_init(&s->backlog[1]);
    kn_list_init(&s->link);
    return s;
}

int32_t kn_sbx_start(kn_inst_t *in, const void *bytes, uint64_t len, char *msg, size_t mlen)
{
    char self[32], err[KN_OFF_ERR_MAX];
    kn_d_self_name(self, sizeof(self));
    int32_t st = kn_mod_check_elf(bytes, len, err, sizeof(err));
    if (st != KNIT_OK) {
        snprintf(msg, mlen, "%s refused %s: %.150s", self, in->name, err);
        return st;
    }
    kn_sbx_t *s = sbx_new(in);
    if (!s) {
        snprintf(msg, mlen, "%s: out of memory", self);
        return KNIT_ERR_NOMEM;
    }
    kn_list_push_back(&hosts, &s->link);
    st = spawn(s, in->name, bytes, len, err, sizeof(err));
    if (st != KNIT_OK || kn_d_watch(s->pidfd, on_death, s) < 0 || kn_d_watch(s->bell, on_bell, s) < 0) {
        snprintf(msg, mlen, "%s refused %s: %.150s", self, in->name, st != KNIT_OK ? err : "too many watches");
        if (s->pid > 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
        }
        sbx_free(s);
        return st != KNIT_OK ? st : KNIT_ERR_AGAIN;
    }
    s->state = S_LOADING;
    s->deadline = kn_time_ns() + kn_dmn.budget + START_SLACK_NS;
    in->sbx = s;
    s->counted = 1;
    nlive++;
    set_spin();
    return KNIT_INPROGRESS;
}

/* ------------------------------------------------------------ calls */

void kn_sbx_request(kn_sbx_t *s, uint64_t token, int32_t rank, int32_t node, const void *args, uint64_t len)
{
    kn_sbx_rec_t h = {.type = KN_SBX_C_REQUEST, .a = token, .b = (uint32_t)rank | (uint64_t)(uint32_t)node << 32,
                      .c = KN_SBX_W_REQUEST};
    post(s, 0, &h, args, len, 1);
}

void kn_sbx_message(kn_sbx_t *s, int32_t from, const void *p, uint64_t len, uint64_t hlen)
{
    kn_sbx_rec_t h = {.type = KN_SBX_C_MESSAGE, .a = (uint32_t)from, .b = hlen,
                      .c = hlen ? KN_SBX_W_HEADER : KN_SBX_W_MESSAGE};
    post(s, 0, &h, p, len, 1);
}

int kn_sbx_stop(kn_sbx_t *s, int call_fini, uint32_t gone_id)
{
    s->in = NULL;
    if (s->state == S_STOPPING || !s->pid)
        return 0;
    s->state = S_STOPPING;
    s->gone_id = gone_id;
    if (!call_fini) {
        kill_host(s, "stopped");
    } else {
        kn_sbx_rec_t h = {.type = KN_SBX_C_STOP, .a = 1, .c = KN_SBX_W_FINI};
        post(s, 0, &h, NULL, 0, 0);
        s->deadline = kn_time_ns() + kn_dmn.budget + STOP_SLACK_NS;
    }
    return gone_id != 0;
}

/* ------------------------------------------------------------ services */

/* The host broke the protocol: it is killed, its module disabled. */
static void malformed(kn_sbx_t *s, const char *what)
{
    char why[KN_OFF_ERR_MAX];
    snprintf(why, sizeof(why), "sent malformed data to the daemon (%s)", what);
    kill_host(s, why);
}

static void reply(kn_sbx_t *s, int32_t status, const void *data, uint64_t len)
{
    kn_sbx_rec_t h = {.type = KN_SBX_R_REPLY, .a = (uint32_t)status};
    post(s, 1, &h, data, len, 0);
}

/* The host's verdict on its load (kn_sbx_svc_ok checked its form). */
static void loaded(kn_sbx_t *s, const kn_sbx_rec_t *h, const char *text)
{
    char self[32], msg[KN_OFF_ERR_MAX];
    if (s->state != S_LOADING) {
        malformed(s, "a second load verdict");
        return;
    }
    kn_d_self_name(self, sizeof(self));
    int32_t st = (int32_t)(uint32_t)h->a;
    s->state = S_RUNNING;
    if (s->probe) {
        s->probe_status = st;
        snprintf(s->why, sizeof(s->why), "%.150s", text);
        return;
    }
    kn_inst_t *in = s->in;
    if (!in)
        return;
    if (st == KNIT_OK) {
        snprintf(in->name, sizeof(in->name), "%.31s", text);
        in->has = (unsigned)h->b & (KN_SBX_HAS_MESSAGE | KN_SBX_HAS_TIMER | KN_SBX_HAS_FINI | KN_SBX_HAS_HEADER);
        kn_debug("module '%s' loaded as id %u (pid %d)", in->name, in->id, (int)s->pid);
        kn_d_load_verdict(in, KNIT_OK, "");
        return;
    }
    snprintf(msg, sizeof(msg), "%s refused %s: %.120s", self, in->name, text);
    kn_d_load_verdict(in, st, msg); /* destroys it: stops this host */
}

/* One whole svc record (fragments joined): do it. */
static void serve(kn_sbx_t *s, const kn_sbx_rec_t *h, const char *p, uint64_t len)
{
    if (h->type == KN_SBX_S_LOADED) {
        loaded(s, h, p);
        return;
    }
    kn_inst_t *in = s->in;
    if (s->state != S_RUNNING || !in) {
        if (h->type == KN_SBX_S_READ || h->type == KN_SBX_S_WRITE || h->type == KN_SBX_S_DELIVER)
            reply(s, KNIT_ERR_STATE, NULL, 0);
        return; /* stopping: what it still asks goes nowhere */
    }
    int32_t st;
    switch (h->type) {
    case KN_SBX_S_SEND: /* kn_sbx_svc_ok: b <= len */
        kn_d_svc_send_hdr(in, (int32_t)(uint32_t)h->a, p, h->b, p + h->b, len - h->b);
        return;
    case KN_SBX_S_MULTICAST:
        kn_d_svc_multicast(in, p, len);
        return;
    case KN_SBX_S_COMPLETE:
        kn_d_svc_complete(in, h->a, (int32_t)(uint32_t)h->b, p, len);
        return;
    case KN_SBX_S_READ: {
        if (kn_dmn.g.is_switch || !kn_dmn.hooks || !kn_dmn.hooks->read_rank) {
            reply(s, KNIT_ERR_NOT_SUPPORTED, NULL, 0);
            return;
        }
        char *buf = malloc(h->c ? h->c : 1);
        st = buf ? kn_dmn.hooks->read_rank(in, (int32_t)(uint32_t)h->a, buf, h->b, h->c) : KNIT_ERR_NOMEM;
        reply(s, st, buf, st == KNIT_OK ? h->c : 0);
        free(buf);
        return;
    }
    case KN_SBX_S_WRITE:
    case KN_SBX_S_DELIVER:
        if (kn_dmn.g.is_switch || !kn_dmn.hooks || !kn_dmn.hooks->write_rank) {
            reply(s, KNIT_ERR_NOT_SUPPORTED, NULL, 0);
            return;
        }
        st = h->type == KN_SBX_S_WRITE ? kn_dmn.hooks->write_rank(in, (int32_t)(uint32_t)h->a, h->b, p, len)
                                       : kn_dmn.hooks->deliver(in, (int32_t)(uint32_t)h->a, p, len);
        reply(s, st, NULL, 0);
        return;
    }
    malformed(s, "unknown record");
}

/* The host's requests: at most a few records per round (the others' turn). */
static int serve_some(kn_sbx_t *s)
{
    int n = 0;
    /* an answer waiting for room is sent before the next request is
     * taken: one at most waits (the host asks one at a time) */
    while (n < 64 && !s->killed && kn_list_empty(&s->backlog[1])) {
        const char *why;
        int r = kn_sbx_take(&s->svc, &s->rx, &why);
        if (r == 0 && !kn_sbx_pending(&s->svc))
            break;
        n++;
        if (r < 0 || (r > 0 && !kn_sbx_svc_ok(&s->rx.h, s->rx.buf, s->rx.len, &why))) {
            malformed(s, why);
            break;
        }
        if (r > 0)
            serve(s, &s->rx.h, s->rx.buf, s->rx.len);
    }
    return n;
}

/* The processor time the host has used (ns); without its clock, the time
 * on the wall, which is never less. */
static uint64_t host_cpu(kn_sbx_t *s, uint64_t now)
{
    struct timespec ts;
    if (!s->cpuclk_ok || clock_gettime(s->cpuclk, &ts) < 0)
        return now;
    return (uint64_t)ts.tv_sec * KN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * Budgets and deadlines: 1 when the host was killed.  The budget counts
 * the processor time the host used while a call was out (no call done
 * since, or its own word of a handler running unchanged), so that a
 * machine too busy to run it, or a paused virtual machine, kills no
 * module; a handler that waits instead of running (it sleeps, or waits
 * for a futex) is stopped when it has been out for KN_D_WAIT_BUDGETS
 * budgets on the wall.  The host's words and its clock are looked at
 * every eighth of a budget (a system call), so the processor time is
 * counted from the first look that saw the call: a handler is never
 * stopped before it used the whole budget.
 */
static int check_time(kn_sbx_t *s, uint64_t now)
{
    if (s->killed)
        return 0;
    char why[KN_OFF_ERR_MAX];
    if (s->state != S_RUNNING) {
        if (now > s->deadline) {
            snprintf(why, sizeof(why), "time budget exceeded (KNIT_MODULE_BUDGET=%.0f ms, and %.0f s to start)",
                     (double)kn_dmn.budget / 1e6, (double)START_SLACK_NS / 1e9);
            kill_host(s, why);
            return 1;
        }
        return 0;
    }
    if (!kn_dmn.budget || now < s->next_check)
        return 0;
    s->next_check = now + kn_dmn.budget / 8;
    uint64_t cpu = host_cpu(s, now);
    uint64_t done = __atomic_load_n(&s->seg->done_calls, __ATOMIC_ACQUIRE);
    if (done > s->posted)
        done = s->posted; /* nonsense from the host: believe what we know */
    if (done != s->done) {
        s->done = done;
        s->clock = now;
        s->cpu = cpu;
    } else if (s->cpu == UINT64_MAX) {
        s->cpu = cpu; /* the first look since the call was posted */
    }
    uint64_t busy = __atomic_load_n(&s->seg->busy_since, __ATOMIC_RELAXED);
    if (busy != s->busy) {
        s->busy = busy;
        s->busy_wall = now;
        s->busy_cpu = cpu;
    }
    int out = s->posted > s->done, running = busy != 0;
    uint64_t wait = KN_D_WAIT_BUDGETS * kn_dmn.budget;
    if ((out && cpu - s->cpu > kn_dmn.budget) || (running && cpu - s->busy_cpu > kn_dmn.budget)) {
        snprintf(why, sizeof(why), "time budget exceeded (KNIT_MODULE_BUDGET=%.0f ms of processor time)",
                 (double)kn_dmn.budget / 1e6);
        kill_host(s, why);
        return 1;
    }
    if ((out && now - s->clock > wait) || (running && now - s->busy_wall > wait)) {
        snprintf(why, sizeof(why), "time budget exceeded (out for %.0f ms, %d times KNIT_MODULE_BUDGET)",
                 (double)wait / 1e6, KN_D_WAIT_BUDGETS);
        kill_host(s, why);
        return 1;
    }
    return 0;
}

int kn_sbx_poll(void)
{
    if (kn_list_empty(&hosts))
        return 0;
    int n = 0;
    uint64_t now = kn_time_ns();
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        if (s->killed)
            continue; /* its pidfd tells when it is gone */
        n += flush(s);
        n += serve_some(s);
        n += check_time(s, now);
    }
    return n;
}

int kn_sbx_want_sleep(void)
{
    kn_list_t *e;
    kn_list_for_each(e, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        __atomic_store_n(&s->seg->daemon_sleeping, 1, __ATOMIC_RELAXED);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    kn_list_for_each(e, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        if (!s->killed && (kn_sbx_pending(&s->svc) || !kn_list_empty(&s->backlog[0]) ||
                           (!kn_list_empty(&s->backlog[1]))))
            return 0;
    }
    return 1;
}

void kn_sbx_woke(void)
{
    kn_list_t *e;
    kn_list_for_each(e, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        __atomic_store_n(&s->seg->daemon_sleeping, 0, __ATOMIC_RELAXED);
    }
}

int kn_sbx_timeout_ms(void)
{
    uint64_t now = kn_time_ns(), next = UINT64_MAX;
    kn_list_t *e;
    kn_list_for_each(e, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        if (s->killed)
            continue;
        if (s->state != S_RUNNING)
            next = KN_MIN(next, s->deadline);
        else if (kn_dmn.budget && (s->posted > s->done || s->seg->busy_since))
            next = KN_MIN(next, now + kn_dmn.budget / 4); /* processor time: looked at now and then */
        if (!kn_list_empty(&s->backlog[0]) || !kn_list_empty(&s->backlog[1]))
            next = KN_MIN(next, now + KN_NSEC_PER_MSEC); /* room comes without a ring */
    }
    if (next == UINT64_MAX)
        return -1;
    return next <= now ? 0 : (int)KN_MIN((next - now + KN_NSEC_PER_MSEC - 1) / KN_NSEC_PER_MSEC, 60000);
}

uint64_t kn_sbx_alloc_bytes(void)
{
    uint64_t n = 0;
    kn_list_t *e;
    kn_list_for_each(e, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        if (s->in)
            n += __atomic_load_n(&s->seg->alloc_bytes, __ATOMIC_RELAXED);
    }
    return n;
}

void kn_sbx_kill_all(void)
{
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &hosts) {
        kn_sbx_t *s = kn_list_entry(e, kn_sbx_t, link);
        if (s->pid > 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            s->pid = 0;
        }
        sbx_free(s);
    }
}

/* ------------------------------------------------------------ events */

static void on_bell(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    uint64_t v;
    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        kn_debug("module doorbell: %m");
}

/* The host is gone: reap it, and tell whom it concerns. */
static void on_death(int fd, uint32_t ev, void *arg)
{
    (void)fd, (void)ev;
    kn_sbx_t *s = arg;
    int status = 0;
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r == 0)
        return; /* not yet */
    s->pid = 0;
    serve_some(s); /* what it said before it ended: its load verdict, say */
    kn_inst_t *in = s->in;
    if (in && !s->probe) {
        char why[KN_OFF_ERR_MAX / 2], self[32], msg[KN_OFF_ERR_MAX];
        death_text(s, status, why, sizeof(why));
        kn_d_self_name(self, sizeof(self));
        if (s->state == S_LOADING) {
            snprintf(msg, sizeof(msg), "%s refused %s: %s in %s", self, in->name, why, running(s));
            s->in = NULL;
            kn_d_load_verdict(in, KNIT_ERR_MODULE_FAULT, msg);
        } else {
            snprintf(msg, sizeof(msg), "module '%s' disabled: %s in %s at %s", in->name, why, running(s), self);
            kn_error("%s", msg);
            s->in = NULL;
            in->sbx = NULL;
            kn_d_inst_disable(in, msg, 1);
        }
    }
    uint32_t gone = s->gone_id;
    sbx_free(s);
    if (gone)
        kn_d_inst_gone(gone);
}

/* ------------------------------------------------------------ probe */

int32_t kn_sbx_probe(const char *name, const void *bytes, uint64_t len, char *msg, size_t mlen)
{
    int32_t st = kn_mod_check_elf(bytes, len, msg, mlen);
    if (st != KNIT_OK)
        return st;
    kn_sbx_t *s = sbx_new(NULL);
    if (!s) {
        snprintf(msg, mlen, "out of memory");
        return KNIT_ERR_NOMEM;
    }
    s->probe = 1;
    st = spawn(s, name, bytes, len, msg, mlen);
    if (st != KNIT_OK) {
        sbx_free(s);
        return st;
    }
    s->state = S_LOADING;
    uint64_t deadline = kn_time_ns() + kn_dmn.budget + START_SLACK_NS;
    int status = 0;
    /* a short synchronous wait: in-process loads are synchronous anyway */
    for (;;) {
        serve_some(s);
        if (s->state == S_RUNNING || s->killed)
            break;
        uint64_t now = kn_time_ns();
        if (now > deadline) {
            kill_host(s, "time budget exceeded");
            break;
        }
        struct pollfd pf[2] = {{.fd = s->pidfd, .events = POLLIN}, {.fd = s->bell, .events = POLLIN}};
        __atomic_store_n(&s->seg->daemon_sleeping, 1, __ATOMIC_SEQ_CST);
        if (!kn_sbx_pending(&s->svc))
            poll(pf, 2, (int)KN_MIN((deadline - now) / KN_NSEC_PER_MSEC + 1, 100));
        __atomic_store_n(&s->seg->daemon_sleeping, 0, __ATOMIC_RELAXED);
        on_bell(s->bell, 0, NULL);
        if (pf[0].revents) {
            if (waitpid(s->pid, &status, 0) == s->pid)
                s->pid = 0;
            serve_some(s); /* a verdict sent just before it exited */
            break;
        }
    }
    if (s->pid > 0) {
        if (s->state == S_RUNNING)
            s->deadline = kn_time_ns() + START_SLACK_NS; /* it exits by itself after the verdict */
        while (s->pid > 0 && waitpid(s->pid, &status, WNOHANG) == 0) {
            if (s->killed || kn_time_ns() > s->deadline)
                kill(s->pid, SIGKILL);
            struct pollfd pf = {.fd = s->pidfd, .events = POLLIN};
            poll(&pf, 1, 10);
        }
        s->pid = 0;
    }
    if (s->state == S_RUNNING && !s->killed) {
        st = s->probe_status;
        if (st > 0)
            st = KNIT_ERR_INVAL;
        if (st != KNIT_OK)
            snprintf(msg, mlen, "%s", s->why);
    } else {
        char why[KN_OFF_ERR_MAX / 2];
        death_text(s, status, why, sizeof(why));
        snprintf(msg, mlen, "%s in %s", why, running(s));
        st = KNIT_ERR_MODULE_FAULT;
    }
    sbx_free(s);
    return st;
}
