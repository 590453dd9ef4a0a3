/*
 * Offloaded collectives (docs/collectives.md, "In the network"): barrier
 * and allreduce handed to the node's agent, combined there and in the
 * switch by the built-in module modules/builtin/coll.c, which the library
 * carries (scripts/embed.sh) and loads into every daemon at knit_init
 * where KNIT_COLL_OFFLOAD=on.  A rank hands over its vector and picks up
 * the result: one module request.
 *
 * Not offloaded (the host algorithms run): nonblocking calls, user-defined
 * ops, REPLACE / NO_OP, vectors above KN_COLL_MOD_MAX_BYTES, and every
 * call once the module could not be loaded (a warning says why).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll/coll.h"
#include "coll/coll_mod.h"
#include "offload/offload.h"
#include "util/config.h"
#include "util/log.h"

extern const unsigned char kn_builtin_coll[];
extern const size_t kn_builtin_coll_len;

static struct {
    knit_ctx_t *ctx;
    knit_module_t *mod; /* loaded at every daemon */
    int failed;         /* the load failed, or the module faulted: host algorithms */
} O;

/* Collective over the job (every rank, at knit_init): the module's bytes
 * are read by rank 0 only, from a memfd that holds them. */
knit_status_t kn_coll_offload_start(knit_ctx_t *ctx)
{
    if (kn_cfg.coll_offload != 1)
        return KNIT_OK;
    O.ctx = ctx;
    int fd = memfd_create("knit-coll.so", MFD_CLOEXEC);
    knit_status_t st = KNIT_ERR_IO;
    if (fd >= 0) {
        size_t done = 0;
        while (done < kn_builtin_coll_len) {
            ssize_t n = write(fd, kn_builtin_coll + done, kn_builtin_coll_len - done);
            if (n <= 0)
                break;
            done += (size_t)n;
        }
        if (done == kn_builtin_coll_len) {
            char path[64];
            snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
            st = kn_off_load_builtin(ctx, path, &O.mod);
        }
        close(fd);
    }
    if (st != KNIT_OK) {
        O.failed = 1;
        if (knit_rank(ctx) == 0)
            kn_warn("KNIT_COLL_OFFLOAD=on, but the collectives module could not be loaded (%s%s%s): the hosts' "
                    "algorithms do the collectives",
                    knit_strerror(st), *knit_module_last_error(ctx) ? ": " : "", knit_module_last_error(ctx));
    }
    return KNIT_OK; /* the job goes on without it */
}

static int usable(const knit_comm_t *c, size_t bytes, knit_dtype_t t, const knit_op_t *op)
{
    if (!O.mod || O.failed || bytes > KN_COLL_MOD_MAX_BYTES || c->nnodes > KN_COLL_MOD_MAX_NODES)
        return 0;
    return !op || (op->kind != KNIT_OP_USER && kn_coll_reduce_fn(op->kind, t) != NULL);
}

knit_status_t kn_coll_offload_allreduce(knit_comm_t *c, const void *sb, void *rb, size_t count, knit_dtype_t t,
                                        const knit_op_t *op)
{
    size_t bytes = op ? count * knit_dtype_size(t) : 0;
    if (!usable(c, bytes, t, op))
        return KNIT_ERR_NOT_SUPPORTED;
    kn_coll_mod_args_t a = {.version = KN_COLL_MOD_VERSION,
                            .comm = c->cid,
                            .first = c->ranks[0],
                            .dtype = (uint32_t)t,
                            .redop = op ? (uint32_t)op->kind : 0,
                            .seq = ++c->off_seq,
                            .bytes = bytes,
                            .nlocal = c->local.size,
                            .lrank = c->local.rank,
                            .nnodes = c->nnodes,
                            .nidx = c->node_idx[c->g.rank]};
    if (kn_cfg.coll_offload_fault && c->off_seq == (uint64_t)kn_cfg.coll_offload_fault && c->g.rank == 0)
        a.flags |= KN_COLL_MOD_F_FAULT; /* tests: the module faults here */
    char small[512], *args = sizeof(a) + bytes <= sizeof(small) ? small : malloc(sizeof(a) + bytes);
    if (!args)
        return KNIT_ERR_NOMEM;
    memcpy(args, &a, sizeof(a));
    if (bytes)
        memcpy(args + sizeof(a), sb == KNIT_IN_PLACE ? rb : sb, bytes);
    knit_mreq_t *r;
    size_t got = 0;
    knit_status_t st = knit_module_request(O.mod, args, sizeof(a) + bytes, &r);
    if (st == KNIT_OK)
        st = knit_request_wait(&r, rb, bytes, &got);
    if (st == KNIT_ERR_MODULE_FAULT && sb == KNIT_IN_PLACE && bytes)
        memcpy(rb, args + sizeof(a), bytes); /* the fault's text went there: the input again, for the hosts */
    if (args != small)
        free(args);
    if (st == KNIT_OK && got != bytes)
        st = KNIT_ERR_PROTO;
    if (st == KNIT_ERR_MODULE_FAULT) {
        /* every daemon disabled it and failed its open requests (a fault
         * is told to all): every member gets here, none got a result, and
         * all do this collective again on the hosts */
        if (!O.failed && c->g.rank == 0)
            kn_warn("the collectives module faulted (%s): the hosts' algorithms do the collectives from now on",
                    knit_module_last_error(O.ctx));
        O.failed = 1;
        return KNIT_ERR_NOT_SUPPORTED;
    }
    return st;
}
