/*
 * Bootstrap store through knitrun: every rank puts a value of its own
 * (sizes vary, rank 0's is large), fences, and reads every other rank's
 * back.  Then a get that has to wait: rank 0 asks for a key that the last
 * rank puts only after a second fence.  Prints "kv ok" per rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"
#include "core/ctx.h"
#include "knit.h"

static size_t value_len(int rank)
{
    return rank == 0 ? 300000 : 1 + (size_t)rank * 37;
}

static void fill(char *buf, size_t len, int rank)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)('a' + (rank * 7 + i) % 26);
}

#define CHECK(c, ...)                                                           \
    do {                                                                        \
        if (!(c)) {                                                             \
            fprintf(stderr, "rank %d: ", rank);                       \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            return 1;                                                           \
        }                                                                       \
    } while (0)

int main(int argc, char **argv)
{
    knit_ctx_t *ctx;
    int rank = -1;
    knit_status_t st = knit_init(&argc, &argv, &ctx);
    CHECK(st == KNIT_OK, "init: %s", knit_strerror(st));
    rank = knit_rank(ctx);
    int size = knit_size(ctx);
    kn_boot_t *b = ctx->boot;
    char key[32];
    char *val = malloc(value_len(0)), *got = malloc(value_len(0));
    CHECK(val && got, "out of memory");
    snprintf(key, sizeof(key), "kv-%d", rank);
    fill(val, value_len(rank), rank);
    CHECK(kn_boot_put(b, key, val, value_len(rank)) == KNIT_OK, "put failed");
    CHECK(kn_boot_fence(b) == KNIT_OK, "fence failed");
    for (int r = 0; r < size; r++) {
        size_t len = 0;
        snprintf(key, sizeof(key), "kv-%d", r);
        st = kn_boot_get(b, key, got, value_len(0), &len);
        CHECK(st == KNIT_OK, "get %s: %s", key, knit_strerror(st));
        fill(val, value_len(r), r);
        CHECK(len == value_len(r) && !memcmp(got, val, len), "wrong value for %s", key);
    }
    /* a value that does not fit says how long it is */
    if (size > 1) {
        size_t len = 0;
        st = kn_boot_get(b, "kv-0", got, 10, &len);
        CHECK(st == KNIT_ERR_TRUNCATE && len == value_len(0), "truncation not reported");
    }
    /* invalid keys are refused locally */
    CHECK(kn_boot_put(b, "has space", "x", 1) == KNIT_ERR_INVAL, "bad key accepted");
    CHECK(kn_boot_fence(b) == KNIT_OK, "second fence failed");
    if (rank == size - 1)
        CHECK(kn_boot_put(b, "late", "done", 4) == KNIT_OK, "put late failed");
    if (rank == 0) {
        size_t len = 0;
        st = kn_boot_get(b, "late", got, 16, &len); /* waits for the put */
        CHECK(st == KNIT_OK && len == 4 && !memcmp(got, "done", 4), "late get: %s",
              knit_strerror(st));
    }
    /* putting again replaces */
    snprintf(key, sizeof(key), "kv-%d", rank);
    CHECK(kn_boot_put(b, key, "new", 3) == KNIT_OK, "re-put failed");
    CHECK(kn_boot_fence(b) == KNIT_OK, "third fence failed");
    size_t len = 0;
    snprintf(key, sizeof(key), "kv-%d", (rank + 1) % size);
    CHECK(kn_boot_get(b, key, got, 16, &len) == KNIT_OK && len == 3 && !memcmp(got, "new", 3),
          "replaced value not seen");
    free(val);
    free(got);
    CHECK(knit_finalize(ctx) == KNIT_OK, "finalize failed");
    printf("kv ok %d\n", rank);
    return 0;
}
