/* knit-info: what knit is, what it can use on this node, every tunable. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/launcher.h"
#include "coll/coll.h"
#include "core/nodeshm.h"
#include "knit.h"
#include "knit/module.h"
#include "net/net.h"
#include "rma/rma.h"
#include "shm/shm.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/env.h"
#include "util/heap.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: knit-info [-e] [--tunables-md] [--shm N] [--rma] [-h]\n"
               "  (no option)      version, mechanisms available here, thresholds in force\n"
               "  -e, --tunables   every tunable: value in force, default, help\n"
               "  --tunables-md    the tunables as a Markdown table (docs/tunables.md)\n"
               "  --shm N          the shared memory a node of N ranks takes, file by file\n"
               "                   (with the tunables in force; KNIT_OFFLOAD=0: no agent)\n"
               "  --rma            the one-sided cost model measured here, and the method\n"
               "                   KNIT_RMA_METHOD=auto picks for a table of shapes\n");
}

static void show_size(const char *what, const char *name)
{
    char buf[64];
    kn_config_format(kn_config_find(name), &kn_cfg, buf, sizeof(buf));
    printf("  %-34s %s (KNIT_%s)\n", what, buf, name);
}

/* The cpus of the host's job and of this process, and the binding knitrun
 * gives ranks (docs/knitrun.md, "Binding"). */
static void show_cpus(void)
{
    cpu_set_t set;
    char list[256] = "?";
    int mine = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        mine = CPU_COUNT(&set);
        kn_cpus_format(&set, list, sizeof(list));
    }
    int host = kn_cpus_host();
    const char *procs = getenv(KN_ENV_HOST_PROCS);
    printf("  %-34s %d%s\n", "cpus of the job on this host", host,
           getenv(KN_ENV_HOST_CPUS) ? " (KNIT_HOST_CPUS, from the launcher)" : "");
    printf("  %-34s %s%s\n", "this process runs on cpus", list, mine < host ? " (bound)" : "");
    if (procs)
        printf("  %-34s %s: %s\n", "ranks of the job on this host", procs,
               atoi(procs) > host ? "oversubscribed (waits give the cpu away at once)"
                                  : "not oversubscribed (waits spin, then yield, then sleep)");
    const char *daemons = getenv(KN_ENV_HOST_DAEMONS);
    if (daemons)
        printf("  %-34s %s (waits count them once a module is loaded: they then work for the ranks)\n",
               "offload daemons on this host", daemons);
    char b[64], m[64];
    kn_config_format(kn_config_find("BIND_TO"), &kn_cfg, b, sizeof(b));
    kn_config_format(kn_config_find("MAP_BY"), &kn_cfg, m, sizeof(m));
    printf("  %-34s bind to %s, map by %s (KNIT_BIND_TO, KNIT_MAP_BY)\n", "knitrun places ranks", b, m);
}

static void show_node(void)
{
    char why[256];
    int cma = kn_shm_cma_probe(why, sizeof(why));
    printf("knit %s\n\n", KNIT_VERSION_STRING);
    printf("this node\n");
    show_cpus();
    int kind;
    char lwhy[512];
    if (kn_launch_detect(&kind, lwhy, sizeof(lwhy)) == KNIT_OK)
        printf("  %-34s %s (KNIT_BOOTSTRAP=%s)\n", "started by", kn_launch_kind_name(kind),
               getenv("KNIT_BOOTSTRAP") ? getenv("KNIT_BOOTSTRAP") : "auto");
    else
        printf("  %-34s %s\n", "started by", lwhy);
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
    if (!kn_heap_built())
        printf("  %-34s not in this build (a sanitizer's allocator serves the ranks)\n", "shared heap");
    else if (!kn_cfg.heap)
        printf("  %-34s off (KNIT_HEAP=0)\n", "shared heap");
    else
        printf("  %-34s ranks' allocations from KNIT_HEAP_MIN on: a memcpy between two of them (docs/guide.md)\n",
               "shared heap");
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
    printf("\ncollectives in the network (KNIT_COLL_OFFLOAD=%s)\n",
           kn_cfg.coll_offload == 1 ? "on: every one they can take" : kn_cfg.coll_offload == 2 ? "off" : "auto");
    if (kn_cfg.coll_offload == 0) {
        char err[600];
        if (kn_coll_xover_load(kn_cfg.coll_offload_table, err, sizeof(err)) != KNIT_OK)
            printf("  %s\n", err);
        kn_coll_xover_print(stdout);
    }
    printf("\nthresholds in force\n");
    show_size("inline up to", "INLINE_MAX");
    show_size("eager up to", "EAGER_MAX");
    show_size("cross-memory attach from", "CMA_MIN");
    show_size("shared heap from", "HEAP_MIN");
    show_size("rendezvous step", "BULK_CHUNK");
    show_size("shared memory of a node at most", "SHM_MAX");
    show_size("inbound queue of a rank", "SHM_QUEUE");
    show_size("send buffer, fast box buffer", "SHM_BUFFER");
    show_size("fast boxes per rank", "SHM_FASTBOXES");
    show_size("fast box after packets", "SHM_FASTBOX_AFTER");
    show_size("fast box ring entries", "SHM_RING");
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
    printf("\nreplicated region (docs/dsm.md)\n");
    char pr[32], at[64];
    kn_config_format(kn_config_find("DSM_PROTOCOL"), &kn_cfg, pr, sizeof(pr));
    kn_config_format(kn_config_find("DSM_ADDR"), &kn_cfg, at, sizeof(at));
    printf("  %-34s %s (KNIT_DSM_PROTOCOL)%s\n", "protocol", pr,
           kn_cfg.dsm_protocol ? ": home-based lazy release consistency (diffs to homes, invalidation at acquires)"
                               : ": the write-update ring of the node agents");
    show_size("region of knit_dsm_init(ctx, 0)", "DSM_SIZE");
    printf("  %-34s %s (KNIT_DSM_ADDR)\n", "address in every rank", at);
    show_size("update bytes in flight per node", "DSM_WINDOW");
    show_size("data bytes per update message", "DSM_FRAME");
    show_size("invalidate: pages homed in blocks of", "DSM_HOME_BLOCK");
    printf("\nknit-info -e lists every tunable\n");
}

static void show_bytes(const char *what, uint64_t b, const char *note)
{
    printf("  %-30s %12.1f KiB  %12llu bytes%s%s\n", what, (double)b / 1024.0, (unsigned long long)b,
           *note ? "  " : "", note);
}

/* The node's plan (core/nodeshm.h) for n ranks: what docs/guide.md's
 * formula gives, from the function knitrun and knit_init check. */
static int show_shm(const char *arg)
{
    char *end;
    long n = strtol(arg, &end, 10);
    if (*end || end == arg || n < 1 || n > 65535) {
        fprintf(stderr, "knit-info: --shm %s: expected a number of ranks (1 to 65535)\n", arg);
        return 2;
    }
    kn_node_shm_t p;
    char msg[700], cap[32];
    knit_status_t st = kn_node_shm_plan(&kn_cfg, (int)n, kn_cfg.offload, &p, msg, sizeof(msg));
    kn_format_size(kn_cfg.shm_max, cap, sizeof(cap));
    printf("shared memory (/dev/shm) of a node of %ld ranks, KNIT_SHM_MAX=%s\n", n, cap);
    if (st == KNIT_ERR_INVAL) {
        printf("  %s\n", msg);
        return 1;
    }
    char note[128];
    snprintf(note, sizeof(note), "at start, of %llu", (unsigned long long)p.p2p);
    show_bytes("node segment", p.p2p_start, note);
    snprintf(note, sizeof(note), "%u boxes of %zu bytes, as handed out", p.boxes, p.box_size);
    show_bytes("fast boxes", p.p2p - p.p2p_start, note);
    show_bytes("collectives' segment", p.coll, "a communicator of every rank");
    show_bytes("offload command queue", p.agent, p.offload ? "" : "(no agent)");
    show_bytes("at start", p.start, "node segment and command queue");
    show_bytes("in full", p.full, "every file above, every box in use");
    show_bytes("minimum", p.minimum, "without fast boxes: what KNIT_SHM_MAX must allow");
    show_bytes("collectives' budget", p.budget, p.cap ? "all communicators' segments together" : "no limit");
    if (st != KNIT_OK) {
        printf("  refused: %s\n", msg);
        return 1;
    }
    return 0;
}

/* knit-info --rma: the model's parameters, measured now, and auto's
 * choice per shape (docs/rma.md, "Choosing a method"). */
static int show_rma(void)
{
    const kn_rma_model_t *m = kn_rma_model_measure(1, NULL);
    char meth[32], path[512];
    kn_config_format(kn_config_find("RMA_METHOD"), &kn_cfg, meth, sizeof(meth));
    if (kn_rma_model_cache_path(path, sizeof(path)))
        printf("one-sided cost model (measured now, written to %s):\n", path);
    else
        printf("one-sided cost model (measured now; KNIT_RMA_MODEL_CACHE=off: every process measures):\n");
    printf("  ts_cma  one cross-memory-attach call    %8.1f ns\n", m->ts_cma);
    printf("  tn_cma  cross-memory attach per byte    %8.4f ns (%.1f GB/s)\n", m->tn_cma,
           m->tn_cma > 0 ? 1 / m->tn_cma : 0);
    printf("  ts_cp   one small memcpy                %8.1f ns\n", m->ts_cp);
    printf("  tm      memcpy per byte                 %8.4f ns (%.1f GB/s)\n", m->tm, m->tm > 0 ? 1 / m->tm : 0);
    printf("method in force: %s (KNIT_RMA_METHOD)\n", meth);
    printf("auto's choice: within a node direct; to another node, by the origin's memory\n");
    printf("  %8s %6s   %-22s   %-22s\n", "block", "blocks", "shared heap (agent/pack us)",
           "other memory (agent/pack us)");
    static const size_t bs[] = {8, 64, 512, 4096, 65536}, nb[] = {1, 16, 256, 1024, 4096};
    for (size_t i = 0; i < sizeof(bs) / sizeof(bs[0]); i++)
        for (size_t j = 0; j < sizeof(nb) / sizeof(nb[0]); j++) {
            char a[2][48];
            for (int mapped = 1; mapped >= 0; mapped--)
                snprintf(a[!mapped], sizeof(a[0]), "%-6s %7.2f/%-7.2f",
                         knit_rma_method_name(kn_rma_auto(0, bs[i], nb[j], mapped)),
                         kn_rma_cost(KNIT_RMA_AGENT, bs[i], nb[j], mapped) / 1e3,
                         kn_rma_cost(KNIT_RMA_PACK, bs[i], nb[j], mapped) / 1e3);
            printf("  %8zu %6zu   %-27s   %s\n", bs[i], nb[j], a[0], a[1]);
        }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tunables", no_argument, NULL, 'e'},
        {"tunables-md", no_argument, NULL, 'M'},
        {"shm", required_argument, NULL, 'S'},
        {"rma", no_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int mode = 0, c;
    const char *shm_arg = NULL;
    while ((c = getopt_long(argc, argv, "eh", opts, NULL)) != -1) {
        switch (c) {
        case 'e': mode = 'e'; break;
        case 'M': mode = 'M'; break;
        case 'S': mode = 'S'; shm_arg = optarg; break;
        case 'R': mode = 'R'; break;
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
    if (mode == 'S')
        return bad ? 1 : show_shm(shm_arg);
    if (mode == 'R')
        return bad ? 1 : show_rma();
    if (mode == 'e')
        kn_config_print(stdout);
    else
        show_node();
    return bad;
}
