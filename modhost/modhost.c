/*
 * knit-modhost: one module instance in a process of its own
 * (KNIT_MODULE_ISOLATION=process), started by its agent or switch
 * (src/offload/sandbox.c) with the segment, the module file and the
 * daemon's doorbell as fds 3, 4 and 5 (src/offload/sbx.h).
 *
 * Before any module code runs it ties its life to the daemon's
 * (PR_SET_PDEATHSIG), closes every other descriptor, catches fault
 * signals to say where they hit, and installs a seccomp filter: no exec,
 * no new threads or processes, no signals to anyone but itself, no
 * sockets, no cross-memory attach, files opened read-only, writes only to
 * stdout, stderr and the doorbell; anything else fails with EPERM.  Then
 * it loads the module (its constructors run under the filter), checks the
 * descriptor, runs init and reports, and serves calls until told to stop:
 * every handler in this process, one at a time; timers and messages to
 * itself stay here; everything else is a record to the daemon.  Whatever
 * the module does to this process (crash, exit, scribble, hang) ends this
 * process only; the daemon notices and disables the module.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <seccomp.h>

#include "knit.h"
#include "offload/offload.h"
#include "offload/sbx.h"
#include "offload/tree.h"
#include "util/compiler.h"
#include "util/list.h"
#include "util/log.h"
#include "util/time.h"

/* The instance, as the module's services see it. */
struct knit_mod_ctx {
    knit_mod_geometry_t geo;
    void *state;
    kn_mod_mem_t mem;
};

typedef struct htimer {
    kn_list_t link;
    uint64_t due, cookie;
} htimer_t;

typedef struct selfmsg {
    kn_list_t link;
    int32_t from;
    uint64_t len;
    char data[];
} selfmsg_t;

static struct {
    kn_sbx_seg_t *seg;
    kn_sbx_end_t call, reply, svc;
    const knit_mod_descriptor_t *desc;
    struct knit_mod_ctx inst;
    int is_switch;
    kn_tree_t tree;          /* the switches (geometry: nnodes, fanin) */
    kn_list_t timers, selfq;
    /* tokens of requests given to on_request and not completed yet */
    uint64_t *tokens;
    size_t ntokens, tcap;
    /* a call's payload in several records */
    char *buf;
    uint64_t blen, bcap;
} H;

/* ------------------------------------------------------------ faults */

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    H.seg->fault.sig = sig;
    H.seg->fault.code = si->si_code;
    H.seg->fault.addr = (uint64_t)(uintptr_t)si->si_addr;
    /* die of it: the daemon reads the wait status */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_faults(void)
{
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < KN_ARRAY_SIZE(sigs); i++)
        sigaction(sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------ filter */

static int sandbox(void)
{
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!f)
        return -1;
    static const int allow[] = {
        SCMP_SYS(read), SCMP_SYS(readv), SCMP_SYS(pread64), SCMP_SYS(close), SCMP_SYS(fstat),
        SCMP_SYS(newfstatat), SCMP_SYS(statx), SCMP_SYS(lseek), SCMP_SYS(mmap), SCMP_SYS(munmap),
        SCMP_SYS(mprotect), SCMP_SYS(madvise), SCMP_SYS(mremap), SCMP_SYS(brk), SCMP_SYS(futex),
        SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday), SCMP_SYS(time),
        SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep), SCMP_SYS(sched_yield), SCMP_SYS(getpid),
        SCMP_SYS(gettid), SCMP_SYS(getppid), SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid),
        SCMP_SYS(getegid), SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
        SCMP_SYS(sigaltstack), SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(getrandom),
        SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(readlink),
        SCMP_SYS(readlinkat), SCMP_SYS(getcwd), SCMP_SYS(uname), SCMP_SYS(fcntl), SCMP_SYS(getdents64),
        SCMP_SYS(sysinfo), SCMP_SYS(sched_getaffinity), SCMP_SYS(restart_syscall), SCMP_SYS(rseq),
        SCMP_SYS(set_robust_list), SCMP_SYS(get_robust_list),
    };
    int rc = 0;
    for (size_t i = 0; i < KN_ARRAY_SIZE(allow) && !rc; i++)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, allow[i], 0);
    /* writes: stdout, stderr, the doorbell */
    int fds[] = {1, 2, KN_SBX_FD_BELL};
    for (size_t i = 0; i < KN_ARRAY_SIZE(fds) && !rc; i++) {
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(write), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fds[i]));
        if (!rc)
            rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(writev), 1,
                                  SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fds[i]));
    }
    /* files: read-only, nothing created or truncated */
    scmp_datum_t wmask = O_ACCMODE | O_CREAT | O_TRUNC;
    if (!rc)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, wmask, 0));
    if (!rc)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, wmask, 0));
    /* signals: to itself only (abort, raise) */
    scmp_datum_t self = (scmp_datum_t)getpid();
    if (!rc)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_EQ, self));
    if (!rc)
        rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, self));
    if (!rc)
        rc = seccomp_load(f);
    seccomp_release(f);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------ rings */

/* How long to poll before sleeping: the daemon's word, kept up to date
 * (0 when this node has no cpu to spare). */
static uint64_t spin(void)
{
    return __atomic_load_n(&H.seg->spin_ns, __ATOMIC_RELAXED);
}

static void ring_daemon(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&H.seg->daemon_sleeping, __ATOMIC_RELAXED)) {
        uint64_t one = 1;
        if (write(KN_SBX_FD_BELL, &one, sizeof(one)) < 0 && errno != EAGAIN)
            _exit(1); /* the daemon is gone */
    }
}

/* Wait for something in ring e from the daemon (or, local: work of our
 * own, messages to ourself): spin, then sleep on the futex until the
 * daemon wakes us or until (a timer). */
static void wait_daemon(const kn_sbx_end_t *e, uint64_t until, int local)
{
    uint64_t t0 = kn_time_ns(), now;
    while ((now = kn_time_ns()) - t0 < spin()) {
        if (kn_sbx_pending(e))
            return;
        kn_cpu_relax();
    }
    /* then give the cpu to whoever needs it, a while, before sleeping:
     * waking from a sleep costs much more */
    uint64_t y0 = now, yield = __atomic_load_n(&H.seg->yield_ns, __ATOMIC_RELAXED);
    while (kn_time_ns() - y0 < yield && until > kn_time_ns()) {
        if (kn_sbx_pending(e) || (local && !kn_list_empty(&H.selfq)))
            return;
        sched_yield();
    }
    uint32_t v = __atomic_load_n(&H.seg->host_wake, __ATOMIC_ACQUIRE);
    __atomic_store_n(&H.seg->host_sleeping, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!kn_sbx_pending(e) && !(local && !kn_list_empty(&H.selfq))) {
        struct timespec ts, *tp = NULL;
        if (until != UINT64_MAX) {
            uint64_t now = kn_time_ns(), d = until > now ? until - now : 0;
            ts = (struct timespec){(time_t)(d / KN_NSEC_PER_SEC), (long)(d % KN_NSEC_PER_SEC)};
            tp = &ts;
        }
        syscall(SYS_futex, &H.seg->host_wake, FUTEX_WAIT, v, tp, NULL, 0);
    }
    __atomic_store_n(&H.seg->host_sleeping, 0, __ATOMIC_RELAXED);
}

/* A record (any payload size) to the daemon: waits for room. */
static void to_daemon(const kn_sbx_rec_t *h, const void *p, uint64_t len)
{
    uint64_t off = 0;
    do {
        uint64_t n = KN_MIN(len - off, (uint64_t)KN_SBX_FRAG);
        kn_sbx_rec_t r = *h;
        r.flags = off + n < len ? KN_SBX_F_MORE : 0;
        while (!kn_sbx_put(&H.svc, &r, (const char *)p + off, (uint32_t)n)) {
            ring_daemon();
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        off += n;
    } while (off < len);
    ring_daemon();
}

/* The answer to a synchronous service: its status; its data into dst (cap). */
static int32_t from_daemon(void *dst, uint64_t cap)
{
    uint64_t got = 0;
    for (;;) {
        kn_sbx_rec_t h;
        const void *p;
        int64_t sz = kn_sbx_peek(&H.reply, &h, &p);
        if (sz < 0)
            _exit(1);
        if (sz == 0) {
            wait_daemon(&H.reply, UINT64_MAX, 0);
            continue;
        }
        if (h.type != KN_SBX_R_REPLY)
            _exit(1);
        uint64_t n = KN_MIN((uint64_t)h.len, cap - got);
        if (n)
            memcpy((char *)dst + got, p, n);
        got += n;
        kn_sbx_pop(&H.reply, sz);
        if (!(h.flags & KN_SBX_F_MORE))
            return (int32_t)(uint32_t)h.a;
    }
}

/* ------------------------------------------------------------ services */

static int is_self(int32_t dest)
{
    return dest == H.inst.geo.self;
}

static const knit_mod_geometry_t *svc_geometry(knit_mod_ctx_t *m)
{
    return &m->geo;
}

static int32_t svc_send(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len)
{
    (void)m;
    if (len > KN_OFF_MSG_MAX || (len && !msg))
        return KNIT_MOD_ERR_INVAL;
    if (kn_tree_id(&H.tree, dest) < 0)
        return KNIT_MOD_ERR_RANGE;
    if (is_self(dest)) {
        selfmsg_t *s = malloc(sizeof(*s) + len);
        if (!s)
            return KNIT_MOD_ERR_NOMEM;
        s->from = dest;
        s->len = len;
        if (len)
            memcpy(s->data, msg, len);
        kn_list_push_back(&H.selfq, &s->link);
        return KNIT_MOD_OK;
    }
    kn_sbx_rec_t h = {.type = KN_SBX_S_SEND, .a = (uint32_t)dest};
    to_daemon(&h, msg, len);
    return KNIT_MOD_OK;
}

static int32_t svc_send_hdr(knit_mod_ctx_t *m, int32_t dest, const void *hdr, uint64_t hlen, const void *payload,
                            uint64_t plen)
{
    if (hlen > KNIT_MOD_HDR_MAX || hlen + plen > KN_OFF_MSG_MAX || (hlen && !hdr) || (plen && !payload))
        return KNIT_MOD_ERR_INVAL;
    char *buf = malloc(hlen + plen + 1);
    if (!buf)
        return KNIT_MOD_ERR_NOMEM;
    if (hlen)
        memcpy(buf, hdr, hlen);
    if (plen)
        memcpy(buf + hlen, payload, plen);
    int32_t st = KNIT_MOD_OK;
    if (is_self(dest) || !hlen) {
        st = svc_send(m, dest, buf, hlen + plen);
    } else if (kn_tree_id(&H.tree, dest) < 0) {
        st = KNIT_MOD_ERR_RANGE;
    } else {
        kn_sbx_rec_t h = {.type = KN_SBX_S_SEND, .a = (uint32_t)dest, .b = hlen};
        to_daemon(&h, buf, hlen + plen);
    }
    free(buf);
    return st;
}

static int32_t svc_multicast(knit_mod_ctx_t *m, const void *msg, uint64_t len)
{
    (void)m;
    if (!H.is_switch)
        return KNIT_MOD_ERR_NOT_SUPPORTED;
    if (len > KN_OFF_MSG_MAX || (len && !msg))
        return KNIT_MOD_ERR_INVAL;
    kn_sbx_rec_t h = {.type = KN_SBX_S_MULTICAST};
    to_daemon(&h, msg, len);
    return KNIT_MOD_OK;
}

static int32_t svc_read_rank(knit_mod_ctx_t *m, int32_t rank, void *dst, uint64_t addr, uint64_t len)
{
    (void)m;
    if (H.is_switch)
        return KNIT_MOD_ERR_NOT_SUPPORTED;
    if ((len && !dst) || len > KN_OFF_MSG_MAX)
        return KNIT_MOD_ERR_INVAL;
    kn_sbx_rec_t h = {.type = KN_SBX_S_READ, .a = (uint32_t)rank, .b = addr, .c = len};
    to_daemon(&h, NULL, 0);
    return from_daemon(dst, len);
}

static int32_t write_like(int type, int32_t rank, uint64_t addr, const void *src, uint64_t len)
{
    if (H.is_switch)
        return KNIT_MOD_ERR_NOT_SUPPORTED;
    if ((len && !src) || len > KN_OFF_MSG_MAX)
        return KNIT_MOD_ERR_INVAL;
    kn_sbx_rec_t h = {.type = (uint16_t)type, .a = (uint32_t)rank, .b = addr};
    to_daemon(&h, src, len);
    return from_daemon(NULL, 0);
}

static int32_t svc_write_rank(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, const void *src, uint64_t len)
{
    (void)m;
    return write_like(KN_SBX_S_WRITE, rank, addr, src, len);
}

static int32_t svc_deliver(knit_mod_ctx_t *m, int32_t rank, const void *data, uint64_t len)
{
    (void)m;
    return write_like(KN_SBX_S_DELIVER, rank, 0, data, len);
}

static int token_take(uint64_t token)
{
    for (size_t i = 0; i < H.ntokens; i++)
        if (H.tokens[i] == token) {
            H.tokens[i] = H.tokens[--H.ntokens];
            return 1;
        }
    return 0;
}

static int32_t svc_complete(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *res, uint64_t len)
{
    (void)m;
    if (len > KN_OFF_MSG_MAX || (len && !res))
        return KNIT_MOD_ERR_INVAL;
    if (!token_take(token))
        return KNIT_MOD_ERR_NOT_FOUND;
    if (status > 0)
        status = KNIT_MOD_ERR_INVAL;
    kn_sbx_rec_t h = {.type = KN_SBX_S_COMPLETE, .a = token, .b = (uint32_t)status};
    to_daemon(&h, res, len);
    return KNIT_MOD_OK;
}

static int32_t svc_timer(knit_mod_ctx_t *m, uint64_t delay, uint64_t cookie)
{
    (void)m;
    if (!H.desc->on_timer)
        return KNIT_MOD_ERR_NOT_SUPPORTED;
    htimer_t *t = malloc(sizeof(*t));
    if (!t)
        return KNIT_MOD_ERR_NOMEM;
    t->due = kn_time_ns() + delay;
    t->cookie = cookie;
    kn_list_t *e;
    kn_list_for_each(e, &H.timers) {
        if (kn_list_entry(e, htimer_t, link)->due > t->due)
            break;
    }
    kn_list__insert(&t->link, e->prev, e);
    return KNIT_MOD_OK;
}

static void *svc_alloc(knit_mod_ctx_t *m, uint64_t size)
{
    void *p = kn_mod_mem_alloc(&m->mem, size);
    H.seg->alloc_bytes = m->mem.bytes;
    return p;
}

static void svc_free(knit_mod_ctx_t *m, void *p)
{
    if (kn_mod_mem_free(&m->mem, p) < 0)
        kn_warn("module '%s' freed memory it did not allocate (%p): ignored", H.seg->name, p);
    H.seg->alloc_bytes = m->mem.bytes;
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
    (void)m;
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
    kn_log(level, "module %s: %s", H.seg->name, buf);
}

static uint64_t svc_now(knit_mod_ctx_t *m)
{
    (void)m;
    return kn_time_ns();
}

static int32_t svc_place(knit_mod_ctx_t *m, int32_t addr, knit_mod_place_t *p)
{
    (void)m;
    return kn_tree_place(&H.tree, addr, p);
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
};

/* ------------------------------------------------------------ calls */

static void busy(uint32_t what)
{
    __atomic_store_n(&H.seg->busy_what, what, __ATOMIC_RELAXED);
    __atomic_store_n(&H.seg->busy_since, kn_time_ns(), __ATOMIC_RELEASE);
}

static void idle(void)
{
    __atomic_store_n(&H.seg->busy_since, 0, __ATOMIC_RELEASE);
}

static void call_done(void)
{
    idle();
    __atomic_store_n(&H.seg->done_calls, H.seg->done_calls + 1, __ATOMIC_RELEASE);
}

static int token_add(uint64_t token)
{
    if (H.ntokens == H.tcap) {
        size_t cap = H.tcap ? 2 * H.tcap : 64;
        uint64_t *t = realloc(H.tokens, cap * sizeof(*t));
        if (!t)
            return -1;
        H.tokens = t;
        H.tcap = cap;
    }
    H.tokens[H.ntokens++] = token;
    return 0;
}

/* A send_hdr message for on_header (hlen: its header): passed on whole
 * to the instances it names, through the daemon, then to on_message if
 * taken.  One call for the budget. */
static void route_whole(int32_t from, const char *p, uint64_t len, uint64_t hlen)
{
    knit_mod_route_t r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    if (hlen > len || !H.desc->on_header) {
        _exit(1); /* the daemon sent what no daemon sends */
    }
    busy(KN_SBX_W_HEADER);
    int32_t st = H.desc->on_header(&H.inst, from, p, hlen, len - hlen, &r);
    if (st == KNIT_MOD_OK && kn_tree_route_ok(&H.tree, H.inst.geo.self, &r)) {
        for (int i = 0; i < r.ndest; i++) {
            kn_sbx_rec_t h = {.type = KN_SBX_S_SEND, .a = (uint32_t)r.dest[i], .b = hlen};
            to_daemon(&h, p, len);
        }
        if (r.take && H.desc->on_message) {
            busy(KN_SBX_W_MESSAGE);
            H.desc->on_message(&H.inst, from, p, len);
        }
    } else if (st == KNIT_MOD_OK) {
        kn_warn("module %s: on_header routed a message to %d instances, one of them not another instance of the job: "
                "dropped", H.seg->name, r.ndest);
    }
    call_done();
}

/* One whole call from the daemon. */
static void call(const kn_sbx_rec_t *h, const void *p, uint64_t len)
{
    switch (h->type) {
    case KN_SBX_C_REQUEST: {
        knit_mod_request_t q = {.token = h->a, .rank = (int32_t)(uint32_t)h->b,
                                .node = (int32_t)(uint32_t)(h->b >> 32), .len = len};
        if (token_add(h->a) < 0)
            _exit(1); /* out of memory: the daemon reports the exit */
        busy(KN_SBX_W_REQUEST);
        H.desc->on_request(&H.inst, &q, p);
        call_done();
        return;
    }
    case KN_SBX_C_MESSAGE:
        if (h->b) { /* a send_hdr message: on_header routes it, whole (the daemon streams nothing here) */
            route_whole((int32_t)(uint32_t)h->a, p, len, h->b);
            return;
        }
        busy(KN_SBX_W_MESSAGE);
        if (H.desc->on_message)
            H.desc->on_message(&H.inst, (int32_t)(uint32_t)h->a, p, len);
        call_done();
        return;
    case KN_SBX_C_STOP:
        if (h->a && H.desc->fini) {
            busy(KN_SBX_W_FINI);
            H.desc->fini(&H.inst);
            idle();
        }
        exit(0);
    }
    _exit(1); /* the daemon sent what no daemon sends */
}

/* The calls in the ring: how many ran. */
static int calls(void)
{
    int n = 0;
    for (;;) {
        kn_sbx_rec_t h;
        const void *p;
        int64_t sz = kn_sbx_peek(&H.call, &h, &p);
        if (sz <= 0) {
            if (sz < 0)
                _exit(1);
            return n;
        }
        if (!(h.flags & KN_SBX_F_MORE) && !H.blen) {
            /* whole in the ring: run it from there (only the daemon writes it) */
            call(&h, p, h.len);
            kn_sbx_pop(&H.call, sz);
            n++;
            continue;
        }
        if (H.blen + h.len > H.bcap) {
            uint64_t cap = KN_MAX(H.blen + h.len, 2 * H.bcap);
            char *b = realloc(H.buf, cap);
            if (!b)
                _exit(1);
            H.buf = b;
            H.bcap = cap;
        }
        memcpy(H.buf + H.blen, p, h.len);
        H.blen += h.len;
        kn_sbx_pop(&H.call, sz);
        if (!(h.flags & KN_SBX_F_MORE)) {
            uint64_t len = H.blen;
            H.blen = 0;
            call(&h, H.buf, len);
            n++;
        }
    }
}

/* Messages to itself and due timers: how many ran. */
static int local(void)
{
    int n = 0;
    kn_list_t q;
    kn_list_init(&q);
    if (!kn_list_empty(&H.selfq)) { /* those queued before this round */
        q.next = H.selfq.next;
        q.prev = H.selfq.prev;
        q.next->prev = &q;
        q.prev->next = &q;
        kn_list_init(&H.selfq);
    }
    while (!kn_list_empty(&q)) {
        selfmsg_t *s = kn_list_first(&q, selfmsg_t, link);
        kn_list_del(&s->link);
        if (H.desc->on_message) {
            busy(KN_SBX_W_MESSAGE);
            H.desc->on_message(&H.inst, s->from, s->data, s->len);
            idle();
        }
        free(s);
        n++;
    }
    uint64_t now = kn_time_ns();
    while (!kn_list_empty(&H.timers)) {
        htimer_t *t = kn_list_first(&H.timers, htimer_t, link);
        if (t->due > now)
            break;
        kn_list_del(&t->link);
        uint64_t cookie = t->cookie;
        free(t);
        busy(KN_SBX_W_TIMER);
        H.desc->on_timer(&H.inst, cookie);
        idle();
        n++;
    }
    return n;
}

static void serve(void)
{
    uint64_t last = kn_time_ns();
    for (;;) {
        int n = calls() + local();
        uint64_t now = kn_time_ns();
        if (n) {
            last = now;
            continue;
        }
        if (now - last < spin()) {
            kn_cpu_relax();
            continue;
        }
        uint64_t until = kn_list_empty(&H.timers) ? UINT64_MAX : kn_list_first(&H.timers, htimer_t, link)->due;
        wait_daemon(&H.call, until, 1);
        last = kn_time_ns();
    }
}

/* ------------------------------------------------------------ start */

static void verdict(int32_t status, unsigned has, const char *fmt, ...)
{
    char text[KN_OFF_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    kn_sbx_rec_t h = {.type = KN_SBX_S_LOADED, .a = (uint32_t)status, .b = has};
    to_daemon(&h, text, strlen(text) + 1);
}

int main(void)
{
    size_t size = kn_sbx_seg_size();
    struct stat st;
    if (fstat(KN_SBX_FD_SEG, &st) < 0 || (size_t)st.st_size != size) {
        fprintf(stderr, "knit-modhost: started by hand? it is started by knit-agent and knit-switch\n");
        return 2;
    }
    H.seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, KN_SBX_FD_SEG, 0);
    if (H.seg == MAP_FAILED || H.seg->magic != KN_SBX_MAGIC || H.seg->version != KN_SBX_VERSION)
        return 2;
    /* ends with its daemon, even one that is killed, and only so: the
     * job's SIGTERM (to the daemon's process group) is the daemon's to act on */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    if (getppid() != H.seg->daemon_pid)
        return 2;
    close(KN_SBX_FD_SEG);
    syscall(SYS_close_range, KN_SBX_FD_BELL + 1, ~0u, 0);
    H.seg->name[sizeof(H.seg->name) - 1] = '\0';
    H.seg->who[sizeof(H.seg->who) - 1] = '\0';
    kn_log_set_prefix("%s", H.seg->who);
    kn_log_set_level(H.seg->log_level);
    kn_sbx_end_init(&H.call, H.seg, KN_SBX_CALL);
    kn_sbx_end_init(&H.reply, H.seg, KN_SBX_REPLY);
    kn_sbx_end_init(&H.svc, H.seg, KN_SBX_SVC);
    H.inst.geo = H.seg->geo;
    H.is_switch = H.inst.geo.self_kind == KNIT_MOD_AT_SWITCH;
    if (!H.seg->probe && kn_tree_init(&H.tree, H.inst.geo.nnodes, H.inst.geo.fanin) < 0)
        _exit(1); /* the daemon wrote what no daemon writes (a probe has no geometry) */
    kn_mod_mem_init(&H.inst.mem);
    kn_list_init(&H.timers);
    kn_list_init(&H.selfq);
    catch_faults();
    if (sandbox() < 0)
        kn_warn("no seccomp filter here: module '%s' runs in a process of its own, unfiltered", H.seg->name);

    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", KN_SBX_FD_MODULE);
    busy(KN_SBX_W_CTORS);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    idle();
    close(KN_SBX_FD_MODULE);
    if (!dl) {
        const char *e = dlerror();
        verdict(KNIT_ERR_INVAL, 0, "cannot load it: %s", e ? e : "dlopen failed");
        return 0;
    }
    knit_mod_entry_fn entry = (knit_mod_entry_fn)dlsym(dl, KNIT_MOD_SYMBOL);
    if (!entry) {
        verdict(KNIT_ERR_INVAL, 0, "missing symbol '%s': not a knit module", KNIT_MOD_SYMBOL);
        return 0;
    }
    char err[KN_OFF_ERR_MAX];
    busy(KN_SBX_W_DESC);
    const knit_mod_descriptor_t *d = entry();
    knit_status_t ck = kn_mod_check_desc(d, err, sizeof(err));
    idle();
    if (ck != KNIT_OK) {
        verdict(ck, 0, "%s", err);
        return 0;
    }
    H.desc = d;
    unsigned has = (d->on_message ? KN_SBX_HAS_MESSAGE : 0) | (d->on_timer ? KN_SBX_HAS_TIMER : 0) |
                   (d->fini ? KN_SBX_HAS_FINI : 0) | (d->abi_version >= 2 && d->on_header ? KN_SBX_HAS_HEADER : 0);
    snprintf(H.seg->name, sizeof(H.seg->name), "%s", d->name);
    if (H.seg->probe) {
        verdict(KNIT_OK, has, "%s", d->name);
        return 0;
    }
    busy(KN_SBX_W_INIT);
    int32_t rc = d->init(&H.inst, &services);
    idle();
    if (rc != 0) {
        verdict(rc < 0 ? rc : KNIT_ERR_INVAL, 0, "init failed (status %d: %s)", rc, knit_strerror(rc));
        return 0;
    }
    verdict(KNIT_OK, has, "%s", d->name);
    serve();
}
