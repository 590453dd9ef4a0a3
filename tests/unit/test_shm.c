/* shm transport: a producer and a consumer process (fork) on one node
 * segment, with a tiny queue so that credits run out and wrap often. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "shm/shm.h"
#include "util/time.h"

#define TOTAL 5000u
#define SLOT 256u

/* packet k: tag k, k % (SLOT + 1) bytes of value (k + i); the 4 KiB
 * buffer holds few of them, so it wraps and runs out often */
static size_t pkt_len(uint64_t k)
{
    return k % (SLOT + 1);
}

struct got {
    uint64_t next;
    int bad;
};

static void on_pkt(void *arg, int src, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    struct got *g = arg;
    const unsigned char *p = payload;
    if (src != 0 || h->tag != (int32_t)g->next || len != pkt_len(g->next) || h->len != len)
        g->bad++;
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)(g->next + i))
            g->bad++;
    g->next++;
}

static knit_status_t send_k(kn_tl_t *tl, uint64_t k)
{
    unsigned char buf[SLOT];
    size_t len = pkt_len(k);
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(k + i);
    kn_pkt_hdr_t h = {.type = KN_PKT_EAGER, .tag = (int32_t)k, .len = len};
    return tl->ops->send(tl, 1, &h, buf, len);
}

static void consumer(kn_shm_params_t *p, int go, int res)
{
    struct got g = {0, 0};
    kn_tl_t *tl;
    char c;
    if (kn_shm_attach(p, on_pkt, &g, &tl) != KNIT_OK || write(res, "a", 1) != 1 || read(go, &c, 1) != 1)
        _exit(10);
    uint64_t t0 = kn_time_ns();
    while (g.next < TOTAL && kn_time_ns() - t0 < 20 * KN_NSEC_PER_SEC)
        tl->ops->progress(tl);
    /* now sleep on the doorbell until one more packet comes */
    if (write(res, "s", 1) != 1)
        _exit(11);
    uint64_t t1 = kn_time_ns();
    while (g.next == TOTAL && kn_time_ns() - t1 < 10 * KN_NSEC_PER_SEC)
        if (!tl->ops->progress(tl))
            kn_tl_sleep(&tl, 1, NULL, 0, 5 * KN_NSEC_PER_SEC, NULL, NULL);
    uint64_t slept_ms = (kn_time_ns() - t1) / KN_NSEC_PER_MSEC;
    uint64_t out[3] = {g.next, (uint64_t)g.bad, slept_ms};
    if (write(res, out, sizeof(out)) != sizeof(out))
        _exit(12);
    _exit(0);
}

KN_TEST(credits_order_wrap_and_doorbell)
{
    char jobid[32];
    snprintf(jobid, sizeof(jobid), "ut%d", (int)getpid());
    kn_shm_params_t p0 = {.jobid = jobid, .local_rank = 0, .local_size = 2, .ring_entries = 4,
                          .buf_size = 4096};
    kn_shm_params_t p1 = p0;
    p1.local_rank = 1;
    KN_CHECK_EQ(kn_shm_create(&p0), KNIT_OK);
    int go[2], res[2];
    KN_CHECK(pipe(go) == 0 && pipe(res) == 0);
    pid_t pid = fork();
    if (pid == 0)
        consumer(&p1, go[0], res[1]);
    struct got unused = {0, 0};
    kn_tl_t *tl;
    char c;
    KN_CHECK_EQ(kn_shm_attach(&p0, on_pkt, &unused, &tl), KNIT_OK);
    KN_CHECK_EQ(read(res[0], &c, 1), 1);
    KN_CHECK_EQ(kn_shm_ready(tl), KNIT_OK); /* unlinks the file */

    /* nobody consumes yet: packets 0..3 are inline, the ring holds 4 */
    uint64_t k = 0;
    while (send_k(tl, k) == KNIT_OK && k < 100)
        k++;
    KN_CHECK_EQ(k, 4);
    KN_CHECK_EQ(send_k(tl, k), KNIT_ERR_AGAIN); /* refused, not lost */
    KN_CHECK_EQ(write(go[1], "g", 1), 1);
    uint64_t t0 = kn_time_ns(), again = 0;
    while (k < TOTAL && kn_time_ns() - t0 < 20 * KN_NSEC_PER_SEC) {
        knit_status_t st = send_k(tl, k);
        if (st == KNIT_OK) {
            k++;
        } else {
            KN_CHECK_EQ(st, KNIT_ERR_AGAIN);
            again++;
        }
    }
    KN_CHECK_EQ(k, TOTAL);
    KN_CHECK(again > 0); /* credits ran out while the consumer drained */
    /* a payload bigger than a quarter of the buffer is refused */
    unsigned char big[4096 / 4 + 1] = {0};
    kn_pkt_hdr_t h = {.type = KN_PKT_EAGER, .tag = 0};
    KN_CHECK_EQ(tl->ops->send(tl, 1, &h, big, sizeof(big)), KNIT_ERR_INVAL);

    KN_CHECK_EQ(read(res[0], &c, 1), 1); /* consumer is about to sleep */
    KN_CHECK_EQ(send_k(tl, TOTAL), KNIT_OK); /* the doorbell must wake it */
    uint64_t out[3];
    KN_CHECK_EQ(read(res[0], out, sizeof(out)), (ssize_t)sizeof(out));
    int status;
    KN_CHECK_EQ(waitpid(pid, &status, 0), pid);
    KN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    KN_CHECK_EQ(out[0], TOTAL + 1);
    KN_CHECK_EQ(out[1], 0);
    KN_CHECK(out[2] < 4000); /* woken by the doorbell, not by the 5 s timeout */
    tl->ops->destroy(tl);
}

KN_TEST(attach_refuses_bad_segments)
{
    kn_shm_params_t p = {.jobid = "nosuchjob", .local_rank = 1, .local_size = 2, .ring_entries = 4,
                         .buf_size = 4096};
    kn_tl_t *tl;
    KN_CHECK_EQ(kn_shm_attach(&p, on_pkt, NULL, &tl), KNIT_ERR_IO);
    /* a segment made for 3 ranks is refused by a rank told there are 2 */
    char jobid[32];
    snprintf(jobid, sizeof(jobid), "ut%d", (int)getpid());
    p.jobid = jobid;
    p.local_size = 3;
    p.local_rank = 0;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_OK);
    p.local_size = 2;
    KN_CHECK_EQ(kn_shm_attach(&p, on_pkt, NULL, &tl), KNIT_ERR_PROTO);
    p.local_size = 3;
    KN_CHECK_EQ(kn_shm_attach(&p, on_pkt, NULL, &tl), KNIT_OK);
    tl->ops->destroy(tl); /* local rank 0 unlinks */
    /* bad geometry is refused with a message */
    p.ring_entries = 3;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_ERR_INVAL);
    p.ring_entries = 4;
    p.buf_size = 5000;
    KN_CHECK_EQ(kn_shm_create(&p), KNIT_ERR_INVAL);
}

KN_TEST(cma_probe)
{
    char why[256];
    int ok = kn_shm_cma_probe(why, sizeof(why));
    KN_CHECK(ok ? strcmp(why, "works") == 0 : strlen(why) > 0);
}
