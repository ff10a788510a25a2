/* Fuzzes mdl_strategy_from_json (model/STRATEGY.md) against fuzz-strategy.h's graph and cluster. */
#include "fuzz-common.h"
#include "fuzz-strategy.h"

static void fuzz_setup(void) { fuzz_strategy_setup(); }

static void fuzz_one(const char *text, size_t len) {
  GError *error = NULL;
  MdlStrategy *strategy = mdl_strategy_from_json(text, "fuzz.json", fuzz_graph, fuzz_cluster, &error);
  FUZZ_CHECK_ERROR(strategy != NULL, error);
  if (strategy) g_free(mdl_strategy_to_json(strategy, fuzz_graph));
  mdl_strategy_free(strategy);
  g_clear_error(&error);
}
