/*
 * A job that outlives every timeout of the runtime (tests/job/test_long.sh
 * shortens them through their tunables, then runs this for several times
 * the longest).  Each phase lasts T seconds in which some process makes no
 * knit call at all (it "computes"), so that any wait bounded by a start-up
 * timeout instead of by the job's own pace ends the job:
 *
 *   barriers   every rank loops barriers for T; the daemons idle, the
 *              switch still waits for the job's first module load
 *   skew       the first half of the ranks sends to a partner on the other
 *              node (1 KiB, 64 KiB, 4 MiB) and rank 0 starts loading a
 *              module at once; the second half computes T first, then
 *              receives and joins the load (agents wait for each other's
 *              network address for T)
 *   idle       every rank computes T with modules loaded, then calls them
 *              at the agent and at the switch (an idle daemon with
 *              modules keeps its time budget for handlers only)
 *   reverse    the skew phase's messages the other way
 *   finalize   rank 0 finalizes at once, the others compute T first
 *
 *   long MODDIR T     prints "ok long" on rank 0
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knit.h"

static int rank;
#define CHECK_WHAT phase
static const char *phase = "init";
#include "check.h"

static knit_ctx_t *ctx;
static int size;
static double T;

/* Work that makes no knit call for T seconds. */
static void compute(void)
{
    double t0 = check_now();
    volatile uint64_t x = 0;
    while (check_now() - t0 < T) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i;
        nanosleep(&ts, NULL);
    }
}

static const size_t sizes[] = {1024, 64 * 1024, 4 * 1024 * 1024};

static void fill(unsigned char *b, size_t n, int from, size_t k)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(from * 31 + k * 7 + i * 13);
}

/* The first half sends at once, the second half computes first (or the
 * other way round): the messages wait on a peer that is busy. */
static void skewed_exchange(int senders_first_half)
{
    int half = size / 2, first = rank < half;
    int partner = first ? rank + half : rank - half;
    if (partner >= size || (size % 2 && rank == size - 1))
        return;
    int sending = first == senders_first_half;
    unsigned char *buf = malloc(sizes[2]), *want = malloc(sizes[2]);
    CHECK(buf && want, "out of memory");
    if (!sending)
        compute();
    for (size_t k = 0; k < 3; k++) {
        if (sending) {
            fill(buf, sizes[k], rank, k);
            OK(knit_send(ctx, buf, sizes[k], partner, 40 + (int)k, 0));
        } else {
            knit_msg_status_t s;
            OK(knit_recv(ctx, buf, sizes[k], partner, 40 + (int)k, 0, &s));
            fill(want, sizes[k], partner, k);
            CHECK(s.length == sizes[k] && !memcmp(buf, want, sizes[k]), "message %zu from %d differs", k,
                  partner);
        }
    }
    free(buf);
    free(want);
}

static void call_counter(knit_module_t *m, int64_t add, int64_t *value)
{
    knit_mreq_t *r;
    size_t len = 0;
    OK(knit_module_request(m, &add, sizeof(add), &r));
    OK(knit_request_wait(&r, value, sizeof(*value), &len));
    CHECK(len == sizeof(*value), "counter answered %zu bytes", len);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: long MODDIR SECONDS\n");
        return 2;
    }
    T = atof(argv[2]);
    char echo[1024], counter[1024];
    snprintf(echo, sizeof(echo), "%s/echo.so", argv[1]);
    snprintf(counter, sizeof(counter), "%s/counter.so", argv[1]);
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    knit_comm_t *world = knit_comm_world(ctx);

    phase = "barriers";
    double t0 = check_now();
    long n = 0;
    for (int go = 1; go; n++) {
        OK(knit_barrier(world));
        go = check_now() - t0 < T;
        OK(knit_bcast(world, &go, 1, KNIT_INT32, 0));
    }

    phase = "skew";
    skewed_exchange(1);
    knit_module_t *e, *ca, *cs;
    if (rank >= size / 2)
        compute(); /* rank 0's load waits for these */
    OK(knit_module_load(ctx, echo, KNIT_MODULE_AGENT, &e));
    OK(knit_module_load(ctx, counter, KNIT_MODULE_AGENT, &ca));
    OK(knit_module_load(ctx, counter, KNIT_MODULE_SWITCH, &cs));

    phase = "idle";
    compute();
    char args[64], res[64];
    snprintf(args, sizeof(args), "rank %d after %.1f s", rank, check_now() - t0);
    knit_mreq_t *r;
    size_t len;
    OK(knit_module_request(e, args, strlen(args) + 1, &r));
    OK(knit_request_wait(&r, res, sizeof(res), &len));
    CHECK(len == strlen(args) + 1 && !strcmp(res, args), "echo answered '%.*s'", (int)len, res);
    int64_t v;
    call_counter(cs, 1, &v);
    CHECK(v >= 1 && v <= size, "switch counter %lld", (long long)v);
    OK(knit_barrier(world));
    call_counter(cs, 0, &v);
    CHECK(v == size, "switch counter %lld after every rank added 1", (long long)v);
    call_counter(ca, 1, &v);
    CHECK(v >= 1 && v <= knit_local_size(ctx), "agent counter %lld", (long long)v);

    phase = "reverse";
    skewed_exchange(0);
    OK(knit_module_unload(cs));
    OK(knit_module_unload(ca));
    OK(knit_module_unload(e));

    phase = "finalize";
    if (rank != 0)
        compute();
    OK(knit_finalize(ctx));
    if (rank == 0)
        printf("%ld barriers\nok long\n", n);
    return 0;
}
