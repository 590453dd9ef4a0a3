/* bad_nosym: a shared object that is not a knit module (no knit_module
 * symbol); a load test. */
#include "knit/module.h"

int not_a_module(void);
int not_a_module(void)
{
    return KNIT_MOD_ABI_VERSION;
}
