/*
 * Host placement (KNIT_MODULE_HOST): the module wrapper.  The same .so
 * runs inside the calling rank with the same services: one instance per
 * agent of the job and one for the switch, all in this process, so that a
 * module that talks to other instances behaves as it would in the
 * daemons.  Messages and timers run from the rank's progress
 * (knit_request_test/wait, knit_module_recv_*), never inside the service
 * call that caused them.  read_rank/write_rank and deliver reach only the
 * calling rank (the others are other processes).  No protection: here a
 * fault is the debugger's (docs/modules.md).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offload/host.h"
#include "offload/tree.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/time.h"

typedef struct hinst {
    kn_hmod_t *hm;
    knit_mod_geometry_t geo;
    void *state;
    kn_mod_mem_t mem;
} hinst_t;

typedef struct hmsg {
    kn_list_t link;
    int to;
    int32_t from;
    uint64_t len, hlen;   /* hlen: send_hdr's header (on_header sees it first) */
    char data[];
} hmsg_t;

typedef struct htimer {
    kn_list_t link;
    int to;
    uint64_t due, cookie;
} htimer_t;

typedef struct hreq {
    kn_list_t link;
    uint64_t token;
    knit_mreq_t *r;
} hreq_t;

struct kn_hmod {
    kn_list_t link;
    knit_module_t *m;
    kn_mod_lib_t lib;
    const knit_mod_descriptor_t *desc;
    int ninst;            /* nnodes agents + the switch (last) */
    hinst_t *inst;
    kn_list_t msgs, timers, reqs;
    uint64_t next_token;
};

static kn_list_t hmods = KN_LIST_INIT(hmods);

#define H(mc) ((hinst_t *)(void *)(mc))
#define MC(h) ((knit_mod_ctx_t *)(void *)(h))

static int index_of(kn_hmod_t *hm, int32_t who)
{
    int nnodes = hm->ninst - 1;
    if (who == KNIT_MOD_SWITCH)
        return nnodes;
    return who >= 0 && who < nnodes ? who : -1;
}

static const knit_mod_geometry_t *h_geometry(knit_mod_ctx_t *m)
{
    return &H(m)->geo;
}

static int32_t h_send_hdr(knit_mod_ctx_t *m, int32_t dest, const void *hdr, uint64_t hlen, const void *payload,
                          uint64_t plen)
{
    kn_hmod_t *hm = H(m)->hm;
    int to = index_of(hm, dest);
    if (to < 0)
        return KNIT_ERR_RANGE;
    if (hlen > KNIT_MOD_HDR_MAX || hlen + plen > KN_OFF_MSG_MAX || (hlen && !hdr) || (plen && !payload))
        return KNIT_ERR_INVAL;
    hmsg_t *x = malloc(sizeof(*x) + hlen + plen);
    if (!x)
        return KNIT_ERR_NOMEM;
    x->to = to;
    x->from = H(m)->geo.self;
    x->len = hlen + plen;
    x->hlen = to == index_of(hm, x->from) ? 0 : hlen; /* to oneself: on_message */
    if (hlen)
        memcpy(x->data, hdr, hlen);
    if (plen)
        memcpy(x->data + hlen, payload, plen);
    kn_list_push_back(&hm->msgs, &x->link);
    return KNIT_OK;
}

static int32_t h_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    return h_send_hdr(m, dest, NULL, 0, msg, len);
}

/* A message with a header at an instance with on_header: routed as the
 * daemons route it (stream.c), whole; 1 when taken there. */
static int h_route(kn_hmod_t *hm, hmsg_t *x)
{
    knit_mod_ctx_t *m = MC(&hm->inst[x->to]);
    knit_mod_route_t r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    kn_tree_t t;
    kn_tree_init(&t, H(m)->geo.nnodes, H(m)->geo.fanin);
    if (hm->desc->on_header(m, x->from, x->data, x->hlen, x->len - x->hlen, &r) != KNIT_MOD_OK ||
        !kn_tree_route_ok(&t, H(m)->geo.self, &r))
        return 0; /* dropped, as a daemon drops it */
    for (int i = 0; i < r.ndest; i++)
        h_send_hdr(m, r.dest[i], x->data, x->hlen, x->data + x->hlen, x->len - x->hlen);
    return r.take;
}

static int32_t h_multicast(knit_mod_ctx_t *m, const void *msg, uint64_t len)
{
    if (H(m)->geo.self != KNIT_MOD_SWITCH)
        return KNIT_ERR_NOT_SUPPORTED;
    for (int i = 0; i < H(m)->geo.nnodes; i++) {
        int32_t st = h_send(m, i, msg, len);
        if (st)
            return st;
    }
    return KNIT_OK;
}

static int own_rank(knit_mod_ctx_t *m, int32_t rank)
{
    const kn_off_params_t *p = kn_off_params();
    return H(m)->geo.self == p->node && rank == p->rank;
}

static int32_t h_read(knit_mod_ctx_t *m, int32_t rank, void *dst, uint64_t addr, uint64_t len)
{
    if (!own_rank(m, rank))
        return H(m)->geo.self_kind == KNIT_MOD_AT_SWITCH ? KNIT_ERR_NOT_SUPPORTED : KNIT_ERR_RANGE;
    if (len)
        memcpy(dst, (const void *)(uintptr_t)addr, len);
    return KNIT_OK;
}

static int32_t h_write(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, const void *src, uint64_t len)
{
    if (!own_rank(m, rank))
        return H(m)->geo.self_kind == KNIT_MOD_AT_SWITCH ? KNIT_ERR_NOT_SUPPORTED : KNIT_ERR_RANGE;
    if (len)
        memcpy((void *)(uintptr_t)addr, src, len);
    return KNIT_OK;
}

static int32_t h_deliver(knit_mod_ctx_t *m, int32_t rank, const void *data, uint64_t len)
{
    if (!own_rank(m, rank))
        return H(m)->geo.self_kind == KNIT_MOD_AT_SWITCH ? KNIT_ERR_NOT_SUPPORTED : KNIT_ERR_RANGE;
    return kn_off_host_deliver(H(m)->hm->m, data, len);
}

static int32_t h_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *res, uint64_t len)
{
    kn_hmod_t *hm = H(m)->hm;
    kn_list_t *e;
    kn_list_for_each(e, &hm->reqs) {
        hreq_t *q = kn_list_entry(e, hreq_t, link);
        if (q->token != token)
            continue;
        if (len > KN_OFF_MSG_MAX || (len && !res))
            return KNIT_ERR_INVAL;
        knit_mreq_t *r = q->r;
        r->status = status > 0 ? KNIT_ERR_INVAL : status;
        r->len = len;
        if (len <= KN_OFF_INLINE) {
            r->inl_len = (uint32_t)len;
            if (len)
                memcpy(r->inl, res, len);
        } else if ((r->big = malloc(len))) {
            memcpy(r->big, res, len);
        } else {
            r->status = KNIT_ERR_NOMEM;
            r->len = 0;
        }
        r->done = 1;
        kn_list_del(&q->link);
        free(q);
        return KNIT_OK;
    }
    return KNIT_ERR_NOT_FOUND;
}

static int32_t h_timer(knit_mod_ctx_t *m, uint64_t delay, uint64_t cookie)
{
    kn_hmod_t *hm = H(m)->hm;
    if (!hm->desc->on_timer)
        return KNIT_ERR_NOT_SUPPORTED;
    htimer_t *t = malloc(sizeof(*t));
    if (!t)
        return KNIT_ERR_NOMEM;
    t->to = (int)(H(m) - hm->inst);
    t->due = kn_time_ns() + delay;
    t->cookie = cookie;
    kn_list_t *e;
    kn_list_for_each(e, &hm->timers) {
        if (kn_list_entry(e, htimer_t, link)->due > t->due)
            break;
    }
    kn_list__insert(&t->link, e->prev, e);
    return KNIT_OK;
}

static void *h_alloc(knit_mod_ctx_t *m, uint64_t size)
{
    return kn_mod_mem_alloc(&H(m)->mem, size);
}

static void h_free(knit_mod_ctx_t *m, void *p)
{
    if (kn_mod_mem_free(&H(m)->mem, p) < 0)
        kn_warn("module '%s' freed memory it did not allocate (%p): ignored", H(m)->hm->desc->name, p);
}

static void h_set_state(knit_mod_ctx_t *m, void *s)
{
    H(m)->state = s;
}

static void *h_state(knit_mod_ctx_t *m)
{
    return H(m)->state;
}

static void h_log(knit_mod_ctx_t *m, int32_t level, const char *fmt, ...)
{
    if (level < 0)
        level = 0;
    if (level > KN_LOG_TRACE)
        level = KN_LOG_TRACE;
    if (level > kn_log_level)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    char who[24];
    if (H(m)->geo.self == KNIT_MOD_SWITCH)
        snprintf(who, sizeof(who), "switch");
    else
        snprintf(who, sizeof(who), "agent %d", H(m)->geo.self);
    kn_log(level, "module %s (host, as %s): %s", H(m)->hm->desc->name, who, buf);
}

static uint64_t h_now(knit_mod_ctx_t *m)
{
    (void)m;
    return kn_time_ns();
}

/* The emulation is a star: one switch over every agent. */
static int32_t h_place(knit_mod_ctx_t *m, int32_t addr, knit_mod_place_t *p)
{
    kn_tree_t t;
    kn_tree_init(&t, H(m)->geo.nnodes, H(m)->geo.fanin);
    return kn_tree_place(&t, addr, p);
}

static const knit_mod_services_t host_services = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_services_t),
    .geometry = h_geometry,
    .send = h_send,
    .multicast = h_multicast,
    .read_rank = h_read,
    .write_rank = h_write,
    .deliver = h_deliver,
    .complete = h_complete,
    .timer = h_timer,
    .alloc = h_alloc,
    .free = h_free,
    .set_state = h_set_state,
    .state = h_state,
    .log = h_log,
    .now_ns = h_now,
    .place = h_place,
    .send_hdr = h_send_hdr,
};

static void free_inst(hinst_t *h)
{
    kn_mod_mem_release(&h->mem);
}

static void hmod_destroy(kn_hmod_t *hm, int inited)
{
    while (!kn_list_empty(&hm->reqs)) {
        hreq_t *q = kn_list_first(&hm->reqs, hreq_t, link);
        q->r->status = KNIT_ERR_CANCELED;
        q->r->done = 1;
        kn_list_del(&q->link);
        free(q);
    }
    for (int i = 0; i < inited; i++)
        if (hm->desc->fini)
            hm->desc->fini(MC(&hm->inst[i]));
    for (int i = 0; i < hm->ninst; i++)
        free_inst(&hm->inst[i]);
    kn_list_t *lists[2] = {&hm->msgs, &hm->timers};
    for (int l = 0; l < 2; l++)
        while (!kn_list_empty(lists[l])) {
            kn_list_t *e = lists[l]->next;
            kn_list_del(e);
            free(e);
        }
    kn_mod_close(&hm->lib);
    free(hm->inst);
    free(hm);
}

knit_status_t kn_host_load(knit_module_t *m, const char *path)
{
    const kn_off_params_t *p = kn_off_params();
    const int *nf = kn_off_node_first();
    char err[KN_OFF_ERR_MAX], msg[KN_OFF_ERR_MAX + 64];
    void *bytes;
    size_t len;
    knit_status_t st = kn_mod_read_file(path, &bytes, &len, err, sizeof(err));
    if (st != KNIT_OK) {
        kn_off_set_error(err);
        return st;
    }
    kn_hmod_t *hm = calloc(1, sizeof(*hm));
    if (!hm) {
        free(bytes);
        return KNIT_ERR_NOMEM;
    }
    kn_list_init(&hm->msgs);
    kn_list_init(&hm->timers);
    kn_list_init(&hm->reqs);
    st = kn_mod_open_path(path, bytes, len, &hm->lib, err, sizeof(err));
    free(bytes);
    if (st == KNIT_OK)
        st = kn_mod_check_desc(hm->desc = hm->lib.entry(), err, sizeof(err));
    if (st != KNIT_OK) {
        snprintf(msg, sizeof(msg), "host refused %s: %s", path, err);
        kn_off_set_error(msg);
        kn_error("%s", msg);
        kn_mod_close(&hm->lib);
        free(hm);
        return st;
    }
    hm->m = m;
    hm->ninst = p->nnodes + 1;
    hm->inst = calloc((size_t)hm->ninst, sizeof(*hm->inst));
    if (!hm->inst) {
        kn_mod_close(&hm->lib);
        free(hm);
        return KNIT_ERR_NOMEM;
    }
    for (int i = 0; i < hm->ninst; i++) {
        hinst_t *h = &hm->inst[i];
        int sw = i == p->nnodes;
        h->hm = hm;
        kn_mod_mem_init(&h->mem);
        h->geo = (knit_mod_geometry_t){
            .size = sizeof(knit_mod_geometry_t), .module_id = 0, .nranks = p->size, .nnodes = p->nnodes,
            .nswitches = 1, .fanin = p->nnodes < 2 ? 2 : p->nnodes,
            .self = sw ? KNIT_MOD_SWITCH : i, .self_kind = sw ? KNIT_MOD_AT_SWITCH : KNIT_MOD_AT_AGENT,
            .placement = KNIT_MOD_AT_HOST, .first_local = sw ? 0 : nf[i],
            .local_size = sw ? 0 : nf[i + 1] - nf[i], .emulated = 1,
        };
    }
    for (int i = 0; i < hm->ninst; i++) {
        int32_t rc = hm->desc->init(MC(&hm->inst[i]), &host_services);
        if (rc != 0) {
            snprintf(msg, sizeof(msg), "host refused module '%s': init failed (status %d: %s)", hm->desc->name, rc,
                     knit_strerror(rc));
            kn_off_set_error(msg);
            kn_error("%s", msg);
            hmod_destroy(hm, i);
            return KNIT_ERR_INVAL;
        }
    }
    snprintf(m->name, sizeof(m->name), "%s", hm->desc->name);
    m->host = hm;
    kn_list_push_back(&hmods, &hm->link);
    return KNIT_OK;
}

void kn_host_unload(knit_module_t *m)
{
    kn_hmod_t *hm = m->host;
    if (!hm)
        return;
    kn_list_del(&hm->link);
    hmod_destroy(hm, hm->ninst);
    m->host = NULL;
}

knit_status_t kn_host_request(knit_module_t *m, knit_mreq_t *r, const void *args, size_t len)
{
    kn_hmod_t *hm = m->host;
    const kn_off_params_t *p = kn_off_params();
    hreq_t *q = malloc(sizeof(*q));
    if (!q)
        return KNIT_ERR_NOMEM;
    q->token = ++hm->next_token;
    q->r = r;
    r->host = 1;
    kn_list_push_back(&hm->reqs, &q->link);
    knit_mod_request_t req = {.token = q->token, .rank = p->rank, .node = p->node, .len = len};
    hm->desc->on_request(MC(&hm->inst[p->node]), &req, args);
    return KNIT_OK;
}

int kn_host_progress(void)
{
    int n = 0;
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &hmods) {
        kn_hmod_t *hm = kn_list_entry(e, kn_hmod_t, link);
        /* the messages there are now (handlers may queue more) */
        size_t k = kn_list_length(&hm->msgs);
        while (k-- && !kn_list_empty(&hm->msgs)) {
            hmsg_t *x = kn_list_first(&hm->msgs, hmsg_t, link);
            kn_list_del(&x->link);
            int routed = x->hlen && hm->desc->abi_version >= 2 && hm->desc->on_header;
            if (hm->desc->on_message && (!routed || h_route(hm, x)))
                hm->desc->on_message(MC(&hm->inst[x->to]), x->from, x->data, x->len);
            free(x);
            n++;
        }
        uint64_t now = kn_time_ns();
        while (!kn_list_empty(&hm->timers)) {
            htimer_t *tm = kn_list_first(&hm->timers, htimer_t, link);
            if (tm->due > now)
                break;
            kn_list_del(&tm->link);
            hm->desc->on_timer(MC(&hm->inst[tm->to]), tm->cookie);
            free(tm);
            n++;
        }
    }
    return n;
}
