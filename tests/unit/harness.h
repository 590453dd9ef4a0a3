/*
 * Unit-test harness: every KN_TEST runs in a forked child with a time limit
 * (KN_TEST_TIMEOUT seconds, default 30), so a crash or a hang fails only
 * that test.  Output, one line per test, read by tests/run.sh:
 *   PASS <suite>.<name>
 *   FAIL <suite>.<name>: <why>
 *   SKIP <suite>.<name>: <why>
 * Run one test: ./test_x name.
 */
#ifndef KN_TEST_HARNESS_H
#define KN_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*kn_test_fn)(void);
void kn_test_register(const char *name, kn_test_fn fn, const char *file);
void kn_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void kn_test_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#define KN_TEST(name)                                                          \
    static void kn_test_##name(void);                                          \
    __attribute__((constructor)) static void kn_test_reg_##name(void)          \
    {                                                                          \
        kn_test_register(#name, kn_test_##name, __FILE__);                     \
    }                                                                          \
    static void kn_test_##name(void)

#define KN_CHECK(cond)                                                         \
    do {                                                                       \
        if (!(cond))                                                           \
            kn_test_fail(__FILE__, __LINE__, "check failed: %s", #cond);       \
    } while (0)

#define KN_CHECK_EQ(a, b)                                                      \
    do {                                                                       \
        long long kn_a_ = (long long)(a), kn_b_ = (long long)(b);              \
        if (kn_a_ != kn_b_)                                                    \
            kn_test_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", \
                         #a, kn_a_, #b, kn_b_);                                \
    } while (0)

#define KN_CHECK_STR(a, b)                                                     \
    do {                                                                       \
        const char *kn_a_ = (a), *kn_b_ = (b);                                 \
        if (!kn_a_ || !kn_b_ || strcmp(kn_a_, kn_b_))                         \
            kn_test_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"",  \
                         #a, kn_a_ ? kn_a_ : "(null)", kn_b_ ? kn_b_ : "(null)"); \
    } while (0)

#define KN_SKIP(...) kn_test_skip(__VA_ARGS__)

#endif
