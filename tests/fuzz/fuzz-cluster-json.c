/* fuzz-cluster-json: dev_cluster_from_json: cluster JSON in the preset format (devices/presets);
 * the parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("cluster-json")
