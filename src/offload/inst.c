/*
 * Module instances in a daemon (daemon_int.h): their records, open
 * requests, the services they call, and the protection of instances that
 * run inside the daemon (KNIT_MODULE_ISOLATION=inprocess); instances in
 * a process of their own are sandbox.c's.
 *
 * In-process protection.  Every call into module code goes through
 * run_protected(): it counts the call, sigsetjmp()s, and calls the
 * handler.  SIGSEGV, SIGBUS, SIGFPE and SIGILL are caught on an alternate
 * stack (a stack overflow still gets a stack); when they hit while module
 * code runs, the handler siglongjmp()s back to the dispatcher, which
 * disables the module (its open requests fail with KNIT_ERR_MODULE_FAULT
 * and the reason), tells the other daemons, and goes on.  The budget
 * (KNIT_MODULE_BUDGET): a periodic SIGALRM every quarter budget (armed
 * only while the daemon is awake and has modules, so an idle daemon
 * sleeps undisturbed) jumps out the same way from a call that used the
 * budget's processor time, or waited ten budgets (no clock read per
 * call).  While a service runs
 * for a module (in_service), the budget waits for the service to return,
 * so that the daemon's own structures are never left half-updated; a
 * fault inside a service (a bad pointer from the module) still counts as
 * the module's.  A fault outside module code is a bug of the daemon: it
 * dies with the signal (knitrun reports it).  What this cannot contain
 * (module code writing over the daemon's memory, threads, system calls
 * made directly) is why process isolation is the default: docs/modules.md.
 */
#include "offload/daemon_int.h"

#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "offload/sandbox.h"
#include "offload/sbx.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/time.h"

/* ------------------------------------------------------------ protection */

static struct {
    sigjmp_buf env;
    volatile sig_atomic_t in_module, in_service, budget_hit;
    volatile sig_atomic_t loading;  /* a module's constructors may run (dlopen) */
    volatile uint64_t call_seq;  /* counts calls into module code */
    uint64_t seen_seq;           /* the call the alarm saw last */
    uint64_t seen_cpu;           /* the thread's processor time then */
    int ticks;                   /* alarms that saw the same call */
    volatile int sig;            /* what ended the call: a signal, or SIG_CALLED */
    void *volatile addr;
    const char *volatile how;    /* SIG_CALLED: exit, _exit, abort... */
    volatile int code;
    sigset_t mask;               /* the daemon's own signal mask */
    pthread_t thread;            /* the one that runs module code */
} P;

/* A call ended because the module called how(code) (kn_d_module_ends). */
#define SIG_CALLED (-1)

static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (!P.in_module) {
        /* sent, not raised by a faulting instruction (raise() or kill()
         * in a module's constructor): nothing to die of */
        if (si->si_code <= 0)
            return;
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
 * budget/4 on the wall and looks at the thread's processor time: a call
 * that the ticks find still running after it used 3/4 of the budget since
 * the first tick saw it (so between 3/4 of the budget and the budget and
 * a quarter) is stopped, and so is one that 4 * KN_D_WAIT_BUDGETS ticks
 * found (it waits instead of running).  A daemon that the machine did not
 * run stops nothing. */

static uint64_t thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* async-signal-safe */
    return (uint64_t)ts.tv_sec * KN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void alarm_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    if (!P.in_module) {
        P.ticks = 0;
        return;
    }
    if (P.call_seq != P.seen_seq) {
        P.seen_seq = P.call_seq;
        P.seen_cpu = thread_cpu();
        P.ticks = 1;
        return;
    }
    if (thread_cpu() - P.seen_cpu < kn_dmn.budget / 4 * 3 && ++P.ticks < 4 * KN_D_WAIT_BUDGETS)
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

int kn_d_protection_init(void)
{
    P.thread = pthread_self();
    sigprocmask(SIG_SETMASK, NULL, &P.mask);
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
    if (timer_create(CLOCK_MONOTONIC, &sev, &kn_dmn.btimer) == 0)
        kn_dmn.btimer_ok = 1;
    else
        kn_warn("timer_create: %m (module time budget not enforced)");
    return 0;
}

void kn_d_budget_timer(int on)
{
    on = on && kn_dmn.ninst > 0 && kn_dmn.btimer_ok && kn_dmn.budget > 0;
    if (on == kn_dmn.btimer_armed)
        return;
    uint64_t iv = on ? KN_MAX(kn_dmn.budget / 4, KN_NSEC_PER_MSEC) : 0;
    struct itimerspec its = {
        .it_interval = {.tv_sec = (time_t)(iv / KN_NSEC_PER_SEC), .tv_nsec = (long)(iv % KN_NSEC_PER_SEC)},
        .it_value = {.tv_sec = (time_t)(iv / KN_NSEC_PER_SEC), .tv_nsec = (long)(iv % KN_NSEC_PER_SEC)},
    };
    if (timer_settime(kn_dmn.btimer, 0, &its, NULL) == 0)
        kn_dmn.btimer_armed = on;
}

int kn_d_in_module(void)
{
    /* module code runs on the daemon's own thread only: the network
     * thread's calls are the daemon's */
    return (P.in_module || P.loading) && pthread_equal(pthread_self(), P.thread);
}

void kn_d_module_ends(const char *how, int code)
{
    if (P.in_module) {
        P.sig = SIG_CALLED;
        P.how = how;
        P.code = code;
        P.addr = NULL;
        P.in_module = 0;
        siglongjmp(P.env, 1);
    }
    if (P.loading) {
        /* inside dlopen: no way back that leaves the loader sane (the
         * probe in a process of its own saw no such call) */
        kn_error("a module's constructor called %s() in the daemon: it cannot go on "
                 "(KNIT_MODULE_ISOLATION=process contains this)", how);
        syscall(SYS_exit_group, 1);
    }
}

const char *kn_d_sig_text(int sig, void *addr, char *buf, size_t len)
{
    switch (sig) {
    case SIG_CALLED:
        if (P.code < 0)
            snprintf(buf, len, "called %s()", P.how);
        else
            snprintf(buf, len, "called %s(%d)", P.how, P.code);
        break;
    case SIGSEGV: snprintf(buf, len, "SIGSEGV (invalid memory access at %p)", addr); break;
    case SIGBUS: snprintf(buf, len, "SIGBUS (bus error at %p)", addr); break;
    case SIGFPE: snprintf(buf, len, "SIGFPE (arithmetic fault, e.g. division by zero)"); break;
    case SIGILL: snprintf(buf, len, "SIGILL (illegal instruction at %p)", addr); break;
    case SIGALRM:
        snprintf(buf, len, "time budget exceeded (KNIT_MODULE_BUDGET=%.0f ms)", (double)kn_dmn.budget / 1e6);
        break;
    default: snprintf(buf, len, "signal %d", sig);
    }
    return buf;
}

const char *kn_d_name(char *buf, size_t len)
{
    if (!kn_dmn.g.is_switch)
        snprintf(buf, len, "agent %d", kn_dmn.g.self);
    else if (kn_dmn.tree.nswitches == 1)
        snprintf(buf, len, "switch");
    else
        snprintf(buf, len, "switch %d", kn_dmn.g.self - kn_dmn.g.nnodes);
    return buf;
}

const char *kn_d_self_name(char *buf, size_t len)
{
    char name[32];
    kn_d_name(name, sizeof(name));
    snprintf(buf, len, "%s%s", strcmp(name, "switch") ? "" : "the ", name);
    return buf;
}

typedef struct call {
    int what; /* 0 request, 1 message, 2 timer, 3 fini, (4 init), 5 header */
    knit_mod_route_t *route;
    uint64_t plen;
    int32_t status;
    const knit_mod_request_t *req;
    const void *data;
    int32_t from;
    uint64_t len, cookie;
} call_t;

static const char *what_name[] = {"on_request", "on_message", "on_timer", "fini", "init", "on_header"};

static void call_handler(kn_inst_t *in, call_t *c)
{
    switch (c->what) {
    case 0: in->desc->on_request(in, c->req, c->data); break;
    case 1: in->desc->on_message(in, c->from, c->data, c->len); break;
    case 2: in->desc->on_timer(in, c->cookie); break;
    case 3: in->desc->fini(in); break;
    case 5: c->status = in->desc->on_header(in, c->from, c->data, c->len, c->plen, c->route); break;
    }
}

/* Run module code protected.  KNIT_OK, or KNIT_ERR_MODULE_FAULT (the
 * module is disabled then). */
static knit_status_t run_protected(kn_inst_t *in, call_t *c)
{
    if (in->faulted)
        return KNIT_ERR_MODULE_FAULT;
    if (sigsetjmp(P.env, 0)) {
        /* back from a fault: the signal is not blocked (SA_NODEFER); what
         * the module did to the mask is undone */
        sigprocmask(SIG_SETMASK, &P.mask, NULL);
        P.in_service = 0;
        P.budget_hit = 0;
        char why[128], self[32], msg[KN_OFF_ERR_MAX];
        snprintf(msg, sizeof(msg), "module '%s' disabled: %s in %s at %s", in->name,
                 kn_d_sig_text(P.sig, P.addr, why, sizeof(why)), what_name[c->what],
                 kn_d_self_name(self, sizeof(self)));
        kn_error("%s", msg);
        kn_d_inst_disable(in, msg, 1);
        return KNIT_ERR_MODULE_FAULT;
    }
    kn_d_budget_timer(1); /* (the loop lets it go once idle: kn_d_run) */
    P.call_seq++;
    P.in_module = 1;
    call_handler(in, c);
    P.in_module = 0;
    return KNIT_OK;
}

/* ------------------------------------------------------------ requests */

kn_dreq_t *kn_d_req_new(kn_inst_t *in)
{
    uint32_t idx;
    if (kn_dmn.nfree) {
        idx = kn_dmn.req_free[--kn_dmn.nfree];
    } else {
        if (kn_dmn.nreqs == kn_dmn.reqs_cap) {
            uint32_t cap = kn_dmn.reqs_cap ? kn_dmn.reqs_cap * 2 : 256;
            kn_dreq_t **r = realloc(kn_dmn.reqs, cap * sizeof(*r));
            if (!r)
                return NULL;
            kn_dmn.reqs = r;
            uint32_t *g = realloc(kn_dmn.req_gen, cap * sizeof(*g));
            if (!g)
                return NULL;
            kn_dmn.req_gen = g;
            uint32_t *f = realloc(kn_dmn.req_free, cap * sizeof(*f));
            if (!f)
                return NULL;
            kn_dmn.req_free = f;
            kn_dmn.reqs_cap = cap;
        }
        idx = kn_dmn.nreqs++;
        kn_dmn.req_gen[idx] = 0;
    }
    kn_dreq_t *r = kn_dmn.spare;
    if (r) {
        kn_dmn.spare = (kn_dreq_t *)r->result;
        kn_dmn.nspare--;
        memset(r, 0, sizeof(*r));
    } else {
        r = calloc(1, sizeof(*r));
    }
    if (!r) {
        kn_dmn.req_free[kn_dmn.nfree++] = idx;
        return NULL;
    }
    kn_dmn.reqs[idx] = r;
    r->token = (uint64_t)++kn_dmn.req_gen[idx] << 32 | idx;
    r->inst = in;
    kn_list_init(&r->link);
    if (in)
        kn_list_push_back(&in->reqs, &r->link);
    kn_dmn.open_reqs++;
    return r;
}

kn_dreq_t *kn_d_req_find(uint64_t token)
{
    uint32_t idx = (uint32_t)token;
    if (idx >= kn_dmn.nreqs || !kn_dmn.reqs[idx] || kn_dmn.reqs[idx]->token != token)
        return NULL;
    return kn_dmn.reqs[idx];
}

void kn_d_release(kn_dreq_t *r)
{
    uint32_t idx = (uint32_t)r->token;
    kn_list_del(&r->link);
    kn_dmn.reqs[idx] = NULL;
    kn_dmn.req_free[kn_dmn.nfree++] = idx;
    kn_dmn.open_reqs--;
    free(r->result);
    if (kn_dmn.nspare < 1024) { /* kept for the next request: no malloc per request */
        r->result = kn_dmn.spare;
        kn_dmn.spare = r;
        kn_dmn.nspare++;
    } else {
        free(r);
    }
}

kn_dreq_t *kn_d_held(uint64_t token)
{
    kn_dreq_t *r = kn_d_req_find(token);
    return r && r->held ? r : NULL;
}

void kn_d_send_msg(int dest, int type, uint32_t mod, uint64_t a, uint64_t b, const void *p1,
                     uint64_t l1, const void *p2, uint64_t l2);

/* End request r with a result: to the local rank (hook) or back to the
 * forwarding agent. */
void kn_d_req_finish(kn_dreq_t *r, int32_t status, const void *res, uint64_t len)
{
    if (r->origin < 0) {
        if (kn_dmn.hooks && kn_dmn.hooks->complete)
            kn_dmn.hooks->complete(r, status, res, len);
        if (r->held) {
            kn_list_del(&r->link); /* no longer the module's */
            r->inst = NULL;
            return;
        }
    } else {
        kn_d_send_msg(r->origin, W_DONE, r->inst ? r->inst->id : 0, r->origin_token, (uint32_t)status, res,
                 len, NULL, 0);
    }
    kn_d_release(r);
}

static void fail_open(kn_inst_t *in, int32_t status, const char *msg)
{
    while (!kn_list_empty(&in->reqs)) {
        kn_dreq_t *r = kn_list_first(&in->reqs, kn_dreq_t, link);
        kn_d_req_finish(r, status, msg, msg ? strlen(msg) + 1 : 0);
    }
}

/* ------------------------------------------------------------ instances */

kn_inst_t *kn_d_inst(uint32_t id)
{
    kn_inst_t *in = kn_dmn.inst[id % KN_INST_TAB];
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
    kn_list_for_each_safe(e, t, &kn_dmn.timers) {
        dtimer_t *tm = kn_list_entry(e, dtimer_t, link);
        if (tm->inst == in) {
            kn_list_del(&tm->link);
            free(tm);
        }
    }
    kn_list_for_each_safe(e, t, &kn_dmn.selfq) {
        selfmsg_t *s = kn_list_entry(e, selfmsg_t, link);
        if (s->inst == in) {
            kn_list_del(&s->link);
            free(s);
        }
    }
}

void kn_d_inst_disable(kn_inst_t *in, const char *msg, int tell)
{
    if (in->faulted)
        return;
    in->faulted = 1;
    snprintf(in->fault, sizeof(in->fault), "%s", msg);
    drop_timers(in);
    if (in->sbx) {
        kn_sbx_stop(in->sbx, 0, 0);
        in->sbx = NULL;
    }
    fail_open(in, KNIT_ERR_MODULE_FAULT, in->fault);
    if (tell)
        for (int i = 0; i < kn_dmn.nids; i++)
            if (i != kn_dmn.g.self)
                kn_d_send_msg(i, W_FAULT, in->id, 0, 0, in->fault, strlen(in->fault) + 1, NULL, 0);
}

int kn_d_inst_destroy(kn_inst_t *in, int call_fini)
{
    int st = KNIT_OK;
    in->dead = 1;
    fail_open(in, KNIT_ERR_CANCELED, "module unloaded");
    drop_timers(in);
    call_fini = call_fini && !in->faulted && (in->has & KN_SBX_HAS_FINI);
    if (in->sbx) {
        if (kn_sbx_stop(in->sbx, call_fini, in->id))
            st = KNIT_INPROGRESS;
        in->sbx = NULL;
    } else if (call_fini) {
        call_t c = {.what = 3};
        run_protected(in, &c);
    }
    kn_dmn.alloc_bytes -= in->mem.bytes;
    kn_mod_mem_release(&in->mem);
    kn_mod_close(&in->lib);
    if (kn_dmn.inst[in->id % KN_INST_TAB] == in) {
        kn_dmn.inst[in->id % KN_INST_TAB] = NULL;
        kn_dmn.ninst--;
    }
    free(in->unloaded);
    free(in);
    if (kn_dmn.ninst == 0)
        kn_d_budget_timer(0);
    return st;
}

static const knit_mod_services_t services;

/* A module function run protected (the descriptor function, init):
 * 0, or 1 when it faulted (P says how). */
#define PROTECTED(stmt)                   \
    ({                                    \
        int faulted_ = 0;                 \
        if (sigsetjmp(P.env, 0)) {        \
            faulted_ = 1;                 \
        } else {                          \
            kn_d_budget_timer(1);         \
            P.call_seq++;                 \
            P.in_module = 1;              \
            stmt;                         \
            P.in_module = 0;              \
        }                                 \
        faulted_;                         \
    })

/* In-process: open the file here, read and check its descriptor and run
 * init, all protected.  KNIT_OK or an error (msg says why). */
static int32_t load_here(kn_inst_t *in, const void *bytes, uint64_t len, const char *self, char *msg,
                         size_t mlen)
{
    char err[KN_OFF_ERR_MAX], why[128];
    const char *name = in->name;
    /* the constructors and the descriptor are tried in a process of their
     * own first: a constructor that crashes or exits ends that one only */
    int32_t st = kn_sbx_probe(name, bytes, len, err, sizeof(err));
    if (st != KNIT_OK) {
        snprintf(msg, mlen, "%s refused %s: %.150s", self, name, err);
        return st;
    }
    P.loading = 1; /* constructors are module code for the interceptions */
    st = kn_mod_open(bytes, len, &in->lib, err, sizeof(err));
    P.loading = 0;
    if (st != KNIT_OK) {
        snprintf(msg, mlen, "%s refused %s: %.140s", self, name, err);
        return st;
    }
    /* the descriptor's fields are read protected too: a wild pointer
     * returned by the module faults in the module's name */
    const knit_mod_descriptor_t *desc = NULL;
    knit_status_t ck = KNIT_OK;
    if (PROTECTED(desc = in->lib.entry(); ck = kn_mod_check_desc(desc, err, sizeof(err)))) {
        snprintf(msg, mlen, "%s refused %s: %s in %s() or its descriptor", self, name,
                 kn_d_sig_text(P.sig, P.addr, why, sizeof(why)), KNIT_MOD_SYMBOL);
        return KNIT_ERR_MODULE_FAULT;
    }
    if (ck != KNIT_OK) {
        snprintf(msg, mlen, "%s refused %s: %.140s", self, name, err);
        return KNIT_ERR_INVAL;
    }
    in->desc = desc;
    in->has = (desc->on_message ? KN_SBX_HAS_MESSAGE : 0) | (desc->on_timer ? KN_SBX_HAS_TIMER : 0) |
              (desc->fini ? KN_SBX_HAS_FINI : 0);
    snprintf(in->name, sizeof(in->name), "%s", desc->name);
    int32_t rc = 0;
    if (PROTECTED(rc = desc->init(in, &services))) {
        snprintf(msg, mlen, "%s refused module '%s': init crashed: %s", self, in->name,
                 kn_d_sig_text(P.sig, P.addr, why, sizeof(why)));
        in->faulted = 1;
        return KNIT_ERR_MODULE_FAULT;
    }
    if (rc != 0) {
        snprintf(msg, mlen, "%s refused module '%s': init failed (status %d: %s)", self, in->name, rc,
                 knit_strerror(rc));
        return KNIT_ERR_INVAL;
    }
    return KNIT_OK;
}

int32_t kn_d_inst_load(uint32_t id, uint64_t seq, int where, const char *name, const void *bytes,
                       uint64_t len, char *msg, size_t mlen)
{
    char self[32];
    kn_d_self_name(self, sizeof(self));
    if (kn_dmn.inst[id % KN_INST_TAB]) {
        snprintf(msg, mlen, "%s: too many modules loaded", self);
        return KNIT_ERR_AGAIN;
    }
    kn_inst_t *in = calloc(1, sizeof(*in));
    if (!in || (!kn_dmn.g.is_switch && !(in->unloaded = calloc((size_t)kn_dmn.g.local_size + 1, 1)))) {
        free(in);
        snprintf(msg, mlen, "%s: out of memory", self);
        return KNIT_ERR_NOMEM;
    }
    int inprocess = kn_dmn.isolation == KN_ISO_INPROCESS || (where & KN_OFF_LOAD_INPROCESS);
    where &= ~KN_OFF_LOAD_INPROCESS;
    in->id = id;
    in->load_seq = seq;
    in->placement = where;
    kn_mod_mem_init(&in->mem);
    kn_list_init(&in->reqs);
    snprintf(in->name, sizeof(in->name), "%s", name);
    in->geo = (knit_mod_geometry_t){
        .size = sizeof(knit_mod_geometry_t), .module_id = id, .nranks = kn_dmn.g.nranks,
        .nnodes = kn_dmn.g.nnodes, .self = kn_tree_addr(&kn_dmn.tree, kn_dmn.g.self),
        .nswitches = kn_dmn.tree.nswitches, .fanin = kn_dmn.tree.fanin,
        .self_kind = kn_dmn.g.is_switch ? KNIT_MOD_AT_SWITCH : KNIT_MOD_AT_AGENT, .placement = where,
        .first_local = kn_dmn.g.is_switch ? 0 : kn_dmn.g.first_local,
        .local_size = kn_dmn.g.is_switch ? 0 : kn_dmn.g.local_size,
    };
    kn_dmn.inst[id % KN_INST_TAB] = in;
    kn_dmn.ninst++;
    int32_t st;
    if (!inprocess) {
        st = kn_sbx_start(in, bytes, len, msg, mlen);
        if (st == KNIT_INPROGRESS) {
            in->loading = 1;
            return st;
        }
    } else {
        kn_d_budget_timer(1);
        st = load_here(in, bytes, len, self, msg, mlen);
    }
    if (st != KNIT_OK) {
        kn_d_inst_destroy(in, 0);
        return st;
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

/* A message of a header (hlen bytes; 0: a plain one) and a payload.  To
 * oneself it goes to on_message, whole. */
int32_t kn_d_svc_send_hdr(knit_mod_ctx_t *m, int32_t dest, const void *hdr, uint64_t hlen, const void *payload,
                          uint64_t plen)
{
    if (m->faulted || m->dead)
        return KNIT_ERR_STATE;
    if (hlen > KNIT_MOD_HDR_MAX || hlen + plen > KN_OFF_MSG_MAX || (hlen && !hdr) || (plen && !payload))
        return KNIT_ERR_INVAL;
    int id = kn_tree_id(&kn_dmn.tree, dest);
    if (id < 0)
        return KNIT_ERR_RANGE;
    int32_t from = kn_tree_addr(&kn_dmn.tree, kn_dmn.g.self);
    if (id == kn_dmn.g.self) {
        selfmsg_t *s = malloc(sizeof(*s) + hlen + plen);
        if (!s)
            return KNIT_ERR_NOMEM;
        s->inst = m;
        s->id = m->id;
        s->from = from;
        s->len = hlen + plen;
        if (hlen)
            memcpy(s->data, hdr, hlen);
        if (plen)
            memcpy(s->data + hlen, payload, plen);
        kn_list_push_back(&kn_dmn.selfq, &s->link);
        return KNIT_OK;
    }
    kn_d_send_msg(id, W_MSG, m->id, 0, hlen, hdr, hlen, payload, plen);
    return KNIT_OK;
}

int32_t kn_d_svc_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    return kn_d_svc_send_hdr(m, dest, NULL, 0, msg, len);
}

static int32_t svc_send_hdr(knit_mod_ctx_t *m, int32_t dest, const void *hdr, uint64_t hlen, const void *payload,
                            uint64_t plen)
{
    return IN_SVC(kn_d_svc_send_hdr(m, dest, hdr, hlen, payload, plen));
}

static int32_t svc_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    return IN_SVC(kn_d_svc_send(m, dest, msg, len));
}

int32_t kn_d_svc_multicast(knit_mod_ctx_t *m, const void *msg, uint64_t len)
{
    if (!kn_dmn.g.is_switch)
        return KNIT_ERR_NOT_SUPPORTED;
    knit_mod_place_t p; /* the agents below this switch */
    kn_tree_place(&kn_dmn.tree, kn_tree_addr(&kn_dmn.tree, kn_dmn.g.self), &p);
    for (int i = p.first_node; i < p.first_node + p.nnodes; i++) {
        int32_t st = kn_d_svc_send(m, i, msg, len);
        if (st)
            return st;
    }
    return KNIT_OK;
}

static int32_t svc_multicast(knit_mod_ctx_t *m, const void *msg, uint64_t len)
{
    return IN_SVC(kn_d_svc_multicast(m, msg, len));
}

static int32_t svc_read_rank(knit_mod_ctx_t *m, int32_t rank, void *dst, uint64_t addr, uint64_t len)
{
    if (kn_dmn.g.is_switch || !kn_dmn.hooks || !kn_dmn.hooks->read_rank)
        return KNIT_ERR_NOT_SUPPORTED;
    return IN_SVC(kn_dmn.hooks->read_rank(m, rank, dst, addr, len));
}

static int32_t svc_write_rank(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, const void *src, uint64_t len)
{
    if (kn_dmn.g.is_switch || !kn_dmn.hooks || !kn_dmn.hooks->write_rank)
        return KNIT_ERR_NOT_SUPPORTED;
    return IN_SVC(kn_dmn.hooks->write_rank(m, rank, addr, src, len));
}

static int32_t svc_deliver(knit_mod_ctx_t *m, int32_t rank, const void *data, uint64_t len)
{
    if (kn_dmn.g.is_switch || !kn_dmn.hooks || !kn_dmn.hooks->deliver)
        return KNIT_ERR_NOT_SUPPORTED;
    return IN_SVC(kn_dmn.hooks->deliver(m, rank, data, len));
}

int32_t kn_d_svc_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *res, uint64_t len)
{
    kn_dreq_t *r = kn_d_req_find(token);
    if (!r || r->inst != m || r->held)
        return KNIT_ERR_NOT_FOUND;
    if (len > KN_OFF_MSG_MAX || (len && !res))
        return KNIT_ERR_INVAL;
    if (status > 0)
        status = KNIT_ERR_INVAL;
    kn_d_req_finish(r, status, res, len);
    return KNIT_OK;
}

static int32_t svc_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *res, uint64_t len)
{
    return IN_SVC(kn_d_svc_complete(m, token, status, res, len));
}

static int32_t do_timer(knit_mod_ctx_t *m, uint64_t delay, uint64_t cookie)
{
    if (!(m->has & KN_SBX_HAS_TIMER))
        return KNIT_ERR_NOT_SUPPORTED;
    dtimer_t *t = malloc(sizeof(*t));
    if (!t)
        return KNIT_ERR_NOMEM;
    t->due = kn_time_ns() + delay;
    t->cookie = cookie;
    t->inst = m;
    kn_list_t *e;
    kn_list_for_each(e, &kn_dmn.timers) {
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
    void *p = kn_mod_mem_alloc(&m->mem, size);
    if (p)
        kn_dmn.alloc_bytes += size;
    return p;
}

static void *svc_alloc(knit_mod_ctx_t *m, uint64_t size)
{
    return IN_SVC(do_alloc(m, size));
}

static int do_free(knit_mod_ctx_t *m, void *p)
{
    uint64_t before = m->mem.bytes;
    if (kn_mod_mem_free(&m->mem, p) < 0)
        kn_warn("module '%s' freed memory it did not allocate (%p): ignored", m->name, p);
    kn_dmn.alloc_bytes -= before - m->mem.bytes;
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

static void *svc_map_rank(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, uint64_t len)
{
    if (kn_dmn.g.is_switch || !kn_dmn.hooks || !kn_dmn.hooks->map_rank)
        return NULL;
    return kn_dmn.hooks->map_rank(m, rank, addr, len);
}

static int32_t svc_place(knit_mod_ctx_t *m, int32_t addr, knit_mod_place_t *p)
{
    (void)m;
    return IN_SVC(kn_tree_place(&kn_dmn.tree, addr, p));
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
    .place = svc_place,
    .send_hdr = svc_send_hdr,
    .map_rank = svc_map_rank,
};

void kn_d_inst_request(kn_dreq_t *r, const void *args, uint64_t len)
{
    kn_inst_t *in = r->inst;
    int32_t node = r->origin < 0 ? kn_dmn.g.self : r->origin;
    if (in->sbx) {
        kn_sbx_request(in->sbx, r->token, r->rank, node, args, len);
        return;
    }
    knit_mod_request_t q = {.token = r->token, .rank = r->rank, .node = node, .len = len};
    call_t c = {.what = 0, .req = &q, .data = args, .len = len};
    run_protected(in, &c);
}

int kn_d_inst_header(kn_inst_t *in, int32_t from, const void *hdr, uint64_t hlen, uint64_t plen,
                     knit_mod_route_t *route, int32_t *st)
{
    if (in->sbx || in->faulted || in->desc->abi_version < 2 || !in->desc->on_header)
        return 0;
    memset(route, 0, sizeof(*route));
    route->size = sizeof(*route);
    call_t c = {.what = 5, .from = from, .data = hdr, .len = hlen, .plen = plen, .route = route};
    if (run_protected(in, &c) != KNIT_OK) {
        *st = KNIT_ERR_MODULE_FAULT;
        return 1;
    }
    *st = c.status;
    if (c.status == KNIT_OK && !kn_tree_route_ok(&kn_dmn.tree, kn_tree_addr(&kn_dmn.tree, kn_dmn.g.self), route))
        *st = KNIT_ERR_RANGE;
    if (*st == KNIT_ERR_RANGE)
        kn_warn("module %s: on_header routed a message to %d instances, one of them not another instance of the "
                "job: dropped", in->name, route->ndest);
    return 1;
}

void kn_d_inst_message(kn_inst_t *in, int32_t from, const void *p, uint64_t len, uint64_t hlen)
{
    if (in->faulted)
        return;
    if (in->sbx && hlen && (in->has & KN_SBX_HAS_HEADER)) { /* its on_header routes it there */
        kn_sbx_message(in->sbx, from, p, len, hlen);
        return;
    }
    if (!(in->has & KN_SBX_HAS_MESSAGE))
        return;
    if (in->sbx) {
        kn_sbx_message(in->sbx, from, p, len, 0);
        return;
    }
    call_t c = {.what = 1, .from = from, .data = p, .len = len};
    run_protected(in, &c);
}

int kn_d_run_timers(void)
{
    if (kn_list_empty(&kn_dmn.timers) && kn_list_empty(&kn_dmn.selfq))
        return 0;
    int n = 0;
    /* self messages queued before this round */
    kn_list_t q;
    kn_list_init(&q);
    if (!kn_list_empty(&kn_dmn.selfq)) {
        q.next = kn_dmn.selfq.next;
        q.prev = kn_dmn.selfq.prev;
        q.next->prev = &q;
        q.prev->next = &q;
        kn_list_init(&kn_dmn.selfq);
    }
    while (!kn_list_empty(&q)) {
        selfmsg_t *s = kn_list_first(&q, selfmsg_t, link);
        kn_list_del(&s->link);
        kn_inst_t *in = kn_d_inst(s->id);
        if (in == s->inst)
            kn_d_inst_message(in, s->from, s->data, s->len, 0);
        free(s);
        n++;
    }
    uint64_t now = kn_time_ns();
    while (!kn_list_empty(&kn_dmn.timers)) {
        dtimer_t *t = kn_list_first(&kn_dmn.timers, dtimer_t, link);
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
