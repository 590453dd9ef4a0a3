/* Scratch memory of a module instance (offload.h: kn_mod_mem_t), the same
 * for every place an instance runs: the daemon's thread, a module
 * process, the calling rank (host placement). */
#include <stdlib.h>

#include "offload/offload.h"

typedef struct mem_hdr {
    kn_list_t link;
    uint64_t size;
    uint64_t pad; /* the module's bytes start 16-byte aligned */
} mem_hdr_t;

void kn_mod_mem_init(kn_mod_mem_t *mm)
{
    kn_list_init(&mm->blocks);
    mm->bytes = 0;
}

void *kn_mod_mem_alloc(kn_mod_mem_t *mm, uint64_t size)
{
    if (size > KN_MOD_MEM_MAX)
        return NULL;
    mem_hdr_t *h = calloc(1, sizeof(*h) + size);
    if (!h)
        return NULL;
    h->size = size;
    mm->bytes += size;
    kn_list_push_back(&mm->blocks, &h->link);
    return h + 1;
}

int kn_mod_mem_free(kn_mod_mem_t *mm, void *p)
{
    if (!p)
        return 0;
    mem_hdr_t *h = (mem_hdr_t *)p - 1;
    kn_list_t *e;
    kn_list_for_each(e, &mm->blocks) {
        if (e == &h->link) { /* only what it allocated */
            kn_list_del(&h->link);
            mm->bytes -= h->size;
            free(h);
            return 0;
        }
    }
    return -1;
}

void kn_mod_mem_release(kn_mod_mem_t *mm)
{
    while (!kn_list_empty(&mm->blocks)) {
        mem_hdr_t *h = kn_list_first(&mm->blocks, mem_hdr_t, link);
        kn_list_del(&h->link);
        free(h);
    }
    mm->bytes = 0;
}
