/*
 * ring: message paths between instances.
 *
 * Request "r" (or no arguments): a token leaves the rank's agent, goes
 * around every agent in node order, then to the switch, then back to the
 * rank's agent, which completes the request with the path (int32 per
 * hop: the nodes, then -1 for the switch) and also delivers the path into
 * a buffer the rank posted, if there is one.  Served at the switch
 * (KNIT_MODULE_SWITCH), the token starts at agent 0 and the switch
 * completes the request (no delivery: only agents reach rank memory).
 *
 * Request "m": the agent asks the switch, the switch multicasts to every
 * agent, each agent answers the switch, and once all have the switch
 * tells the rank's agent; result: {uint32 count, uint32 0, uint64 mask of
 * the nodes that answered}.
 *
 * Request "u": up the tree of switches (ABI 2, the place service): a
 * token leaves the rank's agent for its switch, each switch adds itself
 * and passes it to its parent, and the root sends it back; result: the
 * path (the node, then each switch's address up to KNIT_MOD_SWITCH).
 */
#include "knit/module.h"

static const knit_mod_services_t *K;

#define MAXHOPS 1030

enum { TOKEN = 1, BACK, MC_UP, MC_DOWN, MC_ACK, MC_DONE, TREE_UP };

/* Where a token going up the tree goes next: this instance's parent
 * (KNIT_MOD_NONE at the root). */
static int32_t parent_of(knit_mod_ctx_t *m)
{
    knit_mod_place_t p;
    if (K->place(m, K->geometry(m)->self, &p) != KNIT_MOD_OK)
        return KNIT_MOD_NONE;
    return p.parent;
}

typedef struct msg {
    uint32_t kind, nhops;
    int32_t origin, node;
    uint64_t token;
    int32_t hops[];
} msg_t;

typedef struct mc_entry {          /* at the switch */
    int32_t origin, count;
    uint64_t token, mask;
} mc_entry_t;

#define MC_MAX 256

static int32_t ring_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    K = svc;
    const knit_mod_geometry_t *g = K->geometry(m);
    if (g->nnodes + 1 > MAXHOPS)
        return KNIT_MOD_ERR_RANGE;
    if (g->self == KNIT_MOD_SWITCH) {
        mc_entry_t *t = K->alloc(m, sizeof(mc_entry_t) * MC_MAX);
        if (!t)
            return KNIT_MOD_ERR_NOMEM;
        K->set_state(m, t);
    }
    return KNIT_MOD_OK;
}

static uint64_t msg_len(uint32_t nhops)
{
    return sizeof(msg_t) + nhops * sizeof(int32_t);
}

static void ring_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    const knit_mod_geometry_t *g = K->geometry(m);
    const char *a = args;
    struct {
        msg_t h;
        int32_t hop;
    } t = {{.origin = g->self, .node = req->rank, .token = req->token, .nhops = 1}, g->self};
    if (req->len == 1 && a[0] == 'm') {
        t.h.kind = MC_UP;
        t.h.nhops = 0;
        K->send(m, KNIT_MOD_SWITCH, &t, msg_len(0));
        return;
    }
    if (req->len == 1 && a[0] == 'u' && g->self >= 0) {
        t.h.kind = TREE_UP;
        K->send(m, parent_of(m), &t, msg_len(1));
        return;
    }
    if (req->len > 1 || (req->len == 1 && a[0] != 'r')) {
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, 0, 0);
        return;
    }
    t.h.kind = TOKEN;
    if (g->self == KNIT_MOD_SWITCH) { /* served at the switch: start at agent 0 */
        t.h.nhops = 0;
        K->send(m, 0, &t, msg_len(0));
        return;
    }
    int next = (g->self + 1) % g->nnodes;
    K->send(m, next == t.h.origin ? KNIT_MOD_SWITCH : next, &t, msg_len(1));
}

static void ring_message(knit_mod_ctx_t *m, int32_t from, const void *data, uint64_t len)
{
    const knit_mod_geometry_t *g = K->geometry(m);
    const msg_t *in = data;
    (void)from;
    if (len < sizeof(msg_t) || len != msg_len(in->nhops) || in->nhops >= MAXHOPS) {
        K->log(m, KNIT_MOD_LOG_WARN, "malformed message of %llu bytes", (unsigned long long)len);
        return;
    }
    switch (in->kind) {
    case TREE_UP: {
        char buf[sizeof(msg_t) + MAXHOPS * sizeof(int32_t)];
        msg_t *out = (msg_t *)buf;
        __builtin_memcpy(out, in, len);
        out->hops[out->nhops++] = g->self;
        int32_t up = parent_of(m);
        if (up == KNIT_MOD_NONE)
            out->kind = BACK;
        K->send(m, up == KNIT_MOD_NONE ? out->origin : up, out, msg_len(out->nhops));
        return;
    }
    case TOKEN: {
        /* append ourselves and pass it on */
        char buf[sizeof(msg_t) + MAXHOPS * sizeof(int32_t)];
        msg_t *out = (msg_t *)buf;
        __builtin_memcpy(out, in, len);
        out->hops[out->nhops++] = g->self;
        if (g->self == KNIT_MOD_SWITCH) {
            out->kind = BACK;
            K->send(m, out->origin, out, msg_len(out->nhops));
            return;
        }
        int next = (g->self + 1) % g->nnodes;
        int first = out->origin == KNIT_MOD_SWITCH ? 0 : out->origin;
        K->send(m, next == first ? KNIT_MOD_SWITCH : next, out, msg_len(out->nhops));
        return;
    }
    case BACK: {
        uint64_t n = in->nhops * sizeof(int32_t);
        if (g->self != KNIT_MOD_SWITCH) /* NOT_FOUND: nothing posted, fine */
            K->deliver(m, in->node, in->hops, n);
        K->complete(m, in->token, KNIT_MOD_OK, in->hops, n);
        return;
    }
    case MC_UP: {
        mc_entry_t *t = K->state(m);
        int i;
        for (i = 0; i < MC_MAX && t[i].count; i++)
            ;
        if (i == MC_MAX) {
            K->log(m, KNIT_MOD_LOG_ERROR, "too many multicasts in flight");
            return;
        }
        t[i] = (mc_entry_t){.origin = in->origin, .token = in->token, .count = -1};
        msg_t down = *in;
        down.kind = MC_DOWN;
        K->multicast(m, &down, sizeof(down));
        return;
    }
    case MC_DOWN: {
        msg_t ack = *in;
        ack.kind = MC_ACK;
        ack.node = g->self;
        K->send(m, KNIT_MOD_SWITCH, &ack, sizeof(ack));
        return;
    }
    case MC_ACK: {
        mc_entry_t *t = K->state(m);
        for (int i = 0; i < MC_MAX; i++) {
            if (!t[i].count || t[i].origin != in->origin || t[i].token != in->token)
                continue;
            t[i].count = t[i].count < 0 ? 1 : t[i].count + 1;
            t[i].mask |= 1ull << (in->node & 63);
            if (t[i].count == g->nnodes) {
                msg_t done = *in;
                done.kind = MC_DONE;
                done.token = t[i].token;
                done.origin = t[i].origin;
                /* count and mask ride in node/token-sized fields: use hops-free message */
                struct {
                    msg_t h;
                    int32_t v[4];
                } d = {done, {t[i].count, 0, (int32_t)(t[i].mask & 0xffffffffu), (int32_t)(t[i].mask >> 32)}};
                d.h.nhops = 4;
                K->send(m, t[i].origin, &d, msg_len(4));
                t[i].count = 0;
            }
            return;
        }
        return;
    }
    case MC_DONE: {
        struct {
            uint32_t count, pad;
            uint64_t mask;
        } r = {(uint32_t)in->hops[0], 0,
               (uint64_t)(uint32_t)in->hops[2] | (uint64_t)(uint32_t)in->hops[3] << 32};
        K->complete(m, in->token, KNIT_MOD_OK, &r, sizeof(r));
        return;
    }
    }
}

static const knit_mod_descriptor_t ring = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_descriptor_t),
    .name = "ring",
    .init = ring_init,
    .on_request = ring_request,
    .on_message = ring_message,
};

KNIT_MODULE(ring)
