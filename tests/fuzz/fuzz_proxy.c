/*
 * knitrun's proxy protocol (src/boot/proto.c, used by
 * tools/knitrun/proxy.c and job.c): the first input byte picks what the
 * rest is.
 *   even  a JOB payload (what knitrun tells a proxy to start):
 *         kn_boot_job_decode; one that decodes is walked as the proxy
 *         walks it and encoded again with kn_boot_job_encode, which must
 *         give the same bytes;
 *   odd   the line knitrun writes on a proxy's stdin (cookie, node, store
 *         addresses): kn_boot_launch_line_decode; one that decodes, written
 *         again as knitrun writes it, must give the same line.
 */
#include <limits.h>

#include "boot/proto.h"
#include "fuzz.h"
#include "util/log.h"

static void job(const uint8_t *data, size_t size)
{
    if (size > KN_BOOT_JOB_MAX)
        return; /* the header's bound: such a payload never reaches the decoder */
    uint8_t *p = kn_fz_dup(data, size);
    kn_boot_job_t j;
    const char *why = NULL;
    if (kn_boot_job_decode(p, (uint32_t)size, &j, &why) != KNIT_OK) {
        KN_FUZZ_CHECK(why != NULL);
        kn_fz_free(p, size);
        return;
    }
    KN_FUZZ_CHECK(j.count >= 1 && j.nargs >= 1 && j.first <= INT_MAX);
    size_t n = (size_t)j.nenv + 1 + j.nargs;
    KN_FUZZ_CHECK(n <= size);
    char **strs = malloc(n * sizeof(*strs));
    KN_FUZZ_CHECK(strs);
    const char *s = j.strs;
    for (size_t i = 0; i < n; i++) {
        KN_FUZZ_CHECK(s >= j.strs && s < j.strs + j.strs_len);
        strs[i] = (char *)s;
        if (i < j.nenv)
            KN_FUZZ_CHECK(strchr(s, '=') && s[0] != '=');
        s += strlen(s) + 1;
    }
    KN_FUZZ_CHECK(s == j.strs + j.strs_len);
    size_t len = kn_boot_job_size(strs, j.nenv, strs[j.nenv], strs + j.nenv + 1, j.nargs);
    KN_FUZZ_CHECK(len == size);
    uint8_t *out = kn_fz_dup(NULL, len);
    kn_boot_job_encode(out, j.first, j.count, strs, j.nenv, strs[j.nenv], strs + j.nenv + 1, j.nargs);
    KN_FUZZ_CHECK(!memcmp(out, p, len));
    kn_fz_free(out, len);
    free(strs);
    kn_fz_free(p, size);
}

static void line(const uint8_t *data, size_t size)
{
    char buf[8192]; /* the proxy's line buffer */
    if (size >= sizeof(buf) || memchr(data, '\0', size) || memchr(data, '\n', size))
        return; /* the proxy reads one line, up to its newline */
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *cookie, *addrs;
    int node;
    if (kn_boot_launch_line_decode(buf, &cookie, &node, &addrs) != KNIT_OK)
        return;
    KN_FUZZ_CHECK(kn_boot_cookie_valid(cookie, strlen(cookie)) && node >= 0 && *addrs);
    char again[8192 + 32];
    int n = snprintf(again, sizeof(again), "%s %d %s", cookie, node, addrs);
    KN_FUZZ_CHECK(n >= 0 && (size_t)n == size && !memcmp(again, data, size));
}

KN_FUZZ_TARGET(proxy)
{
    kn_log_set_level(-1);
    if (size == 0)
        return 0;
    if (data[0] & 1)
        line(data + 1, size - 1);
    else
        job(data + 1, size - 1);
    return 0;
}
