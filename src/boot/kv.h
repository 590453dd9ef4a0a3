/*
 * The key-value table behind the bootstrap store: knitrun's store and the
 * in-process store of a singleton both keep their keys here.  Keys are
 * byte strings (not NUL-terminated on input), values opaque bytes.  Not
 * thread safe.
 */
#ifndef KN_BOOT_KV_H
#define KN_BOOT_KV_H

#include <stddef.h>

#include "knit.h"

typedef struct kn_kv kn_kv_t;

knit_status_t kn_kv_create(kn_kv_t **out);
void kn_kv_destroy(kn_kv_t *kv);
/* Store a copy of val under key, replacing an older value. */
knit_status_t kn_kv_put(kn_kv_t *kv, const char *key, size_t klen, const void *val, size_t len);
/* The value stored under key (owned by the table, valid until the key is
 * put again or the table destroyed), or NULL. */
const void *kn_kv_get(const kn_kv_t *kv, const char *key, size_t klen, size_t *len);
size_t kn_kv_count(const kn_kv_t *kv);

#endif
