/* The event loop: epoll, a signalfd for the signals knitrun acts on, and
 * timerfds.  One event is dispatched per epoll_wait, so a handler may
 * close any watch without another pending event pointing at freed memory. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "knitrun.h"
#include "util/log.h"

static int epfd = -1;
static kl_watch_t sig_watch;
static void (*sig_fn)(int);
static const int handled_signals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};

int kl_init(void)
{
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) {
        kn_error("epoll_create1: %m");
        return -1;
    }
    return 0;
}

static int ctl(int op, kl_watch_t *w, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};
    if (epoll_ctl(epfd, op, w->fd, &ev) < 0) {
        kn_error("epoll_ctl(fd %d): %m", w->fd);
        return -1;
    }
    return 0;
}

int kl_add(kl_watch_t *w, uint32_t events)
{
    return ctl(EPOLL_CTL_ADD, w, events);
}

int kl_mod(kl_watch_t *w, uint32_t events)
{
    return ctl(EPOLL_CTL_MOD, w, events);
}

void kl_del(kl_watch_t *w)
{
    if (w->fd >= 0 && epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL) < 0 && errno != EBADF &&
        errno != ENOENT)
        kn_error("epoll_ctl(del fd %d): %m", w->fd);
}

int kl_run_once(void)
{
    kc_reap_dead();
    struct epoll_event ev;
    int n = epoll_wait(epfd, &ev, 1, -1);
    if (n < 0) {
        if (errno == EINTR)
            return 0;
        kn_error("epoll_wait: %m");
        return -1;
    }
    if (n == 1) {
        kl_watch_t *w = ev.data.ptr;
        w->fn(w, ev.events);
    }
    return 0;
}

static void timer_ready(kl_watch_t *w, uint32_t events)
{
    (void)events;
    kl_timer_t *t = (kl_timer_t *)w;
    uint64_t expirations;
    if (read(w->fd, &expirations, sizeof(expirations)) < 0) {
        if (errno != EAGAIN)
            kn_error("timerfd read: %m");
        return;
    }
    t->fn(t);
}

int kl_timer_init(kl_timer_t *t, void (*fn)(kl_timer_t *))
{
    t->fn = fn;
    t->w.fn = timer_ready;
    t->w.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (t->w.fd < 0) {
        kn_error("timerfd_create: %m");
        return -1;
    }
    return kl_add(&t->w, EPOLLIN);
}

int kl_timer_arm(kl_timer_t *t, uint64_t ns)
{
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(ns / 1000000000ull);
    its.it_value.tv_nsec = (long)(ns % 1000000000ull);
    if (timerfd_settime(t->w.fd, 0, &its, NULL) < 0) {
        kn_error("timerfd_settime: %m");
        return -1;
    }
    return 0;
}

static void signal_ready(kl_watch_t *w, uint32_t events)
{
    (void)events;
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(w->fd, &si, sizeof(si));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                kn_error("signalfd read: %m");
            return;
        }
        if (n != sizeof(si))
            return;
        sig_fn((int)si.ssi_signo);
    }
}

int kl_signals_init(void (*fn)(int))
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(handled_signals) / sizeof(handled_signals[0]); i++) {
        sigaddset(&set, handled_signals[i]);
        /* a background job starts with SIGINT ignored; blocked signals are
         * queued anyway, but keep the dispositions plain */
        signal(handled_signals[i], SIG_DFL);
    }
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
        kn_error("sigprocmask: %m");
        return -1;
    }
    sig_fn = fn;
    sig_watch.fn = signal_ready;
    sig_watch.fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sig_watch.fd < 0) {
        kn_error("signalfd: %m");
        return -1;
    }
    return kl_add(&sig_watch, EPOLLIN);
}

void kl_signals_child_reset(void)
{
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
}
