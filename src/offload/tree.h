/*
 * The tree of switches (issue 23): knitrun starts one knit-switch for a
 * job of at most KNIT_SWITCH_FANIN nodes (a star), and past that a tree
 * of fan-in K, like the levels of a fat tree: the lowest level's switches
 * take K agents each, the next level's K of those, up to the root.
 * Switches are numbered from the root down, level by level, left to
 * right: switch s has module address KNIT_MOD_SWITCH_AT(s) and daemon id
 * nnodes + s (agents are 0..nnodes-1 in both).  knitrun, the daemons, the
 * module processes and the host-placement emulation all compute it here.
 */
#ifndef KN_OFFLOAD_TREE_H
#define KN_OFFLOAD_TREE_H

#include "knit/module.h"

#define KN_TREE_LEVELS 32

typedef struct kn_tree {
    int nnodes, fanin;
    int nlevels;                   /* switch levels */
    int nswitches;
    int count[KN_TREE_LEVELS];     /* switches per level, from the root's (1) */
    int first[KN_TREE_LEVELS];     /* the first switch of each level */
} kn_tree_t;

/* 0, or -1 where nnodes < 1 or fanin < 2. */
int kn_tree_init(kn_tree_t *t, int nnodes, int fanin);
/* The place of address addr (agent n, or KNIT_MOD_SWITCH_AT(s)): KNIT_OK,
 * or KNIT_MOD_ERR_RANGE. */
int32_t kn_tree_place(const kn_tree_t *t, int32_t addr, knit_mod_place_t *p);
/* Daemon ids <-> module addresses (-1 / KNIT_MOD_NONE: none such). */
int kn_tree_id(const kn_tree_t *t, int32_t addr);
int32_t kn_tree_addr(const kn_tree_t *t, int id);
/* Whether an on_header route names only instances of the tree other than
 * self (and no more than KNIT_MOD_ROUTE_MAX): 1 yes, 0 no. */
int kn_tree_route_ok(const kn_tree_t *t, int32_t self, const knit_mod_route_t *r);
/* Where switch s runs: the first node below it. */
int kn_tree_switch_node(const kn_tree_t *t, int s);

#endif
