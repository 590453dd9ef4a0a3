/* Prints where this rank is, and checks that the runtime's view agrees
 * with the environment knitrun set.  Used by `make run` and the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "knit.h"

static int env_is(const char *name, int want)
{
    const char *v = getenv(name);
    return !v || atoi(v) == want; /* unset: a singleton */
}

int main(int argc, char **argv)
{
    knit_ctx_t *ctx;
    knit_status_t st = knit_init(&argc, &argv, &ctx);
    if (st != KNIT_OK) {
        fprintf(stderr, "knit_init: %s\n", knit_strerror(st));
        return 1;
    }
    int ok = env_is("KNIT_RANK", knit_rank(ctx)) && env_is("KNIT_SIZE", knit_size(ctx)) &&
             env_is("KNIT_NODE", knit_node(ctx)) && env_is("KNIT_NNODES", knit_nnodes(ctx)) &&
             env_is("KNIT_LOCAL_RANK", knit_local_rank(ctx)) &&
             env_is("KNIT_LOCAL_SIZE", knit_local_size(ctx)) &&
             knit_node_of(ctx, knit_rank(ctx)) == knit_node(ctx) &&
             knit_first_local(ctx) + knit_local_rank(ctx) == knit_rank(ctx);
    /* placement is block-wise: node_of never decreases */
    for (int r = 1; r < knit_size(ctx); r++)
        ok &= knit_node_of(ctx, r) >= knit_node_of(ctx, r - 1);
    printf("rank %d of %d on node %d of %d, local rank %d of %d, host %s%s\n", knit_rank(ctx),
           knit_size(ctx), knit_node(ctx), knit_nnodes(ctx), knit_local_rank(ctx),
           knit_local_size(ctx), ctx->hostname, ok ? "" : " GEOMETRY-MISMATCH");
    fflush(stdout);
    st = knit_finalize(ctx);
    if (st != KNIT_OK) {
        fprintf(stderr, "knit_finalize: %s\n", knit_strerror(st));
        return 1;
    }
    return ok ? 0 : 1;
}
