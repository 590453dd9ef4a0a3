/* Only starts and stops the runtime: what bench/startup.sh times. */
#include <stdio.h>

#include "knit.h"

int main(int argc, char **argv)
{
    knit_ctx_t *ctx;
    knit_status_t st = knit_init(&argc, &argv, &ctx);
    if (st == KNIT_OK)
        st = knit_finalize(ctx);
    if (st != KNIT_OK)
        fprintf(stderr, "nop: %s\n", knit_strerror(st));
    return st == KNIT_OK ? 0 : 1;
}
