/*
 * Cookie rejection: after joining the job, each rank tries the store with
 * a wrong cookie (must get KNIT_ERR_AUTH) and with a malformed header
 * (the store must close the connection), then checks the store still
 * serves it.  Prints "cookie ok".
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/boot.h"
#include "boot/proto.h"
#include "core/ctx.h"
#include "knit.h"
#include "util/env.h"

/* The store closes a connection that sends garbage: read sees EOF. */
static int garbage_refused(const char *addrs)
{
    char first[256];
    snprintf(first, sizeof(first), "%.*s", (int)strcspn(addrs, ","), addrs);
    struct sockaddr_storage ss;
    socklen_t len;
    if (kn_boot_addr_parse(first, &ss, &len) != KNIT_OK)
        return 0;
    int fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0)
        return 0;
    uint8_t junk[KN_BOOT_HDR_SIZE];
    kn_boot_hdr_encode(junk, KN_BOOT_HELLO, KN_BOOT_HELLO_LEN);
    junk[0] ^= 0xff; /* bad magic */
    if (write(fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
        return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int closed = poll(&p, 1, 10000) == 1 && read(fd, junk, 1) <= 0;
    close(fd);
    return closed;
}

int main(int argc, char **argv)
{
    knit_ctx_t *ctx;
    if (knit_init(&argc, &argv, &ctx) != KNIT_OK)
        return 1;
    const char *addrs = getenv(KN_ENV_BOOT_ADDR);
    const char *cookie = getenv(KN_ENV_COOKIE);
    if (!addrs || !cookie) {
        fprintf(stderr, "not started by knitrun\n");
        return 1;
    }
    char wrong[KN_BOOT_COOKIE_LEN + 1];
    snprintf(wrong, sizeof(wrong), "%s", cookie);
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    kn_boot_t *bad = NULL;
    knit_status_t st = kn_boot_connect(addrs, wrong, KN_BOOT_ROLE_RANK, knit_rank(ctx), &bad);
    if (st != KNIT_ERR_AUTH) {
        fprintf(stderr, "wrong cookie: got %s, expected refusal\n", knit_strerror(st));
        return 1;
    }
    if (!garbage_refused(addrs)) {
        fprintf(stderr, "malformed header was not refused\n");
        return 1;
    }
    /* the job goes on */
    char key[32], val[32];
    size_t len;
    snprintf(key, sizeof(key), "c-%d", knit_rank(ctx));
    if (kn_boot_put(ctx->boot, key, "v", 1) != KNIT_OK || kn_boot_fence(ctx->boot) != KNIT_OK ||
        kn_boot_get(ctx->boot, "c-0", val, sizeof(val), &len) != KNIT_OK) {
        fprintf(stderr, "store unusable after the refusals\n");
        return 1;
    }
    int rank = knit_rank(ctx);
    if (knit_finalize(ctx) != KNIT_OK)
        return 1;
    printf("cookie ok %d\n", rank);
    return 0;
}
