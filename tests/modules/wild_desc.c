/* A module whose descriptor function returns a wild pointer: its load is
 * refused, reading it faults in the module's name only
 * (tests/job/test_hostile.sh). */
#include <stdint.h>

#include "knit/module.h"

__attribute__((visibility("default"))) const knit_mod_descriptor_t *knit_module(void);
const knit_mod_descriptor_t *knit_module(void)
{
    return (const knit_mod_descriptor_t *)(uintptr_t)0x10;
}
