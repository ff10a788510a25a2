/* fuzz-nccl-tests: cm_nccl_tests_parse: nccl-tests output (tests/data/nccl-tests); the parser is
 * in fuzz-parsers.h. */
#include "fuzz-main.h"

FUZZ_TARGET("nccl-tests")
