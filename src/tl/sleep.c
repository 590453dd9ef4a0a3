/* Sleeping on several transports at once: arm each, poll all, disarm. */
#include <errno.h>
#include <poll.h>

#include "tl/tl.h"
#include "util/log.h"
#include "util/time.h"

int kn_tl_sleep(kn_tl_t *const *tls, int n, const int *extra, int nextra, uint64_t timeout_ns,
                int (*ready)(void *), void *ready_arg)
{
    struct pollfd fds[12];
    kn_tl_t *armed[8];
    int k = 0, busy = 0, extra_ready = 0;
    if (nextra > 4)
        nextra = 4;
    for (int i = 0; i < n && k < 8; i++) {
        if (!tls[i]->ops->arm)
            continue;
        int fd = tls[i]->ops->arm(tls[i]);
        armed[k] = tls[i];
        fds[k].fd = fd;
        fds[k].events = POLLIN;
        fds[k].revents = 0;
        k++;
        if (fd < 0) {
            busy = 1;
            break;
        }
    }
    int woke = 0;
    if (!busy && ready && ready(ready_arg)) {
        busy = 1;
        woke = KN_TL_WOKE_READY;
    }
    if (!busy && k + nextra) {
        for (int i = 0; i < nextra; i++)
            fds[k + i] = (struct pollfd){.fd = extra[i], .events = POLLIN};
        int ms = (int)((timeout_ns + KN_NSEC_PER_MSEC - 1) / KN_NSEC_PER_MSEC);
        if (poll(fds, (nfds_t)(k + nextra), ms) < 0 && errno != EINTR)
            kn_warn("poll while waiting: %m");
        for (int i = 0; i < nextra; i++)
            extra_ready |= fds[k + i].revents != 0;
    }
    for (int i = 0; i < k; i++)
        armed[i]->ops->disarm(armed[i]);
    return woke | (extra_ready ? KN_TL_WOKE_EXTRA : 0);
}
