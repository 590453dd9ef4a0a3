/*
 * Fuzz targets: one per decoder of bytes that come from outside the
 * process (docs/reliability.md, "Fuzzing").  Each fuzz_<name>.c defines
 * its entry with KN_FUZZ_TARGET(name):
 *   built by mk/fuzz.mk with clang -fsanitize=fuzzer (KN_FUZZ_LIBFUZZER):
 *     LLVMFuzzerTestOneInput, driven by libFuzzer;
 *   built by the normal compiler into tests/unit/test_fuzz: kn_fuzz_<name>,
 *     which replays the seed corpus and the regression inputs.
 * A failed property aborts (KN_FUZZ_CHECK): a crash to libFuzzer, a failed
 * test to the unit runner.
 */
#ifndef KN_TESTS_FUZZ_H
#define KN_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KN_FUZZ_LIBFUZZER
#define KN_FUZZ_TARGET(name) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#else
#define KN_FUZZ_TARGET(name) int kn_fuzz_##name(const uint8_t *data, size_t size)
#endif

#define KN_FUZZ_CHECK(cond)                                                               \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* Reading the input as a script: every read past the end gives zeros. */
typedef struct kn_fz {
    const uint8_t *p;
    size_t n;
} kn_fz_t;

static inline uint64_t kn_fz_uint(kn_fz_t *f, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++) {
        v |= (uint64_t)(f->n ? *f->p : 0) << (8 * i);
        if (f->n)
            f->p++, f->n--;
    }
    return v;
}
/* fuzz_rmadefer's window (and its seeds'): an address no program here
 * maps otherwise */
#define KN_FZ_DEFER_BASE 0x3a0000000000ull

#define kn_fz_u8(f) ((uint8_t)kn_fz_uint(f, 1))
#define kn_fz_u16(f) ((uint16_t)kn_fz_uint(f, 2))
#define kn_fz_u32(f) ((uint32_t)kn_fz_uint(f, 4))
#define kn_fz_u64(f) kn_fz_uint(f, 8)

/* Up to want bytes of the input (fewer at its end); *got says how many. */
static inline const uint8_t *kn_fz_bytes(kn_fz_t *f, size_t want, size_t *got)
{
    const uint8_t *p = f->p;
    *got = want < f->n ? want : f->n;
    f->p += *got;
    f->n -= *got;
    return p;
}

/* A private copy of exactly n bytes, so that a read past them is caught:
 * under libFuzzer by AddressSanitizer; in the replay test (normal
 * compiler, no sanitizer) by an inaccessible page right after the last
 * byte.  p NULL: zeros.  Free with kn_fz_free(copy, n). */
#ifdef KN_FUZZ_LIBFUZZER
static inline uint8_t *kn_fz_dup(const void *p, size_t n)
{
    uint8_t *d = calloc(n ? n : 1, 1);
    if (!d)
        abort();
    if (n && p)
        memcpy(d, p, n);
    return d;
}
static inline void kn_fz_free(void *d, size_t n)
{
    (void)n;
    free(d);
}
#else
#include <sys/mman.h>
#define KN_FZ_PAGE 4096u
static inline size_t kn_fz_span(size_t n)
{
    return (n + KN_FZ_PAGE - 1) / KN_FZ_PAGE * KN_FZ_PAGE + KN_FZ_PAGE;
}
static inline uint8_t *kn_fz_dup(const void *p, size_t n)
{
    size_t span = kn_fz_span(n);
    uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + span - KN_FZ_PAGE, KN_FZ_PAGE, PROT_NONE))
        abort();
    uint8_t *d = m + span - KN_FZ_PAGE - n;
    if (n && p)
        memcpy(d, p, n);
    return d;
}
static inline void kn_fz_free(void *d, size_t n)
{
    if (d)
        munmap((uint8_t *)d + n + KN_FZ_PAGE - kn_fz_span(n), kn_fz_span(n));
}
#endif

#endif
