#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 512

static struct {
    const char *name;
    kn_test_fn fn;
} tests[MAX_TESTS];
static int ntests;
static const char *suite = "unit";
static int result_fd = -1; /* child -> parent: reason text */

void kn_test_register(const char *name, kn_test_fn fn, const char *file)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "harness: too many tests\n");
        exit(2);
    }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    ntests++;
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    static char s[128];
    snprintf(s, sizeof(s), "%s", base);
    char *dot = strrchr(s, '.');
    if (dot)
        *dot = '\0';
    if (!strncmp(s, "test_", 5))
        memmove(s, s + 5, strlen(s + 5) + 1);
    suite = s;
}

static void report(const char *kind, const char *fmt, va_list ap)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "%s", kind);
    vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
    if (result_fd >= 0) {
        ssize_t w = write(result_fd, buf, strlen(buf));
        (void)w;
    }
}

void kn_test_fail(const char *file, int line, const char *fmt, ...)
{
    char f[1100];
    snprintf(f, sizeof(f), "%s:%d: %s", file, line, fmt);
    va_list ap;
    va_start(ap, fmt);
    report("F", f, ap);
    va_end(ap);
    _exit(1);
}

void kn_test_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("S", fmt, ap);
    va_end(ap);
    _exit(0);
}

static int run_one(int i, int timeout_s)
{
    int pfd[2];
    if (pipe(pfd) < 0) {
        perror("pipe");
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        result_fd = pfd[1];
        setpgid(0, 0);
        tests[i].fn();
        fflush(NULL);
        _exit(0);
    }
    close(pfd[1]);
    setpgid(pid, pid);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0, timed_out = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec >= timeout_s) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            timed_out = 1;
            break;
        }
        struct timespec d = {0, 2 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    kill(-pid, SIGKILL); /* anything the test left behind */
    char msg[1100] = "";
    ssize_t n = read(pfd[0], msg, sizeof(msg) - 1);
    close(pfd[0]);
    msg[n > 0 ? n : 0] = '\0';
    if (timed_out) {
        printf("FAIL %s.%s: timed out after %d s\n", suite, tests[i].name, timeout_s);
        return 1;
    }
    if (msg[0] == 'S') {
        printf("SKIP %s.%s: %s\n", suite, tests[i].name, msg + 1);
        return 0;
    }
    if (WIFSIGNALED(status)) {
        printf("FAIL %s.%s: killed by signal %d (%s)\n", suite, tests[i].name, WTERMSIG(status),
               strsignal(WTERMSIG(status)));
        return 1;
    }
    if (msg[0] == 'F' || WEXITSTATUS(status) != 0) {
        printf("FAIL %s.%s: %s\n", suite, tests[i].name, msg[0] == 'F' ? msg + 1 : "exited nonzero");
        return 1;
    }
    printf("PASS %s.%s\n", suite, tests[i].name);
    return 0;
}

int main(int argc, char **argv)
{
    int timeout_s = 30;
    const char *t = getenv("KN_TEST_TIMEOUT");
    if (t && atoi(t) > 0)
        timeout_s = atoi(t);
    int failed = 0, ran = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1) {
            int want = 0;
            for (int a = 1; a < argc; a++)
                want |= !strcmp(argv[a], tests[i].name);
            if (!want)
                continue;
        }
        failed += run_one(i, timeout_s);
        ran++;
        fflush(stdout);
    }
    if (argc > 1 && ran == 0) {
        fprintf(stderr, "no test named %s\n", argv[1]);
        return 2;
    }
    return failed ? 1 : 0;
}
