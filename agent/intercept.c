/*
 * Calls that module code must not make inside a daemon
 * (KNIT_MODULE_ISOLATION=inprocess), intercepted.  The daemons' executables
 * (knit-agent, knit-switch: mk/offload.mk exports these symbols from
 * them) define exit, _exit, _Exit, abort, pthread_create, sigprocmask,
 * pthread_sigmask, sigaction and signal; a module's references bind to
 * these first.  Outside module code each one does what libc's does.  In
 * module code (a handler, or the module's constructors):
 *
 *   exit, _exit, _Exit, abort    end the call as a fault: the module is
 *                                disabled, the daemon goes on
 *   pthread_create               fails with EPERM (a module thread would
 *                                run outside every protection)
 *   sigprocmask, pthread_sigmask the fault signals and SIGALRM (the time
 *                                budget) are never blocked
 *   sigaction, signal            those signals' handling is not changed
 *                                (EPERM)
 *
 * This stops the calls a module makes through libc, not system calls it
 * makes itself: process isolation (the default) stops those too.  Not in
 * sanitizer builds, whose runtime intercepts the same calls.
 */
#if !defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "offload/daemon.h"

static int guarded(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGALRM;
}

static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

void exit(int status)
{
    kn_d_module_ends("exit", status);
    void (*real)(int) = (void (*)(int))next("exit");
    real(status);
    __builtin_unreachable();
}

void _exit(int status)
{
    kn_d_module_ends("_exit", status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

void _Exit(int status)
{
    kn_d_module_ends("_Exit", status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

void abort(void)
{
    kn_d_module_ends("abort", -1);
    void (*real)(void) = (void (*)(void))next("abort");
    real();
    __builtin_unreachable();
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (kn_d_in_module())
        return EPERM;
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))next("pthread_create");
    return real(t, attr, fn, arg);
}

/* The set without the guarded signals, where module code blocks them. */
static const sigset_t *unguarded(int how, const sigset_t *set, sigset_t *copy)
{
    if (!set || how == SIG_UNBLOCK || !kn_d_in_module())
        return set;
    *copy = *set;
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM};
    for (unsigned i = 0; i < sizeof(sigs) / sizeof(*sigs); i++)
        sigdelset(copy, sigs[i]);
    return copy;
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;
    int (*real)(int, const sigset_t *, sigset_t *) =
        (int (*)(int, const sigset_t *, sigset_t *))next("pthread_sigmask");
    return real(how, unguarded(how, set, &copy), old);
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;
    int (*real)(int, const sigset_t *, sigset_t *) = (int (*)(int, const sigset_t *, sigset_t *))next("sigprocmask");
    return real(how, unguarded(how, set, &copy), old);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (act && guarded(sig) && kn_d_in_module()) {
        errno = EPERM;
        return -1;
    }
    int (*real)(int, const struct sigaction *, struct sigaction *) =
        (int (*)(int, const struct sigaction *, struct sigaction *))next("sigaction");
    return real(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t handler)
{
    if (guarded(sig) && kn_d_in_module()) {
        errno = EPERM;
        return SIG_ERR;
    }
    sighandler_t (*real)(int, sighandler_t) = (sighandler_t(*)(int, sighandler_t))next("signal");
    return real(sig, handler);
}
#endif
