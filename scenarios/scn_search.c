/* scenarios/search — parsing search entries (scn_search.h). */
#include "scenarios/scn_search.h"

#include <errno.h>
#include <string.h>

#include "scenarios/scn_scenario.h"

gboolean scn_search_spec_is(const char *spec) {
  return strcmp(spec, "search") == 0 || g_str_has_prefix(spec, "search:");
}

gboolean scn_search_spec_parse(const char *spec, SrchOptions *o, GError **error) {
  g_return_val_if_fail(scn_search_spec_is(spec), FALSE);
  srch_options_default(o);
  o->budget = (SrchBudget){.evaluations = SCN_SEARCH_DEFAULT_BUDGET};
  o->threads = 1;
  const char *colon = strchr(spec, ':');
  g_auto(GStrv) pairs = g_strsplit(colon ? colon + 1 : "", ",", -1);
  for (int i = 0; pairs[i]; i++) {
    if (!pairs[i][0]) continue;
    char *eq = strchr(pairs[i], '=');
    if (!eq) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: '%s' is not key=value", spec, pairs[i]);
      return FALSE;
    }
    *eq = '\0';
    const char *key = pairs[i], *value = eq + 1;
    if (strcmp(key, "algo") == 0) {
      if (!srch_algo_parse(value, &o->algo)) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID,
                    "%s: unknown algo '%s' (known: mcmc, cd, exhaustive, random, grid, auto)", spec, value);
        return FALSE;
      }
    } else if (strcmp(key, "budget") == 0) {
      GError *local = NULL;
      if (!srch_budget_parse(value, &o->budget, &local)) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: %s", spec, local->message);
        g_error_free(local);
        return FALSE;
      }
      if (o->budget.evaluations == 0) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID,
                    "%s: budget=%s is a time; a sweep needs a number of evaluations, so that a "
                    "stored point does not depend on the machine that ran it", spec, value);
        return FALSE;
      }
    } else if (strcmp(key, "seed") == 0) {
      char *end = NULL;
      errno = 0;
      guint64 v = g_ascii_strtoull(value, &end, 10);
      if (errno || !*value || *end || value[0] == '-' || v > G_MAXUINT32) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: seed=%s is not a 32-bit unsigned number",
                    spec, value);
        return FALSE;
      }
      o->seed = (guint32)v;
    } else {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: unknown key '%s' (known: algo, budget, seed)",
                  spec, key);
      return FALSE;
    }
  }
  return TRUE;
}
