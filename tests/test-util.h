/* Shared fixtures for the tests: small clusters and hand-built graphs. Header-only. */
#ifndef STRATSIM_TEST_UTIL_H
#define STRATSIM_TEST_UTIL_H

#include <glib.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"
#include "sim/sim.h"

/* @strategy without the host stream (framework none), for tests of schedules and costs that
 * compare against closed forms; tests/test-host.c covers the host. NULL stays NULL. */
static inline MdlStrategy *test_no_host(MdlStrategy *strategy) {
  if (strategy) strategy->framework = MDL_FRAMEWORK_NONE;
  return strategy;
}

/* Simulates @model on @cluster under the strategy @spec with the default costs and @options
 * (test_simulate_specs: @expanded, no symmetry); aborts the test on an error. Free with
 * test_run_free, which frees the inputs too. */
static inline SimRun *test_simulate_options(const char *model, const char *cluster,
                                            const char *spec, const SimOptions *options) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(cluster, &error);
  g_assert_no_error(error);
  MdlGraph *g = mdl_graph_parse_spec(model, &error);
  g_assert_no_error(error);
  MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = sim_run_new_with_options(g, s, c, &params, options, &error);
  g_assert_no_error(error);
  return run;
}

static inline SimRun *test_simulate_specs(const char *model, const char *cluster, const char *spec,
                                          gboolean expanded) {
  SimOptions options = {.no_symmetry = expanded};
  return test_simulate_options(model, cluster, spec, &options);
}

static inline void test_run_free(SimRun *run) {
  MdlStrategy *s = (MdlStrategy *)sim_run_strategy(run);
  MdlGraph *g = (MdlGraph *)sim_run_graph(run);
  DevCluster *c = (DevCluster *)sim_run_cluster(run);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Every figure two predictions report, bit for bit (@what and the two runs' names in the
 * message). */
static inline void test_assert_same_prediction(const char *what, const char *name_a,
                                               const char *name_b, const SimPrediction *a,
                                               const SimPrediction *b) {
  const double fa[] = {a->iteration_time_s, a->compute_s, a->comm_exposed_s, a->host_bound_s,
                       a->bubble_s, a->samples_per_s, a->tflops_per_gpu, a->mfu,
                       a->peak_memory_bytes, a->comm_busy_s};
  const double fb[] = {b->iteration_time_s, b->compute_s, b->comm_exposed_s, b->host_bound_s,
                       b->bubble_s, b->samples_per_s, b->tflops_per_gpu, b->mfu,
                       b->peak_memory_bytes, b->comm_busy_s};
  for (gsize i = 0; i < G_N_ELEMENTS(fa); i++)
    if (memcmp(&fa[i], &fb[i], sizeof(double)) != 0)
      g_error("%s: figure %" G_GSIZE_FORMAT ": %s %.17g, %s %.17g", what, i, name_a, fa[i], name_b,
              fb[i]);
  g_assert_cmpint(a->simulated_gpus, ==, b->simulated_gpus);
  g_assert_cmpuint(a->tasks, ==, b->tasks);
  g_assert_cmpuint(a->events, ==, b->events);
}

/* A cluster of @nodes x @gpus a100-80gb with the given link figures (GB/s, us, Gb/s, us). */
static inline DevCluster *test_cluster(int nodes, int gpus, double intra_GBps, double intra_us,
                                       double inter_Gbps, double inter_us) {
  g_autofree char *json = g_strdup_printf(
      "{\"name\": \"test\", \"description\": \"test cluster\", \"device\": \"a100-80gb\","
      " \"nodes\": %d, \"gpus_per_node\": %d,"
      " \"intra\": {\"kind\": \"nvswitch\", \"bandwidth_GBps\": %.17g, \"latency_us\": %.17g,"
      "  \"source\": \"test\"},"
      " \"inter\": {\"kind\": \"infiniband\", \"bandwidth_Gbps\": %.17g, \"nics_per_node\": 1,"
      "  \"latency_us\": %.17g, \"source\": \"test\"}, \"sources\": {}}",
      nodes, gpus, intra_GBps, intra_us, inter_Gbps, inter_us);
  GError *error = NULL;
  DevCluster *c = dev_cluster_from_json(json, "test", &error);
  g_assert_no_error(error);
  return c;
}

/* A chain of @layers dense layers y = x W (no loss, so the stages are exactly equal): input
 * [batch, hidden] is data; op i is layer i with tp_dim = its output features. */
static inline MdlGraph *test_chain_graph(int layers, int64_t hidden, int64_t batch) {
  MdlGraph *g = mdl_graph_new("chain", "mlp", batch);
  g->default_dtype = DEV_DTYPE_FP16;
  g->num_layers = layers;
  int64_t act[2] = {batch, hidden}, w[2] = {hidden, hidden};
  int x = mdl_graph_add_tensor(g, "x", 2, act, FALSE, TRUE);
  for (int i = 0; i < layers; i++) {
    char name[32];
    g_snprintf(name, sizeof name, "w%d", i);
    int wt = mdl_graph_add_tensor(g, name, 2, w, TRUE, FALSE);
    g_snprintf(name, sizeof name, "y%d", i);
    int y = mdl_graph_add_tensor(g, name, 2, act, FALSE, FALSE);
    MdlOp op;
    memset(&op, 0, sizeof op);
    g_snprintf(name, sizeof name, "fc%d", i);
    op.name = name;
    op.kind = MDL_OP_MATMUL;
    op.ndims = 3;
    op.dims[0] = (MdlDim){"b", batch, MDL_ROLE_SAMPLE, TRUE};
    op.dims[1] = (MdlDim){"n", hidden, MDL_ROLE_PARAMETER, TRUE};
    op.dims[2] = (MdlDim){"k", hidden, MDL_ROLE_REDUCTION, TRUE};
    op.ninputs = 2;
    memset(op.inputs, -1, sizeof op.inputs);
    memset(&op.output, -1, sizeof op.output);
    op.inputs[0].tensor = x;
    op.inputs[0].dim_map[0] = 0, op.inputs[0].dim_map[1] = 2;
    op.inputs[1].tensor = wt;
    op.inputs[1].dim_map[0] = 2, op.inputs[1].dim_map[1] = 1;
    op.output.tensor = y;
    op.output.dim_map[0] = 0, op.output.dim_map[1] = 1;
    op.layer = i;
    op.tp_dim = 1;
    mdl_graph_add_op(g, &op);
    x = y;
  }
  GError *error = NULL;
  g_assert_true(mdl_graph_validate(g, &error));
  g_assert_no_error(error);
  return g;
}

/* The model of @spec (mdl_graph_parse_spec), or the test fails. */
static inline MdlGraph *test_parse_model(const char *spec) {
  GError *error = NULL;
  MdlGraph *g = mdl_graph_parse_spec(spec, &error);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  return g;
}

/* The op of @g named @name, or NULL. */
static inline const MdlOp *test_find_op(const MdlGraph *g, const char *name) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    if (strcmp(mdl_graph_op(g, o)->name, name) == 0) return mdl_graph_op(g, o);
  return NULL;
}

/* Parsing @spec fails with MDL_ERROR code @code and a one-line message containing @needle and
 * (if not NULL) @needle2. */
static inline void test_assert_model_error(const char *spec, int code, const char *needle,
                                           const char *needle2) {
  GError *error = NULL;
  MdlGraph *g = mdl_graph_parse_spec(spec, &error);
  g_assert_null(g);
  g_assert_error(error, MDL_ERROR, code);
  g_assert_null(strchr(error->message, '\n'));
  if (!strstr(error->message, needle) || (needle2 && !strstr(error->message, needle2)))
    g_error("%s: \"%s\" lacks \"%s\" / \"%s\"", spec, error->message, needle,
            needle2 ? needle2 : "");
  g_clear_error(&error);
}

/* Parsing strategy @spec for @g on @c fails with MDL_ERROR @code (-1: any) and a one-line
 * message holding @needle, or the test fails. */
static inline void test_assert_strategy_error(const MdlGraph *g, const DevCluster *c,
                                              const char *spec, int code, const char *needle) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
  g_assert_null(s);
  g_assert_nonnull(error);
  if (code >= 0) g_assert_error(error, MDL_ERROR, code);
  if (!strstr(error->message, needle)) g_error("%s: '%s' lacks '%s'", spec, error->message, needle);
  g_assert_null(strchr(error->message, '\n'));
  g_error_free(error);
}

/* Simulates @g on @c under strategy @spec with the default cost parameters, or the test fails;
 * the strategy goes to @strategy (caller frees both). */
static inline SimRun *test_simulate(const MdlGraph *g, const DevCluster *c, const char *spec,
                                    MdlStrategy **strategy) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
  g_assert_no_error(error);
  CmParams p;
  cm_params_default(&p);
  SimRun *run = sim_run_new(g, s, c, &p, &error);
  g_assert_no_error(error);
  *strategy = s;
  return run;
}

#endif
