/*
 * Object pool: fixed-size objects carved from chunks, recycled through a
 * free list.  Memory is returned only by kn_pool_destroy.  Not thread safe.
 */
#ifndef KN_UTIL_POOL_H
#define KN_UTIL_POOL_H

#include <stddef.h>

#include "knit.h"

typedef struct kn_pool {
    size_t obj_size;      /* rounded up to hold a free-list link */
    size_t per_chunk;
    size_t max_objs;      /* 0 = unlimited */
    size_t nr_allocated;  /* objects carved so far */
    size_t nr_in_use;
    void *free_list;
    void *chunks;         /* singly linked through the first word */
    const char *name;
} kn_pool_t;

knit_status_t kn_pool_init(kn_pool_t *p, const char *name, size_t obj_size,
                           size_t per_chunk, size_t max_objs);
void kn_pool_destroy(kn_pool_t *p);
/* NULL when out of memory or at max_objs. */
void *kn_pool_get(kn_pool_t *p);
void kn_pool_put(kn_pool_t *p, void *obj);

#endif
