/* Sleeping on several transports at once: arm each, poll all, disarm. */
#include <errno.h>
#include <poll.h>

#include "tl/tl.h"
#include "util/log.h"
#include "util/time.h"

void kn_tl_sleep(kn_tl_t *const *tls, int n, uint64_t timeout_ns)
{
    struct pollfd fds[8];
    kn_tl_t *armed[8];
    int k = 0, busy = 0;
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
    if (!busy && k) {
        int ms = (int)((timeout_ns + KN_NSEC_PER_MSEC - 1) / KN_NSEC_PER_MSEC);
        if (poll(fds, (nfds_t)k, ms) < 0 && errno != EINTR)
            kn_warn("poll while waiting: %m");
    }
    for (int i = 0; i < k; i++)
        armed[i]->ops->disarm(armed[i]);
}
