/*
 * knit-agent: one per node, the programmable "network interface".  It owns
 * the node's command queue (src/offload/offload.h has the layout and the
 * doorbell protocol), reads and writes rank memory by cross-memory attach,
 * counts the traffic that crosses the host <-> agent boundary, and hosts
 * module instances through the daemon core (src/offload/daemon.c).
 *
 * Ranks connect to an abstract Unix socket (no file), present the job
 * cookie and their rank; the socket's peer credentials must name the pid
 * they claim.  Every queue entry is copied out of shared memory before it
 * is checked, so a rank cannot change it between check and use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "offload/daemon.h"
#include "offload/wire.h"
#include "offload/offload.h"
#include "shm/peerheap.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/list.h"
#include "util/log.h"
#include "util/shmfile.h"

typedef struct posted {
    kn_list_t link;
    uint32_t mod;
    uint64_t addr, cap;
} posted_t;

typedef struct waiter {
    kn_list_t link;
    int slot;
    uint64_t id, key;   /* key: load seq, or module id */
} waiter_t;

typedef struct overflow {
    kn_list_t link;
    kn_off_cqe_t e;
} overflow_t;

typedef struct rconn {
    int fd;          /* socket, -1: slot free */
    int evfd;        /* the rank's doorbell */
    int32_t rank;
    pid_t pid;
    kn_peer_heap_t heap;  /* its shared heap, mapped at first use */
    int heap_fd;          /* the memfd's number in the rank, and the heap's range there */
    uint64_t heap_base, heap_size;
    kn_list_t posted;
    kn_list_t overflow;
} rconn_t;

typedef struct lres {
    int valid;
    uint64_t seq;
    int32_t status;
    uint32_t id;
    int joined;
    char msg[KN_OFF_ERR_MAX];
} lres_t;

static struct {
    const kn_d_geo_t *g;
    kn_off_seg_t *seg;
    size_t seg_size;
    int seg_fd, lsock, doorbell;
    rconn_t *r;
    kn_list_t joins, unloads;
    lres_t lres[16];
    char *buf;
    size_t buf_cap;
    char modname[KN_OFF_MOD_SLOTS][KNIT_MOD_NAME_MAX];
} A;

/* ------------------------------------------------------------ completions */

static kn_off_traffic_t *traffic(int slot, int mslot)
{
    return mslot >= 0 ? &A.seg->slot[slot].mod[mslot] : NULL;
}

static void count(int slot, int mslot, int kind, uint64_t bytes)
{
    kn_off_traffic_t *t[2] = {&A.seg->slot[slot].total, traffic(slot, mslot)};
    for (int i = 0; i < 2; i++) {
        if (!t[i])
            continue;
        uint64_t *c = &t[i]->sq_ops + 2 * kind;
        __atomic_store_n(&c[0], c[0] + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&c[1], c[1] + bytes, __ATOMIC_RELAXED);
    }
}
enum { T_SQ, T_CQ, T_RD, T_WR };

static int push_cqe(int slot, const kn_off_cqe_t *e)
{
    kn_off_slot_t *s = &A.seg->slot[slot];
    uint32_t tail = s->cq_tail, head = __atomic_load_n(&s->cq_head, __ATOMIC_ACQUIRE);
    if (tail - head >= KN_OFF_ENTRIES)
        return 0;
    memcpy(&s->cq[tail % KN_OFF_ENTRIES], e, offsetof(kn_off_cqe_t, data) + e->inl);
    __atomic_store_n(&s->cq_tail, tail + 1, __ATOMIC_RELEASE);
    return 1;
}

static void ring_rank(int slot)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&A.seg->slot[slot].rank_sleeping, __ATOMIC_RELAXED)) {
        uint64_t one = 1;
        if (write(A.r[slot].evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            kn_debug("waking rank %d: %m", A.r[slot].rank);
    }
}

static void post_cqe(int slot, kn_off_cqe_t *e, int mslot)
{
    rconn_t *c = &A.r[slot];
    if (slot < 0 || c->fd < 0)
        return; /* the rank is gone */
    e->version = KN_OFF_VERSION;
    count(slot, mslot, T_CQ, offsetof(kn_off_cqe_t, data) + e->inl);
    if (!kn_list_empty(&c->overflow) || !push_cqe(slot, e)) {
        overflow_t *o = malloc(sizeof(*o));
        if (!o) {
            kn_error("out of memory: completion for rank %d lost", c->rank);
            return;
        }
        o->e = *e;
        kn_list_push_back(&c->overflow, &o->link);
        return;
    }
    ring_rank(slot);
}

static int flush_overflow(int slot)
{
    rconn_t *c = &A.r[slot];
    int n = 0;
    while (!kn_list_empty(&c->overflow)) {
        overflow_t *o = kn_list_first(&c->overflow, overflow_t, link);
        if (!push_cqe(slot, &o->e))
            break;
        kn_list_del(&o->link);
        free(o);
        n++;
    }
    if (n)
        ring_rank(slot);
    return n;
}

static void hook_complete(kn_dreq_t *r, int32_t status, const void *res, uint64_t len)
{
    if (r->slot < 0)
        return;
    kn_off_cqe_t e = {.op = KN_CQ_DONE, .status = status, .id = r->rank_id, .len = len};
    int mslot = r->inst ? kn_d_inst_slot(r->inst) : -1;
    e.mod = r->inst ? (uint32_t)mslot : 0;
    if (len <= KN_OFF_INLINE || r->token == 0) {
        e.inl = (uint32_t)KN_MIN(len, KN_OFF_INLINE);
        e.len = e.inl;
        if (e.inl)
            memcpy(e.data, res, e.inl);
    } else {
        void *copy = malloc(len);
        if (!copy) {
            e.status = KNIT_ERR_NOMEM;
            e.len = 0;
        } else {
            memcpy(copy, res, len);
            r->result = copy;
            r->rlen = len;
            r->held = 1;
            r->mslot = mslot;
            e.flags = KN_CQ_F_BIG;
            e.aux = r->token;
        }
    }
    post_cqe(r->slot, &e, mslot);
}

static void complete_joins(lres_t *l)
{
    kn_list_t *p, *t;
    kn_list_for_each_safe(p, t, &A.joins) {
        waiter_t *w = kn_list_entry(p, waiter_t, link);
        if (w->key != l->seq)
            continue;
        kn_off_cqe_t e = {.op = KN_CQ_LOADED, .status = l->status, .id = w->id, .aux = l->id};
        e.inl = (uint32_t)strlen(l->msg) + 1;
        memcpy(e.data, l->msg, e.inl);
        e.len = e.inl;
        post_cqe(w->slot, &e, -1);
        kn_list_del(&w->link);
        free(w);
        if (++l->joined >= A.g->local_size)
            l->valid = 0;
    }
}

static void hook_loaded(uint64_t seq, int32_t status, uint32_t id, const char *msg)
{
    lres_t *l = &A.lres[seq % KN_ARRAY_SIZE(A.lres)];
    *l = (lres_t){.valid = 1, .seq = seq, .status = status, .id = id};
    snprintf(l->msg, sizeof(l->msg), "%s", msg ? msg : "");
    if (status == KNIT_OK) {
        kn_inst_t *in = kn_d_inst(id);
        if (in) {
            int ms = kn_d_inst_slot(in);
            snprintf(A.modname[ms], sizeof(A.modname[ms]), "%s", kn_d_inst_name(in));
            for (int s = 0; s < A.g->local_size; s++) /* fresh counters for the module */
                memset(&A.seg->slot[s].mod[ms], 0, sizeof(kn_off_traffic_t));
        }
    }
    complete_joins(l);
}

static void hook_unloaded(uint32_t id)
{
    kn_list_t *p, *t;
    kn_list_for_each_safe(p, t, &A.unloads) {
        waiter_t *w = kn_list_entry(p, waiter_t, link);
        if (w->key != id)
            continue;
        kn_off_cqe_t e = {.op = KN_CQ_UNLOADED, .id = w->id};
        post_cqe(w->slot, &e, -1);
        kn_list_del(&w->link);
        free(w);
    }
    /* buffers posted for it are forgotten */
    for (int s = 0; s < A.g->local_size; s++) {
        kn_list_for_each_safe(p, t, &A.r[s].posted) {
            posted_t *b = kn_list_entry(p, posted_t, link);
            if (b->mod == id) {
                kn_list_del(&b->link);
                free(b);
            }
        }
    }
}

/* ------------------------------------------------------------ rank memory */

static int local_slot(int32_t rank)
{
    int s = rank - A.g->first_local;
    return s >= 0 && s < A.g->local_size && A.r[s].fd >= 0 ? s : -1;
}

static int32_t cma(int slot, int write, void *local, uint64_t addr, uint64_t len, int mslot)
{
    rconn_t *c = &A.r[slot];
    /* a block of the rank's shared heap: memcpy through our mapping of it */
    char *mapped = len ? kn_peer_heap_reach(&c->heap, c->pid, c->heap_fd, c->heap_base, c->heap_size, addr, len)
                       : NULL;
    if (mapped) {
        if (write)
            memcpy(mapped, local, len);
        else
            memcpy(local, mapped, len);
        count(slot, mslot, write ? T_WR : T_RD, len);
        return KNIT_OK;
    }
    uint64_t done = 0;
    while (done < len) {
        struct iovec l = {.iov_base = (char *)local + done, .iov_len = len - done};
        struct iovec r = {.iov_base = (void *)(uintptr_t)(addr + done), .iov_len = len - done};
        ssize_t n = write ? process_vm_writev(A.r[slot].pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(A.r[slot].pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            kn_debug("%s of %llu bytes at %#llx in rank %d: %m", write ? "write" : "read",
                     (unsigned long long)len, (unsigned long long)addr, A.r[slot].rank);
            return errno == ESRCH ? KNIT_ERR_PEER : KNIT_ERR_RANGE;
        }
        done += (uint64_t)n;
    }
    count(slot, mslot, write ? T_WR : T_RD, len);
    return KNIT_OK;
}

static int32_t hook_read(kn_inst_t *in, int32_t rank, void *dst, uint64_t addr, uint64_t len)
{
    int s = local_slot(rank);
    if (s < 0)
        return KNIT_ERR_RANGE;
    if (len && !dst)
        return KNIT_ERR_INVAL;
    return cma(s, 0, dst, addr, len, kn_d_inst_slot(in));
}

static int32_t hook_write(kn_inst_t *in, int32_t rank, uint64_t addr, const void *src, uint64_t len)
{
    int s = local_slot(rank);
    if (s < 0)
        return KNIT_ERR_RANGE;
    if (len && !src)
        return KNIT_ERR_INVAL;
    return cma(s, 1, (void *)src, addr, len, kn_d_inst_slot(in));
}

static void *hook_map_rank(kn_inst_t *in, int32_t rank, uint64_t addr, uint64_t len)
{
    (void)in;
    int s = local_slot(rank);
    if (s < 0 || !len)
        return NULL;
    rconn_t *c = &A.r[s];
    return kn_peer_heap_reach(&c->heap, c->pid, c->heap_fd, c->heap_base, c->heap_size, addr, len);
}

static int32_t hook_deliver(kn_inst_t *in, int32_t rank, const void *data, uint64_t len)
{
    int s = local_slot(rank);
    if (s < 0)
        return KNIT_ERR_RANGE;
    kn_list_t *p;
    kn_list_for_each(p, &A.r[s].posted) {
        posted_t *b = kn_list_entry(p, posted_t, link);
        if (kn_d_inst(b->mod) != in)
            continue;
        uint64_t n = KN_MIN(len, b->cap);
        int mslot = kn_d_inst_slot(in);
        int32_t st = cma(s, 1, (void *)data, b->addr, n, mslot);
        if (st != KNIT_OK)
            return st;
        kn_off_cqe_t e = {.op = KN_CQ_DELIVER, .status = n < len ? KNIT_ERR_TRUNCATE : KNIT_OK,
                          .len = n, .aux = b->addr, .mod = b->mod};
        kn_list_del(&b->link);
        free(b);
        post_cqe(s, &e, mslot);
        return n < len ? KNIT_ERR_TRUNCATE : KNIT_OK;
    }
    return KNIT_ERR_NOT_FOUND;
}

/* ------------------------------------------------------------ queue */

static void *scratch(uint64_t len)
{
    if (len > A.buf_cap) {
        char *b = realloc(A.buf, len);
        if (!b)
            return NULL;
        A.buf = b;
        A.buf_cap = len;
    }
    return A.buf;
}

static void fail_entry(int slot, const kn_off_sqe_t *q, int32_t st, const char *why)
{
    kn_off_cqe_t e = {.op = q->op == KN_SQ_LOAD || q->op == KN_SQ_JOIN ? KN_CQ_LOADED
                            : q->op == KN_SQ_UNLOAD                  ? KN_CQ_UNLOADED
                                                                     : KN_CQ_DONE,
                      .status = st, .id = q->id};
    e.inl = (uint32_t)strlen(why) + 1;
    memcpy(e.data, why, e.inl);
    e.len = e.inl;
    post_cqe(slot, &e, -1);
}

static void add_waiter(kn_list_t *l, int slot, uint64_t id, uint64_t key)
{
    waiter_t *w = malloc(sizeof(*w));
    if (!w) {
        kn_error("out of memory");
        return;
    }
    *w = (waiter_t){.slot = slot, .id = id, .key = key};
    kn_list_push_back(l, &w->link);
}

/* Args of a request: inline, or read from the rank (the DMA engine). */
static const void *entry_bytes(int slot, const kn_off_sqe_t *q, int mslot, int32_t *st)
{
    if (!q->addr) /* kn_off_sqe_read checked the form */
        return q->data;
    void *b = scratch(q->len);
    if (!b) {
        *st = KNIT_ERR_NOMEM;
        return NULL;
    }
    *st = cma(slot, 0, b, q->addr, q->len, mslot);
    return *st == KNIT_OK ? b : NULL;
}

static void process(int slot, const kn_off_sqe_t *q)
{
    int32_t st = KNIT_OK;
    kn_inst_t *in = q->op == KN_SQ_REQUEST || q->op == KN_SQ_POST_RECV ? kn_d_inst(q->mod) : NULL;
    int mslot = in ? kn_d_inst_slot(in) : -1;
    kn_dreq_t *held = q->op == KN_SQ_FETCH ? kn_d_held(q->aux) : NULL;
    if (held)
        mslot = held->mslot;
    count(slot, mslot, T_SQ, offsetof(kn_off_sqe_t, data) + q->inl);
    int32_t rank = A.r[slot].rank;
    switch (q->op) {
    case KN_SQ_REQUEST: {
        if (q->mod == KN_OFF_MOD_BUILTIN && !q->len) {
            kn_d_request_builtin(slot, rank, q->id);
            return;
        }
        const void *args = entry_bytes(slot, q, mslot, &st);
        if (!args) {
            fail_entry(slot, q, st, st == KNIT_ERR_PROTO ? "malformed request entry" : "cannot read the arguments");
            return;
        }
        kn_d_request(q->mod, slot, rank, q->id, args, q->len);
        return;
    }
    case KN_SQ_POST_RECV: {
        if (!in || !q->addr || !q->len) {
            fail_entry(slot, q, in ? KNIT_ERR_PROTO : KNIT_ERR_NOT_FOUND, "bad receive buffer or module");
            return;
        }
        posted_t *b = malloc(sizeof(*b));
        if (!b)
            return;
        *b = (posted_t){.mod = q->mod, .addr = q->addr, .cap = q->len};
        kn_list_push_back(&A.r[slot].posted, &b->link);
        return;
    }
    case KN_SQ_LOAD:
    case KN_SQ_JOIN:
        if (kn_d_net_start() != KNIT_OK) { /* the first load brings the network up */
            fail_entry(slot, q, KNIT_ERR_IO, "the agent cannot start its network");
            return;
        }
        break;
    }
    switch (q->op) {
    case KN_SQ_LOAD: {
        if (rank != 0) {
            fail_entry(slot, q, KNIT_ERR_PROTO, "malformed load entry");
            return;
        }
        if (q->reserved == 1) {
            /* rank 0 could not read the file: every rank gets its reason */
            add_waiter(&A.joins, slot, q->id, q->aux);
            kn_d_load(q->aux, q->flags, (const char *)q->data, NULL, 0);
            return;
        }
        if (q->len > KN_OFF_MSG_MAX) {
            fail_entry(slot, q, KNIT_ERR_RANGE, "module file too large");
            return;
        }
        void *b = scratch(q->len ? q->len : 1);
        if (!b || (st = cma(slot, 0, b, q->addr, q->len, -1)) != KNIT_OK) {
            fail_entry(slot, q, b ? st : KNIT_ERR_NOMEM, "cannot read the module file from rank 0");
            return;
        }
        add_waiter(&A.joins, slot, q->id, q->aux);
        kn_d_load(q->aux, q->flags, (const char *)q->data, b, q->len);
        return;
    }
    case KN_SQ_JOIN: {
        add_waiter(&A.joins, slot, q->id, q->aux);
        lres_t *l = &A.lres[q->aux % KN_ARRAY_SIZE(A.lres)];
        if (l->valid && l->seq == q->aux)
            complete_joins(l);
        return;
    }
    case KN_SQ_UNLOAD:
        add_waiter(&A.unloads, slot, q->id, q->mod);
        kn_d_unload(q->mod, slot);
        return;
    case KN_SQ_FETCH: {
        kn_dreq_t *r = held;
        if (!r || r->slot != slot || q->len < r->rlen || !q->addr) {
            fail_entry(slot, q, KNIT_ERR_PROTO, "bad fetch");
            return;
        }
        kn_off_cqe_t e = {.op = KN_CQ_DONE, .id = q->id, .len = r->rlen};
        e.status = cma(slot, 1, r->result, q->addr, r->rlen, mslot);
        kn_d_release(r);
        post_cqe(slot, &e, mslot);
        return;
    }
    case KN_SQ_INFO: {
        kn_off_cqe_t e = {.op = KN_CQ_INFO, .id = q->id, .inl = 64, .len = 64};
        uint64_t info[8];
        kn_d_info(info);
        memcpy(e.data, info, sizeof(info));
        post_cqe(slot, &e, -1);
        return;
    }
    }
    fail_entry(slot, q, KNIT_ERR_PROTO, "unknown queue entry");
}

static int poll_queues(void)
{
    int n = 0;
    for (int s = 0; s < A.g->local_size; s++) {
        if (A.r[s].fd < 0)
            continue;
        kn_off_slot_t *sl = &A.seg->slot[s];
        if (!kn_list_empty(&A.r[s].overflow))
            n += flush_overflow(s);
        uint32_t head = sl->sq_head, tail = __atomic_load_n(&sl->sq_tail, __ATOMIC_ACQUIRE);
        if (tail - head > KN_OFF_ENTRIES) {
            kn_error("rank %d corrupted its queue (head %u, tail %u): disconnected", A.r[s].rank, head, tail);
            kn_d_unwatch(A.r[s].fd);
            close(A.r[s].fd);
            A.r[s].fd = -1;
            kn_d_rank_gone(s);
            continue;
        }
        for (int k = 0; head != tail && k < 32; k++) {
            kn_off_sqe_t q;
            const char *why;
            knit_status_t st = kn_off_sqe_read(&sl->sq[head % KN_OFF_ENTRIES], &q, &why);
            head++;
            __atomic_store_n(&sl->sq_head, head, __ATOMIC_RELEASE);
            if (st != KNIT_OK) {
                kn_warn("rank %d: malformed queue entry (op %u, version %u): refused", A.r[s].rank, q.op,
                        q.version);
                fail_entry(s, &q, KNIT_ERR_PROTO, why);
            } else {
                process(s, &q);
            }
            n++;
            if (A.r[s].fd < 0)
                break;
        }
    }
    return n;
}

static int want_sleep(void)
{
    __atomic_store_n(&A.seg->agent_sleeping, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int s = 0; s < A.g->local_size; s++) {
        if (A.r[s].fd < 0)
            continue;
        kn_off_slot_t *sl = &A.seg->slot[s];
        if (__atomic_load_n(&sl->sq_tail, __ATOMIC_ACQUIRE) != sl->sq_head || !kn_list_empty(&A.r[s].overflow)) {
            __atomic_store_n(&A.seg->agent_sleeping, 0, __ATOMIC_RELAXED);
            return 0;
        }
    }
    return 1;
}

static void woke(void)
{
    __atomic_store_n(&A.seg->agent_sleeping, 0, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ connections */

static void rank_gone(int slot, const char *why)
{
    rconn_t *c = &A.r[slot];
    kn_debug("rank %d: %s", c->rank, why);
    kn_d_unwatch(c->fd);
    close(c->fd);
    c->fd = -1;
    if (c->evfd >= 0)
        close(c->evfd);
    c->evfd = -1;
    kn_peer_heap_unmap(&c->heap);
    kn_list_t *p, *t;
    kn_list_for_each_safe(p, t, &c->posted) {
        kn_list_del(p);
        free(kn_list_entry(p, posted_t, link));
    }
    kn_list_for_each_safe(p, t, &c->overflow) {
        kn_list_del(p);
        free(kn_list_entry(p, overflow_t, link));
    }
    kn_list_t *lists[2] = {&A.joins, &A.unloads};
    for (int i = 0; i < 2; i++)
        kn_list_for_each_safe(p, t, lists[i]) {
            waiter_t *w = kn_list_entry(p, waiter_t, link);
            if (w->slot == slot) {
                kn_list_del(p);
                free(w);
            }
        }
    kn_d_rank_gone(slot);
}

static void on_rank_sock(int fd, uint32_t ev, void *arg)
{
    int slot = (int)(intptr_t)arg;
    char b[64];
    ssize_t n = read(fd, b, sizeof(b));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || (ev & (EPOLLHUP | EPOLLERR)))
        rank_gone(slot, "disconnected");
}

static void send_reply(int fd, int32_t status, int slot)
{
    kn_off_hello_reply_t rep = {.magic = KN_OFF_MAGIC, .version = KN_OFF_VERSION, .status = status,
                                .slot = slot, .seg_size = A.seg_size};
    struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (status == KNIT_OK) {
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof(u.buf);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
        int fds[2] = {A.doorbell, A.seg_fd};
        memcpy(CMSG_DATA(cm), fds, sizeof(fds));
    }
    if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
        kn_debug("reply to a rank: %m");
}

/* The hello of a new connection (the rank sent it right after connect). */
static void on_new_conn(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    kn_off_hello_t h;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && errno == EAGAIN)
        return;
    kn_d_unwatch(fd);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        /* the rank went away before its hello (stopped with a failed job) */
        kn_debug("a connection closed before its hello");
        close(fd);
        return;
    }
    int evfd = -1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&evfd, CMSG_DATA(cm), sizeof(int));
    const char *why = NULL;
    struct ucred cr;
    socklen_t cl = sizeof(cr);
    int slot = -1;
    if (n != (ssize_t)sizeof(h) || h.magic != KN_OFF_MAGIC || h.version != KN_OFF_VERSION)
        why = "malformed hello";
    else if (evfd < 0)
        why = "no doorbell";
    else if (memchr(h.cookie, 0, sizeof(h.cookie)) == NULL || strcmp(h.cookie, A.g->cookie))
        why = "wrong job cookie";
    else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.pid != h.pid || cr.uid != getuid())
        why = "credentials do not match";
    else if ((slot = h.rank - A.g->first_local) < 0 || slot >= A.g->local_size)
        why = "rank not on this node";
    else if (A.r[slot].fd >= 0)
        why = "rank already connected";
    if (why) {
        kn_warn("refused a connection: %s", why);
        send_reply(fd, KNIT_ERR_AUTH, -1);
        close(fd);
        if (evfd >= 0)
            close(evfd);
        return;
    }
    rconn_t *c = &A.r[slot];
    kn_off_slot_t *sl = &A.seg->slot[slot];
    /* a fresh slot: rings empty, counters kept (per rank for the job) */
    sl->sq_head = sl->sq_tail = 0;
    sl->cq_head = sl->cq_tail = 0;
    sl->rank_sleeping = 0;
    sl->pid = h.pid;
    c->fd = fd;
    c->evfd = evfd;
    c->rank = h.rank;
    c->pid = h.pid;
    memset(&c->heap, 0, sizeof(c->heap));
    c->heap_base = h.heap_base;
    c->heap_size = h.heap_fd >= 0 ? h.heap_size : 0;
    c->heap_fd = h.heap_fd;
    send_reply(fd, KNIT_OK, slot);
    kn_d_watch(fd, on_rank_sock, (void *)(intptr_t)slot);
}

static void on_listen(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    for (;;) {
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0) {
            if (errno != EAGAIN && errno != EINTR)
                kn_warn("accept: %m");
            return;
        }
        if (kn_d_watch(c, on_new_conn, NULL) < 0)
            close(c);
    }
}

static void on_doorbell(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    uint64_t v;
    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        kn_warn("doorbell: %m");
}

/* ------------------------------------------------------------ report */

static void report_line(const char *who, const kn_off_traffic_t *t)
{
    char a[4][32];
    kn_fmt_bytes(t->sq_bytes, a[0], 32);
    kn_fmt_bytes(t->cq_bytes, a[1], 32);
    kn_fmt_bytes(t->rd_bytes, a[2], 32);
    kn_fmt_bytes(t->wr_bytes, a[3], 32);
    fprintf(stderr,
            "knit[agent %d] stats: %-18s queue in %llu ops %s, out %llu ops %s; agent reads %llu ops %s, "
            "writes %llu ops %s\n",
            A.g->self, who, (unsigned long long)t->sq_ops, a[0], (unsigned long long)t->cq_ops, a[1],
            (unsigned long long)t->rd_ops, a[2], (unsigned long long)t->wr_ops, a[3]);
}

static void at_exit(void)
{
    if (!kn_cfg.stats)
        return;
    for (int s = 0; s < A.g->local_size; s++) {
        char who[64];
        snprintf(who, sizeof(who), "rank %d", A.g->first_local + s);
        report_line(who, &A.seg->slot[s].total);
        for (unsigned m = 0; m < KN_OFF_MOD_SLOTS; m++) {
            const kn_off_traffic_t *t = &A.seg->slot[s].mod[m];
            if (!t->sq_ops && !t->cq_ops && !t->rd_ops && !t->wr_ops)
                continue;
            snprintf(who, sizeof(who), "rank %d %s", A.g->first_local + s, A.modname[m]);
            report_line(who, t);
        }
    }
}

/* ------------------------------------------------------------ start */

static const kn_d_hooks_t hooks = {
    .poll = poll_queues,
    .want_sleep = want_sleep,
    .woke = woke,
    .complete = hook_complete,
    .loaded = hook_loaded,
    .unloaded = hook_unloaded,
    .read_rank = hook_read,
    .write_rank = hook_write,
    .deliver = hook_deliver,
    .map_rank = hook_map_rank,
    .at_exit = at_exit,
};

static int queue_start(void)
{
    char name[128];
    kn_off_seg_name(name, sizeof(name), A.g->jobid, A.g->self);
    A.seg_size = kn_off_seg_size((unsigned)A.g->local_size);
    A.seg_fd = kn_shm_file_create(name, A.seg_size, A.seg_size, O_CLOEXEC);
    if (A.seg_fd < 0) {
        kn_error("agent segment %s of %zu bytes in /dev/shm: %m", name, A.seg_size);
        return -1;
    }
    A.seg = mmap(NULL, A.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, A.seg_fd, 0);
    if (A.seg == MAP_FAILED) {
        kn_error("mmap %s: %m", name);
        return -1;
    }
    A.seg->magic = KN_OFF_MAGIC;
    A.seg->version = KN_OFF_VERSION;
    A.seg->nslots = (uint32_t)A.g->local_size;
    A.seg->entries = KN_OFF_ENTRIES;
    A.seg->size = A.seg_size;
    A.seg->node = A.g->self;
    A.seg->agent_pid = getpid();
    A.seg->first_rank = A.g->first_local;
    A.r = calloc((size_t)A.g->local_size, sizeof(*A.r));
    if (!A.r)
        return -1;
    for (int s = 0; s < A.g->local_size; s++) {
        A.r[s].fd = A.r[s].evfd = -1;
        kn_list_init(&A.r[s].posted);
        kn_list_init(&A.r[s].overflow);
    }
    kn_list_init(&A.joins);
    kn_list_init(&A.unloads);
    A.doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (A.doorbell < 0 || kn_d_watch(A.doorbell, on_doorbell, NULL) < 0) {
        kn_error("eventfd: %m");
        return -1;
    }
    A.lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    kn_off_sock_name(un.sun_path + 1, sizeof(un.sun_path) - 1, A.g->jobid, A.g->self);
    socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(un.sun_path + 1));
    if (A.lsock < 0 || bind(A.lsock, (struct sockaddr *)&un, sl) < 0 || listen(A.lsock, 256) < 0 ||
        kn_d_watch(A.lsock, on_listen, NULL) < 0) {
        kn_error("agent socket @%s: %m", un.sun_path + 1);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (kn_d_start(0, &hooks) != KNIT_OK)
        return 1;
    A.g = kn_d_geo();
    if (queue_start() < 0)
        return 1;
    char key[64];
    snprintf(key, sizeof(key), "knit.agent.%d", A.g->self);
    if (kn_d_put(key, "1", 1) != KNIT_OK) {
        kn_error("cannot publish the agent's queue");
        return 1;
    }
    kn_info("serving %d ranks", A.g->local_size);
    return kn_d_run();
}
