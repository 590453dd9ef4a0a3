/*
 * order: the daemons keep each sender's messages in order, whatever their
 * sizes.  A request of 4 bytes, a count n, makes the rank's agent send n
 * messages to the next agent (node + 1, around), each numbered and
 * filled with a pattern of its number, their sizes cycling through small
 * ones and ones of hundreds of KiB (the small go in packets, the large as
 * bulk descriptors that the receiver reads: src/offload/bulk.c), then an
 * END.  The receiver checks that every message is the next one of its
 * sender, of its size, every byte right, and answers END with how many it
 * got and how many were wrong; the request completes with the two
 * (uint32 each).  One request per node at a time.
 */
#include <string.h>

#include "knit/module.h"

static const knit_mod_services_t *K;

enum { DATA = 1, END, REPORT };

typedef struct msg_head {
    uint32_t kind;
    int32_t origin;
    uint32_t seq;        /* DATA: its number; END: how many went */
    uint32_t got, bad;   /* REPORT */
    uint32_t pad;
    uint64_t token;
} msg_head_t;

static const uint32_t sizes[] = {0, 200000, 8, 1u << 20, 100, 140000, 0, 0, 300000, 4096, 131072, 1};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_NODES 256

typedef struct state {
    uint32_t expect[MAX_NODES], bad[MAX_NODES];
    unsigned char *buf;  /* the largest message */
} state_t;

static unsigned char pattern(uint32_t seq, uint64_t i)
{
    return (unsigned char)(seq * 31 + i * 7 + 3);
}

static int32_t order_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    K = svc;
    if (K->geometry(m)->nnodes > MAX_NODES)
        return KNIT_MOD_ERR_RANGE;
    state_t *s = K->alloc(m, sizeof(*s));
    if (!s || !(s->buf = K->alloc(m, sizeof(msg_head_t) + (1u << 20))))
        return KNIT_MOD_ERR_NOMEM;
    K->set_state(m, s);
    return KNIT_MOD_OK;
}

static void order_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    state_t *s = K->state(m);
    const knit_mod_geometry_t *g = K->geometry(m);
    uint32_t n;
    if (req->len != sizeof(n) || g->self < 0) {
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    memcpy(&n, args, sizeof(n));
    int32_t next = (g->self + 1) % g->nnodes;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = sizes[i % NSIZES];
        msg_head_t h = {.kind = DATA, .origin = g->self, .seq = i, .token = req->token};
        memcpy(s->buf, &h, sizeof(h));
        for (uint32_t k = 0; k < len; k++)
            s->buf[sizeof(h) + k] = pattern(i, k);
        int32_t st = K->send(m, next, s->buf, sizeof(h) + len);
        if (st != KNIT_MOD_OK) {
            K->complete(m, req->token, st, NULL, 0);
            return;
        }
    }
    msg_head_t e = {.kind = END, .origin = g->self, .seq = n, .token = req->token};
    int32_t st = K->send(m, next, &e, sizeof(e));
    if (st != KNIT_MOD_OK)
        K->complete(m, req->token, st, NULL, 0);
}

static void order_message(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    state_t *s = K->state(m);
    msg_head_t h;
    if (len < sizeof(h) || from < 0 || from >= K->geometry(m)->nnodes) {
        K->log(m, KNIT_MOD_LOG_ERROR, "order: a message of %llu bytes from %d", (unsigned long long)len, from);
        return;
    }
    memcpy(&h, msg, sizeof(h));
    const unsigned char *d = (const unsigned char *)msg + sizeof(h);
    if (h.kind == DATA) {
        int ok = h.origin == from && h.seq == s->expect[from] && len - sizeof(h) == sizes[h.seq % NSIZES];
        for (uint64_t k = 0; ok && k < len - sizeof(h); k++)
            ok = d[k] == pattern(h.seq, k);
        if (!ok)
            K->log(m, KNIT_MOD_LOG_ERROR, "order: from %d, message %u (%llu bytes) where %u was next", from, h.seq,
                   (unsigned long long)(len - sizeof(h)), s->expect[from]);
        s->bad[from] += !ok;
        s->expect[from]++;
    } else if (h.kind == END) {
        msg_head_t r = {.kind = REPORT, .got = s->expect[from], .bad = s->bad[from] + (h.seq != s->expect[from]),
                        .token = h.token};
        s->expect[from] = s->bad[from] = 0;
        K->send(m, from, &r, sizeof(r));
    } else if (h.kind == REPORT) {
        uint32_t res[2] = {h.got, h.bad};
        K->complete(m, h.token, KNIT_MOD_OK, res, sizeof(res));
    }
}

static const knit_mod_descriptor_t order = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "order",
    .init = order_init,
    .on_request = order_request,
    .on_message = order_message,
};

KNIT_MODULE(order)
