/*
 * bibw: windowed bidirectional bandwidth.  Both ranks of a pair post
 * `window` (64) receives and start `window` sends of `size` bytes at once
 * and wait for all of them.  bandwidth = 2 x size x window x iterations /
 * time (both directions together), timed on the leader; median over the
 * batches in MB/s.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bp.h"
#include "common.h"

static const char *const NAME = "bibw";

static double kernel(void *arg, long n)
{
    bench_window_t *r = arg;
    int peer = r->p->peer, w = r->window;
    double t0 = bp_time();
    for (long i = 0; i < n; i++) {
        for (int j = 0; j < w; j++)
            bp_irecv(r->rbuf, r->size, peer, TAG_DATA, &r->reqs[j]);
        for (int j = 0; j < w; j++)
            bp_isend(r->sbuf, r->size, peer, TAG_DATA, &r->reqs[w + j]);
        bp_waitall(2 * w, r->reqs);
    }
    return bp_time() - t0;
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_pair_t p;
    bp_init(&argc, &argv);
    bench_parse(argc, argv, NAME, "bidirectional windowed bandwidth", 1, &o);
    bench_pair(&p);
    bench_header(&o, &p, NAME);

    bench_window_t r = bench_window_new(&o, &p, 2, NAME);
    for (int si = 0; si < o.nsizes; si++) {
        bp_barrier();
        if (p.peer < 0)
            continue;
        r.size = o.sizes[si];
        bench_window_check(&p, r.size, o.window, 1, NAME);
        long iters = bench_agree_iters(&o, &p, kernel, &r);
        double bw[BENCH_MAX_BATCHES];
        for (int b = 0; b < o.batches; b++) {
            uint64_t mine = 100 + 2 * (uint64_t)b + !p.leader, theirs = mine ^ 1;
            bench_fill(r.sbuf, r.size, r.size, mine);
            bench_poison(r.rbuf, r.size, r.size, theirs);
            bench_pair_sync(&p);
            double t = kernel(&r, iters);
            bench_verify(r.rbuf, r.size, r.size, theirs, NAME, "timed batch");
            bw[b] = 2.0 * (double)r.size * o.window * (double)iters / t / 1e6;
        }
        if (p.report)
            bench_result(NAME, r.size, "bandwidth", "MB/s", bw, o.batches, iters);
    }
    bp_barrier();
    if (p.report)
        bench_table(NAME, "bandwidth", "MB/s");
    bench_window_free(&r, &o);
    bp_finalize();
    return 0;
}
