/*
 * knit's ARMCI: internal interface between the files of src/armci.
 *
 * src/armci sits on the native API: knit.h, knit/rma.h (windows, strided
 * and vector transfers, atomics) and mpi.h (only to start and end knit for
 * a program that did not call MPI_Init).  The layer keeps
 *   - the regions: one knit window (knit_mem_alloc on the world
 *     communicator) per ARMCI_Malloc, in creation order, each with a
 *     serial number that is the same on every process;
 *   - the operations in flight: one record per knit request of a
 *     nonblocking call, tagged with its handle's id (0: no handle).  Puts
 *     and accumulates complete locally (KNIT_RMA_LOCAL), gets and atomics
 *     at their targets; a fence waits for the records, then for knit's
 *     fence of the locally completed ones (kn_armci_fence_remote).
 */
#ifndef KN_ARMCI_IMPL_H
#define KN_ARMCI_IMPL_H

#include <stdint.h>

#include "knit.h"
#include "knit/rma.h"
#include "armci.h"

/* context ids of the layer's own traffic (MPI uses ids below 4096 and
 * bit 0x40000000; collectives set KNIT_COLL_CTX_BIT) */
#define KN_ARMCI_CTX_MSG 0x2a000000u    /* armci_msg_snd / rcv */
#define KN_ARMCI_CTX_NODE 0x2a000001u   /* SCOPE_NODE communicator */
#define KN_ARMCI_CTX_MASTERS 0x2a000002u /* SCOPE_MASTERS communicator */

typedef struct kn_armci_region {
    knit_win_t *win;
    int64_t serial;
    struct kn_armci_region *next;   /* older regions */
} kn_armci_region_t;

typedef struct kn_armci_op {
    struct kn_armci_op *next, *prev;
    knit_rma_req_t *req;         /* NULL once complete */
    knit_status_t status;        /* the result, once complete */
    unsigned long long hid;      /* handle id, 0: implicit */
    int proc;
    kn_armci_region_t *reg;
    /* what the knit call reads until the operation completes */
    knit_rma_acc_t acc;
    _Alignas(16) unsigned char scale[16];
    _Alignas(16) unsigned char val[16];  /* source of the NbPutValue forms */
    int64_t sstride[KNIT_RMA_MAX_LEVELS], dstride[KNIT_RMA_MAX_LEVELS];
    int64_t count[KNIT_RMA_MAX_LEVELS + 1];
    void *mem;                   /* vector descriptors, freed with the record */
} kn_armci_op_t;

typedef struct kn_armci {
    int initialized;
    int own_mpi;                 /* ARMCI_Init called MPI_Init */
    knit_ctx_t *ctx;
    knit_comm_t *world;
    int me, nproc;
    kn_armci_region_t *regions;  /* newest first */
    kn_armci_region_t *last_hit; /* lookup cache */
    int64_t next_serial;
    kn_armci_op_t *ops, *ops_tail;
    int nops, reap_at;           /* reap() when nops reaches reap_at */
    unsigned long long next_hid;
    knit_status_t implicit_err;  /* first failure of a reaped implicit operation */
    knit_win_t *mutex_win;       /* ARMCI_Create_mutexes */
} kn_armci_t;

extern kn_armci_t kn_armci;

/* Print "armci: rank R: fn: message" on stderr; returns st. */
knit_status_t kn_armci_err(const char *fn, knit_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* End the job: "fn: message" (ARMCI_Error's way). */
void kn_armci_die(const char *fn, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* End the job unless ARMCI_Init was called. */
void kn_armci_need_init(const char *fn);

/* The region holding [addr, addr + len) of proc, or NULL. */
kn_armci_region_t *kn_armci_region_of(int proc, const void *addr, size_t len);
/* Complete the operations in flight that match (proc < 0: any target;
 * reg NULL: any region); records with a handle id stay (as completed)
 * unless drop_handles.  Returns the first error. */
knit_status_t kn_armci_complete(int proc, const kn_armci_region_t *reg, int drop_handles);
/* Every put and accumulate that completed locally is at its target too
 * (ARMCI_Fence); the first error one had there. */
knit_status_t kn_armci_fence_remote(void);
/* Forget the layer's message communicators (ARMCI_Finalize). */
void kn_armci_msg_fini(void);

#endif /* KN_ARMCI_IMPL_H */
