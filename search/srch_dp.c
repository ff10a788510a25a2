/* search/dp — the dp driver: Megatron's pipelined grid points with stage cuts picked by the
 * dynamic program of srch_pipeline.h instead of Megatron's equal layer counts.
 *
 * A group is one (tp, pp, dp, microbatch size). Its one-stage strategy (the same degrees with
 * pp = 1: every op's mesh shape and splits, which every stage keeps) gives the per-unit
 * compute (one task-graph build) and the boundary transfers; the DP picks the cut of least
 * 1F1B estimate; that cut is then simulated in full under 1F1B, GPipe and eager-1F1B (the
 * interleaved schedule keeps Megatron's even chunks: the grid has it). A group whose DP cut is
 * the even cut the grid already simulated, or whose weights cannot fit however it is cut
 * (no_cut_fits, checked before the measurement's task-graph build), is skipped (counted as
 * pruned). Workers take whole
 * groups round robin (group g on worker g mod T), so one measurement serves its schedules and
 * results are reproducible for a thread count. */
#include "search/srch-int.h"
#include "search/srch_pipeline.h"

#include <string.h>

static const MdlSchedule schedules[SRCH_DP_SCHEDULES] = {MDL_SCHEDULE_1F1B, MDL_SCHEDULE_GPIPE,
                                                         MDL_SCHEDULE_EAGER_1F1B};

GArray *srch_dp_points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype) {
  int n = dev_cluster_num_devices(cluster);
  SrchPipeline *pl = srch_pipeline_new(graph);
  GArray *points = g_array_new(FALSE, FALSE, sizeof(MdlMegatronConfig));
  for (int tp = 1; tp <= n; tp++) {
    if (n % tp) continue;
    for (int pp = 2; pp <= n / tp && pp <= pl->nunits; pp++) {
      if ((n / tp) % pp) continue;
      int dp = n / tp / pp;
      if (graph->batch % dp) continue;
      int64_t per_replica = graph->batch / dp;
      for (int64_t mb = 1; mb <= per_replica; mb++) {
        if (per_replica % mb) continue;
        MdlMegatronConfig cfg = {.tp = tp, .pp = 1, .dp = dp, .microbatch_size = (int)mb,
                                 .schedule = MDL_SCHEDULE_1F1B, .virtual_stages = 1, .dtype = dtype};
        MdlStrategy *one = mdl_strategy_megatron(graph, cluster, &cfg, NULL);
        if (!one) continue;
        mdl_strategy_free(one);
        cfg.pp = pp;
        g_array_append_val(points, cfg);
      }
    }
  }
  srch_pipeline_free(pl);
  return points;
}

/* Whether no cut of @one (the one-stage strategy) into @stages stages can fit: every stage
 * keeps its ops' weights, gradients and optimizer states, which across the stages add up to
 * what the one-stage strategy charges a device for them (the same splits), so the fullest
 * stage holds at least 1/@stages of that, before any activation (cm_memory_per_device). */
static gboolean no_cut_fits(const SrchWorker *w, const MdlStrategy *one, int stages) {
  CmMemory *mem = cm_memory_per_device(w->graph, one, w->cluster);
  double least = 0;
  const MdlMesh *mesh = mdl_strategy_mesh(one, 0);
  for (int i = 0; i < mesh->ndevices; i++) {
    const CmMemory *m = &mem[mesh->devices[i]];
    least = MAX(least, (m->weights + m->gradients + m->optimizer) / stages);
  }
  g_free(mem);
  return least > w->cluster->device.memory_bytes;
}

/* The DP's cut for @cfg into @cuts (pp + 1 entries) and its one-stage strategy, or NULL
 * (*@over_memory set when no cut can fit). */
static MdlStrategy *cut_group(SrchWorker *w, SrchPipeline *pl, const MdlMegatronConfig *cfg,
                              int *cuts, gboolean *over_memory) {
  MdlMegatronConfig one_cfg = *cfg;
  one_cfg.pp = 1;
  GError *error = NULL;
  *over_memory = FALSE;
  MdlStrategy *one = mdl_strategy_megatron(w->graph, w->cluster, &one_cfg, &error);
  if (one && no_cut_fits(w, one, cfg->pp)) {
    *over_memory = TRUE;
    mdl_strategy_free(one);
    return NULL;
  }
  if (one && srch_pipeline_measure(pl, w->graph, one, cfg->pp, w->cluster, w->params,
                                   &w->options->sim, &error)) {
    srch_pipeline_dp(pl, cuts);
    return one;
  }
  g_debug("search dp: %s", error->message);
  g_clear_error(&error);
  mdl_strategy_free(one);
  return NULL;
}

/* Whether the grid's even cut for @cfg (1F1B) is @cuts. */
static gboolean is_even_cut(SrchWorker *w, const SrchPipeline *pl, const MdlMegatronConfig *cfg,
                            const int *cuts) {
  MdlStrategy *even = mdl_strategy_megatron(w->graph, w->cluster, cfg, NULL);
  if (!even) return FALSE;
  g_autofree int *even_cuts = g_new(int, cfg->pp + 1);
  gboolean same = srch_pipeline_cuts_of(pl, even, even_cuts) &&
                  memcmp(even_cuts, cuts, sizeof(int) * (gsize)(cfg->pp + 1)) == 0;
  mdl_strategy_free(even);
  return same;
}

void srch_dp_worker(SrchWorker *w) {
  SrchPipeline *pl = srch_pipeline_new(w->graph);
  guint g;
  for (g = (guint)w->index; g < w->grid->len; g += (guint)w->nworkers) {
    if (!srch_worker_has_budget(w)) break;
    const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, g);
    g_autofree int *cuts = g_new(int, cfg->pp + 1);
    gboolean over_memory;
    MdlStrategy *one = cut_group(w, pl, cfg, cuts, &over_memory);
    if (!one) {
      if (over_memory) w->pruned += SRCH_DP_SCHEDULES;
      else w->failed += SRCH_DP_SCHEDULES;
      continue;
    }
    if (is_even_cut(w, pl, cfg, cuts)) {
      w->pruned += SRCH_DP_SCHEDULES;
      mdl_strategy_free(one);
      continue;
    }
    int k;
    for (k = 0; k < SRCH_DP_SCHEDULES && srch_worker_has_budget(w); k++) {
      GError *error = NULL;
      MdlStrategy *s = srch_pipeline_strategy(pl, w->graph, one, cuts, schedules[k], w->cluster, &error);
      if (!s) {
        g_debug("search dp: %s", error->message);
        g_clear_error(&error);
        w->failed++;
        continue;
      }
      int before = w->best_grid;
      srch_worker_eval_strategy(w, s, (int)g * SRCH_DP_SCHEDULES + k);
      if (w->best_grid != before) {
        mdl_strategy_free(w->best_strategy);
        w->best_strategy = s;
        MdlMegatronConfig described = *cfg;
        described.schedule = schedules[k];
        g_autofree char *degrees = srch_grid_describe(&described);
        g_autofree char *cut = srch_pipeline_describe(pl, w->graph, cuts);
        g_free(w->best_detail);
        w->best_detail = g_strdup_printf("%s stages %s", degrees, cut);
      } else {
        mdl_strategy_free(s);
      }
    }
    mdl_strategy_free(one);
    if (k < SRCH_DP_SCHEDULES) break; /* out of budget inside the group */
  }
  w->complete = g >= w->grid->len;
  srch_pipeline_free(pl);
}
