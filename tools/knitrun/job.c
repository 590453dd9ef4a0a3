/*
 * The job: where ranks go, starting them (directly for emulated nodes,
 * through one proxy per host otherwise), and how the job ends.
 *
 * States:
 *   RUNNING    ranks run.  The first failure (a rank exiting nonzero or by
 *              a signal, an abort, the timeout, SIGINT/SIGTERM/SIGHUP, a
 *              lost proxy) prints one line, fixes the exit code and goes
 *              to STOPPING.  The last rank ending goes to FINISHING.
 *   STOPPING   SIGTERM went to every rank's process group (through the
 *              proxies for hosts); the grace timer escalates: after
 *              KNIT_KILL_GRACE SIGKILL, after another one the launchers
 *              are killed too, after a third knitrun gives up waiting.
 *   FINISHING  every rank has ended: proxies are told (their connection
 *              closes), leftover descendants get SIGKILL, and once no
 *              child is left the job's files are removed and knitrun exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot/boot.h"
#include "boot/hostfile.h"
#include "core/nodeshm.h"
#include "offload/tree.h"
#include "knitrun.h"
#include "util/config.h"
#include "util/env.h"
#include "util/log.h"
#include "util/nodemap.h"

enum { RUNNING, STOPPING, FINISHING };

struct jrank {
    int node;
    kproc_t proc;  /* emulated nodes only */
    kconn_t *conn;
    unsigned hello : 1, finalized : 1, in_fence : 1, exited : 1;
    outbuf_t out[2];
    char finalize_call[KN_BOOT_FINALIZE_CALL_MAX + 1]; /* "": knit_finalize */
};

struct jnode {
    int first, count;
    char *host;        /* hosts mode */
    kproc_t launcher;  /* hosts mode: the launch command running the proxy */
    outbuf_t lout[2];
    kconn_t *proxy;
    unsigned started : 1, connected : 1;
};

/* Offload daemons (emulated nodes; on hosts the proxies start them):
 * one knit-agent per node, then the knit-switches (offload/tree.h). */
struct jdaemon {
    int node;            /* an agent's; -1 for a switch */
    int sw;              /* a switch's index */
    kproc_t proc;
    outbuf_t out[2];
};

static struct {
    struct job_opts *o;
    int size, nnodes, hosts_mode;
    struct jrank *ranks;
    struct jnode *nodes;
    char jobid[64], cookie[KN_BOOT_COOKIE_LEN + 1], hostname[256];
    char cwd[PATH_MAX], self_exe[PATH_MAX], unix_path[128];
    char *addrs, *node_sizes;
    int state, exit_code, done;
    int nexited, nfenced;
    kl_timer_t timeout_timer, grace_timer;
    int grace_phase;
    int offload, ndaemons;
    int serve;            /* knitrun --serve: the ranks are another launcher's */
    int ndaemon_conns;    /* --serve waits for the daemons to end before it closes */
    kl_watch_t serve_in;  /* --serve: rank 0's pipe, EOF when it ends */
    struct jdaemon *daemons;
    struct kn_config cfg; /* the job's settings: ours and what -x adds */
    kn_tree_t tree;       /* its switches */
    kb_plan_t bind;      /* emulated nodes: where this host's ranks and daemons run */
} J;

static void finish(void);

/* ------------------------------------------------------------ failure */

static const char *signame(int sig, char *buf, size_t len)
{
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, len, "SIG%s", abbrev);
    else
        snprintf(buf, len, "signal %d", sig);
    return buf;
}

/* The one line that says why the job ends. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[1400];
    int n = snprintf(line, sizeof(line), J.serve ? "knitrun --serve: " : "knitrun: ");
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}

static void signal_daemons(int sig)
{
    for (int i = 0; i < J.ndaemons; i++)
        kp_signal(&J.daemons[i].proc, sig);
}

static void signal_ranks(int sig)
{
    for (int i = 0; i < J.size; i++)
        kp_signal(&J.ranks[i].proc, sig);
    signal_daemons(sig);
    kp_signal_orphans(sig);
    store_broadcast_signal(sig);
}

static void kill_launchers(void)
{
    for (int n = 0; n < J.nnodes; n++)
        kp_signal(&J.nodes[n].launcher, SIGKILL);
}

static void stop(void)
{
    J.state = STOPPING;
    if (J.serve) { /* closing the ranks' connections ends the job through their launcher */
        J.done = 1;
        return;
    }
    signal_ranks(SIGTERM);
    J.grace_phase = 0;
    kl_timer_arm(&J.grace_timer, kn_cfg.kill_grace ? kn_cfg.kill_grace : 1);
}

/* First failure wins: print its line, keep its exit code, stop the job. */
static void fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(int code, const char *fmt, ...)
{
    if (J.state != RUNNING)
        return;
    char msg[1300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    say("%s", msg);
    J.exit_code = code;
    stop();
}

static void grace_expired(kl_timer_t *t)
{
    (void)t;
    if (J.serve) { /* the daemons' ranks stop them; we stop waiting */
        J.done = 1;
        return;
    }
    switch (J.grace_phase++) {
    case 0:
        kn_info("processes still running after KNIT_KILL_GRACE: SIGKILL");
        signal_ranks(SIGKILL);
        break;
    case 1:
        kill_launchers();
        signal_daemons(SIGKILL);
        kp_signal_orphans(SIGKILL);
        break;
    default:
        kn_error("processes of the job did not end: giving up on them");
        J.done = 1;
        return;
    }
    kl_timer_arm(&J.grace_timer, kn_cfg.kill_grace ? kn_cfg.kill_grace : 1);
}

static void timeout_expired(kl_timer_t *t)
{
    (void)t;
    fail(KNITRUN_EXIT_TIMEOUT, "job timed out after %g s", J.o->timeout_s);
}

static void on_signal(int sig)
{
    if (sig == SIGCHLD) {
        kp_reap();
        return;
    }
    char name[32];
    if (J.state == RUNNING) {
        fail(128 + sig, "job interrupted by %s", signame(sig, name, sizeof(name)));
    } else {
        /* asked again: no more grace */
        signal_ranks(SIGKILL);
        kill_launchers();
    }
}

/* ------------------------------------------------------------ ranks */

int job_size(void) { return J.size; }
int job_running(void) { return J.state == RUNNING; }
int job_nnodes(void) { return J.nnodes; }
int job_node_of(int rank) { return J.ranks[rank].node; }

int job_check_cookie(const char *cookie)
{
    return kn_boot_cookie_equal(cookie, J.cookie);
}

static void rank_tag(int rank, char *buf, size_t len)
{
    snprintf(buf, len, "[%d] ", rank);
}

void job_rank_output(int rank, int stream, const char *buf, size_t n)
{
    char tag[24];
    rank_tag(rank, tag, sizeof(tag));
    out_feed(&J.ranks[rank].out[stream - 1], stream, J.o->tag_output ? tag : NULL, buf, n);
}

static void flush_rank_output(int rank)
{
    char tag[24];
    rank_tag(rank, tag, sizeof(tag));
    for (int s = 0; s < 2; s++)
        out_flush(&J.ranks[rank].out[s], s + 1, J.o->tag_output ? tag : NULL);
}

void job_rank_exit(int rank, int how, int value)
{
    struct jrank *r = &J.ranks[rank];
    if (r->exited)
        return;
    r->exited = 1;
    J.nexited++;
    flush_rank_output(rank);
    /* A rank that fails because a daemon of this host died (it lost its
     * connection to its agent) may be found before the daemon is reaped:
     * the daemon's death is the cause, and is reported first */
    if (!J.hosts_mode && (how == KN_BOOT_SIGNALED || value != 0 || (r->hello && !r->finalized)))
        for (int i = 0; i < J.ndaemons && J.state == RUNNING; i++)
            kp_reap_ending(&J.daemons[i].proc);
    char name[32];
    if (how == KN_BOOT_SIGNALED)
        fail(128 + value, "rank %d on node %d killed by %s", rank, r->node,
             signame(value, name, sizeof(name)));
    else if (value != 0)
        fail(value, "rank %d on node %d exited with status %d", rank, r->node, value);
    else if (r->hello && !r->finalized)
        fail(1, J.serve ? "rank %d on node %d ended without calling %s (its connection to knit's store closed)"
                        : "rank %d on node %d exited without calling %s", rank, r->node,
             r->finalize_call[0] ? r->finalize_call : "knit_finalize");
    if (J.nexited == J.size)
        finish();
}

static void decode_status(int status, int *how, int *value)
{
    if (WIFSIGNALED(status)) {
        *how = KN_BOOT_SIGNALED;
        *value = WTERMSIG(status);
    } else {
        *how = KN_BOOT_EXITED;
        *value = WEXITSTATUS(status);
    }
}

static void local_output(kproc_t *p, int stream, const char *buf, size_t n)
{
    job_rank_output(p->id, stream, buf, n);
}

static void local_exit(kproc_t *p, int status)
{
    int how, value;
    decode_status(status, &how, &value);
    job_rank_exit(p->id, how, value);
}

/* The ranks of a node that will never report: count them as ended. */
static void node_gone(int node)
{
    struct jnode *nd = &J.nodes[node];
    for (int r = nd->first; r < nd->first + nd->count; r++) {
        if (!J.ranks[r].exited) {
            J.ranks[r].exited = 1;
            J.nexited++;
            flush_rank_output(r);
        }
    }
    if (J.nexited == J.size)
        finish();
}

static int node_running(int node)
{
    struct jnode *nd = &J.nodes[node];
    for (int r = nd->first; r < nd->first + nd->count; r++)
        if (!J.ranks[r].exited)
            return 1;
    return 0;
}

int job_rank_hello(kconn_t *c, int rank)
{
    struct jrank *r = &J.ranks[rank];
    if (r->conn || r->exited)
        return -1;
    r->conn = c;
    r->hello = 1;
    return 0;
}

void job_rank_finalized(int rank)
{
    J.ranks[rank].finalized = 1;
}

void job_rank_finalize_call(int rank, const char *name, size_t len)
{
    int ok = len > 0 && len <= KN_BOOT_FINALIZE_CALL_MAX && !(name[0] >= '0' && name[0] <= '9');
    for (size_t i = 0; ok && i < len; i++)
        ok = name[i] == '_' || (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
             (name[i] >= '0' && name[i] <= '9');
    if (!ok) {
        kn_warn("rank %d named a malformed finalize call (%zu bytes): ignored", rank, len);
        return;
    }
    memcpy(J.ranks[rank].finalize_call, name, len);
    J.ranks[rank].finalize_call[len] = '\0';
}

void job_abort(kconn_t *c, int code, const char *msg)
{
    int exit_code = code & 0xff ? code & 0xff : 1;
    if (J.serve && c->role == KN_BOOT_ROLE_RANK && J.state == RUNNING) {
        J.exit_code = exit_code; /* the rank said why, on its own stderr */
        stop();
    } else if (c->role == KN_BOOT_ROLE_RANK)
        fail(exit_code, "rank %d on node %d aborted (code %d): %s", c->id, J.ranks[c->id].node,
             code, msg);
    else if (c->role == KN_BOOT_ROLE_PROXY)
        fail(exit_code, "node %d on host %s: %s", c->id, J.nodes[c->id].host, msg);
    else
        fail(exit_code, "%s %d aborted (code %d): %s", store_role_name(c->role), c->id, code, msg);
}

int job_fence_enter(int rank)
{
    if (J.ranks[rank].in_fence)
        return -1;
    J.ranks[rank].in_fence = 1;
    return ++J.nfenced == J.size;
}

void job_fence_release(void)
{
    for (int i = 0; i < J.size; i++) {
        J.ranks[i].in_fence = 0;
        if (J.ranks[i].conn)
            store_fence_done(J.ranks[i].conn);
    }
    J.nfenced = 0;
}

/* --serve: the rank that started daemon id (its node's first rank) has
 * finalized, and stops it. */
static int daemon_stopped(int id)
{
    int node = id < J.nnodes ? id : id - J.nnodes < J.tree.nswitches ? kn_tree_switch_node(&J.tree, id - J.nnodes) : -1;
    return node >= 0 && node < J.nnodes && J.ranks[J.nodes[node].first].finalized;
}

int job_daemon_hello(kconn_t *c)
{
    (void)c;
    J.ndaemon_conns++;
    return 0;
}

void job_conn_lost(kconn_t *c)
{
    if (c->role == KN_BOOT_ROLE_DAEMON)
        J.ndaemon_conns--;
    if (c->role == KN_BOOT_ROLE_RANK && J.ranks[c->id].conn == c) {
        J.ranks[c->id].conn = NULL;
        if (J.serve) /* its launcher reports how it ended; we know whether it finalized */
            job_rank_exit(c->id, KN_BOOT_EXITED, 0);
    } else if (c->role == KN_BOOT_ROLE_DAEMON && J.serve && daemon_stopped(c->id)) {
        /* its rank stopped it at knit_finalize */
    } else if (c->role == KN_BOOT_ROLE_DAEMON && J.hosts_mode && J.offload) {
        /* on hosts, a daemon's end shows as its connection's (emulated
         * nodes: its exit status, see daemon_exit) */
        if (c->id >= 0 && c->id < J.nnodes)
            fail(1, "agent on node %d died (lost its connection to knitrun)", c->id);
        else if (c->id >= J.nnodes && J.tree.nswitches == 1)
            fail(1, "switch died (lost its connection to knitrun)");
        else if (c->id >= J.nnodes)
            fail(1, "switch %d died (lost its connection to knitrun)", c->id - J.nnodes);
    } else if (c->role == KN_BOOT_ROLE_PROXY && J.nodes[c->id].proxy == c) {
        struct jnode *nd = &J.nodes[c->id];
        nd->proxy = NULL;
        if (node_running(c->id)) {
            fail(1, "lost connection to the proxy of node %d on host %s", c->id, nd->host);
            node_gone(c->id);
        }
    }
}

/* ------------------------------------------------------------ proxies */

int job_proxy_hello(kconn_t *c, int node)
{
    struct jnode *nd = &J.nodes[node];
    if (!J.hosts_mode || nd->connected)
        return -1;
    nd->connected = 1;
    nd->proxy = c;
    return 0;
}

int job_proxy_owns(int node, int rank)
{
    return node >= 0 && node < J.nnodes && rank >= J.nodes[node].first &&
           rank < J.nodes[node].first + J.nodes[node].count;
}

/* The offload daemons on node's host: every agent and switch where the
 * nodes are emulated; the node's agent and the switches that run beside
 * it where they are hosts. */
static int host_daemons(int node)
{
    if (!J.offload)
        return 0;
    if (!J.hosts_mode)
        return J.nnodes + J.tree.nswitches;
    int n = 1;
    for (int s = 0; s < J.tree.nswitches; s++)
        n += kn_tree_switch_node(&J.tree, s) == node;
    return n;
}

/* The environment every rank of a node gets on top of the inherited one. */
static int node_env(int node, strv_t *e)
{
    struct jnode *nd = &J.nodes[node];
    int bad = 0;
    bad |= strv_addf(e, "%s=%d", KN_ENV_SIZE, J.size);
    bad |= strv_addf(e, "%s=%d", KN_ENV_NODE, node);
    bad |= strv_addf(e, "%s=%d", KN_ENV_NNODES, J.nnodes);
    bad |= strv_addf(e, "%s=%d", KN_ENV_LOCAL_SIZE, nd->count);
    /* emulated nodes share this host's cores: ranks judge oversubscription by it */
    bad |= strv_addf(e, "%s=%d", KN_ENV_HOST_PROCS, J.hosts_mode ? nd->count : J.size);
    bad |= strv_addf(e, "%s=%d", KN_ENV_HOST_DAEMONS, host_daemons(node));
    bad |= strv_addf(e, "%s=%s", KN_ENV_NODE_SIZES, J.node_sizes);
    bad |= strv_addf(e, "%s=%s", KN_ENV_JOBID, J.jobid);
    bad |= strv_addf(e, "%s=%s", KN_ENV_COOKIE, J.cookie);
    bad |= strv_addf(e, "%s=%s", KN_ENV_BOOT_ADDR, J.addrs);
    bad |= strv_addf(e, "%s=%s", KN_ENV_HOSTNAME, J.hosts_mode ? nd->host : J.hostname);
    bad |= strv_addf(e, "KNIT_OFFLOAD=%d", J.offload);
    bad |= strv_addf(e, "%s=%d", KN_ENV_NSWITCHES, J.tree.nswitches);
    if (!J.hosts_mode)
        bad |= kb_env(&J.bind, e); /* the proxies add their host's */
    if (J.hosts_mode) {
        /* remote ranks do not inherit our environment: pass the tunables */
        extern char **environ;
        for (char **ep = environ; *ep; ep++) {
            const char *eq = strchr(*ep, '=');
            char name[128];
            if (!eq || strncmp(*ep, "KNIT_", 5) || (size_t)(eq - *ep) >= sizeof(name))
                continue;
            snprintf(name, sizeof(name), "%.*s", (int)(eq - *ep), *ep);
            if (kn_config_find(name))
                bad |= strv_add(e, *ep);
        }
    }
    for (size_t i = 0; i < J.o->exports.n; i++)
        bad |= strv_add(e, J.o->exports.v[i]);
    return bad ? -1 : 0;
}

int job_send_job(kconn_t *c)
{
    struct jnode *nd = &J.nodes[c->id];
    strv_t env = {0};
    int rc = -1;
    if (node_env(c->id, &env) < 0)
        goto out;
    size_t nargs = 0;
    while (J.o->argv[nargs])
        nargs++;
    size_t len = kn_boot_job_size(env.v, env.n, J.cwd, J.o->argv, nargs);
    if (len > KN_BOOT_JOB_MAX) {
        kn_error("job description for node %d too long (%zu bytes)", c->id, len);
        goto out;
    }
    uint8_t *p = malloc(len);
    if (!p)
        goto out;
    kn_boot_job_encode(p, (uint32_t)nd->first, (uint32_t)nd->count, env.v, env.n, J.cwd, J.o->argv, nargs);
    rc = kc_send(c, KN_BOOT_JOB, p, len, NULL, 0);
    free(p);
out:
    strv_free(&env);
    return rc;
}

/* KNIT_LAUNCH split into words ('...' and "..." group), {host} replaced. */
static int launch_argv(const char *tmpl, const char *host, strv_t *out)
{
    int has_host = 0;
    const char *p = tmpl;
    char *word = malloc(strlen(tmpl) * (strlen(host) + 1) + 1);
    if (!word)
        return -1;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t o = 0;
        char quote = 0;
        for (; *p && (quote || (*p != ' ' && *p != '\t')); p++) {
            if (quote && *p == quote) {
                quote = 0;
            } else if (!quote && (*p == '\'' || *p == '"')) {
                quote = *p;
            } else if (!strncmp(p, "{host}", 6)) {
                o += (size_t)sprintf(word + o, "%s", host);
                p += 5;
                has_host = 1;
            } else {
                word[o++] = *p;
            }
        }
        word[o] = '\0';
        if (strv_add(out, word) < 0)
            break;
    }
    free(word);
    return has_host ? 0 : -1;
}

static void launcher_output(kproc_t *p, int stream, const char *buf, size_t n)
{
    out_feed(&J.nodes[p->id].lout[stream - 1], stream, NULL, buf, n);
}

static void launcher_exit(kproc_t *p, int status)
{
    struct jnode *nd = &J.nodes[p->id];
    for (int s = 0; s < 2; s++)
        out_flush(&nd->lout[s], s + 1, NULL);
    /* a proxy that got connected reports through its connection */
    if (nd->connected || !node_running(p->id))
        return;
    char how[48], name[32];
    int how_, value;
    decode_status(status, &how_, &value);
    if (how_ == KN_BOOT_SIGNALED)
        snprintf(how, sizeof(how), "was killed by %s", signame(value, name, sizeof(name)));
    else
        snprintf(how, sizeof(how), "exited with status %d", value);
    fail(how_ == KN_BOOT_EXITED && value ? value : 1,
         "cannot start node %d on host %s: the launch command %s", p->id, nd->host, how);
    node_gone(p->id);
}

static int launch_proxy(int node)
{
    struct jnode *nd = &J.nodes[node];
    strv_t argv = {0};
    int in[2] = {-1, -1}, rc = -1;
    if (launch_argv(kn_cfg.launch, nd->host, &argv) < 0 || strv_add(&argv, J.self_exe) < 0 ||
        strv_add(&argv, "--proxy") < 0)
        goto out;
    /* the secret goes through the launcher's stdin, not its command line */
    if (pipe2(in, O_CLOEXEC) < 0) {
        kn_error("pipe2: %m");
        goto out;
    }
    nd->launcher.id = node;
    nd->launcher.on_output = launcher_output;
    nd->launcher.on_exit = launcher_exit;
    if (kp_spawn(&nd->launcher, argv.v, NULL, NULL, in[0]) < 0)
        goto out;
    nd->started = 1;
    /* one short line into an empty pipe: never blocks; a launcher that
     * already died is reported when it is reaped */
    if (dprintf(in[1], "%s %d %s\n", J.cookie, node, J.addrs) < 0 && errno != EPIPE)
        kn_error("write to the launch command of node %d: %m", node);
    rc = 0;
out:
    if (in[0] >= 0)
        close(in[0]);
    if (in[1] >= 0)
        close(in[1]);
    strv_free(&argv);
    return rc;
}

/* ------------------------------------------------------------ start, end */

static int plan(struct job_opts *o)
{
    kn_hostlist_t hl = {0};
    char err[512];
    int *counts = NULL;
    J.hosts_mode = o->hosts || o->hostfile;
    if (J.hosts_mode) {
        knit_status_t st = o->hostfile ? kn_hostfile_load(o->hostfile, &hl, err, sizeof(err))
                                       : kn_hostlist_parse(o->hosts, &hl, err, sizeof(err));
        if (st != KNIT_OK) {
            say("%s", err);
            return -1;
        }
        J.size = o->np > 0 ? o->np : kn_hostlist_slots(&hl);
        counts = calloc((size_t)hl.count, sizeof(int));
        if (!counts)
            goto err;
        kn_place_hosts(&hl, J.size, counts);
        for (int i = 0; i < hl.count; i++)
            J.nnodes += counts[i] > 0;
    } else {
        J.size = o->np > 0 ? o->np : 1;
        J.nnodes = o->nodes > 0 ? o->nodes : 1;
        if (J.nnodes > J.size) {
            say("--nodes %d is more than the %d ranks of the job", J.nnodes, J.size);
            return -1;
        }
        counts = calloc((size_t)J.nnodes, sizeof(int));
        if (!counts)
            goto err;
        kn_place_block(J.size, J.nnodes, counts);
    }
    J.ranks = calloc((size_t)J.size, sizeof(*J.ranks));
    J.nodes = calloc((size_t)J.nnodes, sizeof(*J.nodes));
    J.node_sizes = malloc((size_t)J.nnodes * 12 + 1);
    if (!J.ranks || !J.nodes || !J.node_sizes)
        goto err;
    J.node_sizes[0] = '\0';
    char *ns = J.node_sizes;
    for (int i = 0, n = 0, first = 0; n < J.nnodes; i++) {
        if (!counts[i])
            continue;
        J.nodes[n].first = first;
        J.nodes[n].count = counts[i];
        if (J.hosts_mode && !(J.nodes[n].host = strdup(hl.hosts[i].name)))
            goto err;
        for (int r = first; r < first + counts[i]; r++)
            J.ranks[r].node = n;
        ns += sprintf(ns, "%s%d", n ? "," : "", counts[i]);
        first += counts[i];
        n++;
    }
    free(counts);
    kn_hostlist_free(&hl);
    return 0;
err:
    say("out of memory");
    free(counts);
    kn_hostlist_free(&hl);
    return -1;
}

/* Every node's shared memory against KNIT_SHM_MAX, and this host's
 * /dev/shm against what its emulated nodes allocate at start (on hosts,
 * each proxy checks its own before it starts anything): before any
 * process starts or any file is made.  One line on refusal. */
static int check_shm(void)
{
    char msg[700];
    kn_node_shm_t *plans = calloc((size_t)J.nnodes, sizeof(*plans));
    if (!plans) {
        say("out of memory");
        return -1;
    }
    int rc = 0;
    for (int n = 0; n < J.nnodes && !rc; n++) {
        if (kn_node_shm_plan(&J.cfg, J.nodes[n].count, J.offload, &plans[n], msg, sizeof(msg)) != KNIT_OK) {
            say("%s", msg);
            rc = -1;
        }
    }
    if (!rc && !J.hosts_mode && kn_node_shm_fits(plans, J.nnodes, kn_node_shm_free(), msg, sizeof(msg)) != KNIT_OK) {
        say("%s", msg);
        rc = -1;
    }
    free(plans);
    return rc;
}

/* Where ranks and proxies find the store. */
static int make_addrs(int port, int have_unix)
{
    strv_t a = {0};
    int bad = 0;
    if (J.hosts_mode) {
        /* --serve: rank 0's host finds the store on its unix socket */
        if (J.serve && have_unix)
            bad |= strv_addf(&a, "unix:%s", J.unix_path);
        /* interface addresses, for hosts that are not this one */
        struct ifaddrs *ifs;
        if (getifaddrs(&ifs) < 0) {
            kn_error("getifaddrs: %m");
            return -1;
        }
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
                !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
                continue;
            char ip[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
            bad |= strv_addf(&a, "%s:%d", ip, port);
        }
        freeifaddrs(ifs);
        if (a.n == 0) /* no network: only this host can take part */
            bad |= strv_addf(&a, "127.0.0.1:%d", port);
    } else {
        if (have_unix)
            bad |= strv_addf(&a, "unix:%s", J.unix_path);
        bad |= strv_addf(&a, "127.0.0.1:%d", port);
    }
    size_t len = 1;
    for (size_t i = 0; i < a.n; i++)
        len += strlen(a.v[i]) + 1;
    J.addrs = bad ? NULL : calloc(1, len);
    for (size_t i = 0; J.addrs && i < a.n; i++) {
        if (i)
            strcat(J.addrs, ",");
        strcat(J.addrs, a.v[i]);
    }
    strv_free(&a);
    return J.addrs ? 0 : -1;
}

static void daemon_output(kproc_t *p, int stream, const char *buf, size_t n)
{
    out_feed(&J.daemons[p->id].out[stream - 1], stream, NULL, buf, n);
}

static void daemon_exit(kproc_t *p, int status)
{
    struct jdaemon *d = &J.daemons[p->id];
    for (int s = 0; s < 2; s++)
        out_flush(&d->out[s], s + 1, NULL);
    int how, value;
    char what[32], name[32];
    decode_status(status, &how, &value);
    if (d->node >= 0)
        snprintf(what, sizeof(what), "agent on node %d", d->node);
    else if (J.tree.nswitches == 1)
        snprintf(what, sizeof(what), "switch");
    else
        snprintf(what, sizeof(what), "switch %d", d->sw);
    /* status 1, however it ended: knitrun's status is the program's (a
     * rank's own status or signal); a daemon is knit's, and on real hosts
     * its end shows only as a lost connection (job_conn_lost), so a
     * 128 + signal here would read as the program killed, and differ
     * between emulated nodes and hosts (docs/knitrun.md, How a job ends) */
    if (how == KN_BOOT_SIGNALED)
        fail(1, "%s died (killed by %s)", what, signame(value, name, sizeof(name)));
    else
        fail(1, "%s died (exited with status %d)", what, value);
}

/* knit-agent and knit-switch live beside knitrun. */
static int start_daemons(void)
{
    J.ndaemons = J.nnodes + J.tree.nswitches;
    J.daemons = calloc((size_t)J.ndaemons, sizeof(*J.daemons));
    if (!J.daemons)
        return -1;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s", J.self_exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    for (int i = 0; i < J.ndaemons; i++) {
        struct jdaemon *d = &J.daemons[i];
        d->node = i < J.nnodes ? i : -1;
        d->sw = i - J.nnodes;
        snprintf(path, sizeof(path), "%s/%s", dir, d->node >= 0 ? "knit-agent" : "knit-switch");
        if (access(path, X_OK) < 0) {
            say("cannot start the offload daemons: %s: %s (knitrun --no-offload runs without them)", path,
                strerror(errno));
            return -1;
        }
        strv_t env = {0};
        char *argv[] = {path, NULL};
        d->proc.id = i;
        d->proc.on_output = daemon_output;
        d->proc.on_exit = daemon_exit;
        d->proc.cpus = &J.bind.daemons;
        /* a switch runs beside the first node below it */
        int rc = node_env(d->node >= 0 ? d->node : kn_tree_switch_node(&J.tree, d->sw), &env);
        if (!rc && d->node < 0)
            rc = strv_addf(&env, "%s=%d", KN_ENV_SWITCH, d->sw);
        if (!rc)
            rc = kp_spawn(&d->proc, argv, env.v, NULL, -1);
        strv_free(&env);
        if (rc < 0) {
            say("cannot start %s", path);
            return -1;
        }
    }
    return 0;
}

static int start(void)
{
    if (!J.hosts_mode) {
        if (J.offload && start_daemons() < 0) {
            J.exit_code = 1;
            J.state = STOPPING;
            signal_daemons(SIGKILL);
            return -1;
        }
        for (int n = 0; n < J.nnodes; n++) {
            strv_t env = {0};
            if (node_env(n, &env) < 0) {
                strv_free(&env);
                return -1;
            }
            for (int r = J.nodes[n].first; r < J.nodes[n].first + J.nodes[n].count; r++) {
                kproc_t *p = &J.ranks[r].proc;
                p->on_output = local_output;
                p->on_exit = local_exit;
                p->cpus = kb_rank_cpus(&J.bind, r);
                if (kp_spawn_rank(p, r, r - J.nodes[n].first, J.o->argv, env.v, NULL) < 0) {
                    strv_free(&env);
                    fail(1, "cannot start rank %d", r);
                    return -1;
                }
            }
            strv_free(&env);
        }
        return 0;
    }
    for (int n = 0; n < J.nnodes; n++) {
        if (launch_proxy(n) < 0) {
            fail(1, "cannot start node %d on host %s", n, J.nodes[n].host);
            return -1;
        }
    }
    return 0;
}

/* What never started never reports: count it as ended. */
static void mark_unstarted(void)
{
    for (int n = 0; n < J.nnodes; n++) {
        if (J.hosts_mode) {
            if (!J.nodes[n].started)
                node_gone(n);
            continue;
        }
        for (int r = J.nodes[n].first; r < J.nodes[n].first + J.nodes[n].count; r++) {
            if (J.ranks[r].proc.pid == 0 && !J.ranks[r].exited) {
                J.ranks[r].exited = 1;
                J.nexited++;
            }
        }
    }
    if (J.nexited == J.size)
        finish();
}

static void finish(void)
{
    if (J.state == FINISHING)
        return;
    int was_running = J.state == RUNNING;
    J.state = FINISHING;
    kl_timer_arm(&J.timeout_timer, 0);
    store_close_proxies(); /* each proxy cleans its host and exits */
    signal_daemons(SIGTERM); /* they print their reports (KNIT_STATS) and exit */
    kp_signal_orphans(SIGKILL);
    if (was_running) {
        /* escalate from "kill the launchers" if they linger */
        J.grace_phase = 1;
        kl_timer_arm(&J.grace_timer, kn_cfg.kill_grace ? kn_cfg.kill_grace : 1);
    }
}

static void cleanup(void)
{
    for (int r = 0; r < J.size; r++) {
        kp_close_output(&J.ranks[r].proc);
        flush_rank_output(r);
        for (int s = 0; s < 2; s++)
            out_free(&J.ranks[r].out[s]);
    }
    for (int n = 0; n < J.nnodes; n++) {
        kp_close_output(&J.nodes[n].launcher);
        for (int s = 0; s < 2; s++) {
            out_flush(&J.nodes[n].lout[s], s + 1, NULL);
            out_free(&J.nodes[n].lout[s]);
        }
        free(J.nodes[n].host);
    }
    for (int i = 0; i < J.ndaemons; i++) {
        kp_close_output(&J.daemons[i].proc);
        for (int s = 0; s < 2; s++) {
            out_flush(&J.daemons[i].out[s], s + 1, NULL);
            out_free(&J.daemons[i].out[s]);
        }
    }
    free(J.daemons);
    store_close();
    shm_clean_job(J.jobid);
    free(J.ranks);
    free(J.nodes);
    free(J.addrs);
    free(J.node_sizes);
    kb_free(&J.bind);
}

/* The job's identity, the event loop and the store: 0, or -1 (said). */
static int open_store(void)
{
    if (gethostname(J.hostname, sizeof(J.hostname)) < 0)
        snprintf(J.hostname, sizeof(J.hostname), "localhost");
    J.hostname[sizeof(J.hostname) - 1] = '\0';
    shm_make_jobid(J.jobid, sizeof(J.jobid));
    if (kn_boot_cookie_new(J.cookie) != KNIT_OK)
        return -1;
    shm_clean_stale();
    if (kl_init() < 0 || kl_signals_init(on_signal) < 0 || kl_timer_init(&J.timeout_timer, timeout_expired) < 0 ||
        kl_timer_init(&J.grace_timer, grace_expired) < 0)
        return -1;
    snprintf(J.unix_path, sizeof(J.unix_path), "/dev/shm/knit-%s-boot.sock", J.jobid);
    int port;
    int have_unix = store_listen(J.unix_path, &port);
    if (have_unix < 0 || make_addrs(port, have_unix) < 0) {
        store_close();
        shm_clean_job(J.jobid);
        return -1;
    }
    return 0;
}

int job_run(struct job_opts *o)
{
    J.o = o;
    J.offload = kn_cfg.offload && !o->no_offload;
    if (plan(o) < 0)
        return KNITRUN_EXIT_USAGE;
    J.cfg = kn_cfg;
    for (size_t i = 0; i < o->exports.n; i++)
        if (kn_config_apply(&J.cfg, o->exports.v[i]) != KNIT_OK) {
            say("invalid -x %s (see above)", o->exports.v[i]);
            return 1;
        }
    if (kn_tree_init(&J.tree, J.nnodes, (int)J.cfg.switch_fanin) < 0) {
        say("KNIT_SWITCH_FANIN=%lld: must be at least 2", (long long)J.cfg.switch_fanin);
        return KNITRUN_EXIT_USAGE;
    }
    if (check_shm() < 0)
        return 1;
    if (!J.hosts_mode) {
        char err[512];
        if (kb_plan(&J.bind, &kn_cfg, 0, J.size, err, sizeof(err)) < 0) {
            say("%s", err);
            return KNITRUN_EXIT_USAGE;
        }
    }
    if (J.hosts_mode) {
        strv_t probe = {0};
        int ok = launch_argv(kn_cfg.launch, "x", &probe) == 0 && probe.n > 0;
        strv_free(&probe);
        if (!ok) {
            say("KNIT_LAUNCH='%s' must contain {host}", kn_cfg.launch);
            return KNITRUN_EXIT_USAGE;
        }
    }
    ssize_t l = readlink("/proc/self/exe", J.self_exe, sizeof(J.self_exe) - 1);
    if (l <= 0 || !getcwd(J.cwd, sizeof(J.cwd))) {
        kn_error("cannot find knitrun's own path or working directory: %m");
        return 1;
    }
    J.self_exe[l] = '\0';
    if (kp_init() < 0 || open_store() < 0)
        return 1;
    kn_debug("job %s: %d ranks on %d nodes (%s), store at %s", J.jobid, J.size, J.nnodes,
             J.node_sizes, J.addrs);
    if (o->timeout_s > 0)
        kl_timer_arm(&J.timeout_timer, (uint64_t)(o->timeout_s * 1e9));

    if (!J.hosts_mode && kn_cfg.report_bindings)
        kb_report(&J.bind, J.hostname, 0, job_node_of, J.offload);
    J.state = RUNNING;
    if (start() < 0)
        mark_unstarted();
    while (!J.done) {
        if (kl_run_once() < 0) {
            J.exit_code = J.exit_code ? J.exit_code : 1;
            signal_ranks(SIGKILL);
            kill_launchers();
            break;
        }
        if (J.state == FINISHING && !J.done) {
            if (kp_reap())
                kp_signal_orphans(SIGKILL);
            else
                J.done = 1;
        }
    }
    cleanup();
    return J.exit_code;
}

/* ------------------------------------------------------------ --serve */

/* Rank 0's pipe: its end before it reached the store leaves the job
 * without anyone to start it. */
static void serve_in_ready(kl_watch_t *w, uint32_t events)
{
    (void)events;
    char buf[64];
    ssize_t n = read(w->fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
        return;
    if (n > 0)
        return;
    kl_del(w);
    if (!J.ranks[0].hello)
        fail(1, "rank 0 ended before it reached knit's store");
}

/*
 * knitrun --serve: knit's store for a job another launcher started
 * (src/core/launch.c).  Rank 0 starts it with KNIT_SIZE and
 * KNIT_NODE_SIZES; its first line on stdout is "jobid cookie addresses".
 * It ends when every rank has finalized and closed its connection; a rank
 * that ends without finalizing, or a daemon that dies, fails the job: it
 * says why and closes every connection, which the ranks take as the
 * signal to end the job through their launcher.
 */
int job_serve(void)
{
    static struct job_opts none;
    J.o = &none;
    J.serve = J.hosts_mode = 1;
    J.offload = kn_cfg.offload;
    const char *size = getenv(KN_ENV_SIZE), *sizes = getenv(KN_ENV_NODE_SIZES);
    char *end;
    long n = size ? strtol(size, &end, 10) : 0;
    if (!size || !sizes || *end || n < 1 || n > 1 << 24) {
        say("started without %s and %s: knitrun --serve is started by a knit rank under another launcher",
            KN_ENV_SIZE, KN_ENV_NODE_SIZES);
        return KNITRUN_EXIT_USAGE;
    }
    J.size = (int)n;
    int *first;
    J.nnodes = kn_node_sizes_parse(sizes, J.size, &first);
    J.ranks = calloc((size_t)J.size, sizeof(*J.ranks));
    J.nodes = calloc((size_t)(J.nnodes > 0 ? J.nnodes : 1), sizeof(*J.nodes));
    J.node_sizes = strdup(sizes);
    if (!J.ranks || !J.nodes || !J.node_sizes)
        return 1;
    for (int i = 0; i < J.nnodes; i++) {
        J.nodes[i].first = first[i];
        J.nodes[i].count = first[i + 1] - first[i];
        for (int r = first[i]; r < first[i + 1]; r++)
            J.ranks[r].node = i;
    }
    free(first);
    if (J.nnodes < 0 || kn_tree_init(&J.tree, J.nnodes, (int)kn_cfg.switch_fanin) < 0) {
        say("%s=%s, KNIT_SWITCH_FANIN=%lld: not a job of %d ranks", KN_ENV_NODE_SIZES, sizes,
            (long long)kn_cfg.switch_fanin, J.size);
        return KNITRUN_EXIT_USAGE;
    }
    /* No start-up bound of our own: ranks reach us after the launcher's
     * fence, which waits for the last of them to call knit_init, at the
     * application's pace; each rank bounds its own wait for us
     * (KNIT_BOOT_TIMEOUT), and the launcher sees a rank that dies. */
    if (open_store() < 0)
        return 1;
    J.serve_in.fd = 0;
    J.serve_in.fn = serve_in_ready;
    if (kl_add(&J.serve_in, EPOLLIN) < 0)
        return 1;
    /* the line rank 0 waits for; our later output goes to stderr */
    if (dprintf(1, "%s %s %s\n", J.jobid, J.cookie, J.addrs) < 0 || dup2(2, 1) < 0) {
        kn_error("writing knit's store address: %m");
        return 1;
    }
    J.state = RUNNING;
    while (!J.done) {
        if (kl_run_once() < 0) {
            J.exit_code = J.exit_code ? J.exit_code : 1;
            break;
        }
        /* the daemons' ranks stop them as they finalize: their
         * connections close before ours (bounded by KNIT_KILL_GRACE) */
        if (J.state == FINISHING && J.ndaemon_conns == 0)
            J.done = 1;
    }
    cleanup();
    return J.exit_code;
}
