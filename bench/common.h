/*
 * Shared by the benchmark programs (pingpong, bw, bibw): options, the size
 * sweep, rank pairing, agreeing on iteration counts, data patterns and their
 * checks, statistics and output.  Written against bp.h only.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "bp.h"

#define BENCH_MAX_SIZES 256
#define BENCH_MAX_BATCHES 31

/* Tags of the benchmark programs (all below BP_TAG_MAX). */
enum { TAG_DATA = 1, TAG_ACK = 2, TAG_CTRL = 3, TAG_CHECK = 4, TAG_SYNC = 5 };

typedef struct bench_opts {
    size_t sizes[BENCH_MAX_SIZES]; /* sorted, unique */
    int nsizes;
    long iters;        /* > 0: fixed iterations per batch; 0: adapt per size */
    int batches;       /* timed batches per size; the median is reported */
    double batch_time; /* seconds one batch should last when adapting */
    int window;        /* messages in flight (bw, bibw) */
    int quick;
    int bind;          /* pin each rank to one cpu (rank modulo cpus) */
} bench_opts_t;

/* Parses the common flags; on --help or an error prints usage (rank 0) and
 * exits.  uses_window: the program takes --window. */
void bench_parse(int argc, char **argv, const char *prog, const char *what, int uses_window,
                 bench_opts_t *o);

/* This rank's place: ranks 0 .. P-1 each pair with rank + P (P = size / 2);
 * the lower rank of a pair is the leader (times, decides, reports).  A rank
 * left over with an odd size only joins the barriers. */
typedef struct bench_pair {
    int peer;   /* -1: no partner */
    int leader; /* 1 for the lower rank of the pair */
    int npairs;
    int report; /* 1 on rank 0: prints results */
} bench_pair_t;

void bench_pair(bench_pair_t *p);

/* The timed kernel of a benchmark: runs n iterations with the partner and
 * returns the seconds it took (as seen by this rank). */
typedef double (*bench_kernel_t)(void *arg, long n);

/* Both partners call it; returns the iteration count for one batch, the same
 * on both.  Runs the kernel a few times to calibrate (which also warms up). */
long bench_agree_iters(const bench_opts_t *o, const bench_pair_t *p, bench_kernel_t k,
                       void *arg);

/* The same for programs where every rank takes part (coll, msgrate): each
 * rank runs the kernel, the slowest rank's time decides, so every rank gets
 * the same count.  Control traffic is point-to-point (never the collective
 * under test). */
long bench_agree_iters_all(const bench_opts_t *o, bench_kernel_t k, void *arg);

/* The maximum of v over all ranks, returned on every rank (point-to-point:
 * every rank sends to rank 0, which sends the maximum back). */
double bench_max_all(double v);
/* The mean of every rank's v, on every rank (OSU's average latency). */
double bench_mean_all(double v);

/* Makes the two partners start the next step together (a 0-byte exchange). */
void bench_pair_sync(const bench_pair_t *p);

/* Data patterns: a pseudo-random byte sequence that depends on the message
 * size and an iteration number.  bench_poison writes the complement, so a
 * byte that was never delivered can never pass the check. */
void bench_fill(void *buf, size_t len, size_t size, uint64_t iter);
void bench_poison(void *buf, size_t len, size_t size, uint64_t iter);
/* Checks buf against the pattern; on a mismatch prints the first differing
 * byte loudly and ends the job (nonzero exit). */
void bench_verify(const void *buf, size_t len, size_t size, uint64_t iter, const char *bench,
                  const char *where);

/* Page-aligned, touched memory; ends the job when out of memory. */
/* The windowed scheme of bw and msgrate: the pair's leader starts `window`
 * sends of `size` bytes, the partner has as many receives posted and
 * answers each window with a 4-byte acknowledgement.  A bench_kernel_t;
 * a rank without a partner returns 0 at once. */
typedef struct bench_window {
    const bench_pair_t *p;
    void *sbuf, *rbuf;
    size_t size;
    int window;
    bp_req_t *reqs;
} bench_window_t;
double bench_window_kernel(void *arg, long n);
/* Buffers for the largest size of o and per_slot * o->window requests
 * (aborts when out of memory); bench_window_free gives them back. */
bench_window_t bench_window_new(const bench_opts_t *o, const bench_pair_t *p, int per_slot, const char *bench);
void bench_window_free(bench_window_t *r, const bench_opts_t *o);

void *bench_alloc(size_t len);
void bench_free(void *p, size_t len);

double bench_median(double *v, int n); /* sorts v */

/* Output: a header, one "result" line per size, and a table at the end. */
void bench_header(const bench_opts_t *o, const bench_pair_t *p, const char *bench);
void bench_result(const char *bench, size_t size, const char *metric, const char *unit,
                  double *per_batch, int nbatches, long iters);
/* Prints the rows collected since the last table, then forgets them. */
void bench_table(const char *bench, const char *metric, const char *unit);

/* Untimed check for the windowed programs: `window` messages of `size` bytes
 * in flight at once (fewer when they would take over 8 MiB), each into its
 * own buffer with its own pattern, leader to partner (and back at the same
 * time when both_ways).  Ends the job on any wrong byte. */
void bench_window_check(const bench_pair_t *p, size_t size, int window, int both_ways,
                        const char *bench);

#endif
