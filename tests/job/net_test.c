/*
 * Network transport tests, run by tests/job/test_net.sh through knitrun.
 *   net_test realloc ITER SIZE  rank 0 -> rank 1, new pages at the same
 *                               addresses between transfers (munmap, then
 *                               mmap at the old address), pushed and pulled
 *   net_test die SIZE           rank 1 kills itself while rank 0's
 *                               SIZE-byte message is moving
 *   net_test idle MS            rank 0 computes for MS ms, the others wait in a
 *                               receive: they must sleep, not spin (CPU time
 *                               below a third of the wait)
 * Prints "ok CASE" on rank 0 when it passed.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "knit.h"

static knit_ctx_t *ctx;
static int rank, size;

/* Fresh anonymous pages, at hint if the kernel agrees. */
static uint8_t *map_at(void *hint, size_t len)
{
    void *p = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED, "mmap %zu bytes failed", len);
    return p;
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 12));
}

static void verify(const uint8_t *b, size_t n, uint32_t seed, int iter)
{
    for (size_t i = 0; i < n; i++)
        CHECK(b[i] == (uint8_t)(i * 7 + seed * 13 + (i >> 12)),
              "iteration %d: byte %zu of %zu is %u, expected %u (stale registration?)", iter, i, n, b[i],
              (uint8_t)(i * 7 + seed * 13 + (i >> 12)));
}

static void note(int peer, int tag)
{
    char c = 0;
    OK(knit_send(ctx, &c, 1, peer, tag, 7));
}

static void wait_note(int peer, int tag)
{
    char c;
    OK(knit_recv(ctx, &c, 1, peer, tag, 7, NULL));
}

static void case_realloc(int iters, size_t len)
{
    void *addr = NULL;
    int same = 0;
    for (int it = 0; it < iters; it++) {
        uint8_t *b = map_at(addr, len);
        same += addr && (void *)b == addr;
        addr = b;
        int pull = it & 1; /* odd: the send comes first (pull); even: the receive (push) */
        if (rank == 0) {
            fill(b, len, (uint32_t)it);
            knit_request_t *r;
            if (pull) {
                OK(knit_isend(ctx, b, len, 1, it, 0, &r));
                note(1, 1000 + it); /* the RTS is there before the receive is posted */
            } else {
                wait_note(1, 1000 + it); /* the receive is posted (and announced) */
                OK(knit_isend(ctx, b, len, 1, it, 0, &r));
            }
            OK(knit_wait(&r, NULL));
        } else if (rank == 1) {
            memset(b, 0xee, len);
            knit_request_t *r;
            knit_msg_status_t st;
            if (pull) {
                wait_note(0, 1000 + it);
                OK(knit_irecv(ctx, b, len, 0, it, 0, &r));
            } else {
                OK(knit_irecv(ctx, b, len, 0, it, 0, &r));
                note(0, 1000 + it);
            }
            OK(knit_wait(&r, &st));
            CHECK(st.length == len, "got %zu bytes", st.length);
            verify(b, len, (uint32_t)it, it);
        }
        /* new pages at the same addresses before the next transfer */
        CHECK(munmap(b, len) == 0, "munmap");
    }
    /* also malloc/free of the same size, as an application does it */
    for (int it = 0; it < iters; it++) {
        uint8_t *b = malloc(len);
        CHECK(b, "malloc");
        if (rank == 0) {
            fill(b, len, (uint32_t)(it + 100));
            OK(knit_send(ctx, b, len, 1, 5000 + it, 0));
        } else if (rank == 1) {
            OK(knit_recv(ctx, b, len, 0, 5000 + it, 0, NULL));
            verify(b, len, (uint32_t)(it + 100), it);
        }
        free(b);
    }
    if (rank == 1)
        note(0, 9999);
    if (rank == 0) {
        wait_note(1, 9999);
        printf("same address reused %d of %d times\n", same, iters - 1);
        CHECK(same > 0, "mmap never returned the old address: the test proves nothing");
    }
}

static void case_die(size_t len)
{
    uint8_t *b = malloc(len);
    CHECK(b, "malloc");
    memset(b, 1, len);
    if (rank == 0) {
        knit_request_t *r;
        OK(knit_isend(ctx, b, len, 1, 1, 0, &r));
        knit_status_t st = knit_wait(&r, NULL);
        fprintf(stderr, "rank 0: send finished with %s, which it should not\n", knit_strerror(st));
        exit(3);
    } else if (rank == 1) {
        knit_request_t *r;
        OK(knit_irecv(ctx, b, len, 0, 1, 0, &r));
        /* progress until the transfer is under way, then die */
        for (int i = 0; i < 2000; i++) {
            int done;
            OK(knit_test(&r, &done, NULL));
            CHECK(!done, "the transfer finished before the rank could die");
        }
        fprintf(stderr, "rank 1: killing myself mid-transfer\n");
        raise(SIGKILL);
    }
    pause();
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static void case_idle(int ms)
{
    char c = 0;
    if (rank == 0) {
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        for (int i = 1; i < size; i++)
            OK(knit_send(ctx, &c, 1, i, 1, 0));
        for (int i = 1; i < size; i++) {
            double used;
            OK(knit_recv(ctx, &used, sizeof(used), i, 2, 0, NULL));
            printf("rank %d used %.0f ms of CPU while waiting %d ms\n", i, used * 1e3, ms);
            CHECK(used * 1e3 < ms / 3.0, "rank %d spun while it waited (%.0f ms CPU)", i, used * 1e3);
        }
    } else {
        double t0 = cpu_seconds();
        OK(knit_recv(ctx, &c, 1, 0, 1, 0, NULL));
        double used = cpu_seconds() - t0;
        OK(knit_send(ctx, &used, sizeof(used), 0, 2, 0));
    }
}

int main(int argc, char **argv)
{
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    CHECK(argc > 1 && size >= 2, "usage: net_test realloc ITER SIZE | die SIZE (2+ ranks)");
    if (!strcmp(argv[1], "realloc"))
        case_realloc(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? parse_size(argv[3]) : 4 << 20);
    else if (!strcmp(argv[1], "idle"))
        case_idle(argc > 2 ? atoi(argv[2]) : 1000);
    else if (!strcmp(argv[1], "die"))
        case_die(argc > 2 ? parse_size(argv[2]) : 256 << 20);
    else
        CHECK(0, "unknown case %s", argv[1]);
    OK(knit_finalize(ctx));
    if (rank == 0)
        printf("ok %s\n", argv[1]);
    return 0;
}
