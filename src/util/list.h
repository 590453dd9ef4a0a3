/* Intrusive doubly linked list (circular, with a head sentinel). */
#ifndef KN_UTIL_LIST_H
#define KN_UTIL_LIST_H

#include <stddef.h>

#include "util/compiler.h"

typedef struct kn_list {
    struct kn_list *next, *prev;
} kn_list_t;

#define KN_LIST_INIT(name) {&(name), &(name)}

static inline void kn_list_init(kn_list_t *h)
{
    h->next = h->prev = h;
}

static inline int kn_list_empty(const kn_list_t *h)
{
    return h->next == h;
}

static inline void kn_list__insert(kn_list_t *e, kn_list_t *prev, kn_list_t *next)
{
    e->prev = prev;
    e->next = next;
    prev->next = e;
    next->prev = e;
}

static inline void kn_list_push_back(kn_list_t *h, kn_list_t *e)
{
    kn_list__insert(e, h->prev, h);
}

static inline void kn_list_push_front(kn_list_t *h, kn_list_t *e)
{
    kn_list__insert(e, h, h->next);
}

static inline void kn_list_del(kn_list_t *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->next = e->prev = e;
}

static inline kn_list_t *kn_list_pop_front(kn_list_t *h)
{
    if (kn_list_empty(h))
        return NULL;
    kn_list_t *e = h->next;
    kn_list_del(e);
    return e;
}

static inline size_t kn_list_length(const kn_list_t *h)
{
    size_t n = 0;
    for (const kn_list_t *e = h->next; e != h; e = e->next)
        n++;
    return n;
}

#define kn_list_entry(ptr, type, member) kn_container_of(ptr, type, member)
#define kn_list_first(h, type, member) kn_list_entry((h)->next, type, member)

/* Iterate; safe against removal of the current element. */
#define kn_list_for_each_safe(pos, tmp, head) \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)
#define kn_list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#endif
