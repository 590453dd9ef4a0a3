/* KNIT_NODE_SIZES, "k0,k1,...": how many ranks each node has, in rank
 * order (knitrun's placement, or another launcher's, core/launch.c). */
#ifndef KN_UTIL_NODEMAP_H
#define KN_UTIL_NODEMAP_H

/* The number of nodes, with *first (malloc'd, nnodes + 1 entries) the
 * first rank of each and first[nnodes] == size; -1 when the map is
 * malformed, has an empty node, or does not add up to size (*first is
 * then NULL). */
int kn_node_sizes_parse(const char *sizes, int size, int **first);

#endif
