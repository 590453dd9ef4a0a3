/*
 * The PMI-1 / PMI-2 client (src/boot/pmi.c): what a PMI server answers
 * is outside bytes.  The first input byte picks the version knit asks for
 * (0 negotiates, 1 and 2 insist); the rest is everything the server says,
 * waiting in the socket of PMI_FD, after which the server says no more.  The client walks a
 * whole start (init, the process mapping, a put, the fence, a get) and
 * finalize: whatever the answers, each step returns (an error, or a
 * value that fits its buffer), never reads past what came, and never
 * hangs (the closed socket ends every read).
 */
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/launcher.h"
#include "fuzz.h"
#include "util/log.h"

KN_FUZZ_TARGET(pmi)
{
    if (size < 1 || size > 32768) /* a socket buffer's worth: the answers wait in it */
        return 0;
    int sv[2];
    KN_FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    KN_FUZZ_CHECK(write(sv[1], data + 1, size - 1) == (ssize_t)(size - 1));
    /* the server says no more; what the client sends waits unread in
     * sv[1] (a few short messages: it never fills the buffer) */
    KN_FUZZ_CHECK(shutdown(sv[1], SHUT_WR) == 0);
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", sv[0]);
    setenv("PMI_FD", fd, 1);
    setenv("PMI_RANK", "1", 1);
    setenv("PMI_SIZE", "3", 1);
    kn_log_set_level(-1); /* quiet */
    kn_launcher_t *l = &kn_launch_pmi;
    l->version = data[0] % 3;
    l->rank = -1;
    char why[512] = "", buf[KN_LAUNCH_VAL_MAX];
    if (l->init(l, why, sizeof(why)) == KNIT_OK) {
        KN_FUZZ_CHECK(l->rank == 1 && l->size == 3 && (l->version == 1 || l->version == 2));
        int node_of[3];
        if (l->nodes(l, node_of, why, sizeof(why)) == KNIT_OK)
            for (int r = 0; r < 3; r++)
                KN_FUZZ_CHECK(node_of[r] >= 0);
        (void)l->put(l, "knit.job", "a!b!c");
        (void)l->fence(l);
        if (l->get(l, 0, "knit.job", buf, sizeof(buf)) == KNIT_OK)
            KN_FUZZ_CHECK(memchr(buf, '\0', sizeof(buf)) != NULL);
        l->finalize(l);
    } else {
        KN_FUZZ_CHECK(memchr(why, '\0', sizeof(why)) && why[0]);
    }
    close(sv[0]);
    close(sv[1]);
    return 0;
}
