/*
 * The daemon's side of module sandboxes (KNIT_MODULE_ISOLATION=process):
 * each instance runs in its own knit-modhost process (sbx.h has the
 * segment between them; docs/modules.md the guarantees).  Nothing here
 * blocks: calls are queued for the host, what the host asks is done in
 * the daemon's loop (kn_sbx_poll), and a host that dies, exits, hangs past
 * KNIT_MODULE_BUDGET or sends anything malformed is killed and its
 * instance disabled (kn_d_inst_disable), while the daemon goes on.
 */
#ifndef KN_OFFLOAD_SANDBOX_H
#define KN_OFFLOAD_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "offload/daemon.h"

typedef struct kn_sbx kn_sbx_t;

/* Start the process of instance `in` (its id, name and geometry set) with
 * the module file's bytes: KNIT_INPROGRESS (the verdict comes through
 * kn_d_load_verdict once the host has loaded it and run init), or an
 * error with msg saying why. */
int32_t kn_sbx_start(kn_inst_t *in, const void *bytes, uint64_t len, char *msg, size_t mlen);

/* Probe a module file in a throw-away host (KNIT_MODULE_ISOLATION=
 * inprocess, before the daemon loads it itself): its constructors run and
 * its descriptor is read and checked there.  KNIT_OK, or an error with
 * msg (name: the load's, for the message). */
int32_t kn_sbx_probe(const char *name, const void *bytes, uint64_t len, char *msg, size_t mlen);

/* Calls, queued in order. */
void kn_sbx_request(kn_sbx_t *s, uint64_t token, int32_t rank, int32_t node, const void *args, uint64_t len);
/* hlen: a send_hdr message's header, which its on_header routes there */
void kn_sbx_message(kn_sbx_t *s, int32_t from, const void *p, uint64_t len, uint64_t hlen);

/* The instance is going (unload, fault, exit): detach the host from it,
 * and let it run fini (call_fini) and exit, killed when it takes longer
 * than the budget, or kill it now.  When gone_id is not 0,
 * kn_d_inst_gone(gone_id) is called once the process has ended (and 1
 * returned). */
int kn_sbx_stop(kn_sbx_t *s, int call_fini, uint32_t gone_id);

/* The loop: serve what the hosts asked, enforce budgets, reap.  Returns
 * how much was done. */
int kn_sbx_poll(void);
/* About to sleep: tell the hosts (they ring then); 0 when something is
 * pending already.  kn_sbx_woke undoes it. */
int kn_sbx_want_sleep(void);
void kn_sbx_woke(void);
/* Should the daemon sleep now instead of polling, to leave its cpu to a
 * host that has a call (a node without a cpu to spare)? */
int kn_sbx_defer(void);
/* Milliseconds until a host's budget or deadline runs out (-1: none). */
int kn_sbx_timeout_ms(void);
/* Scratch bytes the hosts say they hold (KN_SQ_INFO). */
uint64_t kn_sbx_alloc_bytes(void);
/* The daemon is ending: kill every host now. */
void kn_sbx_kill_all(void);

#endif
