/*
 * Offload checks run by tests/job/test_offload*.sh through knitrun:
 *   offload_test MODDIR CASE [WHERE]
 * CASE: roundtrip [WHERE [MODULE]], paths, cycles, faults, badfiles, equiv, dying, stats,
 * noagent, pids, killagent, garbage, paused, tree, echo (the demo of make run).  WHERE: agent (default), switch, host.  Prints "ok CASE" on
 * rank 0 when every rank passed; a failed check prints why and exits 1.
 */
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "knit.h"
#include "offload/offload.h" /* the queue layout: the garbage case writes entries by hand */

static knit_ctx_t *ctx;
static const char *moddir;
static int rank, size, nnodes, node;

#define CHECK(c, ...)                                                          \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", rank, __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static char *path(const char *name)
{
    static char buf[8][1024];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 1024, "%s/%s.so", moddir, name);
    return b;
}

static knit_module_t *load(const char *name, int where)
{
    knit_module_t *m = NULL;
    knit_status_t st = knit_module_load(ctx, path(name), where, &m);
    CHECK(st == KNIT_OK, "load %s: %s (%s)", name, knit_strerror(st), knit_module_last_error(ctx));
    return m;
}

/* One request, waited: status; result into res (cap), *len. */
static knit_status_t call(knit_module_t *m, const void *args, size_t len, void *res, size_t cap, size_t *rlen)
{
    knit_mreq_t *r;
    knit_status_t st = knit_module_request(m, args, len, &r);
    if (st != KNIT_OK)
        return st;
    return knit_request_wait(&r, res, cap, rlen);
}

static void barrier(void)
{
    knit_status_t st = knit_barrier(knit_comm_world(ctx));
    CHECK(st == KNIT_OK, "barrier: %s", knit_strerror(st));
}

/* The module processes of this node's agent (its children), stopped
 * (SIGSTOP) or continued. */
static int signal_modhosts(pid_t agent, int sig)
{
    int n = 0;
    DIR *d = opendir("/proc");
    CHECK(d, "/proc");
    struct dirent *e;
    while ((e = readdir(d))) {
        char f[300], buf[512];
        snprintf(f, sizeof(f), "/proc/%s/stat", e->d_name);
        FILE *fp = fopen(f, "r");
        if (!fp)
            continue;
        size_t len = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[len] = 0;
        const char *close = strrchr(buf, ')');
        int ppid = 0;
        char state;
        if (close && sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == agent &&
            strstr(buf, "(knit-modhost)")) {
            CHECK(kill(atoi(e->d_name), sig) == 0, "kill %s", e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* A module process the machine does not run for 5 budgets (stopped) is
 * not stopped for its budget: that counts processor time. */
static void paused(void)
{
    knit_module_t *m = load("echo", KNIT_MODULE_AGENT);
    uint32_t x = 7, y = 0;
    CHECK(call(m, &x, 4, &y, 4, NULL) == KNIT_OK && y == 7, "echo");
    barrier();
    if (knit_local_rank(ctx) == 0) {
        knit_agent_info_t info;
        CHECK(knit_agent_info(ctx, &info) == KNIT_OK, "info");
        CHECK(signal_modhosts(info.pid, SIGSTOP) == 1, "one module process");
        knit_mreq_t *r;
        x = 8;
        CHECK(knit_module_request(m, &x, 4, &r) == KNIT_OK, "request");
        struct timespec ts = {1, 0}; /* 5 budgets of 200 ms */
        nanosleep(&ts, NULL);
        signal_modhosts(info.pid, SIGCONT);
        knit_status_t st = knit_request_wait(&r, &y, 4, NULL);
        CHECK(st == KNIT_OK && y == 8, "echo after a pause: %s", knit_strerror(st));
    }
    barrier();
    CHECK(call(m, &x, 4, &y, 4, NULL) == KNIT_OK, "echo");
    CHECK(knit_module_unload(m) == KNIT_OK, "unload");
}

static int where_of(const char *w)
{
    if (!w || !strcmp(w, "agent"))
        return KNIT_MODULE_AGENT;
    if (!strcmp(w, "switch"))
        return KNIT_MODULE_SWITCH;
    if (!strcmp(w, "host"))
        return KNIT_MODULE_HOST;
    fprintf(stderr, "unknown placement %s\n", w);
    exit(2);
}

/* Echo round trips, 0 B .. 1 MiB, a few in flight at once. */
static void roundtrip(int where, const char *name)
{
    knit_module_t *m = load(name, where);
    static const size_t sizes[] = {0, 1, 7, 199, 200, 201, 4096, 16384, 65536, 1 << 20};
    size_t max = 1 << 20;
    unsigned char *a = malloc(max), *b = malloc(max);
    for (size_t i = 0; i < max; i++)
        a[i] = (unsigned char)(i * 31 + (size_t)rank * 7 + 1);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], got = 12345;
        memset(b, 0, n + 1 > max ? max : n + 1);
        knit_status_t st = call(m, a, n, b, max, &got);
        CHECK(st == KNIT_OK, "echo of %zu bytes: %s", n, knit_strerror(st));
        CHECK(got == n, "echo of %zu bytes returned %zu", n, got);
        CHECK(!memcmp(a, b, n), "echo of %zu bytes: different bytes", n);
    }
    /* truncation: result longer than the buffer */
    size_t got;
    knit_status_t st = call(m, a, 300, b, 100, &got);
    CHECK(st == KNIT_ERR_TRUNCATE && got == 300 && !memcmp(a, b, 100), "truncate: %s, %zu", knit_strerror(st), got);
    /* many in flight (more than the queue holds) */
    enum { N = 150 };
    knit_mreq_t *r[N];
    uint32_t v[N];
    for (int i = 0; i < N; i++) {
        v[i] = (uint32_t)(i * 1000 + rank);
        CHECK(knit_module_request(m, &v[i], sizeof(v[i]), &r[i]) == KNIT_OK, "request %d", i);
        if (i >= 40) { /* keep ~40 open */
            uint32_t x;
            size_t l;
            CHECK(knit_request_wait(&r[i - 40], &x, sizeof(x), &l) == KNIT_OK && x == v[i - 40] && l == 4,
                  "pipelined %d", i - 40);
        }
    }
    for (int i = N - 40; i < N; i++) {
        uint32_t x = 0;
        int done = 0;
        while (!done)
            CHECK(knit_request_test(&r[i], &done, &x, sizeof(x), NULL) == KNIT_OK, "test %d", i);
        CHECK(x == v[i] && r[i] == NULL, "pipelined %d", i);
    }
    /* the counter: state across requests, shared by the ranks of a node at an agent */
    knit_module_t *c = load("counter", where);
    int64_t one = 1, val = 0;
    for (int i = 0; i < 10; i++)
        { CHECK(call(c, &one, 8, &val, 8, NULL) == KNIT_OK, "counter add"); if (getenv("DBG")) fprintf(stderr, "add -> %lld\n", (long long)val); }
    barrier();
    CHECK(call(c, NULL, 0, &val, 8, NULL) == KNIT_OK, "counter read");
    int64_t want = 10;
    if (where == KNIT_MODULE_AGENT)
        want = 10 * (int64_t)knit_local_size(ctx);
    else if (where == KNIT_MODULE_SWITCH)
        want = 10 * (int64_t)size;
    CHECK(val == want, "counter is %lld, expected %lld", (long long)val, (long long)want);
    barrier();
    CHECK(knit_module_unload(c) == KNIT_OK, "unload counter");
    CHECK(knit_module_unload(m) == KNIT_OK, "unload echo");
    free(a);
    free(b);
}

/* Ring path and multicast; returns a digest for equivalence checks. */
static void paths(int where, char *out, size_t outlen)
{
    knit_module_t *m = load("ring", where);
    int32_t pathv[1100], posted[1100];
    size_t len;
    memset(posted, 0x7f, sizeof(posted));
    CHECK(knit_module_post_recv(m, posted, sizeof(posted)) == KNIT_OK, "post_recv");
    knit_status_t st = call(m, "r", 1, pathv, sizeof(pathv), &len);
    CHECK(st == KNIT_OK, "ring: %s (%s)", knit_strerror(st), knit_module_last_error(ctx));
    CHECK(len == (size_t)(nnodes + 1) * 4, "ring path of %zu bytes with %d nodes", len, nnodes);
    int first = where == KNIT_MODULE_SWITCH ? 0 : node;
    for (int i = 0; i < nnodes; i++)
        CHECK(pathv[i] == (first + i) % nnodes, "hop %d is %d", i, pathv[i]);
    CHECK(pathv[nnodes] == -1, "last hop %d, expected the switch", pathv[nnodes]);
    void *buf;
    size_t dl;
    if (where != KNIT_MODULE_SWITCH) { /* the agent delivered the path into our buffer too */
        st = knit_module_recv_wait(m, &buf, &dl);
        CHECK(st == KNIT_OK && buf == posted && dl == len && !memcmp(posted, pathv, len), "delivered: %s, %zu",
              knit_strerror(st), dl);
    }
    struct {
        uint32_t count, pad;
        uint64_t mask;
    } mc;
    st = call(m, "m", 1, &mc, sizeof(mc), &len);
    CHECK(st == KNIT_OK && len == sizeof(mc), "multicast: %s", knit_strerror(st));
    CHECK(mc.count == (uint32_t)nnodes && mc.mask == (nnodes >= 64 ? ~0ull : (1ull << nnodes) - 1),
          "multicast reached %u nodes, mask %#llx", mc.count, (unsigned long long)mc.mask);
    int o = snprintf(out, outlen, "ring");
    for (int i = 0; i <= nnodes; i++)
        o += snprintf(out + o, outlen - (size_t)o, " %d", pathv[i]);
    snprintf(out + o, outlen - (size_t)o, " mc %u %#llx", mc.count, (unsigned long long)mc.mask);
    CHECK(knit_module_unload(m) == KNIT_OK, "unload ring");
}

static void cycles(int n)
{
    knit_agent_info_t i0, i1;
    for (int k = 0; k < n; k++) {
        knit_module_t *m = load(k % 2 ? "echo" : "ring", KNIT_MODULE_AGENT);
        char out[64];
        size_t len;
        CHECK(call(m, k % 2 ? "x" : "r", 1, out, sizeof(out), &len) == KNIT_OK, "cycle %d", k);
        CHECK(knit_module_unload(m) == KNIT_OK, "unload %d", k);
        if (k == 5) { /* warm: the allocator and the network have their memory */
            barrier(); /* nobody has started the next load (its module process) */
            CHECK(knit_agent_info(ctx, &i0) == KNIT_OK, "info");
            barrier();
        }
    }
    barrier(); /* every node has unloaded */
    CHECK(knit_agent_info(ctx, &i1) == KNIT_OK, "info");
    CHECK(i1.modules == 0 && i1.open_requests == 0 && i1.scratch_bytes == 0, "agent %d keeps %llu modules, "
          "%llu requests, %llu bytes", i1.node, (unsigned long long)i1.modules,
          (unsigned long long)i1.open_requests, (unsigned long long)i1.scratch_bytes);
    CHECK(i1.heap_bytes <= i0.heap_bytes + (64u << 10), "agent %d heap grew from %llu to %llu bytes over %d cycles",
          i1.node, (unsigned long long)i0.heap_bytes, (unsigned long long)i1.heap_bytes, n);
    CHECK(i1.open_fds == i0.open_fds && i1.mappings <= i0.mappings,
          "agent %d leaks: fds %llu -> %llu, mappings %llu -> %llu over %d cycles", i1.node,
          (unsigned long long)i0.open_fds, (unsigned long long)i1.open_fds, (unsigned long long)i0.mappings,
          (unsigned long long)i1.mappings, n);
    if (rank == 0)
        printf("agent fds %llu mappings %llu heap %llu -> %llu bytes over %d load/unload cycles\n",
               (unsigned long long)i1.open_fds, (unsigned long long)i1.mappings,
               (unsigned long long)i0.heap_bytes, (unsigned long long)i1.heap_bytes, n);
}

static void faults(int where)
{
    static const struct {
        char op;
        const char *want;
    } cases[] = {{'n', "SIGSEGV"}, {'d', "SIGFPE"}, {'i', "SIGILL"}, {'l', "time budget"}};
    knit_module_t *e = load("echo", where);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        knit_module_t *f = load("fault", where);
        char res[256] = "";
        size_t len;
        CHECK(call(f, "o", 1, res, sizeof(res), &len) == KNIT_OK && !strcmp(res, "ok"), "fault ok");
        barrier();
        knit_status_t st = KNIT_OK;
        if (rank == 0) { /* one rank faults the module; it is disabled for everyone */
            st = call(f, &cases[k].op, 1, res, sizeof(res) - 1, &len);
            res[sizeof(res) - 1] = '\0';
            CHECK(st == KNIT_ERR_MODULE_FAULT, "fault '%c': %s", cases[k].op, knit_strerror(st));
            CHECK(strstr(res, "'fault'") && strstr(res, cases[k].want), "fault '%c' says '%s'", cases[k].op, res);
            CHECK(strstr(knit_module_last_error(ctx), cases[k].want), "last error '%s'", knit_module_last_error(ctx));
            printf("fault '%c': %s\n", cases[k].op, res);
        }
        barrier();
        /* later requests fail too, once the news reached every daemon (it
         * travels between daemons, not with the barrier: bounded wait) */
        for (int tries = 0;; tries++) {
            st = call(f, "o", 1, res, sizeof(res), &len);
            if (st == KNIT_ERR_MODULE_FAULT || tries > 2000)
                break;
            usleep(1000);
        }
        CHECK(st == KNIT_ERR_MODULE_FAULT, "after the fault: %s", knit_strerror(st));
        uint64_t x = 0x1234567890ull + (uint64_t)k, y = 0;
        CHECK(call(e, &x, 8, &y, 8, &len) == KNIT_OK && x == y, "echo after fault '%c'", cases[k].op);
        CHECK(knit_module_unload(f) == KNIT_OK, "unload fault");
    }
    CHECK(knit_module_unload(e) == KNIT_OK, "unload echo");
}

/* BADDIR holds the bad files the script made; each refusal says why. */
static void badfiles(int where, const char *baddir)
{
    static const struct {
        const char *file, *want;
    } cases[] = {
        {"text.so", "not an ELF file"},
        {"arm.so", "wrong architecture"},
        {"nosym.so", "missing symbol"},
        {"abi.so", "wrong ABI version"},
        {"init.so", "init failed"},
        {"missing.so", "No such file"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char p[1024];
        snprintf(p, sizeof(p), "%s/%s", baddir, cases[k].file);
        knit_module_t *m = NULL;
        knit_status_t st = knit_module_load(ctx, p, where, &m);
        CHECK(st != KNIT_OK && m == NULL, "%s was loaded", cases[k].file);
        CHECK(strstr(knit_module_last_error(ctx), cases[k].want), "%s: '%s' does not say '%s'", cases[k].file,
              knit_module_last_error(ctx), cases[k].want);
        if (rank == 0)
            printf("%s: %s: %s\n", cases[k].file, knit_strerror(st), knit_module_last_error(ctx));
    }
    knit_module_t *e = load("echo", where);
    uint32_t x = 77, y = 0;
    CHECK(call(e, &x, 4, &y, 4, NULL) == KNIT_OK && y == 77, "echo after bad files");
    CHECK(knit_module_unload(e) == KNIT_OK, "unload");
    knit_agent_info_t info;
    if (where != KNIT_MODULE_HOST) {
        barrier();
        CHECK(knit_agent_info(ctx, &info) == KNIT_OK && info.modules == 0, "modules left: %llu",
              (unsigned long long)info.modules);
    }
}

/* The same requests at the agent and at host placement: the same answers. */
static void equiv(void)
{
    char a[256], h[256];
    paths(KNIT_MODULE_AGENT, a, sizeof(a));
    paths(KNIT_MODULE_HOST, h, sizeof(h));
    CHECK(!strcmp(a, h), "ring: agent '%s', host '%s'", a, h);
    int where[2] = {KNIT_MODULE_AGENT, KNIT_MODULE_HOST};
    unsigned char out[2][4096];
    int64_t cval[2] = {0, 0};
    for (int w = 0; w < 2; w++) {
        knit_module_t *e = load("echo", where[w]), *c = load("counter", where[w]);
        unsigned char in[4096];
        for (int i = 0; i < 4096; i++)
            in[i] = (unsigned char)(i ^ rank);
        size_t len;
        CHECK(call(e, in, sizeof(in), out[w], sizeof(out[w]), &len) == KNIT_OK && len == 4096, "echo");
        barrier();
        if (knit_local_rank(ctx) == 0) /* one rank per node: the node's counter = a rank's */
            for (int64_t d = 1; d <= 5; d++)
                CHECK(call(c, &d, 8, &cval[w], 8, NULL) == KNIT_OK, "counter");
        barrier();
        knit_module_unload(c);
        knit_module_unload(e);
    }
    CHECK(!memcmp(out[0], out[1], 4096) && cval[0] == cval[1] && (knit_local_rank(ctx) || cval[0] == 15),
          "echo/counter differ: counter %lld vs %lld", (long long)cval[0], (long long)cval[1]);
    if (rank == 0)
        printf("agent and host agree: %s; counter %lld\n", a, (long long)cval[0]);
}

static void dying(void)
{
    knit_module_t *f = load("fault", KNIT_MODULE_AGENT);
    barrier();
    if (rank == size - 1) {
        knit_mreq_t *r;
        for (int i = 0; i < 20; i++)
            CHECK(knit_module_request(f, "w", 1, &r) == KNIT_OK, "slow request");
        _exit(3); /* with 20 requests in the agent */
    }
    /* the others keep using their agent until knitrun ends the job */
    for (;;) {
        char res[8];
        knit_status_t st = call(f, "o", 1, res, sizeof(res), NULL);
        if (st != KNIT_OK)
            exit(0);
    }
}

static void stats(void)
{
    knit_module_t *e = load("echo", KNIT_MODULE_AGENT);
    size_t n = 1 << 20;
    char *a = calloc(1, n), *b = malloc(n);
    knit_traffic_t t0, t;
    CHECK(knit_stats(ctx, e, &t0) == KNIT_OK, "stats");
    CHECK(call(e, a, n, b, n, NULL) == KNIT_OK, "echo");
    CHECK(call(e, a, 16, b, n, NULL) == KNIT_OK, "echo");
    CHECK(knit_stats(ctx, e, &t) == KNIT_OK, "stats");
    CHECK(t.queue_in_ops - t0.queue_in_ops == 3 && t.queue_out_ops - t0.queue_out_ops == 3,
          "queue ops in %llu out %llu (expected 3 each: 2 requests, 1 fetch of the big result)",
          (unsigned long long)(t.queue_in_ops - t0.queue_in_ops), (unsigned long long)(t.queue_out_ops - t0.queue_out_ops));
    CHECK(t.agent_read_bytes - t0.agent_read_bytes == n && t.agent_read_ops - t0.agent_read_ops == 1,
          "agent read %llu bytes", (unsigned long long)(t.agent_read_bytes - t0.agent_read_bytes));
    CHECK(t.agent_write_bytes - t0.agent_write_bytes == n, "agent wrote %llu bytes",
          (unsigned long long)(t.agent_write_bytes - t0.agent_write_bytes));
    knit_traffic_t all;
    CHECK(knit_stats(ctx, NULL, &all) == KNIT_OK && all.queue_in_ops >= t.queue_in_ops, "total");
    if (rank == 0)
        printf("rank 0 echo traffic: in %llu ops %llu B, out %llu ops %llu B, reads %llu B, writes %llu B\n",
               (unsigned long long)t.queue_in_ops, (unsigned long long)t.queue_in_bytes,
               (unsigned long long)t.queue_out_ops, (unsigned long long)t.queue_out_bytes,
               (unsigned long long)t.agent_read_bytes, (unsigned long long)t.agent_write_bytes);
    knit_module_unload(e);
    free(a);
    free(b);
}

/* Malformed queue entries written straight into this rank's ring: the
 * agent refuses each (or ignores it) and goes on serving. */
static void garbage(void)
{
    knit_module_t *e = load("echo", KNIT_MODULE_AGENT);
    uint32_t x = 1, y = 0;
    CHECK(call(e, &x, 4, &y, 4, NULL) == KNIT_OK && y == 1, "echo");
    char name[128];
    kn_off_seg_name(name, sizeof(name), getenv("KNIT_JOBID"), node);
    int fd = shm_open(name, O_RDWR, 0);
    CHECK(fd >= 0, "shm_open %s", name);
    size_t sz = kn_off_seg_size((unsigned)knit_local_size(ctx));
    kn_off_seg_t *seg = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(seg != MAP_FAILED, "mmap");
    kn_off_slot_t *sl = &seg->slot[knit_local_rank(ctx)];
    kn_off_sqe_t bad[] = {
        {.op = 0, .version = KN_OFF_VERSION},
        {.op = 99, .version = KN_OFF_VERSION},
        {.op = KN_SQ_REQUEST, .version = 7},
        {.op = KN_SQ_REQUEST, .version = KN_OFF_VERSION, .inl = 5000},
        {.op = KN_SQ_REQUEST, .version = KN_OFF_VERSION, .mod = 12345, .inl = 3, .len = 3},
        {.op = KN_SQ_REQUEST, .version = KN_OFF_VERSION, .addr = 8, .len = 1ull << 40},
        {.op = KN_SQ_REQUEST, .version = KN_OFF_VERSION, .addr = 8, .len = 64},
        {.op = KN_SQ_REQUEST, .version = KN_OFF_VERSION, .inl = 10, .len = 20},
        {.op = KN_SQ_LOAD, .version = KN_OFF_VERSION, .flags = 1, .addr = 8, .len = 10, .inl = 2},
        {.op = KN_SQ_FETCH, .version = KN_OFF_VERSION, .aux = 77, .addr = 8, .len = 8},
        {.op = KN_SQ_POST_RECV, .version = KN_OFF_VERSION, .mod = 999, .addr = 8, .len = 8},
        {.op = KN_SQ_UNLOAD, .version = KN_OFF_VERSION, .mod = 4242},
    };
    int n = (int)(sizeof(bad) / sizeof(bad[0]));
    uint32_t tail = sl->sq_tail;
    CHECK(tail - __atomic_load_n(&sl->sq_head, __ATOMIC_ACQUIRE) + (uint32_t)n <= KN_OFF_ENTRIES, "ring room");
    for (int i = 0; i < n; i++) {
        bad[i].id = 0xdead0000u + (uint64_t)i; /* no operation of the library has such an id */
        memcpy(&sl->sq[(tail + (uint32_t)i) % KN_OFF_ENTRIES], &bad[i], sizeof(bad[i]));
    }
    __atomic_store_n(&sl->sq_tail, tail + (uint32_t)n, __ATOMIC_RELEASE);
    /* a real request behind them (it rings the doorbell if the agent sleeps) */
    for (int i = 0; i < 3; i++) {
        x = 100 + (uint32_t)i;
        CHECK(call(e, &x, 4, &y, 4, NULL) == KNIT_OK && y == x, "echo after garbage");
    }
    knit_agent_info_t info;
    CHECK(knit_agent_info(ctx, &info) == KNIT_OK && info.modules == 1, "agent info after garbage");
    munmap(seg, sz);
    barrier();
    CHECK(knit_module_unload(e) == KNIT_OK, "unload");
}

/* Waiting on a module drives point-to-point: rank 0 polls the counter
 * while its 4 MiB send to rank 1 needs rank 0's own progress (pushed into
 * rank 1's announced receive, one chunk per progress step, KNIT_BULK_CHUNK
 * 1m); rank 1 adds 1 to the counter once the message is in.  Ranks beyond
 * 1 only watch. */
static void p2p_while_waiting(void)
{
    CHECK(size >= 2 && knit_local_size(ctx) >= 2, "ranks 0 and 1 must share a node (one agent, one counter)");
    knit_module_t *m = load("counter", KNIT_MODULE_AGENT);
    size_t n = (size_t)4 << 20;
    unsigned char *buf = malloc(n);
    CHECK(buf, "malloc");
    knit_request_t *r = NULL;
    int ready = 1;
    if (rank == 1) {
        /* posted (and announced) before rank 0 sends anything more to rank
         * 1, so that rank 0 pushes into it instead of sending an RTS */
        memset(buf, 0, n);
        CHECK(knit_irecv(ctx, buf, n, 0, 7, 5, &r) == KNIT_OK, "irecv");
        CHECK(knit_send(ctx, &ready, sizeof(ready), 0, 8, 5) == KNIT_OK, "ready");
    }
    if (rank == 0) {
        CHECK(knit_recv(ctx, &ready, sizeof(ready), 1, 8, 5, NULL) == KNIT_OK, "ready");
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)(i * 7 + 3);
        CHECK(knit_isend(ctx, buf, n, 1, 7, 5, &r) == KNIT_OK, "isend");
        int64_t v = 0;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do { /* only module waits here: no knit_progress, no knit_test */
            CHECK(call(m, NULL, 0, &v, sizeof(v), NULL) == KNIT_OK, "counter read");
            clock_gettime(CLOCK_MONOTONIC, &t);
            CHECK(t.tv_sec - t0.tv_sec < 10, "rank 1 never got the message: module waits do not progress p2p");
        } while (v < 1);
        CHECK(knit_wait(&r, NULL) == KNIT_OK, "send");
    } else if (rank == 1) {
        CHECK(knit_wait(&r, NULL) == KNIT_OK, "recv");
        for (size_t i = 0; i < n; i++)
            CHECK(buf[i] == (unsigned char)(i * 7 + 3), "byte %zu", i);
        int64_t one = 1, after = 0;
        CHECK(call(m, &one, sizeof(one), &after, sizeof(after), NULL) == KNIT_OK && after >= 1, "counter add");
    }
    free(buf);
    barrier();
    CHECK(knit_module_unload(m) == KNIT_OK, "unload");
}

/* This process's Cpus_allowed_list. */
static void cpus_allowed(char *buf, size_t len)
{
    char line[256];
    snprintf(buf, len, "?");
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Cpus_allowed_list: %127s", buf) == 1)
            break;
    if (f)
        fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: offload_test MODDIR CASE [WHERE|ARG]\n");
        return 2;
    }
    moddir = argv[1];
    const char *c = argv[2], *w = argc > 3 ? argv[3] : NULL;
    knit_status_t st = knit_init(&argc, &argv, &ctx);
    CHECK(st == KNIT_OK, "init: %s", knit_strerror(st));
    rank = knit_rank(ctx);
    size = knit_size(ctx);
    nnodes = knit_nnodes(ctx);
    node = knit_node(ctx);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(c, "roundtrip")) {
        roundtrip(where_of(w), argc > 4 ? argv[4] : "echo");
    } else if (!strcmp(c, "paths")) {
        char out[256];
        paths(where_of(w), out, sizeof(out));
        if (rank == 0)
            printf("%s\n", out);
    } else if (!strcmp(c, "cycles")) {
        cycles(w ? atoi(w) : 50);
    } else if (!strcmp(c, "faults")) {
        faults(where_of(w));
    } else if (!strcmp(c, "badfiles")) {
        badfiles(where_of(argc > 4 ? argv[4] : "agent"), w);
    } else if (!strcmp(c, "equiv")) {
        equiv();
    } else if (!strcmp(c, "dying")) {
        dying();
    } else if (!strcmp(c, "stats")) {
        stats();
    } else if (!strcmp(c, "pids")) { /* for the leftover checks: the agent's pid */
        knit_agent_info_t info;
        CHECK(knit_agent_info(ctx, &info) == KNIT_OK, "info");
        if (knit_local_rank(ctx) == 0)
            printf("agent %d pid %d jobid %s\n", info.node, info.pid, getenv("KNIT_JOBID"));
    } else if (!strcmp(c, "killagent")) { /* the agent of the last node dies */
        knit_agent_info_t info;
        CHECK(knit_agent_info(ctx, &info) == KNIT_OK, "info");
        barrier();
        if (rank == size - 1)
            kill(info.pid, SIGKILL);
        for (;;)
            pause(); /* knitrun ends the job */
    } else if (!strcmp(c, "echo")) { /* the demo (make run) */
        knit_module_t *m = load("echo", KNIT_MODULE_AGENT);
        char msg[64], back[64] = "";
        snprintf(msg, sizeof(msg), "hello from rank %d", rank);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK(call(m, msg, strlen(msg) + 1, back, sizeof(back), NULL) == KNIT_OK && !strcmp(msg, back), "echo");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        char path[256];
        paths(KNIT_MODULE_AGENT, path, sizeof(path));
        if (rank == 0) {
            printf("rank 0 -> agent of node 0 -> rank 0: '%s' in %.1f us\n", back,
                   (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3);
            printf("token from agent 0 around every agent, then the switch (-1): %s\n", path);
        }
        CHECK(knit_module_unload(m) == KNIT_OK, "unload");
    } else if (!strcmp(c, "affinity")) { /* knitrun's auto binding and busy daemons */
        char before[128], host[128], after[128];
        cpus_allowed(before, sizeof(before));
        knit_module_t *h = load("echo", KNIT_MODULE_HOST);
        cpus_allowed(host, sizeof(host));
        knit_module_t *m = load("echo", KNIT_MODULE_AGENT);
        cpus_allowed(after, sizeof(after));
        printf("rank %d cpus %s, with a module at the host %s, at the agent %s\n", rank, before, host,
               after);
        CHECK(knit_module_unload(m) == KNIT_OK && knit_module_unload(h) == KNIT_OK, "unload");
    } else if (!strcmp(c, "tree")) { /* each node's path up the switches */
        knit_module_t *m = load("ring", KNIT_MODULE_AGENT);
        int32_t hops[64];
        size_t n = 0;
        CHECK(call(m, "u", 1, hops, sizeof(hops), &n) == KNIT_OK && n >= 8 && n % 4 == 0, "up the tree");
        if (knit_local_rank(ctx) == 0) {
            char line[512];
            int k = snprintf(line, sizeof(line), "path");
            for (size_t i = 0; i < n / 4; i++)
                k += snprintf(line + k, sizeof(line) - (size_t)k, " %d", hops[i]);
            printf("%s\n", line);
        }
        CHECK(knit_module_unload(m) == KNIT_OK, "unload");
    } else if (!strcmp(c, "relay")) { /* header handlers: every agent gets every byte */
        knit_module_t *m = load("relay", where_of(w));
        static const uint32_t sizes[] = {0, 1, 100, 65537, 1 << 20, 3 << 20};
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            int32_t right = -1;
            size_t n = 0;
            CHECK(call(m, &sizes[k], 4, &right, sizeof(right), &n) == KNIT_OK && n == 4, "relay %u", sizes[k]);
            CHECK(right == nnodes, "relay of %u bytes: %d of %d agents got it", sizes[k], right, nnodes);
        }
        CHECK(knit_module_unload(m) == KNIT_OK, "unload");
    } else if (!strcmp(c, "order")) { /* each sender's messages in order, small and bulk (modules/order.c) */
        knit_module_t *m = load("order", KNIT_MODULE_AGENT);
        if (knit_local_rank(ctx) == 0) {
            uint32_t n = 240, res[2] = {0, 0};
            size_t len = 0;
            CHECK(call(m, &n, sizeof(n), res, sizeof(res), &len) == KNIT_OK && len == sizeof(res), "order: %s",
                  knit_module_last_error(ctx));
            CHECK(res[0] == n && res[1] == 0, "node %d's next agent got %u of %u messages, %u out of order or wrong",
                  node, res[0], n, res[1]);
        }
        barrier();
        CHECK(knit_module_unload(m) == KNIT_OK, "unload");
    } else if (!strcmp(c, "paused")) {
        paused();
    } else if (!strcmp(c, "garbage")) {
        garbage();
    } else if (!strcmp(c, "progress")) {
        p2p_while_waiting();
    } else if (!strcmp(c, "noagent")) {
        knit_module_t *m = NULL;
        st = knit_module_load(ctx, path("echo"), KNIT_MODULE_AGENT, &m);
        CHECK(st == KNIT_ERR_NOT_SUPPORTED, "load without agents: %s", knit_strerror(st));
        m = load("echo", KNIT_MODULE_HOST);
        uint32_t x = 5, y = 0;
        CHECK(call(m, &x, 4, &y, 4, NULL) == KNIT_OK && y == 5, "host echo");
        knit_module_unload(m);
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    barrier();
    st = knit_finalize(ctx);
    CHECK(st == KNIT_OK, "finalize: %s", knit_strerror(st));
    if (rank == 0)
        printf("ok %s\n", c);
    return 0;
}
