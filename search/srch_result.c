/* search/result — algorithm names, budgets, defaults, and the result as JSON (format
 * "stratsim-search-1", search/SEARCH.md). The JSON leaves out wall-clock figures so that
 * reproducible runs print the same bytes. */
#include "search/srch-int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const algo_names[SRCH_ALGO_COUNT] = {"mcmc", "cd", "exhaustive", "random",
                                                         "grid", "auto", "dp"};

const char *srch_algo_name(SrchAlgo algo) {
  g_return_val_if_fail(algo < SRCH_ALGO_COUNT, "?");
  return algo_names[algo];
}

gboolean srch_algo_parse(const char *text, SrchAlgo *out) {
  for (int i = 0; i < SRCH_ALGO_COUNT; i++)
    if (g_strcmp0(text, algo_names[i]) == 0) {
      *out = (SrchAlgo)i;
      return TRUE;
    }
  return FALSE;
}

gboolean srch_budget_parse(const char *text, SrchBudget *out, GError **error) {
  g_autofree char *number = NULL;
  memset(out, 0, sizeof *out);
  if (!text || !*text) goto bad;
  size_t n = strlen(text);
  char unit = text[n - 1];
  if (g_ascii_isdigit(unit)) {
    char *end = NULL;
    errno = 0;
    guint64 v = g_ascii_strtoull(text, &end, 10);
    /* At most 10^9 evaluations, as a time budget is at most 10^7 s: past that is a typo. */
    if (errno || *end || v == 0 || v > 1000000000 || text[0] == '-' || text[0] == '+') goto bad;
    out->evaluations = v;
    return TRUE;
  }
  double scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
  if (scale == 0 || n < 2) goto bad;
  number = g_strndup(text, n - 1);
  char *end = NULL;
  double v = g_ascii_strtod(number, &end);
  if (*end || !(v > 0) || !isfinite(v) || v * scale > 1e7) goto bad;
  out->seconds = v * scale;
  return TRUE;
bad:
  g_set_error(error, SRCH_ERROR, SRCH_ERROR_OPTION,
              "search: budget '%s' is neither a number of evaluations (\"500\", at most 1e9) "
              "nor a time (\"60s\", \"2m\", \"1h\", at most 1e7 s)", text ? text : "");
  return FALSE;
}

void srch_options_default(SrchOptions *o) {
  memset(o, 0, sizeof *o);
  o->algo = SRCH_ALGO_AUTO;
  o->budget.evaluations = 2000;
  o->seed = 1;
  o->threads = 1;
  srch_space_options_default(&o->space);
}

void srch_result_free(SrchResult *r) {
  if (!r) return;
  mdl_strategy_free(r->best);
  g_free(r->best_origin);
  if (r->curve) g_array_free(r->curve, TRUE);
  if (r->timeline) g_array_free(r->timeline, TRUE);
  for (int i = 0; i < r->nbaselines; i++) {
    g_free(r->baselines[i].name);
    g_free(r->baselines[i].detail);
    mdl_strategy_free(r->baselines[i].strategy);
  }
  g_free(r->baselines);
  g_free(r->space_description);
  g_free(r);
}

/* A number, or null for infinity / NaN (JSON has neither). */
static void add_number(cJSON *obj, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(obj, key, v);
  else cJSON_AddNullToObject(obj, key);
}

char *srch_result_to_json(const SrchResult *r, const SrchOptions *o, const MdlGraph *graph,
                          const DevCluster *cluster) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "stratsim-search-1");
  cJSON_AddStringToObject(root, "model", graph->name);
  cJSON_AddStringToObject(root, "cluster", cluster->name);
  cJSON_AddNumberToObject(root, "gpus", dev_cluster_num_devices(cluster));
  cJSON_AddStringToObject(root, "algo", srch_algo_name(r->algo));
  cJSON_AddStringToObject(root, "ran", srch_algo_name(r->ran));
  cJSON_AddNumberToObject(root, "seed", o->seed);
  cJSON_AddNumberToObject(root, "threads", o->threads);
  if (o->nranks > 1) cJSON_AddNumberToObject(root, "ranks", o->nranks); /* threads per rank */
  cJSON *budget = cJSON_AddObjectToObject(root, "budget");
  if (o->budget.evaluations) cJSON_AddNumberToObject(budget, "evaluations", (double)o->budget.evaluations);
  else cJSON_AddNumberToObject(budget, "seconds", o->budget.seconds);
  cJSON *space = cJSON_AddObjectToObject(root, "space");
  cJSON_AddStringToObject(space, "description", r->space_description);
  cJSON_AddNumberToObject(space, "variables", r->nvars);
  cJSON_AddNumberToObject(space, "contexts", r->ncontexts);
  cJSON_AddNumberToObject(space, "log10_size", r->log10_size);
  cJSON_AddNumberToObject(space, "values_over_memory", (double)r->values_over_memory);
  cJSON *search = cJSON_AddObjectToObject(root, "search");
  cJSON_AddNumberToObject(search, "evaluations", (double)r->evaluations);
  cJSON_AddNumberToObject(search, "simulated", (double)r->simulated);
  cJSON_AddNumberToObject(search, "over_memory", (double)r->over_memory);
  cJSON_AddNumberToObject(search, "failed", (double)r->failed);
  cJSON_AddNumberToObject(search, "pruned", (double)r->pruned);
  cJSON_AddNumberToObject(search, "baseline_evaluations", (double)r->baseline_evaluations);
  cJSON_AddBoolToObject(search, "complete", r->complete);
  if (r->space_points) {
    cJSON_AddNumberToObject(search, "space_points", (double)r->space_points);
    cJSON_AddNumberToObject(search, "covered_share", srch_result_covered_share(r));
  }
  cJSON *best = cJSON_AddObjectToObject(root, "best");
  add_number(best, "iteration_time_s", r->best_time_s);
  if (r->best) {
    cJSON_AddNumberToObject(best, "samples_per_s", (double)graph->batch / r->best_time_s);
    cJSON_AddNumberToObject(best, "peak_memory_bytes", r->best_memory_bytes);
    cJSON_AddStringToObject(best, "found_by", r->best_origin);
    g_autofree char *text = mdl_strategy_to_json(r->best, graph);
    cJSON_AddItemToObject(best, "strategy", cJSON_Parse(text));
  }
  cJSON *baselines = cJSON_AddArrayToObject(root, "baselines");
  for (int i = 0; i < r->nbaselines; i++) {
    const SrchBaseline *b = &r->baselines[i];
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "name", b->name);
    cJSON_AddStringToObject(item, "detail", b->detail ? b->detail : "");
    add_number(item, "iteration_time_s", b->strategy ? b->iteration_time_s : NAN);
    if (b->strategy) {
      cJSON_AddNumberToObject(item, "peak_memory_bytes", b->peak_memory_bytes);
      cJSON_AddBoolToObject(item, "fits_memory", b->fits_memory);
    }
    /* How many times faster the winner is; null when either does not fit. */
    add_number(item, "speedup", b->strategy && b->fits_memory && r->best
                                    ? b->iteration_time_s / r->best_time_s : NAN);
    cJSON_AddItemToArray(baselines, item);
  }
  cJSON *curve = cJSON_AddArrayToObject(root, "convergence");
  for (guint i = 0; i < r->curve->len; i++) {
    const SrchCurvePoint *p = &g_array_index(r->curve, SrchCurvePoint, i);
    cJSON *item = cJSON_CreateObject();
    cJSON_AddNumberToObject(item, "evaluation", (double)p->evaluation);
    cJSON_AddNumberToObject(item, "best_time_s", p->best_time_s);
    cJSON_AddItemToArray(curve, item);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  char *out = g_strdup(text);
  cJSON_free(text);
  return out;
}
