/*
 * Point-to-point tests, run by tests/job/test_p2p.sh through knitrun over
 * several layouts.  usage: p2p_test CASE [args]; prints "ok CASE" on rank
 * 0 when every rank passed, exits nonzero (and says why) otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "knit.h"

static knit_ctx_t *ctx;
static int rank, size;

static uint8_t pattern(size_t i, uint32_t seed)
{
    return (uint8_t)((i * 131u + seed * 7u + (i >> 8)) ^ (seed >> 3));
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pattern(i, seed);
}

static void verify(const uint8_t *b, size_t n, uint32_t seed, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK(b[i] == pattern(i, seed), "%s: byte %zu of %zu is %u, expected %u", what, i, n, b[i],
              pattern(i, seed));
}

static void barrier(void)
{
    /* dissemination barrier over p2p, tag reserved for it */
    for (int d = 1; d < size; d <<= 1) {
        char x = 0, y;
        knit_request_t *r;
        OK(knit_irecv(ctx, &y, 1, (rank - d + size) % size, 1 << 30, 99, &r));
        OK(knit_send(ctx, &x, 1, (rank + d) % size, 1 << 30, 99));
        OK(knit_wait(&r, NULL));
    }
}

/* Sizes around every threshold, then powers of two up to max. */
static size_t build_sizes(size_t *out, size_t max)
{
    size_t n = 0;
    /* the largest shm packet is a quarter of KNIT_SHM_BUFFER */
    const char *env[] = {"KNIT_INLINE_MAX", "KNIT_EAGER_MAX", "KNIT_CMA_MIN", "KNIT_SHM_BUFFER",
                         "KNIT_BULK_CHUNK", "KNIT_COOP_CHUNK", "KNIT_NET_BOUNCE_SIZE", "KNIT_NET_EAGER_MAX"};
    size_t defaults[] = {28, 16384, 16384, 256 << 10, 1 << 20, 64 << 10, 32 << 10, 64 << 10};
    out[n++] = 0;
    out[n++] = 1;
    for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
        const char *v = getenv(env[i]);
        size_t t = v ? parse_size(v) : defaults[i];
        if (!strcmp(env[i], "KNIT_SHM_BUFFER"))
            t /= 4;
        if (!strcmp(env[i], "KNIT_COOP_CHUNK"))
            t *= 2;
        for (int d = -1; d <= 1; d++)
            if (t + d > 1 && t + d <= max)
                out[n++] = t + (size_t)d;
    }
    for (size_t s = 2; s <= max; s *= 4)
        out[n++] = s + 3;
    out[n++] = max;
    return n;
}

/* Every pair (i -> j), sizes around thresholds, receiver-first and
 * sender-first. */
/* The sizes case's buffers come from malloc (large ones: the shared heap),
 * or are mapped by the program itself (outside it: cross-memory attach)
 * where P2P_MMAP names them: "send", "recv", or "odd" (both, on odd ranks). */
static int sizes_mapped(const char *which)
{
    const char *m = getenv("P2P_MMAP");
    return m && (!strcmp(m, which) || (!strcmp(m, "odd") && rank % 2));
}

static void *sizes_buf(size_t len, const char *which)
{
    if (!sizes_mapped(which))
        return malloc(len);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void sizes_free(void *p, size_t len, const char *which)
{
    if (sizes_mapped(which))
        munmap(p, len);
    else
        free(p);
}

static void case_sizes(size_t max)
{
    size_t sizes[80];
    size_t ns = build_sizes(sizes, max);
    uint8_t *sbuf = sizes_buf(max + 1, "send"), *rbuf = sizes_buf(max + 64, "recv");
    CHECK(sbuf && rbuf, "buffers");
    for (int order = 0; order < 2; order++) {
        for (size_t k = 0; k < ns; k++) {
            size_t n = sizes[k];
            for (int d = 1; d < size; d++) {
                int to = (rank + d) % size, from = (rank - d + size) % size;
                uint32_t sseed = (uint32_t)(rank * 1000 + k * 10 + order);
                uint32_t rseed = (uint32_t)(from * 1000 + k * 10 + order);
                fill(sbuf, n, sseed);
                memset(rbuf, 0xee, n + 64);
                knit_request_t *rr, *sr;
                knit_msg_status_t st;
                if (order == 0) { /* receiver first: everyone posts, barrier, then sends */
                    OK(knit_irecv(ctx, rbuf, n, from, (int)k, 1, &rr));
                    barrier();
                    OK(knit_isend(ctx, sbuf, n, to, (int)k, 1, &sr));
                } else { /* sender first: send, barrier, then post */
                    OK(knit_isend(ctx, sbuf, n, to, (int)k, 1, &sr));
                    barrier();
                    OK(knit_irecv(ctx, rbuf, n, from, (int)k, 1, &rr));
                }
                OK(knit_wait(&rr, &st));
                OK(knit_wait(&sr, NULL));
                CHECK(st.source == from && st.tag == (int)k && st.length == n && st.msg_length == n,
                      "status src %d tag %d len %zu/%zu for %zu bytes", st.source, st.tag, st.length,
                      st.msg_length, n);
                verify(rbuf, n, rseed, order ? "sender-first" : "receiver-first");
                for (int i = 0; i < 64; i++)
                    CHECK(rbuf[n + (size_t)i] == 0xee, "write past the message end at %zu", n);
            }
        }
    }
    sizes_free(sbuf, max + 1, "send");
    sizes_free(rbuf, max + 64, "recv");
}

/* Receive buffers shorter than the message. */
static void case_truncate(void)
{
    /* 50000 and 60000: eager in two packets between nodes, cut in the
     * second and in the first; 1024 and 4000: offered from the sender's
     * shared heap within a node (KNIT_HEAP_RNDV_MIN) */
    const size_t sizes[] = {10, 100, 20000, 50000, 60000, 300000, 3 << 20, 1024, 4000};
    uint8_t *buf = malloc((3 << 20) + 64);
    CHECK(buf, "malloc");
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], cap = k == 3 ? n - n / 3 : n / 3;
        for (int order = 0; order < 2; order++) {
            if (rank == 0 && size > 1) {
                fill(buf, n, (uint32_t)k);
                if (order)
                    barrier();
                OK(knit_send(ctx, buf, n, 1, 5, 2));
                if (!order)
                    barrier();
            } else if (rank == 1) {
                memset(buf, 0xee, n);
                knit_request_t *r;
                knit_msg_status_t st;
                if (order)
                    barrier();
                OK(knit_irecv(ctx, buf, cap, 0, 5, 2, &r));
                if (!order)
                    barrier();
                knit_status_t ret = knit_wait(&r, &st);
                CHECK(ret == KNIT_ERR_TRUNCATE && st.error == KNIT_ERR_TRUNCATE,
                      "truncated receive returned %s", knit_strerror(ret));
                CHECK(st.length == cap && st.msg_length == n, "lengths %zu/%zu", st.length, st.msg_length);
                verify(buf, cap, (uint32_t)k, "truncated");
                for (size_t i = cap; i < n; i++)
                    CHECK(buf[i] == 0xee, "byte %zu past a %zu-byte buffer was written", i, cap);
            } else {
                barrier();
            }
        }
    }
    free(buf);
}

/* Wildcards and ordering under interleaved tags. */
static void case_match(void)
{
    enum { N = 200 };
    if (rank != 0) {
        /* messages with tags cycling 0..3, values counting up per tag */
        /* nonblocking: rank 0 takes them out of order, and a rendezvous
         * send may wait for its match */
        static int *bufs[N];
        knit_request_t *reqs[N];
        for (int i = 0; i < N; i++) {
            size_t len = (i % 7 == 0) ? 40000 : 2 * sizeof(int); /* some rendezvous ones */
            bufs[i] = calloc(1, len);
            bufs[i][0] = i;
            bufs[i][1] = rank;
            OK(knit_isend(ctx, bufs[i], len, 0, i % 4, 3, &reqs[i]));
        }
        OK(knit_waitall(N, reqs, NULL));
        for (int i = 0; i < N; i++)
            free(bufs[i]);
    } else {
        /* specific tag 3 first from each sender: per-sender order within a tag */
        int *buf = malloc(40000);
        int next[64][4] = {{0}};
        for (int s = 1; s < size; s++)
            for (int i = 3; i < N; i += 4) {
                knit_msg_status_t st;
                OK(knit_recv(ctx, buf, 40000, s, 3, 3, &st));
                CHECK(buf[0] == i && buf[1] == s && st.tag == 3, "tag 3 from %d: got %d, expected %d", s,
                      buf[0], i);
            }
        /* the rest with ANY_SOURCE + ANY_TAG: per (sender) order must hold */
        int remaining = (size - 1) * (N - N / 4);
        for (int s = 1; s < size; s++)
            next[s][3] = N;
        while (remaining--) {
            knit_msg_status_t st;
            OK(knit_recv(ctx, buf, 40000, KNIT_ANY_SOURCE, KNIT_ANY_TAG, 3, &st));
            int s = st.source;
            CHECK(s >= 1 && s < size && buf[1] == s, "bad source %d / %d", s, buf[1]);
            /* the oldest message from s not yet received (tags 0..2) */
            int expect = N;
            for (int t = 0; t < 3; t++) {
                int i = next[s][t] * 4 + t;
                if (i < N && i < expect)
                    expect = i;
            }
            CHECK(buf[0] == expect && st.tag == expect % 4, "from %d: got message %d (tag %d), expected %d", s,
                  buf[0], st.tag, expect);
            next[s][st.tag]++;
        }
        /* wrong communicator must not match */
        int flag;
        OK(knit_iprobe(ctx, KNIT_ANY_SOURCE, KNIT_ANY_TAG, 3, &flag, NULL));
        CHECK(!flag, "a message left over");
        free(buf);
    }
    barrier();
}

/* Many outstanding requests in both directions at once. */
static void case_many(void)
{
    enum { N = 1000 };
    int peer = rank ^ 1;
    if (peer >= size) {
        barrier();
        return;
    }
    static int sbuf[N][8], rbuf[N][8];
    knit_request_t *reqs[2 * N];
    for (int i = 0; i < N; i++) {
        OK(knit_irecv(ctx, rbuf[i], sizeof(rbuf[i]), peer, i, 4, &reqs[i]));
    }
    for (int i = N - 1; i >= 0; i--) {
        for (int j = 0; j < 8; j++)
            sbuf[i][j] = rank * 100000 + i * 8 + j;
        OK(knit_isend(ctx, sbuf[i], sizeof(sbuf[i]), peer, i, 4, &reqs[N + i]));
    }
    knit_msg_status_t sts[2 * N];
    OK(knit_waitall(2 * N, reqs, sts));
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 8; j++)
            CHECK(rbuf[i][j] == peer * 100000 + i * 8 + j, "request %d word %d", i, j);
    barrier();
}

/*
 * A token passed around the ring, every receive a wait that goes to sleep
 * at once (run with KNIT_WAIT=block, KNIT_SPIN_COUNT=1, KNIT_YIELD_TIME=0):
 * every hop needs the doorbell.  A lost wake-up shows as a hop that waits
 * for the sleep's 1 s timeout: a round of 0.9 s or more (the rank that
 * slept loses the whole second, the others all of it but the trip of the
 * token; a host that stops the job's cpus for half a second, seen in CI,
 * is not one); a wait that spins instead of sleeping (a
 * wait descriptor that never stops being readable) as a slow mean hop,
 * when max_mean_ms is given: the spinning ranks take the cpus from the one
 * that has the token.
 */
static void case_wakes(int rounds, double max_mean_ms)
{
    const size_t sizes[] = {8, 3000, 100000};
    static uint8_t buf[100000];
    double worst = 0, start = check_now();
    int worst_round = 0;
    for (int i = 0; i < rounds; i++) {
        size_t n = sizes[i % 3];
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        double t0 = check_now();
        if (rank == 0) {
            fill(buf, n, (uint32_t)i);
            OK(knit_send(ctx, buf, n, next, i, 9));
            OK(knit_recv(ctx, buf, n, prev, i, 9, NULL));
        } else {
            OK(knit_recv(ctx, buf, n, prev, i, 9, NULL));
            OK(knit_send(ctx, buf, n, next, i, 9));
        }
        verify(buf, n, (uint32_t)i, "token");
        double t = check_now() - t0;
        if (t > worst) {
            worst = t;
            worst_round = i;
        }
    }
    CHECK(worst < 0.9, "round %d (%zu bytes) took %.3f s: a wake-up was lost", worst_round,
          sizes[worst_round % 3], worst);
    double mean_ms = (check_now() - start) * 1e3 / rounds;
    CHECK(max_mean_ms <= 0 || mean_ms < max_mean_ms, "a round took %.2f ms on average (limit %.1f): waits spin",
          mean_ms, max_mean_ms);
    barrier();
}

/* A rank sends to itself: every protocol. */
static void case_self(void)
{
    const size_t sizes[] = {0, 5, 100, 20000, 1 << 20};
    uint8_t *a = malloc(1 << 20), *b = malloc(1 << 20);
    for (size_t k = 0; k < 5; k++) {
        size_t n = sizes[k];
        fill(a, n, (uint32_t)k);
        knit_request_t *rr, *sr;
        if (k & 1) {
            OK(knit_irecv(ctx, b, n, rank, 7, 5, &rr));
            OK(knit_isend(ctx, a, n, rank, 7, 5, &sr));
        } else {
            OK(knit_isend(ctx, a, n, rank, 7, 5, &sr));
            OK(knit_irecv(ctx, b, n, rank, 7, 5, &rr));
        }
        knit_msg_status_t st;
        OK(knit_wait(&rr, &st));
        OK(knit_wait(&sr, NULL));
        CHECK(st.length == n && st.source == rank, "self %zu", n);
        verify(b, n, (uint32_t)k, "self");
    }
    free(a);
    free(b);
    barrier();
}

/* 10,000 unexpected messages from every other rank, all arrive in order. */
static void case_flood(int count)
{
    if (rank != 0) {
        for (int i = 0; i < count; i++) {
            int v[3] = {rank, i, ~i};
            size_t len = (i % 10 == 9) ? 2000 : sizeof(v);
            char buf[2000];
            memset(buf, i & 0xff, sizeof(buf));
            memcpy(buf, v, sizeof(v));
            OK(knit_send(ctx, buf, len, 0, 9, 6)); /* eager sends complete without a receive */
        }
        barrier();
    } else {
        barrier(); /* every message is now unexpected or in flight */
        int *next = calloc((size_t)size, sizeof(int));
        char buf[2000];
        for (long k = 0; k < (long)count * (size - 1); k++) {
            knit_msg_status_t st;
            OK(knit_recv(ctx, buf, sizeof(buf), KNIT_ANY_SOURCE, 9, 6, &st));
            int v[3];
            memcpy(v, buf, sizeof(v));
            CHECK(v[0] == st.source && v[1] == next[st.source] && v[2] == ~v[1],
                  "from %d: got %d, expected %d", st.source, v[1], next[st.source]);
            size_t want = (v[1] % 10 == 9) ? 2000 : 12;
            CHECK(st.length == want, "length %zu", st.length);
            for (size_t i = 12; i < st.length; i++)
                CHECK((unsigned char)buf[i] == (unsigned)(v[1] & 0xff), "payload byte %zu", i);
            next[st.source]++;
        }
        free(next);
    }
    barrier();
}

/* Probe, matched probe, cancel, synchronous send. */
static void case_probe(void)
{
    if (size < 2) {
        barrier();
        return;
    }
    if (rank == 1) {
        uint8_t *buf = malloc(100000);
        fill(buf, 100000, 42);
        OK(knit_send(ctx, buf, 50, 0, 11, 7));
        OK(knit_send(ctx, buf, 100000, 0, 12, 7));
        /* synchronous: completes only once matched; rank 0 waits for our
         * next message before it posts the receive */
        knit_request_t *r;
        OK(knit_isend_flags(ctx, buf, 10, 0, 13, 7, KNIT_SEND_SYNC, &r));
        int done;
        OK(knit_test(&r, &done, NULL));
        CHECK(!done || r == NULL, "test");
        OK(knit_send(ctx, buf, 1, 0, 14, 7));
        OK(knit_wait(&r, NULL));
        free(buf);
    } else if (rank == 0) {
        knit_msg_status_t st;
        OK(knit_probe(ctx, 1, 12, 7, &st));
        CHECK(st.msg_length == 100000 && st.tag == 12, "probe 12");
        int flag;
        knit_message_t *m;
        OK(knit_improbe(ctx, 1, 11, 7, &flag, &m, &st));
        CHECK(flag && st.length == 50, "improbe");
        uint8_t *buf = malloc(100000);
        knit_request_t *r;
        OK(knit_imrecv(ctx, buf, 100000, &m, &r));
        OK(knit_wait(&r, &st));
        CHECK(st.length == 50 && m == NULL, "mrecv");
        verify(buf, 50, 42, "mrecv");
        OK(knit_recv(ctx, buf, 100000, 1, 12, 7, &st));
        verify(buf, 100000, 42, "after probe");
        char c;
        OK(knit_recv(ctx, &c, 1, 1, 14, 7, NULL));
        OK(knit_recv(ctx, buf, 10, 1, 13, 7, &st));
        verify(buf, 10, 42, "ssend");
        /* cancel: an announced receive and a wildcard one */
        OK(knit_irecv(ctx, buf, 100000, 1, 99, 7, &r));
        OK(knit_cancel(r));
        knit_status_t ret = knit_wait(&r, &st);
        CHECK(ret == KNIT_ERR_CANCELED, "cancel announced: %s", knit_strerror(ret));
        OK(knit_irecv(ctx, buf, 10, KNIT_ANY_SOURCE, 99, 7, &r));
        OK(knit_cancel(r));
        ret = knit_wait(&r, &st);
        CHECK(ret == KNIT_ERR_CANCELED, "cancel: %s", knit_strerror(ret));
        free(buf);
    }
    barrier();
}

/* Messages matched while still arriving: rank 1 sends eager messages that
 * take several packets between nodes (many with a small KNIT_NET_BOUNCE_SIZE
 * and few credits); rank 0 takes each as soon as a probe sees its first
 * packet, by improbe+imrecv, by irecv, and into a shorter buffer. */
static void case_partial(void)
{
    enum { N = 60000 };
    if (size < 2 || rank > 1) {
        barrier();
        return;
    }
    uint8_t *buf = malloc(N + 64);
    CHECK(buf, "malloc");
    if (rank == 1) {
        for (int k = 0; k < 3; k++) {
            fill(buf, N, (uint32_t)(100 + k));
            OK(knit_send(ctx, buf, N, 0, 20 + k, 8));
        }
    } else {
        for (int k = 0; k < 3; k++) {
            knit_msg_status_t st;
            knit_message_t *m = NULL;
            int flag = 0;
            while (!flag) {
                if (k == 0)
                    OK(knit_improbe(ctx, 1, 20 + k, 8, &flag, &m, &st));
                else
                    OK(knit_iprobe(ctx, 1, 20 + k, 8, &flag, &st));
            }
            CHECK(st.msg_length == N, "probe length %zu", st.msg_length);
            size_t cap = k == 2 ? N / 2 : N;
            memset(buf, 0xee, N + 64);
            knit_request_t *r;
            if (k == 0)
                OK(knit_imrecv(ctx, buf, cap, &m, &r));
            else
                OK(knit_irecv(ctx, buf, cap, 1, 20 + k, 8, &r));
            knit_status_t ret = knit_wait(&r, &st);
            CHECK(ret == (k == 2 ? KNIT_ERR_TRUNCATE : KNIT_OK), "message %d: %s", k, knit_strerror(ret));
            CHECK(st.length == cap && st.msg_length == N, "message %d: lengths %zu/%zu", k, st.length,
                  st.msg_length);
            verify(buf, cap, (uint32_t)(100 + k), "matched while arriving");
            for (size_t i = cap; i < N + 64; i++)
                CHECK(buf[i] == 0xee, "message %d: byte %zu past a %zu-byte buffer was written", k, i, cap);
        }
    }
    free(buf);
    barrier();
}

/* Bad arguments are refused, nothing crashes. */
static void case_args(void)
{
    knit_request_t *r;
    char b[4];
    CHECK(knit_isend(ctx, b, 4, size, 0, 0, &r) == KNIT_ERR_INVAL, "peer out of range");
    CHECK(knit_isend(ctx, b, 4, -1, 0, 0, &r) == KNIT_ERR_INVAL, "negative peer");
    CHECK(knit_isend(ctx, b, 4, 0, -5, 0, &r) == KNIT_ERR_INVAL, "negative tag");
    CHECK(knit_isend(ctx, NULL, 4, 0, 0, 0, &r) == KNIT_ERR_INVAL, "null buffer");
    CHECK(knit_irecv(ctx, b, 4, -7, 0, 0, &r) == KNIT_ERR_INVAL, "bad source");
    CHECK(knit_irecv(ctx, b, 4, 0, -9, 0, &r) == KNIT_ERR_INVAL, "bad tag");
    CHECK(knit_isend(NULL, b, 4, 0, 0, 0, &r) == KNIT_ERR_INVAL, "null ctx");
    CHECK(knit_wait(NULL, NULL) == KNIT_ERR_INVAL, "null request");
    barrier();
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: p2p_test sizes [max]|truncate|match|many|self|flood [n]|probe|partial|args|wakes [n [max mean ms]]\n");
        return 2;
    }
    OK(knit_init(&argc, &argv, &ctx));
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    const char *c = argv[1];
    if (!strcmp(c, "sizes"))
        case_sizes(argc > 2 ? parse_size(argv[2]) : (size_t)4 << 20);
    else if (!strcmp(c, "truncate"))
        case_truncate();
    else if (!strcmp(c, "match"))
        case_match();
    else if (!strcmp(c, "many"))
        case_many();
    else if (!strcmp(c, "self"))
        case_self();
    else if (!strcmp(c, "flood"))
        case_flood(argc > 2 ? atoi(argv[2]) : 10000);
    else if (!strcmp(c, "probe"))
        case_probe();
    else if (!strcmp(c, "partial"))
        case_partial();
    else if (!strcmp(c, "args"))
        case_args();
    else if (!strcmp(c, "wakes"))
        case_wakes(argc > 2 ? atoi(argv[2]) : 3000, argc > 3 ? atof(argv[3]) : 0);
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    OK(knit_finalize(ctx));
    if (rank == 0)
        printf("ok %s\n", c);
    return 0;
}
