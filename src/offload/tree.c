/* The tree of switches (tree.h). */
#include "offload/tree.h"

#include <string.h>

int kn_tree_init(kn_tree_t *t, int nnodes, int fanin)
{
    memset(t, 0, sizeof(*t));
    if (nnodes < 1 || fanin < 2)
        return -1;
    int up[KN_TREE_LEVELS], n = nnodes, l = 0;
    do { /* from the agents up: ceil(n / K) switches above n instances */
        n = (n + fanin - 1) / fanin;
        up[l++] = n;
    } while (n > 1 && l < KN_TREE_LEVELS);
    t->nnodes = nnodes;
    t->fanin = fanin;
    t->nlevels = l;
    for (int i = 0; i < l; i++) {
        t->count[i] = up[l - 1 - i];
        t->first[i] = t->nswitches;
        t->nswitches += t->count[i];
    }
    return 0;
}

int kn_tree_id(const kn_tree_t *t, int32_t addr)
{
    if (addr >= 0)
        return addr < t->nnodes ? addr : -1;
    if (addr == KNIT_MOD_NONE || -(int64_t)addr - 1 >= t->nswitches)
        return -1;
    return t->nnodes + (int)(-1 - addr);
}

int32_t kn_tree_addr(const kn_tree_t *t, int id)
{
    if (id < 0 || id >= t->nnodes + t->nswitches)
        return KNIT_MOD_NONE;
    return id < t->nnodes ? id : KNIT_MOD_SWITCH_AT(id - t->nnodes);
}

/* Nodes below a switch of tree level i (0: the root): K^(nlevels - i). */
static int64_t span(const kn_tree_t *t, int i)
{
    int64_t s = 1;
    for (int k = i; k < t->nlevels && s <= t->nnodes; k++)
        s *= t->fanin;
    return s;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

int32_t kn_tree_place(const kn_tree_t *t, int32_t addr, knit_mod_place_t *p)
{
    memset(p, 0, sizeof(*p));
    p->size = sizeof(*p);
    p->addr = addr;
    int id = kn_tree_id(t, addr);
    if (id < 0)
        return KNIT_MOD_ERR_RANGE;
    int bottom = t->nlevels - 1;
    if (addr >= 0) {
        p->parent = KNIT_MOD_SWITCH_AT(t->first[bottom] + addr / t->fanin);
        p->first_node = addr;
        p->nnodes = 1;
        p->child_step = 1;
        return KNIT_MOD_OK;
    }
    int s = -1 - addr, i = 0;
    while (i < bottom && s >= t->first[i + 1])
        i++;
    int pos = s - t->first[i];
    int64_t w = span(t, i);
    p->level = t->nlevels - i;
    p->parent = i == 0 ? KNIT_MOD_NONE : KNIT_MOD_SWITCH_AT(t->first[i - 1] + pos / t->fanin);
    p->first_node = (int32_t)((int64_t)pos * w);
    p->nnodes = (int32_t)(min64(t->nnodes, (int64_t)(pos + 1) * w) - p->first_node);
    int64_t c0 = (int64_t)pos * t->fanin;
    if (i == bottom) {
        p->first_child = (int32_t)c0;
        p->nchildren = (int32_t)(min64(t->nnodes, c0 + t->fanin) - c0);
        p->child_step = 1;
    } else {
        p->first_child = KNIT_MOD_SWITCH_AT(t->first[i + 1] + c0);
        p->nchildren = (int32_t)(min64(t->count[i + 1], c0 + t->fanin) - c0);
        p->child_step = -1;
    }
    return KNIT_MOD_OK;
}

int kn_tree_route_ok(const kn_tree_t *t, int32_t self, const knit_mod_route_t *r)
{
    if (r->ndest < 0 || r->ndest > KNIT_MOD_ROUTE_MAX)
        return 0;
    for (int i = 0; i < r->ndest; i++)
        if (kn_tree_id(t, r->dest[i]) < 0 || r->dest[i] == self)
            return 0;
    return 1;
}

int kn_tree_switch_node(const kn_tree_t *t, int s)
{
    knit_mod_place_t p;
    return kn_tree_place(t, KNIT_MOD_SWITCH_AT(s), &p) == KNIT_MOD_OK ? p.first_node : -1;
}
