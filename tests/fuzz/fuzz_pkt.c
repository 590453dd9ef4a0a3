/*
 * The point-to-point engine's receive path (src/p2p/p2p.c): packets a
 * transport delivers (kn_pkt_hdr_t and the bodies of tl.h) from peers
 * that may say anything.  The input is a script run against a real engine
 * of 4 ranks whose transport is a fake: it records what the engine sends,
 * says "no credit" when told to, and completes bulk copies at once or
 * later without touching any remote address.  Script steps: post
 * receives and sends (buffers of exactly their size), deliver a packet
 * from a peer (header and payload from the input), progress, test and
 * free completed requests, cancel, probe and receive an unexpected
 * message.  A malformed packet must end in the engine's fatal handler
 * (the job ends); here it jumps back to the harness, which destroys the
 * engine.
 * Properties: no crash or sanitizer report (receive buffers are written
 * only within their size); the engine sends nothing larger than a packet
 * and only packets of known types; a send buffer is never written; a
 * receive that completed without error got a message that fit, from a
 * real rank, with the tag it asked for.
 */
#include <setjmp.h>

#include "fuzz.h"
#include "p2p/p2p.h"
#include "util/config.h"
#include "util/log.h"

#define NRANKS 4
#define MAXREQ 16
#define MAXCOMP 64
#define PAYLOAD 4096

typedef struct fake_tl {
    kn_tl_t base;
    unsigned again;       /* sends to refuse before the next one passes */
    int async;            /* bulk copies complete in a later progress */
    unsigned caps;
    kn_tl_comp_t *comps[MAXCOMP];
    int ncomps;
} fake_tl_t;

struct req {
    knit_request_t *r;
    uint8_t *buf;
    size_t len;
    int recv, peer, tag;
    uint8_t fill;
};

static struct {
    jmp_buf env;
    fake_tl_t tl;
    kn_p2p_t *p2p;
    struct req reqs[MAXREQ];
    uint8_t *payload;     /* the packet being delivered (freed after a fatal jump too) */
    size_t plen;
} S;

static void on_fatal(void *arg, const char *msg)
{
    (void)arg, (void)msg;
    longjmp(S.env, 1);
}

static knit_status_t f_send(kn_tl_t *tl, int peer, const kn_pkt_hdr_t *h, const void *payload, size_t len)
{
    fake_tl_t *f = (fake_tl_t *)tl;
    KN_FUZZ_CHECK(peer >= 0 && peer < NRANKS);
    KN_FUZZ_CHECK(len <= tl->max_payload);
    KN_FUZZ_CHECK(h->type >= KN_PKT_INLINE && h->type < KN_PKT_TYPE_MAX);
    if (f->again) {
        f->again--;
        return KNIT_ERR_AGAIN;
    }
    volatile uint8_t sum = 0; /* every payload byte must be readable */
    for (size_t i = 0; i < len; i++)
        sum ^= ((const uint8_t *)payload)[i];
    (void)sum;
    return KNIT_OK;
}

static int f_progress(kn_tl_t *tl)
{
    fake_tl_t *f = (fake_tl_t *)tl;
    int n = f->ncomps;
    f->ncomps = 0;
    for (int i = 0; i < n; i++)
        f->comps[i]->cb(f->comps[i], KNIT_OK);
    return n;
}

static unsigned f_caps(kn_tl_t *tl, int peer)
{
    (void)peer;
    return ((fake_tl_t *)tl)->caps;
}

static knit_status_t bulk(fake_tl_t *f, kn_tl_comp_t *comp)
{
    if (!f->async || !comp || f->ncomps == MAXCOMP)
        return KNIT_OK;
    f->comps[f->ncomps++] = comp;
    return KNIT_INPROGRESS;
}

static knit_status_t f_get(kn_tl_t *tl, int peer, void *local, size_t len, uint64_t raddr, uint64_t rkey,
                           kn_tl_comp_t *comp)
{
    (void)peer, (void)raddr, (void)rkey;
    memset(local, 0xab, len); /* "the peer's bytes": only the local side is ours */
    return bulk((fake_tl_t *)tl, comp);
}

static knit_status_t f_put(kn_tl_t *tl, int peer, const void *local, size_t len, uint64_t raddr, uint64_t rkey,
                           kn_tl_comp_t *comp)
{
    (void)peer, (void)raddr, (void)rkey;
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < len; i++)
        sum ^= ((const uint8_t *)local)[i];
    (void)sum;
    return bulk((fake_tl_t *)tl, comp);
}

static const kn_tl_ops_t fake_ops = {
    .name = "fuzz", .send = f_send, .progress = f_progress, .caps = f_caps, .get = f_get, .put = f_put,
};

static int free_slot(void)
{
    for (int i = 0; i < MAXREQ; i++)
        if (!S.reqs[i].r)
            return i;
    return -1;
}

static void check_done(struct req *q, const knit_msg_status_t *st, knit_status_t ret)
{
    if (q->recv) {
        KN_FUZZ_CHECK(st->length <= q->len);
        if (ret == KNIT_OK) {
            KN_FUZZ_CHECK(st->msg_length <= q->len && st->length == st->msg_length);
            KN_FUZZ_CHECK(st->source >= 0 && st->source < NRANKS);
            KN_FUZZ_CHECK(q->peer == KNIT_ANY_SOURCE || st->source == q->peer);
            KN_FUZZ_CHECK(q->tag == KNIT_ANY_TAG || st->tag == q->tag);
        }
    } else {
        for (size_t i = 0; i < q->len; i++)
            KN_FUZZ_CHECK(q->buf[i] == (uint8_t)(q->fill + i));
    }
}

static void test_all(void)
{
    for (int i = 0; i < MAXREQ; i++) {
        struct req *q = &S.reqs[i];
        if (!q->r)
            continue;
        int done = 0;
        knit_msg_status_t st;
        memset(&st, 0, sizeof(st));
        knit_status_t ret = knit_test(&q->r, &done, &st);
        if (!done)
            continue;
        check_done(q, &st, ret);
        kn_fz_free(q->buf, q->len);
        memset(q, 0, sizeof(*q));
    }
}

static void post(kn_fz_t *f, int recv)
{
    int i = free_slot();
    int peer = kn_fz_u8(f) % (NRANKS + 1) - (recv ? 1 : 0);
    if (peer >= NRANKS)
        peer = NRANKS - 1;
    int tag = kn_fz_u8(f) % 4 - (recv ? 1 : 0);
    uint32_t comm = kn_fz_u8(f) % 2;
    size_t len = kn_fz_u16(f);
    unsigned flags = kn_fz_u8(f) & 1 ? KNIT_SEND_SYNC : 0;
    if (i < 0)
        return;
    struct req *q = &S.reqs[i];
    q->buf = kn_fz_dup(NULL, len); /* a write past its end is caught */
    q->len = len;
    q->recv = recv;
    q->peer = peer;
    q->tag = tag;
    q->fill = (uint8_t)len;
    for (size_t k = 0; k < len; k++)
        q->buf[k] = (uint8_t)(q->fill + k);
    knit_status_t st = recv ? kn_p2p_irecv(S.p2p, q->buf, len, peer, tag, comm, &q->r)
                            : kn_p2p_isend(S.p2p, q->buf, len, peer, tag, comm, flags, &q->r);
    if (st != KNIT_OK) {
        kn_fz_free(q->buf, q->len);
        memset(q, 0, sizeof(*q));
    }
}

static void packet(kn_fz_t *f)
{
    int src = kn_fz_u8(f) % (NRANKS + 1); /* NRANKS: not a rank */
    kn_pkt_hdr_t h;
    h.type = kn_fz_u8(f) % (KN_PKT_TYPE_MAX + 1);
    h.flags = kn_fz_u8(f);
    h.reserved = 0;
    h.comm = kn_fz_u8(f) & 0x80 ? kn_fz_u32(f) : kn_fz_u8(f) % 2;
    h.tag = (int8_t)kn_fz_u8(f);
    h.seq = kn_fz_u16(f);
    h.len = kn_fz_u8(f) & 0x80 ? kn_fz_u64(f) : kn_fz_u16(f);
    size_t want = kn_fz_u16(f) % (PAYLOAD + 1), got;
    const uint8_t *p = kn_fz_bytes(f, want, &got);
    S.payload = kn_fz_dup(p, got);
    S.plen = got;
    kn_p2p_recv_cb()(S.p2p, src, &h, S.payload, got);
    kn_fz_free(S.payload, S.plen);
    S.payload = NULL;
}

static void probe(kn_fz_t *f)
{
    int peer = kn_fz_u8(f) % (NRANKS + 1) - 1, tag = kn_fz_u8(f) % 4 - 1;
    uint32_t comm = kn_fz_u8(f) % 2;
    size_t cap = kn_fz_u16(f);
    int flag = 0, i = free_slot();
    knit_message_t *m = NULL;
    knit_msg_status_t st;
    if (i < 0 || kn_p2p_iprobe(S.p2p, peer, tag, comm, 1, &flag, &m, &st) != KNIT_OK || !flag)
        return;
    KN_FUZZ_CHECK(st.source >= 0 && st.source < NRANKS);
    struct req *q = &S.reqs[i];
    q->buf = kn_fz_dup(NULL, cap);
    q->len = cap;
    q->recv = 1;
    q->peer = st.source;
    q->tag = st.tag;
    if (kn_p2p_imrecv(S.p2p, q->buf, cap, &m, &q->r) != KNIT_OK) {
        kn_fz_free(q->buf, q->len);
        memset(q, 0, sizeof(*q));
    }
}

static void run(kn_fz_t *f)
{
    while (f->n) {
        switch (kn_fz_u8(f) % 8) {
        case 0: post(f, 1); break;
        case 1: post(f, 0); break;
        case 2:
        case 3: packet(f); break;
        case 4: kn_p2p_progress(S.p2p); break;
        case 5: test_all(); break;
        case 6: {
            struct req *q = &S.reqs[kn_fz_u8(f) % MAXREQ];
            if (q->r && q->recv)
                knit_cancel(q->r);
            break;
        }
        case 7:
            if (kn_fz_u8(f) & 1) {
                probe(f);
            } else {
                S.tl.again = kn_fz_u8(f) % 4;
                S.tl.async = kn_fz_u8(f) & 1;
            }
            break;
        }
    }
    for (int k = 0; k < 4; k++)
        kn_p2p_progress(S.p2p);
    test_all();
}

KN_FUZZ_TARGET(pkt)
{
    static int once;
    if (!once) {
        kn_config_load();
        once = 1;
    }
    kn_log_set_level(-1);
    kn_fz_t f = {data, size};
    /* the transport's shape: first byte */
    uint8_t shape = kn_fz_u8(&f);
    memset(&S, 0, sizeof(S));
    S.tl.base = (kn_tl_t){.ops = &fake_ops, .max_inline = 28, .max_payload = PAYLOAD,
                          .eager_max = shape & 1 ? 65536 : 0, .bulk_inflight = 2,
                          .pull_preferred = !!(shape & 2)};
    S.tl.caps = shape & 4 ? KN_TL_CAP_RMA : 0;
    static const int node_of[NRANKS];
    kn_p2p_params_t params = {.rank = 0, .size = NRANKS, .node_of = node_of, .node = 0, .fatal = on_fatal};
    KN_FUZZ_CHECK(kn_p2p_create(&params, &S.p2p) == KNIT_OK);
    S.tl.base.recv_cb = kn_p2p_recv_cb();
    S.tl.base.cb_arg = S.p2p;
    kn_p2p_set_tl(S.p2p, &S.tl.base, 0, NRANKS);
    if (!setjmp(S.env))
        run(&f);
    /* ended, or the engine gave up on a peer (the job would end) */
    kn_p2p_destroy(S.p2p);
    kn_fz_free(S.payload, S.plen);
    for (int i = 0; i < MAXREQ; i++)
        kn_fz_free(S.reqs[i].buf, S.reqs[i].len);
    return 0;
}
