/*
 * knitrun internals.  One single-threaded epoll loop (loop.c) serves the
 * bootstrap store (store.c), the processes of the job with their stdio
 * pipes (procs.c, output.c), signals and timers; job.c decides what
 * happens when something ends.  The same binary is the per-host proxy
 * (proxy.c, hidden option --proxy), which shares loop, conn and procs.
 */
#ifndef KNITRUN_H
#define KNITRUN_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "boot/proto.h"
#include "util/list.h"

#define KNITRUN_EXIT_USAGE 2
#define KNITRUN_EXIT_TIMEOUT 124

/* ---------------------------------------------------------------- loop.c */
typedef struct kl_watch kl_watch_t;
struct kl_watch {
    int fd;
    void (*fn)(kl_watch_t *w, uint32_t events);
};

int kl_init(void);
int kl_add(kl_watch_t *w, uint32_t events);
int kl_mod(kl_watch_t *w, uint32_t events);
void kl_del(kl_watch_t *w);
/* Wait for one event and dispatch it.  0, or -1 on a fatal error. */
int kl_run_once(void);

typedef struct kl_timer kl_timer_t;
struct kl_timer {
    kl_watch_t w;
    void (*fn)(kl_timer_t *t);
};
int kl_timer_init(kl_timer_t *t, void (*fn)(kl_timer_t *t));
/* Fire once after ns nanoseconds (0: disarm). */
int kl_timer_arm(kl_timer_t *t, uint64_t ns);

/* Route SIGCHLD, SIGINT, SIGTERM, SIGHUP to fn through a signalfd (they are
 * blocked), ignore SIGPIPE. */
int kl_signals_init(void (*fn)(int signo));
/* In a forked child, before exec: unblock and reset to default dispositions. */
void kl_signals_child_reset(void);

/* ---------------------------------------------------------------- conn.c */
/* A framed, nonblocking bootstrap-protocol connection. */
typedef struct kconn kconn_t;
struct kconn {
    kl_watch_t w;
    uint8_t *in;
    size_t in_off, in_len, in_cap;
    uint8_t *out;
    size_t out_off, out_len, out_cap;
    /* A whole, header-checked message.  Returns 0 to go on, -1 to have the
     * connection closed (without on_close).  Must not free the conn. */
    int (*on_msg)(kconn_t *c, const kn_boot_hdr_t *h, const uint8_t *payload);
    /* The connection ended by itself (EOF, error, malformed header). */
    void (*on_close)(kconn_t *c, const char *why);
    char peer[96];
    int role, id;        /* after HELLO (store side) */
    char *pending_key;   /* a GET waiting for its key (store side) */
    int dead;
    kn_list_t link;
};

kconn_t *kc_new(int fd, const char *peer,
                int (*on_msg)(kconn_t *, const kn_boot_hdr_t *, const uint8_t *),
                void (*on_close)(kconn_t *, const char *));
/* Queue one message; -1 when the connection is dead or out of memory. */
int kc_send(kconn_t *c, unsigned type, const void *a, size_t alen, const void *b, size_t blen);
/* Close now (queued bytes are written first as far as the socket takes
 * them); the memory is freed later by the loop, so callers up the stack
 * may still look at c->dead. */
void kc_close(kconn_t *c);
void kc_reap_dead(void);

/* ---------------------------------------------------------------- procs.c */
typedef struct kproc kproc_t;
struct kp_pipe {
    kl_watch_t w;    /* w.fd: read end, -1 when closed */
    kproc_t *p;
    int stream;      /* 1 stdout, 2 stderr */
};
struct kproc {
    pid_t pid;       /* 0 once reaped */
    pid_t pgid;
    int id;          /* rank, or node for a launcher */
    struct kp_pipe out[2];
    const cpu_set_t *cpus; /* bind to these before exec (NULL: inherit ours) */
    void (*on_output)(kproc_t *p, int stream, const char *buf, size_t n);
    void (*on_exit)(kproc_t *p, int wstatus);
    kn_list_t link;
};

/* Become a child subreaper, so orphans of the job become our children. */
int kp_init(void);
/* Start argv in its own process group with env (NULL-terminated "K=V"
 * strings) added to ours, stdin from stdin_fd (-1: /dev/null), in cwd
 * (NULL: ours).  The child dies with us (PR_SET_PDEATHSIG).  0 or -1. */
int kp_spawn(kproc_t *p, char *const argv[], char *const env[], const char *cwd, int stdin_fd);
/* Start one rank: env plus KNIT_RANK and KNIT_LOCAL_RANK. */
int kp_spawn_rank(kproc_t *p, int rank, int local_rank, char *const argv[], char *const env[],
                  const char *cwd);
/* Reap every child that ended (on SIGCHLD): a tracked one gets its output
 * drained and on_exit called.  Returns 1 while any child is left. */
int kp_reap(void);
/* Where p is ending (killed, or inside exit) but not yet reaped: waits for
 * it (at most 200 ms) and reaps it, calling its on_exit.  1 if it did. */
int kp_reap_ending(kproc_t *p);
/* Signal the process group of p if p has not been reaped. */
void kp_signal(kproc_t *p, int sig);
/* Signal our children that are not tracked (adopted orphans). */
void kp_signal_orphans(int sig);
/* Read what is left in p's pipes and close them. */
void kp_close_output(kproc_t *p);

/* ---------------------------------------------------------------- bind.c */
/* Where a host's ranks and daemons run (KNIT_BIND_TO, KNIT_MAP_BY). */
typedef struct strv strv_t;
typedef struct kb_plan {
    int n;              /* ranks planned */
    cpu_set_t *rank;    /* n sets, NULL when the ranks are not bound */
    char **what;        /* n descriptions: "core 1 (cpu 1)" */
    cpu_set_t daemons;  /* the cpus the ranks leave, else all of ours */
    int host_cpus;      /* every cpu we may use: KNIT_HOST_CPUS */
    char policy[128];   /* "auto: core (2 ranks on this host's 2 cores)" */
    char unbind[256];   /* auto bound the ranks: every cpu of ours, "0-1" */
} kb_plan_t;
/* Plan n ranks taking the host's slots offset.. (0, or after the other
 * proxies of the job on this machine) with cfg's KNIT_BIND_TO and
 * KNIT_MAP_BY.  0, or -1 with a reason in err (an explicit binding this
 * host cannot give; auto never fails). */
struct kn_config;
int kb_plan(kb_plan_t *p, const struct kn_config *cfg, int offset, int n, char *err, size_t errlen);
/* The set rank i of the plan is bound to, NULL when not bound. */
const cpu_set_t *kb_rank_cpus(const kb_plan_t *p, int i);
/* KNIT_REPORT_BINDINGS: a line per rank and one for the daemons, on stderr. */
void kb_report(const kb_plan_t *p, const char *host, int first_rank, int (*node_of)(int rank),
               int daemons_here);
/* KNIT_HOST_CPUS=... (and KNIT_UNBIND_CPUS=...) added to an environment. */
int kb_env(const kb_plan_t *p, strv_t *env);
void kb_free(kb_plan_t *p);
/* The slots the job's proxies on this machine took before us (network
 * namespaces share a machine; separate hosts each start at 0): n are
 * taken, the offset before returned.  Kept in /dev/shm/knit-<jobid>-slots. */
int kb_machine_offset(const char *jobid, int n);

/* ---------------------------------------------------------------- output.c */
typedef struct outbuf {
    char *buf;
    size_t len, cap;
} outbuf_t;

/* Forward data to fd (1 or 2) line by line: only whole lines are written,
 * each in one write and prefixed by tag (may be NULL). */
void out_feed(outbuf_t *o, int fd, const char *tag, const char *data, size_t n);
/* Write out a pending partial line (ended with a newline). */
void out_flush(outbuf_t *o, int fd, const char *tag);
void out_free(outbuf_t *o);

/* ---------------------------------------------------------------- shm.c */
/* "<host>.<pid>.<4 hex>": host is this host's name reduced to [A-Za-z0-9]. */
void shm_make_jobid(char *out, size_t len);
/* Remove /dev/shm/knit-<jobid>-*. */
void shm_clean_job(const char *jobid);
/* Remove /dev/shm/knit-* files of jobs whose knitrun (on this host) is gone. */
void shm_clean_stale(void);

/* ---------------------------------------------------------------- strv */
struct strv {
    char **v;
    size_t n, cap;
};
int strv_add(strv_t *s, const char *str);
int strv_addf(strv_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strv_free(strv_t *s);

/* ---------------------------------------------------------------- job / store */
struct job_opts {
    int np;              /* -1: not given */
    int nodes;           /* --nodes, 0: not given */
    const char *hosts;   /* --hosts */
    const char *hostfile;
    int tag_output;
    int no_offload;      /* --no-offload: no knit-agent / knit-switch */
    double timeout_s;    /* 0: none */
    strv_t exports;      /* "NAME=value" */
    char **argv;         /* program and its arguments */
};

int job_run(struct job_opts *o);   /* returns knitrun's exit status */
int proxy_main(void);
int job_serve(void);  /* --serve: knit's store for a job another launcher started */

/* store.c */
int store_listen(const char *unix_path, int *port);
void store_close(void);
void store_broadcast_signal(int sig); /* SIGNAL to every proxy */
void store_close_proxies(void);
void store_fence_done(kconn_t *c);
const char *store_role_name(int role);

/* job.c, called by store.c */
struct job_rank;
int job_size(void);
int job_running(void);                        /* no failure has stopped the job yet */
int job_nnodes(void);
int job_node_of(int rank);
int job_check_cookie(const char *cookie);
int job_rank_hello(kconn_t *c, int rank);     /* 0 ok, -1 refused */
int job_proxy_hello(kconn_t *c, int node);
int job_daemon_hello(kconn_t *c);
int job_send_job(kconn_t *c);
void job_conn_lost(kconn_t *c);
void job_rank_finalized(int rank);
/* The call that ends a rank's part (KN_BOOT_KEY_FINALIZE_CALL), for the
 * report of a rank that exits without it; a malformed name is ignored. */
void job_rank_finalize_call(int rank, const char *name, size_t len);
void job_abort(kconn_t *c, int code, const char *msg);
void job_rank_output(int rank, int stream, const char *buf, size_t n);
void job_rank_exit(int rank, int how, int value);
int job_proxy_owns(int node, int rank);
int job_fence_enter(int rank);                /* 1 when the fence completed */
void job_fence_release(void);

#endif
