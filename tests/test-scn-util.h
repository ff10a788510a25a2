/* Scenario helpers shared by the scenario tests (test-scenario.c, test-sweep.c). Header-only. */
#ifndef STRATSIM_TEST_SCN_UTIL_H
#define STRATSIM_TEST_SCN_UTIL_H

#include <glib.h>

#include "scenarios/scn_scenario.h"

static inline ScnScenario *parse_ok(const char *json) {
  GError *error = NULL;
  ScnScenario *sc = scn_scenario_from_json(json, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(sc);
  return sc;
}

static inline GPtrArray *expand_ok(const ScnScenario *sc) {
  GError *error = NULL;
  GPtrArray *points = scn_scenario_expand(sc, &error);
  g_assert_no_error(error);
  return points;
}

static inline const ScnPoint *point_at(GPtrArray *points, guint i) { return g_ptr_array_index(points, i); }

#endif
