#include <errno.h>
#include <stdlib.h>

#include "util/nodemap.h"

int kn_node_sizes_parse(const char *sizes, int size, int **first)
{
    *first = NULL;
    int nnodes = 1;
    for (const char *p = sizes; *p; p++)
        nnodes += *p == ',';
    if (size < 1 || nnodes > size)
        return -1;
    int *f = malloc(((size_t)nnodes + 1) * sizeof(int));
    if (!f)
        return -1;
    const char *p = sizes;
    int total = 0;
    for (int n = 0; n < nnodes; n++) {
        char *end;
        errno = 0;
        long k = strtol(p, &end, 10);
        if (errno || end == p || k < 1 || k > size - total || (*end != ',' && *end != '\0')) {
            free(f);
            return -1;
        }
        f[n] = total;
        total += (int)k;
        p = end + (*end == ',');
    }
    if (total != size) {
        free(f);
        return -1;
    }
    f[nnodes] = total;
    *first = f;
    return nnodes;
}
