/*
 * Bootstrap store client: the key-value store knitrun serves to the
 * processes of a job (put / get / fence), used to exchange addresses.
 *
 * Wire protocol (see docs/protocols.md): a stream socket (TCP or Unix);
 * every message is a kn_boot_hdr_t followed by len payload bytes.  The
 * first message of a connection is HELLO carrying the job cookie; the store
 * refuses and logs any connection that does not present it.
 *
 * A process started without knitrun (a singleton) gets a store that lives
 * in the process itself: put/get work, fence returns at once.
 */
#ifndef KN_BOOT_BOOT_H
#define KN_BOOT_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "knit.h"

typedef struct kn_boot kn_boot_t;

#define KN_BOOT_KEY_MAX 255
#define KN_BOOT_VAL_MAX (1u << 20)

/* Who is connecting: a rank (id = rank), or a daemon. */
enum kn_boot_role { KN_BOOT_ROLE_RANK = 1, KN_BOOT_ROLE_PROXY = 2, KN_BOOT_ROLE_DAEMON = 3 };

/*
 * Connect to the job's store.  addrs is the comma-separated list from
 * KNIT_BOOT_ADDR ("unix:/path", "host:port", "[v6]:port"), tried in order;
 * NULL makes a singleton store.  Waits up to KNIT_BOOT_TIMEOUT
 * (kn_cfg.boot_timeout: call kn_config_load first; 0 = no limit).  A
 * store that refuses the cookie gives KNIT_ERR_AUTH.
 */
knit_status_t kn_boot_connect(const char *addrs, const char *cookie, int role, int id,
                              kn_boot_t **out);
/* From the environment knitrun set (KNIT_BOOT_ADDR, KNIT_COOKIE, KNIT_RANK);
 * a singleton store when KNIT_BOOT_ADDR is unset. */
knit_status_t kn_boot_connect_env(kn_boot_t **out);

int kn_boot_is_singleton(const kn_boot_t *b);

/* Publish key -> value (key: 1..KN_BOOT_KEY_MAX printable bytes; value up to
 * KN_BOOT_VAL_MAX).  Putting a key twice replaces the value. */
knit_status_t kn_boot_put(kn_boot_t *b, const char *key, const void *val, size_t len);

/* Fetch key; waits until some process has put it (bounded by
 * KNIT_BOOT_TIMEOUT: KNIT_ERR_TIMEOUT; a singleton answers
 * KNIT_ERR_NOT_FOUND at once, as nobody else could put it).  A value longer than cap is an error
 * (KNIT_ERR_TRUNCATE) with *len set to the needed size. */
knit_status_t kn_boot_get(kn_boot_t *b, const char *key, void *buf, size_t cap, size_t *len);
/* kn_boot_get bounded by timeout_ns instead (0: no bound), for the waits
 * whose other side moves at the application's pace rather than at start-up's
 * (a daemon waiting for the job's first module load): the boot timeout must
 * never end a job that is running. */
knit_status_t kn_boot_wait(kn_boot_t *b, const char *key, void *buf, size_t cap, size_t *len,
                           uint64_t timeout_ns);

/* Wait until every rank of the job has entered the fence (puts made before
 * the fence are visible to gets after it). */
knit_status_t kn_boot_fence(kn_boot_t *b);
/* The same bounded by timeout_ns (0: no bound): knit_finalize's fence,
 * which waits for the slowest rank to finish its work. */
knit_status_t kn_boot_fence_wait(kn_boot_t *b, uint64_t timeout_ns);

/* Ask knitrun to end the job: it prints msg naming this process, stops
 * everything and exits with code. */
knit_status_t kn_boot_abort(kn_boot_t *b, int code, const char *msg);

/* Tell the store this process finalized cleanly, then close. */
knit_status_t kn_boot_finalize(kn_boot_t *b);

/* Close without finalize (e.g. after an error). */
void kn_boot_close(kn_boot_t *b);

/* The connection's socket (-1 for a singleton), to watch for its end. */
int kn_boot_fd(const kn_boot_t *b);

/* Free the handle but keep its connected socket and return it (-1 for a
 * singleton): for a caller that drives the protocol itself (knitrun's
 * per-host proxy). */
int kn_boot_release_fd(kn_boot_t *b);

#endif
