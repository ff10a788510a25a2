/* search/ranks — one search spread over processes (mpirun ranks): each rank's result as
 * compact JSON, and the merge of those results on rank 0 (srch_search.h).
 *
 * Every rank runs the same phases on its slice of the global workers (srch_run.c), so the
 * merge is a reduction in rank order: sums of the counts, the lowest iteration time (ties: the
 * lower rank, as ties between workers go to the lower chain), the Megatron baseline the best
 * of the ranks' grid shares, and the convergence curves combined by their global lockstep
 * evaluation index (each rank's curve already drops what its own earlier points beat, which
 * the union would drop too). Doubles travel as the hex digits of their bits (cJSON's own
 * numbers read back only within an epsilon), so a winner found on another rank reports the
 * same iteration time to the last bit. Nothing here talks to MPI. */
#include "search/srch-int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A double as the 16 hex digits of its IEEE bits: exact, and INFINITY too. */
static cJSON *exact(double v) {
  guint64 bits;
  memcpy(&bits, &v, sizeof bits);
  char text[24];
  g_snprintf(text, sizeof text, "%016" G_GINT64_MODIFIER "x", bits);
  return cJSON_CreateString(text);
}

static double exact_value(const cJSON *item, double otherwise) {
  if (!cJSON_IsString(item) || strlen(item->valuestring) != 16) return otherwise;
  guint64 bits = g_ascii_strtoull(item->valuestring, NULL, 16);
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

static void add_exact(cJSON *obj, const char *key, double v) { cJSON_AddItemToObject(obj, key, exact(v)); }

static void add_curve(cJSON *root, const char *key, const GArray *curve) {
  cJSON *array = cJSON_AddArrayToObject(root, key);
  for (guint i = 0; i < curve->len; i++) {
    const SrchCurvePoint *p = &g_array_index(curve, SrchCurvePoint, i);
    cJSON *item = cJSON_CreateArray();
    cJSON_AddItemToArray(item, cJSON_CreateNumber((double)p->evaluation));
    cJSON_AddItemToArray(item, exact(p->elapsed_s));
    cJSON_AddItemToArray(item, exact(p->best_time_s));
    cJSON_AddItemToArray(array, item);
  }
}

char *srch_result_serialize(const SrchResult *r, const MdlGraph *graph) {
  g_return_val_if_fail(r && graph, NULL);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "evaluations", (double)r->evaluations);
  cJSON_AddNumberToObject(root, "simulated", (double)r->simulated);
  cJSON_AddNumberToObject(root, "over_memory", (double)r->over_memory);
  cJSON_AddNumberToObject(root, "failed", (double)r->failed);
  cJSON_AddNumberToObject(root, "pruned", (double)r->pruned);
  cJSON_AddNumberToObject(root, "space_covered", (double)r->space_covered);
  cJSON_AddNumberToObject(root, "baseline_evaluations", (double)r->baseline_evaluations);
  cJSON_AddBoolToObject(root, "complete", r->complete);
  add_exact(root, "elapsed_s", r->elapsed_s);
  if (r->best) {
    add_exact(root, "best_time_s", r->best_time_s);
    add_exact(root, "best_memory_bytes", r->best_memory_bytes);
    cJSON_AddStringToObject(root, "found_by", r->best_origin ? r->best_origin : "");
    cJSON_AddNumberToObject(root, "best_phase", r->best_phase);
    cJSON_AddNumberToObject(root, "best_chain", r->best_chain);
    g_autofree char *text = mdl_strategy_to_json(r->best, graph);
    cJSON_AddStringToObject(root, "strategy", text);
  }
  if (r->nbaselines > 1 && r->baselines[1].strategy) {
    const SrchBaseline *b = &r->baselines[1];
    cJSON *m = cJSON_AddObjectToObject(root, "megatron");
    cJSON_AddStringToObject(m, "detail", b->detail ? b->detail : "");
    add_exact(m, "iteration_time_s", b->iteration_time_s);
    add_exact(m, "peak_memory_bytes", b->peak_memory_bytes);
    cJSON_AddBoolToObject(m, "fits_memory", b->fits_memory);
    cJSON_AddNumberToObject(m, "grid_index", b->grid_index);
    g_autofree char *text = mdl_strategy_to_json(b->strategy, graph);
    cJSON_AddStringToObject(m, "strategy", text);
  }
  add_curve(root, "curve", r->curve);
  add_curve(root, "timeline", r->timeline);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  char *out = g_strdup(text);
  cJSON_free(text);
  return out;
}

static double number(const cJSON *obj, const char *key, double otherwise) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsNumber(item) ? item->valuedouble : otherwise;
}

static double exact_number(const cJSON *obj, const char *key, double otherwise) {
  return exact_value(cJSON_GetObjectItemCaseSensitive(obj, key), otherwise);
}

static const char *string(const cJSON *obj, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* Appends a serialized curve's points to @into (not yet sorted). */
static void read_curve(const cJSON *root, const char *key, GArray *into) {
  const cJSON *item;
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(root, key)) {
    if (cJSON_GetArraySize(item) != 3) continue;
    SrchCurvePoint p = {(guint64)cJSON_GetArrayItem(item, 0)->valuedouble,
                        exact_value(cJSON_GetArrayItem(item, 1), 0),
                        exact_value(cJSON_GetArrayItem(item, 2), INFINITY)};
    g_array_append_val(into, p);
  }
}

static int compare_evaluation(const void *a, const void *b) {
  const SrchCurvePoint *x = a, *y = b;
  if (x->evaluation != y->evaluation) return x->evaluation < y->evaluation ? -1 : 1;
  return x->best_time_s < y->best_time_s ? -1 : x->best_time_s > y->best_time_s;
}

static int compare_elapsed(const void *a, const void *b) {
  const SrchCurvePoint *x = a, *y = b;
  if (x->elapsed_s != y->elapsed_s) return x->elapsed_s < y->elapsed_s ? -1 : 1;
  return x->best_time_s < y->best_time_s ? -1 : x->best_time_s > y->best_time_s;
}

/* Sorts @points and keeps those that improve the running best. */
static void running_best(GArray *points, int (*compare)(const void *, const void *)) {
  if (points->len) qsort(points->data, points->len, sizeof(SrchCurvePoint), compare);
  double running = INFINITY;
  guint kept = 0;
  for (guint i = 0; i < points->len; i++) {
    SrchCurvePoint p = g_array_index(points, SrchCurvePoint, i);
    if (p.best_time_s >= running) continue;
    running = p.best_time_s;
    g_array_index(points, SrchCurvePoint, kept++) = p;
  }
  g_array_set_size(points, kept);
}

gboolean srch_result_merge_ranks(SrchResult *r, char **parts, int nparts, const MdlGraph *graph,
                                 const DevCluster *cluster, GError **error) {
  g_return_val_if_fail(r && parts && graph && cluster, FALSE);
  for (int k = 1; k < nparts; k++) {
    cJSON *root = parts[k] ? cJSON_Parse(parts[k]) : NULL;
    if (!cJSON_IsObject(root)) {
      g_set_error(error, SRCH_ERROR, SRCH_ERROR_FAILED,
                  "search: rank %d %s", k, parts[k] ? "sent a result that does not parse" : "failed");
      cJSON_Delete(root);
      return FALSE;
    }
    r->evaluations += (guint64)number(root, "evaluations", 0);
    r->simulated += (guint64)number(root, "simulated", 0);
    r->over_memory += (guint64)number(root, "over_memory", 0);
    r->failed += (guint64)number(root, "failed", 0);
    r->pruned += (guint64)number(root, "pruned", 0);
    r->space_covered += (guint64)number(root, "space_covered", 0);
    r->baseline_evaluations += (guint64)number(root, "baseline_evaluations", 0);
    r->complete &= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "complete"));
    r->elapsed_s = MAX(r->elapsed_s, exact_number(root, "elapsed_s", 0));
    double time = exact_number(root, "best_time_s", INFINITY);
    const char *text = string(root, "strategy");
    int phase = (int)number(root, "best_phase", 0), chain = (int)number(root, "best_chain", 0);
    gboolean tie_lower = time == r->best_time_s && r->best &&
                         (phase < r->best_phase || (phase == r->best_phase && chain < r->best_chain));
    if (text && (time < r->best_time_s || tie_lower)) {
      g_autofree char *origin = g_strdup_printf("rank %d's winner", k);
      MdlStrategy *s = mdl_strategy_from_json(text, origin, graph, cluster, error);
      if (!s) {
        cJSON_Delete(root);
        return FALSE;
      }
      /* The winner keeps its name as the rank had it ("" for a grid point), not the origin
       * the parser fills an empty one with. */
      cJSON *parsed = cJSON_Parse(text);
      g_free(s->name);
      s->name = g_strdup(parsed ? string(parsed, "name") ? string(parsed, "name") : "" : "");
      cJSON_Delete(parsed);
      mdl_strategy_free(r->best);
      g_free(r->best_origin);
      r->best = s;
      r->best_time_s = time;
      r->best_phase = phase;
      r->best_chain = chain;
      r->best_memory_bytes = exact_number(root, "best_memory_bytes", 0);
      r->best_origin = g_strdup(string(root, "found_by") ? string(root, "found_by") : "");
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "megatron");
    if (r->nbaselines > 1 && cJSON_IsObject(m) && string(m, "strategy")) {
      SrchBaseline *b = &r->baselines[1];
      double mt = exact_number(m, "iteration_time_s", INFINITY);
      gboolean mfits = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "fits_memory"));
      int grid_index = (int)number(m, "grid_index", -1);
      /* Exact ties (a host-bound grid: gpipe and 1f1b alike) go to the lowest grid point, as
       * phase_merge breaks them in one process. */
      gboolean grid_tie = mt == b->iteration_time_s && grid_index >= 0 &&
                          (b->grid_index < 0 || grid_index < b->grid_index);
      if (!b->strategy || (mfits && (!b->fits_memory || mt < b->iteration_time_s || grid_tie))) {
        g_autofree char *origin = g_strdup_printf("rank %d's megatron baseline", k);
        MdlStrategy *s = mdl_strategy_from_json(string(m, "strategy"), origin, graph, cluster, error);
        if (!s) {
          cJSON_Delete(root);
          return FALSE;
        }
        mdl_strategy_free(b->strategy);
        g_free(b->detail);
        b->strategy = s;
        b->detail = g_strdup(string(m, "detail") ? string(m, "detail") : "");
        b->iteration_time_s = mt;
        b->peak_memory_bytes = exact_number(m, "peak_memory_bytes", 0);
        b->fits_memory = mfits;
        b->grid_index = grid_index;
      }
    }
    read_curve(root, "curve", r->curve);
    read_curve(root, "timeline", r->timeline);
    cJSON_Delete(root);
  }
  running_best(r->curve, compare_evaluation);
  running_best(r->timeline, compare_elapsed);
  return TRUE;
}

gboolean srch_result_gather(SrchResult *result, const MdlGraph *graph, const DevCluster *cluster,
                            const SrchComm *comm, GError **error) {
  if (comm->size < 2) return result != NULL;
  g_autofree char *mine = result ? srch_result_serialize(result, graph) : NULL;
  char **parts = comm->gather_strings(comm->data, mine);
  if (comm->rank != 0) return TRUE; /* gathered nothing */
  gboolean merged = result && srch_result_merge_ranks(result, parts, comm->size, graph, cluster,
                                                      error);
  comm->strings_free(comm->data, parts);
  return merged;
}
