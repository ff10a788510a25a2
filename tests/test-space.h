/* Shared by the tests that run a comparison over the full Megatron space of a model (merging
 * against the full engine, the steady-state route against timing every microbatch). */
#ifndef STRATSIM_TEST_SPACE_H
#define STRATSIM_TEST_SPACE_H

#include "search/srch-int.h" /* the full Megatron space */
#include "test-util.h"

/* Two prediction runs of one strategy, under @a and @b: every figure the same (@names: the
 * runs' names in a message); returns the second run's prediction's @count (a predicate on it,
 * or NULL: 0). */
typedef gboolean (*TestSpaceCount)(const SimPrediction *p);

/* Every @stride-th point of the full Megatron space of @gpt on @cluster (with @weight_delay_every
 * > 0, every such point not interleaved under weight delay too), each run under @a and @b and
 * compared; *@checked gets the points run, the return value how many the second run counted. */
static inline int test_space_compare(const char *gpt, const char *cluster, guint stride,
                                     guint weight_delay_every, const SimOptions *a,
                                     const SimOptions *b, const char *name_a, const char *name_b,
                                     TestSpaceCount count, int *checked) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(cluster, &error);
  MdlGraph *g = mdl_graph_parse_spec(gpt, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  GArray *points = srch_grid_full_points(g, c, DEV_DTYPE_BF16);
  int counted = 0;
  *checked = 0;
  for (guint i = 0; i < points->len; i += stride) {
    MdlMegatronConfig cfg = g_array_index(points, MdlMegatronConfig, i);
    if (weight_delay_every)
      cfg.weight_delay = (i / stride) % weight_delay_every == 0 &&
                         cfg.schedule != MDL_SCHEDULE_INTERLEAVED;
    MdlStrategy *s = mdl_strategy_megatron(g, c, &cfg, &error);
    if (!s) { /* weight delay is refused with some schedules */
      g_clear_error(&error);
      continue;
    }
    SimRun *ra = sim_run_new_with_options(g, s, c, &params, a, &error);
    g_assert_no_error(error);
    SimRun *rb = sim_run_new_with_options(g, s, c, &params, b, &error);
    g_assert_no_error(error);
    test_assert_same_prediction(s->name ? s->name : gpt, name_a, name_b, sim_run_prediction(ra),
                                sim_run_prediction(rb));
    counted += count && count(sim_run_prediction(rb));
    (*checked)++;
    sim_run_free(ra);
    sim_run_free(rb);
    mdl_strategy_free(s);
  }
  g_array_free(points, TRUE);
  mdl_graph_free(g);
  dev_cluster_free(c);
  return counted;
}

#endif
