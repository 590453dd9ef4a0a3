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
 *                     its vector up to one segment (KN_COLL_MOD_SEG; in
 *                     the command entry up to 200 bytes, read from the
 *                     rank's memory by the daemon above); a larger one
 *                     stays where it is (args.src)
 *   agent             once the node's last member is in, combines their
 *                     vectors in member order, one segment at a time (a
 *                     large one's segments read from each member's
 *                     memory with read_rank as it goes)
 *   agent  -> switch  UP: each segment of the node's partial result, to
 *                     its parent in the tree of switches (the place
 *                     service: one switch for a job of at most
 *                     KNIT_SWITCH_FANIN nodes); WINDOW segments in flight,
 *                     the next one leaving as one comes back down
 *   switch            keeps each member child's partial of a segment (a
 *                     child is a member when its nodes meet the bitmap);
 *                     once the last is in, combines them in child order
 *                     and sends the segment UP to its parent; the root
 *                     instead
 *   switch -> below   DOWN: the segment's result, to every member child,
 *                     and each switch passes it down to its own with its
 *                     header handler (coll_header: the daemon streams the
 *                     data on, the module never copies it): a switch
 *                     holds a few segments of a collective, never the
 *                     whole vector, and combines one while the next ones
 *                     arrive (a pipeline)
 *   agent  -> ranks   writes each segment of the result into each local
 *                     member's buffer (a result of at most
 *                     KN_COLL_MOD_INLINE bytes goes in the completion),
 *                     and completes the requests after the last.
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

#define SLOTS 256         /* collectives (agent), segments (switch) in flight */
#define MAX_LOCAL 1024    /* members of one node */
#define WINDOW 4          /* segments of one collective in flight */

/* A local member (agent): its request, and where its vector and result are. */
typedef struct member {
    uint64_t token, src, addr;
    int32_t rank;
} member_t;

/* At an agent, one collective in flight: its node's members (slot i:
 * member i's vector, for a collective of one segment; larger ones are
 * read a segment at a time into the slots).  At a switch, one segment of
 * a collective: slot i holds member child i's partial.  So the order of
 * combining is fixed.  A broadcast keeps one slot: the root's vector. */
typedef struct entry {
    int used;
    uint32_t kind, comm, dtype, redop;
    int32_t first;        /* with comm: which communicator */
    int32_t root_node;    /* bcast, reduce: the root's node */
    int32_t root_lrank;   /* agent: the root's index among the members, -1 */
    uint64_t seq, bytes;  /* the collective, its vector */
    uint32_t seg, nseg;   /* switch: this segment of nseg; agent: 0 of nseg */
    uint64_t slen;        /* bytes of a slot */
    int32_t expect, have;
    int32_t status;       /* the first failure heard of */
    int32_t has_root;     /* bcast: the root's vector is in */
    uint32_t next, ndown; /* agent: the next segment to send up, segments back */
    uint32_t mask_len;    /* the communicator's nodes (0: every node) */
    uint8_t *mask;
    member_t *mem;        /* agent: [expect] */
    int32_t *child;       /* switch: the child of each slot (where the result goes) */
    uint8_t *got;
    char *data;           /* expect slots of slen (bcast: one) */
} entry_t;

typedef struct state {
    entry_t slot[SLOTS];
    knit_mod_place_t self; /* this instance in the tree of switches */
} state_t;

/* A message: this header, then (UP) the communicator's nodes, mask_len
 * bytes, then dlen bytes of segment seg. */
typedef struct wire {
    uint32_t kind;        /* UP, DOWN */
    uint32_t ckind;       /* KN_COLL_MOD_* */
    uint32_t comm, dtype, redop;
    int32_t first;
    uint64_t seq, bytes;
    uint32_t seg, nseg;
    uint64_t dlen;        /* 0, or the segment's length */
    uint32_t mask_len;
    int32_t root_node;
    int32_t status;
    int32_t pad;
} wire_t;

enum { UP = 1, DOWN };

static uint32_t nseg_of(uint64_t bytes)
{
    return bytes <= KN_COLL_MOD_SEG ? 1 : (uint32_t)((bytes + KN_COLL_MOD_SEG - 1) / KN_COLL_MOD_SEG);
}

/* Bytes of segment i of a vector of `bytes`. */
static uint64_t seg_len(uint64_t bytes, uint32_t i)
{
    uint64_t off = (uint64_t)i * KN_COLL_MOD_SEG;
    return bytes - off < KN_COLL_MOD_SEG ? bytes - off : KN_COLL_MOD_SEG;
}

static state_t *st_of(knit_mod_ctx_t *m)
{
    return K->state(m);
}

static int32_t coll_init(knit_mod_ctx_t *m, const knit_mod_services_t *svc)
{
    K = svc;
    const knit_mod_geometry_t *g = K->geometry(m);
    if (g->nnodes > KN_COLL_MOD_MAX_NODES || g->local_size > MAX_LOCAL)
        return KNIT_MOD_ERR_RANGE;
    if (svc->abi_version < 2 || !svc->place || !svc->send_hdr)
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
    state_t *s = st_of(m);
    for (int i = 0; s && i < SLOTS; i++)
        if (s->slot[i].used)
            entry_free(m, &s->slot[i]);
}

static entry_t *entry_find(knit_mod_ctx_t *m, uint32_t comm, int32_t first, uint64_t seq, uint32_t seg)
{
    state_t *s = st_of(m);
    for (int i = 0; i < SLOTS; i++) {
        entry_t *e = &s->slot[i];
        if (e->used && e->comm == comm && e->first == first && e->seq == seq && e->seg == seg)
            return e;
    }
    return NULL;
}

/* A new entry for `expect` contributions (slots of slen bytes), with a
 * copy of the communicator's nodes; NULL: no room (SLOTS in flight) or
 * memory. */
static entry_t *entry_new(knit_mod_ctx_t *m, const wire_t *w, int32_t expect, uint64_t slen, const uint8_t *mask)
{
    state_t *s = st_of(m);
    entry_t *e = NULL;
    for (int i = 0; i < SLOTS && !e; i++)
        if (!s->slot[i].used)
            e = &s->slot[i];
    if (!e)
        return NULL;
    int sw = s->self.level > 0;
    uint64_t keep = w->ckind == KN_COLL_MOD_BCAST ? slen : (uint64_t)expect * slen;
    e->got = K->alloc(m, (uint64_t)expect + 1);
    e->data = keep ? K->alloc(m, keep) : NULL;
    e->mask = w->mask_len ? K->alloc(m, w->mask_len) : NULL;
    if (sw)
        e->child = K->alloc(m, (uint64_t)expect * sizeof(int32_t) + 1);
    else
        e->mem = K->alloc(m, (uint64_t)expect * sizeof(member_t));
    if (!e->got || (keep && !e->data) || (w->mask_len && !e->mask) || (sw ? !e->child : !e->mem)) {
        entry_free(m, e);
        return NULL;
    }
    if (w->mask_len)
        memcpy(e->mask, mask, w->mask_len);
    e->used = 1;
    e->kind = w->ckind;
    e->comm = w->comm;
    e->first = w->first;
    e->seq = w->seq;
    e->bytes = w->bytes;
    e->seg = w->seg;
    e->nseg = w->nseg;
    e->slen = slen;
    e->dtype = w->dtype;
    e->redop = w->redop;
    e->root_node = w->root_node;
    e->expect = expect;
    e->mask_len = w->mask_len;
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

/* The combined slots of len bytes (*out; NULL where there is none: a
 * barrier, or a broadcast whose root is elsewhere).  Reductions combine
 * the slots in order: slot i becomes slot i-1 op slot i (in, then inout:
 * MPI's order), so the last one holds it.  KNIT_MOD_ERR_INVAL: the op does
 * not apply to the type. */
static int32_t combine(const entry_t *e, uint64_t len, const char **out)
{
    *out = NULL;
    if (!len)
        return KNIT_MOD_OK;
    if (e->kind == KN_COLL_MOD_BCAST) {
        *out = e->has_root ? e->data : NULL;
        return KNIT_MOD_OK;
    }
    size_t esize = kn_coll_mod_esize(e->dtype);
    if (!esize || len % esize)
        return KNIT_MOD_ERR_INVAL;
    for (int32_t i = 1; i < e->expect; i++)
        if (kn_coll_mod_reduce(e->data + (size_t)(i - 1) * e->slen, e->data + (size_t)i * e->slen, len / esize,
                               e->dtype, e->redop) < 0)
            return KNIT_MOD_ERR_INVAL;
    *out = e->data + (size_t)(e->expect - 1) * e->slen;
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
        memcpy(e->data + (size_t)i * e->slen, data, len);
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

/* Segment seg's part (len bytes at part, or none), up to this instance's
 * parent. */
static int32_t send_up(knit_mod_ctx_t *m, const entry_t *e, uint32_t seg, int32_t status, const char *part,
                       uint64_t len)
{
    wire_t w = {.kind = UP, .ckind = e->kind, .comm = e->comm, .first = e->first, .dtype = e->dtype,
                .redop = e->redop, .seq = e->seq, .bytes = e->bytes, .seg = seg, .nseg = e->nseg,
                .dlen = status == KNIT_MOD_OK && part ? len : 0, .mask_len = e->mask_len,
                .root_node = e->root_node, .status = status};
    return send_wire(m, st_of(m)->self.parent, &w, e->mask, part);
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

/* Whether local member i has a vector to give: all of a reduction, the
 * root of a broadcast. */
static int gives(const entry_t *e, int32_t i)
{
    return e->kind != KN_COLL_MOD_BCAST || i == e->root_lrank;
}

/* Complete every local member (status), with the result in the
 * completion when it is small (result: all of it), and free the entry. */
static void complete_all(knit_mod_ctx_t *m, entry_t *e, int32_t status, const char *result)
{
    for (int32_t i = 0; i < e->expect; i++) {
        if (!e->got[i])
            continue;
        const member_t *p = &e->mem[i];
        int small = status == KNIT_MOD_OK && e->bytes && e->bytes <= KN_COLL_MOD_INLINE && gets_result(e, i);
        if (small && !result)
            K->complete(m, p->token, KNIT_MOD_ERR_IO, NULL, 0);
        else
            K->complete(m, p->token, status, small ? result : NULL, small ? e->bytes : 0);
    }
    entry_free(m, e);
}

/* An agent: the node's partial of segment seg, up.  A collective of one
 * segment has its members' vectors in the slots already; a larger one's
 * are read from their memory now. */
static int32_t agent_up(knit_mod_ctx_t *m, entry_t *e, uint32_t seg)
{
    uint64_t len = seg_len(e->bytes, seg);
    int32_t st = e->status;
    for (int32_t i = 0; e->nseg > 1 && st == KNIT_MOD_OK && i < e->expect; i++) {
        if (!gives(e, i))
            continue;
        char *slot = e->data + (e->kind == KN_COLL_MOD_BCAST ? 0 : (size_t)i * e->slen);
        st = K->read_rank(m, e->mem[i].rank, slot, e->mem[i].src + (uint64_t)seg * KN_COLL_MOD_SEG, len);
        if (e->kind == KN_COLL_MOD_BCAST)
            e->has_root = 1;
    }
    const char *part = NULL;
    if (st == KNIT_MOD_OK)
        st = combine(e, len, &part);
    if (st != KNIT_MOD_OK && e->status == KNIT_MOD_OK)
        e->status = st; /* the others learn it from the switch */
    return send_up(m, e, seg, st, part, len);
}

/* An agent: segments up while the window has room (one whose message
 * could not be sent counts as back, failed); completes the members and
 * frees the entry once every segment is back. */
static void agent_push(knit_mod_ctx_t *m, entry_t *e, const char *last)
{
    while (e->next < e->nseg && e->next - e->ndown < WINDOW) {
        if (agent_up(m, e, e->next++) != KNIT_MOD_OK) {
            e->ndown++;
            if (e->status == KNIT_MOD_OK)
                e->status = KNIT_MOD_ERR_IO;
        }
    }
    if (e->ndown == e->nseg)
        complete_all(m, e, e->status, last);
}

/* An agent: segment seg of the result came down (data: its bytes, or
 * NULL where this node gets none). */
static void agent_down(knit_mod_ctx_t *m, entry_t *e, uint32_t seg, int32_t status, const char *data)
{
    if (status != KNIT_MOD_OK && e->status == KNIT_MOD_OK)
        e->status = status;
    uint64_t len = seg_len(e->bytes, seg);
    if (e->status == KNIT_MOD_OK && data && e->bytes > KN_COLL_MOD_INLINE) {
        for (int32_t i = 0; i < e->expect; i++) {
            if (!gets_result(e, i))
                continue;
            int32_t st = K->write_rank(m, e->mem[i].rank, e->mem[i].addr + (uint64_t)seg * KN_COLL_MOD_SEG, data,
                                       len);
            if (st != KNIT_MOD_OK) {
                e->status = st;
                break;
            }
        }
    } else if (e->status == KNIT_MOD_OK && !data && e->bytes) {
        for (int32_t i = 0; i < e->expect; i++)
            if (gets_result(e, i))
                e->status = KNIT_MOD_ERR_IO; /* a result that did not come */
    }
    e->ndown++;
    agent_push(m, e, data);
}

/* Whether member child c gets the data of a segment coming down: all of
 * them but for a reduce, whose result goes towards the root's node only. */
static int down_to(knit_mod_ctx_t *m, const entry_t *e, int32_t c)
{
    return e->kind != KN_COLL_MOD_REDUCE || covers(m, c, NULL, 0, e->root_node);
}

/* A switch: segment e's result (or the failure) down to each member
 * child, as a message of a header (the wire) and the data, so that the
 * switches below route it with their header handler (coll_header). */
static void send_down(knit_mod_ctx_t *m, entry_t *e, int32_t status, const char *res)
{
    wire_t d = {.kind = DOWN, .ckind = e->kind, .comm = e->comm, .first = e->first, .seq = e->seq,
                .bytes = e->bytes, .seg = e->seg, .nseg = e->nseg, .root_node = e->root_node, .status = status};
    for (int32_t i = 0; i < e->expect; i++) {
        int32_t c = e->child[i];
        d.dlen = status == KNIT_MOD_OK && res && down_to(m, e, c) ? seg_len(e->bytes, e->seg) : 0;
        K->send_hdr(m, c, &d, sizeof(d), res, d.dlen);
    }
    entry_free(m, e);
}

/* A header handler (module ABI 2): a segment coming down reaches a switch
 * below the root.  Its header says which collective and segment; the
 * switch passes the message on to its member children without taking it
 * (the daemon streams the data on as it arrives: nothing is copied or
 * combined here, and nothing waits for the whole segment), those of a
 * reduce without the root's node getting the header alone, and forgets
 * the segment.  Agents take what comes down (on_message). */
/* A mask's length here: a bit per node of the job (0 where none is sent). */
static uint32_t mask_len_of(knit_mod_ctx_t *m)
{
    return ((uint32_t)K->geometry(m)->nnodes + 7) / 8;
}

/* Whether a message's header fits what follows it (rest: its bytes after
 * the header): mask and segment.  No: a daemon of this job never sends it. */
static int wire_ok(knit_mod_ctx_t *m, const wire_t *w, uint64_t rest)
{
    return (!w->mask_len || w->mask_len == mask_len_of(m)) && w->bytes <= KN_COLL_MOD_MAX_BYTES &&
           w->nseg == nseg_of(w->bytes) && w->seg < w->nseg && rest >= w->mask_len && rest - w->mask_len == w->dlen &&
           (!w->dlen || w->dlen == seg_len(w->bytes, w->seg));
}

static int32_t coll_header(knit_mod_ctx_t *m, int32_t from, const void *hdr, uint64_t hlen, uint64_t plen,
                           knit_mod_route_t *route)
{
    const state_t *s = st_of(m);
    wire_t w;
    if (s->self.level == 0 || hlen != sizeof(w)) {
        route->take = 1;
        return KNIT_MOD_OK;
    }
    memcpy(&w, hdr, sizeof(w));
    if (w.kind != DOWN || from != s->self.parent || w.mask_len || !wire_ok(m, &w, plen))
        return KNIT_MOD_ERR_INVAL; /* dropped */
    entry_t *e = entry_find(m, w.comm, w.first, w.seq, w.seg);
    if (!e)
        return KNIT_MOD_ERR_STATE;
    if (e->expect > KNIT_MOD_ROUTE_MAX) { /* more children than a route holds: on_message passes it down */
        route->take = 1;
        return KNIT_MOD_OK;
    }
    wire_t bare = w;
    bare.dlen = 0;
    for (int32_t i = 0; i < e->expect; i++) {
        int32_t c = e->child[i];
        if (!w.dlen || down_to(m, e, c))
            route->dest[route->ndest++] = c;
        else
            K->send_hdr(m, c, &bare, sizeof(bare), NULL, 0);
    }
    entry_free(m, e);
    return KNIT_MOD_OK;
}

static int args_ok(knit_mod_ctx_t *m, const knit_mod_request_t *req, const kn_coll_mod_args_t *a,
                   const uint8_t *mask)
{
    const knit_mod_geometry_t *g = K->geometry(m);
    if (a->version != KN_COLL_MOD_VERSION || a->kind < KN_COLL_MOD_BARRIER || a->kind > KN_COLL_MOD_ALLREDUCE ||
        a->bytes > KN_COLL_MOD_MAX_BYTES || (a->kind == KN_COLL_MOD_BARRIER && a->bytes) || a->nlocal <= 0 ||
        a->nlocal > MAX_LOCAL || a->lrank < 0 || a->lrank >= a->nlocal ||
        (a->mask_len && a->mask_len != mask_len_of(m)) || req->len < sizeof(*a) + a->mask_len ||
        !kn_coll_mod_member(mask, a->mask_len, g->self))
        return 0;
    int rooted = a->kind == KN_COLL_MOD_BCAST || a->kind == KN_COLL_MOD_REDUCE;
    if (rooted && (a->root_node < 0 || a->root_node >= g->nnodes || !kn_coll_mod_member(mask, a->mask_len, a->root_node) ||
                   a->root_lrank < -1 || a->root_lrank >= a->nlocal || (a->root_lrank >= 0) != (a->root_node == g->self)))
        return 0;
    int sends = a->kind != KN_COLL_MOD_BCAST || a->lrank == a->root_lrank;
    /* up to a segment in the request; a larger vector stays in the rank */
    uint64_t inreq = sends && a->bytes <= KN_COLL_MOD_SEG ? a->bytes : 0;
    return req->len == sizeof(*a) + a->mask_len + inreq;
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
    uint32_t nseg = nseg_of(a.bytes);
    wire_t w = {.ckind = a.kind, .comm = a.comm, .first = a.first, .dtype = a.dtype, .redop = a.redop,
                .seq = a.seq, .bytes = a.bytes, .nseg = nseg, .mask_len = a.mask_len, .root_node = a.root_node};
    entry_t *e = entry_find(m, a.comm, a.first, a.seq, 0);
    if (!e && !(e = entry_new(m, &w, a.nlocal, seg_len(a.bytes, 0), mask))) {
        K->complete(m, req->token, KNIT_MOD_ERR_AGAIN, NULL, 0);
        return;
    }
    if (e->kind != a.kind || e->expect != a.nlocal || e->bytes != a.bytes || e->got[a.lrank] ||
        e->mask_len != a.mask_len || (a.mask_len && memcmp(e->mask, mask, a.mask_len)) || e->dtype != a.dtype ||
        e->redop != a.redop || e->root_node != a.root_node || (e->have && e->root_lrank != a.root_lrank)) {
        K->complete(m, req->token, KNIT_MOD_ERR_STATE, NULL, 0); /* the members disagree */
        return;
    }
    e->root_lrank = a.root_lrank;
    e->mem[a.lrank] = (member_t){.token = req->token, .src = a.src, .addr = a.result, .rank = req->rank};
    e->got[a.lrank] = 1;
    if (nseg == 1)
        keep(e, a.lrank, mask + a.mask_len, req->len - sizeof(a) - a.mask_len);
    if (++e->have < e->expect)
        return;
    /* the node's last member: its partial goes up, a window of segments */
    agent_push(m, e, NULL);
}

/* A child's part of a segment at a switch.  The first one makes the
 * entry: which of this switch's children have members (their nodes meet
 * the mask). */
static void switch_up(knit_mod_ctx_t *m, int32_t from, const wire_t *w, const uint8_t *mask, const char *data)
{
    const knit_mod_place_t *me = &st_of(m)->self;
    entry_t *e = entry_find(m, w->comm, w->first, w->seq, w->seg);
    if (!e) {
        int32_t n = 0;
        for (int32_t i = 0; i < me->nchildren; i++)
            n += covers(m, me->first_child + i * me->child_step, mask, w->mask_len, -1);
        e = n ? entry_new(m, w, n, seg_len(w->bytes, w->seg), mask) : NULL;
        if (!e) {
            K->log(m, KNIT_MOD_LOG_ERROR, "collective %llu of communicator %u: no room (%d segments in flight)",
                   (unsigned long long)w->seq, w->comm, SLOTS);
            return;
        }
        for (int32_t i = 0, k = 0; i < me->nchildren; i++) {
            int32_t c = me->first_child + i * me->child_step;
            if (covers(m, c, mask, w->mask_len, -1))
                e->child[k++] = c;
        }
    }
    int32_t slot = -1;
    for (int32_t i = 0; i < e->expect && slot < 0; i++)
        if (e->child[i] == from)
            slot = i;
    if (slot < 0 || e->got[slot] || w->bytes != e->bytes || w->nseg != e->nseg || w->ckind != e->kind ||
        w->mask_len != e->mask_len || (w->mask_len && memcmp(mask, e->mask, w->mask_len))) {
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
    const char *res = NULL;
    int32_t st = e->status != KNIT_MOD_OK ? e->status : combine(e, e->slen, &res);
    if (me->parent != KNIT_MOD_NONE) { /* the result comes down later */
        st = send_up(m, e, e->seg, st, res, e->slen);
        if (st != KNIT_MOD_OK)
            send_down(m, e, st, NULL);
        return;
    }
    if (st == KNIT_MOD_OK && e->slen && !res)
        st = KNIT_MOD_ERR_STATE; /* a broadcast whose root's node sent nothing */
    send_down(m, e, st, res);
}

static void coll_message(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len)
{
    wire_t w;
    if (len < sizeof(w))
        return;
    memcpy(&w, msg, sizeof(w));
    if (!wire_ok(m, &w, len - sizeof(w)))
        return;
    const uint8_t *mask = (const uint8_t *)msg + sizeof(w);
    const char *data = (const char *)mask + w.mask_len;
    int sw = st_of(m)->self.level > 0;
    if (w.kind == UP && sw) {
        switch_up(m, from, &w, mask, data);
        return;
    }
    if (w.kind != DOWN || from != st_of(m)->self.parent)
        return;
    entry_t *e = entry_find(m, w.comm, w.first, w.seq, sw ? w.seg : 0);
    if (!e)
        return;
    if (sw)
        send_down(m, e, w.status, w.dlen ? data : NULL);
    else
        agent_down(m, e, w.seg, w.status, w.dlen ? data : NULL);
}

static const knit_mod_descriptor_t desc = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(desc),
    .name = "coll",
    .init = coll_init,
    .fini = coll_fini,
    .on_request = coll_request,
    .on_message = coll_message,
    .on_header = coll_header,
};
KNIT_MODULE(desc)
