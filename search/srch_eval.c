/* search/eval — what a worker does for each strategy a driver asks about: the memory check
 * (cm_memory_per_device, before simulating), one simulated iteration, the cache of costs
 * already known, the budget, the worker's best and its convergence curve. */
#include "search/srch-int.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "util/util_memory.h"

/* Cache keys are int arrays [length, point...]: one table holds one length, and the hash
 * functions see it without user data. */
static guint point_hash(gconstpointer key) {
  const int *k = key;
  guint h = 2166136261u; /* FNV-1a */
  for (int i = 0; i <= k[0]; i++) {
    h ^= (guint)k[i];
    h *= 16777619u;
  }
  return h;
}

static gboolean point_equal(gconstpointer a, gconstpointer b) {
  const int *x = a, *y = b;
  return x[0] == y[0] && memcmp(x + 1, y + 1, sizeof(int) * (gsize)x[0]) == 0;
}

GHashTable *srch_cache_new(void) {
  return g_hash_table_new_full(point_hash, point_equal, g_free, g_free);
}

gboolean srch_worker_has_budget(SrchWorker *w) {
  if (w->budget_evaluations && w->evaluations >= w->budget_evaluations) return FALSE;
  if (w->deadline_us && g_get_monotonic_time() >= w->deadline_us) return FALSE;
  return TRUE;
}

guint64 srch_worker_cached(const SrchWorker *w) {
  return w->cache ? g_hash_table_size(w->cache) : 0;
}

gboolean srch_worker_spinning(const SrchWorker *w) {
  if (w->cache && srch_worker_cached(w) >= srch_space_size(w->space)) return TRUE;
  return w->steps > 64 * (w->evaluations + 1024);
}

GRand *srch_chain_rand(const SrchWorker *w, int chain) {
  guint32 seed[2] = {w->options->seed, (guint32)chain};
  return g_rand_new_with_seed_array(seed, 2);
}

static void note_best(SrchWorker *w, double cost) {
  SrchCurvePoint p = {w->evaluations, (g_get_monotonic_time() - w->start_us) / 1e6, cost};
  g_array_append_val(w->curve, p);
  w->best_time_s = cost;
  g_mutex_lock(&w->shared->lock);
  if (cost < w->shared->best_time_s) w->shared->best_time_s = cost;
  g_mutex_unlock(&w->shared->lock);
}

/* The highest total of @mem (@ndev devices); frees @mem. */
static double peak_of(CmMemory *mem, int ndev) {
  double peak = 0;
  for (int d = 0; d < ndev; d++) peak = MAX(peak, mem[d].total);
  g_free(mem);
  return peak;
}

double srch_peak_memory(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster) {
  return peak_of(cm_memory_per_device(graph, s, cluster), dev_cluster_num_devices(cluster));
}

void srch_peak_memory_zero_stages(const MdlGraph *graph, const MdlStrategy *s, const DevCluster *cluster,
                                  double peak[4]) {
  CmMemory *mem[4];
  cm_memory_per_device_zero_stages(graph, s, cluster, mem);
  for (int z = 0; z < 4; z++) peak[z] = peak_of(mem[z], dev_cluster_num_devices(cluster));
}

/* One evaluation of @s: the memory rule (unless the caller @checked it already with
 * srch_peak_memory), then one simulated iteration. */
static double evaluate(SrchWorker *w, const MdlStrategy *s, gboolean checked) {
  w->evaluations++;
  g_atomic_int_inc(&w->shared->evaluations);
  double peak = checked ? 0 : srch_peak_memory(w->graph, s, w->cluster);
  if (peak > w->cluster->device.memory_bytes) { /* the simulator's fits_memory rule */
    w->over_memory++;
    return SRCH_OVER_MEMORY_COST_S * peak / w->cluster->device.memory_bytes;
  }
  GError *error = NULL;
  SimRun *run = NULL;
  const SimPrediction *p = NULL;
  if (w->delta) { /* from the worker's last candidate: one op changed, usually */
    if (sim_delta_simulate(w->delta, s, &error)) p = sim_run_prediction(sim_delta_run(w->delta));
  } else {
    /* Only the prediction is read: the run may merge compute chains (sim_merge.c; the same
     * prediction bit for bit, test-merge). */
    SimOptions only = w->options->sim;
    only.prediction_only = TRUE;
    if ((run = sim_run_new_with_options(w->graph, s, w->cluster, w->params, &only, &error)))
      p = sim_run_prediction(run);
  }
  if (!p) {
    g_debug("search: the simulator refused a strategy: %s", error->message);
    g_clear_error(&error);
    w->failed++;
    return INFINITY;
  }
  w->simulated++;
  double cost = p->fits_memory ? p->iteration_time_s : INFINITY;
  sim_run_free(run);
  return cost;
}

double srch_worker_eval_point(SrchWorker *w, const int *point, int chain) {
  const SrchSpace *s = w->space;
  w->steps++;
  int *key = NULL;
  if (w->cache) {
    key = g_new(int, s->point_len + 1);
    key[0] = s->point_len;
    memcpy(key + 1, point, sizeof(int) * (gsize)s->point_len);
    const double *known = g_hash_table_lookup(w->cache, key);
    if (known) {
      g_free(key);
      return *known;
    }
  }
  srch_space_apply(s, point, w->strategy);
  double cost = evaluate(w, w->strategy, FALSE);
  if (key) g_hash_table_insert(w->cache, key, g_memdup2(&cost, sizeof cost));
  if (srch_feasible(cost) && cost < w->best_time_s) {
    memcpy(w->best_point, point, sizeof(int) * (gsize)s->point_len);
    w->best_chain = chain;
    note_best(w, cost);
  }
  return cost;
}

static double eval_strategy(SrchWorker *w, MdlStrategy *strategy, int grid_index, gboolean checked) {
  w->steps++;
  double cost = evaluate(w, strategy, checked);
  if (srch_feasible(cost) && cost < w->best_time_s) {
    w->best_grid = grid_index;
    w->best_chain = grid_index;
    note_best(w, cost);
  }
  return cost;
}

double srch_worker_eval_strategy(SrchWorker *w, MdlStrategy *strategy, int grid_index) {
  return eval_strategy(w, strategy, grid_index, FALSE);
}

double srch_worker_eval_fitting(SrchWorker *w, MdlStrategy *strategy, int grid_index) {
  return eval_strategy(w, strategy, grid_index, TRUE);
}

void srch_keep_freed_memory(void) {
  util_memory_tune(); /* (util_memory.c has the measurements) */
}

double srch_thread_cpu_s(void) { return sim_thread_cpu_s(); }
