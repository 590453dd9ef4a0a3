/*
 * KNIT_COLL_OFFLOAD=auto: where the offloaded collectives measured faster
 * than the hosts' algorithms (docs/collectives.md, "Choosing").  The
 * measurements are a table in a file (KNIT_COLL_OFFLOAD_TABLE), written
 * by `bench/model --crossover FILE` on the machine it describes:
 *
 *     # op        nodes  from  to
 *     allreduce   8      0     4k
 *     barrier     8      0     0
 *     bcast       2      -
 *
 * One row per collective and node count: the range of vector sizes
 * (bytes, inclusive, with k/m/g suffixes) where the offloaded form won at
 * that many nodes, or "-" where it never did.  A communicator of N nodes
 * takes the row of its collective with the most nodes up to N; without
 * one, or without a table, the hosts' algorithms run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/coll_mod.h"
#include "util/config.h"

#define XOVER_MAX 256

static struct {
    struct row {
        int kind, nodes, never;
        uint64_t from, to;
    } rows[XOVER_MAX];
    int n;
    char path[512];
} X;

static const char *const kinds[] = {[KN_COLL_MOD_BARRIER] = "barrier", [KN_COLL_MOD_BCAST] = "bcast",
                                    [KN_COLL_MOD_REDUCE] = "reduce", [KN_COLL_MOD_ALLREDUCE] = "allreduce"};

static int kind_of(const char *name)
{
    for (int k = KN_COLL_MOD_BARRIER; k <= KN_COLL_MOD_ALLREDUCE; k++)
        if (!strcmp(name, kinds[k]))
            return k;
    return -1;
}

knit_status_t kn_coll_xover_load(const char *path, char *err, size_t elen)
{
    X.n = 0;
    X.path[0] = '\0';
    if (!path || !*path)
        return KNIT_OK;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, elen, "KNIT_COLL_OFFLOAD_TABLE=%s: %s", path, strerror(errno));
        return KNIT_ERR_IO;
    }
    char line[256];
    int ln = 0;
    knit_status_t st = KNIT_OK;
    while (st == KNIT_OK && fgets(line, sizeof(line), f)) {
        ln++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char op[32], a[32] = "", b[32] = "", extra[8];
        int nodes;
        int got = sscanf(line, "%31s %d %31s %31s %7s", op, &nodes, a, b, extra);
        if (got <= 0)
            continue; /* blank or comment */
        struct row r = {.kind = kind_of(op), .nodes = nodes};
        if (got == 3 && !strcmp(a, "-"))
            r.never = 1;
        else if (got != 4 || kn_parse_size(a, &r.from) != KNIT_OK || kn_parse_size(b, &r.to) != KNIT_OK ||
                 r.from > r.to)
            r.kind = -2;
        if (r.kind == -1 || r.kind == -2 || got < 3 || nodes < 1 || X.n == XOVER_MAX) {
            snprintf(err, elen, "%s:%d: %s", path, ln,
                     X.n == XOVER_MAX ? "too many rows"
                     : r.kind == -1   ? "not a collective (barrier, bcast, reduce, allreduce)"
                                      : "expected: collective, nodes, then a size range (from to) or -");
            st = KNIT_ERR_INVAL;
            break;
        }
        X.rows[X.n++] = r;
    }
    fclose(f);
    if (st != KNIT_OK)
        X.n = 0;
    else
        snprintf(X.path, sizeof(X.path), "%s", path);
    return st;
}

/* The row a communicator of nnodes nodes takes for kind, or NULL. */
static const struct row *row_of(int kind, int nnodes)
{
    const struct row *best = NULL;
    for (int i = 0; i < X.n; i++) {
        const struct row *r = &X.rows[i];
        if (r->kind == kind && r->nodes <= nnodes && (!best || r->nodes > best->nodes))
            best = r;
    }
    return best;
}

int kn_coll_xover_offloads(int kind, int nnodes, size_t bytes)
{
    const struct row *r = row_of(kind, nnodes);
    return r && !r->never && bytes >= r->from && bytes <= r->to;
}

int kn_coll_xover_any(void)
{
    for (int i = 0; i < X.n; i++)
        if (!X.rows[i].never)
            return 1;
    return 0;
}

void kn_coll_xover_print(FILE *f)
{
    if (!X.path[0]) {
        fprintf(f, "  no measurements (KNIT_COLL_OFFLOAD_TABLE; bench/model --crossover FILE writes one): "
                   "the hosts' algorithms everywhere\n");
        return;
    }
    fprintf(f, "  measured (%s), offloaded where faster:\n", X.path);
    for (int i = 0; i < X.n; i++) {
        const struct row *r = &X.rows[i];
        char a[32], b[32];
        kn_format_size(r->from, a, sizeof(a));
        kn_format_size(r->to, b, sizeof(b));
        if (r->never)
            fprintf(f, "    %-10s from %4d nodes: never\n", kinds[r->kind], r->nodes);
        else
            fprintf(f, "    %-10s from %4d nodes: %s to %s\n", kinds[r->kind], r->nodes, a, b);
    }
}
