/* Chained hash table for the bootstrap store; grows by doubling. */
#include "boot/kv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct kv_ent {
    struct kv_ent *next;
    uint64_t hash;
    size_t klen, vlen;
    char *val;
    char key[]; /* klen bytes */
};

struct kn_kv {
    struct kv_ent **slots;
    size_t nslots, count;
};

static uint64_t hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h;
}

knit_status_t kn_kv_create(kn_kv_t **out)
{
    kn_kv_t *kv = calloc(1, sizeof(*kv));
    if (!kv)
        return KNIT_ERR_NOMEM;
    kv->nslots = 64;
    kv->slots = calloc(kv->nslots, sizeof(*kv->slots));
    if (!kv->slots) {
        free(kv);
        return KNIT_ERR_NOMEM;
    }
    *out = kv;
    return KNIT_OK;
}

void kn_kv_destroy(kn_kv_t *kv)
{
    if (!kv)
        return;
    for (size_t i = 0; i < kv->nslots; i++) {
        for (struct kv_ent *e = kv->slots[i], *n; e; e = n) {
            n = e->next;
            free(e->val);
            free(e);
        }
    }
    free(kv->slots);
    free(kv);
}

static struct kv_ent **find(const kn_kv_t *kv, const char *key, size_t klen, uint64_t h)
{
    struct kv_ent **pp = &kv->slots[h & (kv->nslots - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && (*pp)->klen == klen && !memcmp((*pp)->key, key, klen))
            break;
    return pp;
}

static void grow(kn_kv_t *kv)
{
    size_t n = kv->nslots * 2;
    struct kv_ent **s = calloc(n, sizeof(*s));
    if (!s)
        return; /* keep the longer chains */
    for (size_t i = 0; i < kv->nslots; i++) {
        for (struct kv_ent *e = kv->slots[i], *next; e; e = next) {
            next = e->next;
            e->next = s[e->hash & (n - 1)];
            s[e->hash & (n - 1)] = e;
        }
    }
    free(kv->slots);
    kv->slots = s;
    kv->nslots = n;
}

knit_status_t kn_kv_put(kn_kv_t *kv, const char *key, size_t klen, const void *val, size_t len)
{
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return KNIT_ERR_NOMEM;
    if (len)
        memcpy(copy, val, len);
    uint64_t h = hash(key, klen);
    struct kv_ent **pp = find(kv, key, klen, h);
    if (*pp) {
        free((*pp)->val);
        (*pp)->val = copy;
        (*pp)->vlen = len;
        return KNIT_OK;
    }
    struct kv_ent *e = malloc(sizeof(*e) + klen);
    if (!e) {
        free(copy);
        return KNIT_ERR_NOMEM;
    }
    e->next = NULL;
    e->hash = h;
    e->klen = klen;
    e->vlen = len;
    e->val = copy;
    memcpy(e->key, key, klen);
    *pp = e;
    if (++kv->count > kv->nslots)
        grow(kv);
    return KNIT_OK;
}

const void *kn_kv_get(const kn_kv_t *kv, const char *key, size_t klen, size_t *len)
{
    struct kv_ent *e = *find(kv, key, klen, hash(key, klen));
    if (!e)
        return NULL;
    *len = e->vlen;
    return e->val;
}

size_t kn_kv_count(const kn_kv_t *kv)
{
    return kv->count;
}
