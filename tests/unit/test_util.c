/* util layer: config parsing, crc32c, lists, pool, strerror. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "knit.h"
#include "util/config.h"
#include "util/crc32c.h"
#include "util/list.h"
#include "util/mem.h"
#include "util/pool.h"
#include "util/time.h"

uint32_t kn_crc32c_soft(uint32_t crc, const void *buf, size_t len);

KN_TEST(parse_size)
{
    uint64_t v;
    KN_CHECK_EQ(kn_parse_size("0", &v), KNIT_OK);
    KN_CHECK_EQ(v, 0);
    KN_CHECK_EQ(kn_parse_size("8k", &v), KNIT_OK);
    KN_CHECK_EQ(v, 8192);
    KN_CHECK_EQ(kn_parse_size("4M", &v), KNIT_OK);
    KN_CHECK_EQ(v, 4 << 20);
    KN_CHECK_EQ(kn_parse_size("2g", &v), KNIT_OK);
    KN_CHECK_EQ(v, 2ull << 30);
    KN_CHECK_EQ(kn_parse_size("64kb", &v), KNIT_OK);
    KN_CHECK_EQ(v, 65536);
    KN_CHECK_EQ(kn_parse_size("123", &v), KNIT_OK);
    KN_CHECK_EQ(v, 123);
    KN_CHECK_EQ(kn_parse_size("", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_size("12x", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_size("-1", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_size("k", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_size("8kk", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_size("99999999999999999999", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_size("99999999999t", &v), KNIT_ERR_INVAL);
}

KN_TEST(parse_time)
{
    uint64_t v;
    KN_CHECK_EQ(kn_parse_time("250us", &v), KNIT_OK);
    KN_CHECK_EQ(v, 250000);
    KN_CHECK_EQ(kn_parse_time("2s", &v), KNIT_OK);
    KN_CHECK_EQ(v, 2000000000ull);
    KN_CHECK_EQ(kn_parse_time("1.5ms", &v), KNIT_OK);
    KN_CHECK_EQ(v, 1500000);
    KN_CHECK_EQ(kn_parse_time("10ns", &v), KNIT_OK);
    KN_CHECK_EQ(v, 10);
    KN_CHECK_EQ(kn_parse_time("0", &v), KNIT_OK);
    KN_CHECK_EQ(v, 0);
    KN_CHECK_EQ(kn_parse_time("10", &v), KNIT_ERR_INVAL); /* a unit is required */
    KN_CHECK_EQ(kn_parse_time("10 s", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_time("fast", &v), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_time("-1s", &v), KNIT_ERR_INVAL);
}

KN_TEST(parse_bool_int_enum)
{
    int b, e;
    int64_t i;
    KN_CHECK_EQ(kn_parse_bool("yes", &b), KNIT_OK);
    KN_CHECK_EQ(b, 1);
    KN_CHECK_EQ(kn_parse_bool("OFF", &b), KNIT_OK);
    KN_CHECK_EQ(b, 0);
    KN_CHECK_EQ(kn_parse_bool("2", &b), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_int("-42", &i), KNIT_OK);
    KN_CHECK_EQ(i, -42);
    KN_CHECK_EQ(kn_parse_int("4x", &i), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_enum("auto|spin|yield|block", "yield", &e), KNIT_OK);
    KN_CHECK_EQ(e, 2);
    KN_CHECK_EQ(kn_parse_enum("auto|spin|yield|block", "auto", &e), KNIT_OK);
    KN_CHECK_EQ(e, 0);
    KN_CHECK_EQ(kn_parse_enum("auto|spin|yield|block", "blockx", &e), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_parse_enum("auto|spin|yield|block", "spi", &e), KNIT_ERR_INVAL);
}

KN_TEST(config_defaults_parse)
{
    /* every default in the table must parse as its own type */
    for (size_t i = 0; i < kn_config_count; i++) {
        const kn_config_entry_t *e = &kn_config_table[i];
        char buf[64], err[256];
        KN_CHECK(kn_config_parse(e, e->def, buf, err, sizeof(err)) == KNIT_OK);
        KN_CHECK(e->help && strlen(e->help) > 10);
    }
}

KN_TEST(config_load_env)
{
    setenv("KNIT_SPIN_COUNT", "77", 1);
    setenv("KNIT_WAIT", "block", 1);
    KN_CHECK_EQ(kn_config_load(), KNIT_OK);
    KN_CHECK_EQ(kn_cfg.spin_count, 77);
    KN_CHECK_EQ(kn_cfg.wait, 3);
    setenv("KNIT_YIELD_TIME", "12 parsecs", 1);
    KN_CHECK_EQ(kn_config_load(), KNIT_ERR_INVAL);
    unsetenv("KNIT_YIELD_TIME");
    KN_CHECK_EQ(kn_config_load(), KNIT_OK);
    char buf[64];
    kn_config_format(kn_config_find("KNIT_YIELD_TIME"), &kn_cfg, buf, sizeof(buf));
    KN_CHECK_STR(buf, "2ms");
    kn_config_format(kn_config_find("WAIT"), &kn_cfg, buf, sizeof(buf));
    KN_CHECK_STR(buf, "block");
}

KN_TEST(format_roundtrip)
{
    char buf[64];
    uint64_t v;
    const uint64_t sizes[] = {0, 1, 1000, 1024, 8192, 3 << 20, (1ull << 30) + 1};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        kn_format_size(sizes[i], buf, sizeof(buf));
        KN_CHECK_EQ(kn_parse_size(buf, &v), KNIT_OK);
        KN_CHECK_EQ(v, sizes[i]);
    }
    const uint64_t times[] = {0, 5, 1000, 250000, 1500000, 2000000000ull};
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
        kn_format_time(times[i], buf, sizeof(buf));
        KN_CHECK_EQ(kn_parse_time(buf, &v), KNIT_OK);
        KN_CHECK_EQ(v, times[i]);
    }
}

KN_TEST(crc32c_vectors)
{
    KN_CHECK_EQ(kn_crc32c(0, "123456789", 9), 0xe3069283u);
    KN_CHECK_EQ(kn_crc32c(0, "", 0), 0);
    unsigned char zeros[32] = {0};
    KN_CHECK_EQ(kn_crc32c(0, zeros, 32), 0x8a9136aau); /* RFC 3720 B.4 */
    /* incremental == whole, hardware == software, any alignment */
    unsigned char buf[1031];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    for (size_t off = 0; off < 8; off++) {
        uint32_t whole = kn_crc32c(0, buf + off, sizeof(buf) - off);
        uint32_t part = kn_crc32c(kn_crc32c(0, buf + off, 100), buf + off + 100, sizeof(buf) - off - 100);
        KN_CHECK_EQ(whole, part);
        KN_CHECK_EQ(whole, kn_crc32c_soft(0, buf + off, sizeof(buf) - off));
    }
    /* long buffers go three lanes at a time in hardware: the same crc */
    static unsigned char big[3 * 3 * 2048 + 37];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)(i * 131 + (i >> 9));
    for (size_t len = 6143; len <= sizeof(big); len += 1531) {
        uint32_t whole = kn_crc32c(0, big, len);
        KN_CHECK_EQ(whole, kn_crc32c_soft(0, big, len));
        KN_CHECK_EQ(whole, kn_crc32c(kn_crc32c(0, big, 5), big + 5, len - 5));
    }
}

struct item {
    int v;
    kn_list_t link;
};

KN_TEST(list_ops)
{
    kn_list_t h;
    kn_list_init(&h);
    KN_CHECK(kn_list_empty(&h));
    struct item it[5];
    for (int i = 0; i < 5; i++) {
        it[i].v = i;
        kn_list_push_back(&h, &it[i].link);
    }
    KN_CHECK_EQ(kn_list_length(&h), 5);
    kn_list_del(&it[2].link);
    kn_list_push_front(&h, &it[2].link);
    int expect[] = {2, 0, 1, 3, 4}, k = 0;
    kn_list_t *pos, *tmp;
    kn_list_for_each_safe(pos, tmp, &h) {
        KN_CHECK_EQ(kn_list_entry(pos, struct item, link)->v, expect[k++]);
        if (k == 3)
            kn_list_del(pos);
    }
    KN_CHECK_EQ(kn_list_length(&h), 4);
    KN_CHECK_EQ(kn_list_entry(kn_list_pop_front(&h), struct item, link)->v, 2);
}

KN_TEST(pool_recycles_and_limits)
{
    kn_pool_t p;
    KN_CHECK_EQ(kn_pool_init(&p, "t", 40, 4, 10), KNIT_OK);
    void *o[10];
    for (int i = 0; i < 10; i++) {
        o[i] = kn_pool_get(&p);
        KN_CHECK(o[i] != NULL);
        memset(o[i], 0xab, 40);
    }
    KN_CHECK(kn_pool_get(&p) == NULL); /* max reached */
    kn_pool_put(&p, o[3]);
    KN_CHECK(kn_pool_get(&p) == o[3]);
    KN_CHECK_EQ(p.nr_in_use, 10);
    for (int i = 0; i < 10; i++)
        kn_pool_put(&p, o[i]);
    KN_CHECK_EQ(p.nr_in_use, 0);
    kn_pool_destroy(&p);
    KN_CHECK_EQ(kn_pool_init(&p, "bad", 0, 4, 0), KNIT_ERR_INVAL);
}

KN_TEST(strerror_all)
{
    for (int s = KNIT_ERR_PEER_FAULT; s <= KNIT_INPROGRESS; s++)
        KN_CHECK(strcmp(knit_strerror(s), "unknown error") != 0);
    KN_CHECK_STR(knit_strerror(-999), "unknown error");
}

/* Buffers checked without a signal: readable, writable, neither, and a
 * range whose last page only is bad; a write check leaves the bytes. */
KN_TEST(mem_check)
{
    kn_mem_init();
    size_t pg = 4096, n = 16 * pg;
    char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    KN_CHECK(m != MAP_FAILED);
    for (size_t i = 0; i < n; i++)
        m[i] = (char)(i * 7);
    KN_CHECK_EQ(kn_mem_check(m + 5, n - 5, 0), 1);
    KN_CHECK_EQ(kn_mem_check(m + 5, n - 5, 1), 1);
    for (size_t i = 0; i < n; i++)
        KN_CHECK_EQ(m[i], (char)(i * 7));
    KN_CHECK_EQ(mprotect(m + n - pg, pg, PROT_READ), 0);
    KN_CHECK_EQ(kn_mem_check(m, n, 0), 1);
    KN_CHECK_EQ(kn_mem_check(m, n, 1), 0);
    KN_CHECK_EQ(kn_mem_check(m, n - pg, 1), 1);
    KN_CHECK_EQ(mprotect(m + n - pg, pg, PROT_NONE), 0);
    KN_CHECK_EQ(kn_mem_check(m, n, 0), 0);
    KN_CHECK_EQ(kn_mem_check(m + n - 1, 1, 0), 0);
    KN_CHECK_EQ(kn_mem_check(m, n - pg, 0), 1);
    KN_CHECK_EQ(kn_mem_check((void *)0x1000, 4096, 0), 0);
    KN_CHECK_EQ(kn_mem_check(m, 0, 1), 1);
    KN_CHECK_EQ(kn_mem_check((void *)(uintptr_t)-4096, 8192, 0), 0); /* wraps */
    /* a large mapping: 2 system calls per 4 MiB, not a copy */
    size_t big = 64u << 20;
    char *b = mmap(NULL, big, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    KN_CHECK(b != MAP_FAILED);
    KN_CHECK_EQ(kn_mem_check(b, big, 0), 1);
    munmap(b, big);
    KN_CHECK(kn_mem_implausible((void *)0x1000, 4096));
    KN_CHECK(kn_mem_implausible(NULL, 1));
    KN_CHECK(!kn_mem_implausible(NULL, 0));
    KN_CHECK(!kn_mem_implausible(m, n));
    KN_CHECK(kn_mem_implausible((void *)(uintptr_t)0xffff800000000000ull, 8));
    munmap(m, n);
}

KN_TEST(time_monotonic)
{
    uint64_t a = kn_time_ns(), b = kn_time_ns();
    KN_CHECK(b >= a);
}
