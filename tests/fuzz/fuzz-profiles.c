/* fuzz-profiles: cm_profiles_from_json: measured kernel times (costmodel/PROFILES.md); the
 * parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("profiles")
