/* Which launcher started this process (KNIT_BOOTSTRAP, the environment). */
#include <stdio.h>
#include <stdlib.h>

#include "boot/launcher.h"
#include "util/config.h"
#include "util/env.h"

const char *kn_launch_kind_name(int kind)
{
    switch (kind) {
    case KN_BOOTSTRAP_KNITRUN: return "knitrun";
    case KN_BOOTSTRAP_PMIX: return "PMIx";
    case KN_BOOTSTRAP_PMI: return "PMI (version 2, else 1)";
    case KN_BOOTSTRAP_PMI1: return "PMI-1";
    case KN_BOOTSTRAP_PMI2: return "PMI-2";
    }
    return "none (a singleton)";
}

/* How many of the names are set: all, none, or some (-1, with the first
 * missing one in *missing). */
static int set_count(const char *const *names, int n, const char **missing)
{
    int k = 0;
    *missing = NULL;
    for (int i = 0; i < n; i++) {
        if (getenv(names[i]))
            k++;
        else if (!*missing)
            *missing = names[i];
    }
    return k == n ? 1 : k == 0 ? 0 : -1;
}

knit_status_t kn_launch_detect(int *kind, char *why, size_t len)
{
    static const char *const pmix[] = {"PMIX_RANK", "PMIX_NAMESPACE"};
    static const char *const pmi[] = {"PMI_FD", "PMI_RANK", "PMI_SIZE"};
    const char *miss_x, *miss_i;
    int knitrun = getenv(KN_ENV_RANK) != NULL;
    int has_x = set_count(pmix, 2, &miss_x), has_i = set_count(pmi, 3, &miss_i);
    int want = (int)kn_cfg.bootstrap;
    if (want == KN_BOOTSTRAP_AUTO) {
        if (knitrun)
            want = KN_BOOTSTRAP_KNITRUN;
        else if (has_x)
            want = KN_BOOTSTRAP_PMIX;
        else if (has_i)
            want = KN_BOOTSTRAP_PMI;
        else
            want = KN_BOOTSTRAP_NONE;
    }
    *kind = want;
    switch (want) {
    case KN_BOOTSTRAP_KNITRUN:
        if (knitrun)
            return KNIT_OK;
        snprintf(why, len, "KNIT_BOOTSTRAP=knitrun, but %s is not set: this process was not started by knitrun",
                 KN_ENV_RANK);
        return KNIT_ERR_INVAL;
    case KN_BOOTSTRAP_PMIX:
        if (has_x == 1)
            return KNIT_OK;
        snprintf(why, len, "%s is not set, though %s: a PMIx launcher's environment is half there",
                 miss_x, has_x ? "another PMIX_ variable is" : "KNIT_BOOTSTRAP=pmix");
        return KNIT_ERR_INVAL;
    case KN_BOOTSTRAP_NONE:
        return KNIT_OK;
    }
    if (has_i == 1)
        return KNIT_OK;
    if (getenv("PMI_PORT") && !getenv("PMI_FD"))
        snprintf(why, len, "PMI_PORT is set but PMI_FD is not: a PMI server reached by host:port is not supported yet "
                           "(knit speaks PMI on the socket in PMI_FD, as hydra and srun --mpi=pmi2 give it)");
    else
        snprintf(why, len, "%s is not set, though %s: a PMI launcher's environment is half there", miss_i,
                 has_i ? "another of PMI_FD, PMI_RANK, PMI_SIZE is" : "KNIT_BOOTSTRAP asks for PMI");
    return KNIT_ERR_INVAL;
}
