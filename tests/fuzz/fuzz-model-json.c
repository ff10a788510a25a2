/* fuzz-model-json: mdl_graph_from_json: JSON operator graphs (model/README.md); the parser is in
 * fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("model-json")
