/* Fuzzes scn_scenario_from_json (scenarios/README.md), which also expands the scenario into its
 * points (templates, placeholders, arithmetic, zipped axes) to check it. */
#include "scenarios/scn_scenario.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  GError *error = NULL;
  ScnScenario *scenario = scn_scenario_from_json(text, NULL, &error);
  FUZZ_CHECK_ERROR(scenario != NULL, error);
  g_clear_error(&error);
  scn_scenario_free(scenario);
}
