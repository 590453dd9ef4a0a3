/*
 * Offload internals shared by the ranks' side (api.c, host.c), the
 * daemons (daemon.c, agent/, switch/) and the loader (loader.c).
 *
 * Command queue (one shared-memory segment per node,
 * /dev/shm/knit-<jobid>-n<node>-agent, created by the agent):
 *
 *   [kn_off_seg_t header][slot 0][slot 1]...   one slot per local rank
 *   slot: ring controls, traffic counters, KN_OFF_ENTRIES submission
 *         entries (rank -> agent) and as many completion entries.
 *
 * Both rings are single-producer single-consumer with free-running 32-bit
 * head/tail; entries are 256 bytes, fixed width, versioned, and checked on
 * receipt.  A rank never has more than KN_OFF_ENTRIES operations that will
 * produce a completion outstanding, so the completion ring cannot
 * overflow (the agent still checks, and holds completions back if it
 * would).
 *
 * Doorbells.  Each side advertises in shared memory that it is about to
 * sleep (seg->agent_sleeping, slot->rank_sleeping), re-checks its rings,
 * and sleeps on an eventfd; the other side writes that eventfd only when
 * it sees the flag after publishing an entry (a full fence between the
 * two in both sides: the Dekker pattern).  The eventfds travel once, over
 * the rank's Unix socket to the agent (SCM_RIGHTS): the rank sends its own
 * at connect, the agent answers with its doorbell.  The socket stays open:
 * its hangup is how the agent learns that a rank died, and how a rank
 * learns that its agent did.
 */
#ifndef KN_OFFLOAD_OFFLOAD_H
#define KN_OFFLOAD_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "knit.h"
#include "knit/module.h"
#include "util/list.h"

#define KN_OFF_MAGIC 0x666f6e6bu /* "knof" */
#define KN_OFF_VERSION 2
#define KN_OFF_ENTRIES 64u
#define KN_OFF_INLINE 200u
#define KN_OFF_MOD_SLOTS 64u        /* modules loaded at once in a job */
#define KN_OFF_MSG_MAX (64u << 20)  /* largest module file / message */
/* with `where` in a load: the library's own built-in module, run on the
 * daemon's thread whatever KNIT_MODULE_ISOLATION says (our code, and the
 * collectives cannot afford a process more: 2 emulated nodes, offloaded
 * barrier 47-59 us in a module process, 25 in-process) */
#define KN_OFF_LOAD_INPROCESS 0x80
#define KN_OFF_ERR_MAX 200u

/* Module ids: slot (low 8 bits) and a generation, never 0. */
#define KN_OFF_MOD_SLOT(id) ((id) & 0xffu)
#define KN_OFF_MOD_BUILTIN 0xffffffffu /* the agent's compiled-in null handler */

enum kn_off_sq_op {
    KN_SQ_REQUEST = 1, /* mod, id, args inline or at addr/len */
    KN_SQ_POST_RECV,   /* mod, addr/len: a buffer for deliver() */
    KN_SQ_LOAD,        /* rank 0 only: aux = seq, flags = where (| KN_OFF_LOAD_INPROCESS), file at
                        * addr/len, name inline */
    KN_SQ_JOIN,        /* other ranks: aux = seq */
    KN_SQ_UNLOAD,      /* mod */
    KN_SQ_FETCH,       /* aux = agent's handle of a big result, addr/len: where to write it */
    KN_SQ_INFO,        /* agent's own numbers (fds, maps, modules) inline in the completion */
    KN_SQ_OP_MAX
};

enum kn_off_cq_op {
    KN_CQ_DONE = 1,    /* id: request done; status; result inline, or (flags BIG) aux = handle */
    KN_CQ_DELIVER,     /* mod: a posted buffer (aux = its address) got len bytes */
    KN_CQ_LOADED,      /* id: load/join done; aux = module id; error text inline */
    KN_CQ_UNLOADED,    /* id */
    KN_CQ_INFO,
    KN_CQ_OP_MAX
};

#define KN_CQ_F_BIG 0x1   /* result too big to be inline: FETCH it */

typedef struct kn_off_sqe {
    uint8_t op, flags;
    uint16_t version;
    uint32_t mod;
    uint64_t id;          /* rank's operation id, echoed in its completion */
    uint64_t addr, len;
    uint64_t aux;
    uint32_t inl;         /* bytes in data */
    uint32_t reserved;
    uint64_t reserved2;
    uint8_t data[KN_OFF_INLINE];
} kn_off_sqe_t;
_Static_assert(sizeof(kn_off_sqe_t) == 256, "submission entry is 256 bytes");

typedef struct kn_off_cqe {
    uint8_t op, flags;
    uint16_t version;
    int32_t status;
    uint64_t id;
    uint64_t len;         /* result bytes (all of them, inline or not) */
    uint64_t aux;
    uint32_t inl, mod;
    uint64_t reserved[2];
    uint8_t data[KN_OFF_INLINE];
} kn_off_cqe_t;
_Static_assert(sizeof(kn_off_cqe_t) == 256, "completion entry is 256 bytes");

/* Bytes and operations across the host <-> agent boundary. */
typedef struct kn_off_traffic {
    uint64_t sq_ops, sq_bytes;        /* queue entries rank -> agent */
    uint64_t cq_ops, cq_bytes;        /* queue entries agent -> rank */
    uint64_t rd_ops, rd_bytes;        /* agent reads of rank memory */
    uint64_t wr_ops, wr_bytes;        /* agent writes of rank memory */
} kn_off_traffic_t;

typedef struct kn_off_slot {
    _Alignas(64) uint32_t sq_tail;    /* rank writes */
    _Alignas(64) uint32_t sq_head;    /* agent writes */
    _Alignas(64) uint32_t cq_tail;    /* agent writes */
    _Alignas(64) uint32_t cq_head;    /* rank writes */
    _Alignas(64) uint32_t rank_sleeping;
    int32_t pid;                      /* agent writes at connect */
    _Alignas(64) kn_off_traffic_t total;
    kn_off_traffic_t mod[KN_OFF_MOD_SLOTS];
    _Alignas(64) kn_off_sqe_t sq[KN_OFF_ENTRIES];
    kn_off_cqe_t cq[KN_OFF_ENTRIES];
} kn_off_slot_t;

typedef struct kn_off_seg {
    uint32_t magic, version;
    uint32_t nslots, entries;
    uint64_t size;
    int32_t node, agent_pid;
    int32_t first_rank, reserved;
    _Alignas(64) uint32_t agent_sleeping;
    _Alignas(64) kn_off_slot_t slot[];
} kn_off_seg_t;

static inline size_t kn_off_seg_size(unsigned nslots)
{
    return sizeof(kn_off_seg_t) + (size_t)nslots * sizeof(kn_off_slot_t);
}

/* Hello on the rank's socket (then the agent's reply). */
typedef struct kn_off_hello {
    uint32_t magic, version;
    int32_t rank, pid;
    char cookie[64];
    /* the rank's shared heap (util/heap.h; size 0: none): the agent maps
     * it and reads and writes blocks there with memcpy instead of
     * cross-memory attach */
    uint64_t heap_base, heap_size;
    int32_t heap_fd, reserved;
} kn_off_hello_t;

typedef struct kn_off_hello_reply {
    uint32_t magic, version;
    int32_t status, slot;
    uint64_t seg_size;
} kn_off_hello_reply_t;

/* The agent's socket (abstract Unix namespace: nothing on disk). */
void kn_off_sock_name(char *buf, size_t len, const char *jobid, int node);
/* The segment's name under /dev/shm (shm_open form, with the slash). */
void kn_off_seg_name(char *buf, size_t len, const char *jobid, int node);
/* A 64-bit digest of the job cookie (daemon messages carry it). */
uint64_t kn_off_cookie_digest(const char *cookie);

/* ---------------------------------------------------------------- loader */

typedef struct kn_mod_lib {
    void *dl;
    knit_mod_entry_fn entry;
} kn_mod_lib_t;

/*
 * Check bytes as a module file (kn_mod_check_elf), write them to a
 * private temporary file, dlopen it and unlink it; find KNIT_MOD_SYMBOL.
 * On refusal err says which check failed.  The descriptor itself is
 * checked by kn_mod_check_desc (after calling entry, protected where the
 * caller protects).
 */
knit_status_t kn_mod_open(const void *bytes, size_t len, kn_mod_lib_t *out, char *err,
                          size_t errlen);
/* The same checks on bytes read from path, then dlopen(path) itself: host
 * placement, so that a debugger finds the file and its symbols. */
knit_status_t kn_mod_open_path(const char *path, const void *bytes, size_t len, kn_mod_lib_t *out,
                               char *err, size_t errlen);
/* The checks kn_mod_open makes before the bytes go near dlopen: a 64-bit
 * little-endian ELF shared object for this machine whose headers and
 * segments lie inside the file. */
knit_status_t kn_mod_check_elf(const void *bytes, size_t len, char *err, size_t errlen);
knit_status_t kn_mod_check_desc(const knit_mod_descriptor_t *d, char *err, size_t errlen);
void kn_mod_close(kn_mod_lib_t *lib);
/* Read a whole file (up to KN_OFF_MSG_MAX) into malloc'ed memory. */
knit_status_t kn_mod_read_file(const char *path, void **bytes, size_t *len, char *err,
                               size_t errlen);

/* ---------------------------------------------------------------- scratch memory */

/* The alloc()/free() service of an instance: zeroed blocks it owns, all
 * freed when it goes; free() of anything else is refused. */
#define KN_MOD_MEM_MAX (1ull << 34)
typedef struct kn_mod_mem {
    kn_list_t blocks;
    uint64_t bytes;
} kn_mod_mem_t;

void kn_mod_mem_init(kn_mod_mem_t *mm);
void *kn_mod_mem_alloc(kn_mod_mem_t *mm, uint64_t size);   /* NULL: too big, no memory */
int kn_mod_mem_free(kn_mod_mem_t *mm, void *p);            /* -1: not a block of mm */
void kn_mod_mem_release(kn_mod_mem_t *mm);

/* ---------------------------------------------------------------- client (ranks) */

typedef struct kn_off_params {
    void *ctx;               /* the knit_ctx_t, for checks */
    int rank, size, node, nnodes;
    int local_rank, local_size, first_local;
    const int *node_of;
    const char *jobid;
    void *boot;              /* kn_boot_t */
    int agent;               /* 1: knitrun started an agent for this node */
    struct kn_p2p *p2p;      /* progressed while a rank waits on a module (NULL: none) */
} kn_off_params_t;

/* At knit_init: remember the geometry, connect to the agent (if any). */
knit_status_t kn_off_open(const kn_off_params_t *p);
/* At knit_finalize: unload what is left, disconnect. */
void kn_off_close(void);
/* knit_module_load at the agents (collective) of one of the library's own
 * modules, from its image in memory (len bytes; rank 0's is the one
 * shipped): on the daemons' threads (KN_OFF_LOAD_INPROCESS) */
knit_status_t kn_off_load_builtin(knit_ctx_t *ctx, const char *name, const void *image, size_t len,
                                  knit_module_t **out);
/* One request of at most KN_OFF_INLINE bytes, answered with at most as
 * many, made and waited for without allocating and without progressing
 * anything else: for a fault handler (src/dsm/write.c). */
knit_status_t kn_off_request_quiet(knit_module_t *m, const void *args, size_t len);
/* knit_request_test without progress or system calls (for progress hooks;
 * requests at the agent or the switch only) */
knit_status_t kn_off_request_try(knit_mreq_t **req, int *done, void *result, size_t cap, size_t *len);

#endif
