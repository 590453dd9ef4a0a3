/*
 * The daemons' common core (daemon.h): the wire between daemons, loading
 * and unloading, dispatch, the loop and start-up.  Instances, their
 * services and in-process protection are inst.c's; instances in a process
 * of their own, sandbox.c's (daemon_int.h ties them together).
 *
 * Wire messages between daemons: kn_wire_t + bytes, fragmented to the
 * transport's packet size, in order per sender, reassembled per sender.
 * Every message carries a digest of the job cookie and the sender's id;
 * anything malformed is logged and dropped, never trusted.
 *
 * Loading (collective): rank 0's agent (agent 0) coordinates.  It loads
 * the file itself, ships the bytes to every other daemon (LOAD), collects
 * one LOAD_ACK each, and sends LOAD_DONE with the job-wide verdict to
 * every daemon; a daemon whose copy loaded but whose job-wide verdict is
 * a failure unloads it again.  Each agent completes its ranks' load calls
 * (rank 0's LOAD, the others' JOIN, matched by the load's sequence
 * number) from LOAD_DONE.  Unloading is collective too, as instances
 * keep talking to each other until every rank is done: an agent tells the
 * switch once all its ranks unloaded (or died) (UNLOAD); when every agent
 * has, the switch drops its instance and tells every agent (UNLOAD_DONE),
 * which drops its own and completes its ranks' unload calls.
 */

#include "offload/daemon_int.h"

#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "net/net.h"
#include "offload/sandbox.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/env.h"
#include "util/log.h"
#include "util/nodemap.h"
#include "util/time.h"

struct kn_daemon kn_dmn;

/* ------------------------------------------------------------ wire */

/* 1: o is sent (free it), 2: sent and held (bulk.c), 0: not yet. */
static int try_send(int dest, outmsg_t *o)
{
    if (kn_cfg.agent_bulk && o->len >= kn_cfg.agent_bulk && o->avail == o->len && o->len == o->w.total &&
        !o->started) { /* (whole: not a routed copy still coming in, nor one cut short) */
        int r = kn_d_bulk_send(dest, o);
        if (r >= 0)
            return r;
    }
    size_t cap = kn_dmn.tl->max_payload - sizeof(kn_wire_t);
    char pkt[65536];
    int two = kn_dmn.tl->ops->send2 != NULL; /* the header and the bytes, not joined first */
    if (!two && kn_dmn.tl->max_payload > sizeof(pkt))
        cap = sizeof(pkt) - sizeof(kn_wire_t);
    /* a message still streaming in goes out as far as it is in */
    while (o->sent < o->avail || (!o->len && !o->started)) {
        uint64_t n = KN_MIN(o->avail - o->sent, cap);
        kn_wire_t w = o->w;
        w.offset = o->sent;
        kn_pkt_hdr_t h = {.type = KN_PKT_OFFLOAD, .len = n + sizeof(w)};
        knit_status_t st;
        if (two) {
            st = kn_dmn.tl->ops->send2(kn_dmn.tl, dest, &h, &w, sizeof(w), o->data + o->sent, n);
        } else {
            memcpy(pkt, &w, sizeof(w));
            if (n)
                memcpy(pkt + sizeof(w), o->data + o->sent, n);
            st = kn_dmn.tl->ops->send(kn_dmn.tl, dest, &h, pkt, n + sizeof(w));
        }
        if (st == KNIT_ERR_AGAIN)
            return 0;
        if (st != KNIT_OK) {
            kn_error("sending to daemon %d: %s", dest, knit_strerror(st));
            exit(1);
        }
        o->sent += n;
        o->started = 1;
    }
    return o->sent == o->len;
}

void kn_d_send_msg(int dest, int type, uint32_t mod, uint64_t a, uint64_t b, const void *p1, uint64_t l1,
                     const void *p2, uint64_t l2)
{
    if (dest < 0 || dest >= kn_dmn.nids || dest == kn_dmn.g.self)
        return;
    outmsg_t *o = malloc(sizeof(*o) + l1 + l2);
    if (!o) {
        kn_error("out of memory for a %llu-byte message", (unsigned long long)(l1 + l2));
        return;
    }
    o->w = (kn_wire_t){.magic = KN_WIRE_MAGIC, .version = KN_WIRE_VERSION, .type = (uint16_t)type,
                       .auth = kn_dmn.auth, .mod = mod, .from = kn_dmn.g.self, .total = l1 + l2, .a = a, .b = b};
    o->data = (char *)(o + 1);
    if (l1)
        memcpy(o->data, p1, l1);
    if (l2)
        memcpy(o->data + l1, p2, l2);
    o->len = o->avail = l1 + l2;
    o->sent = 0;
    o->started = 0;
    o->bulk_id = 0;
    o->memh = NULL;
    kn_d_out_queue(dest, o);
}

/* o, sent as try_send said (r): freed, or held until it is read. */
static void sent_off(outmsg_t *o, int r)
{
    if (r == 2)
        kn_d_bulk_hold(o);
    else
        free(o);
}

void kn_d_out_queue(int dest, outmsg_t *o)
{
    int r;
    if (kn_dmn.tl && kn_list_empty(&kn_dmn.out[dest]) && (r = try_send(dest, o))) {
        sent_off(o, r);
        return;
    }
    kn_list_push_back(&kn_dmn.out[dest], &o->link);
    kn_dmn.backlog++;
}

void kn_d_out_kick(int dest)
{
    while (kn_dmn.tl && !kn_list_empty(&kn_dmn.out[dest])) {
        outmsg_t *o = kn_list_first(&kn_dmn.out[dest], outmsg_t, link);
        int r = try_send(dest, o);
        if (!r)
            return;
        kn_list_del(&o->link);
        sent_off(o, r);
        kn_dmn.backlog--;
    }
}

static int flush_backlog(void)
{
    if (!kn_dmn.backlog || !kn_dmn.tl)
        return 0;
    int before = kn_dmn.backlog;
    for (int i = 0; i < kn_dmn.nids; i++)
        kn_d_out_kick(i);
    return before - kn_dmn.backlog;
}

static void handle_msg(int src, const kn_wire_t *w, const char *p, uint64_t len);

static void on_packet(void *arg, int src, const kn_pkt_hdr_t *hdr, const void *payload, size_t len)
{
    (void)arg;
    kn_wire_t w;
    const char *why;
    if (kn_wire_check(hdr, payload, len, kn_dmn.auth, src, kn_dmn.nids, &w, &why) != KNIT_OK) {
        kn_warn("dropped a message from daemon %d (type %u, %zu bytes): %s", src, hdr->type, len, why);
        return;
    }
    if (kn_d_bulk_take(src, &w, payload, len)) /* a bulk descriptor, or waits behind one */
        return;
    kn_d_packet(src, &w, payload, len);
}

void kn_d_packet(int src, const kn_wire_t *wp, const void *payload, size_t len)
{
    kn_wire_t w = *wp;
    kn_wire_msg_t m;
    const char *why;
    const char *frag = (const char *)payload + sizeof(w);
    /* a message a header handler routes streams on as it comes (stream.c) */
    int routed = w.type == W_MSG ? kn_d_stream_fragment(src, &w, frag, len - sizeof(w)) : 0;
    if (routed == 1)
        return; /* forwarded, not taken here */
    int whole = kn_wire_reasm_add(&kn_dmn.rx[src], &w, frag, len - sizeof(w), &m, &why);
    if (why)
        kn_warn("daemon %d: %s", src, why);
    if (whole) {
        kn_inst_t *in = routed ? kn_d_inst(m.w.mod) : NULL;
        if (in) /* taken by its header handler */
            kn_d_inst_message(in, kn_tree_addr(&kn_dmn.tree, src), m.data, m.len, 0);
        else if (!routed)
            handle_msg(src, &m.w, m.data, m.len);
        free(m.owned);
    }
}

void kn_d_message(int src, const kn_wire_t *w, const char *p, uint64_t len)
{
    handle_msg(src, w, p, len);
}

/* ------------------------------------------------------------ load / unload */

static void load_done_local(uint64_t seq, int32_t status, uint32_t id, const char *msg)
{
    kn_inst_t *in = kn_dmn.inst[id % KN_INST_TAB];
    if (status != KNIT_OK && in && in->id == id)
        kn_d_inst_destroy(in, 1);
    if (!kn_dmn.g.is_switch && kn_dmn.hooks && kn_dmn.hooks->loaded)
        kn_dmn.hooks->loaded(seq, status, id, msg);
}

static void load_ack(int32_t status, const char *msg)
{
    if (kn_dmn.L.status == KNIT_OK && status != KNIT_OK) {
        kn_dmn.L.status = status;
        snprintf(kn_dmn.L.msg, sizeof(kn_dmn.L.msg), "%s", msg);
    }
    if (--kn_dmn.L.acks > 0)
        return;
    kn_dmn.L.busy = 0;
    for (int i = 1; i < kn_dmn.nids; i++)
        kn_d_send_msg(i, W_LOAD_DONE, kn_dmn.L.id, kn_dmn.L.seq, (uint32_t)kn_dmn.L.status, kn_dmn.L.msg, strlen(kn_dmn.L.msg) + 1, NULL, 0);
    load_done_local(kn_dmn.L.seq, kn_dmn.L.status, kn_dmn.L.id, kn_dmn.L.msg);
}

void kn_d_load_verdict(kn_inst_t *in, int32_t status, const char *msg)
{
    uint32_t id = in->id;
    uint64_t seq = in->load_seq;
    in->loading = 0;
    if (status != KNIT_OK)
        kn_d_inst_destroy(in, 0);
    if (kn_dmn.g.self == 0) /* agent 0 coordinates the load */
        load_ack(status, msg);
    else
        kn_d_send_msg(0, W_LOAD_ACK, id, seq, (uint32_t)status, msg, strlen(msg) + 1, NULL, 0);
}

void kn_d_load(uint64_t seq, int where, const char *name, void *bytes, uint64_t len)
{
    char msg[KN_OFF_ERR_MAX] = "";
    if (kn_dmn.L.busy) {
        kn_dmn.hooks->loaded(seq, KNIT_ERR_AGAIN, 0, "another load is in progress");
        return;
    }
    if (!bytes) { /* a verdict without a load: name is the reason */
        for (int i = 1; i < kn_dmn.nids; i++)
            kn_d_send_msg(i, W_LOAD_DONE, 0, seq, (uint32_t)KNIT_ERR_NOT_FOUND, name, strlen(name) + 1, NULL, 0);
        load_done_local(seq, KNIT_ERR_NOT_FOUND, 0, name);
        return;
    }
    uint32_t id;
    do
        id = ++kn_dmn.next_id;
    while (id == 0 || id == KN_OFF_MOD_BUILTIN || kn_dmn.inst[id % KN_INST_TAB]);
    kn_dmn.L.busy = 1;
    kn_dmn.L.seq = seq;
    kn_dmn.L.id = id;
    kn_dmn.L.acks = kn_dmn.nids;
    kn_dmn.L.status = KNIT_OK;
    kn_dmn.L.msg[0] = '\0';
    char nm[KNIT_MOD_NAME_MAX] = {0};
    snprintf(nm, sizeof(nm), "%s", name);
    for (int i = 1; i < kn_dmn.nids; i++)
        kn_d_send_msg(i, W_LOAD, id, seq, (uint64_t)where, nm, sizeof(nm), bytes, len);
    int32_t st = kn_d_inst_load(id, seq, where, nm, bytes, len, msg, sizeof(msg));
    if (st != KNIT_INPROGRESS)
        load_ack(st, msg);
}

void kn_d_inst_gone(uint32_t id)
{
    if (!kn_dmn.g.is_switch && kn_dmn.hooks && kn_dmn.hooks->unloaded)
        kn_dmn.hooks->unloaded(id);
}

/* The ranks' unload calls end once fini has run: at once in-process, when
 * its process has ended otherwise (kn_d_inst_gone from sandbox.c). */
static void unload_here(kn_inst_t *in)
{
    uint32_t id = in->id;
    if (kn_d_inst_destroy(in, 1) != KNIT_INPROGRESS)
        kn_d_inst_gone(id);
}

/* The root switch heard every agent's last rank unload: every other
 * daemon unloads too. */
static void switch_unloaded(kn_inst_t *in)
{
    for (int i = 0; i < kn_dmn.nids; i++)
        if (i != kn_dmn.g.self)
            kn_d_send_msg(i, W_UNLOAD_DONE, in->id, 0, 0, NULL, 0, NULL, 0);
    unload_here(in);
}

static void check_unloaded(kn_inst_t *in)
{
    if (in->unload_sent || in->nunloaded < kn_dmn.g.local_size)
        return;
    in->unload_sent = 1;
    kn_d_send_msg(kn_dmn.g.nnodes, W_UNLOAD, in->id, 0, 0, NULL, 0, NULL, 0);
}

void kn_d_unload(uint32_t id, int slot)
{
    kn_inst_t *in = kn_d_inst(id);
    if (!in) {
        if (kn_dmn.hooks && kn_dmn.hooks->unloaded)
            kn_dmn.hooks->unloaded(id); /* nothing to wait for */
        return;
    }
    if (slot < 0 || slot >= kn_dmn.g.local_size || in->unloaded[slot])
        return;
    in->unloaded[slot] = 1;
    in->nunloaded++;
    /* the rank's own open requests end now */
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &in->reqs) {
        kn_dreq_t *r = kn_list_entry(e, kn_dreq_t, link);
        if (r->origin < 0 && r->slot == slot)
            kn_d_req_finish(r, KNIT_ERR_CANCELED, "module unloaded", 16);
    }
    check_unloaded(in);
}

void kn_d_rank_gone(int slot)
{
    for (int i = 0; i < KN_INST_TAB; i++) {
        kn_inst_t *in = kn_dmn.inst[i];
        if (!in || in->dead)
            continue;
        kn_list_t *e, *t;
        kn_list_for_each_safe(e, t, &in->reqs) {
            kn_dreq_t *r = kn_list_entry(e, kn_dreq_t, link);
            if (r->origin < 0 && r->slot == slot) {
                r->slot = -1; /* nobody to tell: the module may still complete it */
            }
        }
        if (!in->unloaded[slot]) {
            in->unloaded[slot] = 1;
            in->nunloaded++;
            check_unloaded(in);
        }
    }
    /* held results of the rank */
    for (uint32_t i = 0; i < kn_dmn.nreqs; i++) {
        kn_dreq_t *r = kn_dmn.reqs[i];
        if (r && r->held && r->slot == slot)
            kn_d_release(r);
    }
}

/* ------------------------------------------------------------ dispatch */


/* The record of a request from a rank of this node (NULL: it was failed
 * with KNIT_ERR_NOMEM already). */
static kn_dreq_t *local_req(kn_inst_t *in, int slot, int32_t rank, uint64_t rank_id)
{
    kn_dreq_t *r = kn_d_req_new(in);
    if (!r) {
        kn_dreq_t tmp = {.origin = -1, .slot = slot, .rank = rank, .rank_id = rank_id};
        kn_dmn.hooks->complete(&tmp, KNIT_ERR_NOMEM, NULL, 0);
        return NULL;
    }
    r->origin = -1;
    r->slot = slot;
    r->rank = rank;
    r->rank_id = rank_id;
    return r;
}

void kn_d_request(uint32_t mod, int slot, int32_t rank, uint64_t rank_id, const void *args, uint64_t len)
{
    kn_inst_t *in = kn_d_inst(mod);
    kn_dreq_t tmp = {.origin = -1, .slot = slot, .rank = rank, .rank_id = rank_id};
    if (!in) {
        kn_dmn.hooks->complete(&tmp, KNIT_ERR_NOT_FOUND, "no such module", 15);
        return;
    }
    if (in->faulted || in->unloaded[slot]) {
        const char *m = in->faulted ? in->fault : "module unloaded";
        kn_dmn.hooks->complete(&tmp, in->faulted ? KNIT_ERR_MODULE_FAULT : KNIT_ERR_STATE, m, strlen(m) + 1);
        return;
    }
    kn_dreq_t *r = local_req(in, slot, rank, rank_id);
    if (!r)
        return;
    if (in->placement == KNIT_MOD_AT_SWITCH) {
        kn_d_send_msg(kn_dmn.g.nnodes, W_REQ, mod, r->token, (uint32_t)rank, args, len, NULL, 0);
        return;
    }
    kn_d_inst_request(r, args, len);
}

/* The compiled-in handler (the benchmark's baseline): the same request
 * records and completion path as a module, called directly instead of
 * through a loaded .so and the protected dispatcher. */
static void builtin_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    (void)args;
    kn_d_svc_complete(m, req->token, KNIT_OK, NULL, 0);
}

static const knit_mod_descriptor_t builtin_desc = {
    .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(knit_mod_descriptor_t), .name = "builtin",
    .on_request = builtin_request,
};

static kn_inst_t builtin = {.id = KN_OFF_MOD_BUILTIN, .placement = KNIT_MOD_AT_AGENT, .name = "builtin",
                            .desc = &builtin_desc};

void kn_d_request_builtin(int slot, int32_t rank, uint64_t rank_id)
{
    if (!builtin.reqs.next) {
        kn_list_init(&builtin.reqs);
        kn_mod_mem_init(&builtin.mem);
    }
    kn_dreq_t *r = local_req(&builtin, slot, rank, rank_id);
    if (!r)
        return;
    knit_mod_request_t q = {.token = r->token, .rank = rank, .node = kn_dmn.g.self};
    builtin_desc.on_request(&builtin, &q, NULL);
}


static void handle_msg(int src, const kn_wire_t *w, const char *p, uint64_t len)
{
    kn_inst_t *in = kn_d_inst(w->mod);
    char msg[KN_OFF_ERR_MAX];
    int32_t from = kn_tree_addr(&kn_dmn.tree, src);
    if (!kn_wire_body_ok(w, p, len))
        goto bad;
    switch (w->type) {
    case W_LOAD: {
        if (src != 0)
            goto bad;
        char nm[KNIT_MOD_NAME_MAX];
        memcpy(nm, p, sizeof(nm));
        nm[sizeof(nm) - 1] = '\0';
        msg[0] = '\0';
        int32_t st = kn_d_inst_load(w->mod, w->a, (int)w->b, nm, p + sizeof(nm), len - sizeof(nm), msg, sizeof(msg));
        if (st != KNIT_INPROGRESS)
            kn_d_send_msg(0, W_LOAD_ACK, w->mod, w->a, (uint32_t)st, msg, strlen(msg) + 1, NULL, 0);
        return;
    }
    case W_LOAD_ACK:
        if (kn_dmn.g.self != 0 || !kn_dmn.L.busy || w->a != kn_dmn.L.seq || w->mod != kn_dmn.L.id)
            goto bad;
        load_ack((int32_t)(uint32_t)w->b, p);
        return;
    case W_LOAD_DONE:
        if (src != 0)
            goto bad;
        load_done_local(w->a, (int32_t)(uint32_t)w->b, w->mod, p);
        return;
    case W_UNLOAD:
        if (kn_dmn.g.self != kn_dmn.g.nnodes || src >= kn_dmn.g.nnodes)
            goto bad;
        if (in && ++in->nunloaded >= kn_dmn.g.nnodes)
            switch_unloaded(in);
        return;
    case W_UNLOAD_DONE:
        if (src != kn_dmn.g.nnodes)
            goto bad;
        if (in)
            unload_here(in);
        return;
    case W_MSG:
        if (!in) {
            kn_debug("message for module %u that is not loaded here: dropped", w->mod);
            return;
        }
        if (w->b && kn_d_route_whole(in, from, w, p, len)) /* its header handler routed it */
            return;
        kn_d_inst_message(in, from, p, len, w->b); /* a module process routes it itself */
        return;
    case W_REQ: {
        if (kn_dmn.g.self != kn_dmn.g.nnodes) /* the root switch */
            goto bad;
        if (!in || in->faulted) {
            const char *m = in ? in->fault : "no such module at the switch";
            kn_d_send_msg(src, W_DONE, w->mod, w->a, (uint32_t)(in ? KNIT_ERR_MODULE_FAULT : KNIT_ERR_NOT_FOUND), m,
                     strlen(m) + 1, NULL, 0);
            return;
        }
        kn_dreq_t *r = kn_d_req_new(in);
        if (!r) {
            kn_d_send_msg(src, W_DONE, w->mod, w->a, (uint32_t)KNIT_ERR_NOMEM, NULL, 0, NULL, 0);
            return;
        }
        r->origin = src;
        r->origin_token = w->a;
        r->rank = (int32_t)(uint32_t)w->b;
        kn_d_inst_request(r, p, len);
        return;
    }
    case W_DONE: {
        kn_dreq_t *r = kn_d_req_find(w->a);
        if (kn_dmn.g.is_switch || !r || r->held) {
            kn_debug("completion for an unknown request: dropped");
            return;
        }
        kn_d_req_finish(r, (int32_t)(uint32_t)w->b, p, len);
        return;
    }
    case W_FAULT:
        if (in)
            kn_d_inst_disable(in, p, 0);
        return;
    case W_BULK: /* (taken by kn_d_bulk_take as it came) */
        goto bad;
    case W_BULK_DONE:
        kn_d_bulk_freed(src, w->a);
        return;
    }
bad:
    kn_warn("dropped an unexpected message (type %u) from daemon %d", w->type, src);
}

/* ------------------------------------------------------------ loop */

int kn_d_watch(int fd, void (*fn)(int, uint32_t, void *), void *arg)
{
    if (kn_dmn.nwatches == (int)KN_ARRAY_SIZE(kn_dmn.watches)) {
        /* reuse a free one */
        int i;
        for (i = 0; i < kn_dmn.nwatches && kn_dmn.watches[i].fd >= 0; i++)
            ;
        if (i == kn_dmn.nwatches)
            return -1;
        kn_dmn.watches[i] = (watch_t){fd, fn, arg};
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        return epoll_ctl(kn_dmn.epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    int i;
    for (i = 0; i < kn_dmn.nwatches && kn_dmn.watches[i].fd >= 0; i++)
        ;
    if (i == kn_dmn.nwatches)
        kn_dmn.nwatches++;
    kn_dmn.watches[i] = (watch_t){fd, fn, arg};
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(kn_dmn.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        kn_error("epoll_ctl: %m");
        kn_dmn.watches[i].fd = -1;
        return -1;
    }
    return 0;
}

void kn_d_unwatch(int fd)
{
    for (int i = 0; i < kn_dmn.nwatches; i++)
        if (kn_dmn.watches[i].fd == fd) {
            epoll_ctl(kn_dmn.epfd, EPOLL_CTL_DEL, fd, NULL);
            kn_dmn.watches[i].fd = -1;
        }
}

static void on_signal(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof(si)) == sizeof(si))
        kn_dmn.stop = 1;
}

static void on_nothing(int fd, uint32_t ev, void *arg)
{
    (void)fd, (void)ev, (void)arg;
}


/* The network's wait fd is watched edge-triggered: some providers keep it
 * readable while nothing is left for us (a socket they poll for
 * writing), which level-triggered would turn into a busy loop.  Edge-
 * triggered wakes us for every new arrival; the loop always runs progress
 * and arms again before it sleeps, so none is missed, and a sleep with the
 * network up is bounded (1 s) all the same. */
static void net_watch(int fd)
{
    if (kn_dmn.net_fd >= 0)
        kn_d_unwatch(kn_dmn.net_fd);
    kn_dmn.net_fd = fd;
    int i = kn_d_watch(fd, on_nothing, NULL);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
    for (i = 0; i < kn_dmn.nwatches; i++)
        if (kn_dmn.watches[i].fd == fd)
            ev.data.u32 = (uint32_t)i;
    if (epoll_ctl(kn_dmn.epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        kn_warn("epoll_ctl(EPOLLET): %m");
}

static int next_timeout_ms(void)
{
    if (!kn_list_empty(&kn_dmn.selfq))
        return 0;
    int cap = !kn_dmn.tl ? -1 : kn_dmn.tl->ops->arm ? 1000 : 1; /* without a wait fd: poll the network */
    int sbx = kn_sbx_timeout_ms(); /* a module process's budget */
    if (sbx >= 0 && (cap < 0 || sbx < cap))
        cap = sbx;
    if (kn_list_empty(&kn_dmn.timers))
        return cap;
    uint64_t now = kn_time_ns(), due = kn_list_first(&kn_dmn.timers, dtimer_t, link)->due;
    if (due <= now)
        return 0;
    uint64_t ms = (due - now + KN_NSEC_PER_MSEC - 1) / KN_NSEC_PER_MSEC;
    if (cap >= 0 && ms > (uint64_t)cap)
        ms = (uint64_t)cap;
    return ms > 60000 ? 60000 : (int)ms;
}

/* Awake again: the rings that were told we sleep are told we do not. */
static void awake(void)
{
    if (kn_dmn.hooks && kn_dmn.hooks->woke)
        kn_dmn.hooks->woke();
    kn_sbx_woke();
}

/* how long an idle daemon on a crowded host polls before it yields */
#define DMN_POLL_CROWDED_NS 3000

/* KNIT_STATS: the processor time this daemon used (its module processes
 * apart), to set against the ranks' (docs/collectives.md: what an
 * offloaded collective costs each process). */
static void report_cpu(void)
{
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    double user, sys, all = kn_rusage_ms(&self, &user, &sys);
    char who[32];
    fprintf(stderr, "knit[%s] stats: cpu %.3f ms (user %.3f, system %.3f), module processes %.3f ms\n",
            kn_d_name(who, sizeof(who)), all,
            user, sys, kn_rusage_ms(&kids, NULL, NULL));
}

int kn_d_run(void)
{
    uint64_t last = kn_time_ns();
    while (!kn_dmn.stop) {
        int work = 0;
        if (kn_dmn.hooks && kn_dmn.hooks->poll)
            work += kn_dmn.hooks->poll();
        if (kn_dmn.tl)
            work += kn_dmn.tl->ops->progress(kn_dmn.tl);
        work += flush_backlog();
        work += kn_d_run_timers();
        work += kn_sbx_poll();
        uint64_t now = kn_time_ns();
        if (work) {
            last = now;
            continue;
        }
        if (now - last < kn_dmn.spin && !kn_sbx_defer()) {
            /* on a crowded host a rank may be waiting for this cpu (bound
             * beside us, its answer just delivered): polling would hold
             * it for the whole spin, so after the first microseconds
             * (where the next request of a busy rank comes) we yield
             * (2 ranks on 2 cpus, offload_rtt back to back: 60 us a
             * request polling, 2-3.5 yielding) */
            if (kn_dmn.crowded && now - last > DMN_POLL_CROWDED_NS)
                sched_yield();
            else
                kn_cpu_relax();
            continue;
        }
        if (kn_sbx_defer() && now - last < kn_dmn.spin + kn_cfg.yield_time) {
            sched_yield(); /* a module process needs a cpu to answer (sandbox.c) */
            continue;
        }
        if ((kn_dmn.hooks && kn_dmn.hooks->want_sleep && !kn_dmn.hooks->want_sleep()) || !kn_sbx_want_sleep()) {
            awake();
            last = kn_time_ns();
            continue;
        }
        /* the network's wait fd, armed (-1: it has work for progress) */
        if (kn_dmn.tl && kn_dmn.tl->ops->arm) {
            int fd = kn_dmn.tl->ops->arm(kn_dmn.tl);
            if (fd < 0) {
                awake();
                continue;
            }
            if (fd != kn_dmn.net_fd)
                net_watch(fd);
        }
        /* The budget timer stays armed across the sleep (disarming and
         * arming it cost two system calls a wake, 2.6 us on these virtual
         * cpus; a module call arms it, inst.c); a sleep that only it or
         * the timeout ended finds the daemon idle, and it is disarmed
         * then: an idle daemon wakes once for it, at most a quarter
         * budget after its last work, and sleeps on without it. */
        struct epoll_event ev[16];
        int n = epoll_wait(kn_dmn.epfd, ev, 16, next_timeout_ms());
        if (n < 0 && errno != EINTR) {
            kn_error("epoll_wait: %m");
            return 1;
        }
        if (kn_dmn.tl && kn_dmn.tl->ops->arm && kn_dmn.tl->ops->disarm)
            kn_dmn.tl->ops->disarm(kn_dmn.tl);
        awake();
        if (n <= 0)
            kn_d_budget_timer(0);
        for (int i = 0; i < n; i++) {
            watch_t *w = &kn_dmn.watches[ev[i].data.u32];
            if (w->fd >= 0)
                w->fn(w->fd, ev[i].events, w->arg);
        }
        last = kn_time_ns();
    }
    kn_d_budget_timer(0);
    if (kn_dmn.hooks && kn_dmn.hooks->at_exit)
        kn_dmn.hooks->at_exit();
    if (kn_cfg.stats)
        report_cpu();
    if (kn_dmn.net_started && !kn_dmn.tl)
        _exit(0); /* still connecting (it owns the store connection): nothing to tidy */
    for (int i = 0; i < KN_INST_TAB; i++)
        if (kn_dmn.inst[i])
            kn_d_inst_destroy(kn_dmn.inst[i], 1);
    kn_sbx_kill_all(); /* module processes have no time left for fini */
    /* the job is over (SIGTERM from knitrun): the peers are going too, so
     * nothing is flushed or closed gracefully on the network */
    kn_boot_finalize(kn_dmn.boot);
    fflush(NULL);
    _exit(0);
}

/* ------------------------------------------------------------ start */

static void net_fatal(void *arg, const char *msg)
{
    (void)arg;
    kn_error("%s", msg);
    exit(1);
}

/* 0, or -1 where unset or not a count */
static int env_num(const char *name, int *out)
{
    return kn_env_count(name, 1 << 24, out) == 1 ? 0 : -1;
}

knit_status_t kn_d_start(int is_switch, const kn_d_hooks_t *hooks)
{
    kn_log_set_prefix(is_switch ? "switch" : "agent");
    knit_status_t st = kn_config_load();
    if (st != KNIT_OK)
        return st;
    kn_dmn.hooks = hooks;
    kn_dmn.g.is_switch = is_switch;
    kn_dmn.net_fd = -1;
    /* Messages of up to KN_OFF_MSG_MAX come and go all the time: from
     * the heap, and the heap kept, not a fresh mmap (or a trimmed top)
     * whose pages each fault again on the copy into it (a 256 KiB update
     * message of the replicated region took 0.8 ms to receive into new
     * memory on this machine's virtual cpus) */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    kn_dmn.budget = kn_cfg.module_budget;
    kn_dmn.isolation = kn_cfg.module_isolation == 1 ? KN_ISO_INPROCESS : KN_ISO_PROCESS;
    if (env_num(KN_ENV_HOST_PROCS, &kn_dmn.host_procs) < 0)
        kn_dmn.host_procs = 0;
    kn_dmn.spin = kn_cfg.agent_spin;
    kn_dmn.crowded = kn_dmn.host_procs + 1 > kn_cpus_host();
    if (kn_cfg.agent_slice)
        (void)kn_cpus_set_slice(kn_cfg.agent_slice); /* a woken daemon runs at once (cpus.h) */
    kn_list_init(&kn_dmn.timers);
    kn_list_init(&kn_dmn.selfq);
    const char *sizes = getenv(KN_ENV_NODE_SIZES), *cookie = getenv(KN_ENV_COOKIE);
    kn_dmn.g.jobid = getenv(KN_ENV_JOBID);
    if (!sizes || !cookie || !kn_dmn.g.jobid || env_num(KN_ENV_SIZE, &kn_dmn.g.nranks) < 0 ||
        env_num(KN_ENV_NNODES, &kn_dmn.g.nnodes) < 0 || kn_dmn.g.nnodes < 1 ||
        (!is_switch && (env_num(KN_ENV_NODE, &kn_dmn.g.self) < 0 || kn_dmn.g.self >= kn_dmn.g.nnodes))) {
        kn_error("started without the job's environment (KNIT_JOBID, KNIT_COOKIE, KNIT_SIZE, KNIT_NNODES, "
                 "KNIT_NODE_SIZES%s): knit daemons are started by knitrun", is_switch ? "" : ", KNIT_NODE");
        return KNIT_ERR_INVAL;
    }
    kn_dmn.g.cookie = cookie;
    if (kn_tree_init(&kn_dmn.tree, kn_dmn.g.nnodes, (int)kn_cfg.switch_fanin) < 0) {
        kn_error("KNIT_SWITCH_FANIN=%lld: must be at least 2", (long long)kn_cfg.switch_fanin);
        return KNIT_ERR_INVAL;
    }
    int nsw = 1, sw = 0;
    if ((getenv(KN_ENV_NSWITCHES) && env_num(KN_ENV_NSWITCHES, &nsw) < 0) || nsw != kn_dmn.tree.nswitches ||
        (is_switch && getenv(KN_ENV_SWITCH) && (env_num(KN_ENV_SWITCH, &sw) < 0 || sw >= nsw))) {
        kn_error("%s=%s, %s=%s: not the %d switches of %d nodes at fan-in %lld", KN_ENV_NSWITCHES,
                 getenv(KN_ENV_NSWITCHES), KN_ENV_SWITCH, getenv(KN_ENV_SWITCH) ? getenv(KN_ENV_SWITCH) : "0",
                 kn_dmn.tree.nswitches, kn_dmn.g.nnodes, (long long)kn_cfg.switch_fanin);
        return KNIT_ERR_INVAL;
    }
    if (is_switch)
        kn_dmn.g.self = kn_dmn.g.nnodes + sw;
    char name[32];
    kn_log_set_prefix("%s", kn_d_name(name, sizeof(name)));
    if (kn_node_sizes_parse(sizes, kn_dmn.g.nranks, &kn_dmn.node_first) != kn_dmn.g.nnodes) {
        kn_error("%s: '%s' is not the ranks of %d nodes adding up to %d", KN_ENV_NODE_SIZES, sizes,
                 kn_dmn.g.nnodes, kn_dmn.g.nranks);
        return KNIT_ERR_INVAL;
    }
    kn_dmn.g.node_first = kn_dmn.node_first;
    if (!is_switch) {
        kn_dmn.g.first_local = kn_dmn.node_first[kn_dmn.g.self];
        kn_dmn.g.local_size = kn_dmn.node_first[kn_dmn.g.self + 1] - kn_dmn.g.first_local;
    }
    kn_dmn.nids = kn_dmn.g.nnodes + kn_dmn.tree.nswitches;
    kn_dmn.auth = kn_off_cookie_digest(cookie);
    kn_dmn.out = calloc((size_t)kn_dmn.nids, sizeof(*kn_dmn.out));
    kn_dmn.rx = calloc((size_t)kn_dmn.nids, sizeof(*kn_dmn.rx));
    kn_dmn.streams = calloc((size_t)kn_dmn.nids, sizeof(*kn_dmn.streams));
    kn_dmn.bulk_rx = calloc((size_t)kn_dmn.nids, sizeof(*kn_dmn.bulk_rx));
    if (!kn_dmn.out || !kn_dmn.rx || !kn_dmn.streams || !kn_dmn.bulk_rx)
        return KNIT_ERR_NOMEM;
    for (int i = 0; i < kn_dmn.nids; i++) {
        kn_list_init(&kn_dmn.out[i]);
        kn_list_init(&kn_dmn.bulk_rx[i].q);
    }
    kn_list_init(&kn_dmn.bulk_out);
    for (size_t i = 0; i < KN_ARRAY_SIZE(kn_dmn.watches); i++)
        kn_dmn.watches[i].fd = -1;

    kn_dmn.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (kn_dmn.epfd < 0) {
        kn_error("epoll_create1: %m");
        return KNIT_ERR_IO;
    }
    /* Before the signals are blocked: a daemon whose rank dies while it
     * retries a store that died too ends at the rank's PR_SET_PDEATHSIG
     * (under another launcher, nothing else would stop it) */
    st = kn_boot_connect(getenv(KN_ENV_BOOT_ADDR), cookie, KN_BOOT_ROLE_DAEMON, kn_dmn.g.self, &kn_dmn.boot);
    if (st != KNIT_OK) {
        kn_error("cannot reach the bootstrap store: %s", knit_strerror(st));
        return st;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    kn_dmn.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (kn_dmn.sigfd < 0 || kn_d_watch(kn_dmn.sigfd, on_signal, NULL) < 0) {
        kn_error("signalfd: %m");
        return KNIT_ERR_IO;
    }
    if (kn_d_protection_init() < 0)
        return KNIT_ERR_IO;
    return KNIT_OK;
}

const kn_d_geo_t *kn_d_geo(void)
{
    return &kn_dmn.g;
}

knit_status_t kn_d_put(const char *key, const void *val, size_t len)
{
    return kn_boot_put(kn_dmn.boot, key, val, len);
}

static void *net_main(void *arg)
{
    (void)arg;
    kn_tl_t *tl = NULL;
    unsigned char *mask = calloc((size_t)kn_dmn.nids, 1);
    knit_status_t st = KNIT_ERR_NOMEM;
    if (!mask)
        goto out;
    /* The network is opened when the job first loads a module: an agent
     * starts when one of its ranks loads, and says so in the store; the
     * switch waits for that word (asleep in the store's get).  A job that
     * never loads a module never pays for it. */
    char word[8];
    size_t wl;
    /* These waits end when ranks reach their first load, at the
     * application's pace: no time limit (a process that dies ends the
     * job through knitrun instead). */
    if (kn_dmn.g.is_switch)
        st = kn_boot_wait(kn_dmn.boot, "knit.off.start", word, sizeof(word), &wl, 0);
    else
        st = kn_boot_put(kn_dmn.boot, "knit.off.start", "1", 1);
    if (st != KNIT_OK)
        goto out;
    for (int i = 0; i < kn_dmn.nids; i++)
        mask[i] = i != kn_dmn.g.self;
    kn_net_params_t np = {
        .rank = kn_dmn.g.self, .size = kn_dmn.nids, .peers = mask,
        .provider = kn_cfg.net_provider, .iface = kn_cfg.net_iface,
        .credits = (unsigned)kn_cfg.net_credits, .bounce_size = kn_cfg.net_bounce_size,
        .tx_bufs = (unsigned)kn_cfg.net_tx_bufs, .inflight = (unsigned)kn_cfg.net_inflight,
        .rcache_max = kn_cfg.rcache_max, .rcache_verify = kn_cfg.rcache_verify,
        .timeout_ns = kn_cfg.net_timeout, .fatal = net_fatal, .fatal_arg = NULL,
    };
    if ((st = kn_net_open(&np, on_packet, NULL, &tl)) != KNIT_OK)
        goto out;
    char name[256], key[64];
    size_t len = sizeof(name);
    if ((st = kn_net_name(tl, name, &len)) != KNIT_OK)
        goto out;
    snprintf(key, sizeof(key), "knit.off.net.%d", kn_dmn.g.self);
    if ((st = kn_boot_put(kn_dmn.boot, key, name, len)) != KNIT_OK)
        goto out;
    for (int i = 0; i < kn_dmn.nids; i++) {
        if (!mask[i])
            continue;
        snprintf(key, sizeof(key), "knit.off.net.%d", i);
        if ((st = kn_boot_wait(kn_dmn.boot, key, name, sizeof(name), &len, 0)) != KNIT_OK) {
            kn_error("network address of daemon %d: %s", i, knit_strerror(st));
            goto out;
        }
        if ((st = kn_net_connect(tl, i, name, len)) != KNIT_OK)
            goto out;
    }
out:
    free(mask);
    kn_dmn.net_tl = tl;
    kn_dmn.net_status = st;
    uint64_t one = 1;
    if (write(kn_dmn.net_ready_fd, &one, sizeof(one)) < 0)
        kn_error("net ready: %m");
    return NULL;
}

static void on_net_ready(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    uint64_t v;
    if (read(fd, &v, sizeof(v)) < 0)
        return;
    pthread_join(kn_dmn.net_thread, NULL);
    kn_d_unwatch(fd);
    close(fd);
    if (kn_dmn.net_status != KNIT_OK) {
        kn_error("network between daemons: %s", knit_strerror(kn_dmn.net_status));
        exit(1);
    }
    kn_dmn.tl = kn_dmn.net_tl;
    if (!kn_dmn.tl->ops->arm)
        kn_info("the network has no wait fd: polling it every millisecond when idle");
    kn_debug("network between daemons up");
}

knit_status_t kn_d_net_start(void)
{
    if (kn_dmn.net_started)
        return KNIT_OK;
    /* An agent loads libfabric here, on the thread that runs module code,
     * before any does: the fault handlers its libraries' constructors
     * install come and go (src/net/fabric_dl.c) while no handler of a
     * module can fault.  (The switch starts its network at start-up, in
     * the background: its modules arrive over that network, later; and
     * libinfinipath's constructor takes 200 ms.) */
    if (!kn_dmn.g.is_switch) {
        const char *why = kn_net_fabric_load();
        if (why)
            kn_debug("%s", why); /* the thread says so, as before */
    }
    kn_dmn.net_ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (kn_dmn.net_ready_fd < 0 || kn_d_watch(kn_dmn.net_ready_fd, on_net_ready, NULL) < 0) {
        kn_error("eventfd: %m");
        return KNIT_ERR_IO;
    }
    /* the thread takes no signal: SIGALRM is the module budget's, of the main thread */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&kn_dmn.net_thread, NULL, net_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        kn_error("pthread_create: %s", strerror(rc));
        return KNIT_ERR_IO;
    }
    kn_dmn.net_started = 1;
    return KNIT_OK;
}

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ., .., and our own handle */
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int n = 0, c;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

void kn_d_info(uint64_t out[8])
{
    memset(out, 0, 8 * sizeof(uint64_t));
    out[0] = (uint64_t)count_dir("/proc/self/fd");
    out[1] = (uint64_t)count_lines("/proc/self/maps");
    out[2] = (uint64_t)kn_dmn.ninst;
    out[3] = kn_dmn.open_reqs;
    out[4] = kn_dmn.alloc_bytes + kn_sbx_alloc_bytes();
    out[5] = (uint64_t)kn_dmn.g.self;
    out[6] = (uint64_t)getpid();
    struct mallinfo2 mi = mallinfo2();
    out[7] = mi.uordblks + mi.hblkhd;
}
