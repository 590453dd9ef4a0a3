#include "util/crc32c.h"

#include <pthread.h>
#include <string.h>

/* Slicing-by-8 tables, built once; the hardware instruction is used when
 * the CPU has SSE4.2. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;
#if defined(__x86_64__)
static void lane_init(void);
#endif

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
    if (crc_hw)
        lane_init();
#endif
}

#if defined(__x86_64__)
/* Three chains at once: the crc32 instruction takes 3 cycles and issues
 * one per cycle, so one chain runs at a third of what the core can do.
 * Each round takes three blocks of LANE bytes, one per chain (the second
 * and third from state 0), and joins them: by linearity, the state after
 * A then B is shift(state after A) ^ (B's from 0), shift being what LANE
 * zero bytes do to a state, a linear map kept as four byte tables. */
#define LANE 2048u
static uint32_t lane_shift[4][256];

__attribute__((target("sse4.2"))) static uint32_t zeros(uint32_t c, size_t n)
{
    uint64_t c64 = c;
    for (size_t i = 0; i < n; i += 8)
        c64 = __builtin_ia32_crc32di(c64, 0);
    return (uint32_t)c64;
}

static void lane_init(void)
{
    uint32_t bit[32];
    for (int b = 0; b < 32; b++)
        bit[b] = zeros(1u << b, LANE);
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t r = 0;
            for (int b = 0; b < 8; b++)
                if (v & (1u << b))
                    r ^= bit[8 * k + b];
            lane_shift[k][v] = r;
        }
}

static inline uint32_t shift(uint32_t c)
{
    return lane_shift[0][c & 0xff] ^ lane_shift[1][(c >> 8) & 0xff] ^ lane_shift[2][(c >> 16) & 0xff] ^
           lane_shift[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t c, const unsigned char *p, size_t n)
{
    while (n >= 3 * LANE) {
        uint64_t a = c, b = 0, d = 0;
        for (size_t i = 0; i < LANE; i += 8) {
            uint64_t x, y, z;
            memcpy(&x, p + i, 8);
            memcpy(&y, p + LANE + i, 8);
            memcpy(&z, p + 2 * LANE + i, 8);
            a = __builtin_ia32_crc32di(a, x);
            b = __builtin_ia32_crc32di(b, y);
            d = __builtin_ia32_crc32di(d, z);
        }
        c = shift(shift((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)d;
        p += 3 * LANE;
        n -= 3 * LANE;
    }
    uint64_t c64 = c;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

static uint32_t crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
            crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
            crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
            crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return c;
}

uint32_t kn_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (crc_hw)
        return ~crc_sse42(c, buf, len);
#endif
    return ~crc_soft(c, buf, len);
}

/* For tests: the portable path regardless of the CPU. */
uint32_t kn_crc32c_soft(uint32_t crc, const void *buf, size_t len);
uint32_t kn_crc32c_soft(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return ~crc_soft(~crc, buf, len);
}
