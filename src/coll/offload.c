/*
 * Offloaded collectives (docs/collectives.md, "In the network"): barrier,
 * broadcast, reduce and allreduce handed to the node's agent, combined
 * there and in the switch by the built-in module modules/builtin/coll.c,
 * which the library carries (scripts/embed.sh) and loads into every
 * daemon at knit_init where KNIT_COLL_OFFLOAD=on.  A rank hands over its
 * vector and picks up the result: one module request.  The agent writes
 * the result into the rank's buffer and completes the request itself, so
 * a nonblocking one completes while the rank computes; its schedule
 * (kn_sched_t with `off`) only looks at the completion queue.
 *
 * Not offloaded (the host algorithms run): user-defined ops, REPLACE /
 * NO_OP, vectors above KN_COLL_MOD_MAX_BYTES (4 GiB), and every call once the
 * module could not be loaded or faulted (a warning says why).  A fault
 * fails every open request of the module on every daemon, so every
 * member learns it and redoes that collective on the hosts: a blocking
 * one at once, a nonblocking one under the collective number it took at
 * its start (the members may find out in different orders).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "offload/offload.h"
#include "util/config.h"
#include "util/log.h"

extern const unsigned char kn_builtin_coll[];
extern const size_t kn_builtin_coll_len;

static struct {
    knit_ctx_t *ctx;
    knit_module_t *mod; /* loaded at every daemon */
    int failed;         /* the load failed, or the module faulted: host algorithms */
} O;

/* KNIT_COLL_OFFLOAD's values */
enum { OFF_AUTO = 0, OFF_ON = 1, OFF_OFF = 2 };

/* Collective over the job (every rank, at knit_init): on, or auto with a
 * measured table where the offloaded forms won somewhere, loads the
 * module. */
knit_status_t kn_coll_offload_start(knit_ctx_t *ctx)
{
    if (kn_cfg.coll_offload == OFF_AUTO) {
        char err[600];
        if (kn_coll_xover_load(kn_cfg.coll_offload_table, err, sizeof(err)) != KNIT_OK && knit_rank(ctx) == 0)
            kn_warn("%s: KNIT_COLL_OFFLOAD=auto uses the hosts' algorithms", err);
        if (!kn_coll_xover_any())
            return KNIT_OK;
    } else if (kn_cfg.coll_offload != OFF_ON) {
        return KNIT_OK;
    }
    O.ctx = ctx;
    knit_status_t st = kn_off_load_builtin(ctx, "coll", kn_builtin_coll, kn_builtin_coll_len, &O.mod);
    if (st != KNIT_OK) {
        O.failed = 1;
        if (knit_rank(ctx) == 0)
            kn_warn("KNIT_COLL_OFFLOAD=%s, but the collectives module could not be loaded (%s%s%s): the hosts' "
                    "algorithms do the collectives", kn_cfg.coll_offload == OFF_ON ? "on" : "auto",
                    knit_strerror(st), *knit_module_last_error(ctx) ? ": " : "", knit_module_last_error(ctx));
    }
    return KNIT_OK; /* the job goes on without it */
}

/* A nonblocking offloaded collective: its request, and the call, for the
 * hosts to redo after a fault. */
struct kn_coll_off {
    knit_comm_t *comm;
    knit_mreq_t *mreq;
    char *args;          /* the request: header, vector (read by the agent) */
    int kind, root;
    const void *sb;
    void *rb;
    size_t count, inl;   /* inl: result bytes in the completion */
    knit_dtype_t dtype;
    knit_op_t op;
};

static int usable(const knit_comm_t *c, int kind, size_t bytes, knit_dtype_t t, const knit_op_t *op)
{
    if (!O.mod || O.failed || knit_nnodes(O.ctx) > KN_COLL_MOD_MAX_NODES)
        return 0;
    if (kn_cfg.coll_offload == OFF_AUTO && !kn_coll_xover_offloads(kind, c->nnodes, bytes))
        return 0; /* the hosts measured faster there */
    if (kind == KN_COLL_MOD_BARRIER)
        return 1;
    if (!bytes || bytes > KN_COLL_MOD_MAX_BYTES)
        return 0;
    return !op || (op->kind != KNIT_OP_USER && kn_coll_reduce_fn(op->kind, t) != NULL);
}

/* The member's index on its node of comm rank cr, or -1. */
static int local_of(const knit_comm_t *c, int cr)
{
    for (int i = 0; i < c->local.size; i++)
        if (c->local_cr[i] == cr)
            return i;
    return -1;
}

/* The communicator's nodes as the module takes them (its mask; none for
 * one that spans every node), made at its first offloaded collective:
 * 0, or -1 without memory. */
static int node_mask(knit_comm_t *c)
{
    int nn = knit_nnodes(O.ctx);
    if (c->nnodes == nn || c->off_mask)
        return 0;
    uint32_t len = (uint32_t)(nn + 7) / 8;
    if (!(c->off_mask = calloc(len, 1)))
        return -1;
    for (int i = 0; i < c->g.size; i++) {
        int n = kn_coll_node_of(c->coll, c->ranks[i]);
        c->off_mask[n / 8] |= (uint8_t)(1u << (n % 8));
    }
    c->off_mask_len = len;
    return 0;
}

/* The request of one collective: header, the communicator's nodes, then
 * this member's vector (*len bytes in all, malloc'ed where it does not fit
 * in small); *inl: the result bytes that come back in the completion. */
static char *build(knit_comm_t *c, int kind, const void *sb, void *rb, size_t count, knit_dtype_t t,
                   const knit_op_t *op, int root, char *small, size_t small_len, size_t *len, size_t *inl)
{
    int me = c->g.rank, rooted = kind == KN_COLL_MOD_BCAST || kind == KN_COLL_MOD_REDUCE;
    const void *vec = sb == KNIT_IN_PLACE || kind == KN_COLL_MOD_BCAST ? rb : sb;
    if (node_mask(c) < 0)
        return NULL;
    int root_node = rooted ? kn_coll_node_of(c->coll, c->ranks[root]) : -1;
    size_t bytes = kind == KN_COLL_MOD_BARRIER ? 0 : count * knit_dtype_size(t);
    kn_coll_mod_args_t a = {.version = KN_COLL_MOD_VERSION,
                            .kind = (uint32_t)kind,
                            .comm = c->cid,
                            .first = c->ranks[0],
                            .dtype = (uint32_t)t,
                            .redop = op ? (uint32_t)op->kind : 0,
                            .seq = ++c->off_seq,
                            .bytes = bytes,
                            .result = (uint64_t)(uintptr_t)rb,
                            .src = (uint64_t)(uintptr_t)vec,
                            .nlocal = c->local.size,
                            .lrank = c->local.rank,
                            .root_node = root_node,
                            .root_lrank = rooted && c->node_idx[root] == c->node_idx[me] ? local_of(c, root) : -1,
                            .mask_len = c->off_mask_len};
    if (kn_cfg.coll_offload_fault && c->off_seq == (uint64_t)kn_cfg.coll_offload_fault && me == 0)
        a.flags |= KN_COLL_MOD_F_FAULT; /* tests: the module faults here */
    size_t vlen = (kind == KN_COLL_MOD_BCAST && me != root) || bytes > KN_COLL_MOD_SEG ? 0 : bytes;
    int gets = kind == KN_COLL_MOD_ALLREDUCE || (kind == KN_COLL_MOD_REDUCE && me == root) ||
               (kind == KN_COLL_MOD_BCAST && me != root);
    *inl = gets && bytes <= KN_COLL_MOD_INLINE ? bytes : 0;
    *len = sizeof(a) + a.mask_len + vlen;
    char *args = *len <= small_len ? small : malloc(*len);
    if (args) {
        memcpy(args, &a, sizeof(a));
        if (a.mask_len)
            memcpy(args + sizeof(a), c->off_mask, a.mask_len);
        if (vlen)
            memcpy(args + sizeof(a) + a.mask_len, vec, vlen);
    }
    return args;
}

/* The module faulted (every daemon failed its open requests, a fault is
 * told to all): the hosts' algorithms from now on, one warning. */
static void note_fault(const knit_comm_t *c)
{
    if (!O.failed && c->g.rank == 0)
        kn_warn("the collectives module faulted (%s): the hosts' algorithms do the collectives from now on",
                knit_module_last_error(O.ctx));
    O.failed = 1;
}

/* A finished request's status, with its result (got of the inl bytes
 * expected in the completion, at res) put in rb. */
static knit_status_t take_result(knit_status_t st, const char *res, size_t got, size_t inl, void *rb)
{
    if (st == KNIT_OK && got != inl)
        return KNIT_ERR_PROTO;
    if (st == KNIT_OK && inl)
        memcpy(rb, res, inl);
    return st;
}

static knit_status_t start_nb(knit_comm_t *c, int kind, const void *sb, void *rb, size_t count, knit_dtype_t t,
                              const knit_op_t *op, int root, knit_coll_request_t **req)
{
    kn_sched_t *s = kn_sched_new(c, t, op); /* takes the collective number the hosts' form would */
    kn_coll_off_t *o = s ? calloc(1, sizeof(*o)) : NULL;
    if (!o) {
        kn_sched_free(s);
        return KNIT_ERR_NOMEM;
    }
    s->off = o;
    *o = (kn_coll_off_t){.comm = c, .kind = kind, .root = root, .sb = sb, .rb = rb, .count = count, .dtype = t};
    if (op)
        o->op = *op;
    size_t len;
    o->args = build(c, kind, sb, rb, count, t, op, root, NULL, 0, &len, &o->inl);
    knit_status_t st = o->args ? knit_module_request(O.mod, o->args, len, &o->mreq) : KNIT_ERR_NOMEM;
    if (st == KNIT_OK)
        st = kn_sched_start(s);
    if (st != KNIT_OK) {
        kn_sched_free(s);
        return st;
    }
    *req = s;
    return KNIT_OK;
}

knit_status_t kn_coll_offload(knit_comm_t *c, int kind, const void *sb, void *rb, size_t count, knit_dtype_t t,
                              const knit_op_t *op, int root, knit_coll_request_t **req)
{
    size_t bytes = count * knit_dtype_size(t);
    if (!usable(c, kind, bytes, t, op))
        return KNIT_ERR_NOT_SUPPORTED;
    if (req)
        return start_nb(c, kind, sb, rb, count, t, op, root, req);
    char small[512], res[KN_COLL_MOD_INLINE];
    size_t len, inl, got = 0;
    char *args = build(c, kind, sb, rb, count, t, op, root, small, sizeof(small), &len, &inl);
    if (!args)
        return KNIT_ERR_NOMEM;
    knit_mreq_t *r;
    knit_status_t st = knit_module_request(O.mod, args, len, &r);
    if (st == KNIT_OK)
        st = knit_request_wait(&r, res, inl, &got);
    if (args != small)
        free(args);
    st = take_result(st, res, got, inl, rb);
    if (st == KNIT_ERR_MODULE_FAULT) { /* every member gets here: all redo it on the hosts */
        note_fault(c);
        return KNIT_ERR_NOT_SUPPORTED;
    }
    return st;
}

/* The hosts' form of s's collective, under s's collective number, in s
 * (which keeps its place on the active list). */
static void fall_back(kn_sched_t *s)
{
    kn_coll_off_t *o = s->off;
    knit_comm_t *c = o->comm;
    uint32_t seq = c->seq;
    c->seq = s->tag >> KN_COLL_SUB_BITS;
    knit_coll_request_t *h = NULL;
    knit_status_t st;
    switch (o->kind) {
    case KN_COLL_MOD_BARRIER:
        st = knit_ibarrier(c, &h);
        break;
    case KN_COLL_MOD_BCAST:
        st = knit_ibcast(c, o->rb, o->count, o->dtype, o->root, &h);
        break;
    case KN_COLL_MOD_REDUCE:
        st = knit_ireduce(c, o->sb, o->rb, o->count, o->dtype, &o->op, o->root, &h);
        break;
    default:
        st = knit_iallreduce(c, o->sb, o->rb, o->count, o->dtype, &o->op, &h);
        break;
    }
    c->seq = seq;
    if (st != KNIT_OK) {
        s->result = st;
        s->done = 1;
        return;
    }
    kn_sched_adopt(s, h); /* frees o */
}

int kn_coll_offload_poll(kn_sched_t *s)
{
    kn_coll_off_t *o = s->off;
    char res[KN_COLL_MOD_INLINE];
    size_t got = 0;
    int done;
    knit_status_t st = kn_off_request_try(&o->mreq, &done, res, o->inl, &got);
    if (!done)
        return 0;
    if (st == KNIT_ERR_MODULE_FAULT) {
        note_fault(o->comm);
        fall_back(s);
        return 1;
    }
    s->result = take_result(st, res, got, o->inl, o->rb);
    s->done = 1;
    return 1;
}

void kn_coll_offload_free(kn_coll_off_t *o)
{
    free(o->args);
    free(o);
}
