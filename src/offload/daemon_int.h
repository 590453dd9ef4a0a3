/*
 * Inside the daemons' common core: what daemon.c (the wire between
 * daemons, loading and unloading, dispatch, the loop, start-up), inst.c
 * (instances, requests, services, in-process protection) and sandbox.c
 * (instances in a process of their own) share.  Not for the agent or the
 * switch: they see daemon.h.
 */
#ifndef KN_OFFLOAD_DAEMON_INT_H
#define KN_OFFLOAD_DAEMON_INT_H

#include <pthread.h>
#include <time.h>

#include "boot/boot.h"
#include "offload/daemon.h"
#include "offload/wire.h"
#include "tl/tl.h"
#include "util/list.h"

#define KN_INST_TAB 256

/* A module handler out this many budgets on the wall (KNIT_MODULE_BUDGET
 * counts processor time) is stopped, running or not: it sleeps or waits
 * (both isolations: inst.c, sandbox.c). */
#define KN_D_WAIT_BUDGETS 10

/* Isolation of module instances (KNIT_MODULE_ISOLATION). */
enum { KN_ISO_PROCESS = 0, KN_ISO_INPROCESS = 1 };

#include "offload/sandbox.h"
#include "offload/tree.h"

struct knit_mod_ctx {
    uint32_t id;
    int placement;
    int faulted;
    char name[KNIT_MOD_NAME_MAX];
    char fault[KN_OFF_ERR_MAX];
    unsigned has;              /* KN_SBX_HAS_*: its optional handlers */
    kn_sbx_t *sbx;             /* its process (isolation process), else NULL */
    kn_mod_lib_t lib;          /* in-process: the loaded object ... */
    const knit_mod_descriptor_t *desc; /* ... and its descriptor */
    knit_mod_geometry_t geo;
    void *state;
    kn_mod_mem_t mem;          /* its alloc() service (in-process) */
    kn_list_t reqs;
    unsigned char *unloaded;   /* agent: [local_size]; */
    int nunloaded;             /* agent: local ranks; switch: agents */
    int unload_sent;           /* agent: told the switch that its ranks are done */
    int dead;                  /* being destroyed */
    int loading;               /* its process is starting: the load's verdict is due */
    uint64_t load_seq;         /* the load it belongs to */
};

typedef struct dtimer {
    kn_list_t link;
    uint64_t due, cookie;
    kn_inst_t *inst;
} dtimer_t;

typedef struct outmsg {
    kn_list_t link;
    kn_wire_t w;
    char *data;
    uint64_t len, sent;
    uint64_t avail;            /* bytes of data in (a message streamed on: fewer than len) */
    int started;
    /* sent by its descriptor (bulk.c): held until the receiver read it */
    uint64_t bulk_id, rkey;
    void *memh;
    int bulk_dest;
} outmsg_t;

/* Bulk messages coming in from one sender (bulk.c): what waits for a read
 * of the sender's memory, and the packets that came after it. */
typedef struct kn_bulk_rx {
    kn_list_t q;
    int draining;
} kn_bulk_rx_t;

/* A message from one sender that a header handler routed (stream.c):
 * where its fragments go as they arrive. */
typedef struct kn_stream {
    int active, take;
    uint64_t total, got;
    int ndest;
    outmsg_t **out;            /* [ndest]: each destination's copy, filling */
    int *dest;                 /* [ndest]: daemon ids */
} kn_stream_t;

typedef struct selfmsg {
    kn_list_t link;
    kn_inst_t *inst;
    uint32_t id;
    int32_t from;
    uint64_t len;
    char data[];
} selfmsg_t;

typedef struct watch {
    int fd;
    void (*fn)(int fd, uint32_t events, void *arg);
    void *arg;
} watch_t;

struct kn_daemon {
    kn_d_geo_t g;
    int *node_first;
    const kn_d_hooks_t *hooks;
    kn_boot_t *boot;
    kn_tl_t *tl;
    int nids;                  /* nnodes + the switches */
    kn_tree_t tree;            /* the switches (tree.h) */
    uint64_t auth;
    int epfd, sigfd;
    int stop;
    uint64_t budget, spin;
    int crowded;               /* the host's ranks and this daemon outnumber its cpus */
    int isolation;             /* KN_ISO_* */
    int host_procs;            /* ranks on this host (KNIT_HOST_PROCS), 0: unknown */
    kn_inst_t *inst[KN_INST_TAB];
    int ninst;
    kn_list_t timers;
    kn_list_t selfq;
    kn_list_t *out;            /* [nids] backlog */
    int backlog;
    kn_wire_reasm_t *rx;       /* [nids] */
    kn_stream_t *streams;      /* [nids]: routed messages coming in (stream.c) */
    kn_bulk_rx_t *bulk_rx;     /* [nids]: bulk messages coming in (bulk.c) */
    kn_list_t bulk_out;        /* bulk messages sent, not yet read */
    uint64_t bulk_ids;
    watch_t watches[1024];     /* rank sockets, doorbells, signals, the network, module processes */
    int nwatches;
    /* requests */
    kn_dreq_t **reqs;
    uint32_t *req_gen;
    uint32_t nreqs, reqs_cap;
    uint32_t *req_free;
    uint32_t nfree;
    uint32_t open_reqs;
    kn_dreq_t *spare;          /* free records, linked through ->result */
    unsigned nspare;
    /* load coordination (agent 0) */
    struct {
        int busy;
        uint64_t seq;
        uint32_t id;
        int acks;
        int32_t status;
        char msg[KN_OFF_ERR_MAX];
    } L;
    uint32_t next_id;
    /* budget timer (in-process instances) */
    timer_t btimer;
    int btimer_ok, btimer_armed;
    /* the network comes up in a thread, so that it never delays the job */
    pthread_t net_thread;
    int net_started, net_ready_fd, net_fd;
    kn_tl_t *net_tl;         /* set by the thread */
    knit_status_t net_status;
    uint64_t alloc_bytes;
};

extern struct kn_daemon kn_dmn;

/* daemon.c */
void kn_d_send_msg(int dest, int type, uint32_t mod, uint64_t a, uint64_t b, const void *p1, uint64_t l1,
                   const void *p2, uint64_t l2);
/* Queue a message to daemon dest behind those already waiting (sent at
 * once where none is); kick: send what dest's queue can now. */
void kn_d_out_queue(int dest, outmsg_t *o);
void kn_d_out_kick(int dest);
/* A checked packet from daemon src, in its turn (w: its wire header); a
 * whole message from src. */
void kn_d_packet(int src, const kn_wire_t *w, const void *payload, size_t len);
void kn_d_message(int src, const kn_wire_t *w, const char *p, uint64_t len);

/* bulk.c: messages of KNIT_AGENT_BULK bytes and more, read by their
 * receiver from the sender's memory.  send: -1 where o goes in fragments
 * instead, 0 when the transport has no room now (nothing sent), 2 when
 * its descriptor went (o is held: kn_d_bulk_hold).  take: 1 where the
 * packet (checked) is a descriptor, or must wait behind one still being
 * read; 0: the caller handles it now.  freed: src read the message id. */
int kn_d_bulk_send(int dest, outmsg_t *o);
void kn_d_bulk_hold(outmsg_t *o);
int kn_d_bulk_take(int src, const kn_wire_t *w, const void *payload, size_t len);
void kn_d_bulk_freed(int src, uint64_t id);
/* The verdict of this daemon's part of a load (status, and why not). */
void kn_d_load_verdict(kn_inst_t *in, int32_t status, const char *msg);
/* Instance id is gone after an unload (its fini has run). */
void kn_d_inst_gone(uint32_t id);

/* inst.c: protection of in-process instances */
int kn_d_protection_init(void);
void kn_d_budget_timer(int on);
/* This daemon: "agent 3", "switch" (the only one), "switch 2"; self_name
 * puts "the" before a lone switch ("... at the switch"). */
const char *kn_d_name(char *buf, size_t len);
const char *kn_d_self_name(char *buf, size_t len);
const char *kn_d_sig_text(int sig, void *addr, char *buf, size_t len);

/* inst.c: requests */
kn_dreq_t *kn_d_req_new(kn_inst_t *in);
kn_dreq_t *kn_d_req_find(uint64_t token);
void kn_d_req_finish(kn_dreq_t *r, int32_t status, const void *res, uint64_t len);

/* inst.c: instances.  Load: KNIT_OK or an error (msg says why, the
 * instance is gone), or KNIT_INPROGRESS: its process is starting, and
 * kn_d_load_verdict follows. */
int32_t kn_d_inst_load(uint32_t id, uint64_t seq, int where, const char *name, const void *bytes,
                       uint64_t len, char *msg, size_t mlen);
/* KNIT_INPROGRESS: its process runs fini and ends later (kn_d_inst_gone
 * then); KNIT_OK: gone now. */
int kn_d_inst_destroy(kn_inst_t *in, int call_fini);
/* Disable after a fault: open requests fail with msg; tell: the other daemons too. */
void kn_d_inst_disable(kn_inst_t *in, const char *msg, int tell);
/* Calls into an instance. */
void kn_d_inst_request(kn_dreq_t *r, const void *args, uint64_t len);
/* hlen: a send_hdr message's header, for a module process's on_header
 * (in-process instances were routed already: stream.c) */
void kn_d_inst_message(kn_inst_t *in, int32_t from, const void *p, uint64_t len, uint64_t hlen);
/* Self messages and timers that are due: how many ran. */
int kn_d_run_timers(void);

/* on_header (ABI 2) of an in-process instance: 0 where it has none (or
 * runs in a module process); else 1, with its status in *st
 * (KNIT_ERR_MODULE_FAULT when it faulted, KNIT_ERR_RANGE for a route to
 * no instance of the job or to this one) and its route. */
int kn_d_inst_header(kn_inst_t *in, int32_t from, const void *hdr, uint64_t hlen, uint64_t plen,
                     knit_mod_route_t *route, int32_t *st);

/* stream.c: messages of a header and a payload (send_hdr, w->b = the
 * header's length).  A fragment from src: 0 where no header handler
 * routes its message (the usual path), 1 where it was routed and not
 * taken here (consumed), 2 where it was routed and taken (the whole goes
 * to on_message).  route_whole: the same for a whole message whose header
 * did not fit its first fragment; 1 when routed (and taken if so). */
int kn_d_stream_fragment(int src, const kn_wire_t *w, const char *p, uint64_t n);
int kn_d_route_whole(kn_inst_t *in, int32_t from, const kn_wire_t *w, const char *p, uint64_t len);

/* inst.c: services, shared by both isolations (KNIT_OK or KNIT_ERR_*) */
int32_t kn_d_svc_send(kn_inst_t *m, int32_t dest, const void *msg, uint64_t len);
int32_t kn_d_svc_send_hdr(kn_inst_t *m, int32_t dest, const void *hdr, uint64_t hlen, const void *payload,
                          uint64_t plen);
int32_t kn_d_svc_multicast(kn_inst_t *m, const void *msg, uint64_t len);
int32_t kn_d_svc_complete(kn_inst_t *m, uint64_t token, int32_t status, const void *res, uint64_t len);

#endif
