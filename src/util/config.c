#include "util/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/compiler.h"
#include "util/env.h"
#include "util/log.h"

const kn_config_entry_t kn_config_table[] = {
#define KN_TUNABLE(NAME, field, TYPE, def, choices, help) \
    {#NAME, KN_CT_##TYPE, def, choices, help, offsetof(struct kn_config, field)},
#include "util/tunables.def"
#undef KN_TUNABLE
};
const size_t kn_config_count = KN_ARRAY_SIZE(kn_config_table);

struct kn_config kn_cfg;
static int cfg_defaults_set;

static const char *const env_reserved[] = {
#define KN_ENV_NAME(id, name, help) name,
    KN_ENV_LIST(KN_ENV_NAME)
#undef KN_ENV_NAME
};

knit_status_t kn_parse_size(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return KNIT_ERR_INVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return KNIT_ERR_INVAL;
    unsigned shift = 0;
    switch (tolower((unsigned char)*end)) {
    case '\0': break;
    case 'k': shift = 10; end++; break;
    case 'm': shift = 20; end++; break;
    case 'g': shift = 30; end++; break;
    case 't': shift = 40; end++; break;
    default: return KNIT_ERR_INVAL;
    }
    if (shift && (*end == 'b' || *end == 'B'))
        end++;
    if (*end != '\0')
        return KNIT_ERR_INVAL;
    if (shift && v > (UINT64_MAX >> shift))
        return KNIT_ERR_INVAL;
    *out = (uint64_t)v << shift;
    return KNIT_OK;
}

knit_status_t kn_parse_time(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return KNIT_ERR_INVAL;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || v < 0)
        return KNIT_ERR_INVAL;
    double mult;
    if (!strcmp(end, "ns"))
        mult = 1;
    else if (!strcmp(end, "us"))
        mult = 1e3;
    else if (!strcmp(end, "ms"))
        mult = 1e6;
    else if (!strcmp(end, "s"))
        mult = 1e9;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        mult = 60e9;
    else if (*end == '\0' && v == 0)
        mult = 0;
    else
        return KNIT_ERR_INVAL;
    double ns = v * mult;
    if (ns > 1.8e19)
        return KNIT_ERR_INVAL;
    *out = (uint64_t)(ns + 0.5);
    return KNIT_OK;
}

knit_status_t kn_parse_int(const char *s, int64_t *out)
{
    if (!s || !*s)
        return KNIT_ERR_INVAL;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0')
        return KNIT_ERR_INVAL;
    *out = v;
    return KNIT_OK;
}

int kn_env_count(const char *name, int max, int *out)
{
    const char *v = getenv(name);
    int64_t x;
    if (!v)
        return 0;
    if (kn_parse_int(v, &x) != KNIT_OK || x < 0 || x > max)
        return -1;
    *out = (int)x;
    return 1;
}

knit_status_t kn_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"1", "yes", "on", "true", "y"};
    static const char *const no[] = {"0", "no", "off", "false", "n"};
    if (!s)
        return KNIT_ERR_INVAL;
    for (size_t i = 0; i < KN_ARRAY_SIZE(yes); i++) {
        if (!strcasecmp(s, yes[i])) {
            *out = 1;
            return KNIT_OK;
        }
        if (!strcasecmp(s, no[i])) {
            *out = 0;
            return KNIT_OK;
        }
    }
    return KNIT_ERR_INVAL;
}

knit_status_t kn_parse_enum(const char *choices, const char *s, int *out)
{
    if (!s || !*s || !choices)
        return KNIT_ERR_INVAL;
    size_t n = strlen(s);
    int idx = 0;
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncasecmp(p, s, n)) {
            *out = idx;
            return KNIT_OK;
        }
        if (!bar)
            break;
        p = bar + 1;
    }
    return KNIT_ERR_INVAL;
}

knit_status_t kn_config_parse(const kn_config_entry_t *e, const char *text,
                              void *out, char *err, size_t errlen)
{
    knit_status_t st = KNIT_ERR_INVAL;
    const char *want = "";
    switch (e->type) {
    case KN_CT_SIZE:
        st = kn_parse_size(text, out);
        want = "a byte count with optional suffix k, m or g (e.g. 8k)";
        break;
    case KN_CT_TIME:
        st = kn_parse_time(text, out);
        want = "a duration with a unit ns, us, ms or s (e.g. 250us)";
        break;
    case KN_CT_INT:
        st = kn_parse_int(text, out);
        want = "an integer";
        break;
    case KN_CT_BOOL:
        st = kn_parse_bool(text, out);
        want = "1/0, yes/no, on/off or true/false";
        break;
    case KN_CT_ENUM:
        st = kn_parse_enum(e->choices, text, out);
        want = e->choices;
        break;
    case KN_CT_STR:
        *(const char **)out = text;
        st = KNIT_OK;
        break;
    }
    if (st != KNIT_OK && err)
        snprintf(err, errlen, "invalid value '%s' (expected %s)", text ? text : "", want);
    return st;
}

static void set_defaults(void)
{
    for (size_t i = 0; i < kn_config_count; i++) {
        const kn_config_entry_t *e = &kn_config_table[i];
        knit_status_t st = kn_config_parse(e, e->def, (char *)&kn_cfg + e->offset, NULL, 0);
        if (st != KNIT_OK)
            abort(); /* a bad default is a bug in tunables.def, caught by the tests */
    }
    cfg_defaults_set = 1;
}

const kn_config_entry_t *kn_config_find(const char *name)
{
    if (!strncmp(name, "KNIT_", 5))
        name += 5;
    for (size_t i = 0; i < kn_config_count; i++)
        if (!strcmp(kn_config_table[i].name, name))
            return &kn_config_table[i];
    return NULL;
}

knit_status_t kn_config_apply(struct kn_config *cfg, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    char name[128], err[256];
    if (!eq || strncmp(assignment, "KNIT_", 5) || (size_t)(eq - assignment) >= sizeof(name))
        return KNIT_OK;
    memcpy(name, assignment, (size_t)(eq - assignment));
    name[eq - assignment] = '\0';
    const kn_config_entry_t *e = kn_config_find(name);
    if (!e)
        return KNIT_OK;
    if (kn_config_parse(e, eq + 1, (char *)cfg + e->offset, err, sizeof(err)) != KNIT_OK) {
        kn_error("%s: %s", name, err);
        return KNIT_ERR_INVAL;
    }
    return KNIT_OK;
}

static int is_reserved(const char *name, size_t len)
{
    for (size_t i = 0; i < KN_ARRAY_SIZE(env_reserved); i++)
        if (strlen(env_reserved[i]) == len && !strncmp(env_reserved[i], name, len))
            return 1;
    return 0;
}

extern char **environ;

knit_status_t kn_config_load(void)
{
    knit_status_t ret = KNIT_OK;
    set_defaults();
    for (size_t i = 0; i < kn_config_count; i++) {
        const kn_config_entry_t *e = &kn_config_table[i];
        char var[64], err[256];
        snprintf(var, sizeof(var), "KNIT_%s", e->name);
        const char *v = getenv(var);
        if (!v)
            continue;
        if (kn_config_parse(e, v, (char *)&kn_cfg + e->offset, err, sizeof(err)) != KNIT_OK) {
            kn_error("%s: %s", var, err);
            ret = KNIT_ERR_INVAL;
        }
    }
    kn_log_set_level(kn_cfg.log_level);
    for (char **ep = environ; ep && *ep; ep++) {
        if (strncmp(*ep, "KNIT_", 5))
            continue;
        const char *eq = strchr(*ep, '=');
        size_t len = eq ? (size_t)(eq - *ep) : strlen(*ep);
        char name[128];
        if (len >= sizeof(name) || is_reserved(*ep, len))
            continue;
        memcpy(name, *ep, len);
        name[len] = '\0';
        if (!kn_config_find(name))
            kn_warn("%s is not a knit tunable (knit-info -e lists them)", name);
    }
    return ret;
}

void kn_format_size(uint64_t v, char *buf, size_t len)
{
    static const char suffix[] = "kmgt";
    int i = -1;
    while (v && (v & 1023) == 0 && i < 3) {
        v >>= 10;
        i++;
    }
    if (i < 0)
        snprintf(buf, len, "%" PRIu64, v);
    else
        snprintf(buf, len, "%" PRIu64 "%c", v, suffix[i]);
}

void kn_format_time(uint64_t ns, char *buf, size_t len)
{
    if (ns == 0)
        snprintf(buf, len, "0");
    else if (ns % 1000000000ull == 0)
        snprintf(buf, len, "%" PRIu64 "s", ns / UINT64_C(1000000000));
    else if (ns % 1000000ull == 0)
        snprintf(buf, len, "%" PRIu64 "ms", ns / UINT64_C(1000000));
    else if (ns % 1000ull == 0)
        snprintf(buf, len, "%" PRIu64 "us", ns / UINT64_C(1000));
    else
        snprintf(buf, len, "%" PRIu64 "ns", ns);
}

void kn_config_format(const kn_config_entry_t *e, const struct kn_config *cfg,
                      char *buf, size_t len)
{
    const char *p = (const char *)cfg + e->offset;
    switch (e->type) {
    case KN_CT_SIZE: kn_format_size(*(const uint64_t *)p, buf, len); break;
    case KN_CT_TIME: kn_format_time(*(const uint64_t *)p, buf, len); break;
    case KN_CT_INT: snprintf(buf, len, "%" PRId64, *(const int64_t *)p); break;
    case KN_CT_BOOL: snprintf(buf, len, "%s", *(const int *)p ? "yes" : "no"); break;
    case KN_CT_STR: snprintf(buf, len, "%s", *(const char *const *)p); break;
    case KN_CT_ENUM: {
        int idx = *(const int *)p;
        const char *c = e->choices;
        for (int i = 0; i < idx && c; i++) {
            c = strchr(c, '|');
            if (c)
                c++;
        }
        size_t n = c ? strcspn(c, "|") : 0;
        snprintf(buf, len, "%.*s", (int)n, c ? c : "");
        break;
    }
    }
}

static const char *type_name(kn_config_type_t t)
{
    switch (t) {
    case KN_CT_SIZE: return "size";
    case KN_CT_TIME: return "time";
    case KN_CT_INT: return "integer";
    case KN_CT_BOOL: return "bool";
    case KN_CT_ENUM: return "choice";
    case KN_CT_STR: return "string";
    }
    return "?";
}

void kn_config_print(FILE *f)
{
    if (!cfg_defaults_set)
        set_defaults();
    for (size_t i = 0; i < kn_config_count; i++) {
        const kn_config_entry_t *e = &kn_config_table[i];
        char val[256];
        kn_config_format(e, &kn_cfg, val, sizeof(val));
        fprintf(f, "KNIT_%s=%s\n", e->name, val);
        fprintf(f, "    %s (%s%s%s, default %s)\n\n", e->help, type_name(e->type),
                e->type == KN_CT_ENUM ? ": " : "", e->type == KN_CT_ENUM ? e->choices : "",
                e->def);
    }
}

void kn_config_print_markdown(FILE *f)
{
    fprintf(f, "# knit tunables\n\n"
               "Every tunable is read from the environment variable of its name when a knit\n"
               "process starts; `knitrun -x NAME=value` passes one to every rank and\n"
               "`knit-info -e` prints the values in force. A malformed value is an error\n"
               "that names the variable. Sizes take the binary suffixes k, m, g (`8k` =\n"
               "8192 bytes); times need a unit: ns, us, ms, s (`250us`).\n\n"
               "This file is generated from `src/util/tunables.def` by `make docs`; a test\n"
               "fails when the two differ.\n\n"
               "| variable | type | default | meaning |\n|---|---|---|---|\n");
    for (size_t i = 0; i < kn_config_count; i++) {
        const kn_config_entry_t *e = &kn_config_table[i];
        char type[160];
        if (e->type == KN_CT_ENUM)
            snprintf(type, sizeof(type), "`%s`", e->choices);
        else
            snprintf(type, sizeof(type), "%s", type_name(e->type));
        /* a '|' inside a table cell must be escaped */
        char esc[200];
        size_t o = 0;
        for (const char *p = type; *p && o < sizeof(esc) - 3; p++) {
            if (*p == '|')
                esc[o++] = '\\';
            esc[o++] = *p;
        }
        esc[o] = '\0';
        fprintf(f, "| `KNIT_%s` | %s | `%s` | %s |\n", e->name, esc, e->def, e->help);
    }
}
