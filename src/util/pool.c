#include "util/pool.h"

#include <stdlib.h>

#include "util/compiler.h"
#include "util/log.h"

#define POOL_CHUNK_HDR KN_CACHELINE

knit_status_t kn_pool_init(kn_pool_t *p, const char *name, size_t obj_size,
                           size_t per_chunk, size_t max_objs)
{
    if (!p || obj_size == 0 || per_chunk == 0)
        return KNIT_ERR_INVAL;
    p->obj_size = KN_ALIGN_UP(KN_MAX(obj_size, sizeof(void *)), sizeof(void *) * 2);
    p->per_chunk = per_chunk;
    p->max_objs = max_objs;
    p->nr_allocated = p->nr_in_use = 0;
    p->free_list = p->chunks = NULL;
    p->name = name;
    return KNIT_OK;
}

void kn_pool_destroy(kn_pool_t *p)
{
    if (p->nr_in_use)
        kn_debug("pool %s destroyed with %zu objects in use", p->name, p->nr_in_use);
    void *c = p->chunks;
    while (c) {
        void *next = *(void **)c;
        free(c);
        c = next;
    }
    p->chunks = p->free_list = NULL;
    p->nr_allocated = p->nr_in_use = 0;
}

static int pool_grow(kn_pool_t *p)
{
    size_t n = p->per_chunk;
    if (p->max_objs) {
        if (p->nr_allocated >= p->max_objs)
            return -1;
        n = KN_MIN(n, p->max_objs - p->nr_allocated);
    }
    char *c = aligned_alloc(KN_CACHELINE, KN_ALIGN_UP(POOL_CHUNK_HDR + n * p->obj_size, KN_CACHELINE));
    if (!c)
        return -1;
    *(void **)c = p->chunks;
    p->chunks = c;
    for (size_t i = n; i-- > 0;) {
        void *o = c + POOL_CHUNK_HDR + i * p->obj_size;
        *(void **)o = p->free_list;
        p->free_list = o;
    }
    p->nr_allocated += n;
    return 0;
}

void *kn_pool_get(kn_pool_t *p)
{
    if (kn_unlikely(!p->free_list) && pool_grow(p) < 0)
        return NULL;
    void *o = p->free_list;
    p->free_list = *(void **)o;
    p->nr_in_use++;
    return o;
}

void kn_pool_put(kn_pool_t *p, void *obj)
{
    *(void **)obj = p->free_list;
    p->free_list = obj;
    p->nr_in_use--;
}
