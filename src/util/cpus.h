/*
 * Sets of cpus: how many this host gives the job, and their text form
 * ("0-3,8"), the one knitrun's environment and knit-info use.
 */
#ifndef KN_UTIL_CPUS_H
#define KN_UTIL_CPUS_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

/* The cpus this host gives the job's processes together: KNIT_HOST_CPUS
 * where the launcher bound each rank to a part of them, else this
 * process's own affinity.  What a rank judges oversubscription by. */
int kn_cpus_host(void);

/* "0-3,8" (ranges of consecutive cpus); "" for an empty set. */
void kn_cpus_format(const cpu_set_t *s, char *buf, size_t len);

/* The reverse: 0, or -1 for anything but a list of cpus and ranges. */
int kn_cpus_parse(const char *text, cpu_set_t *out);

/* Where knitrun's auto binding gave this rank part of the job's cpus and
 * the host's processes outnumber its cpus once busy_daemons more work
 * (a module loaded at the agent or switch): widen this process to the
 * job's cpus (KNIT_UNBIND_CPUS), so that the daemon answering it can run
 * beside it instead of behind it.  Once; nothing when not bound so. */
void kn_cpus_unbind_crowded(int host_procs, int busy_daemons);

/* This process may run on the job's cpus on this host: KNIT_UNBIND_CPUS
 * where knitrun's auto binding gave it part of them, else every online
 * cpu (what a process of several threads needs whatever its rank was
 * bound to).  0, or -1 (logged) where the kernel refused. */
int kn_cpus_widen(void);

/* Ask the scheduler for time slices of slice_ns for this thread (and the
 * processes it forks): Linux 6.12's EEVDF lets a task with a shorter
 * slice preempt a running one as soon as it wakes, where the default
 * (about 3 ms) makes it wait for the running task's slice to end.  0, or
 * -1 where the kernel does not take it (earlier kernels: nothing changes). */
int kn_cpus_set_slice(uint64_t slice_ns);

#endif
