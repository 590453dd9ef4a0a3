/*
 * Starting under another launcher: PMIx (Slurm's srun --mpi=pmix, Open
 * MPI's mpirun) and PMI-1/PMI-2 (MPICH's hydra mpiexec, srun --mpi=pmi2).
 *
 * Such a launcher gives each process its rank, the job's size and where
 * the ranks run, a key-value exchange with a fence, and an abort that ends
 * the job.  knit uses it for exactly that: the place in the job, and one
 * exchange that carries the address of knit's own store (which the job's
 * rank 0 starts: knitrun --serve) to every rank.  Everything else (the
 * transports' addresses, the offload daemons', the finalize bookkeeping)
 * then goes through knit's store as under knitrun, so the rest of knit
 * does not know which launcher started it.  docs/knitrun.md, "Other
 * launchers".  The start itself is core/launch.c.
 */
#ifndef KN_BOOT_LAUNCHER_H
#define KN_BOOT_LAUNCHER_H

#include <stddef.h>

#include "knit.h"

/* KNIT_BOOTSTRAP's choices, in the tunable's order. */
enum kn_bootstrap { KN_BOOTSTRAP_AUTO, KN_BOOTSTRAP_KNITRUN, KN_BOOTSTRAP_PMIX, KN_BOOTSTRAP_PMI,
                    KN_BOOTSTRAP_PMI1, KN_BOOTSTRAP_PMI2, KN_BOOTSTRAP_NONE };

/*
 * A launcher's client (pmix.c, pmi.c).  Values are strings without spaces,
 * '=' or ';' of at most KN_LAUNCH_VAL_MAX bytes; keys are short.
 */
#define KN_LAUNCH_VAL_MAX 512
typedef struct kn_launcher {
    const char *name; /* "PMIx", "PMI-1", "PMI-2" */
    /* Connect; sets rank and size.  why: the reason of a failure. */
    knit_status_t (*init)(struct kn_launcher *l, char *why, size_t len);
    /* The launcher's node of every rank (size entries, any numbering
     * where equal means the same node). */
    knit_status_t (*nodes)(struct kn_launcher *l, int *node_of, char *why, size_t len);
    knit_status_t (*put)(struct kn_launcher *l, const char *key, const char *val);
    /* Every rank's puts before it become visible to every rank's gets after. */
    knit_status_t (*fence)(struct kn_launcher *l);
    knit_status_t (*get)(struct kn_launcher *l, int rank, const char *key, char *buf, size_t cap);
    /* Ask the launcher to end the job with code (returns; the caller exits). */
    void (*abort)(struct kn_launcher *l, int code, const char *msg);
    void (*finalize)(struct kn_launcher *l);
    int rank, size;
    int version; /* PMI: 1 or 2 */
} kn_launcher_t;

extern kn_launcher_t kn_launch_pmix;
extern kn_launcher_t kn_launch_pmi;

/* What the environment shows, as KNIT_BOOTSTRAP asks (kn_cfg loaded):
 * KNITRUN (also a process knitrun started), PMIX, PMI1/PMI2 (PMI: the
 * version the server offers is found at init), or NONE (a singleton).  A
 * launcher's variables half there: KNIT_ERR_INVAL with the line in why. */
knit_status_t kn_launch_detect(int *kind, char *why, size_t len);
/* "knitrun", "PMIx", "PMI-1 or PMI-2" ... for knit-info. */
const char *kn_launch_kind_name(int kind);

#endif
