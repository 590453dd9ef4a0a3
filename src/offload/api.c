/*
 * The ranks' side of offload: connection to the node's agent, the command
 * queue client (submit, doorbell, completions, sleeping), the public
 * knit_module_* calls, and the host-placement wrapper (host.c).
 *
 * One process, one context (knit_init), one thread: the client is a
 * single static object.  Operations that produce a completion (requests,
 * loads, unloads, posted buffers) are counted; at most KN_OFF_ENTRIES are
 * outstanding, so the agent's completion ring for us never overflows.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "boot/boot.h"
#include "offload/host.h"
#include "offload/offload.h"
#include "p2p/p2p.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/env.h"
#include "util/heap.h"
#include "util/log.h"
#include "util/time.h"

#define OPS_TAB 128

enum { OP_REQ = 1, OP_LOAD, OP_UNLOAD, OP_INFO };

static struct {
    int open;
    kn_off_params_t p;
    int *node_first;
    int sock, evfd, doorbell;
    int replied, agent_dead;
    kn_off_seg_t *seg;
    kn_off_slot_t *slot;
    size_t seg_size;
    uint64_t next_seq;
    uint64_t load_seq;
    unsigned outstanding;
    unsigned spin_count;   /* polls before yielding, while waiting on the agent */
    unsigned spin_crowded; /* the same once a module process may need a cpu */
    uint64_t yield_ns;     /* and how long to yield before sleeping */
    knit_mreq_t *ops[OPS_TAB];
    kn_list_t modules;
    char last_error[KN_OFF_ERR_MAX + 64];
} C = {.sock = -1, .evfd = -1, .doorbell = -1};

typedef struct posted {
    kn_list_t link;
    void *buf;
    size_t cap, got;
    knit_status_t status;
} posted_t;

static void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(C.last_error, sizeof(C.last_error), fmt, ap);
    va_end(ap);
}

void kn_off_set_error(const char *msg)
{
    set_error("%s", msg);
}

/* ------------------------------------------------------------ ops */

static knit_mreq_t *op_new(knit_module_t *mod, int kind)
{
    knit_mreq_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->mod = mod;
    r->kind = kind;
    return r;
}

static int op_register(knit_mreq_t *r)
{
    for (unsigned i = 0; i < OPS_TAB; i++) {
        unsigned s = (unsigned)(C.next_seq + i) % OPS_TAB;
        if (!C.ops[s]) {
            C.next_seq += i + 1;
            r->id = (C.next_seq << 8) | s;
            C.ops[s] = r;
            return 0;
        }
    }
    return -1;
}

static knit_mreq_t *op_find(uint64_t id)
{
    knit_mreq_t *r = C.ops[(id & 0xff) % OPS_TAB];
    return r && r->id == id ? r : NULL;
}

static void op_unregister(knit_mreq_t *r)
{
    if (r->id && C.ops[(r->id & 0xff) % OPS_TAB] == r)
        C.ops[(r->id & 0xff) % OPS_TAB] = NULL;
    r->id = 0;
}

static void op_free(knit_mreq_t *r)
{
    op_unregister(r);
    free(r->big);
    free(r);
}

/* ------------------------------------------------------------ queue */

static void agent_gone(void)
{
    if (C.agent_dead)
        return;
    C.agent_dead = 1;
    kn_error("lost the connection to the agent of node %d", C.p.node);
    set_error("the agent of node %d is gone", C.p.node);
    for (unsigned i = 0; i < OPS_TAB; i++) {
        knit_mreq_t *r = C.ops[i];
        if (r && !r->done) {
            r->done = 1;
            r->status = KNIT_ERR_PEER;
        }
    }
}

/* The agent's reply to our hello: its doorbell and the segment. */
static knit_status_t finish_connect(void)
{
    if (C.replied)
        return C.seg ? KNIT_OK : KNIT_ERR_PEER;
    kn_off_hello_reply_t rep;
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct pollfd pfd = {.fd = C.sock, .events = POLLIN};
    uint64_t limit = kn_cfg.boot_timeout ? kn_cfg.boot_timeout : UINT64_MAX;
    uint64_t t0 = kn_time_ns();
    for (;;) {
        int n = poll(&pfd, 1, 1000);
        if (n > 0)
            break;
        if (n < 0 && errno != EINTR)
            return KNIT_ERR_IO;
        if (kn_time_ns() - t0 > limit) {
            kn_error("the agent of node %d did not answer", C.p.node);
            return KNIT_ERR_TIMEOUT;
        }
    }
    C.replied = 1;
    ssize_t n = recvmsg(C.sock, &mh, MSG_CMSG_CLOEXEC);
    int fds[2] = {-1, -1};
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
            cm->cmsg_len == CMSG_LEN(2 * sizeof(int)))
            memcpy(fds, CMSG_DATA(cm), sizeof(fds));
    knit_status_t st = KNIT_OK;
    if (n != (ssize_t)sizeof(rep) || rep.magic != KN_OFF_MAGIC || rep.version != KN_OFF_VERSION) {
        kn_error("malformed answer from the agent of node %d", C.p.node);
        st = KNIT_ERR_PROTO;
    } else if (rep.status != KNIT_OK) {
        kn_error("the agent of node %d refused this rank: %s", C.p.node, knit_strerror(rep.status));
        st = rep.status;
    } else if (fds[0] < 0 || fds[1] < 0 || rep.slot != C.p.local_rank ||
               rep.seg_size != kn_off_seg_size((unsigned)C.p.local_size)) {
        kn_error("inconsistent answer from the agent of node %d", C.p.node);
        st = KNIT_ERR_PROTO;
    } else {
        void *m = mmap(NULL, rep.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
        if (m == MAP_FAILED) {
            kn_error("mapping the agent's queue: %m");
            st = KNIT_ERR_IO;
        } else {
            C.seg = m;
            C.seg_size = rep.seg_size;
            if (C.seg->magic != KN_OFF_MAGIC || C.seg->nslots != (uint32_t)C.p.local_size) {
                kn_error("the agent's queue segment is not what it should be");
                st = KNIT_ERR_PROTO;
            } else {
                C.slot = &C.seg->slot[C.p.local_rank];
                C.doorbell = fds[0];
                fds[0] = -1;
            }
        }
    }
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    if (st != KNIT_OK && C.seg) {
        munmap(C.seg, C.seg_size);
        C.seg = NULL;
    }
    return st;
}

static int drain(void);

static int agent_usable(void)
{
    if (!C.p.agent) {
        set_error("no agent: this job runs without offload daemons (a singleton, or knitrun --no-offload)");
        return 0;
    }
    if (C.agent_dead || finish_connect() != KNIT_OK) {
        set_error("the agent of node %d is not reachable", C.p.node);
        return 0;
    }
    return 1;
}

static void check_socket(void)
{
    struct pollfd pfd = {.fd = C.sock, .events = POLLIN};
    if (poll(&pfd, 1, 0) > 0) {
        char b[16];
        ssize_t n = recv(C.sock, b, sizeof(b), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            agent_gone();
    }
}

/* Before a sleep (this one's, or the point-to-point engine's: its sleep
 * hook): announce it, so that the agent rings after its next completion,
 * and wait on the ring and on the socket too.  -1: a completion came in
 * meanwhile (no sleep). */
static int sleep_arm(void *arg, int *fds, int max)
{
    (void)arg;
    if (!C.slot || C.agent_dead || max < 2)
        return 0;
    __atomic_store_n(&C.slot->rank_sleeping, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&C.slot->cq_tail, __ATOMIC_ACQUIRE) != C.slot->cq_head) {
        __atomic_store_n(&C.slot->rank_sleeping, 0, __ATOMIC_RELAXED);
        return -1;
    }
    fds[0] = C.evfd;
    fds[1] = C.sock;
    return 2;
}

/* While requests are out at the agent, the engine's waits poll as this
 * layer's do (wait_round). */
static unsigned sleep_spin(void *arg)
{
    (void)arg;
    return C.outstanding ? (kn_list_empty(&C.modules) ? C.spin_count : C.spin_crowded) : 0;
}

static void sleep_disarm(void *arg)
{
    (void)arg;
    __atomic_store_n(&C.slot->rank_sleeping, 0, __ATOMIC_RELAXED);
    uint64_t v;
    if (read(C.evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        kn_debug("eventfd read: %m");
    check_socket();
}

/* Sleep until the agent rings (or its socket ends); returns at once if a
 * completion came in meanwhile.  Point-to-point traffic wakes it too. */
static void sleep_on_agent(void)
{
    if (C.p.p2p) { /* its sleep hook is ours */
        kn_p2p_sleep(C.p.p2p, NULL, 0, KN_NSEC_PER_SEC);
        return;
    }
    int fds[2];
    if (sleep_arm(NULL, fds, 2) <= 0)
        return;
    struct pollfd pfd[2] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLIN}};
    (void)poll(pfd, 2, 1000);
    sleep_disarm(NULL);
}

/* Point-to-point and collectives move on while a rank waits on a module
 * (a module may well wait for what this rank owes its peers). */
static int p2p_progress(void)
{
    return C.p.p2p ? kn_p2p_progress(C.p.p2p) : 0;
}

/* A wait on the agent: polls so far, and when it started yielding. */
typedef struct wait_state {
    unsigned spins;
    uint64_t yield_since;
} wait_t;

/* One round of waiting, with the point-to-point engine's policy: progress;
 * poll (where the node has a cpu for every rank and the agent), then yield
 * for KNIT_YIELD_TIME, so that a process on this cpu the answer needs
 * (the agent, its module process) runs at once, then sleep until the
 * agent rings. */
static void wait_round(wait_t *w)
{
    if (drain())
        return;
    if (C.agent_dead)
        return;
    if (p2p_progress()) {
        w->spins = 0;
        w->yield_since = 0;
        return;
    }
    if (++w->spins < (kn_list_empty(&C.modules) ? C.spin_count : C.spin_crowded)) {
        kn_cpu_relax();
        return;
    }
    uint64_t now = kn_time_ns();
    if (!w->yield_since)
        w->yield_since = now;
    if (now - w->yield_since < C.yield_ns) {
        sched_yield();
        return;
    }
    sleep_on_agent();
}

static knit_status_t submit(kn_off_sqe_t *e, int completes)
{
    wait_t w = {0};
    while (completes && C.outstanding >= KN_OFF_ENTRIES) {
        if (C.agent_dead)
            return KNIT_ERR_PEER;
        wait_round(&w);
    }
    unsigned spins = 0;
    for (;;) {
        uint32_t tail = C.slot->sq_tail;
        if (tail - __atomic_load_n(&C.slot->sq_head, __ATOMIC_ACQUIRE) < KN_OFF_ENTRIES) {
            e->version = KN_OFF_VERSION;
            memcpy(&C.slot->sq[tail % KN_OFF_ENTRIES], e, offsetof(kn_off_sqe_t, data) + e->inl);
            __atomic_store_n(&C.slot->sq_tail, tail + 1, __ATOMIC_RELEASE);
            break;
        }
        if (C.agent_dead)
            return KNIT_ERR_PEER;
        drain();
        check_socket();
        if (++spins > 64)
            sched_yield();
    }
    C.outstanding += completes;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&C.seg->agent_sleeping, __ATOMIC_RELAXED)) {
        uint64_t one = 1;
        if (write(C.doorbell, &one, sizeof(one)) < 0 && errno != EAGAIN)
            kn_debug("ringing the agent: %m");
    }
    return KNIT_OK;
}

static knit_module_t *module_by_slot(uint32_t mslot, uint32_t id)
{
    kn_list_t *e;
    kn_list_for_each(e, &C.modules) {
        knit_module_t *m = kn_list_entry(e, knit_module_t, link);
        if (m->where != KNIT_MODULE_HOST && (id ? m->id == id : m->id % KN_OFF_MOD_SLOTS == mslot))
            return m;
    }
    return NULL;
}

static void on_cqe(const kn_off_cqe_t *e)
{
    if (e->version != KN_OFF_VERSION || e->inl > KN_OFF_INLINE) {
        kn_warn("malformed completion from the agent (op %u): ignored", e->op);
        return;
    }
    if (e->op == KN_CQ_DELIVER) {
        knit_module_t *m = module_by_slot(0, e->mod);
        if (!m)
            return;
        kn_list_t *p;
        kn_list_for_each(p, &m->posted) {
            posted_t *b = kn_list_entry(p, posted_t, link);
            if ((uint64_t)(uintptr_t)b->buf == e->aux) {
                b->got = (size_t)KN_MIN(e->len, b->cap);
                b->status = e->status;
                kn_list_del(&b->link);
                kn_list_push_back(&m->delivered, &b->link);
                C.outstanding--;
                return;
            }
        }
        return;
    }
    knit_mreq_t *r = op_find(e->id);
    if (!r || r->done) {
        kn_debug("completion for no open operation (op %u): ignored", e->op);
        return;
    }
    if (e->op == KN_CQ_DONE && (e->flags & KN_CQ_F_BIG) && !r->fetching) {
        if (e->len > KN_OFF_MSG_MAX || !(r->big = malloc(e->len ? e->len : 1))) {
            r->done = 1;
            r->status = KNIT_ERR_NOMEM;
            C.outstanding--;
            return;
        }
        r->fetching = 1;
        r->len = e->len;
        kn_off_sqe_t q = {.op = KN_SQ_FETCH, .id = r->id, .aux = e->aux,
                          .addr = (uint64_t)(uintptr_t)r->big, .len = e->len};
        /* the FETCH replaces this completion: outstanding stays */
        if (submit(&q, 0) != KNIT_OK) {
            r->done = 1;
            r->status = KNIT_ERR_PEER;
            C.outstanding--;
        }
        return;
    }
    r->status = e->status;
    r->aux = e->aux;
    if (!r->fetching) {
        r->len = e->len;
        r->inl_len = e->inl;
        memcpy(r->inl, e->data, e->inl);
    }
    r->done = 1;
    C.outstanding--;
    if (r->status == KNIT_ERR_MODULE_FAULT && r->inl_len)
        set_error("%.*s", (int)r->inl_len, (const char *)r->inl);
}

/* Read the completions there are: how many. */
static int drain(void)
{
    if (!C.slot)
        return 0;
    int n = 0;
    uint32_t head = C.slot->cq_head;
    while (head != __atomic_load_n(&C.slot->cq_tail, __ATOMIC_ACQUIRE)) {
        kn_off_cqe_t e;
        const kn_off_cqe_t *src = &C.slot->cq[head % KN_OFF_ENTRIES];
        memcpy(&e, src, offsetof(kn_off_cqe_t, data));
        if (e.inl <= KN_OFF_INLINE)
            memcpy(e.data, src->data, e.inl);
        head++;
        __atomic_store_n(&C.slot->cq_head, head, __ATOMIC_RELEASE);
        on_cqe(&e);
        n++;
    }
    return n;
}

/* An op the agent will never complete: it is gone. */
static void fail_if_agent_dead(knit_mreq_t *r)
{
    if (C.agent_dead && !r->done) {
        r->done = 1;
        r->status = KNIT_ERR_PEER;
    }
}

/* Wait for op r (progressing host modules too). */
static void wait_op(knit_mreq_t *r)
{
    wait_t w = {0};
    for (fail_if_agent_dead(r); !r->done; fail_if_agent_dead(r))
        wait_round(&w);
}

/* A module at the agent or the switch, in a process of its own: the
 * daemon and the module process now both work for this node's ranks.
 * Ranks that knitrun's auto binding put one to a core then wait for them
 * behind their own core where the host has no cpu to spare (2 ranks on 2
 * cpus, an empty request: 3.7-59 us bound, 3.5-4.0 free to move): they
 * widen to the job's cpus.  Not for modules on the daemon's thread: the
 * daemon alone slips in beside a bound rank (0.72-0.75 us bound, 0.74-2.1
 * free to move). */
/* Once a module is loaded the host's daemons work for its ranks: a rank's
 * waits of any kind count them among the host's processes, so that a
 * rank waiting for a peer leaves the cpu to the daemon that must answer
 * (2 ranks on 2 emulated nodes, 2 cpus, an agent-carried put of 8 bytes
 * then a barrier: 300 us counting the ranks alone, 24 counting the two
 * agents and the switch too). */
static void count_daemons(void)
{
    static int counted;
    const char *v = getenv(KN_ENV_HOST_DAEMONS);
    int n = v ? atoi(v) : 0;
    if (counted || !C.p.p2p || n <= 0)
        return;
    counted = 1;
    kn_p2p_limits_t l;
    kn_p2p_get_limits(C.p.p2p, &l);
    if (kn_cfg.wait == 0) /* auto */
        kn_p2p_set_wait(C.p.p2p, l.host_procs + n);
}

static void unbind_crowded(int inprocess)
{
    if (!C.p.p2p || inprocess || kn_cfg.module_isolation != 0)
        return;
    kn_p2p_limits_t l;
    kn_p2p_get_limits(C.p.p2p, &l);
    kn_cpus_unbind_crowded(l.host_procs, 2);
}

/* ------------------------------------------------------------ open / close */

knit_status_t kn_off_open(const kn_off_params_t *p)
{
    C.p = *p;
    /* A rank waiting on its agent polls first only where the node's ranks,
     * the agent and (modules in processes of their own) a module process
     * each have a cpu: elsewhere its polling takes the cpu that the agent
     * or the module process needs to answer, and a request waits for a
     * time slice (1 rank on 2 cpus with a module process: 140-170 us a
     * request, against 6-8 with yielding).  spin_crowded applies once a
     * module is loaded at the agent or the switch. */
    C.spin_count = C.spin_crowded = kn_cfg.spin_count > 0 ? (unsigned)kn_cfg.spin_count : 1;
    C.yield_ns = kn_cfg.yield_time;
    if (p->p2p) {
        kn_p2p_limits_t l;
        kn_p2p_get_limits(p->p2p, &l);
        if (l.host_procs + 1 > l.ncpus)
            C.spin_count = C.spin_crowded = 1;
        if (kn_cfg.module_isolation == 0 && l.host_procs + 2 > l.ncpus)
            C.spin_crowded = 1;
    }
    kn_list_init(&C.modules);
    C.node_first = calloc((size_t)p->nnodes + 1, sizeof(int));
    if (!C.node_first)
        return KNIT_ERR_NOMEM;
    for (int r = p->size - 1; r >= 0; r--)
        C.node_first[p->node_of[r]] = r;
    C.node_first[p->nnodes] = p->size;
    C.open = 1;
    if (!p->agent)
        return KNIT_OK;
    if (p->p2p)
        kn_p2p_set_sleep_hook(p->p2p, sleep_arm, sleep_disarm, sleep_spin, NULL);
    /* the agent publishes this key once its socket listens */
    char key[64], v[8];
    size_t vl;
    snprintf(key, sizeof(key), "knit.agent.%d", p->node);
    knit_status_t st = kn_boot_get(p->boot, key, v, sizeof(v), &vl);
    if (st != KNIT_OK) {
        kn_error("the agent of node %d did not start: %s", p->node, knit_strerror(st));
        return st;
    }
    C.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    C.sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (C.evfd < 0 || C.sock < 0) {
        kn_error("eventfd/socket: %m");
        return KNIT_ERR_IO;
    }
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    kn_off_sock_name(un.sun_path + 1, sizeof(un.sun_path) - 1, p->jobid, p->node);
    socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(un.sun_path + 1));
    if (connect(C.sock, (struct sockaddr *)&un, sl) < 0) {
        kn_error("connecting to the agent of node %d: %m", p->node);
        return KNIT_ERR_IO;
    }
    kn_off_hello_t h = {.magic = KN_OFF_MAGIC, .version = KN_OFF_VERSION, .rank = p->rank, .pid = getpid()};
    if (!kn_heap_export(&h.heap_base, &h.heap_size, &h.heap_fd))
        h.heap_size = 0, h.heap_fd = -1;
    const char *cookie = getenv(KN_ENV_COOKIE);
    snprintf(h.cookie, sizeof(h.cookie), "%s", cookie ? cookie : "");
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &C.evfd, sizeof(int));
    if (sendmsg(C.sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
        kn_error("hello to the agent of node %d: %m", p->node);
        return KNIT_ERR_IO;
    }
    /* its answer is read when offload is first used: start-up does not wait */
    return KNIT_OK;
}

void kn_off_close(void)
{
    if (!C.open)
        return;
    if (C.p.p2p && C.p.agent)
        kn_p2p_set_sleep_hook(C.p.p2p, NULL, NULL, NULL, NULL);
    while (!kn_list_empty(&C.modules)) {
        knit_module_t *m = kn_list_first(&C.modules, knit_module_t, link);
        if (m->where == KNIT_MODULE_HOST) {
            knit_module_unload(m);
        } else { /* the agent forgets it when we disconnect */
            kn_list_del(&m->link);
            kn_off_module_free(m);
        }
    }
    for (unsigned i = 0; i < OPS_TAB; i++)
        if (C.ops[i]) /* requests never completed: the caller lost them */
            C.ops[i]->id = 0, C.ops[i] = NULL;
    if (C.seg)
        munmap(C.seg, C.seg_size);
    if (C.sock >= 0)
        close(C.sock);
    if (C.evfd >= 0)
        close(C.evfd);
    if (C.doorbell >= 0)
        close(C.doorbell);
    free(C.node_first);
    memset(&C, 0, sizeof(C));
    C.sock = C.evfd = C.doorbell = -1;
}

const kn_off_params_t *kn_off_params(void)
{
    return C.open ? &C.p : NULL;
}

const int *kn_off_node_first(void)
{
    return C.node_first;
}

/* ------------------------------------------------------------ modules */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void kn_off_module_free(knit_module_t *m)
{
    while (!kn_list_empty(&m->posted)) {
        kn_list_t *p = m->posted.next;
        kn_list_del(p);
        free(kn_list_entry(p, posted_t, link));
    }
    while (!kn_list_empty(&m->delivered)) {
        kn_list_t *p = m->delivered.next;
        kn_list_del(p);
        free(kn_list_entry(p, posted_t, link));
    }
    free(m);
}

/* A module from the file at path, or (image) the library's own, named
 * path, which runs on the daemons' threads (KN_OFF_LOAD_INPROCESS). */
static knit_status_t module_load(knit_ctx_t *ctx, const char *path, int where, const void *image, size_t image_len,
                                 knit_module_t **out)
{
    if (!C.open || ctx != C.p.ctx || !path || !out ||
        (where != KNIT_MODULE_AGENT && where != KNIT_MODULE_SWITCH && where != KNIT_MODULE_HOST))
        return KNIT_ERR_INVAL;
    C.last_error[0] = '\0';
    knit_module_t *m = calloc(1, sizeof(*m));
    if (!m)
        return KNIT_ERR_NOMEM;
    m->where = where;
    kn_list_init(&m->posted);
    kn_list_init(&m->delivered);
    kn_list_init(&m->link);
    knit_status_t st;
    if (where == KNIT_MODULE_HOST) {
        st = kn_host_load(m, path);
        if (st != KNIT_OK) {
            kn_off_module_free(m);
            return st;
        }
        kn_list_push_back(&C.modules, &m->link);
        *out = m;
        return KNIT_OK;
    }
    if (!agent_usable()) {
        kn_off_module_free(m);
        return C.agent_dead ? KNIT_ERR_PEER : KNIT_ERR_NOT_SUPPORTED;
    }
    uint64_t seq = ++C.load_seq;
    knit_mreq_t *r = op_new(NULL, OP_LOAD);
    void *bytes = NULL;
    size_t len = 0;
    if (!r || op_register(r) < 0) {
        free(r);
        kn_off_module_free(m);
        return KNIT_ERR_NOMEM;
    }
    kn_off_sqe_t q = {.op = KN_SQ_JOIN, .id = r->id, .aux = seq};
    if (C.p.rank == 0) {
        char err[KN_OFF_ERR_MAX];
        st = image ? KNIT_OK : kn_mod_read_file(path, &bytes, &len, err, sizeof(err));
        q.op = KN_SQ_LOAD;
        q.flags = (uint8_t)(where | (image ? KN_OFF_LOAD_INPROCESS : 0));
        if (st != KNIT_OK) { /* the others wait for a verdict: send one */
            q.reserved = 1;
            snprintf((char *)q.data, KN_OFF_INLINE, "rank 0 cannot read the module file: %.150s", err);
            q.inl = (uint32_t)strlen((char *)q.data) + 1;
            static char dummy;
            q.addr = (uint64_t)(uintptr_t)&dummy;
        } else {
            snprintf((char *)q.data, KNIT_MOD_NAME_MAX, "%s", base_name(path));
            q.inl = (uint32_t)strlen((char *)q.data) + 1;
            q.addr = (uint64_t)(uintptr_t)(image ? image : bytes);
            q.len = image ? image_len : len;
        }
    }
    st = submit(&q, 1);
    if (st == KNIT_OK)
        wait_op(r);
    free(bytes);
    st = st == KNIT_OK ? r->status : st;
    if (st == KNIT_OK) {
        m->id = (uint32_t)r->aux;
        op_free(r);
        /* the name: ask nobody, the file told rank 0; others learn it from
         * the first error text or keep the file's base name */
        snprintf(m->name, sizeof(m->name), "%.*s", (int)sizeof(m->name) - 1, base_name(path));
        kn_list_push_back(&C.modules, &m->link);
        *out = m;
        unbind_crowded(image != NULL);
        count_daemons();
        return KNIT_OK;
    }
    set_error("%.*s", (int)r->inl_len, r->inl_len ? (const char *)r->inl : knit_strerror(st));
    if (C.p.rank == 0)
        kn_error("loading module %s: %s", path, C.last_error);
    op_free(r);
    kn_off_module_free(m);
    return st;
}

knit_status_t knit_module_load(knit_ctx_t *ctx, const char *path, int where, knit_module_t **out)
{
    return module_load(ctx, path, where, NULL, 0, out);
}

knit_status_t kn_off_load_builtin(knit_ctx_t *ctx, const char *name, const void *image, size_t len,
                                  knit_module_t **out)
{
    return image ? module_load(ctx, name, KNIT_MODULE_AGENT, image, len, out) : KNIT_ERR_INVAL;
}

knit_status_t knit_module_unload(knit_module_t *m)
{
    if (!m)
        return KNIT_ERR_INVAL;
    knit_status_t st = KNIT_OK;
    if (m->where == KNIT_MODULE_HOST) {
        kn_host_unload(m);
    } else if (!C.agent_dead) {
        knit_mreq_t *r = op_new(NULL, OP_UNLOAD);
        if (!r || op_register(r) < 0) {
            free(r);
            return KNIT_ERR_NOMEM;
        }
        kn_off_sqe_t q = {.op = KN_SQ_UNLOAD, .id = r->id, .mod = m->id};
        st = submit(&q, 1);
        if (st == KNIT_OK) {
            wait_op(r);
            st = r->status;
        }
        op_free(r);
        /* buffers posted and not delivered are the caller's again */
        C.outstanding -= (unsigned)kn_list_length(&m->posted);
    }
    /* requests still open on it are finished by now (canceled); detach them */
    for (unsigned i = 0; i < OPS_TAB; i++)
        if (C.ops[i] && C.ops[i]->mod == m)
            C.ops[i]->mod = NULL;
    kn_list_del(&m->link);
    kn_off_module_free(m);
    return st;
}

const char *knit_module_name(const knit_module_t *m)
{
    return m ? m->name : "";
}

const char *knit_module_last_error(knit_ctx_t *ctx)
{
    (void)ctx;
    return C.last_error;
}

knit_status_t knit_module_request(knit_module_t *m, const void *args, size_t len, knit_mreq_t **out)
{
    if (!m || !out || (len && !args) || len > KN_OFF_MSG_MAX)
        return KNIT_ERR_INVAL;
    knit_mreq_t *r = op_new(m, OP_REQ);
    if (!r)
        return KNIT_ERR_NOMEM;
    if (m->where == KNIT_MODULE_HOST) {
        knit_status_t st = kn_host_request(m, r, args, len);
        if (st != KNIT_OK) {
            free(r);
            return st;
        }
        *out = r;
        return KNIT_OK;
    }
    if (C.agent_dead) {
        free(r);
        return KNIT_ERR_PEER;
    }
    if (op_register(r) < 0) {
        free(r);
        return KNIT_ERR_AGAIN;
    }
    kn_off_sqe_t q = {.op = KN_SQ_REQUEST, .id = r->id, .mod = m->id, .len = len};
    if (len <= KN_OFF_INLINE) {
        q.inl = (uint32_t)len;
        if (len)
            memcpy(q.data, args, len);
    } else {
        q.addr = (uint64_t)(uintptr_t)args;
    }
    knit_status_t st = submit(&q, 1);
    if (st != KNIT_OK) {
        op_free(r);
        return st;
    }
    *out = r;
    return KNIT_OK;
}

/* For a fault handler (the replicated region's, src/dsm/write.c): one
 * request of at most KN_OFF_INLINE bytes whose answer carries at most as
 * many, made and waited for without allocating memory and without moving
 * anything else on (the code the signal interrupted may be inside knit's
 * point-to-point engine).  One per thread at a time. */
knit_status_t kn_off_request_quiet(knit_module_t *m, const void *args, size_t len)
{
    static __thread __attribute__((tls_model("initial-exec"))) knit_mreq_t r; /* (no allocation at first use) */
    if (!m || len > KN_OFF_INLINE || (len && !args) || m->where == KNIT_MODULE_HOST)
        return KNIT_ERR_INVAL;
    if (C.agent_dead)
        return KNIT_ERR_PEER;
    memset(&r, 0, sizeof(r));
    r.mod = m;
    r.kind = OP_REQ;
    if (op_register(&r) < 0)
        return KNIT_ERR_AGAIN;
    kn_off_sqe_t q = {.op = KN_SQ_REQUEST, .id = r.id, .mod = m->id, .len = len, .inl = (uint32_t)len};
    if (len)
        memcpy(q.data, args, len);
    knit_status_t st = submit(&q, 1);
    for (unsigned spins = 0; st == KNIT_OK && !r.done && !C.agent_dead; spins++)
        if (!drain()) {
            check_socket();
            if (spins > 64)
                sched_yield();
            else
                kn_cpu_relax();
        }
    op_unregister(&r);
    if (r.big) { /* (an answer of more than asked for) */
        free(r.big);
        r.big = NULL;
    }
    if (st != KNIT_OK)
        return st;
    return r.done ? r.status : KNIT_ERR_PEER;
}

/* Request the agent's compiled-in null handler (benchmarks). */
knit_status_t kn_off_builtin_request(knit_mreq_t **out)
{
    if (!agent_usable())
        return KNIT_ERR_NOT_SUPPORTED;
    knit_mreq_t *r = op_new(NULL, OP_REQ);
    if (!r)
        return KNIT_ERR_NOMEM;
    if (op_register(r) < 0) {
        free(r);
        return KNIT_ERR_AGAIN;
    }
    kn_off_sqe_t q = {.op = KN_SQ_REQUEST, .id = r->id, .mod = KN_OFF_MOD_BUILTIN};
    knit_status_t st = submit(&q, 1);
    if (st != KNIT_OK) {
        op_free(r);
        return st;
    }
    *out = r;
    return KNIT_OK;
}

static knit_status_t finish_req(knit_mreq_t **req, void *result, size_t cap, size_t *len)
{
    knit_mreq_t *r = *req;
    const void *src = r->big ? r->big : r->inl;
    size_t n = r->big ? r->len : r->inl_len;
    knit_status_t st = r->status;
    if (n && result && cap)
        memcpy(result, src, KN_MIN(n, cap));
    if (st == KNIT_OK && n > cap)
        st = KNIT_ERR_TRUNCATE;
    if (len)
        *len = n;
    if (r->status == KNIT_ERR_MODULE_FAULT && n)
        set_error("%.*s", (int)KN_MIN(n, sizeof(C.last_error) - 1), (const char *)src);
    op_free(r);
    *req = NULL;
    return st;
}

knit_status_t knit_request_test(knit_mreq_t **req, int *done, void *result, size_t cap, size_t *len)
{
    if (!req || !*req || !done)
        return KNIT_ERR_INVAL;
    knit_mreq_t *r = *req;
    p2p_progress();
    if (r->host)
        kn_host_progress();
    else if (!r->done) {
        drain();
        if (!r->done)
            check_socket();
        fail_if_agent_dead(r);
    }
    *done = r->done;
    if (!r->done)
        return KNIT_OK;
    return finish_req(req, result, cap, len);
}

/* knit_request_test for the progress hook of the collectives (no
 * progress, no system call: the engine's sleep checks the socket). */
knit_status_t kn_off_request_try(knit_mreq_t **req, int *done, void *result, size_t cap, size_t *len)
{
    knit_mreq_t *r = *req;
    if (!r->done) {
        drain();
        fail_if_agent_dead(r);
    }
    *done = r->done;
    return r->done ? finish_req(req, result, cap, len) : KNIT_OK;
}

knit_status_t knit_request_wait(knit_mreq_t **req, void *result, size_t cap, size_t *len)
{
    if (!req || !*req)
        return KNIT_ERR_INVAL;
    knit_mreq_t *r = *req;
    if (r->host) {
        while (!r->done)
            if (!kn_host_progress() && !p2p_progress())
                sched_yield(); /* only a timer or a peer can move it on */
    } else {
        wait_op(r);
    }
    return finish_req(req, result, cap, len);
}

/* ------------------------------------------------------------ posted buffers */

knit_status_t knit_module_post_recv(knit_module_t *m, void *buf, size_t len)
{
    if (!m || !buf || !len)
        return KNIT_ERR_INVAL;
    posted_t *b = calloc(1, sizeof(*b));
    if (!b)
        return KNIT_ERR_NOMEM;
    b->buf = buf;
    b->cap = len;
    if (m->where != KNIT_MODULE_HOST) {
        kn_off_sqe_t q = {.op = KN_SQ_POST_RECV, .mod = m->id, .addr = (uint64_t)(uintptr_t)buf, .len = len};
        knit_status_t st = C.agent_dead ? KNIT_ERR_PEER : submit(&q, 1);
        if (st != KNIT_OK) {
            free(b);
            return st;
        }
    }
    kn_list_push_back(&m->posted, &b->link);
    return KNIT_OK;
}

/* Host placement: the wrapper's deliver(). */
int32_t kn_off_host_deliver(knit_module_t *m, const void *data, uint64_t len)
{
    if (kn_list_empty(&m->posted))
        return KNIT_ERR_NOT_FOUND;
    posted_t *b = kn_list_first(&m->posted, posted_t, link);
    b->got = (size_t)KN_MIN(len, b->cap);
    memcpy(b->buf, data, b->got);
    b->status = len > b->cap ? KNIT_ERR_TRUNCATE : KNIT_OK;
    kn_list_del(&b->link);
    kn_list_push_back(&m->delivered, &b->link);
    return b->status;
}

knit_status_t knit_module_recv_test(knit_module_t *m, int *done, void **buf, size_t *len)
{
    if (!m || !done)
        return KNIT_ERR_INVAL;
    if (m->where == KNIT_MODULE_HOST)
        kn_host_progress();
    else
        drain();
    *done = 0;
    if (kn_list_empty(&m->delivered))
        return KNIT_OK;
    posted_t *b = kn_list_first(&m->delivered, posted_t, link);
    kn_list_del(&b->link);
    *done = 1;
    if (buf)
        *buf = b->buf;
    if (len)
        *len = b->got;
    knit_status_t st = b->status;
    free(b);
    return st;
}

knit_status_t knit_module_recv_wait(knit_module_t *m, void **buf, size_t *len)
{
    if (!m)
        return KNIT_ERR_INVAL;
    wait_t w = {0};
    for (;;) {
        int done;
        knit_status_t st = knit_module_recv_test(m, &done, buf, len);
        if (done || st < 0)
            return st;
        if (m->where == KNIT_MODULE_HOST) {
            sched_yield();
            continue;
        }
        if (C.agent_dead)
            return KNIT_ERR_PEER;
        wait_round(&w);
    }
}

/* ------------------------------------------------------------ numbers */

knit_status_t knit_stats(knit_ctx_t *ctx, const knit_module_t *m, knit_traffic_t *out)
{
    if (!C.open || ctx != C.p.ctx || !out)
        return KNIT_ERR_INVAL;
    memset(out, 0, sizeof(*out));
    if (!C.slot || (m && m->where == KNIT_MODULE_HOST))
        return KNIT_OK;
    const kn_off_traffic_t *t = m ? &C.slot->mod[m->id % KN_OFF_MOD_SLOTS] : &C.slot->total;
    const uint64_t *src = &t->sq_ops;
    uint64_t *dst = &out->queue_in_ops;
    for (int i = 0; i < 8; i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    return KNIT_OK;
}

knit_status_t knit_agent_info(knit_ctx_t *ctx, knit_agent_info_t *info)
{
    if (!C.open || ctx != C.p.ctx || !info)
        return KNIT_ERR_INVAL;
    if (!agent_usable())
        return C.agent_dead ? KNIT_ERR_PEER : KNIT_ERR_NOT_SUPPORTED;
    knit_mreq_t *r = op_new(NULL, OP_INFO);
    if (!r || op_register(r) < 0) {
        free(r);
        return KNIT_ERR_NOMEM;
    }
    kn_off_sqe_t q = {.op = KN_SQ_INFO, .id = r->id};
    knit_status_t st = submit(&q, 1);
    if (st == KNIT_OK) {
        wait_op(r);
        st = r->status;
    }
    if (st == KNIT_OK && r->inl_len == 64) {
        uint64_t v[8];
        memcpy(v, r->inl, sizeof(v));
        *info = (knit_agent_info_t){.open_fds = v[0], .mappings = v[1], .modules = v[2],
                                    .open_requests = v[3], .scratch_bytes = v[4], .node = (int32_t)v[5],
                                    .pid = (int32_t)v[6], .heap_bytes = v[7]};
    } else if (st == KNIT_OK) {
        st = KNIT_ERR_PROTO;
    }
    op_free(r);
    return st;
}
