/*
 * shm_peak DIR OUT command...: runs command, and while it runs samples
 * how much of the file system at DIR is in use (statvfs: blocks less free
 * blocks, so files that are unlinked but still mapped count too) every
 * millisecond; writes "<peak bytes> <samples> <seconds>" to OUT and exits
 * with the command's status.  tests/job/test_shm.sh runs a job under it
 * on a private tmpfs mounted at /dev/shm: the peak is then the sum of the
 * blocks of every file the job made there.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long used(const char *dir)
{
    struct statvfs v;
    if (statvfs(dir, &v) < 0)
        return 0;
    return (unsigned long long)(v.f_blocks - v.f_bfree) * v.f_frsize;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: shm_peak DIR OUT command...\n");
        return 2;
    }
    unsigned long long base = used(argv[1]), peak = base;
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[3], argv + 3);
        perror(argv[3]);
        _exit(127);
    }
    unsigned long samples = 0;
    int status = 0;
    for (;;) {
        unsigned long long u = used(argv[1]);
        samples++;
        if (u > peak)
            peak = u;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0) {
            perror("waitpid");
            return 2;
        }
        usleep(1000);
    }
    FILE *f = fopen(argv[2], "w");
    if (!f || fprintf(f, "%llu %lu %.3f\n", peak - base, samples, now() - t0) < 0 || fclose(f) != 0) {
        perror(argv[2]);
        return 2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
