/* Host lists, hostfiles and rank placement. */
#include "boot/hostfile.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS_MAX 65536

/* Totals saturate (at 2^24) instead of overflowing. */
static int slots_add(int a, int b)
{
    return a + b > (1 << 24) ? 1 << 24 : a + b;
}

int kn_host_name_valid(const char *name, size_t len)
{
    if (len == 0 || len > KN_HOST_NAME_MAX || name[0] == '-')
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '-' && c != '_' && c != ':')
            return 0;
    }
    return 1;
}

static knit_status_t fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static knit_status_t fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return KNIT_ERR_INVAL;
}

static int parse_slots(const char *s, size_t len)
{
    if (len == 0 || len > 6)
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= SLOTS_MAX ? v : -1;
}

/* Add (or merge into an existing entry) host name[0..len) with slots. */
static knit_status_t add_host(kn_hostlist_t *hl, const char *name, size_t len, int slots)
{
    for (int i = 0; i < hl->count; i++) {
        if (strlen(hl->hosts[i].name) == len && !memcmp(hl->hosts[i].name, name, len)) {
            hl->hosts[i].slots = slots_add(hl->hosts[i].slots, slots);
            return KNIT_OK;
        }
    }
    kn_host_t *h = realloc(hl->hosts, sizeof(*h) * ((size_t)hl->count + 1));
    if (!h)
        return KNIT_ERR_NOMEM;
    hl->hosts = h;
    char *copy = strndup(name, len);
    if (!copy)
        return KNIT_ERR_NOMEM;
    hl->hosts[hl->count].name = copy;
    hl->hosts[hl->count].slots = slots;
    hl->count++;
    return KNIT_OK;
}

/* "name" or "name:K" (but a bare IPv6 address keeps its colons). */
static knit_status_t parse_entry(kn_hostlist_t *hl, const char *s, size_t len, int slots,
                                 const char *where, char *err, size_t errlen)
{
    const char *colon = memchr(s, ':', len);
    if (colon && !memchr(colon + 1, ':', len - (size_t)(colon + 1 - s)) && slots == 0) {
        slots = parse_slots(colon + 1, len - (size_t)(colon + 1 - s));
        if (slots < 0)
            return fail(err, errlen, "%sinvalid slot count in '%.*s' (expected 1..%d)", where,
                        (int)len, s, SLOTS_MAX);
        len = (size_t)(colon - s);
    }
    if (!kn_host_name_valid(s, len))
        return fail(err, errlen, "%sinvalid host name '%.*s'", where, (int)len, s);
    return add_host(hl, s, len, slots ? slots : 1);
}

knit_status_t kn_hostlist_parse(const char *list, kn_hostlist_t *out, char *err, size_t errlen)
{
    kn_hostlist_t hl = {0};
    knit_status_t st = KNIT_OK;
    const char *p = list;
    if (!list || !*list)
        return fail(err, errlen, "empty host list");
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0) {
            st = fail(err, errlen, "empty host name in list '%s'", list);
            break;
        }
        st = parse_entry(&hl, p, len, 0, "", err, errlen);
        if (st != KNIT_OK || p[len] == '\0')
            break;
        p += len + 1;
    }
    if (st != KNIT_OK) {
        kn_hostlist_free(&hl);
        return st;
    }
    *out = hl;
    return KNIT_OK;
}

knit_status_t kn_hostfile_parse(const char *text, kn_hostlist_t *out, char *err, size_t errlen)
{
    kn_hostlist_t hl = {0};
    knit_status_t st = KNIT_OK;
    int lineno = 0;
    for (const char *line = text; *line && st == KNIT_OK;) {
        size_t llen = strcspn(line, "\n");
        const char *next = line + llen + (line[llen] == '\n');
        lineno++;
        const char *hash = memchr(line, '#', llen);
        if (hash)
            llen = (size_t)(hash - line);
        char where[32];
        snprintf(where, sizeof(where), "line %d: ", lineno);
        /* tokens: name [slots=K] */
        const char *name = NULL;
        size_t nlen = 0;
        int slots = 0;
        for (size_t i = 0; i < llen && st == KNIT_OK;) {
            while (i < llen && isspace((unsigned char)line[i]))
                i++;
            if (i == llen)
                break;
            size_t j = i;
            while (j < llen && !isspace((unsigned char)line[j]))
                j++;
            const char *tok = line + i;
            size_t tlen = j - i;
            if (!name) {
                name = tok;
                nlen = tlen;
            } else if (tlen > 6 && !strncmp(tok, "slots=", 6)) {
                if (slots)
                    st = fail(err, errlen, "%sslots given twice", where);
                else if ((slots = parse_slots(tok + 6, tlen - 6)) < 0)
                    st = fail(err, errlen, "%sinvalid '%.*s' (expected slots=1..%d)", where,
                              (int)tlen, tok, SLOTS_MAX);
            } else {
                st = fail(err, errlen, "%sunexpected '%.*s' (expected slots=K)", where,
                          (int)tlen, tok);
            }
            i = j;
        }
        if (st == KNIT_OK && name)
            st = parse_entry(&hl, name, nlen, slots, where, err, errlen);
        line = next;
    }
    if (st == KNIT_OK && hl.count == 0)
        st = fail(err, errlen, "no hosts in hostfile");
    if (st != KNIT_OK) {
        kn_hostlist_free(&hl);
        return st;
    }
    *out = hl;
    return KNIT_OK;
}

knit_status_t kn_hostfile_load(const char *path, kn_hostlist_t *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    char buf[4096];
    size_t n;
    knit_status_t st = KNIT_OK;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            if (cap > (1u << 24)) {
                st = fail(err, errlen, "%s: file too large", path);
                break;
            }
            char *t = realloc(text, cap);
            if (!t) {
                st = KNIT_ERR_NOMEM;
                break;
            }
            text = t;
        }
        memcpy(text + len, buf, n);
        len += n;
    }
    if (st == KNIT_OK && ferror(f))
        st = fail(err, errlen, "%s: read error", path);
    fclose(f);
    if (st == KNIT_OK) {
        if (text)
            text[len] = '\0';
        if (text && memchr(text, '\0', len))
            st = fail(err, errlen, "%s: not a text file", path);
        else
            st = kn_hostfile_parse(text ? text : "", out, err, errlen);
        if (st != KNIT_OK && err && strncmp(err, path, strlen(path))) {
            char tmp[512];
            snprintf(tmp, sizeof(tmp), "%s", err);
            snprintf(err, errlen, "%s: %s", path, tmp);
        }
    }
    free(text);
    return st;
}

void kn_hostlist_free(kn_hostlist_t *hl)
{
    for (int i = 0; i < hl->count; i++)
        free(hl->hosts[i].name);
    free(hl->hosts);
    hl->hosts = NULL;
    hl->count = 0;
}

int kn_hostlist_slots(const kn_hostlist_t *hl)
{
    int s = 0;
    for (int i = 0; i < hl->count; i++)
        s = slots_add(s, hl->hosts[i].slots);
    return s;
}

void kn_place_hosts(const kn_hostlist_t *hl, int n, int *counts)
{
    for (int i = 0; i < hl->count; i++)
        counts[i] = 0;
    for (int left = n; left > 0;)
        for (int i = 0; i < hl->count && left > 0; i++) {
            int k = hl->hosts[i].slots < left ? hl->hosts[i].slots : left;
            counts[i] += k;
            left -= k;
        }
}

void kn_place_block(int n, int m, int *counts)
{
    for (int i = 0; i < m; i++)
        counts[i] = n / m + (i < n % m);
}
