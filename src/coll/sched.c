/*
 * The schedule engine and the collective engine's state.
 *
 * State of a schedule: cur is the round in progress; reqs are its sends
 * and receives not yet seen complete.  advance() frees what completed and,
 * when nothing of the round is left, starts the next one (its local steps
 * first, then its sends and receives), as long as rounds complete at once.
 * copying is the round's large copy still under way (copy_may_slice).
 * Every active schedule is advanced by the hook the engine registers with
 * the p2p engine, i.e. inside every progress call of the process.
 * Finished schedules keep their arrays in a small cache, so that a small
 * collective allocates nothing but its scratch; scratch buffers themselves
 * are kept too (a few, up to SCRATCH_KEEP bytes in all), because a large
 * buffer from malloc is a fresh mapping whose every page faults on first
 * touch, which cost more than the copies of a 1 MiB collective.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "util/compiler.h"
#include "util/log.h"

#define SCHED_CACHE 8
#define SCRATCH_SLOTS 8
#define SCRATCH_KEEP ((size_t)64 << 20)

/* A scratch buffer; its size is stored just before the user area. */
typedef struct scratch_hdr {
    size_t size;
    size_t pad; /* keeps the user area 16-byte aligned */
} scratch_hdr_t;

struct kn_coll {
    knit_ctx_t *ctx;
    kn_p2p_t *p2p;
    int rank, size;
    int *node_of;
    kn_list_t active;
    knit_comm_t *world;
    char jobid[64];
    kn_sched_t *cache[SCHED_CACHE];
    int ncache;
    scratch_hdr_t *scratch[SCRATCH_SLOTS]; /* kept scratch buffers */
    size_t scratch_bytes;
};

/* The smallest kept buffer that fits, or a new one. */
static void *scratch_get(kn_coll_t *c, size_t bytes)
{
    int best = -1;
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        if (c->scratch[i] && c->scratch[i]->size >= bytes &&
            (best < 0 || c->scratch[i]->size < c->scratch[best]->size))
            best = i;
    scratch_hdr_t *h;
    if (best >= 0) {
        h = c->scratch[best];
        c->scratch[best] = NULL;
        c->scratch_bytes -= h->size;
    } else {
        h = malloc(sizeof(*h) + bytes);
        if (!h)
            return NULL;
        h->size = bytes;
    }
    return h + 1;
}

/* Keep a buffer for the next collective, evicting smaller ones to make
 * room; free it when it cannot be kept. */
static void scratch_put(kn_coll_t *c, void *p)
{
    scratch_hdr_t *h = (scratch_hdr_t *)p - 1;
    if (h->size <= SCRATCH_KEEP) {
        for (int i = 0; i < SCRATCH_SLOTS; i++) {
            if (!c->scratch[i] && c->scratch_bytes + h->size <= SCRATCH_KEEP) {
                c->scratch[i] = h;
                c->scratch_bytes += h->size;
                return;
            }
        }
        int small = -1;
        for (int i = 0; i < SCRATCH_SLOTS; i++)
            if (c->scratch[i] && c->scratch[i]->size < h->size &&
                (small < 0 || c->scratch[i]->size < c->scratch[small]->size))
                small = i;
        if (small >= 0 && c->scratch_bytes - c->scratch[small]->size + h->size <= SCRATCH_KEEP) {
            c->scratch_bytes -= c->scratch[small]->size;
            free(c->scratch[small]);
            c->scratch[small] = h;
            c->scratch_bytes += h->size;
            return;
        }
    }
    free(h);
}

/* One context per process (knit_init refuses a second): the communicator
 * calls find the engine through it. */
static kn_coll_t *the_coll;

kn_coll_t *kn_coll_of(knit_ctx_t *ctx)
{
    return ctx && the_coll && the_coll->ctx == ctx ? the_coll : NULL;
}

kn_p2p_t *kn_coll_p2p(const kn_coll_t *c) { return c->p2p; }
int kn_coll_job_rank(const kn_coll_t *c) { return c->rank; }
int kn_coll_job_size(const kn_coll_t *c) { return c->size; }
int kn_coll_node_of(const kn_coll_t *c, int r) { return c->node_of[r]; }
const char *kn_coll_jobid(const kn_coll_t *c) { return c->jobid; }

/* ------------------------------------------------------------ building */

static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 1;
    int n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (!p)
        return 0;
    *arr = p;
    *cap = n;
    return 1;
}

kn_sched_t *kn_sched_new(knit_comm_t *comm, knit_dtype_t dtype, const knit_op_t *op)
{
    kn_coll_t *c = comm->coll;
    kn_sched_t *s = c->ncache ? c->cache[--c->ncache] : calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->coll = c;
    s->cid = comm->cid;
    s->tag = (comm->seq++ & KN_COLL_SEQ_MASK) << KN_COLL_SUB_BITS;
    s->nsteps = s->nrounds = s->cur = s->nreqs = s->nallocs = 0;
    s->dtype = dtype;
    if (op) {
        s->op = *op;
        s->fn = op->kind == KNIT_OP_USER ? NULL : kn_coll_reduce_fn(op->kind, dtype);
    } else {
        memset(&s->op, 0, sizeof(s->op));
        s->fn = NULL;
    }
    s->result = KNIT_OK;
    s->done = s->active = s->nomem = 0;
    s->send_flags = 0;
    s->copying = NULL;
    s->off = NULL;
    kn_list_init(&s->link);
    return s;
}

void *kn_sched_alloc(kn_sched_t *s, size_t bytes)
{
    if (!grow((void **)&s->allocs, &s->cap_allocs, s->nallocs + 1, sizeof(void *))) {
        s->nomem = 1;
        return NULL;
    }
    void *p = scratch_get(s->coll, bytes ? bytes : 1);
    if (!p) {
        s->nomem = 1;
        return NULL;
    }
    s->allocs[s->nallocs++] = p;
    return p;
}

static kn_step_t *add(kn_sched_t *s, int kind)
{
    if (!grow((void **)&s->steps, &s->cap_steps, s->nsteps + 1, sizeof(kn_step_t))) {
        s->nomem = 1;
        return NULL;
    }
    kn_step_t *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof(*st));
    st->kind = (uint8_t)kind;
    return st;
}

void kn_sched_send(kn_sched_t *s, const kn_grp_t *g, int peer, const void *buf, size_t len, int sub)
{
    kn_step_t *st = add(s, KN_STEP_SEND);
    if (!st)
        return;
    st->peer = g->job[peer];
    st->src = buf;
    st->len = len;
    st->sub = (uint8_t)sub;
}

void kn_sched_recv(kn_sched_t *s, const kn_grp_t *g, int peer, void *buf, size_t len, int sub)
{
    kn_step_t *st = add(s, KN_STEP_RECV);
    if (!st)
        return;
    st->peer = g->job[peer];
    st->dst = buf;
    st->len = len;
    st->sub = (uint8_t)sub;
}

void kn_sched_copy(kn_sched_t *s, const void *src, void *dst, size_t len)
{
    if (!len || src == dst)
        return;
    kn_step_t *st = add(s, KN_STEP_COPY);
    if (!st)
        return;
    st->src = src;
    st->dst = dst;
    st->len = len;
}

static void add_reduce(kn_sched_t *s, int kind, const void *src, void *dst, size_t count)
{
    if (!count)
        return;
    kn_step_t *st = add(s, kind);
    if (!st)
        return;
    st->src = src;
    st->dst = dst;
    st->len = count;
}

void kn_sched_reduce(kn_sched_t *s, const void *src, void *dst, size_t count)
{
    add_reduce(s, KN_STEP_REDUCE, src, dst, count);
}

void kn_sched_reduce_r(kn_sched_t *s, void *src, void *dst, size_t count)
{
    add_reduce(s, KN_STEP_REDUCE_R, src, dst, count);
}

void kn_sched_round(kn_sched_t *s)
{
    int start = s->nrounds ? s->round_end[s->nrounds - 1] : 0;
    if (s->nsteps == start)
        return;
    if (!grow((void **)&s->round_end, &s->cap_rounds, s->nrounds + 1, sizeof(int))) {
        s->nomem = 1;
        return;
    }
    s->round_end[s->nrounds++] = s->nsteps;
}

int kn_coll_commutative(const kn_sched_t *s)
{
    return s->op.kind != KNIT_OP_USER || s->op.commutative;
}

size_t kn_coll_esize(const kn_sched_t *s)
{
    return knit_dtype_size(s->dtype);
}

/* ------------------------------------------------------------ running */

static void run_reduce(kn_sched_t *s, const kn_step_t *st)
{
    if (s->fn) { /* predefined ops are commutative: either order */
        s->fn(st->src, st->dst, st->len);
        return;
    }
    if (st->kind == KN_STEP_REDUCE) {
        s->op.fn(st->src, st->dst, st->len, s->dtype, s->op.arg);
    } else {
        /* dst = dst op src, through src (scratch) */
        s->op.fn(st->dst, (void *)st->src, st->len, s->dtype, s->op.arg);
        memcpy(st->dst, st->src, st->len * knit_dtype_size(s->dtype));
    }
}

/* A large local copy whose round only receives after it (nothing later in
 * the round reads memory) is done in slices, one per progress call, after
 * the round's transfers are posted: between slices the transports move
 * data, where one memmove would hold back every transfer the round just
 * started, on both sides (2 ranks on 2 nodes, 1 MiB: a whole alltoall or
 * allgather waited for the 1 MiB copy of the rank's own block). */
#define COPY_SLICE (64 * 1024)

static int copy_may_slice(const kn_sched_t *s, int i, int e)
{
    const kn_step_t *st = &s->steps[i];
    const char *src = st->src, *dst = st->dst;
    if (st->len < 4 * COPY_SLICE || s->copying || (dst < src + st->len && src < dst + st->len))
        return 0; /* small, or overlapping: slices front to back could read what they wrote */
    for (int j = i + 1; j < e; j++)
        if (s->steps[j].kind != KN_STEP_RECV)
            return 0;
    return 1;
}

/* The next slice of the round's large copy; 1 while some is left. */
static int copy_slice(kn_sched_t *s)
{
    const kn_step_t *st = s->copying;
    size_t n = KN_MIN(COPY_SLICE, st->len - s->copied);
    memmove((char *)st->dst + s->copied, (const char *)st->src + s->copied, n);
    s->copied += n;
    if (s->copied < st->len)
        return 1;
    s->copying = NULL;
    return 0;
}

static void start_round(kn_sched_t *s)
{
    int b = s->cur ? s->round_end[s->cur - 1] : 0, e = s->round_end[s->cur];
    kn_p2p_t *p2p = s->coll->p2p;
    if (!grow((void **)&s->reqs, &s->cap_reqs, e - b, sizeof(knit_request_t *))) {
        kn_error("out of memory running a collective");
        s->result = KNIT_ERR_NOMEM;
        return;
    }
    for (int i = b; i < e; i++) {
        const kn_step_t *st = &s->steps[i];
        knit_status_t rc = KNIT_OK;
        knit_request_t *r = NULL;
        switch (st->kind) {
        case KN_STEP_SEND:
            rc = kn_p2p_isend(p2p, st->src, st->len, st->peer, (int)(s->tag | st->sub), s->cid, s->send_flags,
                              &r);
            break;
        case KN_STEP_RECV:
            rc = kn_p2p_irecv(p2p, st->dst, st->len, st->peer, (int)(s->tag | st->sub), s->cid, &r);
            break;
        case KN_STEP_COPY:
            if (copy_may_slice(s, i, e)) {
                s->copying = st;
                s->copied = 0;
            } else {
                memmove(st->dst, st->src, st->len);
            }
            break;
        default:
            run_reduce(s, st);
            break;
        }
        if (rc != KNIT_OK && s->result == KNIT_OK)
            s->result = rc;
        if (r)
            s->reqs[s->nreqs++] = r;
    }
}

/* Returns the events seen (rounds that moved on). */
static int advance(kn_sched_t *s)
{
    if (s->off)
        return kn_coll_offload_poll(s);
    int events = 0;
    for (;;) {
        if (s->copying && copy_slice(s))
            return events + 1;
        for (int i = 0; i < s->nreqs;) {
            if (!kn_p2p_request_done(s->reqs[i])) {
                i++;
                continue;
            }
            int done;
            knit_status_t rc = knit_test(&s->reqs[i], &done, NULL);
            if (rc != KNIT_OK && s->result == KNIT_OK)
                s->result = rc;
            s->reqs[i] = s->reqs[--s->nreqs];
        }
        if (s->nreqs)
            return events;
        if (s->cur == s->nrounds || s->result != KNIT_OK) {
            s->done = 1;
            return events + 1;
        }
        start_round(s);
        s->cur++;
        events++;
    }
}

static int coll_progress(void *arg)
{
    kn_coll_t *c = arg;
    int events = 0;
    kn_list_t *pos, *tmp;
    kn_list_for_each_safe(pos, tmp, &c->active) {
        kn_sched_t *s = kn_list_entry(pos, kn_sched_t, link);
        events += advance(s);
        if (s->done) {
            kn_list_del(&s->link);
            s->active = 0;
        }
    }
    return events;
}

void kn_sched_adopt(kn_sched_t *s, kn_sched_t *h)
{
    if (h->active) /* at the list's tail: after any walk's next */
        kn_list_del(&h->link);
    kn_sched_t mine = *s;
    *s = *h;
    *h = mine; /* h now holds what s owned: freed below */
    s->link = h->link;
    s->active = h->active;
    h->active = 0;
    kn_sched_free(h);
}

knit_status_t kn_sched_start(kn_sched_t *s)
{
    if (s->nomem) {
        kn_error("out of memory building a collective");
        return KNIT_ERR_NOMEM;
    }
    kn_sched_round(s);
    advance(s);
    if (!s->done) {
        kn_list_push_back(&s->coll->active, &s->link);
        s->active = 1;
    }
    return KNIT_OK;
}

static int sched_done(void *arg)
{
    return ((kn_sched_t *)arg)->done;
}

void kn_sched_free(kn_sched_t *s)
{
    if (!s)
        return;
    kn_coll_t *c = s->coll;
    for (int i = 0; i < s->nallocs; i++)
        scratch_put(c, s->allocs[i]);
    s->nallocs = 0;
    if (s->off) {
        kn_coll_offload_free(s->off);
        s->off = NULL;
    }
    if (s->active) {
        kn_list_del(&s->link);
        s->active = 0;
    }
    if (c->ncache < SCHED_CACHE && s->cap_steps <= 4096) {
        c->cache[c->ncache++] = s;
        return;
    }
    free(s->steps);
    free(s->round_end);
    free(s->reqs);
    free(s->allocs);
    free(s);
}

knit_status_t kn_sched_wait(kn_sched_t *s)
{
    if (!s->done)
        kn_p2p_wait(s->coll->p2p, sched_done, s);
    knit_status_t rc = s->result;
    kn_sched_free(s);
    return rc;
}

/* ------------------------------------------------------------ engine */

knit_status_t kn_coll_create(const kn_coll_params_t *p, kn_coll_t **out)
{
    if (the_coll)
        return KNIT_ERR_STATE;
    kn_coll_t *c = calloc(1, sizeof(*c));
    if (!c)
        return KNIT_ERR_NOMEM;
    c->node_of = malloc((size_t)p->size * sizeof(int));
    if (!c->node_of) {
        free(c);
        return KNIT_ERR_NOMEM;
    }
    memcpy(c->node_of, p->node_of, (size_t)p->size * sizeof(int));
    c->ctx = p->ctx;
    c->p2p = p->p2p;
    c->rank = p->rank;
    c->size = p->size;
    snprintf(c->jobid, sizeof(c->jobid), "%s", p->jobid ? p->jobid : "");
    kn_list_init(&c->active);
    the_coll = c;
    int *all = malloc((size_t)p->size * sizeof(int));
    knit_status_t st = all ? KNIT_OK : KNIT_ERR_NOMEM;
    for (int i = 0; all && i < p->size; i++)
        all[i] = i;
    if (st == KNIT_OK)
        st = knit_comm_create(p->ctx, all, p->size, 0, &c->world);
    free(all);
    if (st != KNIT_OK) {
        the_coll = NULL;
        free(c->node_of);
        free(c);
        return st;
    }
    c->world->is_world = 1;
    kn_p2p_set_progress_hook(c->p2p, coll_progress, c);
    *out = c;
    return KNIT_OK;
}

void kn_coll_destroy(kn_coll_t *c)
{
    if (!c)
        return;
    kn_p2p_set_progress_hook(c->p2p, NULL, NULL);
    if (!kn_list_empty(&c->active))
        kn_warn("%zu collectives still in progress at finalize", kn_list_length(&c->active));
    kn_list_t *pos, *tmp;
    kn_list_for_each_safe(pos, tmp, &c->active) {
        kn_sched_free(kn_list_entry(pos, kn_sched_t, link));
    }
    c->world->is_world = 0;
    knit_comm_destroy(c->world);
    for (int i = 0; i < c->ncache; i++) {
        kn_sched_t *s = c->cache[i];
        free(s->steps);
        free(s->round_end);
        free(s->reqs);
        free(s->allocs);
        free(s);
    }
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        free(c->scratch[i]);
    free(c->node_of);
    if (the_coll == c)
        the_coll = NULL;
    free(c);
}

knit_comm_t *knit_comm_world(knit_ctx_t *ctx)
{
    kn_coll_t *c = kn_coll_of(ctx);
    return c ? c->world : NULL;
}
