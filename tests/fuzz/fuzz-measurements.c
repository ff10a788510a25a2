/* fuzz-measurements: cm_measurements_parse_json (costmodel/CALIBRATION.md); the parser is in
 * fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("measurements")
