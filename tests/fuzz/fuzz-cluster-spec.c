/* fuzz-cluster-spec: dev_cluster_parse_spec: PRESET[:key=value,...]; the parser is in fuzz-
 * parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("cluster-spec")
