/* fuzz-run-measurements: val_run_measurements_parse (validate/PLAN.md, "Run measurements JSON",
 * what `stratsim validate ingest` reads) and, for an accepted file, its promises and the check
 * against a fixed plan; the parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("run-measurements")
