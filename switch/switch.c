/*
 * knit-switch: one per job, the programmable "switch".  Star-connected to
 * every agent through libfabric; hosts module instances (the daemon core,
 * src/offload/daemon.c) that agents send to and that can multicast to
 * every agent.  It has no ranks of its own: requests for modules loaded
 * with KNIT_MODULE_SWITCH reach it forwarded by the rank's agent.
 */
#include "offload/daemon.h"
#include "util/log.h"

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (kn_d_start(1, NULL) != KNIT_OK)
        return 1;
    knit_status_t st = kn_d_net_start();
    if (st != KNIT_OK) {
        kn_error("network between daemons: %s", knit_strerror(st));
        return 1;
    }
    return kn_d_run();
}
