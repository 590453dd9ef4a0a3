/*
 * msgrate: multi-pair message rate.  Every pair (rank r < P with rank r + P,
 * P = ranks / 2) runs the windowed scheme of bw at the same time: the
 * leader starts `window` (64) nonblocking sends of `size` bytes, the partner
 * has as many receives posted and answers each window with a 4-byte
 * acknowledgement.  All pairs run the same iteration count, started by a
 * barrier; rate = pairs x window x iterations / (the slowest rank's time),
 * in millions of messages per second (the aggregate over all pairs, as the
 * common multi-pair benchmarks report it), median over the batches.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bp.h"
#include "common.h"

static const char *const NAME = "msgrate";

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_pair_t p;
    bp_init(&argc, &argv);
    bench_parse(argc, argv, NAME, "multi-pair message rate", 1, &o);
    bench_pair(&p);
    bench_header(&o, &p, NAME);

    bench_window_t r = bench_window_new(&o, &p, 1, NAME);
    for (int si = 0; si < o.nsizes; si++) {
        r.size = o.sizes[si];
        bp_barrier();
        bench_window_check(&p, r.size, o.window, 0, NAME);
        long iters = bench_agree_iters_all(&o, bench_window_kernel, &r);
        double rate[BENCH_MAX_BATCHES];
        for (int b = 0; b < o.batches; b++) {
            uint64_t it = 100 + (uint64_t)b;
            if (p.peer >= 0 && p.leader)
                bench_fill(r.sbuf, r.size, r.size, it);
            else if (p.peer >= 0)
                bench_poison(r.rbuf, r.size, r.size, it);
            bp_barrier();
            double t = bench_max_all(bench_window_kernel(&r, iters));
            if (p.peer >= 0 && !p.leader)
                bench_verify(r.rbuf, r.size, r.size, it, NAME, "timed batch");
            rate[b] = (double)p.npairs * o.window * (double)iters / t / 1e6;
        }
        if (p.report)
            bench_result(NAME, r.size, "rate", "Mmsg/s", rate, o.batches, iters);
    }
    bp_barrier();
    if (p.report)
        bench_table(NAME, "rate", "Mmsg/s");
    bench_window_free(&r, &o);
    bp_finalize();
    return 0;
}
