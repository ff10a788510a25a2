/* fuzz-plan: val_plan_parse (validate/PLAN.md) and, for an accepted plan, the checks of its
 * promises and the measurements writer; the parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("plan")
