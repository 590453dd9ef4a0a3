/* shm transport: producers and a consumer in forked processes on one node
 * segment, with tiny queues, buffers and boxes so that credits run out and
 * wrap often: the shared queue (full -> AGAIN, order per sender, many
 * producers, the send buffer), the switch to a fast box (in order, also
 * when the queue is full at that moment), limits and the layout. */
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "shm/shm.h"
#include "util/time.h"

#define MAXN 8
#define SLOT 256u

/* packet k of sender s: tag k, pkt_len(k) bytes of value (s * 31 + k + i) */
static size_t pkt_len(uint64_t k)
{
    return k % (SLOT + 1);
}

struct got {
    uint64_t next[MAXN];
    int bad;
    int first; /* job rank of local rank 0 */
};

static void on_pkt(void *arg, int src, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    struct got *g = arg;
    int s = src - g->first;
    if (s < 0 || s >= MAXN) {
        g->bad++;
        return;
    }
    uint64_t k = g->next[s];
    const unsigned char *p = payload;
    if (h->tag != (int32_t)k || len != pkt_len(k) || h->len != len)
        g->bad++;
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)(s * 31 + k + i))
            g->bad++;
    g->next[s]++;
}

static knit_status_t send_k(kn_tl_t *tl, int me, int to, uint64_t k)
{
    unsigned char buf[SLOT];
    size_t len = pkt_len(k);
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(me * 31 + k + i);
    kn_pkt_hdr_t h = {.type = KN_PKT_EAGER, .tag = (int32_t)k, .len = len};
    return tl->ops->send(tl, to, &h, buf, len);
}

static kn_shm_params_t params(const char *jobid, int n, int me, unsigned queue, unsigned ring, size_t buf,
                              unsigned fbox_max, unsigned fbox_after)
{
    return (kn_shm_params_t){.jobid = jobid, .local_rank = me, .local_size = n, .queue_entries = queue,
                             .ring_entries = ring, .buf_size = buf, .fbox_max = fbox_max,
                             .fbox_after = fbox_after};
}

static void jobid_make(char *buf, size_t len)
{
    static int k;
    snprintf(buf, len, "ut%d.%d", (int)getpid(), k++);
}

/* ------------------------------------------------------------ two ranks */

#define TOTAL 5000u

static void consumer(kn_shm_params_t *p, int go, int res)
{
    struct got g = {{0}, 0, 0};
    kn_tl_t *tl;
    char c;
    if (kn_shm_attach(p, on_pkt, &g, &tl) != KNIT_OK || write(res, "a", 1) != 1 || read(go, &c, 1) != 1)
        _exit(10);
    uint64_t t0 = kn_time_ns();
    while (g.next[0] < TOTAL && kn_time_ns() - t0 < 20 * KN_NSEC_PER_SEC)
        tl->ops->progress(tl);
    /* now sleep on the doorbell until one more packet comes */
    if (write(res, "s", 1) != 1)
        _exit(11);
    uint64_t t1 = kn_time_ns();
    while (g.next[0] == TOTAL && kn_time_ns() - t1 < 10 * KN_NSEC_PER_SEC)
        if (!tl->ops->progress(tl))
            kn_tl_sleep(&tl, 1, NULL, 0, 5 * KN_NSEC_PER_SEC, NULL, NULL);
    uint64_t slept_ms = (kn_time_ns() - t1) / KN_NSEC_PER_MSEC;
    unsigned out_boxes, in_boxes;
    kn_shm_fbox_count(tl, &out_boxes, &in_boxes);
    uint64_t out[4] = {g.next[0], (uint64_t)g.bad, slept_ms, in_boxes};
    if (write(res, out, sizeof(out)) != sizeof(out))
        _exit(12);
    _exit(0);
}

/* The producer's side of a stream of TOTAL + 1 packets to a consumer that
 * starts late (credits run out first), then sleeps for the last one. */
static void stream_two(unsigned fbox_max, unsigned fbox_after, unsigned expect_boxes)
{
    char jobid[32];
    jobid_make(jobid, sizeof(jobid));
    kn_shm_params_t p0 = params(jobid, 2, 0, 4, 4, 4096, fbox_max, fbox_after);
    kn_shm_params_t p1 = p0;
    p1.local_rank = 1;
    KN_CHECK_EQ(kn_shm_create(&p0), KNIT_OK);
    int go[2], res[2];
    KN_CHECK(pipe(go) == 0 && pipe(res) == 0);
    pid_t pid = fork();
    if (pid == 0)
        consumer(&p1, go[0], res[1]);
    struct got unused = {{0}, 0, 0};
    kn_tl_t *tl;
    char c;
    KN_CHECK_EQ(kn_shm_attach(&p0, on_pkt, &unused, &tl), KNIT_OK);
    KN_CHECK_EQ(read(res[0], &c, 1), 1);
    KN_CHECK_EQ(kn_shm_ready(tl), KNIT_OK); /* unlinks the file */

    /* nobody consumes yet: packets 0..3 are inline, the ring or queue holds 4 */
    uint64_t k = 0;
    while (send_k(tl, 0, 1, k) == KNIT_OK && k < 100)
        k++;
    KN_CHECK_EQ(k, 4);
    KN_CHECK_EQ(send_k(tl, 0, 1, k), KNIT_ERR_AGAIN); /* refused, not lost */
    KN_CHECK_EQ(write(go[1], "g", 1), 1);
    uint64_t t0 = kn_time_ns(), again = 0;
    while (k < TOTAL && kn_time_ns() - t0 < 20 * KN_NSEC_PER_SEC) {
        knit_status_t st = send_k(tl, 0, 1, k);
        if (st == KNIT_OK) {
            k++;
        } else {
            KN_CHECK_EQ(st, KNIT_ERR_AGAIN);
            again++;
            tl->ops->progress(tl);
        }
    }
    KN_CHECK_EQ(k, TOTAL);
    KN_CHECK(again > 0); /* credits ran out while the consumer drained */
    /* a payload bigger than a quarter of the buffer is refused */
    unsigned char big[4096 / 4 + 1] = {0};
    kn_pkt_hdr_t h = {.type = KN_PKT_EAGER, .tag = 0};
    KN_CHECK_EQ(tl->ops->send(tl, 1, &h, big, sizeof(big)), KNIT_ERR_INVAL);

    KN_CHECK_EQ(read(res[0], &c, 1), 1); /* consumer is about to sleep */
    KN_CHECK_EQ(send_k(tl, 0, 1, TOTAL), KNIT_OK); /* the doorbell must wake it */
    uint64_t out[4];
    KN_CHECK_EQ(read(res[0], out, sizeof(out)), (ssize_t)sizeof(out));
    int status;
    KN_CHECK_EQ(waitpid(pid, &status, 0), pid);
    KN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    KN_CHECK_EQ(out[0], TOTAL + 1);
    KN_CHECK_EQ(out[1], 0);
    KN_CHECK(out[2] < 4000); /* woken by the doorbell, not by the 5 s timeout */
    KN_CHECK_EQ(out[3], expect_boxes);
    unsigned ob, ib;
    kn_shm_fbox_count(tl, &ob, &ib);
    KN_CHECK_EQ(ob, expect_boxes);
    tl->ops->destroy(tl);
}

KN_TEST(queue_credits_order_wrap_and_doorbell)
{
    stream_two(0, 0, 0); /* no fast boxes: every packet through the queue */
}

KN_TEST(fastbox_credits_order_wrap_and_doorbell)
{
    stream_two(1, 0, 1); /* a fast box from the first packet on */
}

/* ------------------------------------------------------------ many ranks */

struct job {
    char jobid[32];
    int n;
    kn_shm_params_t p[MAXN];
    int res[2];
};

static void job_start(struct job *j, int n, unsigned queue, unsigned ring, size_t buf, unsigned fbox_max,
                      unsigned fbox_after)
{
    jobid_make(j->jobid, sizeof(j->jobid));
    j->n = n;
    for (int i = 0; i < n; i++)
        j->p[i] = params(j->jobid, n, i, queue, ring, buf, fbox_max, fbox_after);
    KN_CHECK_EQ(kn_shm_create(&j->p[0]), KNIT_OK);
    KN_CHECK(pipe(j->res) == 0);
}

/* A producer process: sends total packets to rank 0 (sleeping on the
 * doorbell whenever the queue stays full), then reports
 * {sent, AGAINs, longest sleep in ms, fast boxes}. */
static void producer(struct job *j, int me, uint64_t total, int attach_fd)
{
    struct got unused = {{0}, 0, 0};
    kn_tl_t *tl;
    if (kn_shm_attach(&j->p[me], on_pkt, &unused, &tl) != KNIT_OK)
        _exit(20);
    char c = 'a';
    if (write(attach_fd, &c, 1) != 1 || read(attach_fd, &c, 1) != 1)
        _exit(21);
    uint64_t k = 0, again = 0, longest = 0, t0 = kn_time_ns();
    unsigned spins = 0;
    while (k < total && kn_time_ns() - t0 < 60 * KN_NSEC_PER_SEC) {
        knit_status_t st = send_k(tl, me, 0, k);
        if (st == KNIT_OK) {
            k++;
            spins = 0;
            continue;
        }
        if (st != KNIT_ERR_AGAIN)
            _exit(22);
        again++;
        if (++spins < 50) {
            tl->ops->progress(tl);
            continue;
        }
        /* room must ring the doorbell: a lost wake-up sleeps the whole 2 s */
        uint64_t s0 = kn_time_ns();
        kn_tl_sleep(&tl, 1, NULL, 0, 2 * KN_NSEC_PER_SEC, NULL, NULL);
        uint64_t ms = (kn_time_ns() - s0) / KN_NSEC_PER_MSEC;
        longest = ms > longest ? ms : longest;
    }
    unsigned ob, ib;
    kn_shm_fbox_count(tl, &ob, &ib);
    uint64_t out[5] = {(uint64_t)me, k, again, longest, ob};
    if (write(j->res[1], out, sizeof(out)) != sizeof(out))
        _exit(23);
    /* stay until the consumer is done with our buffer */
    if (read(attach_fd, &c, 1) < 0)
        _exit(24);
    _exit(0);
}

/* Rank 0 consumes total packets from each of the other ranks, sleeping
 * when idle; returns the processes' reports in rep[rank][0..4]. */
static void run_many(struct job *j, uint64_t total, int consume_late_ms, uint64_t rep[MAXN][5],
                     unsigned *in_boxes)
{
    int ctl[MAXN][2];
    pid_t pids[MAXN];
    for (int r = 1; r < j->n; r++) {
        KN_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, ctl[r]) == 0);
        pids[r] = fork();
        if (pids[r] == 0)
            producer(j, r, total, ctl[r][1]);
    }
    struct got g = {{0}, 0, 0};
    kn_tl_t *tl;
    KN_CHECK_EQ(kn_shm_attach(&j->p[0], on_pkt, &g, &tl), KNIT_OK);
    char c;
    for (int r = 1; r < j->n; r++)
        KN_CHECK_EQ(read(ctl[r][0], &c, 1), 1);
    KN_CHECK_EQ(kn_shm_ready(tl), KNIT_OK);
    for (int r = 1; r < j->n; r++)
        KN_CHECK_EQ(write(ctl[r][0], "g", 1), 1);
    if (consume_late_ms)
        usleep((useconds_t)consume_late_ms * 1000); /* let the queue fill and the producers sleep */
    uint64_t t0 = kn_time_ns(), want = total * (uint64_t)(j->n - 1), have = 0;
    while (have < want && kn_time_ns() - t0 < 60 * KN_NSEC_PER_SEC) {
        if (!tl->ops->progress(tl))
            kn_tl_sleep(&tl, 1, NULL, 0, 100 * KN_NSEC_PER_MSEC, NULL, NULL);
        have = 0;
        for (int r = 1; r < j->n; r++)
            have += g.next[r];
    }
    for (int r = 1; r < j->n; r++) {
        KN_CHECK_EQ(g.next[r], total);
        uint64_t out[5];
        KN_CHECK_EQ(read(j->res[0], out, sizeof(out)), (ssize_t)sizeof(out));
        KN_CHECK(out[0] >= 1 && out[0] < (uint64_t)j->n);
        memcpy(rep[out[0]], out, sizeof(out));
    }
    KN_CHECK_EQ(g.bad, 0);
    unsigned ob;
    kn_shm_fbox_count(tl, &ob, in_boxes);
    for (int r = 1; r < j->n; r++) {
        KN_CHECK_EQ(write(ctl[r][0], "e", 1), 1);
        int status;
        KN_CHECK_EQ(waitpid(pids[r], &status, 0), pids[r]);
        KN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    tl->ops->destroy(tl);
}

KN_TEST(queue_many_producers_order_and_full_again)
{
    /* 5 producers into one queue of 8 cells, payloads inline and through
     * each producer's 4 KiB send buffer; no fast boxes */
    struct job j;
    job_start(&j, 6, 8, 4, 4096, 0, 0);
    uint64_t rep[MAXN][5];
    unsigned in_boxes;
    run_many(&j, 3000, 50, rep, &in_boxes);
    uint64_t again = 0;
    for (int r = 1; r < j.n; r++) {
        KN_CHECK_EQ(rep[r][1], 3000);
        again += rep[r][2];
        KN_CHECK(rep[r][3] < 1500); /* every sleep ended by a doorbell (room), none by its 2 s timeout */
        KN_CHECK_EQ(rep[r][4], 0);
    }
    KN_CHECK(again > 0);
    KN_CHECK_EQ(in_boxes, 0);
}

KN_TEST(fastbox_limits_per_receiver)
{
    /* 3 producers, at most 2 boxes per rank: two switch, one stays in the
     * queue, and all keep their order */
    struct job j;
    job_start(&j, 4, 16, 8, 8192, 2, 3);
    uint64_t rep[MAXN][5];
    unsigned in_boxes;
    run_many(&j, 2000, 0, rep, &in_boxes);
    KN_CHECK_EQ(in_boxes, 2);
    KN_CHECK_EQ(rep[1][4] + rep[2][4] + rep[3][4], 2);
}

/* The switch to a fast box while the consumer does not consume: the
 * packets before it sit in the queue, the ones after it in the box. */
KN_TEST(fastbox_switch_in_order)
{
    char jobid[32];
    jobid_make(jobid, sizeof(jobid));
    /* queue 4, box after 4 packets: the marker finds the queue full */
    kn_shm_params_t p0 = params(jobid, 2, 0, 4, 8, 4096, 1, 4);
    kn_shm_params_t p1 = p0;
    p1.local_rank = 1;
    KN_CHECK_EQ(kn_shm_create(&p0), KNIT_OK);
    struct got g0 = {{0}, 0, 0}, g1 = {{0}, 0, 0};
    kn_tl_t *a, *b;
    /* both ends in this process: the consumer runs only when we say */
    KN_CHECK_EQ(kn_shm_attach(&p0, on_pkt, &g0, &a), KNIT_OK);
    KN_CHECK_EQ(kn_shm_attach(&p1, on_pkt, &g1, &b), KNIT_OK);
    KN_CHECK_EQ(kn_shm_ready(a), KNIT_OK);
    KN_CHECK_EQ(kn_shm_ready(b), KNIT_OK);
    uint64_t k = 0;
    for (; k < 4; k++)
        KN_CHECK_EQ(send_k(a, 0, 1, k), KNIT_OK);
    /* packet 4 would go into the box, but its marker has no cell yet:
     * refused, or it would overtake packets 0..3 */
    KN_CHECK_EQ(send_k(a, 0, 1, k), KNIT_ERR_AGAIN);
    unsigned ob, ib;
    kn_shm_fbox_count(a, &ob, &ib);
    KN_CHECK_EQ(ob, 1); /* the box is claimed, not announced */
    KN_CHECK_EQ(b->ops->progress(b), 4);
    KN_CHECK_EQ(g1.next[0], 4);
    /* now the marker goes in, and packets 4..11 fill the box's ring of 8 */
    for (; k < 12; k++)
        KN_CHECK_EQ(send_k(a, 0, 1, k), KNIT_OK);
    KN_CHECK_EQ(send_k(a, 0, 1, k), KNIT_ERR_AGAIN);
    /* the receiver takes the marker from its queue first, then the box */
    b->ops->progress(b);
    b->ops->progress(b);
    KN_CHECK_EQ(g1.next[0], 12);
    kn_shm_fbox_count(b, &ob, &ib);
    KN_CHECK_EQ(ib, 1);
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 7; i++, k++)
            KN_CHECK_EQ(send_k(a, 0, 1, k), KNIT_OK);
        b->ops->progress(b);
    }
    KN_CHECK_EQ(g1.next[0], k);
    KN_CHECK_EQ(g1.bad, 0);
    b->ops->destroy(b);
    a->ops->destroy(a);
}

/* Packets whose payload is h->len bytes of value tag. */
static void on_fill(void *arg, int src, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    int *count = arg;
    const unsigned char *p = payload;
    (void)src;
    if (len != h->len)
        count[1]++;
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)h->tag)
            count[1]++;
    count[0]++;
}

static knit_status_t send_fill(kn_tl_t *tl, int to, int tag, size_t len)
{
    unsigned char buf[1024];
    memset(buf, tag, len);
    kn_pkt_hdr_t h = {.type = KN_PKT_EAGER, .tag = tag, .len = len};
    return tl->ops->send(tl, to, &h, buf, len);
}

/* The send buffer is one per rank: it can run out while the queue has
 * room, and comes back as the receiver releases payloads. */
KN_TEST(queue_send_buffer_full_again)
{
    char jobid[32];
    jobid_make(jobid, sizeof(jobid));
    kn_shm_params_t p0 = params(jobid, 2, 0, 64, 4, 4096, 0, 0);
    kn_shm_params_t p1 = p0;
    p1.local_rank = 1;
    KN_CHECK_EQ(kn_shm_create(&p0), KNIT_OK);
    int c0[2] = {0, 0}, c1[2] = {0, 0};
    kn_tl_t *a, *b;
    KN_CHECK_EQ(kn_shm_attach(&p0, on_fill, c0, &a), KNIT_OK);
    KN_CHECK_EQ(kn_shm_attach(&p1, on_fill, c1, &b), KNIT_OK);
    KN_CHECK_EQ(kn_shm_ready(a), KNIT_OK);
    KN_CHECK_EQ(kn_shm_ready(b), KNIT_OK);
    int sent = 0;
    while (sent < 10 && send_fill(a, 1, sent, 1000) == KNIT_OK)
        sent++;
    KN_CHECK_EQ(sent, 4); /* four 1000-byte payloads in 64-byte units fill 4 KiB */
    /* an inline packet needs no buffer: it still goes */
    KN_CHECK_EQ(send_fill(a, 1, 77, 20), KNIT_OK);
    KN_CHECK_EQ(b->ops->progress(b), 5);
    KN_CHECK_EQ(c1[0], 5);
    /* released out of order across receivers is covered by the many-producer
     * test; here: reuse, wrapping the buffer many times */
    for (int i = 0; i < 100; i++) {
        KN_CHECK_EQ(send_fill(a, 1, i, 1000 - (size_t)i), KNIT_OK);
        KN_CHECK_EQ(send_fill(a, 1, i + 1, 500), KNIT_OK);
        KN_CHECK_EQ(b->ops->progress(b), 2);
    }
    KN_CHECK_EQ(c1[0], 205);
    KN_CHECK_EQ(c1[1], 0);
    b->ops->destroy(b);
    a->ops->destroy(a);
}

/* ------------------------------------------------------------ layout */

KN_TEST(layout_is_linear_in_ranks_and_fits_the_cap)
{
    kn_shm_params_t p = params("x", 128, 0, 256, 64, 256 << 10, 8, 16);
    kn_shm_layout_t l128, l256;
    KN_CHECK_EQ(kn_shm_layout(&p, &l128), KNIT_OK);
    KN_CHECK_EQ(l128.boxes, 128 * 8);
    p.local_size = 256;
    KN_CHECK_EQ(kn_shm_layout(&p, &l256), KNIT_OK);
    KN_CHECK(l256.minimum < l128.minimum * 2 + 4096 * 4 && l256.minimum > l128.minimum * 2 - 4096 * 4);
    KN_CHECK_EQ(l256.size - l256.minimum, (size_t)256 * 8 * (l256.box_size + 192));
    KN_CHECK(l128.reserved < l128.size);
    /* 128 ranks with a cap: fewer boxes, never more than the cap */
    p.local_size = 128;
    p.max_bytes = 100u << 20;
    kn_shm_layout_t lc;
    KN_CHECK_EQ(kn_shm_layout(&p, &lc), KNIT_OK);
    KN_CHECK(lc.size <= p.max_bytes);
    KN_CHECK(lc.boxes < 128 * 8 && lc.boxes > 0);
    KN_CHECK(lc.size + lc.box_size + 192 > p.max_bytes); /* one more would not fit */
    /* a cap below what the ranks need without boxes: refused, saying how much */
    p.max_bytes = lc.minimum - 1;
    KN_CHECK_EQ(kn_shm_layout(&p, &lc), KNIT_ERR_NOMEM);
    KN_CHECK_EQ(lc.boxes, 0);
    KN_CHECK_EQ(lc.minimum, l128.minimum);
    /* 2 ranks: one box per direction, no more */
    p = params("x", 2, 0, 256, 64, 256 << 10, 8, 16);
    KN_CHECK_EQ(kn_shm_layout(&p, &lc), KNIT_OK);
    KN_CHECK_EQ(lc.boxes, 2);
}

KN_TEST(attach_refuses_bad_segments)
{
    kn_shm_params_t p = params("nosuchjob", 2, 1, 4, 4, 4096, 1, 0);
    kn_tl_t *tl;
    KN_CHECK_EQ(kn_shm_attach(&p, on_pkt, NULL, &tl), KNIT_ERR_NOT_FOUND);
    /* a segment made for 3 ranks is refused by a rank told there are 2 */
    char jobid[32];
    jobid_make(jobid, sizeof(jobid));
    p.jobid = jobid;
    p.local_size = 3;
    p.local_rank = 0;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_OK);
    p.local_size = 2;
    KN_CHECK_EQ(kn_shm_attach(&p, on_pkt, NULL, &tl), KNIT_ERR_PROTO);
    /* ... and one made with other queue settings */
    p.local_size = 3;
    p.queue_entries = 8;
    KN_CHECK_EQ(kn_shm_attach(&p, on_pkt, NULL, &tl), KNIT_ERR_PROTO);
    p.queue_entries = 4;
    KN_CHECK_EQ(kn_shm_attach(&p, on_pkt, NULL, &tl), KNIT_OK);
    tl->ops->destroy(tl); /* local rank 0 unlinks */
    /* bad geometry is refused with a message */
    p.ring_entries = 3;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_ERR_INVAL);
    p.ring_entries = 4;
    p.queue_entries = 6;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_ERR_INVAL);
    p.queue_entries = 4;
    p.buf_size = 5000;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_ERR_INVAL);
    p.buf_size = 4096;
    p.local_size = 70000;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_ERR_INVAL);
}

KN_TEST(cma_probe)
{
    char why[256];
    int ok = kn_shm_cma_probe(why, sizeof(why));
    KN_CHECK(ok ? strcmp(why, "works") == 0 : strlen(why) > 0);
}
