/* fuzz-scenario: scn_scenario_from_json and the expansion it checks (scenarios/README.md); the
 * parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("scenario")
