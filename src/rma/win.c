/*
 * Windows: memory every member of a communicator exposes, and what every
 * member knows of every other's (base, size, the network key).  Creation
 * is collective: one allgather of a record per member, after each
 * registered its memory with the network transport (through the
 * registration cache, held for the window's life).  Within a node nothing
 * needs registering: peers reach each other by cross-memory attach.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "offload/offload.h"
#include "rma/rma.h"
#include "util/config.h"
#include "util/heap.h"
#include "util/log.h"

extern const unsigned char kn_builtin_rma[];
extern const size_t kn_builtin_rma_len;

kn_rma_t kn_rma;

/* Collective over the job: the agents' module. */
static void load_module(void)
{
    kn_rma.load_tried = 1;
    knit_status_t st = kn_off_load_builtin(kn_rma.ctx, "rma", kn_builtin_rma, kn_builtin_rma_len, &kn_rma.mod);
    if (st != KNIT_OK) {
        kn_rma.mod = NULL;
        kn_rma.why_no_agent = "the agents' rma module could not be loaded";
        if (kn_rma.rank == 0)
            kn_warn("the one-sided module could not be loaded into the agents (%s%s%s): accumulates, atomics and "
                    "the agent and pack methods fail", knit_strerror(st), *knit_module_last_error(kn_rma.ctx) ? ": " : "",
                    knit_module_last_error(kn_rma.ctx));
    }
}

knit_status_t kn_rma_open(const kn_rma_params_t *p)
{
    memset(&kn_rma, 0, sizeof(kn_rma));
    kn_rma.ctx = p->ctx;
    kn_rma.p2p = p->p2p;
    kn_rma.net = p->net && p->net->ops->mem_reg ? p->net : NULL;
    kn_rma.rank = p->rank;
    kn_rma.node = p->node;
    kn_rma.agents = p->agents;
    kn_list_init(&kn_rma.open);
    if (!p->agents)
        kn_rma.why_no_agent = "this job has no node agents (a singleton, or knitrun --no-offload)";
    else if (kn_cfg.rma_load == 1) /* init */
        load_module();
    else
        kn_rma.why_no_agent = "the agents' module loads with the first window over every rank of the job, and no "
                              "window came before this one's (KNIT_RMA_LOAD=init loads it at knit_init)";
    return KNIT_OK; /* the job goes on without it */
}

void kn_rma_close(void)
{
    kn_rma.mod = NULL; /* the offload layer unloads what is left */
}

static unsigned method_of_cfg(void)
{
    static const unsigned map[] = {KNIT_RMA_AUTO, KNIT_RMA_DIRECT, KNIT_RMA_AGENT, KNIT_RMA_PACK};
    return map[kn_cfg.rma_method < 4 ? kn_cfg.rma_method : 0];
}

/* What each member tells the others. */
typedef struct rec {
    uint64_t base, size, rkey;
    uint64_t acclock;      /* this member's accumulate lock (rma_mod.h), 0: none */
    int64_t status;
    uint64_t settle;       /* the address of this member's settle word */
    uint32_t id;           /* the window ids this member has taken so far */
    uint32_t can_defer;    /* it can hold puts for the barrier (defer.c) */
} rec_t;

/* Every rank of the job creates a window over all of them at the same
 * point of its calls: the moment for the job-wide load. */
static void load_with(knit_comm_t *comm)
{
    if (kn_rma.agents && !kn_rma.load_tried && knit_comm_size(comm) == knit_size(kn_rma.ctx))
        load_module();
}

/* local: how this member's side went so far (a failure still takes part
 * in the allgather, so that every member fails together). */
static knit_status_t create(knit_comm_t *comm, void *base, size_t size, void *mem, knit_status_t local,
                            knit_win_t **out)
{
    knit_win_t *w = calloc(1, sizeof(*w));
    int n = comm ? knit_comm_size(comm) : 0;
    rec_t mine = {.base = (uint64_t)(uintptr_t)base, .size = size, .status = local};
    rec_t *all = calloc((size_t)(n ? n : 1), sizeof(rec_t));
    if (w)
        w->peer = calloc((size_t)(n ? n : 1), sizeof(kn_rma_peer_t));
    if (mine.status == KNIT_OK && (!w || !all || !w->peer))
        mine.status = KNIT_ERR_NOMEM;
    /* the accumulate lock lives where the node's peers and the agent map
     * it (the shared heap); without a heap only the agent combines */
    void *lock = mine.status == KNIT_OK ? kn_heap_alloc_any(64) : NULL;
    if (lock)
        mine.acclock = (uint64_t)(uintptr_t)lock;
    mine.id = kn_rma.next_win_id;
    if (mine.status == KNIT_OK && w) {
        int can = 0;
        mine.status = kn_rma_defer_new(w, n, &can);
        mine.can_defer = (uint32_t)can;
        mine.settle = (uint64_t)(uintptr_t)&w->settle;
    }
    if (mine.status == KNIT_OK && kn_rma.net && size) {
        mine.status = kn_rma.net->ops->mem_reg(kn_rma.net, base, size, &mine.rkey, &w->memh);
        if (mine.status != KNIT_OK)
            w->memh = NULL;
    }
    /* everyone learns everyone's record, and whether anyone failed */
    knit_status_t st = all ? knit_allgather(comm, &mine, all, sizeof(rec_t), KNIT_BYTE) : KNIT_ERR_NOMEM;
    for (int i = 0; st == KNIT_OK && i < n; i++)
        if (all[i].status != KNIT_OK)
            st = (knit_status_t)all[i].status;
    if (st != KNIT_OK) {
        free(lock);
        if (w && w->memh)
            kn_rma.net->ops->mem_dereg(kn_rma.net, w->memh);
        if (w) {
            kn_rma_defer_free(w);
            free(w->peer);
        }
        free(w);
        free(all);
        return st;
    }
    w->comm = comm;
    w->n = n;
    w->me = knit_comm_rank(comm);
    w->mem = mem;
    w->acclock = lock;
    w->method = method_of_cfg();
    kn_list_init(&w->reqs);
    int all_can = 1;
    for (int i = 0; i < n; i++) {
        w->peer[i].base = all[i].base;
        w->peer[i].size = all[i].size;
        w->peer[i].rkey = all[i].rkey;
        w->peer[i].acclock = all[i].acclock;
        w->peer[i].settle = all[i].settle;
        w->peer[i].job = knit_comm_job_rank(comm, i);
        if (all[i].id > w->id)
            w->id = all[i].id;
        all_can &= all[i].can_defer != 0;
    }
    kn_rma.next_win_id = w->id + 1; /* every member: above this id, so a later window shares none */
    free(all);
    kn_rma_defer_decide(w, all_can);
    *out = w;
    return KNIT_OK;
}

static int usable(knit_comm_t *comm, knit_win_t **out)
{
    return comm && out && knit_comm_rank(comm) >= 0 && kn_rma.ctx && knit_ctx_current() == kn_rma.ctx;
}

knit_status_t knit_win_create(knit_comm_t *comm, void *base, size_t size, knit_win_t **out)
{
    if (!usable(comm, out) || (size && !base))
        return KNIT_ERR_INVAL;
    load_with(comm);
    return create(comm, size ? base : NULL, size, NULL, KNIT_OK, out);
}

knit_status_t knit_win_create_dynamic(knit_comm_t *comm, knit_win_t **out)
{
    if (!usable(comm, out))
        return KNIT_ERR_INVAL;
    load_with(comm);
    knit_status_t st = create(comm, NULL, 0, NULL, KNIT_OK, out);
    if (st != KNIT_OK)
        return st;
    (*out)->dynamic = 1;
    (*out)->defer = 0; /* (a target cannot check a held put's address: nothing says what is attached) */
    for (int i = 0; i < (*out)->n; i++) {
        (*out)->peer[i].base = 0;
        (*out)->peer[i].size = UINT64_MAX;
    }
    return KNIT_OK;
}

knit_status_t knit_mem_alloc(knit_comm_t *comm, size_t size, knit_win_t **out)
{
    if (!usable(comm, out))
        return KNIT_ERR_INVAL;
    load_with(comm);
    void *mem = size ? knit_rma_alloc(size) : NULL;
    knit_status_t st = create(comm, mem, size, mem, size && !mem ? KNIT_ERR_NOMEM : KNIT_OK, out);
    if (st != KNIT_OK)
        free(mem);
    return st;
}

void *knit_rma_alloc(size_t size)
{
    void *p = kn_heap_alloc_any(size ? size : 1);
    if (!p && posix_memalign(&p, 64, size ? size : 1) != 0)
        return NULL;
    if (!kn_heap_owns(p))
        memset(p, 0, size);
    return p;
}

knit_status_t knit_win_free(knit_win_t *w)
{
    if (!w)
        return KNIT_ERR_INVAL;
    knit_status_t st = kn_rma_wait_win(w, -1);
    knit_status_t st2 = knit_barrier(w->comm); /* nobody reaches into it any more */
    if (st == KNIT_OK)
        st = st2;
    if (w->memh)
        kn_rma.net->ops->mem_dereg(kn_rma.net, w->memh);
    kn_rma_defer_free(w);
    free(w->mem);
    free(w->acclock);
    free(w->peer);
    free(w);
    return st;
}

void *knit_win_base(const knit_win_t *w, int rank)
{
    return w && rank >= 0 && rank < w->n ? (void *)(uintptr_t)w->peer[rank].base : NULL;
}

size_t knit_win_size(const knit_win_t *w, int rank)
{
    return w && rank >= 0 && rank < w->n ? (size_t)w->peer[rank].size : 0;
}

knit_comm_t *knit_win_comm(const knit_win_t *w)
{
    return w ? w->comm : NULL;
}

knit_status_t knit_win_set_method(knit_win_t *w, unsigned method)
{
    if (!w || method > KNIT_RMA_AUTO)
        return KNIT_ERR_INVAL;
    w->method = method == KNIT_RMA_DEFAULT ? method_of_cfg() : method;
    return KNIT_OK;
}

const char *knit_rma_method_name(unsigned method)
{
    static const char *const names[] = {"default", "direct", "agent", "pack", "auto"};
    return method <= KNIT_RMA_AUTO ? names[method] : "?";
}

unsigned knit_rma_method_of(const knit_win_t *w, unsigned flags, int rank, const void *local, size_t bsize,
                            size_t nblocks)
{
    unsigned m = flags & KNIT_RMA_METHOD_MASK;
    if (m == KNIT_RMA_DEFAULT)
        m = w ? w->method : method_of_cfg();
    if (m != KNIT_RMA_AUTO)
        return m;
    int same = !w || rank < 0 || rank >= w->n ||
               knit_node_of(kn_rma.ctx, w->peer[rank].job) == kn_rma.node;
    return kn_rma_auto(same, bsize, nblocks, local && kn_heap_owns(local));
}
