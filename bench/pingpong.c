/*
 * pingpong: one-way latency.  The leader of each pair sends a message of
 * `size` bytes, the partner receives it and sends the same size back
 * (blocking send/receive, as the common MPI latency benchmarks do).
 * latency = batch time / (2 x iterations); the median over the batches is
 * reported in microseconds.
 */
#include <stdio.h>

#include "bp.h"
#include "common.h"

static const char *const NAME = "pingpong";

struct run {
    const bench_pair_t *p;
    void *sbuf, *rbuf;
    size_t size;
};

static double kernel(void *arg, long n)
{
    struct run *r = arg;
    int peer = r->p->peer;
    double t0 = bp_time();
    if (r->p->leader) {
        for (long i = 0; i < n; i++) {
            bp_send(r->sbuf, r->size, peer, TAG_DATA);
            bp_recv(r->rbuf, r->size, peer, TAG_DATA);
        }
    } else {
        for (long i = 0; i < n; i++) {
            bp_recv(r->rbuf, r->size, peer, TAG_DATA);
            bp_send(r->sbuf, r->size, peer, TAG_DATA);
        }
    }
    return bp_time() - t0;
}

/* Untimed: one message each way with iteration-specific patterns and an
 * exact length check. */
static void check_exchange(struct run *r)
{
    size_t s = r->size, got;
    int peer = r->p->peer;
    if (r->p->leader) {
        bench_fill(r->sbuf, s, s, 1);
        bench_poison(r->rbuf, s, s, 2);
        bp_send(r->sbuf, s, peer, TAG_CHECK);
        got = bp_recv_len(r->rbuf, s, peer, TAG_CHECK);
        if (got != s)
            bp_abort("*** DATA ERROR *** pingpong: reply has the wrong length");
        bench_verify(r->rbuf, s, s, 2, NAME, "check exchange, reply");
    } else {
        bench_poison(r->rbuf, s, s, 1);
        got = bp_recv_len(r->rbuf, s, peer, TAG_CHECK);
        if (got != s)
            bp_abort("*** DATA ERROR *** pingpong: message has the wrong length");
        bench_verify(r->rbuf, s, s, 1, NAME, "check exchange");
        bench_fill(r->sbuf, s, s, 2);
        bp_send(r->sbuf, s, peer, TAG_CHECK);
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_pair_t p;
    bp_init(&argc, &argv);
    bench_parse(argc, argv, NAME, "ping-pong latency", 0, &o);
    bench_pair(&p);
    bench_header(&o, &p, NAME);

    size_t maxs = o.sizes[o.nsizes - 1];
    struct run r = {&p, bench_alloc(maxs), bench_alloc(maxs), 0};
    for (int si = 0; si < o.nsizes; si++) {
        bp_barrier();
        if (p.peer < 0)
            continue;
        r.size = o.sizes[si];
        check_exchange(&r);
        long iters = bench_agree_iters(&o, &p, kernel, &r);
        double lat[BENCH_MAX_BATCHES];
        for (int b = 0; b < o.batches; b++) {
            /* every message of the batch carries this batch's pattern; the
             * receive buffers start poisoned, so the last message is checked */
            uint64_t mine = 100 + 2 * (uint64_t)b + !p.leader, theirs = mine ^ 1;
            bench_fill(r.sbuf, r.size, r.size, mine);
            bench_poison(r.rbuf, r.size, r.size, theirs);
            bench_pair_sync(&p);
            double t = kernel(&r, iters);
            bench_verify(r.rbuf, r.size, r.size, theirs, NAME, "timed batch");
            lat[b] = t / (2.0 * (double)iters) * 1e6;
        }
        if (p.report)
            bench_result(NAME, r.size, "latency", "us", lat, o.batches, iters);
    }
    bp_barrier();
    if (p.report)
        bench_table(NAME, "latency", "us");
    bench_free(r.sbuf, maxs);
    bench_free(r.rbuf, maxs);
    bp_finalize();
    return 0;
}
