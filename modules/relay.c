/*
 * relay: a header handler (module ABI 2) at work.  A request of 4 bytes,
 * a byte count n, makes the rank's agent send n bytes of a pattern to the
 * root switch as a message of a header and a payload (send_hdr).  Every
 * switch's on_header passes it on to all its children without taking it:
 * the daemon streams the payload down the tree as it arrives, and the
 * switches' on_message never sees it.  Every agent takes it (on_header
 * says take), checks every byte in on_message and tells the sender's
 * agent, which completes the request with the number of agents that got
 * the n bytes right once all have answered.  With
 * KNIT_MODULE_ISOLATION=inprocess the daemons stream the payload on as
 * it comes; in a module process (the default) each switch passes it on
 * once it is all in.
 */
#include <string.h>

#include "knit/module.h"

static const knit_mod_services_t *K;

enum { DATA = 1, ACK };

typedef struct head {
    uint32_t kind;
    int32_t origin;      /* the sender's node */
    uint64_t token;      /* its request */
    uint64_t n;          /* payload bytes */
} head_t;

typedef struct ack {
    uint32_t kind;
    int32_t ok;          /* 1: every byte right */
    uint64_t token;
} ack_t;

/* At the sender's agent: answers so far, right ones. */
typedef struct pend {
    uint64_t token;
    int32_t answers, right;
} pend_t;

#define PENDING 64

typedef struct state {
    pend_t p[PENDING];
    uint64_t switch_messages; /* on_message calls at a switch: none expected */
} state_t;

static unsigned char pattern(uint64_t i, int32_t origin)
{
    return (unsigned char)(i * 7 + (uint64_t)origin * 13 + 1);
}

static int32_t relay_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    if (svc->abi_version < 2 || !svc->send_hdr || !svc->place)
        return KNIT_MOD_ERR_NOT_SUPPORTED;
    K = svc;
    state_t *s = K->alloc(m, sizeof(*s));
    if (!s)
        return KNIT_MOD_ERR_NOMEM;
    K->set_state(m, s);
    return KNIT_MOD_OK;
}

static void relay_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    uint32_t n32;
    state_t *s = K->state(m);
    if (req->len != sizeof(n32)) {
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    memcpy(&n32, args, sizeof(n32));
    int slot = -1;
    for (int i = 0; i < PENDING && slot < 0; i++)
        if (!s->p[i].token)
            slot = i;
    unsigned char *data = n32 ? K->alloc(m, n32) : NULL;
    if (slot < 0 || (n32 && !data)) {
        K->free(m, data);
        K->complete(m, req->token, KNIT_MOD_ERR_AGAIN, NULL, 0);
        return;
    }
    head_t h = {.kind = DATA, .origin = K->geometry(m)->self, .token = req->token, .n = n32};
    for (uint64_t i = 0; i < n32; i++)
        data[i] = pattern(i, h.origin);
    s->p[slot] = (pend_t){.token = req->token};
    int32_t st = K->send_hdr(m, KNIT_MOD_SWITCH, &h, sizeof(h), data, n32);
    K->free(m, data);
    if (st != KNIT_MOD_OK) {
        s->p[slot].token = 0;
        K->complete(m, req->token, st, NULL, 0);
    }
}

/* Switches pass a message on to all their children; agents take it. */
static int32_t relay_header(knit_mod_ctx_t *m, int32_t from, const void *hdr, uint64_t hlen, uint64_t plen,
                            knit_mod_route_t *route)
{
    (void)from;
    head_t h;
    if (hlen != sizeof(h))
        return KNIT_MOD_ERR_INVAL;
    memcpy(&h, hdr, sizeof(h));
    if (h.kind != DATA || h.n != plen)
        return KNIT_MOD_ERR_INVAL;
    knit_mod_place_t p;
    if (K->place(m, K->geometry(m)->self, &p) != KNIT_MOD_OK)
        return KNIT_MOD_ERR_STATE;
    if (p.level == 0) {
        route->take = 1;
        return KNIT_MOD_OK;
    }
    if (p.nchildren > KNIT_MOD_ROUTE_MAX)
        return KNIT_MOD_ERR_RANGE;
    for (int32_t i = 0; i < p.nchildren; i++)
        route->dest[route->ndest++] = p.first_child + i * p.child_step;
    return KNIT_MOD_OK;
}

static void answer(knit_mod_ctx_t *m, uint64_t token, int32_t ok)
{
    state_t *s = K->state(m);
    for (int i = 0; i < PENDING; i++) {
        pend_t *q = &s->p[i];
        if (q->token != token)
            continue;
        q->answers++;
        q->right += ok;
        if (q->answers == K->geometry(m)->nnodes) {
            K->complete(m, token, KNIT_MOD_OK, &q->right, sizeof(q->right));
            q->token = 0;
        }
        return;
    }
}

static void relay_message(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    (void)from;
    state_t *s = K->state(m);
    const knit_mod_geometry_t *g = K->geometry(m);
    if (g->self < 0) {
        s->switch_messages++; /* a switch takes nothing: the daemon passed it on */
        K->log(m, KNIT_MOD_LOG_ERROR, "a switch got a message of %llu bytes in on_message",
               (unsigned long long)len);
        return;
    }
    uint32_t kind;
    if (len < sizeof(kind))
        return;
    memcpy(&kind, msg, sizeof(kind));
    if (kind == ACK && len == sizeof(ack_t)) {
        ack_t a;
        memcpy(&a, msg, sizeof(a));
        answer(m, a.token, a.ok);
        return;
    }
    head_t h;
    if (kind != DATA || len < sizeof(h))
        return;
    memcpy(&h, msg, sizeof(h));
    const unsigned char *d = (const unsigned char *)msg + sizeof(h);
    int32_t ok = len - sizeof(h) == h.n;
    for (uint64_t i = 0; ok && i < h.n; i++)
        ok = d[i] == pattern(i, h.origin);
    if (h.origin == g->self) {
        answer(m, h.token, ok);
        return;
    }
    ack_t a = {.kind = ACK, .ok = ok, .token = h.token};
    K->send(m, h.origin, &a, sizeof(a));
}

static const knit_mod_descriptor_t relay = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "relay",
    .init = relay_init,
    .on_request = relay_request,
    .on_message = relay_message,
    .on_header = relay_header,
};

KNIT_MODULE(relay)
