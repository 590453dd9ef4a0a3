/*
 * coll: barrier, broadcast, reduce and allreduce done by the agents and
 * the switch (issue 23, docs/collectives.md "In the network").  Built
 * into libknit, which loads it itself where KNIT_COLL_OFFLOAD asks for it;
 * written against <knit/module.h> like any user module, so it is also the
 * reference for writing a real offload module.
 *
 * The path of one collective (communicator `comm` whose first member is
 * job rank `first`, its offloaded-collective number `seq`):
 *   rank   -> agent   a request: kn_coll_mod_args_t, the communicator's
 *                     nodes (a bitmap; none when it spans the job), then
 *                     its vector (inline in the command entry up to 200
 *                     bytes, read from the rank's memory by the agent above)
 *   agent             keeps each local member's vector; once the node's
 *                     last member is in, combines them in member order
 *   agent  -> switch  UP: the node's partial result, to its parent in the
 *                     tree of switches (the place service: one switch for
 *                     a job of at most KNIT_SWITCH_FANIN nodes)
 *   switch            keeps each member child's partial (a child is a
 *                     member when its nodes meet the bitmap); once the
 *                     last is in, combines them in child order and sends
 *                     the result UP to its parent; the root instead
 *   switch -> below   DOWN: the result, to every member child, and each
 *                     switch passes it down to its own
 *   agent  -> ranks   writes the result into each local member's buffer
 *                     (in the completion up to KN_COLL_MOD_INLINE bytes)
 *                     and completes its request.
 * Children cover their parent's nodes in order, so a fixed order at every
 * level: floating-point results are the same on every rank and from run
 * to run (for a given KNIT_SWITCH_FANIN).  A barrier is the same with 0
 * bytes; a broadcast carries only the root's vector up, a reduce's result
 * goes down towards the root's node only.  Every member's request
 * completes once the root switch has heard from every node: a fault
 * anywhere leaves every member without a result, and all of them redo the
 * collective on the hosts.
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
 * contributions, at a switch its member children's partials; slot i
 * holds member (child) i's, so that the order of combining is fixed.  A
 * broadcast keeps one slot: the root's vector. */
typedef struct entry {
    int used;
    uint32_t kind, comm, dtype, redop;
    int32_t first;        /* with comm: which communicator */
    int32_t root_node;    /* bcast, reduce: the root's node */
    int32_t root_lrank;   /* agent: the root's index among the members, -1 */
    uint64_t seq, bytes;
    int32_t expect, have;
    int32_t status;       /* a switch: the first failure a child reported */
    int32_t has_root;     /* bcast: the root's vector is in */
    uint32_t mask_len;    /* the communicator's nodes (0: every node) */
    uint8_t *mask;
    member_t *mem;        /* agent: [expect] */
    int32_t *child;       /* switch: the child of each slot (where the result goes) */
    uint8_t *got;
    char *data;           /* expect * bytes (bcast: bytes) */
} entry_t;

typedef struct state {
    entry_t slot[SLOTS];
    knit_mod_place_t self; /* this instance in the tree of switches */
} state_t;

/* A message: this header, then (UP) the communicator's nodes, mask_len
 * bytes, then dlen bytes of data. */
typedef struct wire {
    uint32_t kind;        /* UP, DOWN */
    uint32_t ckind;       /* KN_COLL_MOD_* */
    uint32_t comm, dtype, redop;
    int32_t first;
    uint64_t seq, bytes;
    uint64_t dlen;        /* 0 or bytes */
    uint32_t mask_len;
    int32_t root_node;
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
    if (svc->abi_version < 2 || !svc->place)
        return KNIT_MOD_ERR_NOT_SUPPORTED; /* no tree of switches to follow */
    state_t *s = K->alloc(m, sizeof(state_t));
    if (!s)
        return KNIT_MOD_ERR_NOMEM;
    int32_t st = K->place(m, g->self, &s->self);
    if (st != KNIT_MOD_OK) {
        K->free(m, s);
        return st;
    }
    K->set_state(m, s);
    return KNIT_MOD_OK;
}

static void entry_free(knit_mod_ctx_t *m, entry_t *e)
{
    K->free(m, e->mem);
    K->free(m, e->child);
    K->free(m, e->got);
    K->free(m, e->data);
    K->free(m, e->mask);
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

/* A new entry for `expect` contributions of `bytes`, with a copy of the
 * communicator's nodes; NULL: no room (SLOTS in flight) or memory. */
static entry_t *entry_new(knit_mod_ctx_t *m, uint32_t kind, uint32_t comm, int32_t first, uint64_t seq,
                          int32_t expect, uint64_t bytes, const uint8_t *mask, uint32_t mask_len)
{
    state_t *s = K->state(m);
    entry_t *e = NULL;
    for (int i = 0; i < SLOTS && !e; i++)
        if (!s->slot[i].used)
            e = &s->slot[i];
    if (!e)
        return NULL;
    int sw = s->self.level > 0;
    uint64_t keep = kind == KN_COLL_MOD_BCAST ? bytes : (uint64_t)expect * bytes;
    e->got = K->alloc(m, (uint64_t)expect + 1);
    e->data = keep ? K->alloc(m, keep) : NULL;
    e->mask = mask_len ? K->alloc(m, mask_len) : NULL;
    if (sw)
        e->child = K->alloc(m, (uint64_t)expect * sizeof(int32_t) + 1);
    else
        e->mem = K->alloc(m, (uint64_t)expect * sizeof(member_t));
    if (!e->got || (keep && !e->data) || (mask_len && !e->mask) || (sw ? !e->child : !e->mem)) {
        entry_free(m, e);
        return NULL;
    }
    if (mask_len)
        memcpy(e->mask, mask, mask_len);
    e->used = 1;
    e->kind = kind;
    e->comm = comm;
    e->first = first;
    e->seq = seq;
    e->expect = expect;
    e->bytes = bytes;
    e->mask_len = mask_len;
    return e;
}

/* Whether instance c's nodes include a member (mask) or node n (n >= 0). */
static int covers(knit_mod_ctx_t *m, int32_t c, const uint8_t *mask, uint32_t mask_len, int32_t n)
{
    knit_mod_place_t p;
    if (K->place(m, c, &p) != KNIT_MOD_OK)
        return 0;
    if (n >= 0)
        return n >= p.first_node && n < p.first_node + p.nnodes;
    for (int32_t k = p.first_node; k < p.first_node + p.nnodes; k++)
        if (kn_coll_mod_member(mask, mask_len, k))
            return 1;
    return 0;
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

/* Keep contribution `i` (a member's vector, or a child's partial). */
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

/* A message: the header, its w->mask_len bytes of mask, then w->dlen
 * bytes of data. */
static int32_t send_wire(knit_mod_ctx_t *m, int32_t dest, const wire_t *w, const uint8_t *mask, const void *data)
{
    char *buf = K->alloc(m, sizeof(*w) + w->mask_len + w->dlen);
    if (!buf)
        return KNIT_MOD_ERR_NOMEM;
    memcpy(buf, w, sizeof(*w));
    if (w->mask_len)
        memcpy(buf + sizeof(*w), mask, w->mask_len);
    if (w->dlen)
        memcpy(buf + sizeof(*w) + w->mask_len, data, w->dlen);
    int32_t st = K->send(m, dest, buf, sizeof(*w) + w->mask_len + w->dlen);
    K->free(m, buf);
    return st;
}

/* The entry's part, up to this instance's parent. */
static int32_t send_up(knit_mod_ctx_t *m, entry_t *e, int32_t status)
{
    const char *part = NULL;
    int32_t st = status != KNIT_MOD_OK ? status : result_of(e, &part);
    wire_t w = {.kind = UP, .ckind = e->kind, .comm = e->comm, .first = e->first, .dtype = e->dtype,
                .redop = e->redop, .seq = e->seq, .bytes = e->bytes, .dlen = st == KNIT_MOD_OK && part ? e->bytes : 0,
                .mask_len = e->mask_len, .root_node = e->root_node, .status = st};
    return send_wire(m, ((state_t *)K->state(m))->self.parent, &w, e->mask, part);
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

/* A switch: the result (or the failure) down to each member child; a
 * reduce's result only towards the root's node. */
static void send_down(knit_mod_ctx_t *m, entry_t *e, int32_t status, const char *res)
{
    wire_t d = {.kind = DOWN, .ckind = e->kind, .comm = e->comm, .first = e->first, .seq = e->seq,
                .bytes = e->bytes, .root_node = e->root_node, .status = status};
    for (int32_t i = 0; i < e->expect; i++) {
        int32_t c = e->child[i];
        int gets = status == KNIT_MOD_OK && res &&
                   (e->kind != KN_COLL_MOD_REDUCE || covers(m, c, NULL, 0, e->root_node));
        d.dlen = gets ? e->bytes : 0;
        send_wire(m, c, &d, NULL, res);
    }
    entry_free(m, e);
}

static int args_ok(knit_mod_ctx_t *m, const knit_mod_request_t *req, const kn_coll_mod_args_t *a,
                   const uint8_t *mask)
{
    const knit_mod_geometry_t *g = K->geometry(m);
    if (a->version != KN_COLL_MOD_VERSION || a->kind < KN_COLL_MOD_BARRIER || a->kind > KN_COLL_MOD_ALLREDUCE ||
        a->bytes > KN_COLL_MOD_MAX_BYTES || (a->kind == KN_COLL_MOD_BARRIER && a->bytes) || a->nlocal <= 0 ||
        a->nlocal > MAX_LOCAL || a->lrank < 0 || a->lrank >= a->nlocal ||
        (a->mask_len && a->mask_len != ((uint32_t)g->nnodes + 7) / 8) || req->len < sizeof(*a) + a->mask_len ||
        !kn_coll_mod_member(mask, a->mask_len, g->self))
        return 0;
    int rooted = a->kind == KN_COLL_MOD_BCAST || a->kind == KN_COLL_MOD_REDUCE;
    if (rooted && (a->root_node < 0 || a->root_node >= g->nnodes || !kn_coll_mod_member(mask, a->mask_len, a->root_node) ||
                   a->root_lrank < -1 || a->root_lrank >= a->nlocal || (a->root_lrank >= 0) != (a->root_node == g->self)))
        return 0;
    int sends = a->kind != KN_COLL_MOD_BCAST || a->lrank == a->root_lrank;
    return req->len == sizeof(*a) + a->mask_len + (sends ? a->bytes : 0);
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
    const uint8_t *mask = (const uint8_t *)args + sizeof(a);
    if (!args_ok(m, req, &a, mask)) {
        K->log(m, KNIT_MOD_LOG_ERROR, "rank %d: a malformed request (version %u, kind %u, %llu bytes of %llu, "
               "member %d of %d, root %d/%d, mask %u)", req->rank, a.version, a.kind, (unsigned long long)a.bytes,
               (unsigned long long)req->len, a.lrank, a.nlocal, a.root_node, a.root_lrank, a.mask_len);
        K->complete(m, req->token, KNIT_MOD_ERR_INVAL, NULL, 0);
        return;
    }
    entry_t *e = entry_find(m, a.comm, a.first, a.seq);
    if (!e && !(e = entry_new(m, a.kind, a.comm, a.first, a.seq, a.nlocal, a.bytes, mask, a.mask_len))) {
        K->complete(m, req->token, KNIT_MOD_ERR_AGAIN, NULL, 0);
        return;
    }
    if (e->kind != a.kind || e->expect != a.nlocal || e->bytes != a.bytes || e->got[a.lrank] ||
        e->mask_len != a.mask_len || (a.mask_len && memcmp(e->mask, mask, a.mask_len)) ||
        (e->have && (e->dtype != a.dtype || e->redop != a.redop || e->root_node != a.root_node ||
                     e->root_lrank != a.root_lrank))) {
        K->complete(m, req->token, KNIT_MOD_ERR_STATE, NULL, 0); /* the members disagree */
        return;
    }
    e->dtype = a.dtype;
    e->redop = a.redop;
    e->root_node = a.root_node;
    e->root_lrank = a.root_lrank;
    e->mem[a.lrank] = (member_t){.token = req->token, .addr = a.result, .rank = req->rank};
    e->got[a.lrank] = 1;
    keep(e, a.lrank, mask + a.mask_len, req->len - sizeof(a) - a.mask_len);
    if (++e->have < e->expect)
        return;
    /* the node's last member: its partial goes up */
    int32_t st = send_up(m, e, KNIT_MOD_OK);
    if (st != KNIT_MOD_OK)
        complete_all(m, e, st, NULL);
}

/* A child's part at a switch.  The first one makes the entry: which of
 * this switch's children have members (their nodes meet the mask). */
static void switch_up(knit_mod_ctx_t *m, int32_t from, const wire_t *w, const uint8_t *mask, const char *data)
{
    const knit_mod_place_t *me = &((state_t *)K->state(m))->self;
    entry_t *e = entry_find(m, w->comm, w->first, w->seq);
    if (!e) {
        int32_t n = 0;
        for (int32_t i = 0; i < me->nchildren; i++)
            n += covers(m, me->first_child + i * me->child_step, mask, w->mask_len, -1);
        e = n ? entry_new(m, w->ckind, w->comm, w->first, w->seq, n, w->bytes, mask, w->mask_len) : NULL;
        if (!e) {
            K->log(m, KNIT_MOD_LOG_ERROR, "collective %llu of communicator %u: no room (%d in flight)",
                   (unsigned long long)w->seq, w->comm, SLOTS);
            return;
        }
        for (int32_t i = 0, k = 0; i < me->nchildren; i++) {
            int32_t c = me->first_child + i * me->child_step;
            if (covers(m, c, mask, w->mask_len, -1))
                e->child[k++] = c;
        }
        e->dtype = w->dtype;
        e->redop = w->redop;
        e->root_node = w->root_node;
    }
    int32_t slot = -1;
    for (int32_t i = 0; i < e->expect && slot < 0; i++)
        if (e->child[i] == from)
            slot = i;
    if (slot < 0 || e->got[slot] || w->bytes != e->bytes || w->ckind != e->kind || w->mask_len != e->mask_len ||
        (w->mask_len && memcmp(mask, e->mask, w->mask_len))) {
        K->log(m, KNIT_MOD_LOG_ERROR, "collective %llu of communicator %u: the part of %d does not fit",
               (unsigned long long)w->seq, w->comm, from);
        return;
    }
    e->got[slot] = 1;
    if (w->status != KNIT_MOD_OK && e->status == KNIT_MOD_OK)
        e->status = w->status;
    keep(e, slot, data, w->dlen);
    if (++e->have < e->expect)
        return;
    if (me->parent != KNIT_MOD_NONE) { /* the result comes down later */
        int32_t st = send_up(m, e, e->status);
        if (st != KNIT_MOD_OK)
            send_down(m, e, st, NULL);
        return;
    }
    const char *res = NULL;
    int32_t st = e->status != KNIT_MOD_OK ? e->status : result_of(e, &res);
    if (st == KNIT_MOD_OK && e->bytes && !res)
        st = KNIT_MOD_ERR_STATE; /* a broadcast whose root's node sent nothing */
    send_down(m, e, st, res);
}

static void coll_message(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    wire_t w;
    if (len < sizeof(w))
        return;
    memcpy(&w, msg, sizeof(w));
    const knit_mod_geometry_t *g = K->geometry(m);
    if (w.mask_len && w.mask_len != ((uint32_t)g->nnodes + 7) / 8)
        return;
    const uint8_t *mask = (const uint8_t *)msg + sizeof(w);
    const char *data = (const char *)mask + w.mask_len;
    if (len - sizeof(w) < w.mask_len || len - sizeof(w) - w.mask_len != w.dlen || (w.dlen && w.dlen != w.bytes))
        return; /* malformed: a daemon of this job never sends it */
    int sw = ((state_t *)K->state(m))->self.level > 0;
    if (w.kind == UP && sw) {
        switch_up(m, from, &w, mask, data);
        return;
    }
    if (w.kind != DOWN || from != ((state_t *)K->state(m))->self.parent)
        return;
    entry_t *e = entry_find(m, w.comm, w.first, w.seq);
    if (!e)
        return;
    if (sw)
        send_down(m, e, w.status, w.dlen ? data : NULL);
    else
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
