/*
 * The daemons' common core: see daemon.h.
 *
 * Protection.  Every call into module code goes through run_protected():
 * it counts the call, sigsetjmp()s, and calls the handler.  SIGSEGV, SIGBUS, SIGFPE and SIGILL
 * are caught on an alternate stack (a stack overflow still gets a stack);
 * when they hit while module code runs, the handler siglongjmp()s back to
 * the dispatcher, which disables the module (its open requests fail with
 * KNIT_ERR_MODULE_FAULT and the reason), tells the other daemons, and goes
 * on.  The budget (KNIT_MODULE_BUDGET): a periodic SIGALRM every quarter
 * budget (armed only while the daemon is awake and has modules, so an
 * idle daemon sleeps undisturbed) jumps out the same way from a call that
 * four ticks in a row found running (no clock read per call).  While a service runs for a module
 * (in_service), the budget waits for the service to return, so that the
 * daemon's own structures are never left half-updated; a fault inside a
 * service (a bad pointer from the module) still counts as the module's.
 * A fault outside module code is a bug of the daemon: it dies with the
 * signal (knitrun reports it).
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
#include "offload/daemon.h"
#include "offload/wire.h"

#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "boot/boot.h"
#include "net/net.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/env.h"
#include "util/log.h"
#include "util/time.h"

#define INST_TAB 256

typedef struct alloc_hdr {
    kn_list_t link;
    uint64_t size;
    uint64_t pad;
} alloc_hdr_t;

struct knit_mod_ctx {
    uint32_t id;
    int placement;
    int faulted;
    char name[KNIT_MOD_NAME_MAX];
    char fault[KN_OFF_ERR_MAX];
    kn_mod_lib_t lib;
    const knit_mod_descriptor_t *desc;
    knit_mod_geometry_t geo;
    void *state;
    kn_list_t allocs;
    kn_list_t reqs;
    unsigned char *unloaded;   /* agent: [local_size]; */
    int nunloaded;             /* agent: local ranks; switch: agents */
    int unload_sent;           /* agent: told the switch that its ranks are done */
    int dead;                  /* being destroyed */
};

typedef struct dtimer {
    kn_list_t link;
    uint64_t due, cookie;
    kn_inst_t *inst;
} dtimer_t;

typedef struct outmsg {
    kn_list_t link;
    kn_wire_t w;
    char *data;
    uint64_t len, sent;
    int started;
} outmsg_t;

typedef struct selfmsg {
    kn_list_t link;
    kn_inst_t *inst;
    uint32_t id;
    int32_t from;
    uint64_t len;
    char data[];
} selfmsg_t;

typedef struct watch {
    int fd;
    void (*fn)(int fd, uint32_t events, void *arg);
    void *arg;
} watch_t;

static struct {
    kn_d_geo_t g;
    int *node_first;
    const kn_d_hooks_t *hooks;
    kn_boot_t *boot;
    kn_tl_t *tl;
    int nids;                  /* nnodes + 1 */
    uint64_t auth;
    int epfd, sigfd;
    int stop;
    uint64_t budget, spin;
    kn_inst_t *inst[INST_TAB];
    int ninst;
    kn_list_t timers;
    kn_list_t selfq;
    kn_list_t *out;            /* [nids] backlog */
    int backlog;
    kn_wire_reasm_t *rx;       /* [nids] */
    watch_t watches[1024];   /* rank sockets, doorbells, signals, the network */
    int nwatches;
    /* requests */
    kn_dreq_t **reqs;
    uint32_t *req_gen;
    uint32_t nreqs, reqs_cap;
    uint32_t *req_free;
    uint32_t nfree;
    uint32_t open_reqs;
    kn_dreq_t *spare;          /* free records, linked through ->result */
    unsigned nspare;
    /* load coordination (agent 0) */
    struct {
        int busy;
        uint64_t seq;
        uint32_t id;
        int acks;
        int32_t status;
        char msg[KN_OFF_ERR_MAX];
    } L;
    uint32_t next_id;
    /* budget timer */
    timer_t btimer;
    int btimer_ok, btimer_armed;
    /* the network comes up in a thread, so that it never delays the job */
    pthread_t net_thread;
    int net_started, net_ready_fd, net_fd;
    kn_tl_t *net_tl;         /* set by the thread */
    knit_status_t net_status;
    uint64_t alloc_bytes;
} D;

/* ------------------------------------------------------------ protection */

static struct {
    sigjmp_buf env;
    volatile sig_atomic_t in_module, in_service, budget_hit;
    volatile uint64_t call_seq;  /* counts calls into module code */
    uint64_t seen_seq;           /* the call the alarm saw last */
    int ticks;                   /* alarms that saw the same call */
    volatile int sig;
    void *volatile addr;
} P;

static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (!P.in_module) {
        /* the daemon's own bug: die of it, as without us */
        signal(sig, SIG_DFL);
        return; /* the faulting instruction runs again and kills us */
    }
    P.sig = sig;
    P.addr = si->si_addr;
    P.in_module = 0;
    siglongjmp(P.env, 1);
}

/* The budget without a clock read per call: the alarm ticks every
 * budget/4; a call that four ticks in a row find still running has run
 * between 3/4 of the budget and the budget. */
static void alarm_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    if (!P.in_module) {
        P.ticks = 0;
        return;
    }
    if (P.call_seq != P.seen_seq) {
        P.seen_seq = P.call_seq;
        P.ticks = 1;
        return;
    }
    if (++P.ticks < 4)
        return;
    if (P.in_service) {
        P.budget_hit = 1; /* jump when the service returns */
        return;
    }
    P.sig = SIGALRM;
    P.addr = NULL;
    P.in_module = 0;
    siglongjmp(P.env, 1);
}

static void svc_enter(void)
{
    P.in_service++;
}

static void svc_leave(void)
{
    if (--P.in_service == 0 && P.budget_hit && P.in_module) {
        P.budget_hit = 0;
        P.sig = SIGALRM;
        P.addr = NULL;
        P.in_module = 0;
        siglongjmp(P.env, 1);
    }
}

static int protection_init(void)
{
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
    if (sigaltstack(&ss, NULL) < 0) {
        kn_error("sigaltstack: %m");
        return -1;
    }
    struct sigaction sa = {0};
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < KN_ARRAY_SIZE(fault_signals); i++)
        if (sigaction(fault_signals[i], &sa, NULL) < 0) {
            kn_error("sigaction: %m");
            return -1;
        }
    sa.sa_sigaction = alarm_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
    if (sigaction(SIGALRM, &sa, NULL) < 0) {
        kn_error("sigaction(SIGALRM): %m");
        return -1;
    }
    struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    if (timer_create(CLOCK_MONOTONIC, &sev, &D.btimer) == 0)
        D.btimer_ok = 1;
    else
        kn_warn("timer_create: %m (module time budget not enforced)");
    return 0;
}

static void budget_timer(int on)
{
    on = on && D.ninst > 0 && D.btimer_ok && D.budget > 0;
    if (on == D.btimer_armed)
        return;
    uint64_t iv = on ? KN_MAX(D.budget / 4, KN_NSEC_PER_MSEC) : 0;
    struct itimerspec its = {
        .it_interval = {.tv_sec = (time_t)(iv / KN_NSEC_PER_SEC), .tv_nsec = (long)(iv % KN_NSEC_PER_SEC)},
        .it_value = {.tv_sec = (time_t)(iv / KN_NSEC_PER_SEC), .tv_nsec = (long)(iv % KN_NSEC_PER_SEC)},
    };
    if (timer_settime(D.btimer, 0, &its, NULL) == 0)
        D.btimer_armed = on;
}

static const char *sig_text(int sig, void *addr, char *buf, size_t len)
{
    switch (sig) {
    case SIGSEGV: snprintf(buf, len, "SIGSEGV (invalid memory access at %p)", addr); break;
    case SIGBUS: snprintf(buf, len, "SIGBUS (bus error at %p)", addr); break;
    case SIGFPE: snprintf(buf, len, "SIGFPE (arithmetic fault, e.g. division by zero)"); break;
    case SIGILL: snprintf(buf, len, "SIGILL (illegal instruction at %p)", addr); break;
    case SIGALRM:
        snprintf(buf, len, "time budget exceeded (KNIT_MODULE_BUDGET=%.0f ms)", (double)D.budget / 1e6);
        break;
    default: snprintf(buf, len, "signal %d", sig);
    }
    return buf;
}

static const char *self_name(char *buf, size_t len)
{
    if (D.g.is_switch)
        snprintf(buf, len, "the switch");
    else
        snprintf(buf, len, "agent %d", D.g.self);
    return buf;
}

static void disable_inst(kn_inst_t *in, const char *msg, int tell);

typedef struct call {
    int what; /* 0 request, 1 message, 2 timer, 3 fini */
    const knit_mod_request_t *req;
    const void *data;
    int32_t from;
    uint64_t len, cookie;
} call_t;

static const char *what_name[] = {"on_request", "on_message", "on_timer", "fini", "init"};

static void call_handler(kn_inst_t *in, call_t *c)
{
    switch (c->what) {
    case 0: in->desc->on_request(in, c->req, c->data); break;
    case 1: in->desc->on_message(in, c->from, c->data, c->len); break;
    case 2: in->desc->on_timer(in, c->cookie); break;
    case 3: in->desc->fini(in); break;
    }
}

/* Run module code protected.  KNIT_OK, or KNIT_ERR_MODULE_FAULT (the
 * module is disabled then). */
static knit_status_t run_protected(kn_inst_t *in, call_t *c)
{
    if (in->faulted)
        return KNIT_ERR_MODULE_FAULT;
    if (sigsetjmp(P.env, 0)) {
        /* back from a fault: the signal is not blocked (SA_NODEFER) */
        P.in_service = 0;
        P.budget_hit = 0;
        char why[128], self[32], msg[KN_OFF_ERR_MAX];
        snprintf(msg, sizeof(msg), "module '%s' disabled: %s in %s at %s", in->name,
                 sig_text(P.sig, P.addr, why, sizeof(why)), what_name[c->what],
                 self_name(self, sizeof(self)));
        kn_error("%s", msg);
        disable_inst(in, msg, 1);
        return KNIT_ERR_MODULE_FAULT;
    }
    P.call_seq++;
    P.in_module = 1;
    call_handler(in, c);
    P.in_module = 0;
    return KNIT_OK;
}

/* ------------------------------------------------------------ requests */

static kn_dreq_t *req_new(kn_inst_t *in)
{
    uint32_t idx;
    if (D.nfree) {
        idx = D.req_free[--D.nfree];
    } else {
        if (D.nreqs == D.reqs_cap) {
            uint32_t cap = D.reqs_cap ? D.reqs_cap * 2 : 256;
            kn_dreq_t **r = realloc(D.reqs, cap * sizeof(*r));
            if (!r)
                return NULL;
            D.reqs = r;
            uint32_t *g = realloc(D.req_gen, cap * sizeof(*g));
            if (!g)
                return NULL;
            D.req_gen = g;
            uint32_t *f = realloc(D.req_free, cap * sizeof(*f));
            if (!f)
                return NULL;
            D.req_free = f;
            D.reqs_cap = cap;
        }
        idx = D.nreqs++;
        D.req_gen[idx] = 0;
    }
    kn_dreq_t *r = D.spare;
    if (r) {
        D.spare = (kn_dreq_t *)r->result;
        D.nspare--;
        memset(r, 0, sizeof(*r));
    } else {
        r = calloc(1, sizeof(*r));
    }
    if (!r) {
        D.req_free[D.nfree++] = idx;
        return NULL;
    }
    D.reqs[idx] = r;
    r->token = (uint64_t)++D.req_gen[idx] << 32 | idx;
    r->inst = in;
    kn_list_init(&r->link);
    if (in)
        kn_list_push_back(&in->reqs, &r->link);
    D.open_reqs++;
    return r;
}

static kn_dreq_t *req_find(uint64_t token)
{
    uint32_t idx = (uint32_t)token;
    if (idx >= D.nreqs || !D.reqs[idx] || D.reqs[idx]->token != token)
        return NULL;
    return D.reqs[idx];
}

void kn_d_release(kn_dreq_t *r)
{
    uint32_t idx = (uint32_t)r->token;
    kn_list_del(&r->link);
    D.reqs[idx] = NULL;
    D.req_free[D.nfree++] = idx;
    D.open_reqs--;
    free(r->result);
    if (D.nspare < 1024) { /* kept for the next request: no malloc per request */
        r->result = D.spare;
        D.spare = r;
        D.nspare++;
    } else {
        free(r);
    }
}

kn_dreq_t *kn_d_held(uint64_t token)
{
    kn_dreq_t *r = req_find(token);
    return r && r->held ? r : NULL;
}

static void send_msg(int dest, int type, uint32_t mod, uint64_t a, uint64_t b, const void *p1,
                     uint64_t l1, const void *p2, uint64_t l2);

/* End request r with a result: to the local rank (hook) or back to the
 * forwarding agent. */
static void req_finish(kn_dreq_t *r, int32_t status, const void *res, uint64_t len)
{
    if (r->origin < 0) {
        if (D.hooks && D.hooks->complete)
            D.hooks->complete(r, status, res, len);
        if (r->held) {
            kn_list_del(&r->link); /* no longer the module's */
            r->inst = NULL;
            return;
        }
    } else {
        send_msg(r->origin, W_DONE, r->inst ? r->inst->id : 0, r->origin_token, (uint32_t)status, res,
                 len, NULL, 0);
    }
    kn_d_release(r);
}

static void fail_open(kn_inst_t *in, int32_t status, const char *msg)
{
    while (!kn_list_empty(&in->reqs)) {
        kn_dreq_t *r = kn_list_first(&in->reqs, kn_dreq_t, link);
        req_finish(r, status, msg, msg ? strlen(msg) + 1 : 0);
    }
}

/* ------------------------------------------------------------ instances */

kn_inst_t *kn_d_inst(uint32_t id)
{
    kn_inst_t *in = D.inst[id % INST_TAB];
    return in && in->id == id && !in->dead ? in : NULL;
}

const char *kn_d_inst_name(kn_inst_t *in)
{
    return in->name;
}

int kn_d_inst_slot(kn_inst_t *in)
{
    if (in->id == KN_OFF_MOD_BUILTIN)
        return -1;
    return (int)(in->id % KN_OFF_MOD_SLOTS);
}

int kn_d_inst_placement(kn_inst_t *in)
{
    return in->placement;
}

static void drop_timers(kn_inst_t *in)
{
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &D.timers) {
        dtimer_t *tm = kn_list_entry(e, dtimer_t, link);
        if (tm->inst == in) {
            kn_list_del(&tm->link);
            free(tm);
        }
    }
    kn_list_for_each_safe(e, t, &D.selfq) {
        selfmsg_t *s = kn_list_entry(e, selfmsg_t, link);
        if (s->inst == in) {
            kn_list_del(&s->link);
            free(s);
        }
    }
}

static void disable_inst(kn_inst_t *in, const char *msg, int tell)
{
    if (in->faulted)
        return;
    in->faulted = 1;
    snprintf(in->fault, sizeof(in->fault), "%s", msg);
    drop_timers(in);
    fail_open(in, KNIT_ERR_MODULE_FAULT, in->fault);
    if (tell)
        for (int i = 0; i < D.nids; i++)
            if (i != D.g.self && (!D.g.is_switch || i < D.g.nnodes))
                send_msg(i, W_FAULT, in->id, 0, 0, in->fault, strlen(in->fault) + 1, NULL, 0);
}

static void inst_destroy(kn_inst_t *in, int call_fini)
{
    in->dead = 1;
    fail_open(in, KNIT_ERR_CANCELED, "module unloaded");
    drop_timers(in);
    if (call_fini && !in->faulted && in->desc && in->desc->fini) {
        call_t c = {.what = 3};
        run_protected(in, &c);
    }
    while (!kn_list_empty(&in->allocs)) {
        alloc_hdr_t *h = kn_list_first(&in->allocs, alloc_hdr_t, link);
        kn_list_del(&h->link);
        D.alloc_bytes -= h->size;
        free(h);
    }
    kn_mod_close(&in->lib);
    if (D.inst[in->id % INST_TAB] == in) {
        D.inst[in->id % INST_TAB] = NULL;
        D.ninst--;
    }
    free(in->unloaded);
    free(in);
    if (D.ninst == 0)
        budget_timer(0);
}

static const knit_mod_services_t services;

/* Load one instance here.  On refusal msg says why (prefixed by who). */
static int32_t inst_load(uint32_t id, int where, const char *name, const void *bytes, uint64_t len,
                         char *msg, size_t mlen)
{
    char self[32], err[KN_OFF_ERR_MAX];
    self_name(self, sizeof(self));
    if (D.inst[id % INST_TAB]) {
        snprintf(msg, mlen, "%s: too many modules loaded", self);
        return KNIT_ERR_AGAIN;
    }
    kn_inst_t *in = calloc(1, sizeof(*in));
    if (!in) {
        snprintf(msg, mlen, "%s: out of memory", self);
        return KNIT_ERR_NOMEM;
    }
    in->id = id;
    in->placement = where;
    kn_list_init(&in->allocs);
    kn_list_init(&in->reqs);
    snprintf(in->name, sizeof(in->name), "%s", name);
    knit_status_t st = kn_mod_open(bytes, len, &in->lib, err, sizeof(err));
    if (st != KNIT_OK) {
        snprintf(msg, mlen, "%s refused %s: %.140s", self, name, err);
        free(in);
        return st;
    }
    if (!D.g.is_switch && !(in->unloaded = calloc((size_t)D.g.local_size + 1, 1))) {
        kn_mod_close(&in->lib);
        free(in);
        return KNIT_ERR_NOMEM;
    }
    in->geo = (knit_mod_geometry_t){
        .size = sizeof(knit_mod_geometry_t), .module_id = id, .nranks = D.g.nranks,
        .nnodes = D.g.nnodes, .self = D.g.is_switch ? KNIT_MOD_SWITCH : D.g.self,
        .self_kind = D.g.is_switch ? KNIT_MOD_AT_SWITCH : KNIT_MOD_AT_AGENT, .placement = where,
        .first_local = D.g.is_switch ? 0 : D.g.first_local,
        .local_size = D.g.is_switch ? 0 : D.g.local_size,
    };
    D.inst[id % INST_TAB] = in;
    D.ninst++;
    budget_timer(1);
    /* the descriptor function and init are module code: protected */
    const knit_mod_descriptor_t *desc = NULL;
    int failed = 0;
    if (sigsetjmp(P.env, 0)) {
        failed = 1;
    } else {
        P.call_seq++;
        P.in_module = 1;
        desc = in->lib.entry();
        P.in_module = 0;
    }
    if (failed) {
        char why[128];
        snprintf(msg, mlen, "%s refused %s: %s in %s()", self, name, sig_text(P.sig, P.addr, why, sizeof(why)),
                 KNIT_MOD_SYMBOL);
        in->faulted = 1;
        inst_destroy(in, 0);
        return KNIT_ERR_MODULE_FAULT;
    }
    if (kn_mod_check_desc(desc, err, sizeof(err)) != KNIT_OK) {
        snprintf(msg, mlen, "%s refused %s: %.140s", self, name, err);
        inst_destroy(in, 0);
        return KNIT_ERR_INVAL;
    }
    in->desc = desc;
    snprintf(in->name, sizeof(in->name), "%s", desc->name);
    int32_t rc = 0;
    if (sigsetjmp(P.env, 0)) {
        failed = 1;
    } else {
        P.call_seq++;
        P.in_module = 1;
        rc = desc->init(in, &services);
        P.in_module = 0;
    }
    if (failed || rc != 0) {
        char why[128];
        if (failed)
            snprintf(msg, mlen, "%s refused module '%s': init crashed: %s", self, in->name,
                     sig_text(P.sig, P.addr, why, sizeof(why)));
        else
            snprintf(msg, mlen, "%s refused module '%s': init failed (status %d: %s)", self, in->name, rc,
                     knit_strerror(rc));
        in->faulted = failed;
        inst_destroy(in, 0);
        return failed ? KNIT_ERR_MODULE_FAULT : KNIT_ERR_INVAL;
    }
    kn_debug("module '%s' loaded as id %u", in->name, id);
    return KNIT_OK;
}

/* ------------------------------------------------------------ services */

#define IN_SVC(expr)      \
    ({                    \
        svc_enter();      \
        __auto_type r_ = (expr); \
        svc_leave();      \
        r_;               \
    })

static const knit_mod_geometry_t *svc_geometry(knit_mod_ctx_t *m)
{
    return &m->geo;
}

static int32_t do_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    if (m->faulted || m->dead)
        return KNIT_ERR_STATE;
    if (len > KN_OFF_MSG_MAX || (len && !msg))
        return KNIT_ERR_INVAL;
    int id = dest == KNIT_MOD_SWITCH ? D.g.nnodes : dest;
    if (id < 0 || id >= D.nids)
        return KNIT_ERR_RANGE;
    int32_t from = D.g.is_switch ? KNIT_MOD_SWITCH : D.g.self;
    if (id == D.g.self) {
        selfmsg_t *s = malloc(sizeof(*s) + len);
        if (!s)
            return KNIT_ERR_NOMEM;
        s->inst = m;
        s->id = m->id;
        s->from = from;
        s->len = len;
        if (len)
            memcpy(s->data, msg, len);
        kn_list_push_back(&D.selfq, &s->link);
        return KNIT_OK;
    }
    if (D.g.is_switch == 0 && 0) /* agents reach every daemon */
        return KNIT_ERR_RANGE;
    send_msg(id, W_MSG, m->id, 0, 0, msg, len, NULL, 0);
    return KNIT_OK;
}

static int32_t svc_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    return IN_SVC(do_send(m, dest, msg, len));
}

static int32_t do_multicast(knit_mod_ctx_t *m, const void *msg, uint64_t len)
{
    if (!D.g.is_switch)
        return KNIT_ERR_NOT_SUPPORTED;
    for (int i = 0; i < D.g.nnodes; i++) {
        int32_t st = do_send(m, i, msg, len);
        if (st)
            return st;
    }
    return KNIT_OK;
}

static int32_t svc_multicast(knit_mod_ctx_t *m, const void *msg, uint64_t len)
{
    return IN_SVC(do_multicast(m, msg, len));
}

static int32_t svc_read_rank(knit_mod_ctx_t *m, int32_t rank, void *dst, uint64_t addr, uint64_t len)
{
    if (D.g.is_switch || !D.hooks || !D.hooks->read_rank)
        return KNIT_ERR_NOT_SUPPORTED;
    return IN_SVC(D.hooks->read_rank(m, rank, dst, addr, len));
}

static int32_t svc_write_rank(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, const void *src, uint64_t len)
{
    if (D.g.is_switch || !D.hooks || !D.hooks->write_rank)
        return KNIT_ERR_NOT_SUPPORTED;
    return IN_SVC(D.hooks->write_rank(m, rank, addr, src, len));
}

static int32_t svc_deliver(knit_mod_ctx_t *m, int32_t rank, const void *data, uint64_t len)
{
    if (D.g.is_switch || !D.hooks || !D.hooks->deliver)
        return KNIT_ERR_NOT_SUPPORTED;
    return IN_SVC(D.hooks->deliver(m, rank, data, len));
}

static int32_t do_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *res, uint64_t len)
{
    kn_dreq_t *r = req_find(token);
    if (!r || r->inst != m || r->held)
        return KNIT_ERR_NOT_FOUND;
    if (len > KN_OFF_MSG_MAX || (len && !res))
        return KNIT_ERR_INVAL;
    if (status > 0)
        status = KNIT_ERR_INVAL;
    req_finish(r, status, res, len);
    return KNIT_OK;
}

static int32_t svc_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *res, uint64_t len)
{
    return IN_SVC(do_complete(m, token, status, res, len));
}

static int32_t do_timer(knit_mod_ctx_t *m, uint64_t delay, uint64_t cookie)
{
    if (!m->desc->on_timer)
        return KNIT_ERR_NOT_SUPPORTED;
    dtimer_t *t = malloc(sizeof(*t));
    if (!t)
        return KNIT_ERR_NOMEM;
    t->due = kn_time_ns() + delay;
    t->cookie = cookie;
    t->inst = m;
    kn_list_t *e;
    kn_list_for_each(e, &D.timers) {
        if (kn_list_entry(e, dtimer_t, link)->due > t->due)
            break;
    }
    kn_list__insert(&t->link, e->prev, e);
    return KNIT_OK;
}

static int32_t svc_timer(knit_mod_ctx_t *m, uint64_t delay, uint64_t cookie)
{
    return IN_SVC(do_timer(m, delay, cookie));
}

static void *do_alloc(knit_mod_ctx_t *m, uint64_t size)
{
    if (size > (1ull << 34))
        return NULL;
    alloc_hdr_t *h = calloc(1, sizeof(*h) + size);
    if (!h)
        return NULL;
    h->size = size;
    D.alloc_bytes += size;
    kn_list_push_back(&m->allocs, &h->link);
    return h + 1;
}

static void *svc_alloc(knit_mod_ctx_t *m, uint64_t size)
{
    return IN_SVC(do_alloc(m, size));
}

static int do_free(knit_mod_ctx_t *m, void *p)
{
    if (!p)
        return 0;
    alloc_hdr_t *h = (alloc_hdr_t *)p - 1;
    kn_list_t *e;
    kn_list_for_each(e, &m->allocs) {
        if (e == &h->link) { /* only what it allocated */
            kn_list_del(&h->link);
            D.alloc_bytes -= h->size;
            free(h);
            return 0;
        }
    }
    kn_warn("module '%s' freed memory it did not allocate (%p): ignored", m->name, p);
    return 0;
}

static void svc_free(knit_mod_ctx_t *m, void *p)
{
    (void)IN_SVC(do_free(m, p));
}

static void svc_set_state(knit_mod_ctx_t *m, void *s)
{
    m->state = s;
}

static void *svc_state(knit_mod_ctx_t *m)
{
    return m->state;
}

static void svc_log(knit_mod_ctx_t *m, int32_t level, const char *fmt, ...)
{
    if (level < 0)
        level = 0;
    if (level > KN_LOG_TRACE)
        level = KN_LOG_TRACE;
    if (level > kn_log_level)
        return;
    svc_enter();
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    kn_log(level, "module %s: %s", m->name, buf);
    svc_leave();
}

static uint64_t svc_now(knit_mod_ctx_t *m)
{
    (void)m;
    return kn_time_ns();
}

static const knit_mod_services_t services = {
    .abi_version = KNIT_MOD_ABI_VERSION,
    .size = sizeof(knit_mod_services_t),
    .geometry = svc_geometry,
    .send = svc_send,
    .multicast = svc_multicast,
    .read_rank = svc_read_rank,
    .write_rank = svc_write_rank,
    .deliver = svc_deliver,
    .complete = svc_complete,
    .timer = svc_timer,
    .alloc = svc_alloc,
    .free = svc_free,
    .set_state = svc_set_state,
    .state = svc_state,
    .log = svc_log,
    .now_ns = svc_now,
};

/* ------------------------------------------------------------ wire */

static int try_send(int dest, outmsg_t *o)
{
    size_t cap = D.tl->max_payload - sizeof(kn_wire_t);
    char pkt[65536];
    if (D.tl->max_payload > sizeof(pkt))
        cap = sizeof(pkt) - sizeof(kn_wire_t);
    do {
        uint64_t n = KN_MIN(o->len - o->sent, cap);
        kn_wire_t w = o->w;
        w.offset = o->sent;
        memcpy(pkt, &w, sizeof(w));
        if (n)
            memcpy(pkt + sizeof(w), o->data + o->sent, n);
        kn_pkt_hdr_t h = {.type = KN_PKT_OFFLOAD, .len = n + sizeof(w)};
        knit_status_t st = D.tl->ops->send(D.tl, dest, &h, pkt, n + sizeof(w));
        if (st == KNIT_ERR_AGAIN)
            return 0;
        if (st != KNIT_OK) {
            kn_error("sending to daemon %d: %s", dest, knit_strerror(st));
            exit(1);
        }
        o->sent += n;
        o->started = 1;
    } while (o->sent < o->len);
    return 1;
}

static void send_msg(int dest, int type, uint32_t mod, uint64_t a, uint64_t b, const void *p1, uint64_t l1,
                     const void *p2, uint64_t l2)
{
    if (dest < 0 || dest >= D.nids || dest == D.g.self)
        return;
    outmsg_t *o = malloc(sizeof(*o) + l1 + l2);
    if (!o) {
        kn_error("out of memory for a %llu-byte message", (unsigned long long)(l1 + l2));
        return;
    }
    o->w = (kn_wire_t){.magic = KN_WIRE_MAGIC, .version = KN_WIRE_VERSION, .type = (uint16_t)type,
                       .auth = D.auth, .mod = mod, .from = D.g.self, .total = l1 + l2, .a = a, .b = b};
    o->data = (char *)(o + 1);
    if (l1)
        memcpy(o->data, p1, l1);
    if (l2)
        memcpy(o->data + l1, p2, l2);
    o->len = l1 + l2;
    o->sent = 0;
    o->started = 0;
    if (D.tl && kn_list_empty(&D.out[dest]) && try_send(dest, o)) {
        free(o);
        return;
    }
    kn_list_push_back(&D.out[dest], &o->link);
    D.backlog++;
}

static int flush_backlog(void)
{
    if (!D.backlog || !D.tl)
        return 0;
    int n = 0;
    for (int i = 0; i < D.nids; i++) {
        while (!kn_list_empty(&D.out[i])) {
            outmsg_t *o = kn_list_first(&D.out[i], outmsg_t, link);
            if (!try_send(i, o))
                break;
            kn_list_del(&o->link);
            free(o);
            D.backlog--;
            n++;
        }
    }
    return n;
}

static void handle_msg(int src, const kn_wire_t *w, const char *p, uint64_t len);

static void on_packet(void *arg, int src, const kn_pkt_hdr_t *hdr, const void *payload, size_t len)
{
    (void)arg;
    kn_wire_t w;
    kn_wire_msg_t m;
    const char *why;
    if (kn_wire_check(hdr, payload, len, D.auth, src, D.nids, &w, &why) != KNIT_OK) {
        kn_warn("dropped a message from daemon %d (type %u, %zu bytes): %s", src, hdr->type, len, why);
        return;
    }
    int whole = kn_wire_reasm_add(&D.rx[src], &w, (const char *)payload + sizeof(w), len - sizeof(w), &m, &why);
    if (why)
        kn_warn("daemon %d: %s", src, why);
    if (whole) {
        handle_msg(src, &m.w, m.data, m.len);
        free(m.owned);
    }
}

/* ------------------------------------------------------------ load / unload */

static void load_done_local(uint64_t seq, int32_t status, uint32_t id, const char *msg)
{
    kn_inst_t *in = D.inst[id % INST_TAB];
    if (status != KNIT_OK && in && in->id == id)
        inst_destroy(in, 1);
    if (!D.g.is_switch && D.hooks && D.hooks->loaded)
        D.hooks->loaded(seq, status, id, msg);
}

static void load_ack(int32_t status, const char *msg)
{
    if (D.L.status == KNIT_OK && status != KNIT_OK) {
        D.L.status = status;
        snprintf(D.L.msg, sizeof(D.L.msg), "%s", msg);
    }
    if (--D.L.acks > 0)
        return;
    D.L.busy = 0;
    for (int i = 1; i < D.nids; i++)
        send_msg(i, W_LOAD_DONE, D.L.id, D.L.seq, (uint32_t)D.L.status, D.L.msg, strlen(D.L.msg) + 1, NULL, 0);
    load_done_local(D.L.seq, D.L.status, D.L.id, D.L.msg);
}

void kn_d_load(uint64_t seq, int where, const char *name, void *bytes, uint64_t len)
{
    char msg[KN_OFF_ERR_MAX] = "";
    if (D.L.busy) {
        D.hooks->loaded(seq, KNIT_ERR_AGAIN, 0, "another load is in progress");
        return;
    }
    if (!bytes) { /* a verdict without a load: name is the reason */
        for (int i = 1; i < D.nids; i++)
            send_msg(i, W_LOAD_DONE, 0, seq, (uint32_t)KNIT_ERR_NOT_FOUND, name, strlen(name) + 1, NULL, 0);
        load_done_local(seq, KNIT_ERR_NOT_FOUND, 0, name);
        return;
    }
    uint32_t id;
    do
        id = ++D.next_id;
    while (id == 0 || id == KN_OFF_MOD_BUILTIN || D.inst[id % INST_TAB]);
    D.L.busy = 1;
    D.L.seq = seq;
    D.L.id = id;
    D.L.acks = D.nids;
    D.L.status = KNIT_OK;
    D.L.msg[0] = '\0';
    char nm[KNIT_MOD_NAME_MAX] = {0};
    snprintf(nm, sizeof(nm), "%s", name);
    for (int i = 1; i < D.nids; i++)
        send_msg(i, W_LOAD, id, seq, (uint64_t)where, nm, sizeof(nm), bytes, len);
    int32_t st = inst_load(id, where, nm, bytes, len, msg, sizeof(msg));
    load_ack(st, msg);
}

static void unload_here(kn_inst_t *in)
{
    uint32_t id = in->id;
    inst_destroy(in, 1);
    if (!D.g.is_switch && D.hooks && D.hooks->unloaded)
        D.hooks->unloaded(id);
}

static void switch_unloaded(kn_inst_t *in)
{
    for (int i = 0; i < D.g.nnodes; i++)
        send_msg(i, W_UNLOAD_DONE, in->id, 0, 0, NULL, 0, NULL, 0);
    unload_here(in);
}

static void check_unloaded(kn_inst_t *in)
{
    if (in->unload_sent || in->nunloaded < D.g.local_size)
        return;
    in->unload_sent = 1;
    send_msg(D.g.nnodes, W_UNLOAD, in->id, 0, 0, NULL, 0, NULL, 0);
}

void kn_d_unload(uint32_t id, int slot)
{
    kn_inst_t *in = kn_d_inst(id);
    if (!in) {
        if (D.hooks && D.hooks->unloaded)
            D.hooks->unloaded(id); /* nothing to wait for */
        return;
    }
    if (slot < 0 || slot >= D.g.local_size || in->unloaded[slot])
        return;
    in->unloaded[slot] = 1;
    in->nunloaded++;
    /* the rank's own open requests end now */
    kn_list_t *e, *t;
    kn_list_for_each_safe(e, t, &in->reqs) {
        kn_dreq_t *r = kn_list_entry(e, kn_dreq_t, link);
        if (r->origin < 0 && r->slot == slot)
            req_finish(r, KNIT_ERR_CANCELED, "module unloaded", 16);
    }
    check_unloaded(in);
}

void kn_d_rank_gone(int slot)
{
    for (int i = 0; i < INST_TAB; i++) {
        kn_inst_t *in = D.inst[i];
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
    for (uint32_t i = 0; i < D.nreqs; i++) {
        kn_dreq_t *r = D.reqs[i];
        if (r && r->held && r->slot == slot)
            kn_d_release(r);
    }
}

/* ------------------------------------------------------------ dispatch */

static void dispatch_request(kn_dreq_t *r, const void *args, uint64_t len)
{
    knit_mod_request_t q = {.token = r->token, .rank = r->rank, .node = -1, .len = len};
    q.node = r->origin < 0 ? D.g.self : r->origin;
    call_t c = {.what = 0, .req = &q, .data = args, .len = len};
    kn_inst_t *in = r->inst;
    run_protected(in, &c);
}

/* The record of a request from a rank of this node (NULL: it was failed
 * with KNIT_ERR_NOMEM already). */
static kn_dreq_t *local_req(kn_inst_t *in, int slot, int32_t rank, uint64_t rank_id)
{
    kn_dreq_t *r = req_new(in);
    if (!r) {
        kn_dreq_t tmp = {.origin = -1, .slot = slot, .rank = rank, .rank_id = rank_id};
        D.hooks->complete(&tmp, KNIT_ERR_NOMEM, NULL, 0);
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
        D.hooks->complete(&tmp, KNIT_ERR_NOT_FOUND, "no such module", 15);
        return;
    }
    if (in->faulted || in->unloaded[slot]) {
        const char *m = in->faulted ? in->fault : "module unloaded";
        D.hooks->complete(&tmp, in->faulted ? KNIT_ERR_MODULE_FAULT : KNIT_ERR_STATE, m, strlen(m) + 1);
        return;
    }
    kn_dreq_t *r = local_req(in, slot, rank, rank_id);
    if (!r)
        return;
    if (in->placement == KNIT_MOD_AT_SWITCH) {
        send_msg(D.g.nnodes, W_REQ, mod, r->token, (uint32_t)rank, args, len, NULL, 0);
        return;
    }
    dispatch_request(r, args, len);
}

/* The compiled-in handler (the benchmark's baseline): the same request
 * records and completion path as a module, called directly instead of
 * through a loaded .so and the protected dispatcher. */
static void builtin_request(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args)
{
    (void)args;
    do_complete(m, req->token, KNIT_OK, NULL, 0);
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
        kn_list_init(&builtin.allocs);
    }
    kn_dreq_t *r = local_req(&builtin, slot, rank, rank_id);
    if (!r)
        return;
    knit_mod_request_t q = {.token = r->token, .rank = rank, .node = D.g.self};
    builtin_desc.on_request(&builtin, &q, NULL);
}

static void deliver_message(kn_inst_t *in, int32_t from, const void *p, uint64_t len)
{
    if (!in->desc->on_message || in->faulted)
        return;
    call_t c = {.what = 1, .from = from, .data = p, .len = len};
    run_protected(in, &c);
}

static void handle_msg(int src, const kn_wire_t *w, const char *p, uint64_t len)
{
    kn_inst_t *in = kn_d_inst(w->mod);
    char msg[KN_OFF_ERR_MAX];
    int32_t from = src == D.g.nnodes ? KNIT_MOD_SWITCH : src;
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
        int32_t st = inst_load(w->mod, (int)w->b, nm, p + sizeof(nm), len - sizeof(nm), msg, sizeof(msg));
        send_msg(0, W_LOAD_ACK, w->mod, w->a, (uint32_t)st, msg, strlen(msg) + 1, NULL, 0);
        return;
    }
    case W_LOAD_ACK:
        if (D.g.self != 0 || !D.L.busy || w->a != D.L.seq || w->mod != D.L.id)
            goto bad;
        load_ack((int32_t)(uint32_t)w->b, p);
        return;
    case W_LOAD_DONE:
        if (src != 0)
            goto bad;
        load_done_local(w->a, (int32_t)(uint32_t)w->b, w->mod, p);
        return;
    case W_UNLOAD:
        if (!D.g.is_switch || src >= D.g.nnodes)
            goto bad;
        if (in && ++in->nunloaded >= D.g.nnodes)
            switch_unloaded(in);
        return;
    case W_UNLOAD_DONE:
        if (src != D.g.nnodes)
            goto bad;
        if (in)
            unload_here(in);
        return;
    case W_MSG:
        if (!in) {
            kn_debug("message for module %u that is not loaded here: dropped", w->mod);
            return;
        }
        deliver_message(in, from, p, len);
        return;
    case W_REQ: {
        if (!D.g.is_switch)
            goto bad;
        if (!in || in->faulted) {
            const char *m = in ? in->fault : "no such module at the switch";
            send_msg(src, W_DONE, w->mod, w->a, (uint32_t)(in ? KNIT_ERR_MODULE_FAULT : KNIT_ERR_NOT_FOUND), m,
                     strlen(m) + 1, NULL, 0);
            return;
        }
        kn_dreq_t *r = req_new(in);
        if (!r) {
            send_msg(src, W_DONE, w->mod, w->a, (uint32_t)KNIT_ERR_NOMEM, NULL, 0, NULL, 0);
            return;
        }
        r->origin = src;
        r->origin_token = w->a;
        r->rank = (int32_t)(uint32_t)w->b;
        dispatch_request(r, p, len);
        return;
    }
    case W_DONE: {
        kn_dreq_t *r = req_find(w->a);
        if (D.g.is_switch || !r || r->held) {
            kn_debug("completion for an unknown request: dropped");
            return;
        }
        req_finish(r, (int32_t)(uint32_t)w->b, p, len);
        return;
    }
    case W_FAULT:
        if (in)
            disable_inst(in, p, 0);
        return;
    }
bad:
    kn_warn("dropped an unexpected message (type %u) from daemon %d", w->type, src);
}

/* ------------------------------------------------------------ loop */

int kn_d_watch(int fd, void (*fn)(int, uint32_t, void *), void *arg)
{
    if (D.nwatches == (int)KN_ARRAY_SIZE(D.watches)) {
        /* reuse a free one */
        int i;
        for (i = 0; i < D.nwatches && D.watches[i].fd >= 0; i++)
            ;
        if (i == D.nwatches)
            return -1;
        D.watches[i] = (watch_t){fd, fn, arg};
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        return epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    int i;
    for (i = 0; i < D.nwatches && D.watches[i].fd >= 0; i++)
        ;
    if (i == D.nwatches)
        D.nwatches++;
    D.watches[i] = (watch_t){fd, fn, arg};
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        kn_error("epoll_ctl: %m");
        D.watches[i].fd = -1;
        return -1;
    }
    return 0;
}

void kn_d_unwatch(int fd)
{
    for (int i = 0; i < D.nwatches; i++)
        if (D.watches[i].fd == fd) {
            epoll_ctl(D.epfd, EPOLL_CTL_DEL, fd, NULL);
            D.watches[i].fd = -1;
        }
}

static void on_signal(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof(si)) == sizeof(si))
        D.stop = 1;
}

static void on_nothing(int fd, uint32_t ev, void *arg)
{
    (void)fd, (void)ev, (void)arg;
}

static int run_timers(void)
{
    if (kn_list_empty(&D.timers) && kn_list_empty(&D.selfq))
        return 0;
    int n = 0;
    /* self messages queued before this round */
    kn_list_t q;
    kn_list_init(&q);
    if (!kn_list_empty(&D.selfq)) {
        q.next = D.selfq.next;
        q.prev = D.selfq.prev;
        q.next->prev = &q;
        q.prev->next = &q;
        kn_list_init(&D.selfq);
    }
    while (!kn_list_empty(&q)) {
        selfmsg_t *s = kn_list_first(&q, selfmsg_t, link);
        kn_list_del(&s->link);
        kn_inst_t *in = kn_d_inst(s->id);
        if (in == s->inst)
            deliver_message(in, s->from, s->data, s->len);
        free(s);
        n++;
    }
    uint64_t now = kn_time_ns();
    while (!kn_list_empty(&D.timers)) {
        dtimer_t *t = kn_list_first(&D.timers, dtimer_t, link);
        if (t->due > now)
            break;
        kn_list_del(&t->link);
        kn_inst_t *in = t->inst;
        call_t c = {.what = 2, .cookie = t->cookie};
        free(t);
        run_protected(in, &c);
        n++;
    }
    return n;
}

/* The network's wait fd is watched edge-triggered: some providers keep it
 * readable while nothing is left for us (a socket they poll for
 * writing), which level-triggered would turn into a busy loop.  Edge-
 * triggered wakes us for every new arrival; the loop always runs progress
 * and arms again before it sleeps, so none is missed, and a sleep with the
 * network up is bounded (1 s) all the same. */
static void net_watch(int fd)
{
    if (D.net_fd >= 0)
        kn_d_unwatch(D.net_fd);
    D.net_fd = fd;
    int i = kn_d_watch(fd, on_nothing, NULL);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
    for (i = 0; i < D.nwatches; i++)
        if (D.watches[i].fd == fd)
            ev.data.u32 = (uint32_t)i;
    if (epoll_ctl(D.epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        kn_warn("epoll_ctl(EPOLLET): %m");
}

static int next_timeout_ms(void)
{
    if (!kn_list_empty(&D.selfq))
        return 0;
    int cap = !D.tl ? -1 : D.tl->ops->arm ? 1000 : 1; /* without a wait fd: poll the network */
    if (kn_list_empty(&D.timers))
        return cap;
    uint64_t now = kn_time_ns(), due = kn_list_first(&D.timers, dtimer_t, link)->due;
    if (due <= now)
        return 0;
    uint64_t ms = (due - now + KN_NSEC_PER_MSEC - 1) / KN_NSEC_PER_MSEC;
    if (cap >= 0 && ms > (uint64_t)cap)
        ms = (uint64_t)cap;
    return ms > 60000 ? 60000 : (int)ms;
}

int kn_d_run(void)
{
    uint64_t last = kn_time_ns();
    while (!D.stop) {
        int work = 0;
        if (D.hooks && D.hooks->poll)
            work += D.hooks->poll();
        if (D.tl)
            work += D.tl->ops->progress(D.tl);
        work += flush_backlog();
        work += run_timers();
        uint64_t now = kn_time_ns();
        if (work) {
            last = now;
            continue;
        }
        if (now - last < D.spin) {
            kn_cpu_relax();
            continue;
        }
        if (D.hooks && D.hooks->want_sleep && !D.hooks->want_sleep()) {
            last = kn_time_ns();
            continue;
        }
        /* the network's wait fd, armed (-1: it has work for progress) */
        if (D.tl && D.tl->ops->arm) {
            int fd = D.tl->ops->arm(D.tl);
            if (fd < 0) {
                if (D.hooks && D.hooks->woke)
                    D.hooks->woke();
                continue;
            }
            if (fd != D.net_fd)
                net_watch(fd);
        }
        budget_timer(0);
        struct epoll_event ev[16];
        int n = epoll_wait(D.epfd, ev, 16, next_timeout_ms());
        if (D.tl && D.tl->ops->arm && D.tl->ops->disarm)
            D.tl->ops->disarm(D.tl);
        if (D.hooks && D.hooks->woke)
            D.hooks->woke();
        budget_timer(1);
        if (n < 0 && errno != EINTR) {
            kn_error("epoll_wait: %m");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            watch_t *w = &D.watches[ev[i].data.u32];
            if (w->fd >= 0)
                w->fn(w->fd, ev[i].events, w->arg);
        }
        last = kn_time_ns();
    }
    budget_timer(0);
    if (D.hooks && D.hooks->at_exit)
        D.hooks->at_exit();
    if (D.net_started && !D.tl)
        _exit(0); /* still connecting (it owns the store connection): nothing to tidy */
    for (int i = 0; i < INST_TAB; i++)
        if (D.inst[i])
            inst_destroy(D.inst[i], 1);
    /* the job is over (SIGTERM from knitrun): the peers are going too, so
     * nothing is flushed or closed gracefully on the network */
    kn_boot_finalize(D.boot);
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

static int env_num(const char *name, int *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v)
        return -1;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < 0 || x > 1 << 24)
        return -1;
    *out = (int)x;
    return 0;
}

knit_status_t kn_d_start(int is_switch, const kn_d_hooks_t *hooks)
{
    kn_log_set_prefix(is_switch ? "switch" : "agent");
    knit_status_t st = kn_config_load();
    if (st != KNIT_OK)
        return st;
    D.hooks = hooks;
    D.g.is_switch = is_switch;
    D.net_fd = -1;
    D.budget = kn_cfg.module_budget;
    D.spin = kn_cfg.agent_spin;
    kn_list_init(&D.timers);
    kn_list_init(&D.selfq);
    const char *sizes = getenv(KN_ENV_NODE_SIZES), *cookie = getenv(KN_ENV_COOKIE);
    D.g.jobid = getenv(KN_ENV_JOBID);
    if (!sizes || !cookie || !D.g.jobid || env_num(KN_ENV_SIZE, &D.g.nranks) < 0 ||
        env_num(KN_ENV_NNODES, &D.g.nnodes) < 0 || D.g.nnodes < 1 ||
        (!is_switch && (env_num(KN_ENV_NODE, &D.g.self) < 0 || D.g.self >= D.g.nnodes))) {
        kn_error("started without the job's environment (KNIT_JOBID, KNIT_COOKIE, KNIT_SIZE, KNIT_NNODES, "
                 "KNIT_NODE_SIZES%s): knit daemons are started by knitrun", is_switch ? "" : ", KNIT_NODE");
        return KNIT_ERR_INVAL;
    }
    D.g.cookie = cookie;
    if (is_switch)
        D.g.self = D.g.nnodes;
    kn_log_set_prefix(is_switch ? "switch" : "agent %d", D.g.self);
    D.node_first = calloc((size_t)D.g.nnodes + 1, sizeof(int));
    if (!D.node_first)
        return KNIT_ERR_NOMEM;
    const char *p = sizes;
    int total = 0;
    for (int n = 0; n < D.g.nnodes; n++) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p || k < 1 || (*end != ',' && *end != '\0') || total + k > D.g.nranks) {
            kn_error("%s: invalid node map '%s'", KN_ENV_NODE_SIZES, sizes);
            return KNIT_ERR_INVAL;
        }
        D.node_first[n] = total;
        total += (int)k;
        p = end + (*end == ',');
    }
    D.node_first[D.g.nnodes] = total;
    if (total != D.g.nranks) {
        kn_error("%s: '%s' does not add up to %d ranks", KN_ENV_NODE_SIZES, sizes, D.g.nranks);
        return KNIT_ERR_INVAL;
    }
    D.g.node_first = D.node_first;
    if (!is_switch) {
        D.g.first_local = D.node_first[D.g.self];
        D.g.local_size = D.node_first[D.g.self + 1] - D.g.first_local;
    }
    D.nids = D.g.nnodes + 1;
    D.auth = kn_off_cookie_digest(cookie);
    D.out = calloc((size_t)D.nids, sizeof(*D.out));
    D.rx = calloc((size_t)D.nids, sizeof(*D.rx));
    if (!D.out || !D.rx)
        return KNIT_ERR_NOMEM;
    for (int i = 0; i < D.nids; i++)
        kn_list_init(&D.out[i]);
    for (size_t i = 0; i < KN_ARRAY_SIZE(D.watches); i++)
        D.watches[i].fd = -1;

    D.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (D.epfd < 0) {
        kn_error("epoll_create1: %m");
        return KNIT_ERR_IO;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    D.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (D.sigfd < 0 || kn_d_watch(D.sigfd, on_signal, NULL) < 0) {
        kn_error("signalfd: %m");
        return KNIT_ERR_IO;
    }
    if (protection_init() < 0)
        return KNIT_ERR_IO;
    st = kn_boot_connect(getenv(KN_ENV_BOOT_ADDR), cookie, KN_BOOT_ROLE_DAEMON, D.g.self, &D.boot);
    if (st != KNIT_OK) {
        kn_error("cannot reach the bootstrap store: %s", knit_strerror(st));
        return st;
    }
    return KNIT_OK;
}

const kn_d_geo_t *kn_d_geo(void)
{
    return &D.g;
}

knit_status_t kn_d_put(const char *key, const void *val, size_t len)
{
    return kn_boot_put(D.boot, key, val, len);
}

static void *net_main(void *arg)
{
    (void)arg;
    kn_tl_t *tl = NULL;
    unsigned char *mask = calloc((size_t)D.nids, 1);
    knit_status_t st = KNIT_ERR_NOMEM;
    if (!mask)
        goto out;
    /* The network is opened when the job first loads a module: an agent
     * starts when one of its ranks loads, and says so in the store; the
     * switch waits for that word (asleep in the store's get).  A job that
     * never loads a module never pays for it. */
    char word[8];
    size_t wl;
    if (D.g.is_switch)
        st = kn_boot_get(D.boot, "knit.off.start", word, sizeof(word), &wl);
    else
        st = kn_boot_put(D.boot, "knit.off.start", "1", 1);
    if (st != KNIT_OK)
        goto out;
    for (int i = 0; i < D.nids; i++)
        mask[i] = i != D.g.self && (!D.g.is_switch || i < D.g.nnodes);
    kn_net_params_t np = {
        .rank = D.g.self, .size = D.nids, .peers = mask,
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
    snprintf(key, sizeof(key), "knit.off.net.%d", D.g.self);
    if ((st = kn_boot_put(D.boot, key, name, len)) != KNIT_OK)
        goto out;
    for (int i = 0; i < D.nids; i++) {
        if (!mask[i])
            continue;
        snprintf(key, sizeof(key), "knit.off.net.%d", i);
        if ((st = kn_boot_get(D.boot, key, name, sizeof(name), &len)) != KNIT_OK) {
            kn_error("network address of daemon %d: %s", i, knit_strerror(st));
            goto out;
        }
        if ((st = kn_net_connect(tl, i, name, len)) != KNIT_OK)
            goto out;
    }
out:
    free(mask);
    D.net_tl = tl;
    D.net_status = st;
    uint64_t one = 1;
    if (write(D.net_ready_fd, &one, sizeof(one)) < 0)
        kn_error("net ready: %m");
    return NULL;
}

static void on_net_ready(int fd, uint32_t ev, void *arg)
{
    (void)ev, (void)arg;
    uint64_t v;
    if (read(fd, &v, sizeof(v)) < 0)
        return;
    pthread_join(D.net_thread, NULL);
    kn_d_unwatch(fd);
    close(fd);
    if (D.net_status != KNIT_OK) {
        kn_error("network between daemons: %s", knit_strerror(D.net_status));
        exit(1);
    }
    D.tl = D.net_tl;
    if (!D.tl->ops->arm)
        kn_info("the network has no wait fd: polling it every millisecond when idle");
    kn_debug("network between daemons up");
}

knit_status_t kn_d_net_start(void)
{
    if (D.net_started)
        return KNIT_OK;
    D.net_ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (D.net_ready_fd < 0 || kn_d_watch(D.net_ready_fd, on_net_ready, NULL) < 0) {
        kn_error("eventfd: %m");
        return KNIT_ERR_IO;
    }
    /* the thread takes no signal: SIGALRM is the module budget's, of the main thread */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&D.net_thread, NULL, net_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        kn_error("pthread_create: %s", strerror(rc));
        return KNIT_ERR_IO;
    }
    D.net_started = 1;
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
    out[2] = (uint64_t)D.ninst;
    out[3] = D.open_reqs;
    out[4] = D.alloc_bytes;
    out[5] = (uint64_t)D.g.self;
    out[6] = (uint64_t)getpid();
    struct mallinfo2 mi = mallinfo2();
    out[7] = mi.uordblks + mi.hblkhd;
}
