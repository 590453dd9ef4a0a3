/*
 * coll: barrier, broadcast, reduce and allreduce done by the agents and
 * the switch (issue 23, docs/collectives.md "In the network").  Built
 * into libknit, which loads it itself where KNIT_COLL_OFFLOAD asks for it;
 * written against <knit/module.h> like any user module, so it is also the
 * reference for writing a real offload module.
 *
 * The path of one collective (communicator `comm` whose first member is
 * job rank `first`, its offloaded-collective number `seq`):
 *   rank   -> agent   a request: kn_coll_mod_args_t, then its vector (inline
 *                     in the command entry up to 200 bytes, read from the
 *                     rank's memory by the agent above)
 *   agent             keeps each local member's vector; once the node's
 *                     last member is in, combines them in member order
 *   agent  -> switch  UP: the node's partial result
 *   switch            keeps each node's partial; once the last node is in,
 *                     combines them in node order, and
 *   switch -> agents  DOWN: the result, to every node with members
 *   agent  -> ranks   writes the result into each local member's buffer
 *                     (in the completion up to KN_COLL_MOD_INLINE bytes)
 *                     and completes its request.
 * A fixed order at both levels: floating-point results are the same on
 * every rank and from run to run.  A barrier is the same with 0 bytes; a
 * broadcast carries only the root's vector up, a reduce's result goes
 * down to the root's node only.  Every member's request completes once the
 * switch has heard from every node: a fault anywhere leaves every member
 * without a result, and all of them redo the collective on the hosts.
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

/* A local member (agent): its request, and where its result goes. */
typedef struct member {
    uint64_t token, addr;
    int32_t rank;
} member_t;

/* One collective in flight: at an agent its node's members'
 * contributions, at the switch the member nodes' partials; slot i holds
 * member (node) i's, so that the order of combining is fixed.  A
 * broadcast keeps one slot: the root's vector. */
typedef struct entry {
    int used;
    uint32_t kind, comm, dtype, redop;
    int32_t first;        /* with comm: which communicator */
    int32_t root_nidx;
    int32_t root_lrank;   /* agent: the root's index among the members, -1 */
    uint64_t seq, bytes;
    int32_t expect, have;
    int32_t status;       /* the switch: the first failure a node reported */
    int32_t has_root;     /* bcast: the root's vector is in */
    member_t *mem;        /* agent: [expect] */
    int32_t *node;        /* switch: the node of each slot (where the result goes) */
    uint8_t *got;
    char *data;           /* expect * bytes (bcast: bytes) */
} entry_t;

typedef struct state {
    entry_t slot[SLOTS];
} state_t;

typedef struct wire {
    uint32_t kind;        /* UP, DOWN */
    uint32_t ckind;       /* KN_COLL_MOD_* */
    uint32_t comm, dtype, redop;
    int32_t first;
    uint64_t seq, bytes;
    uint64_t dlen;        /* bytes of data that follow: 0 or bytes */
    int32_t node, nidx, nnodes; /* UP: the sender, its index, the member nodes */
    int32_t root_nidx;
    int32_t status;
    int32_t pad;
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
    K->free(m, e->mem);
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

static entry_t *entry_find(knit_mod_ctx_t *m, uint32_t comm, int32_t first, uint64_t seq)
{
    state_t *s = K->state(m);
    for (int i = 0; i < SLOTS; i++) {
        entry_t *e = &s->slot[i];
        if (e->used && e->comm == comm && e->first == first && e->seq == seq)
            return e;
    }
    return NULL;
}

/* The entry of (comm, seq), made for `expect` contributions of `bytes`
 * where there is none yet; NULL: no room (SLOTS in flight) or memory. */
static entry_t *entry_get(knit_mod_ctx_t *m, uint32_t kind, uint32_t comm, int32_t first, uint64_t seq,
                          int32_t expect, uint64_t bytes)
{
    entry_t *e = entry_find(m, comm, first, seq);
    if (e)
        return e;
    state_t *s = K->state(m);
    for (int i = 0; i < SLOTS && !e; i++)
        if (!s->slot[i].used)
            e = &s->slot[i];
    if (!e)
        return NULL;
    int sw = K->geometry(m)->self == KNIT_MOD_SWITCH;
    uint64_t keep = kind == KN_COLL_MOD_BCAST ? bytes : (uint64_t)expect * bytes;
    e->got = K->alloc(m, (uint64_t)expect);
    e->data = keep ? K->alloc(m, keep) : NULL;
    if (sw)
        e->node = K->alloc(m, (uint64_t)expect * sizeof(int32_t));
    else
        e->mem = K->alloc(m, (uint64_t)expect * sizeof(member_t));
    if (!e->got || (keep && !e->data) || (sw ? !e->node : !e->mem)) {
        entry_free(m, e);
        return NULL;
    }
    e->used = 1;
    e->kind = kind;
    e->comm = comm;
    e->first = first;
    e->seq = seq;
    e->expect = expect;
    e->bytes = bytes;
    return e;
}

/* The entry's result (*out; NULL where there is none: a barrier, or a
 * broadcast whose root is elsewhere).  Reductions combine the slots in
 * order: slot i becomes slot i-1 op slot i (in, then inout: MPI's order),
 * so the last one holds it.  KNIT_MOD_ERR_INVAL: the op does not apply to
 * the type. */
static int32_t result_of(const entry_t *e, const char **out)
{
    *out = NULL;
    if (!e->bytes)
        return KNIT_MOD_OK;
    if (e->kind == KN_COLL_MOD_BCAST) {
        *out = e->has_root ? e->data : NULL;
        return KNIT_MOD_OK;
    }
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

/* Keep contribution `i` (a member's vector, or a node's partial). */
static void keep(entry_t *e, int32_t i, const void *data, uint64_t len)
{
    if (!len)
        return;
    if (e->kind == KN_COLL_MOD_BCAST) {
        memcpy(e->data, data, len);
        e->has_root = 1;
    } else {
        memcpy(e->data + (size_t)i * e->bytes, data, len);
    }
}

/* A message: the header, then w->dlen bytes of data. */
static int32_t send_wire(knit_mod_ctx_t *m, int32_t dest, const wire_t *w, const void *data)
{
    char *buf = K->alloc(m, sizeof(*w) + w->dlen);
    if (!buf)
        return KNIT_MOD_ERR_NOMEM;
    memcpy(buf, w, sizeof(*w));
    if (w->dlen)
        memcpy(buf + sizeof(*w), data, w->dlen);
    int32_t st = K->send(m, dest, buf, sizeof(*w) + w->dlen);
    K->free(m, buf);
    return st;
}

/* Whether local member i gets the result: every member of an allreduce,
 * the root of a reduce, the others of a broadcast. */
static int gets_result(const entry_t *e, int32_t i)
{
    switch (e->kind) {
    case KN_COLL_MOD_ALLREDUCE:
        return 1;
    case KN_COLL_MOD_REDUCE:
        return i == e->root_lrank;
    case KN_COLL_MOD_BCAST:
        return i != e->root_lrank;
    }
    return 0;
}

/* Complete every local member: the result into its buffer (or the
 * completion, when small), then its request. */
static void complete_all(knit_mod_ctx_t *m, entry_t *e, int32_t status, const char *result)
{
    for (int32_t i = 0; i < e->expect; i++) {
        if (!e->got[i])
            continue;
        const member_t *p = &e->mem[i];
        if (status != KNIT_MOD_OK || !e->bytes || !gets_result(e, i)) {
            K->complete(m, p->token, status, NULL, 0);
        } else if (!result) {
            K->complete(m, p->token, KNIT_MOD_ERR_IO, NULL, 0);
        } else if (e->bytes <= KN_COLL_MOD_INLINE) {
            K->complete(m, p->token, KNIT_MOD_OK, result, e->bytes);
        } else {
            int32_t st = K->write_rank(m, p->rank, p->addr, result, e->bytes);
            K->complete(m, p->token, st, NULL, 0);
        }
    }
    entry_free(m, e);
}

static int args_ok(const knit_mod_request_t *req, const kn_coll_mod_args_t *a)
{
    if (a->version != KN_COLL_MOD_VERSION || a->kind < KN_COLL_MOD_BARRIER || a->kind > KN_COLL_MOD_ALLREDUCE ||
        a->bytes > KN_COLL_MOD_MAX_BYTES || (a->kind == KN_COLL_MOD_BARRIER && a->bytes) || a->nlocal <= 0 ||
        a->nlocal > MAX_LOCAL || a->lrank < 0 || a->lrank >= a->nlocal || a->nnodes <= 0 ||
        a->nnodes > KN_COLL_MOD_MAX_NODES || a->nidx < 0 || a->nidx >= a->nnodes)
        return 0;
    int rooted = a->kind == KN_COLL_MOD_BCAST || a->kind == KN_COLL_MOD_REDUCE;
    if (rooted && (a->root_nidx < 0 || a->root_nidx >= a->nnodes || a->root_lrank < -1 ||
                   a->root_lrank >= a->nlocal || (a->root_lrank >= 0) != (a->root_nidx == a->nidx)))
        return 0;
    int sends = a->kind != KN_COLL_MOD_BCAST || a->lrank == a->root_lrank;
    return req->len == sizeof(*a) + (sends ? a->bytes : 0);
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
    if (!args_ok(req, &a)) {
        K->log(m, KNIT_MOD_LOG_ERROR, "rank %d: a malformed request (version %u, kind %u, %llu bytes of %llu, "
               "member %d of %d, node %d of %d, root %d/%d)", req->rank, a.version, a.kind,
               (unsigned long long)a.bytes, (unsigned long long)req->len, a.lrank, a.nlocal, a.nidx, a.nnodes,
               a.root_nidx, a.root_lrank);
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    entry_t *e = entry_get(m, a.kind, a.comm, a.first, a.seq, a.nlocal, a.bytes);
    if (!e) {
        K->complete(m, req->token, KNIT_MOD_ERR_AGAIN, NULL, 0);
        return;
    }
    if (e->kind != a.kind || e->expect != a.nlocal || e->bytes != a.bytes || e->got[a.lrank] ||
        (e->have && (e->dtype != a.dtype || e->redop != a.redop || e->root_nidx != a.root_nidx ||
                     e->root_lrank != a.root_lrank))) {
        K->complete(m, req->token, KNIT_MOD_ERR_STATE, NULL, 0); /* the members disagree */
        return;
    }
    e->dtype = a.dtype;
    e->redop = a.redop;
    e->root_nidx = a.root_nidx;
    e->root_lrank = a.root_lrank;
    e->mem[a.lrank] = (member_t){.token = req->token, .addr = a.result, .rank = req->rank};
    e->got[a.lrank] = 1;
    keep(e, a.lrank, (const char *)args + sizeof(a), req->len - sizeof(a));
    if (++e->have < e->expect)
        return;
    /* the node's last member: its partial goes up */
    const char *part;
    int32_t cst = result_of(e, &part);
    wire_t w = {.kind = UP, .ckind = e->kind, .comm = e->comm, .first = e->first, .dtype = e->dtype,
                .redop = e->redop, .seq = e->seq, .bytes = e->bytes, .dlen = part ? e->bytes : 0,
                .node = K->geometry(m)->self, .nidx = a.nidx, .nnodes = a.nnodes, .root_nidx = e->root_nidx,
                .status = cst};
    int32_t st = send_wire(m, KNIT_MOD_SWITCH, &w, part);
    if (st != KNIT_MOD_OK)
        complete_all(m, e, st, NULL);
}

static void switch_up(knit_mod_ctx_t *m, const wire_t *w, const char *data)
{
    entry_t *e = entry_get(m, w->ckind, w->comm, w->first, w->seq, w->nnodes, w->bytes);
    if (!e) {
        K->log(m, KNIT_MOD_LOG_ERROR, "collective %llu of communicator %u: no room (%d in flight)",
               (unsigned long long)w->seq, w->comm, SLOTS);
        return;
    }
    if (w->nidx < 0 || w->nidx >= e->expect || e->got[w->nidx] || w->bytes != e->bytes || w->ckind != e->kind) {
        K->log(m, KNIT_MOD_LOG_ERROR, "collective %llu of communicator %u: node %d's part does not fit",
               (unsigned long long)w->seq, w->comm, w->node);
        return;
    }
    e->dtype = w->dtype;
    e->redop = w->redop;
    e->root_nidx = w->root_nidx;
    e->got[w->nidx] = 1;
    e->node[w->nidx] = w->node;
    if (w->status != KNIT_MOD_OK && e->status == KNIT_MOD_OK)
        e->status = w->status;
    keep(e, w->nidx, data, w->dlen);
    if (++e->have < e->expect)
        return;
    const char *res = NULL;
    int32_t st = e->status != KNIT_MOD_OK ? e->status : result_of(e, &res);
    if (st == KNIT_MOD_OK && e->bytes && !res)
        st = KNIT_MOD_ERR_STATE; /* a broadcast whose root's node sent nothing */
    wire_t d = {.kind = DOWN, .ckind = e->kind, .comm = e->comm, .first = e->first, .seq = e->seq,
                .bytes = e->bytes, .root_nidx = e->root_nidx, .status = st};
    for (int32_t i = 0; i < e->expect; i++) {
        /* a reduce's result goes to the root's node only */
        d.dlen = st == KNIT_MOD_OK && (e->kind != KN_COLL_MOD_REDUCE || i == e->root_nidx) ? e->bytes : 0;
        send_wire(m, e->node[i], &d, res);
    }
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
    if (len - sizeof(w) != w.dlen || (w.dlen && w.dlen != w.bytes))
        return; /* malformed: a daemon of this job never sends it */
    int sw = K->geometry(m)->self == KNIT_MOD_SWITCH;
    if (w.kind == UP && sw) {
        switch_up(m, &w, data);
        return;
    }
    if (w.kind != DOWN || sw)
        return;
    entry_t *e = entry_find(m, w.comm, w.first, w.seq);
    if (!e)
        return;
    complete_all(m, e, w.status, w.dlen ? data : NULL);
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
