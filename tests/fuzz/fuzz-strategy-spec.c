/* fuzz-strategy-spec: mdl_strategy_parse_spec: dp, megatron:, summa:, 2.5d:, 3d: on the same
 * pair; the parser is in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("strategy-spec")
