/*
 * coll: barrier and allreduce done by the agents and the switch (issue 23,
 * docs/collectives.md "Offloaded collectives").  Built into libknit, which
 * loads it itself the first time a communicator needs it; written against
 * <knit/module.h> like any user module, so it is also the reference for
 * writing a real offload module.
 *
 * The path of one collective (communicator `comm` whose first member is
 * job rank `first`, its collective number `seq`):
 *   rank   -> agent   a request: coll_args_t, then its vector (inline in the
 *                     command entry up to 200 bytes, read from the rank's
 *                     memory by the agent above)
 *   agent             keeps each local member's vector; once the node's
 *                     last member is in, combines them in member order
 *   agent  -> switch  UP: the node's partial result
 *   switch            keeps each node's partial; once the last node is in,
 *                     combines them in node order, and
 *   switch -> agents  DOWN: the result, to every node with members
 *   agent  -> ranks   completes every local member's request with it.
 * A fixed order at both levels: floating-point results are the same on
 * every rank and from run to run.  Barrier: the same with 0 bytes.
 *
 * The combining is knit's own (src/coll/op.c, compiled in): every
 * predefined op on every type the host collectives take.
 */
#include <stddef.h>
#include <string.h>

#include "knit/module.h"
#include "coll/coll_mod.h"

static const knit_mod_services_t *K;
static volatile uintptr_t nowhere = 8; /* in the first page, never mapped */

#define SLOTS 64          /* collectives in flight per instance */
#define MAX_LOCAL 1024    /* members of one node */

/* One collective in flight: at an agent its node's members'
 * contributions, at the switch the member nodes' partials; slot i holds
 * member (node) i's, so that the order of combining is fixed. */
typedef struct entry {
    int used;
    uint32_t comm, dtype, redop;
    int32_t first;        /* with comm: which communicator */
    uint64_t seq, bytes;
    int32_t expect, have;
    int32_t status;       /* the switch: the first failure a node reported */
    uint64_t *tokens;     /* agent: each member's request */
    int32_t *node;        /* switch: the node of each slot (where the result goes) */
    uint8_t *got;
    char *data;           /* expect * bytes */
} entry_t;

typedef struct state {
    entry_t slot[SLOTS];
} state_t;

typedef struct wire {
    uint32_t kind; /* UP, DOWN */
    uint32_t comm, dtype, redop;
    int32_t first, pad;
    uint64_t seq, bytes;
    int32_t node, nidx, nnodes; /* UP: the sender, its index, the member nodes */
    int32_t status;
} wire_t;

enum { UP = 1, DOWN };

static int32_t coll_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    K = svc;
    const knit_mod_geometry_t *g = K->geometry(m);
    if (g->nnodes > KN_COLL_MOD_MAX_NODES || g->local_size > MAX_LOCAL)
        return KNIT_MOD_ERR_RANGE;
    state_t *s = K->alloc(m, sizeof(state_t));
    if (!s)
        return KNIT_MOD_ERR_NOMEM;
    K->set_state(m, s);
    return KNIT_MOD_OK;
}

static void entry_free(knit_mod_ctx_t *m, entry_t *e)
{
    K->free(m, e->tokens);
    K->free(m, e->node);
    K->free(m, e->got);
    K->free(m, e->data);
    memset(e, 0, sizeof(*e));
}

static void coll_fini(knit_mod_ctx_t *m)
{
    state_t *s = K->state(m);
    for (int i = 0; s && i < SLOTS; i++)
        if (s->slot[i].used)
            entry_free(m, &s->slot[i]);
}

/* The entry of (comm, seq), made for `expect` contributions of `bytes`
 * where there is none yet; NULL: no room (SLOTS in flight) or memory. */
static entry_t *entry_get(knit_mod_ctx_t *m, uint32_t comm, int32_t first, uint64_t seq, int32_t expect,
                          uint64_t bytes)
{
    state_t *s = K->state(m);
    int sw = K->geometry(m)->self == KNIT_MOD_SWITCH;
    entry_t *free_slot = NULL;
    for (int i = 0; i < SLOTS; i++) {
        entry_t *e = &s->slot[i];
        if (e->used && e->comm == comm && e->first == first && e->seq == seq)
            return e;
        if (!e->used && !free_slot)
            free_slot = e;
    }
    if (!free_slot)
        return NULL;
    entry_t *e = free_slot;
    e->got = K->alloc(m, (uint64_t)expect);
    e->data = bytes ? K->alloc(m, (uint64_t)expect * bytes) : NULL;
    if (sw)
        e->node = K->alloc(m, (uint64_t)expect * sizeof(int32_t));
    else
        e->tokens = K->alloc(m, (uint64_t)expect * sizeof(uint64_t));
    if (!e->got || (bytes && !e->data) || (sw ? !e->node : !e->tokens)) {
        entry_free(m, e);
        return NULL;
    }
    e->used = 1;
    e->comm = comm;
    e->first = first;
    e->seq = seq;
    e->expect = expect;
    e->bytes = bytes;
    return e;
}

/* Combine the slots in order: slot i becomes slot i-1 op slot i (in, then
 * inout: MPI's order), so the last one holds the result (*out; NULL for a
 * barrier).  KNIT_MOD_ERR_INVAL: the op does not apply to the type. */
static int32_t combine(const entry_t *e, const char **out)
{
    *out = NULL;
    if (!e->bytes)
        return KNIT_MOD_OK;
    size_t esize = kn_coll_mod_esize(e->dtype);
    if (!esize || e->bytes % esize)
        return KNIT_MOD_ERR_INVAL;
    for (int32_t i = 1; i < e->expect; i++)
        if (kn_coll_mod_reduce(e->data + (size_t)(i - 1) * e->bytes, e->data + (size_t)i * e->bytes,
                               e->bytes / esize, e->dtype, e->redop) < 0)
            return KNIT_MOD_ERR_INVAL;
    *out = e->data + (size_t)(e->expect - 1) * e->bytes;
    return KNIT_MOD_OK;
}

/* A message: the header, then len bytes of data. */
static int32_t send_wire(knit_mod_ctx_t *m, int32_t dest, const wire_t *w, const void *data, uint64_t len)
{
    char *buf = K->alloc(m, sizeof(*w) + len);
    if (!buf)
        return KNIT_MOD_ERR_NOMEM;
    memcpy(buf, w, sizeof(*w));
    if (len)
        memcpy(buf + sizeof(*w), data, len);
    int32_t st = K->send(m, dest, buf, sizeof(*w) + len);
    K->free(m, buf);
    return st;
}

static void complete_all(knit_mod_ctx_t *m, entry_t *e, int32_t status, const void *result)
{
    for (int32_t i = 0; i < e->expect; i++)
        if (e->got[i])
            K->complete(m, e->tokens[i], status, result, status == KNIT_MOD_OK ? e->bytes : 0);
    entry_free(m, e);
}

static void coll_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    kn_coll_mod_args_t a;
    if (req->len < sizeof(a)) {
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    memcpy(&a, args, sizeof(a));
    if (a.flags & KN_COLL_MOD_F_FAULT)
        *(volatile int *)nowhere = 0; /* the tests' fault */
    if (a.version != KN_COLL_MOD_VERSION || a.bytes > KN_COLL_MOD_MAX_BYTES || req->len != sizeof(a) + a.bytes ||
        a.nlocal <= 0 || a.nlocal > MAX_LOCAL || a.lrank < 0 || a.lrank >= a.nlocal || a.nnodes <= 0 ||
        a.nnodes > KN_COLL_MOD_MAX_NODES || a.nidx < 0 || a.nidx >= a.nnodes) {
        K->log(m, KNIT_MOD_LOG_ERROR, "rank %d: a malformed request (version %u, %llu bytes of %llu, member %d of "
               "%d, node %d of %d)", req->rank, a.version, (unsigned long long)a.bytes,
               (unsigned long long)req->len, a.lrank, a.nlocal, a.nidx, a.nnodes);
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    entry_t *e = entry_get(m, a.comm, a.first, a.seq, a.nlocal, a.bytes);
    if (!e) {
        K->complete(m, req->token, KNIT_MOD_ERR_AGAIN, NULL, 0);
        return;
    }
    if (e->expect != a.nlocal || e->bytes != a.bytes || e->got[a.lrank] ||
        (e->have && (e->dtype != a.dtype || e->redop != a.redop))) {
        K->complete(m, req->token, KNIT_MOD_ERR_STATE, NULL, 0); /* the members disagree */
        return;
    }
    e->dtype = a.dtype;
    e->redop = a.redop;
    e->tokens[a.lrank] = req->token;
    e->got[a.lrank] = 1;
    if (a.bytes)
        memcpy(e->data + (size_t)a.lrank * a.bytes, (const char *)args + sizeof(a), a.bytes);
    if (++e->have < e->expect)
        return;
    /* the node's last member: its partial goes up */
    const char *part;
    int32_t cst = combine(e, &part);
    wire_t w = {.kind = UP, .comm = e->comm, .first = e->first, .dtype = e->dtype, .redop = e->redop, .seq = e->seq,
                .bytes = e->bytes, .node = K->geometry(m)->self, .nidx = a.nidx, .nnodes = a.nnodes,
                .status = cst};
    int32_t st = send_wire(m, KNIT_MOD_SWITCH, &w, part, cst == KNIT_MOD_OK ? e->bytes : 0);
    if (st != KNIT_MOD_OK)
        complete_all(m, e, st, NULL);
}

static void switch_up(knit_mod_ctx_t *m, const wire_t *w, const char *data)
{
    entry_t *e = entry_get(m, w->comm, w->first, w->seq, w->nnodes, w->bytes);
    if (!e) {
        K->log(m, KNIT_MOD_LOG_ERROR, "collective %llu of communicator %u: no room (%d in flight)",
               (unsigned long long)w->seq, w->comm, SLOTS);
        return;
    }
    if (w->nidx < 0 || w->nidx >= e->expect || e->got[w->nidx] || w->bytes != e->bytes) {
        K->log(m, KNIT_MOD_LOG_ERROR, "collective %llu of communicator %u: node %d's part does not fit",
               (unsigned long long)w->seq, w->comm, w->node);
        return;
    }
    e->dtype = w->dtype;
    e->redop = w->redop;
    e->got[w->nidx] = 1;
    e->node[w->nidx] = w->node;
    if (w->status != KNIT_MOD_OK && e->status == KNIT_MOD_OK)
        e->status = w->status;
    if (e->bytes && w->status == KNIT_MOD_OK)
        memcpy(e->data + (size_t)w->nidx * e->bytes, data, e->bytes);
    if (++e->have < e->expect)
        return;
    const char *res = NULL;
    int32_t st = e->status != KNIT_MOD_OK ? e->status : combine(e, &res);
    wire_t d = {.kind = DOWN, .comm = e->comm, .first = e->first, .seq = e->seq, .bytes = e->bytes, .status = st};
    for (int32_t i = 0; i < e->expect; i++)
        send_wire(m, e->node[i], &d, res, st == KNIT_MOD_OK ? e->bytes : 0);
    entry_free(m, e);
}

static void coll_message(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    (void)from;
    wire_t w;
    if (len < sizeof(w))
        return;
    memcpy(&w, msg, sizeof(w));
    const char *data = (const char *)msg + sizeof(w);
    uint64_t have = len - sizeof(w);
    if (w.status == KNIT_MOD_OK && have != w.bytes)
        return; /* malformed: a daemon of this job never sends it */
    if (w.kind == UP && K->geometry(m)->self == KNIT_MOD_SWITCH) {
        switch_up(m, &w, data);
        return;
    }
    if (w.kind != DOWN || K->geometry(m)->self == KNIT_MOD_SWITCH)
        return;
    state_t *s = K->state(m);
    for (int i = 0; i < SLOTS; i++) {
        entry_t *e = &s->slot[i];
        if (e->used && e->comm == w.comm && e->first == w.first && e->seq == w.seq) {
            complete_all(m, e, w.bytes == e->bytes ? w.status : KNIT_MOD_ERR_IO, data);
            return;
        }
    }
}

static const knit_mod_descriptor_t desc = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(desc),
    .name = "coll",
    .init = coll_init,
    .fini = coll_fini,
    .on_request = coll_request,
    .on_message = coll_message,
};
KNIT_MODULE(desc)
