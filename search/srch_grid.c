/* search/grid — Megatron-LM's configuration grid (Narayanan et al. 2021, section 3: the
 * degrees and microbatch size a practitioner tunes), built by mdl_strategy_megatron: every
 * (tp, pp, dp) with tp * pp * dp = devices; every microbatch size dividing the per-replica
 * batch; 1F1B, and with pp > 1 also GPipe, eager-1F1B and interleaved 1F1B with vp = 2..8 virtual
 * stages (where pp * vp divides the layers and the microbatch count is a multiple of pp).
 * Context parallelism cp > 1 (dp = devices / (tp pp cp)) joins for sequences of at least
 * GRID_MIN_CP_SEQ tokens, and expert parallelism ep > 1 (every ep dividing dp * cp and the
 * experts) for models with experts; dense models of shorter sequences get the grid they had.
 * Points the builder refuses (tp not dividing the heads, pp not dividing the layers, ...) are
 * left out. The only driver that cuts pipeline stages. Workers take points round robin. */
#include "search/srch-int.h"

#define GRID_MAX_VIRTUAL_STAGES 8
/* Megatron Core's Parallelism Strategies Guide recommends context parallelism for "long
 * sequences (8K+ tokens)" (docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/
 * parallelism-guide.html). */
#define GRID_MIN_CP_SEQ 8192

static void add_if_valid(GArray *points, const MdlGraph *graph, const DevCluster *cluster,
                         const MdlMegatronConfig *cfg) {
  MdlStrategy *s = mdl_strategy_megatron(graph, cluster, cfg, NULL);
  if (!s) return;
  mdl_strategy_free(s);
  g_array_append_val(points, *cfg);
}

/* Every microbatch size and schedule of @base's degrees. */
static void add_schedules(GArray *points, const MdlGraph *graph, const DevCluster *cluster,
                          const MdlMegatronConfig *base) {
  static const MdlSchedule pipelined[] = {MDL_SCHEDULE_1F1B, MDL_SCHEDULE_GPIPE, MDL_SCHEDULE_EAGER_1F1B};
  int dp = base->dp, pp = base->pp;
  if (graph->batch % dp) return;
  int64_t per_replica = graph->batch / dp;
  for (int64_t mb = 1; mb <= per_replica; mb++) {
    if (per_replica % mb) continue;
    int64_t microbatches = per_replica / mb;
    MdlMegatronConfig cfg = *base;
    cfg.microbatch_size = (int)mb;
    for (guint k = 0; k < (pp > 1 ? G_N_ELEMENTS(pipelined) : 1); k++) {
      cfg.schedule = pipelined[k];
      cfg.virtual_stages = 1;
      add_if_valid(points, graph, cluster, &cfg);
    }
    if (pp < 2 || microbatches % pp || graph->num_layers <= 0) continue;
    for (int vp = 2; vp <= GRID_MAX_VIRTUAL_STAGES; vp++) {
      if (graph->num_layers % (pp * vp)) continue;
      cfg.schedule = MDL_SCHEDULE_INTERLEAVED;
      cfg.virtual_stages = vp;
      add_if_valid(points, graph, cluster, &cfg);
    }
  }
}

GArray *srch_grid_points(const MdlGraph *graph, const DevCluster *cluster, DevDtype dtype) {
  int n = dev_cluster_num_devices(cluster);
  GArray *points = g_array_new(FALSE, FALSE, sizeof(MdlMegatronConfig));
  int64_t experts = 0;
  mdl_graph_num_experts(graph, &experts);
  int max_cp = graph->seq >= GRID_MIN_CP_SEQ ? n : 1;
  for (int tp = 1; tp <= n; tp++) {
    if (n % tp) continue;
    for (int pp = 1; pp <= n / tp; pp++) {
      if ((n / tp) % pp) continue;
      for (int cp = 1; cp <= MIN(max_cp, n / tp / pp); cp++) {
        if ((n / tp / pp) % cp) continue;
        int dp = n / tp / pp / cp;
        for (int ep = 1; ep <= (experts > 0 ? dp * cp : 1); ep++) {
          if ((dp * cp) % ep || (experts > 0 && experts % ep)) continue;
          MdlMegatronConfig cfg = {.tp = tp, .pp = pp, .dp = dp, .cp = cp, .ep = ep,
                                   .schedule = MDL_SCHEDULE_1F1B, .dtype = dtype};
          add_schedules(points, graph, cluster, &cfg);
        }
      }
    }
  }
  return points;
}

char *srch_grid_describe(const MdlMegatronConfig *c) {
  GString *out = g_string_new(NULL);
  g_string_printf(out, "dp=%d tp=%d pp=%d mb=%d %s", c->dp, c->tp, c->pp, c->microbatch_size,
                  mdl_schedule_name(c->schedule));
  if (c->virtual_stages > 1) g_string_append_printf(out, " vp=%d", c->virtual_stages);
  if (c->cp > 1) g_string_append_printf(out, " cp=%d", c->cp);
  if (c->ep > 1) g_string_append_printf(out, " ep=%d", c->ep);
  return g_string_free(out, FALSE);
}

void srch_grid_worker(SrchWorker *w) {
  guint i;
  for (i = (guint)w->index; i < w->grid->len; i += (guint)w->nworkers) {
    if (!srch_worker_has_budget(w)) break;
    const MdlMegatronConfig *cfg = &g_array_index(w->grid, MdlMegatronConfig, i);
    GError *error = NULL;
    MdlStrategy *s = mdl_strategy_megatron(w->graph, w->cluster, cfg, &error);
    if (!s) { /* srch_grid_points kept only what the builder accepts */
      w->failed++;
      g_clear_error(&error);
      continue;
    }
    srch_worker_eval_strategy(w, s, (int)i);
    mdl_strategy_free(s);
  }
  w->complete = i >= w->grid->len;
}
