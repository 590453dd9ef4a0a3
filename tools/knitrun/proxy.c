/*
 * knitrun --proxy: the per-host helper that the launch command (ssh,
 * ip netns exec, ...) starts on each host of a job.
 *
 * It reads "<cookie> <node> <store addresses>" from stdin (so the secret
 * is not on any command line), connects to the store as role PROXY, gets
 * the JOB (what to run, with which environment), starts the host's ranks,
 * and then forwards their output (OUTPUT) and exits (EXIT).  knitrun's
 * SIGNAL messages go to every rank's process group.  When the connection
 * ends (knitrun closed it at the end of the job, or knitrun is gone) the
 * proxy kills whatever is left, removes the job's shared-memory files on
 * this host and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot/boot.h"
#include "core/nodeshm.h"
#include "knitrun.h"
#include "util/config.h"
#include "util/env.h"
#include "util/log.h"
#include "offload/tree.h"
#include "util/time.h"

static struct {
    kconn_t *conn;
    kproc_t *ranks;
    int first, count;
    const char *jobid;
    int ending, done;
    kl_timer_t give_up;
    kproc_t daemons[1 + KN_TREE_LEVELS]; /* this host's knit-agent, and the switches beside it */
    int ndaemons;
    int node;
    const char *host;
    kb_plan_t bind;      /* where this host's ranks and daemons run */
} P;

/* One line from stdin, bounded in time and length. */
static int read_line(char *buf, size_t cap)
{
    uint64_t deadline = kn_cfg.boot_timeout ? kn_time_ns() + kn_cfg.boot_timeout : 0;
    size_t n = 0;
    while (n + 1 < cap) {
        if (kn_boot_read_full(0, buf + n, 1, deadline) != KNIT_OK)
            return -1;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 0;
        }
        n++;
    }
    return -1;
}

static void kill_all(int sig)
{
    for (int i = 0; i < P.count; i++)
        kp_signal(&P.ranks[i], sig);
    for (int i = 0; i < P.ndaemons; i++)
        kp_signal(&P.daemons[i], sig);
    kp_signal_orphans(sig);
}

static int running(void)
{
    int n = 0;
    for (int i = 0; i < P.count; i++)
        n += P.ranks[i].pid > 0;
    return n;
}

static void end_job(const char *why)
{
    if (P.ending)
        return;
    P.ending = 1;
    int n = running();
    if (n)
        kn_warn("%s: killing %d rank%s", why, n, n == 1 ? "" : "s");
    /* the ranks at once; the daemons get SIGTERM, on which they print their
     * reports (KNIT_STATS) and exit (the give-up timer covers one that
     * does not) */
    for (int i = 0; i < P.count; i++)
        kp_signal(&P.ranks[i], SIGKILL);
    kp_signal_orphans(SIGKILL);
    for (int i = 0; i < P.ndaemons; i++)
        kp_signal(&P.daemons[i], SIGTERM);
    kl_timer_arm(&P.give_up, kn_cfg.kill_grace ? 2 * kn_cfg.kill_grace : 1);
}

static void give_up(kl_timer_t *t)
{
    (void)t;
    kn_error("processes did not end: giving up on them");
    P.done = 1;
}

static void on_close(kconn_t *c, const char *why)
{
    (void)c;
    P.conn = NULL;
    end_job(strcmp(why, "connection closed") ? why : "knitrun closed the connection");
}

static int on_msg(kconn_t *c, const kn_boot_hdr_t *h, const uint8_t *p)
{
    (void)c;
    kn_boot_msg_t m;
    if (h->type != KN_BOOT_SIGNAL || kn_boot_msg_decode(h, p, &m, NULL) != KNIT_OK ||
        m.signo >= (uint32_t)NSIG) {
        kn_error("unexpected '%s' message from knitrun", kn_boot_type_name(h->type));
        P.conn = NULL;
        end_job("protocol error");
        return -1;
    }
    kill_all((int)m.signo);
    return 0;
}

static void on_signal(int sig)
{
    if (sig == SIGCHLD)
        kp_reap();
    else
        end_job(sigabbrev_np(sig) ? sigabbrev_np(sig) : "signal");
}

static void rank_output(kproc_t *p, int stream, const char *buf, size_t n)
{
    uint8_t h[8];
    kn_boot_put32(h, (uint32_t)p->id);
    kn_boot_put32(h + 4, (uint32_t)stream);
    if (P.conn)
        kc_send(P.conn, KN_BOOT_OUTPUT, h, 8, buf, n);
}

static void rank_exit(kproc_t *p, int status)
{
    uint8_t m[12];
    kn_boot_put32(m, (uint32_t)p->id);
    kn_boot_put32(m + 4, WIFSIGNALED(status) ? KN_BOOT_SIGNALED : KN_BOOT_EXITED);
    kn_boot_put32(m + 8, (uint32_t)(WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)));
    if (P.conn)
        kc_send(P.conn, KN_BOOT_EXIT, m, 12, NULL, 0);
}

/* Daemons report through their own bootstrap connection; their output
 * goes out as the output of the host's first rank (it names them).  Once
 * knitrun has closed the connection (the job is over and the daemons
 * print their KNIT_STATS reports as they exit), it goes to this proxy's
 * own output, which the launcher carries back to knitrun. */
static void daemon_output(kproc_t *p, int stream, const char *buf, size_t n)
{
    uint8_t h[8];
    kn_boot_put32(h, (uint32_t)P.first);
    kn_boot_put32(h + 4, (uint32_t)stream);
    (void)p;
    if (P.conn) {
        kc_send(P.conn, KN_BOOT_OUTPUT, h, 8, buf, n);
        return;
    }
    for (size_t done = 0; done < n;) {
        ssize_t w = write(stream == 1 ? 1 : 2, buf + done, n - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
}

static void daemon_exit(kproc_t *p, int status)
{
    (void)p, (void)status;
}

/* One daemon from beside this proxy: the agent (sw < 0) or switch sw. */
static void start_daemon(const char *dir, int sw, const strv_t *env)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, sw < 0 ? "knit-agent" : "knit-switch");
    char *argv[] = {path, NULL};
    strv_t e = {0};
    int bad = 0;
    for (size_t i = 0; i < env->n; i++)
        bad |= strv_add(&e, env->v[i]);
    if (sw >= 0)
        bad |= strv_addf(&e, "%s=%d", KN_ENV_SWITCH, sw);
    kproc_t *d = &P.daemons[P.ndaemons];
    d->id = P.ndaemons;
    d->on_output = daemon_output;
    d->on_exit = daemon_exit;
    d->cpus = &P.bind.daemons;
    if (!bad && kp_spawn(d, argv, e.v, NULL, -1) == 0)
        P.ndaemons++;
    else
        kn_error("cannot start %s", path);
    strv_free(&e);
}

/* knitrun asked for offload daemons (KNIT_OFFLOAD=1 in the job): start
 * this node's agent, and the switches whose first node is this one (the
 * root's is node 0), from beside this knitrun. */
static void start_daemons(int node, const strv_t *env, const struct kn_config *cfg)
{
    char dir[4096];
    ssize_t l = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    if (l <= 0)
        return;
    dir[l] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    int nnodes = 0;
    size_t kl = strlen(KN_ENV_NNODES);
    for (size_t i = 0; i < env->n; i++)
        if (!strncmp(env->v[i], KN_ENV_NNODES, kl) && env->v[i][kl] == '=')
            nnodes = atoi(env->v[i] + kl + 1);
    kn_tree_t t;
    if (kn_tree_init(&t, nnodes, (int)cfg->switch_fanin) < 0) {
        kn_error("no tree of switches for %d nodes at KNIT_SWITCH_FANIN=%lld", nnodes, (long long)cfg->switch_fanin);
        return;
    }
    start_daemon(dir, -1, env);
    for (int s = 0; s < t.nswitches; s++)
        if (kn_tree_switch_node(&t, s) == node && P.ndaemons < (int)KN_ARRAY_SIZE(P.daemons))
            start_daemon(dir, s, env);
}

/* The job cannot start here: tell knitrun why in one line (its ABORT) and
 * report the ranks as failed, none of them started. */
static void refuse(const char *msg)
{
    uint8_t code[4];
    kn_boot_put32(code, 1);
    kc_send(P.conn, KN_BOOT_ABORT, code, 4, msg, strlen(msg));
    for (int i = 0; i < P.count; i++) {
        P.ranks[i].id = P.first + i;
        rank_exit(&P.ranks[i], 1 << 8);
    }
}

/* This host's /dev/shm against what the node's ranks allocate at start,
 * planned with the job's KNIT_* settings (cfg: knitrun passed them): 0, or
 * -1 after refusing the job. */
static int check_shm(const struct kn_config *cfg, int cfg_ok, int offload)
{
    char msg[700];
    kn_node_shm_t plan;
    knit_status_t st = KNIT_ERR_INVAL;
    if (cfg_ok)
        st = kn_node_shm_plan(cfg, P.count, offload, &plan, msg, sizeof(msg));
    else
        snprintf(msg, sizeof(msg), "invalid KNIT_* setting (see above)");
    if (st == KNIT_OK)
        st = kn_node_shm_fits(&plan, 1, kn_node_shm_free(), msg, sizeof(msg));
    if (st == KNIT_OK)
        return 0;
    refuse(msg);
    return -1;
}

static int proxy_node_of(int rank)
{
    (void)rank;
    return P.node;
}

/* Where this host's ranks and daemons run (bind.c), after the job's
 * proxies that share this machine: 0, or -1 after refusing the job. */
static int place(const struct kn_config *cfg, strv_t *env, int offload)
{
    char err[512], msg[700];
    int off = kb_machine_offset(P.jobid, P.count);
    if (kb_plan(&P.bind, cfg, off, P.count, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "node %d on host %s: %s", P.node, P.host, err);
        refuse(msg);
        return -1;
    }
    if (kb_env(&P.bind, env) < 0) {
        refuse("proxy: out of memory");
        return -1;
    }
    if (cfg->report_bindings)
        kb_report(&P.bind, P.host, P.first, proxy_node_of, offload);
    return 0;
}

/* Split the JOB payload into env, cwd and argv (pointers into p). */
static int parse_job(uint8_t *p, uint32_t len, strv_t *env, char **cwd, strv_t *argv)
{
    kn_boot_job_t j;
    const char *why;
    if (kn_boot_job_decode(p, len, &j, &why) != KNIT_OK) {
        kn_error("job description: %s", why);
        return -1;
    }
    P.first = (int)j.first;
    P.count = (int)j.count;
    const char *s = j.strs;
    for (uint64_t i = 0; i < (uint64_t)j.nenv + 1 + j.nargs; s += strlen(s) + 1, i++) {
        if (i < j.nenv) {
            if (strv_add(env, s) < 0)
                return -1;
            if (!strncmp(s, KN_ENV_JOBID, strlen(KN_ENV_JOBID)) && s[strlen(KN_ENV_JOBID)] == '=')
                P.jobid = s + strlen(KN_ENV_JOBID) + 1;
            if (!strncmp(s, KN_ENV_HOSTNAME, strlen(KN_ENV_HOSTNAME)) &&
                s[strlen(KN_ENV_HOSTNAME)] == '=') {
                P.host = s + strlen(KN_ENV_HOSTNAME) + 1;
                kn_log_set_prefix("proxy %s", P.host);
            }
        } else if (i == j.nenv) {
            *cwd = (char *)s;
        } else if (strv_add(argv, s) < 0) {
            return -1;
        }
    }
    return P.jobid ? 0 : -1;
}

int proxy_main(void)
{
    kn_log_set_prefix("proxy");
    char line[8192];
    const char *cookie, *addrs;
    int node;
    if (read_line(line, sizeof(line)) < 0 ||
        kn_boot_launch_line_decode(line, &cookie, &node, &addrs) != KNIT_OK) {
        kn_error("no valid job line on stdin (this mode is started by knitrun only)");
        return 1;
    }
    P.node = node;
    P.host = "?";
    kn_boot_t *b;
    if (kn_boot_connect(addrs, cookie, KN_BOOT_ROLE_PROXY, node, &b) != KNIT_OK)
        return 1;
    int fd = kn_boot_release_fd(b);
    kn_boot_hdr_t h;
    uint8_t *job = NULL;
    strv_t env = {0}, argv = {0};
    char *cwd = NULL;
    int rc = 1;
    uint64_t deadline = kn_cfg.boot_timeout ? kn_time_ns() + kn_cfg.boot_timeout : 0;
    if (kn_boot_recv(fd, &h, &job, deadline) != KNIT_OK || h.type != KN_BOOT_JOB ||
        parse_job(job, h.len, &env, &cwd, &argv) < 0) {
        kn_error("no valid job description from knitrun");
        close(fd);
        goto out;
    }
    if (kl_init() < 0 || kl_signals_init(on_signal) < 0 || kp_init() < 0 ||
        kl_timer_init(&P.give_up, give_up) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
        close(fd);
        goto out;
    }
    if (!(P.conn = kc_new(fd, "knitrun", on_msg, on_close)))
        goto out;
    shm_clean_stale();
    P.ranks = calloc((size_t)P.count, sizeof(*P.ranks));
    if (!P.ranks)
        goto out;
    /* the job's KNIT_* settings (knitrun passed them) */
    struct kn_config cfg = kn_cfg;
    int cfg_ok = 1;
    for (size_t i = 0; i < env.n; i++)
        if (kn_config_apply(&cfg, env.v[i]) != KNIT_OK)
            cfg_ok = 0;
    if (check_shm(&cfg, cfg_ok, cfg.offload) < 0 || place(&cfg, &env, cfg.offload) < 0)
        P.ending = 1; /* nothing runs; knitrun ends the job and closes the connection */
    else if (cfg.offload)
        start_daemons(node, &env, &cfg);
    for (int i = 0; i < P.count && !P.ending; i++) {
        kproc_t *p = &P.ranks[i];
        p->on_output = rank_output;
        p->on_exit = rank_exit;
        p->cpus = kb_rank_cpus(&P.bind, i);
        if (kp_spawn_rank(p, P.first + i, i, argv.v, env.v, cwd) < 0) {
            /* report it as failed so that knitrun ends the job */
            p->id = P.first + i;
            rank_exit(p, 127 << 8);
        }
    }
    while (!P.done) {
        if (kl_run_once() < 0)
            break;
        if (P.ending && !kp_reap())
            P.done = 1;
        else if (P.ending)
            kp_signal_orphans(SIGKILL);
    }
    kill_all(SIGKILL);
    rc = 0;
out:
    if (P.jobid)
        shm_clean_job(P.jobid);
    kb_free(&P.bind);
    free(P.ranks);
    free(job);
    strv_free(&env);
    strv_free(&argv);
    return rc;
}
