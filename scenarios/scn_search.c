/* scenarios/search — parsing search entries (scn_search.h). */
#include "scenarios/scn_search.h"

#include <errno.h>
#include <string.h>

#include "scenarios/scn_scenario.h"

gboolean scn_search_spec_is(const char *spec) {
  return strcmp(spec, "search") == 0 || g_str_has_prefix(spec, "search:");
}

/* A whole number in [lo, hi] into @out; FALSE with the error naming @spec and @key. */
static gboolean small_int(const char *spec, const char *key, const char *value, int lo, int hi,
                          int *out, GError **error) {
  char *end = NULL;
  errno = 0;
  gint64 v = g_ascii_strtoll(value, &end, 10);
  if (errno || !*value || *end || v < lo || v > hi) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: %s=%s is not a whole number from %d to %d",
                spec, key, value, lo, hi);
    return FALSE;
  }
  *out = (int)v;
  return TRUE;
}

/* The keys that shape the space (`stratsim search --vars, --dims, --followers, --mesh-axes,
 * --microbatches`); FALSE for an unknown key or value. */
static gboolean space_key(const char *spec, const char *key, const char *value,
                          SrchSpaceOptions *space, GError **error) {
  if (strcmp(key, "vars") == 0 || strcmp(key, "dims") == 0) {
    gboolean vars = key[0] == 'v';
    const char *a = vars ? "group" : "all", *b = vars ? "op" : "megatron";
    if (strcmp(value, a) != 0 && strcmp(value, b) != 0) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: %s=%s (known: %s, %s)", spec, key, value, a, b);
      return FALSE;
    }
    gboolean second = strcmp(value, b) == 0;
    if (vars) space->vars = second ? SRCH_VARS_OP : SRCH_VARS_GROUP;
    else space->dims = second ? SRCH_DIMS_MEGATRON : SRCH_DIMS_ALL;
    return TRUE;
  }
  if (strcmp(key, "followers") == 0) {
    if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "%s: followers=%s (true or false)", spec, value);
      return FALSE;
    }
    space->followers = strcmp(value, "true") == 0;
    return TRUE;
  }
  if (strcmp(key, "mesh_axes") == 0)
    return small_int(spec, key, value, 1, MDL_MAX_MESH_AXES, &space->max_mesh_axes, error);
  if (strcmp(key, "microbatches") == 0)
    return small_int(spec, key, value, 1, 1 << 20, &space->max_microbatches, error);
  g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID,
              "%s: unknown key '%s' (known: algo, budget, seed, vars, dims, followers, mesh_axes, "
              "microbatches)", spec, key);
  return FALSE;
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
    } else if (!space_key(spec, key, value, &o->space, error)) {
      return FALSE;
    }
  }
  return TRUE;
}

gboolean scn_baseline_spec_is(const char *spec) {
  return g_str_has_prefix(spec, "baseline:");
}

gboolean scn_baseline_spec_parse(const char *spec, SrchOptions *o, const char **baseline,
                                 GError **error) {
  g_return_val_if_fail(scn_baseline_spec_is(spec), FALSE);
  static const char *const names[][2] = {{"data-parallel", "data parallel"},
                                         {"megatron", "megatron"},
                                         {"one-weird-trick", "one weird trick"}};
  const char *name = spec + strlen("baseline:");
  *baseline = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (strcmp(name, names[i][0]) == 0) *baseline = names[i][1];
  if (!*baseline) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID,
                "%s: unknown baseline '%s' (known: data-parallel, megatron, one-weird-trick)", spec, name);
    return FALSE;
  }
  srch_options_default(o);
  o->algo = SRCH_ALGO_RANDOM;
  o->budget = (SrchBudget){.evaluations = 1};
  o->threads = 1;
  return TRUE;
}
