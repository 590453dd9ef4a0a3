/* knitrun: start a knit job.  Options up to the program name; everything
 * after it belongs to the program.  docs/knitrun.md is the manual. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knit.h"
#include "knitrun.h"
#include "util/config.h"
#include "util/log.h"

static const char usage_text[] =
    "usage: knitrun [options] program [args...]\n"
    "\n"
    "  -n, -np N            number of ranks (default: 1, or the hosts' slots)\n"
    "  --nodes M            spread the ranks block-wise over M emulated nodes on this host\n"
    "  --hosts, --host LIST real hosts, comma separated, each optionally host:slots\n"
    "  --hostfile FILE      real hosts from FILE (one per line, optional slots=K, # comments)\n"
    "  -x VAR, -x VAR=VAL   export VAR (as set here, or to VAL) to every rank\n"
    "  --tag-output         prefix every output line with [rank]\n"
    "  --no-offload         start no knit-agent / knit-switch (modules only at host placement)\n"
    "  --bind-to WHAT       bind each rank to a hwthread, core, l2cache, l3cache, numa or socket,\n"
    "                       or none; auto (default): cores, in order, where a host's ranks\n"
    "                       are at most twice its cores, none beyond (KNIT_BIND_TO)\n"
    "  --map-by WHAT        place a host's ranks round robin over its cores (default),\n"
    "                       hwthreads, l2caches, l3caches, numa nodes or sockets (KNIT_MAP_BY)\n"
    "  --report-bindings    print where every rank and daemon runs (KNIT_REPORT_BINDINGS)\n"
    "  --timeout S          end the job after S seconds (exit status 124)\n"
    "  --oversubscribe      accepted for mpirun compatibility (ranks may exceed cores or slots)\n"
    "  -h, --help           this help\n"
    "  --version            print the version\n"
    "\n"
    "Hosts are started with KNIT_LAUNCH (default 'ssh {host}'). See docs/knitrun.md.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "knitrun: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s", usage_text);
    return KNITRUN_EXIT_USAGE;
}

static int parse_count(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > 1 << 20)
        return -1;
    *out = (int)v;
    return 0;
}

static int valid_var_name(const char *s, size_t len)
{
    if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return 0;
    return 1;
}

static int add_export(struct job_opts *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    if (!valid_var_name(arg, nlen))
        return usage_error("-x %s: not a valid variable name", arg);
    if (eq)
        return strv_add(&o->exports, arg) < 0 ? 1 : 0;
    const char *v = getenv(arg);
    if (!v) {
        kn_warn("-x %s: not set here, not exported", arg);
        return 0;
    }
    return strv_addf(&o->exports, "%s=%s", arg, v) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    kn_log_set_prefix("knitrun");
    struct job_opts o = {.np = -1};
    int proxy = 0, serve = 0, rc;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !strcmp(a, "-"))
            break;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        /* --opt=value as well as --opt value */
        char name[64];
        const char *val = NULL, *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof(name)) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
        }
#define OPT(s) (!strcmp(name, s))
#define NEED_VAL()                                                            \
    do {                                                                      \
        if (!val) {                                                           \
            if (i + 1 >= argc)                                                \
                return usage_error("option %s needs a value", name);          \
            val = argv[++i];                                                  \
        }                                                                     \
    } while (0)
        if (OPT("-h") || OPT("--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (OPT("--version")) {
            printf("knitrun (knit) %s\n", KNIT_VERSION_STRING);
            return 0;
        } else if (OPT("-n") || OPT("-np") || OPT("--np") || OPT("--n")) {
            NEED_VAL();
            if (parse_count(val, &o.np) < 0)
                return usage_error("%s %s: expected a number of ranks (1 or more)", name, val);
        } else if (OPT("--nodes")) {
            NEED_VAL();
            if (parse_count(val, &o.nodes) < 0)
                return usage_error("--nodes %s: expected a number of nodes (1 or more)", val);
        } else if (OPT("--hosts") || OPT("--host") || OPT("-H")) {
            NEED_VAL();
            o.hosts = val;
        } else if (OPT("--hostfile") || OPT("--machinefile") || OPT("-f")) {
            NEED_VAL();
            o.hostfile = val;
        } else if (OPT("-x")) {
            NEED_VAL();
            if ((rc = add_export(&o, val)) != 0)
                return rc;
        } else if (OPT("--tag-output")) {
            o.tag_output = 1;
        } else if (OPT("--no-offload")) {
            o.no_offload = 1;
        } else if (OPT("--bind-to") || OPT("--map-by")) {
            NEED_VAL();
            /* a tunable, so that proxies and knit-info see it too */
            const kn_config_entry_t *e = kn_config_find(OPT("--bind-to") ? "BIND_TO" : "MAP_BY");
            int v;
            if (kn_parse_enum(e->choices, val, &v) != KNIT_OK)
                return usage_error("%s %s: expected one of %s", name, val, e->choices);
            setenv(OPT("--bind-to") ? "KNIT_BIND_TO" : "KNIT_MAP_BY", val, 1);
        } else if (OPT("--report-bindings")) {
            setenv("KNIT_REPORT_BINDINGS", "1", 1);
        } else if (OPT("--oversubscribe")) {
            /* nothing to do: knit never refuses more ranks than cores */
        } else if (OPT("--timeout")) {
            NEED_VAL();
            char *end;
            errno = 0;
            o.timeout_s = strtod(val, &end);
            if (errno || end == val || *end || !(o.timeout_s > 0) || o.timeout_s > 1e9)
                return usage_error("--timeout %s: expected a positive number of seconds", val);
        } else if (OPT("--proxy")) {
            proxy = 1;
        } else if (OPT("--serve")) {
            serve = 1;
        } else {
            return usage_error("unknown option %s", a);
        }
#undef OPT
#undef NEED_VAL
    }
    if (kn_config_load() != KNIT_OK) {
        fprintf(stderr, "knitrun: invalid KNIT_* setting (see above)\n");
        return KNITRUN_EXIT_USAGE;
    }
    if (proxy)
        return proxy_main();
    if (serve)
        return job_serve();
    if (i >= argc)
        return usage_error("no program to run");
    if (o.hosts && o.hostfile)
        return usage_error("give either --hosts or --hostfile, not both");
    if (o.nodes && (o.hosts || o.hostfile))
        return usage_error("--nodes is for emulated nodes; with hosts every host is a node");
    o.argv = argv + i;
    rc = job_run(&o);
    strv_free(&o.exports);
    return rc;
}
