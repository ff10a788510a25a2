/* fuzz-model-spec: mdl_graph_parse_spec: zoo names, NAME:key=value, families (gpt:, mlp:, ...);
 * the parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("model-spec")
