/* Tests of `explain`: the collectives it lists are the ones the engine simulates (their times
 * add up to each device's communication streams' time), layouts and memory are reported. */
#include <cjson/cJSON.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"
#include "test-util.h"

/* Busy time of @device's stream @stream, straight from the task graph. */
static double stream_busy(const SimRun *run, int device, SimStream stream) {
  SimTime busy = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    for (uint16_t r = 0; r < t->nres; r++)
      if (t->resources[r] == sim_resource_stream(device, stream)) busy += t->duration;
  }
  return sim_time_seconds(busy);
}

static void check_case(const char *model, const char *cluster, const char *strategy,
                       gboolean expanded, int expect_devices) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(cluster, &error);
  MdlGraph *g = mdl_graph_parse_spec(model, &error);
  g_assert_no_error(error);
  MdlStrategy *s = mdl_strategy_parse_spec(strategy, g, c, &error);
  g_assert_no_error(error);
  CmParams p;
  cm_params_default(&p);
  SimOptions o = {.no_symmetry = expanded};
  SimRun *run = sim_run_new_with_options(g, s, c, &p, &o, &error);
  g_assert_no_error(error);
  g_autofree char *text = sim_explain_json(run);
  cJSON *root = cJSON_Parse(text);
  g_assert_nonnull(root);
  cJSON *comm = cJSON_GetObjectItem(root, "communication"), *dev;
  g_assert_cmpint(cJSON_GetArraySize(comm), ==, expect_devices);
  cJSON_ArrayForEach(dev, comm) {
    int d = (int)cJSON_GetObjectItem(dev, "device")->valuedouble;
    double listed = 0, reported = cJSON_GetObjectItem(dev, "comm_time_s")->valuedouble;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(dev, "collectives")) {
      double t = cJSON_GetObjectItem(e, "time_s")->valuedouble;
      double n = cJSON_GetObjectItem(e, "count")->valuedouble;
      g_assert_cmpfloat(cJSON_GetObjectItem(e, "group_size")->valuedouble, >=, 2);
      g_assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "link")));
      g_assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "stream")));
      listed += t * n;
    }
    /* Per stream, and their sum: the three communication streams of sim.h. */
    double engine = 0;
    cJSON *per = cJSON_GetObjectItem(dev, "stream_time_s");
    for (int k = SIM_STREAM_COMM; k < SIM_STREAMS; k++) {
      double mine = stream_busy(run, d, (SimStream)k);
      double shown = cJSON_GetObjectItem(per, sim_stream_name((SimStream)k))->valuedouble;
      g_assert_cmpfloat_with_epsilon(shown, mine, 1e-12 * mine + 1e-15);
      engine += mine;
    }
    g_assert_cmpfloat(engine, >, 0);
    g_assert_cmpfloat_with_epsilon(reported, engine, 1e-12 * engine + 1e-15);
    g_assert_cmpfloat_with_epsilon(listed, engine, 1e-9 * engine);
  }
  /* Every op is listed with a layout per operand. */
  cJSON *ops = cJSON_GetObjectItem(root, "ops");
  g_assert_cmpint(cJSON_GetArraySize(ops), ==, mdl_graph_num_ops(g));
  cJSON *op0 = cJSON_GetArrayItem(ops, 0);
  g_assert_true(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(op0, "output"), "layout")));
  g_assert_cmpint(cJSON_GetArraySize(cJSON_GetObjectItem(root, "memory")), ==, sim_run_prediction(run)->num_gpus);
  cJSON_Delete(root);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_megatron(void) {
  check_case("gpt:layers=4,hidden=1024,heads=16,seq=256,vocab=4096,batch=16", "dgx-a100:nodes=2",
             "megatron:tp=8,pp=1,dp=2,mb=2", FALSE, 1);
  check_case("gpt:layers=4,hidden=1024,heads=16,seq=256,vocab=4096,batch=16", "dgx-a100:nodes=2",
             "megatron:tp=4,pp=2,dp=2,mb=2", TRUE, 2);
}

static void test_data_parallel(void) {
  check_case("vgg13:batch=32", "flexflow-p100", "dp", FALSE, 1);
}

/* The layout strings of a row-parallel matmul's output: batch split, partial sum. */
static void test_layouts(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=1,hidden=512,heads=8,seq=64,vocab=1024,batch=8", &error);
  MdlStrategy *s = mdl_strategy_parse_spec("megatron:tp=4,dp=2,mb=1", g, c, &error);
  g_assert_no_error(error);
  CmParams p;
  cm_params_default(&p);
  SimRun *run = sim_run_new(g, s, c, &p, &error);
  g_assert_no_error(error);
  g_autofree char *text = sim_explain_json(run);
  cJSON *root = cJSON_Parse(text), *op;
  gboolean found = FALSE;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(root, "ops")) {
    if (!g_str_has_suffix(cJSON_GetObjectItem(op, "name")->valuestring, "fc2")) continue;
    g_assert_cmpstr(cJSON_GetObjectItem(cJSON_GetObjectItem(op, "output"), "layout")->valuestring, ==, "S(0),P");
    found = TRUE;
  }
  g_assert_true(found);
  cJSON_Delete(root);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* The components (issue 14, item 6): one compute figure per layer, all alike for identical
 * layers; the layers' and the other ops' compute add up to the breakdown's compute; the four
 * parts add up to the iteration; a small model on short sequences shows host-bound time, and
 * overlapped communication is what the communication streams ran beyond the exposed part. */
static void test_components(void) {
  SimRun *run = test_simulate_specs("gpt:layers=6,hidden=1024,heads=16,seq=256,batch=64",
                                    "dgx-a100", "megatron:tp=2,dp=4,mb=1", FALSE);
  g_autofree char *text = sim_explain_json(run);
  cJSON *root = cJSON_Parse(text);
  const cJSON *co = cJSON_GetObjectItem(root, "components"), *e;
  g_assert_nonnull(co);
  const SimPrediction *pr = sim_run_prediction(run);
  double layers = 0, first = -1;
  int n = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(co, "layer_compute_s")) {
    if (first < 0) first = e->valuedouble;
    g_assert_cmpfloat(e->valuedouble, ==, first);
    layers += e->valuedouble;
    n++;
  }
  g_assert_cmpint(n, ==, 6);
  g_assert_cmpfloat_with_epsilon(layers + cJSON_GetObjectItem(co, "other_compute_s")->valuedouble,
                                 pr->compute_s, 1e-9 * pr->compute_s);
  double host = cJSON_GetObjectItem(co, "host_bound_s")->valuedouble;
  g_assert_cmpfloat(host, ==, pr->host_bound_s);
  g_assert_cmpfloat(host, >, 0.05 * pr->iteration_time_s);
  g_assert_cmpfloat_with_epsilon(pr->compute_s + pr->comm_exposed_s + host + pr->bubble_s,
                                 pr->iteration_time_s, 1e-9 * pr->iteration_time_s);
  g_assert_cmpfloat(cJSON_GetObjectItem(co, "comm_overlapped_s")->valuedouble, >=, 0);
  g_assert_cmpstr(cJSON_GetStringValue(cJSON_GetObjectItem(co, "framework")), ==, "megatron-lm");
  cJSON_Delete(root);
  test_run_free(run);
}

/* With overlap disabled nothing hides communication: the collectives explain lists add up to
 * the exposed communication time, and compute + communication + bubble = iteration. */
static void test_no_overlap_totals(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100:nodes=2", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=4,hidden=1024,heads=16,seq=256,vocab=4096,batch=16", &error);
  MdlStrategy *s = mdl_strategy_parse_spec("megatron:tp=8,dp=2,mb=2,overlap=0,bucket_mb=1", g, c, &error);
  g_assert_no_error(error);
  CmParams p;
  cm_params_default(&p);
  SimRun *run = sim_run_new(g, s, c, &p, &error);
  g_assert_no_error(error);
  g_assert_true(sim_run_prediction(run)->symmetric);
  g_autofree char *text = sim_explain_json(run);
  cJSON *root = cJSON_Parse(text);
  cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "communication"), 0), *e;
  double listed = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(dev, "collectives"))
    listed += cJSON_GetObjectItem(e, "total_time_s")->valuedouble;
  g_assert_cmpfloat_with_epsilon(listed, sim_run_prediction(run)->comm_exposed_s, 1e-9 * listed);
  const SimPrediction *pr = sim_run_prediction(run);
  g_assert_cmpfloat_with_epsilon(pr->compute_s + pr->comm_exposed_s + pr->host_bound_s + pr->bubble_s,
                                 pr->iteration_time_s, 1e-12);
  cJSON_Delete(root);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim/explain/megatron-totals", test_megatron);
  g_test_add_func("/sim/explain/dp-totals", test_data_parallel);
  g_test_add_func("/sim/explain/layouts", test_layouts);
  g_test_add_func("/sim/explain/no-overlap-totals", test_no_overlap_totals);
  g_test_add_func("/sim/explain/components", test_components);
  return g_test_run();
}
