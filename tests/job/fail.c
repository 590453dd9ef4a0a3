/*
 * Failure paths of a job, for tests/job/test_failure.sh:
 *   fail MODE TARGET [CODE]
 * Every rank joins the job, records its pid and that of a grandchild it
 * leaves running in a session of its own (to check that no orphan
 * survives) in $FAIL_DIR, creates a shared-memory file of the job,
 * fences, and writes ready.<rank>.  Then rank TARGET does MODE and the
 * others wait forever:
 *   segv    dereference NULL
 *   exit    exit with CODE
 *   abort   knit_abort with CODE
 *   nofinalize  exit 0 without knit_finalize
 *   hang    (every rank) wait forever
 * FAIL_IGNORE_TERM=1 makes the waiting ranks ignore SIGTERM, so only the
 * SIGKILL that follows can stop them.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "boot/boot.h"
#include "core/ctx.h"
#include "knit.h"

static void record(const char *dir, const char *what, int rank, long value)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof(tmp), "%s/.%s.%d", dir, what, rank);
    snprintf(path, sizeof(path), "%s/%s.%d", dir, what, rank);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%ld\n", value) < 0 || fclose(f) != 0 || rename(tmp, path) < 0) {
        perror(path);
        exit(1);
    }
}

static void wait_forever(void)
{
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    const char *dir = getenv("FAIL_DIR");
    if (argc < 3 || !dir) {
        fprintf(stderr, "usage: FAIL_DIR=dir fail segv|exit|abort|hang TARGET [CODE]\n");
        return 2;
    }
    const char *mode = argv[1];
    int target = atoi(argv[2]);
    int code = argc > 3 ? atoi(argv[3]) : 1;
    knit_ctx_t *ctx;
    if (knit_init(&argc, &argv, &ctx) != KNIT_OK)
        return 1;
    int rank = knit_rank(ctx);

    pid_t g = fork();
    if (g < 0) {
        perror("fork");
        return 1;
    }
    if (g == 0) {
        setsid();
        wait_forever();
    }
    record(dir, "pid", rank, (long)getpid());
    record(dir, "gpid", rank, (long)g);

    char name[256];
    const char *jobid = getenv("KNIT_JOBID");
    snprintf(name, sizeof(name), "/knit-%s-n%d-test%d", jobid ? jobid : "none", knit_node(ctx),
             rank);
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0) {
        perror(name);
        return 1;
    }
    close(fd);
    snprintf(name, sizeof(name), "%s/jobid", dir);
    FILE *f = fopen(name, "w");
    if (!f || fprintf(f, "%s\n", jobid ? jobid : "") < 0 || fclose(f) != 0) {
        perror(name);
        return 1;
    }

    /* every rank has recorded everything before anyone fails */
    if (kn_boot_fence(ctx->boot) != KNIT_OK)
        return 1;
    record(dir, "ready", rank, 1);
    if (strcmp(mode, "hang") && rank == target) {
        if (!strcmp(mode, "segv")) {
            /* the default action, even under a sanitizer that catches it */
            signal(SIGSEGV, SIG_DFL);
            /* a real invalid access (a page with no access rights), which
             * UBSan does not turn into an error exit as it would NULL */
            volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED)
                *p = 1;
            raise(SIGSEGV);
        } else if (!strcmp(mode, "exit")) {
            exit(code);
        } else if (!strcmp(mode, "nofinalize")) {
            exit(0);
        } else if (!strcmp(mode, "abort")) {
            knit_abort(ctx, code, "test abort requested");
        }
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    if (getenv("FAIL_IGNORE_TERM"))
        signal(SIGTERM, SIG_IGN);
    wait_forever();
}
