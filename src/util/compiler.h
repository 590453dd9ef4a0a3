/* Small compiler helpers shared by every layer. */
#ifndef KN_UTIL_COMPILER_H
#define KN_UTIL_COMPILER_H

#include <stddef.h>

#define kn_likely(x) __builtin_expect(!!(x), 1)
#define kn_unlikely(x) __builtin_expect(!!(x), 0)
#define KN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define KN_CACHELINE 64
#define kn_container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))
#define KN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KN_MAX(a, b) ((a) > (b) ? (a) : (b))
#define KN_ALIGN_UP(x, a) (((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))
#define KN_STATIC_ASSERT(c, msg) _Static_assert(c, msg)

/* A function whose loops are worth vectorizing: with AVX2 where the cpu
 * has it (gcc on x86-64 builds both and picks at load time). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KN_VECTORIZED __attribute__((target_clones("avx2", "default"), optimize("tree-vectorize")))
#else
#define KN_VECTORIZED
#endif

static inline void kn_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
