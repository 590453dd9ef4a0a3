/*
 * offload_rtt: round trip of an empty request, rank -> agent -> completion.
 *
 *   knitrun -n 2 build/bench/offload_rtt build/modules/echo.so [iters]
 *
 * 1. module vs compiled-in: the echo module (loaded .so: by default in a
 *    process of its own, KNIT_MODULE_ISOLATION=process; inprocess:
 *    dispatched on the agent's thread through its protection, sigsetjmp
 *    and the budget) against the agent's built-in null handler, one
 *    request of each in turn, every request timed; the medians of the two
 *    kinds.  make bench-offload runs it in both isolations.
 * 2. agent awake vs asleep: back-to-back requests (the agent polls, see
 *    KNIT_AGENT_SPIN) against requests each issued 2 ms after the last
 *    one ended (the agent has gone to sleep in epoll_wait, and the rank's
 *    doorbell must wake it).
 * Every rank runs it at once (2 ranks per node = two clients per agent);
 * rank 0 prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "knit.h"
#include "offload/host.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void one(knit_module_t *m)
{
    knit_mreq_t *r;
    knit_status_t st = m ? knit_module_request(m, NULL, 0, &r) : kn_off_builtin_request(&r);
    if (st == KNIT_OK)
        st = knit_request_wait(&r, NULL, 0, NULL);
    if (st != KNIT_OK) {
        fprintf(stderr, "offload_rtt: request: %s\n", knit_strerror(st));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    knit_ctx_t *ctx;
    if (argc < 2) {
        fprintf(stderr, "usage: knitrun -n 2 offload_rtt ECHO.so [iters]\n");
        return 2;
    }
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    if (knit_init(&argc, &argv, &ctx) != KNIT_OK)
        return 1;
    knit_module_t *m;
    knit_status_t st = knit_module_load(ctx, argv[1], KNIT_MODULE_AGENT, &m);
    if (st != KNIT_OK) {
        fprintf(stderr, "offload_rtt: load %s: %s (%s)\n", argv[1], knit_strerror(st), knit_module_last_error(ctx));
        return 1;
    }
    /* one request of each kind in turn, each timed on its own: drift of a
     * loaded machine hits both alike, and the medians ignore the requests
     * that a context switch stretched */
    double *mod = malloc(sizeof(double) * (size_t)iters), *bi = malloc(sizeof(double) * (size_t)iters);
    for (int i = 0; i < 2000; i++) { /* warm up both paths */
        one(m);
        one(NULL);
    }
    knit_barrier(knit_comm_world(ctx));
    for (int i = 0; i < iters; i++) {
        int first_mod = i & 1; /* neither kind always runs first */
        double t0 = now_us();
        one(first_mod ? m : NULL);
        double t1 = now_us();
        one(first_mod ? NULL : m);
        double t2 = now_us();
        (first_mod ? mod : bi)[i] = t1 - t0;
        (first_mod ? bi : mod)[i] = t2 - t1;
    }
    double mm = median(mod, iters), mb = median(bi, iters);
    double overhead = (mm / mb - 1) * 100;
    free(mod);
    free(bi);
    knit_barrier(knit_comm_world(ctx));

    /* asleep: 2 ms of quiet before each request */
    int nsleep = 300;
    double *asleep = malloc(sizeof(double) * (size_t)nsleep);
    for (int i = 0; i < nsleep; i++) {
        usleep(2000);
        double t0 = now_us();
        one(m);
        asleep[i] = now_us() - t0;
    }
    knit_barrier(knit_comm_world(ctx));
    double *awake = malloc(sizeof(double) * (size_t)nsleep);
    for (int i = 0; i < nsleep; i++) {
        double t0 = now_us();
        one(m);
        awake[i] = now_us() - t0;
    }
    double ma = median(asleep, nsleep), mw = median(awake, nsleep);
    if (knit_rank(ctx) == 0) {
        printf("offload_rtt: %d ranks on %d nodes, %d ranks per node\n", knit_size(ctx), knit_nnodes(ctx),
               knit_local_size(ctx));
        printf("empty request, module (echo.so):   %8.3f us  (median of %d)\n", mm, iters);
        printf("empty request, built-in handler:  %8.3f us  (median of %d)\n", mb, iters);
        printf("module call overhead:             %+8.1f %%  (ratio of the medians)\n", overhead);
        printf("agent awake (back to back):       %8.2f us  (median of %d)\n", mw, nsleep);
        printf("agent asleep (2 ms idle before):  %8.2f us  (median of %d)\n", ma, nsleep);
    }
    free(asleep);
    free(awake);
    knit_module_unload(m);
    knit_finalize(ctx);
    return 0;
}
