/*
 * A job started by another launcher (boot/launcher.h): knit_init's first
 * step and knit_finalize's last.
 */
#ifndef KN_CORE_LAUNCH_H
#define KN_CORE_LAUNCH_H

#include "knit.h"

/*
 * Under another launcher: take the place in the job from it, start knit's
 * store (the job's rank 0 runs knitrun --serve) and this node's offload
 * daemons (the node's first rank), and set the environment knitrun would
 * have set (KNIT_RANK, KNIT_SIZE, KNIT_BOOT_ADDR, ...), which the rest of
 * knit_init reads.  Nothing for knitrun's processes and singletons.
 */
knit_status_t kn_launch_start(void);
/* Whether another launcher started us (after kn_launch_start). */
int kn_launch_active(void);
/* Watch the store connection: should it close before knit_finalize
 * (knit's store ended the job, or rank 0 died), end the job through the
 * launcher. */
knit_status_t kn_launch_watch(int fd);
/* knit_finalize, before the store connection closes. */
void kn_launch_unwatch(void);
/* knit_finalize, after it closed: stop this node's daemons, wait for
 * knit's store to end (rank 0), tell the launcher. */
void kn_launch_end(void);
/* End the job through the launcher. */
void kn_launch_abort(int code, const char *msg) __attribute__((noreturn));

#endif
