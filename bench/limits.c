/*
 * bench/limits: the physical limits of this machine, measured in one run, so
 * that every benchmark table can say what fraction of the limit knit reaches.
 *
 *   memcpy_hot    memcpy bandwidth, source and destination stay in cache
 *                 (only sizes whose two buffers fit in the last-level cache)
 *   memcpy_cold   memcpy bandwidth, every copy touches memory not used for a
 *                 while (a pool much larger than the last-level cache)
 *   cma_read      process_vm_readv bandwidth: a parent reads a child's buffer
 *   cma_write     process_vm_writev bandwidth: a parent writes a child's buffer
 *   map_read      memcpy from a child's buffer that both map (a memfd, as
 *                 knit's shared heap): the ceiling of a pull between two
 *                 blocks of the shared heaps
 *   cma_alltoallP an alltoall of 1 MiB blocks among P processes (2, 4, 8)
 *                 made of nothing but kernel copies: each reads its block
 *                 from every other with process_vm_readv, unsynchronized;
 *                 µs per alltoall.  The floor of one kernel copy per byte,
 *                 what knit's direct alltoall and Open MPI's both make
 *   shm_pingpong  one-way latency of a cache line bounced between two
 *                 processes through shared memory (pure spinning, no yield)
 *   tcp_lat       one-way latency of a 1-byte ping-pong over loopback TCP
 *                 (TCP_NODELAY), receiver busy-polling as MPI libraries do
 *   tcp_lat_block the same with blocking reads (includes the wake-up)
 *   tcp_bw        loopback TCP streaming bandwidth (256 KiB writes, socket
 *                 buffers sized by the kernel: of 64 KiB-1 MiB writes with
 *                 fixed 4 MiB or autotuned buffers, the fastest here)
 *
 * Every value is the median of several repetitions.  Output: one
 * machine-readable line per value,
 *   limit <name> <size> <value> <unit>
 * then a table for people.  Bandwidth is in MB/s (10^6 bytes/s), the same
 * unit as the benchmark programs.
 *
 * Options: --quick (fewer repetitions, shorter runs, smaller cold pool),
 * --only NAME[,NAME] (a name or a prefix: memcpy, cma, shm, tcp),
 * --reps N.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define KIB 1024ul
#define MIB (1024ul * 1024ul)

static const size_t bw_sizes[] = {64 * KIB, 1 * MIB, 4 * MIB, 64 * MIB};
#define NBW (sizeof(bw_sizes) / sizeof(bw_sizes[0]))

static int quick;
static int reps = 5;
static const char *only;
static int ncpus;

struct row {
    char name[32];
    size_t size;
    double value, min, max;
    char unit[8];
    char note[96];
};
static struct row rows[64];
static int nrows;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Plain decimal with sensible precision: machine-readable and readable. */
static const char *fmt(double v, char *buf, size_t n)
{
    snprintf(buf, n, v >= 1000 ? "%.0f" : v >= 10 ? "%.2f" : "%.3f", v);
    return buf;
}

static void die(const char *what)
{
    fprintf(stderr, "limits: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void record(const char *name, size_t size, double *v, int n, const char *unit,
                   const char *note)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    struct row *r = &rows[nrows++];
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->unit, sizeof(r->unit), "%s", unit);
    snprintf(r->note, sizeof(r->note), "%s", note ? note : "");
    r->size = size;
    r->value = med;
    r->min = v[0];
    r->max = v[n - 1];
    char b[32];
    printf("limit %s %zu %s %s\n", name, size, fmt(med, b, sizeof(b)), unit);
    fflush(stdout);
}

static void unavailable(const char *name, const char *why)
{
    printf("# limit %s unavailable: %s\n", name, why);
    struct row *r = &rows[nrows++];
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->note, sizeof(r->note), "unavailable: %.80s", why);
    r->value = -1;
    fflush(stdout);
}

static int wanted(const char *name)
{
    if (!only)
        return 1;
    const char *p = only;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n && strncmp(name, p, n) == 0)
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

static void *alloc_touched(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    memset(p, 0x5a, len);
    return p;
}

/* How many times to repeat an operation taking about t_once seconds so that
 * one measurement lasts about target seconds. */
static long count_for(double t_once, double target, long lo, long hi)
{
    long n = t_once > 0 ? (long)(target / t_once) : hi;
    return n < lo ? lo : n > hi ? hi : n;
}

static int pin_to(int cpu)
{
    if (ncpus < 2)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % ncpus, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0;
}

/* ------------------------------------------------------------ memcpy */

/* Keep the compiler from dropping copies whose result is never read. */
static void clobber(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

static void bench_memcpy(void)
{
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t llc = l3 > 0 ? (size_t)l3 : 32 * MIB;
    double target = quick ? 0.02 : 0.08;
    double v[32];

    if (wanted("memcpy_hot")) {
        for (size_t i = 0; i < NBW; i++) {
            size_t sz = bw_sizes[i];
            if (2 * sz > llc / 2)
                continue; /* both buffers would not stay in cache: not meaningful */
            char *src = alloc_touched(sz), *dst = alloc_touched(sz);
            memcpy(dst, src, sz);
            double t0 = now();
            memcpy(dst, src, sz);
            long n = count_for(now() - t0, target, 3, 1000000);
            for (int r = 0; r < reps; r++) {
                t0 = now();
                for (long k = 0; k < n; k++) {
                    memcpy(dst, src, sz);
                    clobber(dst);
                }
                v[r] = (double)sz * (double)n / (now() - t0) / 1e6;
            }
            record("memcpy_hot", sz, v, reps, "MB/s", "same buffers copied again and again");
            munmap(src, sz);
            munmap(dst, sz);
        }
    }
    if (wanted("memcpy_cold")) {
        /* a pool several times the LLC; copies walk through it so each one
         * reads and writes memory that was evicted long ago */
        size_t pool = 4 * llc;
        if (pool < 512 * MIB)
            pool = 512 * MIB;
        if (quick && pool > 512 * MIB)
            pool = 512 * MIB;
        char *base = alloc_touched(pool);
        for (size_t i = 0; i < NBW; i++) {
            size_t sz = bw_sizes[i];
            size_t nchunks = pool / sz / 2; /* pairs (src in low half, dst in high half) */
            size_t half = pool / 2;
            size_t c = 0;
            double t0 = now();
            memcpy(base + half, base, sz);
            long n = count_for(now() - t0, target, 2, (long)nchunks * 64);
            for (int r = 0; r < reps; r++) {
                t0 = now();
                for (long k = 0; k < n; k++) {
                    memcpy(base + half + c * sz, base + c * sz, sz);
                    clobber(base);
                    if (++c == nchunks)
                        c = 0;
                }
                v[r] = (double)sz * (double)n / (now() - t0) / 1e6;
            }
            char note[96];
            snprintf(note, sizeof(note), "walking a %zu MiB pool (LLC %zu MiB)", pool / MIB,
                     llc / MIB);
            record("memcpy_cold", sz, v, reps, "MB/s", note);
        }
        munmap(base, pool);
    }
}

/* ------------------------------------------------------------ cross-memory attach */

/* Read or write len bytes of the child's memory at raddr; loops over short
 * transfers.  Returns 0 or an errno. */
static int cma_xfer(pid_t pid, int write, void *local, void *raddr, size_t len)
{
    size_t done = 0;
    while (done < len) {
        struct iovec l = {(char *)local + done, len - done};
        struct iovec r = {(char *)raddr + done, len - done};
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0)
            return errno;
        if (n == 0)
            return EIO;
        done += (size_t)n;
    }
    return 0;
}

static const char *cma_why(int err)
{
    switch (err) {
    case EPERM:
        return "EPERM: the kernel refused to attach to the other process (Yama "
               "kernel.yama.ptrace_scope >= 1 forbids it between siblings, and "
               "containers often drop CAP_SYS_PTRACE or block the call in seccomp)";
    case ENOSYS:
        return "ENOSYS: kernel built without CONFIG_CROSS_MEMORY_ATTACH or blocked by seccomp";
    default:
        return strerror(err);
    }
}

/* A child on cpu 1 that writes len bytes of buf (mapped before the fork:
 * its own pages, or the file's) and waits until *go is closed; the caller
 * goes on on cpu 0 once the child is ready. */
static pid_t filler(char *buf, size_t len, int *go)
{
    int g[2], ready[2];
    if (pipe(g) || pipe(ready))
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(g[1]);
        close(ready[0]);
        pin_to(1);
        memset(buf, 0x33, len);
        char c = 1;
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        while (read(g[0], &c, 1) == 1) /* wait until the parent is done */
            ;
        _exit(0);
    }
    close(g[0]);
    close(ready[1]);
    pin_to(0);
    char c;
    if (read(ready[0], &c, 1) != 1)
        die("child did not start");
    close(ready[0]);
    *go = g[1];
    return pid;
}

static void bench_cma(void)
{
    int do_read = wanted("cma_read"), do_write = wanted("cma_write");
    if (!do_read && !do_write)
        return;
    size_t maxsz = bw_sizes[NBW - 1];
    /* allocated before fork: the child has its own copy at the same address */
    char *remote = mmap(NULL, maxsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (remote == MAP_FAILED)
        die("mmap");
    int go;
    pid_t pid = filler(remote, maxsz, &go);
    char *local = alloc_touched(maxsz);
    double target = quick ? 0.02 : 0.08;
    double v[32];
    for (int w = 0; w < 2; w++) {
        if (!(w ? do_write : do_read))
            continue;
        const char *name = w ? "cma_write" : "cma_read";
        int err = cma_xfer(pid, w, local, remote, 4096);
        if (err) {
            unavailable(name, cma_why(err));
            continue;
        }
        for (size_t i = 0; i < NBW; i++) {
            size_t sz = bw_sizes[i];
            double t0 = now();
            cma_xfer(pid, w, local, remote, sz);
            long n = count_for(now() - t0, target, 2, 1000000);
            for (int r = 0; r < reps; r++) {
                t0 = now();
                for (long k = 0; k < n; k++)
                    if ((err = cma_xfer(pid, w, local, remote, sz)))
                        break;
                if (err)
                    break;
                v[r] = (double)sz * (double)n / (now() - t0) / 1e6;
            }
            if (err) {
                unavailable(name, cma_why(err));
                break;
            }
            record(name, sz, v, reps, "MB/s",
                   w ? "parent writes child's buffer, one copy" : "parent reads child's buffer, one copy");
        }
    }
    close(go);
    waitpid(pid, NULL, 0);
    munmap(local, maxsz);
    munmap(remote, maxsz);
}

/* ------------------------------------------------------------ alltoall by kernel copies */

static const int a2a_procs[] = {2, 4, 8}; /* cma_alltoallP */
#define A2A_MAX_PROCS 8

/* What the processes of one cma_alltoall share. */
struct a2a_shared {
    _Atomic int ready, round, done;
    int err;
    long iters;
    pid_t pid[A2A_MAX_PROCS];
    uint64_t addr[A2A_MAX_PROCS];
    double t0[A2A_MAX_PROCS], t1[A2A_MAX_PROCS];
};

/* Process me of p: its vector and result, then rounds of the parent's:
 * iters alltoalls, timed, with no synchronization between them (the
 * blocks' contents do not matter). */
static void a2a_child(struct a2a_shared *S, int me, int p, size_t len)
{
    pin_to(me);
    char *sb = alloc_touched((size_t)p * len), *rb = alloc_touched((size_t)p * len);
    S->addr[me] = (uint64_t)(uintptr_t)sb;
    S->pid[me] = getpid();
    atomic_fetch_add(&S->ready, 1);
    for (int r = 1;; r++) {
        int at;
        while ((at = atomic_load(&S->round)) >= 0 && at < r)
            sched_yield();
        if (at < 0)
            _exit(0);
        double t0 = now();
        for (long it = 0; it < S->iters; it++)
            for (int j = 1; j < p; j++) {
                int q = (me + j) % p;
                int err = cma_xfer(S->pid[q], 0, rb + (size_t)q * len,
                                   (void *)(uintptr_t)(S->addr[q] + (size_t)me * len), len);
                if (err)
                    S->err = err;
            }
        S->t0[me] = t0;
        S->t1[me] = now();
        atomic_fetch_add(&S->done, 1);
    }
}

/* One round: the time of one alltoall, first start to last end. */
static double a2a_round(struct a2a_shared *S, int p, int r)
{
    atomic_store(&S->done, 0);
    atomic_store(&S->round, r);
    while (atomic_load(&S->done) < p)
        usleep(200);
    double a = S->t0[0], b = S->t1[0];
    for (int i = 1; i < p; i++) {
        a = S->t0[i] < a ? S->t0[i] : a;
        b = S->t1[i] > b ? S->t1[i] : b;
    }
    return (b - a) / (double)S->iters;
}

static void bench_cma_alltoall(void)
{
    const size_t len = MIB;
    for (size_t pi = 0; pi < sizeof(a2a_procs) / sizeof(a2a_procs[0]); pi++) {
        int p = a2a_procs[pi];
        char name[32];
        snprintf(name, sizeof(name), "cma_alltoall%d", p);
        if (!wanted(name))
            continue;
        struct a2a_shared *S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (S == MAP_FAILED)
            die("mmap");
        S->iters = 1;
        int started = 0;
        for (; started < p; started++) {
            pid_t pid = fork();
            if (pid < 0)
                break;
            if (pid == 0)
                a2a_child(S, started, p, len);
        }
        int lost = 0; /* a process died before it was ready (die(): no memory) */
        while (started == p && atomic_load(&S->ready) < p && !lost)
            if (!(lost = waitpid(-1, NULL, WNOHANG) > 0))
                usleep(200);
        double v[32];
        int r = 1;
        if (started == p && !lost) {
            double once = a2a_round(S, p, r++); /* and a warm-up */
            S->iters = count_for(once, quick ? 0.05 : 0.2, 2, 10000);
            for (int k = 0; k < reps && !S->err; k++)
                v[k] = a2a_round(S, p, r++) * 1e6;
        }
        atomic_store(&S->round, -1);
        while (wait(NULL) > 0)
            ;
        if (started < p || lost)
            unavailable(name, started < p ? "fork failed" : "a process could not set up its buffers");
        else if (S->err)
            unavailable(name, cma_why(S->err));
        else
            record(name, len, v, reps, "us", "alltoall of 1 MiB blocks, kernel copies only, unsynchronized");
        munmap(S, sizeof(*S));
    }
}

/* ------------------------------------------------------------ cache-line ping-pong */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static void bench_shm_pingpong(void)
{
    if (!wanted("shm_pingpong"))
        return;
    if (ncpus < 2) {
        unavailable("shm_pingpong", "fewer than 2 cpus: two spinning processes would share one core");
        return;
    }
    /* the line: a counter; the parent moves it from even to odd, the child
     * from odd to even; each move is one one-way trip of the line */
    volatile uint64_t *line = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (line == MAP_FAILED)
        die("mmap");
    long trips = quick ? 200000 : 1000000; /* per repetition, both directions */
    long total = trips * (reps + 1);       /* +1: warm-up */
    *line = 0;
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        pin_to(1);
        for (uint64_t k = 1; k < (uint64_t)total; k += 2) {
            while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != k)
                cpu_relax();
            __atomic_store_n(line, k + 1, __ATOMIC_RELEASE);
        }
        _exit(0);
    }
    int pinned = pin_to(0);
    double v[32];
    uint64_t k = 0;
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        for (long i = 0; i < trips; i += 2) {
            __atomic_store_n(line, k + 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != k + 2)
                cpu_relax();
            k += 2;
        }
        if (r >= 0)
            v[r] = (now() - t0) / (double)trips * 1e9;
    }
    waitpid(pid, NULL, 0);
    munmap((void *)line, 4096);
    char note[96];
    snprintf(note, sizeof(note), "one-way, spinning, %s, %d-cpu machine",
             pinned ? "pinned to cpus 0 and 1" : "unpinned", ncpus);
    record("shm_pingpong", 64, v, reps, "ns", note);
}

/* ------------------------------------------------------------ loopback TCP */

static void tcp_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
        die("setsockopt TCP_NODELAY");
}

static int full_io(int fd, void *buf, size_t len, int wr)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = wr ? write(fd, (char *)buf + done, len - done)
                       : read(fd, (char *)buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* A connected pair of loopback TCP sockets: *a in this process, *b for the
 * child; the kernel sizes their buffers. */
static void tcp_pair(int *a, int *b)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0)
        die("socket");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&sa, &sl))
        die("bind/listen");
    *b = socket(AF_INET, SOCK_STREAM, 0);
    if (*b < 0)
        die("socket");
    if (connect(*b, (struct sockaddr *)&sa, sizeof(sa)))
        die("connect");
    *a = accept(l, NULL, NULL);
    if (*a < 0)
        die("accept");
    close(l);
    tcp_nodelay(*a);
    tcp_nodelay(*b);
}

/* Busy-polling receive of exactly len bytes (what MPI libraries do). */
static int spin_read(int fd, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
        if (n > 0)
            done += (size_t)n;
        else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return -1;
    }
    return 0;
}

/* One-way latency of a 1-byte ping-pong; spin: poll the socket without
 * sleeping (the best case, as MPI libraries do) instead of blocking in read. */
static void tcp_lat(const char *name, int spin)
{
    if (!wanted(name))
        return;
    int a, b;
    tcp_pair(&a, &b);
    long trips = quick ? 5000 : 20000; /* round trips per repetition */
    long total = trips * (reps + 1);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(a);
        pin_to(1);
        char c;
        for (long i = 0; i < total; i++)
            if ((spin ? spin_read(b, &c, 1) : full_io(b, &c, 1, 0)) || full_io(b, &c, 1, 1))
                _exit(1);
        _exit(0);
    }
    close(b);
    pin_to(0);
    double v[32];
    char c = 'x';
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        for (long i = 0; i < trips; i++)
            if (full_io(a, &c, 1, 1) || (spin ? spin_read(a, &c, 1) : full_io(a, &c, 1, 0)))
                die("tcp ping-pong");
        if (r >= 0)
            v[r] = (now() - t0) / (double)trips / 2 * 1e6;
    }
    close(a);
    waitpid(pid, NULL, 0);
    record(name, 1, v, reps, "us",
           spin ? "one-way, 1-byte ping-pong, TCP_NODELAY, loopback, busy-polling recv"
                : "one-way, 1-byte ping-pong, TCP_NODELAY, loopback, blocking read");
}

static void bench_tcp_bw(void)
{
    if (!wanted("tcp_bw"))
        return;
    const size_t chunk = 256 * KIB;
    size_t per_rep = quick ? 256 * MIB : 1024 * MIB;
    int a, b;
    tcp_pair(&a, &b);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) { /* receiver: drain each repetition, then acknowledge */
        close(a);
        pin_to(1);
        char *buf = alloc_touched(chunk);
        for (int r = -1; r < reps; r++) {
            for (size_t got = 0; got < per_rep;) {
                ssize_t n = read(b, buf, chunk);
                if (n <= 0)
                    _exit(1);
                got += (size_t)n;
            }
            char c = 1;
            if (full_io(b, &c, 1, 1))
                _exit(1);
        }
        _exit(0);
    }
    close(b);
    pin_to(0);
    char *buf = alloc_touched(chunk);
    double v[32];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        for (size_t sent = 0; sent < per_rep; sent += chunk)
            if (full_io(a, buf, chunk, 1))
                die("tcp stream");
        char c;
        if (full_io(a, &c, 1, 0))
            die("tcp stream ack");
        if (r >= 0)
            v[r] = (double)per_rep / (now() - t0) / 1e6;
    }
    close(a);
    waitpid(pid, NULL, 0);
    record("tcp_bw", chunk, v, reps, "MB/s", "256 KiB writes, autotuned socket buffers, loopback");
}

/* ------------------------------------------------------------ main */

/* A child fills a memfd both map; the parent copies out of its mapping. */
static void bench_map_read(void)
{
    if (!wanted("map_read"))
        return;
    size_t maxsz = bw_sizes[NBW - 1];
    int fd = memfd_create("limits", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)maxsz) < 0) {
        unavailable("map_read", strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    char *remote = mmap(NULL, maxsz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (remote == MAP_FAILED)
        die("mmap");
    int go;
    pid_t pid = filler(remote, maxsz, &go); /* its writes populate the file */
    char *local = alloc_touched(maxsz);
    double target = quick ? 0.02 : 0.08, v[32];
    for (size_t i = 0; i < NBW; i++) {
        size_t sz = bw_sizes[i];
        double t0 = now();
        memcpy(local, remote, sz);
        clobber(local);
        long n = count_for(now() - t0, target, 2, 1000000);
        for (int r = 0; r < reps; r++) {
            t0 = now();
            for (long k = 0; k < n; k++) {
                memcpy(local, remote, sz);
                clobber(local);
            }
            v[r] = (double)sz * (double)n / (now() - t0) / 1e6;
        }
        record("map_read", sz, v, reps, "MB/s", "parent copies from child's buffer, both map it (shared heap)");
    }
    close(go);
    waitpid(pid, NULL, 0);
    munmap(local, maxsz);
    munmap(remote, maxsz);
    close(fd);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: limits [--quick] [--reps N] [--only NAME[,NAME...]]\n"
               "names (or prefixes): memcpy_hot memcpy_cold cma_read cma_write map_read cma_alltoall2 "
               "cma_alltoall4 cma_alltoall8 shm_pingpong tcp_lat tcp_lat_block tcp_bw\n");
}

static void human_size(size_t s, char *out, size_t n)
{
    if (s >= MIB && s % MIB == 0)
        snprintf(out, n, "%zu MiB", s / MIB);
    else if (s >= KIB && s % KIB == 0)
        snprintf(out, n, "%zu KiB", s / KIB);
    else
        snprintf(out, n, "%zu B", s);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > 31) {
                fprintf(stderr, "limits: --reps must be 1..31\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (quick && reps == 5)
        reps = 3;
    signal(SIGPIPE, SIG_IGN);
    cpu_set_t set;
    ncpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    printf("# limits: %d cpus usable, %d repetitions each, median reported%s\n", ncpus, reps,
           quick ? " (quick)" : "");
    fflush(stdout);

    bench_memcpy();
    bench_cma();
    bench_map_read();
    bench_cma_alltoall();
    bench_shm_pingpong();
    tcp_lat("tcp_lat", 1);
    tcp_lat("tcp_lat_block", 0);
    bench_tcp_bw();

    printf("\n%-13s %8s %12s %12s %12s %-6s  %s\n", "limit", "size", "median", "min", "max",
           "unit", "how");
    for (int i = 0; i < nrows; i++) {
        struct row *r = &rows[i];
        if (r->value < 0) {
            printf("%-13s %8s %12s %12s %12s %-6s  %s\n", r->name, "-", "-", "-", "-", "-", r->note);
            continue;
        }
        char hs[32], b1[32], b2[32], b3[32];
        human_size(r->size, hs, sizeof(hs));
        printf("%-13s %8s %12s %12s %12s %-6s  %s\n", r->name, hs, fmt(r->value, b1, 32),
               fmt(r->min, b2, 32), fmt(r->max, b3, 32), r->unit, r->note);
    }
    if (ncpus <= 2)
        printf("note: this machine has %d cpu(s); two spinning processes occupy all of them, so "
               "anything else running disturbs the latency numbers\n", ncpus);
    return 0;
}
