/*
 * Copies into memory that will not be read soon from this cpu's caches.
 */
#ifndef KNIT_UTIL_COPY_H
#define KNIT_UTIL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* memcpy with non-temporal stores: the destination's lines go to memory
 * without being read first (a plain store reads each line it writes) and
 * without evicting what the caches hold.  For copies into a destination
 * larger than the cache, which a plain copy would read in from memory
 * before overwriting it: 8 MiB destinations, 2 cpus copying into 32 MiB
 * each, 16 KiB pieces: 4.8-7.2 GB/s plain, 10.8-11.8 GB/s so.  A plain
 * memcpy where the cpu has no such stores. */
static inline void kn_copy_nt(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 15);
    if (n < head + 64) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16)),
                c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
    _mm_sfence(); /* ordered before the stores that publish the copy */
#else
    memcpy(dst, src, n);
#endif
}

#endif
