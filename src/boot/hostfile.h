/*
 * Host lists for knitrun: --hosts "a,b:2", --hostfile F, and where the
 * ranks of a job go.  Shared by knitrun and the unit tests.
 *
 * Hostfile format: one host per line; '#' starts a comment; blank lines
 * are ignored; after the name, optional "slots=K" (also accepted: the
 * name written "host:K").  A host listed twice adds up its slots.  A host
 * without a slot count has 1 slot.
 */
#ifndef KN_BOOT_HOSTFILE_H
#define KN_BOOT_HOSTFILE_H

#include <stddef.h>

#include "knit.h"

#define KN_HOST_NAME_MAX 255

typedef struct kn_host {
    char *name;
    int slots;
} kn_host_t;

typedef struct kn_hostlist {
    kn_host_t *hosts;
    int count;
} kn_hostlist_t;

/* Host names: letters, digits, '.', '-', '_', ':' (IPv6), not starting
 * with '-' (they end up as arguments of the launch command). */
int kn_host_name_valid(const char *name, size_t len);

/* Parse a hostfile's text / a comma-separated list into *out (which must be
 * zeroed or freed before).  On error KNIT_ERR_INVAL with a message (naming
 * the line) in err. */
knit_status_t kn_hostfile_parse(const char *text, kn_hostlist_t *out, char *err, size_t errlen);
knit_status_t kn_hostfile_load(const char *path, kn_hostlist_t *out, char *err, size_t errlen);
knit_status_t kn_hostlist_parse(const char *list, kn_hostlist_t *out, char *err, size_t errlen);
void kn_hostlist_free(kn_hostlist_t *hl);

/* Total slots. */
int kn_hostlist_slots(const kn_hostlist_t *hl);

/*
 * Ranks per host (counts[count]) for n ranks: hosts are filled in order up
 * to their slots; when n exceeds the total slots, filling wraps round to
 * the first host and goes on in blocks of each host's slots (MPICH's
 * behaviour).  Ranks are then numbered block-wise: host 0 gets ranks
 * 0..counts[0]-1, and so on; hosts left with 0 ranks take no part.
 */
void kn_place_hosts(const kn_hostlist_t *hl, int n, int *counts);

/* n ranks over m emulated nodes, block-wise: the first n % m nodes get one
 * more. */
void kn_place_block(int n, int m, int *counts);

#endif
