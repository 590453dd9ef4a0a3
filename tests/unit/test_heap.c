/* The shared heap (util/heap.c) and a peer's mapping of it
 * (shm/peerheap.c): which requests it serves, the malloc interface's
 * promises (zeroed calloc after reuse, realloc keeps the bytes, alignment,
 * usable size), threads, the cache of freed blocks, a full range, a forked
 * child, and a peer that maps the heap and sees what the owner sees. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "shm/peerheap.h"
#include "util/heap.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

/* The heap serves ranks only (KNIT_RANK), decided at the first large
 * request: say we are one before anything allocates. */
__attribute__((constructor(101))) static void as_a_rank(void)
{
    if (!getenv("KN_HEAP_TEST_MODE")) /* those set their own */
        setenv("KNIT_RANK", "0", 0);
}

static int all(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static void need_heap(void)
{
    kn_heap_stats_t st;
    kn_heap_stats(&st);
#if defined(__SANITIZE_ADDRESS__)
    KN_SKIP("sanitizer build: ASan's allocator serves every request");
#endif
    if (!st.on)
        KN_SKIP("no shared heap here (memfd_create or the range's mmap failed)");
}

KN_TEST(serves_large_only)
{
    need_heap();
    void *small = malloc(64 * KIB - 1), *large = malloc(64 * KIB), *big = malloc(8 * MIB);
    KN_CHECK(small && large && big);
    KN_CHECK(!kn_heap_owns(small));
    KN_CHECK(kn_heap_owns(large));
    KN_CHECK(kn_heap_owns(big));
    KN_CHECK_EQ((uintptr_t)large % 4096, 0);
    memset(big, 0x5a, 8 * MIB);
    KN_CHECK(all(big, 8 * MIB, 0x5a));
    kn_heap_stats_t st;
    kn_heap_stats(&st);
    KN_CHECK(st.blocks >= 2);
    KN_CHECK(st.live >= 8 * MIB + 64 * KIB);
    free(small);
    free(large);
    free(big);
    kn_heap_stats(&st);
    KN_CHECK_EQ(st.blocks, 0);
    KN_CHECK_EQ(st.live, 0);
    free(NULL);
}

KN_TEST(calloc_clears_reused)
{
    need_heap();
    for (int round = 0; round < 4; round++) {
        unsigned char *p = malloc(MIB);
        KN_CHECK(kn_heap_owns(p));
        memset(p, 0xab, MIB);
        free(p); /* kept populated: the cache */
        unsigned char *q = calloc(MIB / 8, 8);
        KN_CHECK(kn_heap_owns(q));
        KN_CHECK(all(q, MIB, 0));
        free(q);
    }
    volatile size_t huge = SIZE_MAX / 2; /* the compiler would refuse a constant */
    errno = 0;
    KN_CHECK(calloc(huge, 4) == NULL);
    KN_CHECK_EQ(errno, ENOMEM);
}

KN_TEST(realloc_keeps_bytes)
{
    need_heap();
    /* small in glibc -> large: moves into the heap */
    unsigned char *p = malloc(1000);
    memset(p, 1, 1000);
    p = realloc(p, 256 * KIB);
    KN_CHECK(kn_heap_owns(p));
    KN_CHECK(all(p, 1000, 1));
    memset(p, 2, 256 * KIB);
    /* grows (in place or moved) */
    void *block = malloc(128 * KIB); /* something after it, sometimes */
    p = realloc(p, 3 * MIB);
    KN_CHECK(all(p, 256 * KIB, 2));
    memset(p, 3, 3 * MIB);
    /* shrinks a little: stays */
    uintptr_t before = (uintptr_t)p;
    p = realloc(p, 2 * MIB);
    KN_CHECK((uintptr_t)p == before);
    /* shrinks below the threshold: back to glibc with its bytes */
    p = realloc(p, 100);
    KN_CHECK(!kn_heap_owns(p));
    KN_CHECK(all(p, 100, 3));
    free(p);
    free(block);
    /* realloc(p, 0) frees */
    p = malloc(MIB);
    KN_CHECK(realloc(p, 0) == NULL);
    p = reallocarray(NULL, 1024, 1024);
    KN_CHECK(kn_heap_owns(p));
    volatile size_t huge = SIZE_MAX / 2;
    errno = 0;
    KN_CHECK(reallocarray(p, huge, 4) == NULL && errno == ENOMEM);
    free(p);
    kn_heap_stats_t st;
    kn_heap_stats(&st);
    KN_CHECK_EQ(st.blocks, 0);
}

KN_TEST(alignment_and_usable_size)
{
    need_heap();
    void *p = NULL;
    KN_CHECK_EQ(posix_memalign(&p, 2 * MIB, 3 * MIB), 0);
    KN_CHECK(kn_heap_owns(p));
    KN_CHECK_EQ((uintptr_t)p % (2 * MIB), 0);
    KN_CHECK(malloc_usable_size(p) >= 3 * MIB);
    void *q = aligned_alloc(64, 100 * KIB), *r = memalign(8192, 70 * KIB), *v = valloc(80 * KIB),
         *w = pvalloc(90 * KIB + 1);
    KN_CHECK(q && r && v && w);
    KN_CHECK_EQ((uintptr_t)r % 8192, 0);
    KN_CHECK_EQ((uintptr_t)v % 4096, 0);
    KN_CHECK(malloc_usable_size(w) >= 92 * KIB);
    KN_CHECK(malloc_usable_size(q) >= 100 * KIB);
    void *s = malloc(100);
    KN_CHECK(malloc_usable_size(s) >= 100 && malloc_usable_size(s) < 64 * KIB);
    KN_CHECK_EQ(posix_memalign(&p, 3, 64), EINVAL);
    free(s);
    free(q);
    free(r);
    free(v);
    free(w);
    free(p); /* the 2 MiB aligned one is still p: posix_memalign(3) failed */
}

struct worker {
    unsigned seed, id;
    int bad;
};

static void *churn(void *arg)
{
    struct worker *w = arg;
    enum { SLOTS = 16 };
    unsigned char *slot[SLOTS] = {0};
    size_t len[SLOTS] = {0};
    for (int i = 0; i < 3000; i++) {
        unsigned k = (unsigned)rand_r(&w->seed) % SLOTS;
        if (slot[k]) {
            if (!all(slot[k], len[k], (unsigned char)(k + w->id)))
                w->bad++;
            free(slot[k]);
            slot[k] = NULL;
        } else {
            len[k] = 64 * KIB + (size_t)rand_r(&w->seed) % MIB;
            slot[k] = rand_r(&w->seed) % 2 ? malloc(len[k]) : calloc(1, len[k]);
            memset(slot[k], (unsigned char)(k + w->id), len[k]);
        }
    }
    for (int k = 0; k < SLOTS; k++)
        free(slot[k]);
    return NULL;
}

KN_TEST(threads)
{
    need_heap();
    pthread_t t[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.seed = 17u * (unsigned)i + 3, .id = 40u * (unsigned)i, .bad = 0};
        KN_CHECK_EQ(pthread_create(&t[i], NULL, churn, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        KN_CHECK_EQ(w[i].bad, 0);
    }
    kn_heap_stats_t st;
    kn_heap_stats(&st);
    KN_CHECK_EQ(st.blocks, 0);
    KN_CHECK(st.cached <= 64 * MIB);
}

KN_TEST(fork_child_copies)
{
    need_heap();
    unsigned char *p = malloc(MIB);
    memset(p, 'A', MIB);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = all(p, MIB, 'A');
        memset(p, 'B', MIB); /* its own copy */
        void *q = malloc(2 * MIB); /* glibc's from now on */
        ok &= !kn_heap_owns(q) && all(p, MIB, 'B');
        free(q);
        free(p);
        _exit(ok ? 0 : 1);
    }
    int status;
    KN_CHECK(waitpid(pid, &status, 0) == pid);
    KN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    KN_CHECK(all(p, MIB, 'A'));
    void *q = malloc(2 * MIB);
    KN_CHECK(kn_heap_owns(q)); /* the parent keeps its heap */
    free(q);
    free(p);
}

/* A peer (a child, which maps the parent's heap as a rank maps its
 * neighbour's) sees the owner's bytes, writes into them, and sees a block
 * go back to zero once freed beyond the cache. */
KN_TEST(peer_maps)
{
    need_heap();
    uint64_t base, size;
    int fd;
    KN_CHECK(kn_heap_export(&base, &size, &fd));
    unsigned char *a = malloc(2 * MIB), *big = malloc(80 * MIB);
    memset(a, 7, 2 * MIB);
    memset(big, 9, 80 * MIB);
    int go[2], back[2];
    KN_CHECK(pipe(go) == 0 && pipe(back) == 0);
    pid_t owner = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        kn_peer_heap_t h = {0};
        char c = 0;
        int ok = kn_peer_heap_map(&h, owner, fd, base, size);
        unsigned char *pa = ok ? (unsigned char *)kn_peer_heap_at(&h, (uintptr_t)a, 2 * MIB) : NULL;
        unsigned char *pb = ok ? (unsigned char *)kn_peer_heap_at(&h, (uintptr_t)big, 80 * MIB) : NULL;
        ok = ok && pa && pb && all(pa, 2 * MIB, 7) && all(pb, 80 * MIB, 9);
        ok = ok && !kn_peer_heap_at(&h, base + size - 4096, 8192) && !kn_peer_heap_at(&h, base - 1, 1);
        if (ok)
            memset(pa, 8, MIB);
        ok &= write(back[1], "x", 1) == 1;
        ok &= read(go[0], &c, 1) == 1; /* the owner freed big: its pages went back */
        ok = ok && all(pb, 80 * MIB, 0);
        kn_peer_heap_unmap(&h);
        /* a wrong descriptor is refused, not mapped */
        kn_peer_heap_t wrong = {0};
        ok = ok && !kn_peer_heap_map(&wrong, owner, 0, base, size) && wrong.state < 0;
        _exit(ok ? 0 : 1);
    }
    char c;
    KN_CHECK(read(back[0], &c, 1) == 1);
    KN_CHECK(all(a, MIB, 8));
    KN_CHECK(all(a + MIB, MIB, 7));
    free(big); /* larger than the cache: MADV_REMOVE */
    KN_CHECK(write(go[1], "y", 1) == 1);
    int status;
    KN_CHECK(waitpid(pid, &status, 0) == pid);
    KN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(a);
}

/* Settings are read once per process: these run in a fresh process
 * each (this binary again, with the settings in its environment). */
static int run_self(const char *mode, const char *const env[])
{
    pid_t pid = fork();
    if (pid == 0) {
        if (!strcmp(mode, "aslimit")) {
            struct rlimit as = {1ul << 30, 1ul << 30};
            if (setrlimit(RLIMIT_AS, &as) != 0)
                _exit(126);
        }
        for (int i = 0; env[i]; i += 2)
            setenv(env[i], env[i + 1], 1);
        setenv("KN_HEAP_TEST_MODE", mode, 1);
        execl("/proc/self/exe", "test_heap", "none", (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

__attribute__((constructor(102))) static void self_mode(void)
{
    const char *mode = getenv("KN_HEAP_TEST_MODE");
    if (!mode)
        return;
    kn_heap_stats_t st;
    int ok = 0;
    if (!strcmp(mode, "full")) { /* KNIT_HEAP_SIZE=2m */
        void *a = malloc(MIB), *b = malloc(2 * MIB);
        kn_heap_stats(&st);
        ok = kn_heap_owns(a) && b && !kn_heap_owns(b) && st.fallbacks == 1;
        memset(b, 1, 2 * MIB);
        free(a);
        free(b);
    } else if (!strcmp(mode, "cache")) { /* KNIT_HEAP_CACHE=3m */
        void *p[6];
        for (int i = 0; i < 6; i++)
            memset(p[i] = malloc(MIB), i, MIB);
        for (int i = 0; i < 6; i++)
            free(p[i]);
        kn_heap_stats(&st);
        ok = st.cached == 3 * MIB && st.blocks == 0;
    } else if (!strcmp(mode, "off")) { /* KNIT_HEAP=0, or no KNIT_RANK */
        void *p = malloc(4 * MIB);
        kn_heap_stats(&st);
        uint64_t b, s;
        int fd;
        ok = p && !kn_heap_owns(p) && !st.on && !kn_heap_export(&b, &s, &fd) && s == 0;
        free(p);
    } else if (!strcmp(mode, "aslimit")) { /* run under ulimit -v 1 GiB */
        kn_heap_stats(&st);
        void *p = malloc(64 * MIB); /* the program's own room stays */
        ok = st.on && st.size == 256 * MIB && p;
        free(p);
    } else if (!strcmp(mode, "min")) { /* KNIT_HEAP_MIN=1m */
        void *a = malloc(MIB - 1), *b = malloc(MIB);
        ok = !kn_heap_owns(a) && kn_heap_owns(b);
        free(a);
        free(b);
    }
    _exit(ok ? 0 : 1);
}

KN_TEST(settings)
{
    need_heap();
    KN_CHECK_EQ(run_self("full", (const char *const[]){"KNIT_HEAP_SIZE", "2m", NULL}), 0);
    KN_CHECK_EQ(run_self("cache", (const char *const[]){"KNIT_HEAP_CACHE", "3m", NULL}), 0);
    KN_CHECK_EQ(run_self("off", (const char *const[]){"KNIT_HEAP", "0", NULL}), 0);
    KN_CHECK_EQ(run_self("min", (const char *const[]){"KNIT_HEAP_MIN", "1m", NULL}), 0);
    KN_CHECK_EQ(run_self("aslimit", (const char *const[]){NULL}), 0);
    unsetenv("KNIT_RANK"); /* not a rank: never */
    KN_CHECK_EQ(run_self("off", (const char *const[]){NULL}), 0);
    setenv("KNIT_RANK", "0", 1);
}
