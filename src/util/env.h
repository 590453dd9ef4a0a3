/*
 * Environment variables knitrun sets for every process it starts (not
 * tunables: the process's place in the job).  One list, shared by the
 * launcher, the runtime and the config loader (which does not warn about
 * them).
 */
#ifndef KN_UTIL_ENV_H
#define KN_UTIL_ENV_H

#define KN_ENV_LIST(X)                                                     \
    X(RANK, "KNIT_RANK", "this process's rank in the job")                 \
    X(SIZE, "KNIT_SIZE", "number of ranks in the job")                     \
    X(NODE, "KNIT_NODE", "this rank's node")                               \
    X(NNODES, "KNIT_NNODES", "number of nodes in the job")                 \
    X(LOCAL_RANK, "KNIT_LOCAL_RANK", "index among the node's ranks")       \
    X(LOCAL_SIZE, "KNIT_LOCAL_SIZE", "number of ranks on this node")       \
    X(NODE_SIZES, "KNIT_NODE_SIZES", "ranks per node, comma separated")    \
    X(JOBID, "KNIT_JOBID", "job identifier (names shared-memory files)")   \
    X(COOKIE, "KNIT_COOKIE", "job secret presented to the bootstrap store") \
    X(BOOT_ADDR, "KNIT_BOOT_ADDR", "bootstrap store addresses to try")     \
    X(HOSTNAME, "KNIT_HOSTNAME", "name of this rank's host in the job")    \
    X(HOST_PROCS, "KNIT_HOST_PROCS", "ranks of the job on this host (all emulated nodes together)") \
    X(HOST_DAEMONS, "KNIT_HOST_DAEMONS", "offload daemons knitrun started on this host (agents and switches): once a module is loaded they work for the ranks, and waits count them") \
    X(HOST_CPUS, "KNIT_HOST_CPUS", "cpus the job's processes on this host share (a bound rank's own affinity is smaller)") \
    X(SWITCH, "KNIT_SWITCH", "a knit-switch's index in the job's tree of switches (0: the root)") \
    X(NSWITCHES, "KNIT_NSWITCHES", "switches knitrun started for the job (KNIT_SWITCH_FANIN)") \
    X(UNBIND_CPUS, "KNIT_UNBIND_CPUS", "where knitrun's auto binding bound the ranks: the job's cpus on this host, which a rank widens to once the offload daemons work on a crowded host")

#define KN_ENV_DECL(id, name, help) static const char KN_ENV_##id[] = name;
KN_ENV_LIST(KN_ENV_DECL)
#undef KN_ENV_DECL

#endif
