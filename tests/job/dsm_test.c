/*
 * The replicated region (include/knit/dsm.h), run by tests/job/test_dsm.sh:
 *   dsm_test same        every rank writes its own bytes of shared pages
 *                        (interleaved byte by byte: every page has writers
 *                        on every node), barrier: every rank reads every
 *                        byte right, and the whole region's checksum is
 *                        the same on every rank
 *   dsm_test counter     a counter under a lock, incremented 200 times by
 *                        every rank: exactly 200 * ranks
 *   dsm_test prodcons    rank 0 produces 300 items into a ring under a lock,
 *                        the others consume them under the same lock: each
 *                        item consumed once, in order
 *   dsm_test stress      20 rounds of random writes (each byte has one
 *                        owner rank per round, chosen by a hash), barrier,
 *                        every rank checks the whole area against what it
 *                        computes itself, and the checksums agree
 *   dsm_test alloc       every rank allocates and frees from the region at
 *                        once: blocks never overlap; a rank frees what
 *                        another allocated; bad frees are refused
 *   dsm_test big SIZE    rank 0 rewrites SIZE bytes, barrier, every rank
 *                        checks them (and a second pass rewrites half)
 *   dsm_test corrupt     (KNIT_DSM_CORRUPT=1) a release of rank 0 fails with
 *                        KNIT_ERR_IO naming the crc32c check
 *   dsm_test conflict    rank 1 maps memory at KNIT_DSM_ADDR first: init
 *                        fails everywhere, naming rank 1 and its mapping
 *   dsm_test refused     init fails with KNIT_ERR_NOT_SUPPORTED (no agents)
 *                        and says why
 *   dsm_test die         rank 1 dirties 48 MiB and is killed while it
 *                        releases them (the job must end, not hang)
 *   dsm_test threads     (update) 4 threads per rank allocate from the region
 *                        at once and write their own bytes of shared pages
 *                        (faults of one page from several threads at once);
 *                        after the join and a barrier every rank reads every
 *                        thread's bytes
 *   dsm_test threadrel   (update) 3 threads per rank write their own bytes of
 *                        256 pages, page after page, 60 rounds, while the
 *                        rank's main thread releases every 200 us (a
 *                        release races with a fault opening pages: without
 *                        the release's seal, 3 runs in 8 lost writes);
 *                        after the join and a barrier every rank reads the
 *                        last round
 *   dsm_test sparse SIZE a region of SIZE bytes: every rank writes a page at
 *                        its start, middle and end; all see them; the
 *                        node's files hold a few pages, not SIZE
 *   dsm_test size        the region of knit_dsm_init(ctx, 0) is KNIT_DSM_SIZE
 *   dsm_test errors      bad calls return errors and lose nothing
 *   dsm_test push        (update) 20 rounds: rank 0 rewrites 64 KiB and
 *                        pushes (knit_dsm_push, again every millisecond)
 *                        until every other rank, reading without any DSM
 *                        call, has seen the round's bytes (20 s at most)
 *                        and said so by a message; no release until the end
 *   dsm_test migrate     (invalidate) 24 rounds of barriers: each rank
 *                        rewrites its own 256 KiB (homed round robin on
 *                        every node at first), then reads the next rank's;
 *                        from round 8 on the slices shift by one rank, from
 *                        16 on by two (homes move away from nodes that
 *                        hold copies); one page every rank writes its own
 *                        bytes of (never moves); every read is checked, and
 *                        node 0 counts moved homes: some with
 *                        KNIT_DSM_MIGRATE=1, none with 0 (argument: 1 or 0)
 * Every case runs under both protocols (KNIT_DSM_PROTOCOL).  Prints
 * "ok CASE" on rank 0 when every rank passed.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "knit.h"
#include "knit/dsm.h"

static knit_ctx_t *ctx;
static int rank, size;
static knit_comm_t *world;

#include "check.h"

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* every rank's checksum of [p, p + n) is the same */
static void same_everywhere(const void *p, size_t n, const char *what)
{
    uint64_t h = fnv(p, n);
    uint64_t *all = malloc((size_t)size * sizeof(uint64_t));
    CHECK(all, "no memory");
    OK(knit_allgather(world, &h, all, 1, KNIT_UINT64));
    for (int r = 0; r < size; r++)
        CHECK(all[r] == h, "%s: rank %d's checksum %#llx differs from mine %#llx", what, r,
              (unsigned long long)all[r], (unsigned long long)h);
    free(all);
}

static void same(void)
{
    size_t n = 5 * 4096 + 123;
    unsigned char *a = knit_dsm_base();
    for (int round = 0; round < 4; round++) {
        for (size_t i = (size_t)rank; i < n; i += (size_t)size)
            a[i] = (unsigned char)(i * 7 + (size_t)round * 31 + 1);
        OK(knit_dsm_barrier());
        for (size_t i = 0; i < n; i++)
            CHECK(a[i] == (unsigned char)(i * 7 + (size_t)round * 31 + 1), "round %d byte %zu: %u", round, i, a[i]);
        OK(knit_dsm_barrier()); /* nobody writes the next round before all checked */
    }
    same_everywhere(a, knit_dsm_size(), "the whole region");
    knit_dsm_stats_t s;
    OK(knit_dsm_stats(&s));
    const char *proto = getenv("KNIT_DSM_PROTOCOL");
    int inval = proto && !strcmp(proto, "invalidate");
    if (knit_nnodes(ctx) > 1) {
        /* every node wrote and diffed; under update every node sends and
         * receives; under invalidate the job as a whole sent diffs home,
         * invalidated pages and fetched them */
        CHECK(s.faults > 0 && s.diffs > 0 && !s.bad_crc, "stats: %llu faults, %llu diffs, %llu bad",
              (unsigned long long)s.faults, (unsigned long long)s.diffs, (unsigned long long)s.bad_crc);
        if (!inval) {
            CHECK(s.frames_out > 0 && s.frames_in > 0, "stats: %llu frames out, %llu in",
                  (unsigned long long)s.frames_out, (unsigned long long)s.frames_in);
        } else {
            uint64_t v[4] = {s.frames_out, s.frames_in, s.fetches, s.invalidated};
            knit_op_t sum = {.kind = KNIT_OP_SUM};
            OK(knit_allreduce(world, KNIT_IN_PLACE, v, 4, KNIT_UINT64, &sum));
            CHECK(v[0] && v[1] && v[2] && v[3], "stats of the job: %llu frames out, %llu in, %llu fetches, %llu "
                  "invalidated", (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2],
                  (unsigned long long)v[3]);
        }
    }
}

static void counter(void)
{
    volatile uint64_t *c = knit_dsm_base();
    int per = 200;
    for (int i = 0; i < per; i++) {
        OK(knit_dsm_lock(7));
        *c = *c + 1;
        OK(knit_dsm_unlock(7));
    }
    OK(knit_dsm_barrier());
    CHECK(*c == (uint64_t)per * (uint64_t)size, "the counter is %llu, not %llu", (unsigned long long)*c,
          (unsigned long long)per * (unsigned long long)size);
}

typedef struct ring {
    uint64_t head, tail, done;
    uint64_t item[16];
} ring_t;

static void prodcons(void)
{
    CHECK(size >= 2, "needs 2 ranks");
    ring_t *q = knit_dsm_base();
    uint64_t *seen = (uint64_t *)((char *)knit_dsm_base() + 8192); /* per consumer: how many, sum */
    const uint64_t items = 300;
    OK(knit_dsm_barrier());
    if (rank == 0) {
        for (uint64_t next = 1; next <= items;) {
            OK(knit_dsm_lock(1));
            while (next <= items && q->head - q->tail < 16) {
                q->item[q->head % 16] = next++;
                q->head++;
            }
            OK(knit_dsm_unlock(1));
        }
    } else {
        uint64_t count = 0, sum = 0, last = 0;
        for (int stop = 0; !stop;) {
            OK(knit_dsm_lock(1));
            while (q->tail < q->head) {
                uint64_t v = q->item[q->tail % 16];
                q->tail++;
                CHECK(v > last, "item %llu after %llu: out of order", (unsigned long long)v, (unsigned long long)last);
                last = v;
                count++;
                sum += v;
            }
            stop = q->tail == items;
            OK(knit_dsm_unlock(1));
        }
        seen[2 * rank] = count;
        seen[2 * rank + 1] = sum;
    }
    OK(knit_dsm_barrier());
    uint64_t count = 0, sum = 0;
    for (int r = 1; r < size; r++) {
        count += seen[2 * r];
        sum += seen[2 * r + 1];
    }
    CHECK(count == items && sum == items * (items + 1) / 2, "consumed %llu items summing to %llu",
          (unsigned long long)count, (unsigned long long)sum);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static void stress(void)
{
    size_t n = 3 * 65536 + 777;
    unsigned char *a = knit_dsm_base();
    unsigned char *ref = calloc(1, n);
    CHECK(ref, "no memory");
    for (uint64_t round = 1; round <= 20; round++) {
        /* byte i belongs to rank mix(i, round) % size this round, and is
         * written (maybe) by it: sparse random writes, some pages untouched */
        for (size_t i = 0; i < n; i++) {
            uint64_t h = mix(i * 1000003u + round);
            int owner = (int)(h % (uint64_t)size);
            int written = (h >> 20) % 5 == 0 && (i / 4096 + round) % 3 != 0;
            unsigned char v = (unsigned char)(h >> 40);
            if (written) {
                ref[i] = v;
                if (owner == rank)
                    a[i] = v;
            }
        }
        OK(knit_dsm_barrier());
        for (size_t i = 0; i < n; i++)
            CHECK(a[i] == ref[i], "round %llu byte %zu: %u, not %u", (unsigned long long)round, i, a[i], ref[i]);
        OK(knit_dsm_barrier());
    }
    same_everywhere(a, knit_dsm_size(), "the whole region");
    free(ref);
}

static void alloc(void)
{
    enum { N = 40 };
    char *p[N];
    size_t len[N];
    for (int i = 0; i < N; i++) {
        len[i] = (size_t)(mix((uint64_t)(rank * N + i)) % 9000) + 1;
        p[i] = knit_dsm_alloc(len[i]);
        CHECK(p[i], "alloc %zu: %s", len[i], knit_dsm_last_error());
        CHECK(((uintptr_t)p[i] & 15) == 0 && (len[i] < 4096 || ((uintptr_t)p[i] & 4095) == 0), "alignment of %p",
              (void *)p[i]);
        memset(p[i], rank + 1, len[i]);
    }
    /* everyone's blocks: no two overlap */
    uint64_t mine[2 * N], *all = malloc((size_t)size * 2 * N * sizeof(uint64_t));
    CHECK(all, "no memory");
    for (int i = 0; i < N; i++) {
        mine[2 * i] = (uint64_t)(uintptr_t)p[i];
        mine[2 * i + 1] = len[i];
    }
    OK(knit_allgather(world, mine, all, 2 * N, KNIT_UINT64));
    for (int i = 0; i < size * N; i++)
        for (int j = i + 1; j < size * N; j++)
            CHECK(all[2 * i] + all[2 * i + 1] <= all[2 * j] || all[2 * j] + all[2 * j + 1] <= all[2 * i],
                  "blocks %d and %d overlap", i, j);
    OK(knit_dsm_barrier());
    for (int i = 0; i < N; i++) /* what every rank wrote is everywhere */
        for (int r = 0; r < size; r++) {
            const unsigned char *b = (const unsigned char *)(uintptr_t)all[2 * (r * N + i)];
            CHECK(b[0] == r + 1 && b[all[2 * (r * N + i) + 1] - 1] == r + 1, "rank %d's block %d", r, i);
        }
    OK(knit_dsm_barrier());
    /* the next rank frees my even blocks, I free my odd ones */
    int next = (rank + 1) % size;
    for (int i = 0; i < N; i++) {
        int owner = i % 2 ? rank : (rank + size - 1) % size;
        (void)next;
        OK(knit_dsm_free((void *)(uintptr_t)all[2 * (owner * N + i)]));
    }
    OK(knit_dsm_barrier());
    if (rank == 0) {
        CHECK(knit_dsm_free(p[0]) == KNIT_ERR_INVAL, "a double free was taken");
        CHECK(strstr(knit_dsm_last_error(), "not the start"), "the error says %s", knit_dsm_last_error());
        char *q = knit_dsm_alloc(100);
        CHECK(q, "alloc");
        CHECK(knit_dsm_free(q + 16) == KNIT_ERR_INVAL, "a free inside a block was taken");
        OK(knit_dsm_free(q));
        int x;
        CHECK(knit_dsm_free(&x) == KNIT_ERR_INVAL, "a free outside the region was taken");
        CHECK(knit_dsm_alloc(knit_dsm_size() + 1) == NULL, "an allocation larger than the region");
        char *whole = knit_dsm_alloc(knit_dsm_size() / 2 + 4096);
        CHECK(whole, "half the region: %s", knit_dsm_last_error());
        CHECK(knit_dsm_alloc(knit_dsm_size() / 2) == NULL, "more than the region has");
        OK(knit_dsm_free(whole));
    }
    OK(knit_dsm_barrier());
    free(all);
}

static void big(size_t n)
{
    unsigned char *a = knit_dsm_base();
    CHECK(n <= knit_dsm_size(), "the region is smaller than %zu", n);
    for (int pass = 0; pass < 2; pass++) {
        size_t from = pass ? n / 4 : 0, to = pass ? 3 * n / 4 : n;
        if (rank == 0)
            for (size_t i = from; i < to; i += 8)
                *(uint64_t *)(a + i) = mix(i + (uint64_t)pass);
        OK(knit_dsm_barrier());
        for (size_t i = 0; i < n; i += 8) {
            int p = i >= n / 4 && i < 3 * n / 4 ? pass : 0;
            CHECK(*(uint64_t *)(a + i) == mix(i + (uint64_t)p), "pass %d offset %zu", pass, i);
        }
        OK(knit_dsm_barrier());
    }
}

static void corrupt(void)
{
    char *a = knit_dsm_base();
    if (rank == 0) /* page 1: under invalidate with 4 KiB home blocks, node 1's */
        memset(a + 4096, 5, 3000);
    knit_status_t st = knit_dsm_flush();
    if (rank == 0) {
        CHECK(st == KNIT_ERR_IO, "the flush returned %s", knit_strerror(st));
        CHECK(strstr(knit_dsm_last_error(), "crc32c"), "the error says %s", knit_dsm_last_error());
    }
    OK(knit_barrier(world)); /* the node that found it counted it before rank 0 heard */
    knit_dsm_stats_t s;
    OK(knit_dsm_stats(&s));
    uint64_t bad = s.bad_crc, sum = 0;
    knit_op_t op = {.kind = KNIT_OP_SUM};
    OK(knit_allreduce(world, &bad, &sum, 1, KNIT_UINT64, &op));
    CHECK(sum >= 1, "no node counted a bad frame");
}

static void *killer(void *arg)
{
    (void)arg;
    usleep(3000);
    raise(SIGKILL);
    return NULL;
}

static void die(void)
{
    size_t n = 48u << 20;
    CHECK(knit_dsm_size() >= n, "the region is smaller than 48 MiB");
    char *a = knit_dsm_base();
    if (rank == 0) { /* for the test to look for what the job leaves */
        printf("job %s\n", getenv("KNIT_JOBID") ? getenv("KNIT_JOBID") : "?");
        fflush(stdout);
    }
    if (rank == 1) {
        memset(a, 1, n);
        pthread_t t;
        pthread_create(&t, NULL, killer, NULL);
    }
    knit_dsm_barrier();
    knit_dsm_barrier();
    CHECK(0, "the job went on after rank 1 died");
}

enum { NTHREADS = 4 };

typedef struct targ {
    int t;
    unsigned char *shared;
    size_t n;
    char *mine;
} targ_t;

static void *thread_body(void *arg)
{
    targ_t *a = arg;
    a->mine = knit_dsm_alloc(5000 + (size_t)a->t); /* at once from every thread */
    if (!a->mine)
        return NULL;
    memset(a->mine, 100 + a->t, 5000 + (size_t)a->t);
    int k = rank * NTHREADS + a->t, all = size * NTHREADS; /* this thread's bytes of the shared pages */
    for (int round = 0; round < 3; round++)
        for (size_t i = (size_t)k; i < a->n; i += (size_t)all)
            a->shared[i] = (unsigned char)(i * 13 + (size_t)k + (size_t)round);
    return a;
}

static void threads(void)
{
    size_t n = 6 * 4096;
    unsigned char *shared = (unsigned char *)knit_dsm_base() + knit_dsm_size() / 2; /* (the blocks come from the start) */
    pthread_t th[NTHREADS];
    targ_t arg[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        arg[t] = (targ_t){.t = t, .shared = shared, .n = n};
        CHECK(pthread_create(&th[t], NULL, thread_body, &arg[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < NTHREADS; t++) {
        void *r;
        pthread_join(th[t], &r);
        CHECK(r, "thread %d: alloc: %s", t, knit_dsm_last_error());
    }
    uint64_t mine[NTHREADS], *all = malloc((size_t)size * NTHREADS * sizeof(uint64_t));
    CHECK(all, "no memory");
    for (int t = 0; t < NTHREADS; t++)
        mine[t] = (uint64_t)(uintptr_t)arg[t].mine;
    OK(knit_allgather(world, mine, all, NTHREADS, KNIT_UINT64));
    OK(knit_dsm_barrier());
    for (size_t i = 0; i < n; i++) {
        size_t k = i % (size_t)(size * NTHREADS);
        CHECK(shared[i] == (unsigned char)(i * 13 + k + 2), "byte %zu: %u", i, shared[i]);
    }
    for (int r = 0; r < size; r++)
        for (int t = 0; t < NTHREADS; t++) {
            const unsigned char *b = (const unsigned char *)(uintptr_t)all[r * NTHREADS + t];
            for (size_t i = 0; i < 5000 + (size_t)t; i++)
                CHECK(b[i] == 100 + t, "rank %d thread %d's block, byte %zu: %u", r, t, i, b[i]);
        }
    same_everywhere(knit_dsm_base(), knit_dsm_size(), "the whole region");
    free(all);
}

enum { RELW = 3, RELPAGES = 256, RELROUNDS = 60 };

typedef struct rarg {
    int t;
    unsigned char *shared;
    _Atomic int *left;
} rarg_t;

static unsigned char rel_value(size_t i, size_t k, int round)
{
    return (unsigned char)(i * 29 + k * 7 + (size_t)round);
}

static void *rel_writer(void *arg)
{
    rarg_t *a = arg;
    size_t n = RELPAGES * 4096, all = (size_t)size * RELW, k = (size_t)(rank * RELW + a->t);
    for (int round = 0; round < RELROUNDS; round++)
        for (size_t i = k; i < n; i += all)
            a->shared[i] = rel_value(i, k, round);
    atomic_fetch_sub(a->left, 1);
    return NULL;
}

static void threadrel(void)
{
    size_t n = RELPAGES * 4096;
    unsigned char *shared = (unsigned char *)knit_dsm_base() + knit_dsm_size() / 2;
    _Atomic int left = RELW;
    pthread_t th[RELW];
    rarg_t arg[RELW];
    for (int t = 0; t < RELW; t++) {
        arg[t] = (rarg_t){.t = t, .shared = shared, .left = &left};
        CHECK(pthread_create(&th[t], NULL, rel_writer, &arg[t]) == 0, "pthread_create");
    }
    long flushes = 0;
    while (atomic_load(&left) > 0) { /* releases while the writers open pages (a sequential writer's
                                        * fault opens several: the window a release can fall into) */
        OK(knit_dsm_flush());
        flushes++;
        usleep(200);
    }
    for (int t = 0; t < RELW; t++)
        pthread_join(th[t], NULL);
    OK(knit_dsm_barrier());
    for (size_t i = 0; i < n; i++) {
        size_t k = i % ((size_t)size * RELW);
        CHECK(shared[i] == rel_value(i, k, RELROUNDS - 1), "byte %zu (thread %zu of rank %zu): %u, not %u (%ld releases)",
              i, k % RELW, k / RELW, shared[i], rel_value(i, k, RELROUNDS - 1), flushes);
    }
    same_everywhere(shared, n, "the threads' pages");
}

static void sparse(void)
{
    char *a = knit_dsm_base();
    size_t n = knit_dsm_size(), at[3] = {0, n / 2, n - 4096};
    for (int k = 0; k < 3; k++)
        a[at[k] + (size_t)rank] = (char)(rank + 1);
    OK(knit_dsm_barrier());
    for (int k = 0; k < 3; k++)
        for (int r = 0; r < size; r++)
            CHECK(a[at[k] + (size_t)r] == r + 1, "offset %zu + %d", at[k], r);
    const char *job = getenv("KNIT_JOBID");
    CHECK(job, "KNIT_JOBID is not set");
    static const char *file[] = {"data", "twin", "meta"};
    for (int f = 0; f < 3; f++) {
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "/dev/shm/knit-%s-n%d-dsm.%s", job, knit_node(ctx), file[f]);
        CHECK(stat(path, &st) == 0, "stat %s", path);
        CHECK((uint64_t)st.st_blocks * 512 <= (1u << 20), "%s holds %llu bytes of a %zu-byte region", path,
              (unsigned long long)st.st_blocks * 512, n);
    }
    OK(knit_dsm_barrier());
}

static unsigned char push_value(int round, size_t i)
{
    return (unsigned char)(round * 37 + i * 11 + 1);
}

static void push(void)
{
    volatile unsigned char *a = (unsigned char *)knit_dsm_base() + (1u << 20);
    const size_t n = 64u << 10;
    OK(knit_dsm_barrier());
    for (int round = 1; round <= 20; round++) {
        if (rank == 0) {
            for (size_t i = 0; i < n; i++)
                a[i] = push_value(round, i);
            int left = size - 1;
            knit_request_t **req = calloc((size_t)size, sizeof(*req));
            int *got = calloc((size_t)size, sizeof(int));
            for (int r = 1; r < size; r++)
                OK(knit_irecv(ctx, &got[r], sizeof(int), r, 60, 0, &req[r]));
            while (left) {
                OK(knit_dsm_push()); /* returns at once; does nothing while one travels */
                for (int r = 1; r < size; r++) {
                    int done = 0;
                    if (req[r]) {
                        OK(knit_test(&req[r], &done, NULL));
                        left -= done;
                    }
                }
                if (left)
                    usleep(1000);
            }
            for (int r = 1; r < size; r++)
                CHECK(got[r] == round, "rank %d saw round %d, not %d", r, got[r], round);
            free(req);
            free(got);
        } else {
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (size_t i = 0; i < n;) {
                if (a[i] == push_value(round, i)) {
                    i++;
                    continue;
                }
                clock_gettime(CLOCK_MONOTONIC, &t);
                CHECK(t.tv_sec - t0.tv_sec < 20, "round %d: byte %zu is %u, not %u after 20 s of pushes", round, i,
                      a[i], push_value(round, i));
                sched_yield();
            }
            OK(knit_send(ctx, &round, sizeof(round), 0, 60, 0));
        }
        OK(knit_barrier(world)); /* (not a release) */
    }
    OK(knit_dsm_barrier());
    for (size_t i = 0; i < n; i++)
        CHECK(a[i] == push_value(20, i), "byte %zu after the barrier", i);
}

static void errors(void)
{
    CHECK(knit_dsm_init(ctx, 0) == KNIT_ERR_STATE, "a second init");
    CHECK(knit_dsm_unlock(3) == KNIT_ERR_STATE, "unlock of a lock not held");
    OK(knit_dsm_lock(3));
    CHECK(knit_dsm_lock(3) == KNIT_ERR_STATE, "lock of a lock held");
    CHECK(strstr(knit_dsm_last_error(), "holds it already"), "the error says %s", knit_dsm_last_error());
    OK(knit_dsm_unlock(3));
    CHECK(knit_dsm_alloc(0) == NULL, "alloc of 0 bytes");
    CHECK(knit_dsm_stats(NULL) == KNIT_ERR_INVAL, "stats(NULL)");
    OK(knit_dsm_free(NULL));
    OK(knit_dsm_barrier());
}

static unsigned char mig_value(int round, int slice, size_t i)
{
    return (unsigned char)(round * 31 + slice * 7 + i / 4096 + i % 251);
}

static void migrate(int expect_moves)
{
    unsigned char *base = (unsigned char *)knit_dsm_base() + (1u << 20);
    const size_t n = 256u << 10;
    volatile unsigned char *shared = base + (size_t)size * n; /* one page, byte r is rank r's */
    OK(knit_dsm_barrier());
    for (int round = 0; round < 24; round++) {
        int shift = round / 8;
        int mine = (rank + shift) % size, next = (rank + 1 + shift) % size;
        unsigned char *a = base + (size_t)mine * n;
        for (size_t i = 0; i < n; i++)
            a[i] = mig_value(round, mine, i);
        shared[rank] = (unsigned char)(round + rank);
        OK(knit_dsm_barrier());
        const unsigned char *b = base + (size_t)next * n;
        for (size_t i = 0; i < n; i++)
            CHECK(b[i] == mig_value(round, next, i), "round %d: byte %zu of slice %d is %u, not %u", round, i, next,
                  b[i], mig_value(round, next, i));
        for (int r = 0; r < size; r++)
            CHECK(shared[r] == (unsigned char)(round + r), "round %d: the shared page's byte %d is %u, not %u", round,
                  r, shared[r], (unsigned char)(round + r));
        OK(knit_dsm_barrier());
    }
    knit_dsm_stats_t st;
    OK(knit_dsm_stats(&st));
    if (knit_node(ctx) == 0 && knit_local_rank(ctx) == 0) {
        if (expect_moves)
            CHECK(st.moved > 0, "no home moved");
        else
            CHECK(st.moved == 0, "%llu homes moved with KNIT_DSM_MIGRATE=0", (unsigned long long)st.moved);
    }
}

int main(int argc, char **argv)
{
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    world = knit_comm_world(ctx);
    const char *cs = argc > 1 ? argv[1] : "same";
    /* (the region: 64 MiB, or the second argument's size; big's is its own) */
    size_t region = argc > 2 && strcmp(cs, "big") && strcmp(cs, "migrate") ? parse_size(argv[2]) : 0;
    if (!strcmp(cs, "refused")) {
        knit_status_t st = knit_dsm_init(ctx, 1 << 20);
        CHECK(st == KNIT_ERR_NOT_SUPPORTED, "init returned %s", knit_strerror(st));
        CHECK(*knit_dsm_last_error(), "no reason given");
        CHECK(!knit_dsm_base(), "a base after a failed init");
        if (rank == 0)
            printf("%s\n", knit_dsm_last_error());
        CHECK(knit_dsm_push() == KNIT_ERR_STATE, "a push without a region");
        if (rank == 0)
            printf("ok %s\n", cs);
        OK(knit_finalize(ctx));
        return 0;
    }
    if (!strcmp(cs, "conflict")) {
        const char *at = getenv("KNIT_DSM_ADDR");
        CHECK(at, "KNIT_DSM_ADDR is not set");
        if (rank == 1)
            CHECK(mmap((void *)(uintptr_t)strtoull(at, NULL, 0) + 8192, 4096, PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != MAP_FAILED,
                  "rank 1 cannot map its obstacle");
        knit_status_t st = knit_dsm_init(ctx, 1 << 20);
        CHECK(st == KNIT_ERR_NOMEM, "init returned %s", knit_strerror(st));
        CHECK(strstr(knit_dsm_last_error(), "rank 1 cannot map the region"), "the error says %s",
              knit_dsm_last_error());
        /* nothing is left half made: a region at another address works */
        OK(knit_barrier(world));
        if (rank == 0)
            printf("%s\nok %s\n", knit_dsm_last_error(), cs);
        OK(knit_finalize(ctx));
        return 0;
    }
    OK(knit_dsm_init(ctx, region ? region : !strcmp(cs, "size") ? 0 : (64u << 20)));
    void *b = knit_dsm_base();
    uint64_t at = (uint64_t)(uintptr_t)b, *all = malloc((size_t)size * sizeof(uint64_t));
    OK(knit_allgather(world, &at, all, 1, KNIT_UINT64));
    for (int r = 0; r < size; r++)
        CHECK(all[r] == at, "rank %d's region is at %#llx, mine at %p", r, (unsigned long long)all[r], b);
    free(all);
    if (!strcmp(cs, "same"))
        same();
    else if (!strcmp(cs, "counter"))
        counter();
    else if (!strcmp(cs, "prodcons"))
        prodcons();
    else if (!strcmp(cs, "stress"))
        stress();
    else if (!strcmp(cs, "alloc"))
        alloc();
    else if (!strcmp(cs, "big"))
        big(argc > 2 ? parse_size(argv[2]) : (8u << 20));
    else if (!strcmp(cs, "corrupt"))
        corrupt();
    else if (!strcmp(cs, "die"))
        die();
    else if (!strcmp(cs, "errors"))
        errors();
    else if (!strcmp(cs, "threads"))
        threads();
    else if (!strcmp(cs, "threadrel"))
        threadrel();
    else if (!strcmp(cs, "push"))
        push();
    else if (!strcmp(cs, "sparse"))
        sparse();
    else if (!strcmp(cs, "migrate"))
        migrate(argc > 2 && !strcmp(argv[2], "1"));
    else if (!strcmp(cs, "size")) /* KNIT_DSM_SIZE=12m: init(ctx, 0) took it */
        CHECK(knit_dsm_size() == (12u << 20), "the region has %zu bytes", knit_dsm_size());
    else
        CHECK(0, "unknown case %s", cs);
    if (strcmp(cs, "corrupt"))
        OK(knit_dsm_finalize(ctx));
    OK(knit_barrier(world));
    if (rank == 0)
        printf("ok %s\n", cs);
    OK(knit_finalize(ctx));
    return 0;
}
