/*
 * The daemons' common core (knit-agent and knit-switch): job geometry,
 * the libfabric mesh between daemons, module instances with their
 * services, fault protection and time budget, timers, and the epoll loop.
 * The agent adds the command queue through kn_d_hooks_t.
 *
 * Ids in the daemons' own network id space: agents are 0..nnodes-1 (their
 * node), switch s is nnodes + s (offload/tree.h; the root, s = 0, is
 * nnodes).  Agents reach every daemon; the switch
 * reaches every agent (a star plus a full mesh of agents).
 */
#ifndef KN_OFFLOAD_DAEMON_H
#define KN_OFFLOAD_DAEMON_H

#include <stdint.h>

#include "offload/offload.h"
#include "util/list.h"

typedef struct knit_mod_ctx kn_inst_t;

/* An open request at this daemon. */
typedef struct kn_dreq {
    kn_list_t link;          /* in its instance's open list */
    uint64_t token;
    kn_inst_t *inst;
    int origin;              /* -1: a rank of this agent's node; else the forwarding agent */
    int slot;                /* local rank index (origin -1) */
    int32_t rank;
    uint64_t rank_id;        /* the rank's operation id (origin -1) */
    uint64_t origin_token;   /* the forwarding agent's token */
    int held;                /* a big result waits for FETCH */
    int mslot;               /* its module's traffic slot (while held) */
    void *result;
    uint64_t rlen;
} kn_dreq_t;

typedef struct kn_d_hooks {
    int (*poll)(void);             /* drain the queues: how much was done */
    int (*want_sleep)(void);       /* announce sleep; 0: work came in, stay awake */
    void (*woke)(void);
    /* a request of a local rank ended (r is freed after the call unless
     * the hook sets r->held and takes the result) */
    void (*complete)(kn_dreq_t *r, int32_t status, const void *res, uint64_t len);
    void (*loaded)(uint64_t seq, int32_t status, uint32_t id, const char *msg);
    void (*unloaded)(uint32_t id);
    int32_t (*read_rank)(kn_inst_t *in, int32_t rank, void *dst, uint64_t addr, uint64_t len);
    int32_t (*write_rank)(kn_inst_t *in, int32_t rank, uint64_t addr, const void *src,
                          uint64_t len);
    int32_t (*deliver)(kn_inst_t *in, int32_t rank, const void *data, uint64_t len);
    void *(*map_rank)(kn_inst_t *in, int32_t rank, uint64_t addr, uint64_t len); /* may be NULL */
    void (*at_exit)(void);
} kn_d_hooks_t;

/* The geometry of the job as the daemons know it. */
typedef struct kn_d_geo {
    int is_switch;
    int self;                /* node, or nnodes + s for switch s */
    int nnodes, nranks;
    int first_local, local_size; /* agent */
    const int *node_first;   /* [nnodes + 1] */
    const char *jobid;
    const char *cookie;
} kn_d_geo_t;

/* Start: config, geometry from the environment, bootstrap store, epoll,
 * signals, protection.  Then the agent sets up its queue and calls
 * kn_d_publish / kn_d_net_start; kn_d_run runs until SIGTERM. */
knit_status_t kn_d_start(int is_switch, const kn_d_hooks_t *hooks);
const kn_d_geo_t *kn_d_geo(void);
knit_status_t kn_d_put(const char *key, const void *val, size_t len);
/* Bring the daemons' network up (in a thread; idempotent).  The switch
 * calls it at start and waits, without cost, for the first agent that
 * does; an agent calls it when one of its ranks first loads a module. */
knit_status_t kn_d_net_start(void);
/* Watch an fd (EPOLLIN) in the loop. */
int kn_d_watch(int fd, void (*fn)(int fd, uint32_t events, void *arg), void *arg);
void kn_d_unwatch(int fd);
int kn_d_run(void);

/* For the agent's queue server. */
kn_inst_t *kn_d_inst(uint32_t id);
const char *kn_d_inst_name(kn_inst_t *in);
int kn_d_inst_slot(kn_inst_t *in);
int kn_d_inst_placement(kn_inst_t *in);
/* A request of local rank (slot, rank): dispatch, forward or fail. */
void kn_d_request(uint32_t mod, int slot, int32_t rank, uint64_t rank_id, const void *args,
                  uint64_t len);
/* The compiled-in null handler (benchmark baseline): completes at once. */
void kn_d_request_builtin(int slot, int32_t rank, uint64_t rank_id);
/* Rank 0's load (agent 0): ship, load everywhere, report to every agent. */
void kn_d_load(uint64_t seq, int where, const char *name, void *bytes, uint64_t len);
/* A local rank unloads (or is gone: all its modules). */
void kn_d_unload(uint32_t id, int slot);
void kn_d_rank_gone(int slot);
/* The held big result of token (NULL when none). */
kn_dreq_t *kn_d_held(uint64_t token);
void kn_d_release(kn_dreq_t *r);
/* Counters for KN_SQ_INFO and the leak tests. */
void kn_d_info(uint64_t out[8]);

/* For the interceptions in the daemons' executables (agent/intercept.c):
 * does module code run in this process now (a handler, or a module's
 * constructors)?  And module code called how (exit, _exit, _Exit: code;
 * abort: -1): a handler's call ends as a fault of its module and this
 * does not return; outside module code it returns at once. */
int kn_d_in_module(void);
void kn_d_module_ends(const char *how, int code);

#endif
