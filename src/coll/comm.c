/* Communicators: an ordered list of job ranks, a context id, and the node
 * structure the node-aware algorithms use (computed once, at creation). */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "util/log.h"

static void comm_free(knit_comm_t *c)
{
    kn_shmc_free(c);
    free(c->ranks);
    free(c->local_cr);
    free((void *)c->local.job);
    free(c->leader_cr);
    free((void *)c->leaders.job);
    free(c->node_idx);
    free(c->off_mask);
    free(c);
}

knit_status_t knit_comm_create(knit_ctx_t *ctx, const int *ranks, int n, uint32_t comm_id,
                               knit_comm_t **out)
{
    kn_coll_t *coll = kn_coll_of(ctx);
    if (!coll || !ranks || n < 1 || !out || (comm_id & KNIT_COLL_CTX_BIT))
        return KNIT_ERR_INVAL;
    int jsize = kn_coll_job_size(coll), me = kn_coll_job_rank(coll);
    knit_comm_t *c = calloc(1, sizeof(*c));
    if (!c)
        return KNIT_ERR_NOMEM;
    c->coll = coll;
    c->id = comm_id;
    c->cid = comm_id | KNIT_COLL_CTX_BIT;
    c->ranks = malloc((size_t)n * sizeof(int));
    c->node_idx = malloc((size_t)n * sizeof(int));
    c->local_cr = malloc((size_t)n * sizeof(int));
    int *local_job = malloc((size_t)n * sizeof(int));
    c->leader_cr = malloc((size_t)n * sizeof(int));
    int *leader_job = malloc((size_t)n * sizeof(int));
    char *seen = calloc((size_t)jsize, 1);
    int *node_leader = malloc((size_t)jsize * sizeof(int)); /* node -> leader index */
    int *node_count = calloc((size_t)jsize, sizeof(int));
    int *node_last = malloc((size_t)jsize * sizeof(int));
    c->local.job = local_job;
    c->leaders.job = leader_job;
    knit_status_t st = KNIT_ERR_NOMEM;
    if (!c->ranks || !c->node_idx || !c->local_cr || !local_job || !c->leader_cr || !leader_job ||
        !seen || !node_leader || !node_count || !node_last)
        goto out;
    st = KNIT_ERR_INVAL;
    c->g.rank = -1;
    for (int i = 0; i < n; i++) {
        int r = ranks[i];
        if (r < 0 || r >= jsize || seen[r]) {
            kn_error("knit_comm_create: rank %d (entry %d) is %s", r, i,
                     r < 0 || r >= jsize ? "out of range" : "listed twice");
            goto out;
        }
        seen[r] = 1;
        c->ranks[i] = r;
        if (r == me)
            c->g.rank = i;
    }
    c->g.size = n;
    c->g.job = c->ranks;
    /* nodes in order of first appearance; a node is contiguous when its
     * ranks follow each other in the communicator */
    int mynode = kn_coll_node_of(coll, me);
    c->node_contig = 1;
    c->local.rank = -1;
    for (int i = 0; i < n; i++) {
        int nd = kn_coll_node_of(coll, c->ranks[i]);
        if (!node_count[nd]) {
            node_leader[nd] = c->nnodes;
            c->leader_cr[c->nnodes] = i;
            leader_job[c->nnodes] = c->ranks[i];
            c->nnodes++;
        } else if (node_last[nd] != i - 1) {
            c->node_contig = 0;
        }
        node_last[nd] = i;
        node_count[nd]++;
        if (node_count[nd] > c->max_local)
            c->max_local = node_count[nd];
        c->node_idx[i] = node_leader[nd];
        if (nd == mynode) {
            if (i == c->g.rank)
                c->local.rank = c->local.size;
            c->local_cr[c->local.size] = i;
            local_job[c->local.size++] = c->ranks[i];
        }
    }
    c->leaders.size = c->nnodes;
    c->leaders.rank = -1;
    for (int k = 0; k < c->nnodes; k++)
        if (c->leader_cr[k] == c->g.rank)
            c->leaders.rank = k;
    if (c->g.rank < 0) {
        c->local.size = 0;
        c->local.rank = -1;
    }
    st = KNIT_OK;
out:
    free(seen);
    free(node_leader);
    free(node_count);
    free(node_last);
    if (st != KNIT_OK) {
        comm_free(c);
        return st;
    }
    *out = c;
    return KNIT_OK;
}

void knit_comm_destroy(knit_comm_t *comm)
{
    if (comm && !comm->is_world)
        comm_free(comm);
}

int knit_comm_rank(const knit_comm_t *comm)
{
    return comm ? comm->g.rank : -1;
}

int knit_comm_size(const knit_comm_t *comm)
{
    return comm ? comm->g.size : 0;
}

int knit_comm_job_rank(const knit_comm_t *comm, int r)
{
    return comm && r >= 0 && r < comm->g.size ? comm->ranks[r] : -1;
}
