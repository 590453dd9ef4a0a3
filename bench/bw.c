/*
 * bw: windowed unidirectional bandwidth.  The leader of each pair starts
 * `window` (64) nonblocking sends of `size` bytes, the partner has the same
 * number of receives posted; when the partner has all of them it sends a
 * 4-byte acknowledgement, which ends the window (the scheme of the common
 * MPI bandwidth benchmarks).  bandwidth = size x window x iterations / time,
 * timed on the sender; the median over the batches is reported in MB/s
 * (10^6 bytes per second).
 */
#include <stdio.h>
#include <stdlib.h>

#include "bp.h"
#include "common.h"

static const char *const NAME = "bw";

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_pair_t p;
    bp_init(&argc, &argv);
    bench_parse(argc, argv, NAME, "windowed bandwidth", 1, &o);
    bench_pair(&p);
    bench_header(&o, &p, NAME);

    bench_window_t r = bench_window_new(&o, &p, 1, NAME);
    for (int si = 0; si < o.nsizes; si++) {
        bp_barrier();
        if (p.peer < 0)
            continue;
        r.size = o.sizes[si];
        bench_window_check(&p, r.size, o.window, 0, NAME);
        long iters = bench_agree_iters(&o, &p, bench_window_kernel, &r);
        double bw[BENCH_MAX_BATCHES];
        for (int b = 0; b < o.batches; b++) {
            uint64_t it = 100 + (uint64_t)b;
            if (p.leader)
                bench_fill(r.sbuf, r.size, r.size, it);
            else
                bench_poison(r.rbuf, r.size, r.size, it);
            bench_pair_sync(&p);
            double t = bench_window_kernel(&r, iters);
            if (!p.leader)
                bench_verify(r.rbuf, r.size, r.size, it, NAME, "timed batch");
            bw[b] = (double)r.size * o.window * (double)iters / t / 1e6;
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
