/* hostile: a module that does, on request, what a module must not be able
 * to take its agent (or the job) down with (tests/job/test_hostile.sh).
 * Request byte:
 *   'o'  completes "ok"
 *   'x'  exit(3)            '_'  _exit(0)          'a'  abort()
 *   'b'  blocks every signal, then loops forever
 *   'z'  sleeps forever (uses no processor time: the budget's wait limit)
 *   't'  starts a thread that faults 100 ms later; completes "thread" or
 *        "no thread: <errno>"
 *   's'  scribbles over its own context and its heap, then completes
 *   'r'  scribbles over every shared mapping it has (the rings to its
 *        daemon, when it runs in a process of its own), then completes
 *   'k'  kill(getppid(), SIGKILL) and kill(-1, SIGKILL); completes with
 *        what they returned
 *   'e'  execve("/bin/sh"); completes with what it returned
 *   'w'  creates a file (path in the rest of the request); completes with
 *        what open returned
 * Everything here is what a careless or hostile module author writes. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "knit/module.h"

static const knit_mod_services_t *K;

static int32_t hostile_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    (void)m;
    K = svc;
    return KNIT_MOD_OK;
}

static void *late_fault(void *arg)
{
    (void)arg;
    usleep(100000);
    volatile int *volatile p = 0;
    *p = 1;
    return NULL;
}

static void done(knit_mod_ctx_t *m, uint64_t token, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void done(knit_mod_ctx_t *m, uint64_t token, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    K->complete(m, token, KNIT_MOD_OK, buf, strlen(buf) + 1);
}

/* Every writable shared mapping of this process, filled with junk. */
static int scribble_shared(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w' && perms[3] == 's') {
            unsigned char *p = (unsigned char *)lo;
            for (unsigned long i = 0; i < hi - lo; i++)
                p[i] = (unsigned char)(i * 131 + 7);
            n++;
        }
    }
    fclose(f);
    return n;
}

static void hostile_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    const char *a = args;
    char op = req->len ? a[0] : 'o';
    switch (op) {
    case 'x':
        exit(3);
    case '_':
        _exit(0);
    case 'a':
        abort();
    case 'b': {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    case 'z':
        for (;;)
            sleep(1000);
    case 't': {
        pthread_t t;
        int rc = pthread_create(&t, NULL, late_fault, NULL);
        if (rc)
            done(m, req->token, "no thread: %s", strerror(rc));
        else
            done(m, req->token, "thread");
        return;
    }
    case 's': {
        char *volatile p = malloc(64);
        if (p) { /* the heap around it (hidden from the compiler's checks) */
            char *q = p - 4096;
            memset(q, 0x5a, 64 << 10);
        }
        memset((void *)m, 0xa5, 256);         /* its own context */
        done(m, req->token, "scribbled");
        return;
    }
    case 'r':
        done(m, req->token, "scribbled %d shared mappings", scribble_shared());
        return;
    case 'k': {
        int r1 = kill(getppid(), SIGKILL), e1 = errno;
        int r2 = kill(-1, SIGKILL), e2 = errno;
        done(m, req->token, "kill parent %d (%s), kill all %d (%s)", r1, r1 ? strerror(e1) : "done", r2,
             r2 ? strerror(e2) : "done");
        return;
    }
    case 'e': {
        char *argv[] = {"sh", "-c", "true", NULL};
        execv("/bin/sh", argv);
        done(m, req->token, "exec: %s", strerror(errno));
        return;
    }
    case 'w': {
        char path[128];
        size_t n = req->len - 1 < sizeof(path) - 1 ? req->len - 1 : sizeof(path) - 1;
        memcpy(path, a + 1, n);
        path[n] = '\0';
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        done(m, req->token, "open: %s", fd < 0 ? strerror(errno) : "created");
        if (fd >= 0)
            close(fd);
        return;
    }
    }
    done(m, req->token, "ok");
}

static const knit_mod_descriptor_t hostile = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "hostile",
    .init = hostile_init,
    .on_request = hostile_request,
};

KNIT_MODULE(hostile)
