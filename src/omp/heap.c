/*
 * The program's heap in the region (docs/openmp.md): malloc and friends,
 * when the program's own code calls them (the caller's address is in its
 * text) and the job has more than one node, come from the region, so
 * that what the master allocates is there on every node.  Everything
 * else (the C library's own buffers: stdio, strdup; knit's) goes on to
 * the next allocator, libknit's (its shared heap, then glibc's): the
 * kernel writes into those with read(2), which a write-protected page of
 * the region would refuse.
 *
 * Blocks of up to 32 KiB come from per-process lists of 11 sizes (powers
 * of two), refilled 256 KiB at a time; larger ones are the region
 * allocator's own (knit_dsm_alloc: a round trip to node 0's agent).  Any
 * process may free any block.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "dsm/dsm_int.h"
#include "omp/komp.h"

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    size_t (*usable)(void *);
} next;

#define MAGIC 0x6b6f6d70u
#define BIG 0xffffffffu
#define CLASSES 11          /* 32 .. 32768 bytes, header included */
#define REFILL (256u << 10)

typedef struct hdr {
    uint32_t magic, cls;
    uint64_t size;          /* what was asked for */
} hdr_t;

static char *lo, *hi;       /* the region's heap (kept after it is let go, for free) */
static int on;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *lists[CLASSES];

__attribute__((constructor)) static void resolve(void)
{
    next.malloc = dlsym(RTLD_NEXT, "malloc");
    next.free = dlsym(RTLD_NEXT, "free");
    next.calloc = dlsym(RTLD_NEXT, "calloc");
    next.realloc = dlsym(RTLD_NEXT, "realloc");
    next.memalign = dlsym(RTLD_NEXT, "memalign");
    next.usable = dlsym(RTLD_NEXT, "malloc_usable_size");
}

void komp_heap_start(void)
{
    lo = kn_dsm.base + kn_dsm.layout.heap_from;
    hi = kn_dsm.base + kn_dsm.size;
    on = 1;
}

static void *fwd_malloc(size_t n)
{
    return next.malloc ? next.malloc(n) : __libc_malloc(n);
}

static inline int mine(const void *p)
{
    return p && (const char *)p >= lo && (const char *)p < hi;
}

static inline int program(const void *ra)
{
    return on && komp.multi && (uintptr_t)ra >= komp.text_lo && (uintptr_t)ra < komp.text_hi;
}

static void *region_alloc(size_t n, size_t align)
{
    if (align <= 16 && n + sizeof(hdr_t) <= (32u << 10)) {
        unsigned cls = 0;
        while ((32u << cls) < n + sizeof(hdr_t))
            cls++;
        size_t sz = 32u << cls;
        pthread_mutex_lock(&lock);
        if (!lists[cls]) {
            char *chunk = knit_dsm_alloc(REFILL);
            if (!chunk) {
                pthread_mutex_unlock(&lock);
                errno = ENOMEM;
                return NULL;
            }
            for (size_t off = REFILL; off >= sz; off -= sz) { /* (lowest first out) */
                *(void **)(chunk + off - sz) = lists[cls];
                lists[cls] = chunk + off - sz;
            }
        }
        char *b = lists[cls];
        lists[cls] = *(void **)b;
        pthread_mutex_unlock(&lock);
        hdr_t *h = (hdr_t *)b;
        *h = (hdr_t){.magic = MAGIC, .cls = cls, .size = n};
        return h + 1;
    }
    if (align < 64)
        align = 64;
    char *b = knit_dsm_alloc(n + align + 64);
    if (!b) {
        errno = ENOMEM;
        return NULL;
    }
    char *p = (char *)(((uintptr_t)b + 32 + align - 1) & ~(uintptr_t)(align - 1));
    ((void **)p)[-3] = b;
    ((hdr_t *)p)[-1] = (hdr_t){.magic = MAGIC, .cls = BIG, .size = n};
    return p;
}

static hdr_t *hdr_of(void *p)
{
    hdr_t *h = (hdr_t *)p - 1;
    if (h->magic != MAGIC || (h->cls != BIG && h->cls >= CLASSES))
        komp_fatal("free(%p): not the start of a block of the region's heap", p);
    return h;
}

static void region_free(void *p)
{
    if (!komp.multi)
        return; /* (the region was let go: the job is ending) */
    hdr_t *h = hdr_of(p);
    if (h->cls == BIG) {
        knit_dsm_free(((void **)p)[-3]);
        return;
    }
    h->magic = 0;
    pthread_mutex_lock(&lock);
    *(void **)h = lists[h->cls];
    lists[h->cls] = h;
    pthread_mutex_unlock(&lock);
}

void *malloc(size_t n)
{
    if (program(__builtin_return_address(0)))
        return region_alloc(n, 16);
    return fwd_malloc(n);
}

void free(void *p)
{
    if (mine(p))
        region_free(p);
    else if (next.free)
        next.free(p);
    else
        __libc_free(p);
}

void *calloc(size_t a, size_t b)
{
    if (program(__builtin_return_address(0))) {
        size_t n;
        if (__builtin_mul_overflow(a, b, &n)) {
            errno = ENOMEM;
            return NULL;
        }
        void *p = region_alloc(n, 16);
        if (p)
            memset(p, 0, n);
        return p;
    }
    return next.calloc ? next.calloc(a, b) : __libc_calloc(a, b);
}

static void *region_realloc(void *p, size_t n)
{
    hdr_t *h = hdr_of(p);
    size_t cap = h->cls == BIG ? h->size : (32u << h->cls) - sizeof(hdr_t);
    if (n <= cap && (h->cls != BIG || n >= h->size / 2)) {
        if (h->cls != BIG)
            h->size = n;
        return p;
    }
    void *q = region_alloc(n, 16);
    if (!q)
        return NULL;
    memcpy(q, p, h->size < n ? h->size : n);
    region_free(p);
    return q;
}

static void *realloc_from(const void *ra, void *p, size_t n)
{
    if (mine(p) && komp.multi) {
        if (!n) {
            region_free(p);
            return NULL;
        }
        return region_realloc(p, n);
    }
    if (!p && program(ra))
        return region_alloc(n, 16);
    return next.realloc ? next.realloc(p, n) : __libc_realloc(p, n);
}

void *realloc(void *p, size_t n)
{
    return realloc_from(__builtin_return_address(0), p, n);
}

void *reallocarray(void *p, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_from(__builtin_return_address(0), p, n);
}

static void *aligned(const void *ra, size_t align, size_t n)
{
    if (program(ra))
        return region_alloc(n, align);
    return next.memalign ? next.memalign(align, n) : __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    void *p = aligned(__builtin_return_address(0), align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    return aligned(__builtin_return_address(0), align, n);
}

void *memalign(size_t align, size_t n)
{
    return aligned(__builtin_return_address(0), align, n);
}

void *valloc(size_t n)
{
    return aligned(__builtin_return_address(0), 4096, n);
}

void *pvalloc(size_t n)
{
    return aligned(__builtin_return_address(0), 4096, (n + 4095) & ~(size_t)4095);
}

size_t malloc_usable_size(void *p)
{
    if (mine(p))
        return hdr_of(p)->size;
    return next.usable ? next.usable(p) : 0;
}

/* strdup and strndup of the program's: their copies are shared too (the C
 * library's would call its own malloc) */
char *strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = program(__builtin_return_address(0)) ? region_alloc(n, 16) : fwd_malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}

char *strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *d = program(__builtin_return_address(0)) ? region_alloc(n + 1, 16) : fwd_malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}
