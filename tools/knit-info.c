/* knit-info: what knit is, what it can use on this node, every tunable. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knit.h"
#include "knit/module.h"
#include "net/net.h"
#include "shm/shm.h"
#include "util/config.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: knit-info [-e] [--tunables-md] [-h]\n"
               "  (no option)      version, mechanisms available here, thresholds in force\n"
               "  -e, --tunables   every tunable: value in force, default, help\n"
               "  --tunables-md    the tunables as a Markdown table (docs/tunables.md)\n");
}

static void show_size(const char *what, const char *name)
{
    char buf[64];
    kn_config_format(kn_config_find(name), &kn_cfg, buf, sizeof(buf));
    printf("  %-34s %s (KNIT_%s)\n", what, buf, name);
}

static void show_node(void)
{
    char why[256];
    int cma = kn_shm_cma_probe(why, sizeof(why));
    cpu_set_t set;
    int ncpu = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    printf("knit %s\n\n", KNIT_VERSION_STRING);
    printf("this node\n");
    printf("  %-34s %d\n", "cores available", ncpu);
    printf("  %-34s %s\n", "cross-memory attach", cma ? "yes" : why);
    printf("\nmechanisms within a node (shared memory)\n");
    printf("  %-34s payload inside the one-cache-line queue entry\n", "inline");
    printf("  %-34s payload copied through the peer's queue buffer\n", "eager");
    if (kn_cfg.cma == 2)
        printf("  %-34s off (KNIT_CMA=off): pipelined copy through the queue buffer\n", "push / pull");
    else if (cma)
        printf("  %-34s process_vm_writev / process_vm_readv (one copy)\n", "push / pull");
    else
        printf("  %-34s unavailable (%s): pipelined copy through the queue buffer\n", "push / pull", why);
    printf("\nmechanisms between nodes\n");
    char net[512];
    int net_ok = kn_net_probe(kn_cfg.net_provider, kn_cfg.net_iface, net, sizeof(net));
    printf("  %-34s %s (KNIT_NET_PROVIDER=%s%s%s)\n", "network transport", net_ok ? net : "unavailable",
           kn_cfg.net_provider, *kn_cfg.net_iface ? ", KNIT_NET_IFACE=" : "", kn_cfg.net_iface);
    if (!net_ok)
        printf("  %-34s %s\n", "why", net);
    printf("  %-34s fi_inject / fi_send into pre-posted bounce buffers, %s each, %d credits per peer\n",
           "inline / eager", "KNIT_NET_BOUNCE_SIZE", (int)kn_cfg.net_credits);
    show_size("eager up to (several packets)", "NET_EAGER_MAX");
    printf("  %-34s fi_write / fi_read, registration cache up to KNIT_RCACHE_MAX\n", "push / pull");
    printf("  %-34s %s\n", "network within a node", kn_cfg.net_only ? "yes (KNIT_NET_ONLY=1)" : "no (shared memory)");
    printf("\nthresholds in force\n");
    show_size("inline up to", "INLINE_MAX");
    show_size("eager up to", "EAGER_MAX");
    show_size("cross-memory attach from", "CMA_MIN");
    show_size("rendezvous step", "BULK_CHUNK");
    show_size("queue entries per peer", "SHM_RING");
    show_size("payload buffer per peer", "SHM_BUFFER");
    show_size("cooperative copy chunk", "COOP_CHUNK");
    char w[64];
    kn_config_format(kn_config_find("WAIT"), &kn_cfg, w, sizeof(w));
    printf("  %-34s %s (KNIT_WAIT)\n", "waiting", w);
    printf("\noffload (docs/modules.md)\n");
    printf("  %-34s %u (include/knit/module.h)\n", "module ABI version", KNIT_MOD_ABI_VERSION);
    printf("  %-34s %s\n", "daemons with every job", kn_cfg.offload ? "knit-agent per node, knit-switch per job"
                                                                     : "none (KNIT_OFFLOAD=0)");
    show_size("module handler budget", "MODULE_BUDGET");
    show_size("idle daemon polls for", "AGENT_SPIN");
    printf("  %-34s %s (KNIT_STATS)\n", "traffic report at job end", kn_cfg.stats ? "yes" : "no");
    printf("\nknit-info -e lists every tunable\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tunables", no_argument, NULL, 'e'},
        {"tunables-md", no_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int mode = 0, c;
    while ((c = getopt_long(argc, argv, "eh", opts, NULL)) != -1) {
        switch (c) {
        case 'e': mode = 'e'; break;
        case 'M': mode = 'M'; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (mode == 'M') {
        kn_config_print_markdown(stdout);
        return 0;
    }
    int bad = kn_config_load() != KNIT_OK;
    if (mode == 'e')
        kn_config_print(stdout);
    else
        show_node();
    return bad;
}
