/* Fuzzes mdl_strategy_parse_spec ("dp", "megatron:...", "summa:...", "2.5d:...", "3d:...")
 * against fuzz-strategy.h's graph and cluster. */
#include "fuzz-common.h"
#include "fuzz-strategy.h"

static void fuzz_setup(void) { fuzz_strategy_setup(); }

static void fuzz_one(const char *text, size_t len) {
  if (fuzz_spec_escapes(text)) return;
  GError *error = NULL;
  MdlStrategy *strategy = mdl_strategy_parse_spec(text, fuzz_graph, fuzz_cluster, &error);
  FUZZ_CHECK_ERROR(strategy != NULL, error);
  mdl_strategy_free(strategy);
  g_clear_error(&error);
}
