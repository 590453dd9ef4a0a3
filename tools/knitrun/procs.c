/*
 * Processes of the job, shared by knitrun (local ranks, launchers) and the
 * proxy (its host's ranks): fork + exec into a process group of their own,
 * stdout/stderr through pipes, reaping, and signalling whole trees.
 *
 * No orphan survives: ranks die with their parent (PR_SET_PDEATHSIG); we
 * are a child subreaper, so what a rank leaves behind becomes our child and
 * kp_signal_orphans reaches it even when it left the rank's process group.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "knitrun.h"
#include "util/env.h"
#include "util/log.h"

static kn_list_t procs = KN_LIST_INIT(procs);

int kp_init(void)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        kn_error("prctl(PR_SET_CHILD_SUBREAPER): %m");
        return -1;
    }
    return 0;
}

static void close_stream(struct kp_pipe *o)
{
    if (o->w.fd < 0)
        return;
    kl_del(&o->w);
    close(o->w.fd);
    o->w.fd = -1;
}

/* Read what the pipe holds now; EOF closes it. */
static void drain(struct kp_pipe *o)
{
    char buf[65536];
    while (o->w.fd >= 0) {
        ssize_t n = read(o->w.fd, buf, sizeof(buf));
        if (n > 0) {
            o->p->on_output(o->p, o->stream, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0)
            kn_error("read from the output of process %d: %m", (int)o->p->pgid);
        close_stream(o);
    }
}

static void output_ready(kl_watch_t *w, uint32_t events)
{
    (void)events;
    drain(kn_container_of(w, struct kp_pipe, w));
}

void kp_close_output(kproc_t *p)
{
    if (!p->out[0].p) /* never started */
        return;
    for (int s = 0; s < 2; s++) {
        drain(&p->out[s]);
        close_stream(&p->out[s]);
    }
}

/* In the child: never returns. */
static void child(int parent, char *const argv[], char *const env[], const char *cwd,
                  int in_fd, const int out_w[2], const cpu_set_t *cpus)
{
    setpgid(0, 0);
    /* die with the parent; if it is already gone, do not run at all */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(127);
    kl_signals_child_reset();
    if (in_fd < 0)
        in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd < 0 || dup2(in_fd, 0) < 0 || dup2(out_w[0], 1) < 0 || dup2(out_w[1], 2) < 0)
        _exit(127);
    for (size_t i = 0; env && env[i]; i++)
        if (putenv(env[i]) != 0)
            _exit(127);
    /* bound before exec: the program's first page is touched where it runs */
    if (cpus && sched_setaffinity(0, sizeof(*cpus), cpus) < 0)
        dprintf(2, "knitrun: cannot bind '%s' to its cpus: %m\n", argv[0]);
    if (cwd && chdir(cwd) < 0) {
        dprintf(2, "knitrun: cannot change to directory '%s': %m\n", cwd);
        _exit(127);
    }
    execvp(argv[0], argv);
    dprintf(2, "knitrun: cannot execute '%s': %m\n", argv[0]);
    _exit(127);
}

int kp_spawn(kproc_t *p, char *const argv[], char *const env[], const char *cwd, int stdin_fd)
{
    int pipes[2][2] = {{-1, -1}, {-1, -1}};
    for (int s = 0; s < 2; s++) {
        p->out[s].w.fd = -1;
        if (pipe2(pipes[s], O_CLOEXEC) < 0) {
            kn_error("pipe2: %m");
            goto err;
        }
    }
    int parent = (int)getpid();
    pid_t pid = fork();
    if (pid < 0) {
        kn_error("fork: %m");
        goto err;
    }
    if (pid == 0) {
        int w[2] = {pipes[0][1], pipes[1][1]};
        child(parent, argv, env, cwd, stdin_fd, w, p->cpus);
    }
    /* also here, so that signalling the group never races the child's setpgid */
    if (setpgid(pid, pid) < 0 && errno != EACCES && errno != ESRCH)
        kn_debug("setpgid(%d): %m", (int)pid);
    p->pid = p->pgid = pid;
    kn_list_push_back(&procs, &p->link);
    for (int s = 0; s < 2; s++) {
        close(pipes[s][1]);
        struct kp_pipe *o = &p->out[s];
        o->p = p;
        o->stream = s + 1;
        o->w.fd = pipes[s][0];
        o->w.fn = output_ready;
        if (fcntl(o->w.fd, F_SETFL, O_NONBLOCK) < 0)
            kn_error("fcntl(O_NONBLOCK): %m");
        if (kl_add(&o->w, EPOLLIN) < 0) {
            close(o->w.fd);
            o->w.fd = -1;
        }
    }
    return 0;
err:
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < 2; e++)
            if (pipes[s][e] >= 0)
                close(pipes[s][e]);
    return -1;
}

int kp_spawn_rank(kproc_t *p, int rank, int local_rank, char *const argv[], char *const env[],
                  const char *cwd)
{
    strv_t e = {0};
    int rc = -1;
    for (size_t i = 0; env && env[i]; i++)
        if (strv_add(&e, env[i]) < 0)
            goto out;
    if (strv_addf(&e, "%s=%d", KN_ENV_RANK, rank) < 0 ||
        strv_addf(&e, "%s=%d", KN_ENV_LOCAL_RANK, local_rank) < 0)
        goto out;
    p->id = rank;
    rc = kp_spawn(p, argv, e.v, cwd, -1);
out:
    strv_free(&e);
    return rc;
}

static kproc_t *find(pid_t pid)
{
    kn_list_t *e;
    kn_list_for_each(e, &procs) {
        kproc_t *p = kn_list_entry(e, kproc_t, link);
        if (p->pid == pid)
            return p;
    }
    return NULL;
}

static void reaped(kproc_t *p, int status)
{
    p->pid = 0;
    kn_list_del(&p->link);
    /* what it wrote before it ended is in the pipes now */
    for (int s = 0; s < 2; s++)
        drain(&p->out[s]);
    p->on_exit(p, status);
}

/* Inside do_exit (the kernel's PF_EXITING, /proc/PID/stat's 9th field),
 * or a zombie already. */
static int ending(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *s = strrchr(buf, ')'); /* after the command name */
    char state;
    unsigned long flags;
    if (!s || sscanf(s + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
        return 0;
    return state == 'Z' || (flags & 0x4); /* PF_EXITING */
}

int kp_reap_ending(kproc_t *p)
{
    if (p->pid <= 0 || !ending(p->pid))
        return 0;
    for (int i = 0; i < 200; i++) {
        int status;
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid) {
            reaped(p, status);
            return 1;
        }
        if (r < 0 && errno != EINTR)
            return 0;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

int kp_reap(void)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid == 0)
            return 1;
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            if (errno != ECHILD)
                kn_error("waitpid: %m");
            return 0;
        }
        kproc_t *p = find(pid);
        if (p)
            reaped(p, status); /* else an adopted orphan */
    }
}

void kp_signal(kproc_t *p, int sig)
{
    /* only while unreaped: the group id cannot have been reused then */
    if (p->pid > 0 && kill(-p->pgid, sig) < 0 && errno != ESRCH)
        kn_error("kill(-%d, %d): %m", (int)p->pgid, sig);
}

void kp_signal_orphans(int sig)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "r");
    if (!f) {
        kn_error("%s: %m", path);
        return;
    }
    int pid;
    while (fscanf(f, "%d", &pid) == 1)
        if (pid > 0 && !find(pid) && kill(pid, sig) < 0 && errno != ESRCH)
            kn_error("kill(%d, %d): %m", pid, sig);
    fclose(f);
}

int strv_add(strv_t *s, const char *str)
{
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n] = strdup(str)))
        return -1;
    s->v[++s->n] = NULL;
    return 0;
}

int strv_addf(strv_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *str;
    int n = vasprintf(&str, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    int rc = strv_add(s, str);
    free(str);
    return rc;
}

void strv_free(strv_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}
