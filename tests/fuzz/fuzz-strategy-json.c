/* fuzz-strategy-json: mdl_strategy_from_json (model/STRATEGY.md) on a two-layer GPT and two DGX
 * A100s; the parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("strategy-json")
