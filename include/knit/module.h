/*
 * knit module ABI: the only header a knit module includes.
 *
 * A module is a shared object (cc -shared -fPIC) that exports one symbol,
 * KNIT_MOD_SYMBOL, a function returning a const descriptor:
 *
 *     static const knit_mod_descriptor_t desc = {
 *         .abi_version = KNIT_MOD_ABI_VERSION, .size = sizeof(desc),
 *         .name = "echo", .init = my_init, .on_request = my_request,
 *     };
 *     KNIT_MODULE(desc)
 *
 * knit_module_load() ships the file's bytes to every agent (one per node)
 * and to the switch (one per job); each of them dlopen()s its own copy and
 * creates one *instance* (a knit_mod_ctx_t) with its own state.  Requests
 * from ranks (knit_module_request) run on_request in the rank's node's
 * agent (KNIT_MODULE_AGENT) or in the switch (KNIT_MODULE_SWITCH);
 * instances talk to each other with send/multicast, which run on_message
 * at the receiver.  At host placement (KNIT_MODULE_HOST) the same .so runs
 * inside the calling rank, which emulates every agent and the switch with
 * the same services (docs/modules.md: debugging with gdb).
 *
 * Rules: the handlers of an instance run one at a time, and must not
 * block (use timers and messages); keep state in memory from alloc() (not
 * in global variables: at host placement several instances share one
 * process); a handler that faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL),
 * exits, aborts or runs past KNIT_MODULE_BUDGET disables its module only.
 * By default every instance runs in a process of its own under a system-
 * call filter (KNIT_MODULE_ISOLATION, docs/modules.md section 6): no
 * threads, no exec, no sockets, files read-only.
 * Every struct here is fixed width on LP64 and starts with its size or
 * version so that later versions can grow it.
 */
#ifndef KNIT_MODULE_H
#define KNIT_MODULE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2 adds the tree of switches (geometry.nswitches, the place service)
 * and header handlers (on_header, the send_hdr service); modules built
 * for 1 load and run unchanged. */
#define KNIT_MOD_ABI_VERSION 2u
#define KNIT_MOD_ABI_OLDEST 1u
#define KNIT_MOD_SYMBOL "knit_module"
#define KNIT_MOD_NAME_MAX 32     /* name: 1..31 of [A-Za-z0-9_.-] */
#define KNIT_MOD_HDR_MAX 4096    /* a send_hdr header, at most */

/* Instance addresses for send(): agent n is n (0..nnodes-1); switch s
 * (0..nswitches-1) is KNIT_MOD_SWITCH_AT(s).  Switch 0 is the root:
 * KNIT_MOD_SWITCH, the only switch of a job of at most KNIT_SWITCH_FANIN
 * nodes.  Past that knitrun starts a tree of switches, fan-in K: the
 * switches of the lowest level each take K agents, the next level's K of
 * those, up to the root (the place service describes it). */
#define KNIT_MOD_SWITCH (-1)
#define KNIT_MOD_SWITCH_AT(s) (-1 - (int32_t)(s))
#define KNIT_MOD_NONE INT32_MIN  /* the root's parent */

/* Status values (the same numbers as knit.h's KNIT_OK / KNIT_ERR_*). */
#define KNIT_MOD_OK 0
#define KNIT_MOD_ERR_INVAL (-1)
#define KNIT_MOD_ERR_NOMEM (-2)
#define KNIT_MOD_ERR_IO (-3)
#define KNIT_MOD_ERR_TRUNCATE (-5)
#define KNIT_MOD_ERR_PEER (-6)
#define KNIT_MOD_ERR_NOT_SUPPORTED (-8)
#define KNIT_MOD_ERR_NOT_FOUND (-10)
#define KNIT_MOD_ERR_AGAIN (-12)
#define KNIT_MOD_ERR_RANGE (-15)
#define KNIT_MOD_ERR_STATE (-16)

/* Where an instance runs (geometry.placement / geometry.self_kind). */
#define KNIT_MOD_AT_AGENT 1
#define KNIT_MOD_AT_SWITCH 2
#define KNIT_MOD_AT_HOST 3

/* Log levels for log(). */
#define KNIT_MOD_LOG_ERROR 0
#define KNIT_MOD_LOG_WARN 1
#define KNIT_MOD_LOG_INFO 2
#define KNIT_MOD_LOG_DEBUG 3

typedef struct knit_mod_ctx knit_mod_ctx_t;   /* one instance (opaque) */

/* The job as an instance sees it. */
typedef struct knit_mod_geometry {
    uint32_t size;           /* sizeof(knit_mod_geometry_t) */
    uint32_t module_id;      /* the same in every instance of one load */
    int32_t nranks, nnodes;
    int32_t self;            /* this instance: its node, or its switch address (KNIT_MOD_SWITCH_AT) */
    int32_t self_kind;       /* KNIT_MOD_AT_AGENT or KNIT_MOD_AT_SWITCH */
    int32_t placement;       /* where on_request runs: KNIT_MOD_AT_AGENT, _SWITCH, _HOST */
    int32_t first_local;     /* this agent's node: ranks first_local .. */
    int32_t local_size;      /* .. first_local + local_size - 1 (0 at the switch) */
    int32_t emulated;        /* 1 at host placement (the wrapper) */
    int32_t nswitches;       /* ABI 2: switches of the job (1: a star) */
    int32_t fanin;           /* ABI 2: the tree's fan-in (KNIT_SWITCH_FANIN) */
    uint32_t reserved[4];
} knit_mod_geometry_t;

/* ABI 2: an instance's place in the tree (the place service).  Every
 * instance covers a contiguous range of nodes; children in order cover
 * it in order. */
typedef struct knit_mod_place {
    uint32_t size;           /* sizeof(knit_mod_place_t) */
    int32_t addr;            /* the instance described */
    int32_t parent;          /* its switch; KNIT_MOD_NONE at the root */
    int32_t level;           /* 0: agents; 1: the switches above them; ... */
    int32_t first_node;      /* nodes first_node .. first_node + nnodes - 1 */
    int32_t nnodes;          /* are below it (an agent: its own node) */
    int32_t nchildren;       /* 0 for an agent */
    int32_t first_child;     /* child i is first_child + i * child_step */
    int32_t child_step;      /* +1 (agents) or -1 (switches) */
    int32_t reserved[7];
} knit_mod_place_t;

/* ABI 2: what the daemon does with a message whose header on_header saw
 * (at most KNIT_MOD_ROUTE_MAX instances to stream it on to). */
#define KNIT_MOD_ROUTE_MAX 256
typedef struct knit_mod_route {
    uint32_t size;           /* sizeof(knit_mod_route_t) */
    int32_t take;            /* 1: on_message gets the whole message here too, once it is in */
    int32_t ndest;           /* dest[0 .. ndest-1]: instances it streams on to (0: none) */
    int32_t reserved;
    int32_t dest[KNIT_MOD_ROUTE_MAX];
} knit_mod_route_t;

/* A request from a rank (valid during on_request; keep the token). */
typedef struct knit_mod_request {
    uint64_t token;          /* for complete(); unique while the request is open */
    int32_t rank;            /* job rank that asked */
    int32_t node;            /* its node (its agent) */
    uint64_t len;            /* bytes of args */
    uint64_t reserved[2];
} knit_mod_request_t;

/*
 * Services, passed to init (the same table for every instance of a
 * process: keep the pointer in a static).  Every call names the calling
 * instance; calls returning int32_t return KNIT_MOD_OK or KNIT_MOD_ERR_*.
 * Bytes passed in are copied before the call returns.
 */
typedef struct knit_mod_services {
    uint32_t abi_version;    /* KNIT_MOD_ABI_VERSION */
    uint32_t size;           /* sizeof(knit_mod_services_t) */
    const knit_mod_geometry_t *(*geometry)(knit_mod_ctx_t *m);
    /* message to another instance of this module: agent n (0..nnodes-1)
     * or a switch (KNIT_MOD_SWITCH: the root); on_message runs there (in
     * order per sender).
     * Sending to oneself works too (runs later, not inside this call). */
    int32_t (*send)(knit_mod_ctx_t *m, int32_t dest, const void *msg, uint64_t len);
    /* switch only: send to every agent below it (the root: every agent) */
    int32_t (*multicast)(knit_mod_ctx_t *m, const void *msg, uint64_t len);
    /* agent only: the DMA engine, into / out of the memory of a rank of
     * this node (cross-memory attach); counted as host<->agent traffic */
    int32_t (*read_rank)(knit_mod_ctx_t *m, int32_t rank, void *dst, uint64_t addr, uint64_t len);
    int32_t (*write_rank)(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, const void *src,
                          uint64_t len);
    /* agent only: write data into the oldest buffer the rank posted with
     * knit_module_post_recv for this module and tell it (NOT_FOUND: none
     * posted; TRUNCATE: the buffer is shorter, the first bytes are there) */
    int32_t (*deliver)(knit_mod_ctx_t *m, int32_t rank, const void *data, uint64_t len);
    /* end a request: status (KNIT_MOD_OK or an error) and result bytes go
     * back to the rank's knit_request_wait.  Once per token. */
    int32_t (*complete)(knit_mod_ctx_t *m, uint64_t token, int32_t status, const void *result,
                        uint64_t len);
    /* on_timer(cookie) once, delay_ns from now */
    int32_t (*timer)(knit_mod_ctx_t *m, uint64_t delay_ns, uint64_t cookie);
    /* zeroed scratch memory of this instance (freed at unload at the latest) */
    void *(*alloc)(knit_mod_ctx_t *m, uint64_t size);
    void (*free)(knit_mod_ctx_t *m, void *p);
    /* one pointer of instance state */
    void (*set_state)(knit_mod_ctx_t *m, void *state);
    void *(*state)(knit_mod_ctx_t *m);
    void (*log)(knit_mod_ctx_t *m, int32_t level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    uint64_t (*now_ns)(knit_mod_ctx_t *m);   /* monotonic clock */
    /* ABI 2: the place of instance addr (this one: geometry(m)->self) in
     * the tree of switches; KNIT_MOD_ERR_RANGE where there is none */
    int32_t (*place)(knit_mod_ctx_t *m, int32_t addr, knit_mod_place_t *p);
    /* ABI 2: a message of a header (hlen bytes, at most KNIT_MOD_HDR_MAX)
     * and a payload: where the receiver has on_header, it sees the header
     * first and routes the message (on_header); elsewhere on_message gets
     * both together, as from send() */
    int32_t (*send_hdr)(knit_mod_ctx_t *m, int32_t dest, const void *hdr, uint64_t hlen, const void *payload,
                        uint64_t plen);
    /* agent only, in the daemon's process (modules loaded in their own
     * process get NULL, as do agents before it came): the rank's memory at
     * [addr, addr + len) as this process maps it, where it lies in the
     * rank's shared heap (which the rank's node peers map too: what they
     * change there with atomic instructions must be changed so here);
     * NULL elsewhere (read_rank / write_rank reach it) */
    void *(*map_rank)(knit_mod_ctx_t *m, int32_t rank, uint64_t addr, uint64_t len);
    void *reserved[5];
} knit_mod_services_t;

typedef struct knit_mod_descriptor {
    uint32_t abi_version;    /* KNIT_MOD_ABI_VERSION */
    uint32_t size;           /* sizeof(knit_mod_descriptor_t) */
    const char *name;
    /* once per instance; nonzero refuses the load (the status is reported) */
    int32_t (*init)(knit_mod_ctx_t *m, const knit_mod_services_t *svc);
    void (*fini)(knit_mod_ctx_t *m);   /* may be NULL */
    /* a rank's request (where requests are served); args valid during the call */
    void (*on_request)(knit_mod_ctx_t *m, const knit_mod_request_t *req, const void *args);
    /* a message from instance `from` (a node, or KNIT_MOD_SWITCH); may be NULL */
    void (*on_message)(knit_mod_ctx_t *m, int32_t from, const void *msg, uint64_t len);
    void (*on_timer)(knit_mod_ctx_t *m, uint64_t cookie);   /* may be NULL */
    /* ABI 2, may be NULL: a message sent with send_hdr arrived here, its
     * header (hdr, hlen bytes) in and its payload (plen bytes) still on
     * the way: fill route (zeroed: neither taken nor forwarded) with the
     * instances the daemon is to stream the whole message on to, as its
     * bytes arrive (the module copies nothing; on_header runs there
     * again), and whether on_message is to get it here too.  Nonzero:
     * the message is dropped.  On the daemon's thread (built-ins,
     * KNIT_MODULE_ISOLATION=inprocess) the daemon streams; a module in a
     * process of its own sees the header with the whole message in, and
     * its copies go on once it has decided. */
    int32_t (*on_header)(knit_mod_ctx_t *m, int32_t from, const void *hdr, uint64_t hlen, uint64_t plen,
                         knit_mod_route_t *route);
    void *reserved[3];
} knit_mod_descriptor_t;

typedef const knit_mod_descriptor_t *(*knit_mod_entry_fn)(void);

/* Export the descriptor under KNIT_MOD_SYMBOL. */
#define KNIT_MODULE(desc)                                                     \
    __attribute__((visibility("default"))) const knit_mod_descriptor_t *knit_module(void); \
    const knit_mod_descriptor_t *knit_module(void) { return &(desc); }

#ifdef __cplusplus
}
#endif
#endif /* KNIT_MODULE_H */
