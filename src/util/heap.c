/*
 * The shared heap (heap.h): large blocks in a memfd the node's peers map.
 *
 * One range of KNIT_HEAP_SIZE bytes is reserved and mapped, shared, from
 * a memfd of the same size (sparse: a page exists once written).  A block
 * at offset off of the range is the file's bytes at off, so a peer that
 * maps the file sees every block at (its mapping + off) and needs no word
 * from us per block.  Free space is a list of extents sorted by offset;
 * live blocks a sorted array (both in glibc's memory; a few hundred
 * entries in the programs measured).  Everything under one mutex: only
 * requests of KNIT_HEAP_MIN bytes and more come here.
 */
#include "util/heap.h"

#include "util/config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_INTERPOSE 0 /* ASan's allocator stays in charge */
#pragma GCC diagnostic ignored "-Wunused-function" /* the allocator, then */
#else
#define HEAP_INTERPOSE 1
#endif

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

/* below this a request never looks at the heap, not even its settings
 * (stdio's buffers, say, do not decide it before the program runs) */
#define HEAP_FLOOR 32768u

typedef struct ext {
    uint64_t off, len;
    int dirty; /* pages may be populated (a cached block): calloc clears */
} ext_t;

typedef struct blk {
    uint64_t off, len;
} blk_t;

static struct {
    pthread_mutex_t lock;
    int on, forked, fd;
    char *base;
    uint64_t size, top, page, min, cache_max, cached;
    ext_t *fr; /* free extents below top, sorted by offset */
    size_t nfr, capfr;
    blk_t *bl; /* live blocks, sorted by offset */
    size_t nbl, capbl;
    uint64_t live, allocs, fallbacks;
} H = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

static uint64_t env_size(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    uint64_t x;
    /* a bad value: the default here; the configuration loader reports it */
    return v && kn_parse_size(v, &x) == KNIT_OK ? x : dflt;
}

static void heap_prepare(void)
{
    pthread_mutex_lock(&H.lock);
}

static void heap_parent(void)
{
    pthread_mutex_unlock(&H.lock);
}

/* The child of a fork must not write into its parent's blocks: each
 * becomes a private copy at the same address, and the child's later
 * large requests go to glibc. */
static void heap_child(void)
{
    if (H.on) {
        for (size_t i = 0; i < H.nbl; i++) {
            char *at = H.base + H.bl[i].off;
            size_t len = H.bl[i].len;
            void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (tmp == MAP_FAILED)
                abort(); /* no memory for the child's copy: it cannot run safely */
            memcpy(tmp, at, len);
            if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED)
                abort();
        }
        H.forked = 1;
        close(H.fd);
        H.fd = -1;
    }
    pthread_mutex_unlock(&H.lock);
}

static void heap_init(void)
{
    H.page = (uint64_t)sysconf(_SC_PAGESIZE);
    const char *v = getenv("KNIT_HEAP");
    int on = 1;
    /* a rank of a job: knitrun's, or another launcher's (core/launch.c) */
    int rank = getenv("KNIT_RANK") || getenv("PMIX_RANK") || getenv("PMI_RANK");
    if (!HEAP_INTERPOSE || !rank || (v && kn_parse_bool(v, &on) == KNIT_OK && !on))
        return;
    H.min = env_size("KNIT_HEAP_MIN", 64 << 10);
    if (H.min < HEAP_FLOOR)
        H.min = HEAP_FLOOR;
    H.size = env_size("KNIT_HEAP_SIZE", (uint64_t)64 << 30);
    /* under an address-space limit (ulimit -v) the range takes a quarter
     * of it at most: the rest stays the program's (and its peers' heaps,
     * which need room too, fall back to cross-memory attach) */
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && H.size > as.rlim_cur / 4)
        H.size = as.rlim_cur / 4;
    H.size &= ~(H.page - 1);
    H.cache_max = env_size("KNIT_HEAP_CACHE", 64 << 20);
    if (!H.size)
        return;
    int fd = memfd_create("knit-heap", MFD_CLOEXEC);
    if (fd < 0)
        return;
    void *base = MAP_FAILED;
    if (ftruncate(fd, (off_t)H.size) == 0)
        base = mmap(NULL, H.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) {
        close(fd);
        return;
    }
    if (pthread_atfork(heap_prepare, heap_parent, heap_child) != 0) {
        munmap(base, H.size);
        close(fd);
        return;
    }
    H.fd = fd;
    H.base = base;
    H.on = 1;
}

static inline int heap_on(void)
{
    pthread_once(&heap_once, heap_init);
    return H.on;
}

static inline uint64_t round_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) & ~(a - 1);
}

/* grow a metadata array by one (glibc's memory; we hold the lock) */
static int reserve(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = __libc_realloc(*arr, nc * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

/* index of the first block at off or after */
static size_t blk_find(uint64_t off)
{
    size_t lo = 0, hi = H.nbl;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (H.bl[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* index of the first extent after off */
static size_t ext_after(uint64_t off)
{
    size_t lo = 0, hi = H.nfr;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (H.fr[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void ext_remove(size_t i)
{
    memmove(&H.fr[i], &H.fr[i + 1], (H.nfr - i - 1) * sizeof(ext_t));
    H.nfr--;
}

/* Give [off, off + len) back to the free space, merging with neighbours
 * alike (dirty with dirty); clean space that reaches top lowers top. */
static int ext_insert(uint64_t off, uint64_t len, int dirty)
{
    if (!len)
        return 0;
    size_t i = ext_after(off);
    if (i > 0 && H.fr[i - 1].off + H.fr[i - 1].len == off && H.fr[i - 1].dirty == dirty) {
        H.fr[i - 1].len += len;
        if (i < H.nfr && off + len == H.fr[i].off && H.fr[i].dirty == dirty) {
            H.fr[i - 1].len += H.fr[i].len;
            ext_remove(i);
        }
        i--;
    } else if (i < H.nfr && off + len == H.fr[i].off && H.fr[i].dirty == dirty) {
        H.fr[i].off = off;
        H.fr[i].len += len;
    } else {
        if (reserve((void **)&H.fr, &H.capfr, H.nfr, sizeof(ext_t)) < 0)
            return -1; /* the space is lost to this process, nothing else */
        memmove(&H.fr[i + 1], &H.fr[i], (H.nfr - i) * sizeof(ext_t));
        H.fr[i] = (ext_t){off, len, dirty};
        H.nfr++;
    }
    if (i == H.nfr - 1 && !H.fr[i].dirty && H.fr[i].off + H.fr[i].len == H.top) {
        H.top = H.fr[i].off;
        H.nfr--;
    }
    return 0;
}

static int blk_add(uint64_t off, uint64_t len)
{
    if (reserve((void **)&H.bl, &H.capbl, H.nbl, sizeof(blk_t)) < 0)
        return -1;
    size_t i = blk_find(off);
    memmove(&H.bl[i + 1], &H.bl[i], (H.nbl - i) * sizeof(blk_t));
    H.bl[i] = (blk_t){off, len};
    H.nbl++;
    H.live += len;
    H.allocs++;
    return 0;
}

/* Carve len bytes aligned to align; NULL where the range has no room
 * (the caller asks glibc).  *dirty: the pages may hold old bytes. */
static void *heap_alloc_locked(uint64_t len, uint64_t align, int *dirty)
{
    uintptr_t b = (uintptr_t)H.base;
    for (size_t i = 0; i < H.nfr; i++) {
        ext_t e = H.fr[i];
        uint64_t a = round_up(b + e.off, align) - b;
        if (a + len > e.off + e.len)
            continue;
        if (blk_add(a, len) < 0)
            return NULL;
        ext_remove(i);
        /* the pieces before and after keep their state (no room to
         * note one: the space is lost, the block is fine) */
        (void)ext_insert(e.off, a - e.off, e.dirty);
        (void)ext_insert(a + len, e.off + e.len - a - len, e.dirty);
        if (e.dirty)
            H.cached -= len;
        *dirty = e.dirty;
        return H.base + a;
    }
    uint64_t a = round_up(b + H.top, align) - b;
    if (a + len > H.size || a + len < a)
        return NULL;
    if (blk_add(a, len) < 0)
        return NULL;
    uint64_t old = H.top;
    H.top = a + len;
    (void)ext_insert(old, a - old, 0);
    *dirty = 0;
    return H.base + a;
}

static void *heap_alloc(size_t n, size_t align, int zero)
{
    uint64_t len = round_up(n, H.page);
    if (len < n)
        return NULL;
    if (align < H.page)
        align = H.page;
    int dirty = 0;
    pthread_mutex_lock(&H.lock);
    void *p = H.forked ? NULL : heap_alloc_locked(len, align, &dirty);
    if (!p)
        H.fallbacks++;
    pthread_mutex_unlock(&H.lock);
    if (p && zero && dirty)
        memset(p, 0, n);
    return p;
}

void *kn_heap_alloc_any(size_t n)
{
    return n && heap_on() ? heap_alloc(n, 64, 1) : NULL;
}

int kn_heap_built(void)
{
    return HEAP_INTERPOSE;
}

int kn_heap_owns(const void *p)
{
    return H.on && (uintptr_t)p - (uintptr_t)H.base < H.size;
}

int kn_heap_holds(const void *p, size_t len)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)H.base;
    return H.on && off < H.size && len <= H.size - off;
}

static void heap_corrupt(const char *what)
{
    static const char m1[] = "knit: ";
    static const char m2[] = ": not a block of knit's shared heap (KNIT_HEAP=0 turns it off)\n";
    ssize_t r = write(2, m1, sizeof(m1) - 1);
    r = write(2, what, strlen(what));
    r = write(2, m2, sizeof(m2) - 1);
    (void)r;
    abort();
}

/* the live block at p (aborts on a pointer that is none: glibc would too) */
static size_t blk_of(void *p, const char *what)
{
    uint64_t off = (uint64_t)((char *)p - H.base);
    size_t i = blk_find(off);
    if (i == H.nbl || H.bl[i].off != off)
        heap_corrupt(what);
    return i;
}

static void heap_free(void *p)
{
    pthread_mutex_lock(&H.lock);
    size_t i = blk_of(p, "free");
    blk_t b = H.bl[i];
    memmove(&H.bl[i], &H.bl[i + 1], (H.nbl - i - 1) * sizeof(blk_t));
    H.nbl--;
    H.live -= b.len;
    if (H.forked) { /* the child's private copy stays where it is */
        pthread_mutex_unlock(&H.lock);
        return;
    }
    int keep = H.cached + b.len <= H.cache_max;
    if (keep) {
        H.cached += b.len;
        (void)ext_insert(b.off, b.len, 1);
        pthread_mutex_unlock(&H.lock);
        return;
    }
    pthread_mutex_unlock(&H.lock);
    /* out of every list: nobody gets these pages while they go back;
     * peers' mappings lose them too */
    int dirty = madvise(H.base + b.off, b.len, MADV_REMOVE) != 0;
    pthread_mutex_lock(&H.lock);
    if (dirty)
        H.cached += b.len; /* could not drop them: counted as kept */
    (void)ext_insert(b.off, b.len, dirty);
    pthread_mutex_unlock(&H.lock);
}

static size_t heap_usable(void *p)
{
    pthread_mutex_lock(&H.lock);
    size_t len = H.bl[blk_of(p, "malloc_usable_size")].len;
    pthread_mutex_unlock(&H.lock);
    return len;
}

/* Grow the block at p in place to len bytes where the space after it is
 * free: 1 done. */
static int heap_grow(void *p, uint64_t len)
{
    int done = 0;
    pthread_mutex_lock(&H.lock);
    size_t i = blk_of(p, "realloc");
    blk_t *b = &H.bl[i];
    uint64_t end = b->off + b->len, need = len - b->len;
    if (!H.forked && end == H.top && H.top + need <= H.size) {
        H.top += need;
        done = 1;
    } else if (!H.forked) {
        size_t j = ext_after(b->off);
        if (j < H.nfr && H.fr[j].off == end && H.fr[j].len >= need) {
            if (H.fr[j].dirty)
                H.cached -= need;
            H.fr[j].off += need;
            H.fr[j].len -= need;
            if (!H.fr[j].len)
                ext_remove(j);
            done = 1;
        }
    }
    if (done) {
        b->len = len;
        H.live += need;
    }
    pthread_mutex_unlock(&H.lock);
    return done;
}

void kn_heap_stats(kn_heap_stats_t *st)
{
    (void)heap_on();
    pthread_mutex_lock(&H.lock);
    *st = (kn_heap_stats_t){.on = H.on && !H.forked,
                            .size = H.size,
                            .live = H.live,
                            .blocks = H.nbl,
                            .cached = H.cached,
                            .allocs = H.allocs,
                            .fallbacks = H.fallbacks};
    pthread_mutex_unlock(&H.lock);
}

int kn_heap_export(uint64_t *base, uint64_t *size, int *fd)
{
    *base = 0;
    *size = 0;
    *fd = -1;
    if (!heap_on() || H.forked || H.fd < 0)
        return 0;
    *base = (uint64_t)(uintptr_t)H.base;
    *size = H.size;
    *fd = H.fd;
    return 1;
}

#if HEAP_INTERPOSE
/* ------------------------------------------------ the malloc interface */

static inline int big(size_t n)
{
    return n >= HEAP_FLOOR && heap_on() && n >= H.min;
}

void *malloc(size_t n)
{
    void *p = big(n) ? heap_alloc(n, 0, 0) : NULL;
    return p ? p : __libc_malloc(n);
}

void free(void *p)
{
    if (!p)
        return;
    if (kn_heap_owns(p))
        heap_free(p);
    else
        __libc_free(p);
}

void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = big(n) ? heap_alloc(n, 0, 1) : NULL;
    return p ? p : __libc_calloc(a, b);
}

/* glibc's own answer for one of its blocks */
static size_t glibc_usable(void *p)
{
    static size_t (*real)(void *);
    if (!real)
        real = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    return real ? real(p) : 0;
}

static void *aligned(size_t align, size_t n)
{
    void *p = big(n) ? heap_alloc(n, align, 0) : NULL;
    return p ? p : __libc_memalign(align, n);
}

void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (!kn_heap_owns(p)) {
        if (!big(n))
            return __libc_realloc(p, n);
        /* a block that grew past the threshold moves into the heap once */
        size_t old = glibc_usable(p);
        void *q = old ? heap_alloc(n, 0, 0) : NULL; /* 0: cannot tell its size */
        if (!q)
            return __libc_realloc(p, n);
        memcpy(q, p, old < n ? old : n);
        __libc_free(p);
        return q;
    }
    if (n == 0) { /* as glibc: frees and returns NULL */
        heap_free(p);
        return NULL;
    }
    size_t cap = heap_usable(p);
    if (n <= cap && n > cap / 2)
        return p;
    if (n > cap && heap_grow(p, round_up(n, H.page)))
        return p;
    void *q = big(n) ? heap_alloc(n, 0, 0) : NULL;
    if (!q)
        q = __libc_malloc(n);
    if (!q)
        return NULL; /* p stays valid, as realloc promises */
    memcpy(q, p, cap < n ? cap : n);
    heap_free(p);
    return q;
}

void *reallocarray(void *p, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    void *p = aligned(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    return aligned(align, n);
}

void *memalign(size_t align, size_t n)
{
    return aligned(align, n);
}

void *valloc(size_t n)
{
    return aligned((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return aligned(pg, n ? (n + pg - 1) & ~(pg - 1) : pg);
}

size_t malloc_usable_size(void *p)
{
    if (kn_heap_owns(p))
        return heap_usable(p);
    return p ? glibc_usable(p) : 0;
}
#endif
