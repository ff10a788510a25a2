/* cli/bench — `stratsim bench [--model M --cluster C --strategy S] [--repeat N]`: builds the
 * task graph of a large iteration (default well over a million tasks) and reports the
 * task-graph build rate and the engine's tasks simulated per second (best and median of N
 * engine runs on one core). Measures; asserts nothing. */
#include "cli/cli.h"
#include "cli/cli_bench_collectives.h"
#include "cli/cli_bench_search.h"

#include <stdio.h>
#include <stdlib.h>

#include "costmodel/costmodel.h"
#include "session/ses_session.h"
#include "sim/sim.h"
#include "sim/sim_network.h"

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* GPT-3 175B on 1024 A100s in Megatron-LM's configuration (Narayanan et al. 2021, Table 1:
 * tp=8, pp=16, dp=8, global batch 1536, micro-batch 1, interleaved schedule; the paper does not
 * print the number of chunks: 2 per rank here), simulated expanded (the full engine) and with
 * symmetry as a prediction-only run (chain merging, sim/sim_merge.c); the two must agree. The paper
 * measured 140 TFLOP/s per GPU (44% of peak) for this run. */
static int bench_gpt3(void) {
  const char *model = "gpt3-175b:batch=1536", *cluster_spec = "dgx-a100:nodes=128";
  const char *strategy_spec = "megatron:tp=8,pp=16,dp=8,mb=1,schedule=interleaved,vp=2";
  GError *error = NULL;
  double iter[2] = {0};
  for (int expanded = 0; expanded < 2; expanded++) {
    SesSpecs specs = {.model = model, .cluster = cluster_spec, .strategy = strategy_spec,
                      .options = {.no_symmetry = expanded, .prediction_only = !expanded}};
    SesSession *session = ses_session_new_from_specs(&specs, &error);
    if (!session) return cli_fail(error, cli_status_for(error));
    const MdlStrategy *s = ses_session_strategy(session);
    if (!expanded)
      printf("bench: gpt3   %s on %s, %s (%d microbatches, schedule %s)\n", model, cluster_spec,
             strategy_spec, s->num_microbatches, mdl_schedule_name(s->schedule));
    gint64 a = g_get_monotonic_time();
    SimRun *run = ses_session_simulate(session, &error);
    gint64 b = g_get_monotonic_time();
    if (!run) {
      ses_session_free(session);
      return cli_fail(error, cli_status_for(error));
    }
    const SimPrediction *pr = sim_run_prediction(run);
    iter[expanded] = pr->iteration_time_s;
    printf("bench: gpt3   %-9s %9" G_GUINT64_FORMAT " tasks, %4d GPUs simulated: %.3f s wall "
           "(build + engine + breakdown); predicted iteration %.9g s, %.4g TFLOP/s per GPU\n",
           expanded ? "expanded" : "symmetry", pr->tasks, pr->simulated_gpus,
           (double)(b - a) / 1e6, pr->iteration_time_s, pr->tflops_per_gpu);
    if (pr->merged_tasks)
      printf("bench: gpt3   %-9s %9" G_GUINT64_FORMAT " tasks timed after chain merging "
             "(prediction only, sim/sim_merge.c)\n", "", pr->merged_tasks);
    sim_run_free(run);
    ses_session_free(session);
  }
  printf("bench: gpt3   predictions %s\n", iter[0] == iter[1] ? "identical" : "DIFFER");
  return CLI_EXIT_OK;
}

/* One 64 MiB ring all-reduce over 1024 GPUs on a single switch (one host of 1024 GPUs with
 * 50 GB/s per GPU per direction, alpha = NCCL's NVLink hwLat 3.4 us), step-expanded: every
 * ring step is a transfer on the GPUs' ports. Expanded (2 x 1023 x 1024 transfers) and with
 * symmetry (the ring's members are alike: one member's 2046 transfers). */
static int bench_allreduce(void) {
  const char *json =
      "{\"name\": \"switch-1024\", \"device\": \"a100-80gb\", \"nodes\": 1, \"gpus_per_node\": 1024,"
      " \"intra\": {\"kind\": \"switch\", \"bandwidth_GBps\": 50, \"latency_us\": 3.4,"
      " \"source\": \"bench: a 1-D switch at 50 GB/s; latency NCCL tuning.cc hwLat NVLink Ring/Simple\"},"
      " \"inter\": {\"kind\": \"none\", \"bandwidth_Gbps\": 100, \"nics_per_node\": 1, \"latency_us\": 9.6,"
      " \"source\": \"unused: one host\"}}";
  GError *error = NULL;
  DevCluster *c = dev_cluster_from_json(json, "bench", &error);
  if (!c) return cli_fail(error, cli_status_for(error));
  const int p = 1024;
  const double bytes = 64.0 * 1024 * 1024;
  g_autofree int *devices = g_new(int, p);
  g_autofree gboolean *simulated = g_new(gboolean, p);
  for (int i = 0; i < p; i++) devices[i] = i;
  for (int expanded = 1; expanded >= 0; expanded--) {
    for (int i = 0; i < p; i++) simulated[i] = expanded || i == 0;
    gint64 a = g_get_monotonic_time();
    SimTaskGraph *g = sim_network_collective_graph(c, CM_ALL_REDUCE, devices, p, simulated, bytes);
    SimSchedule *s = sim_engine_run(g, &error);
    gint64 b = g_get_monotonic_time();
    if (!s) return cli_fail(error, cli_status_for(error));
    CmGroupShape shape;
    CmNcclRingSteps ring;
    CmNcclHardware hw;
    cm_group_shape(c, devices, p, &shape);
    cm_nccl_ring_steps(CM_ALL_REDUCE, &shape, c, bytes, &ring);
    cm_nccl_hardware(c, &hw);
    double model = cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_RING, ring.protocol, &shape, &hw, bytes, NULL);
    printf("bench: ring   64 MiB all-reduce over %d GPUs, step-expanded, %-9s %8u tasks in "
           "%.4f s wall (build + engine); simulated %.6f s (NCCL's ring model %.6f s)\n",
           p, expanded ? "expanded:" : "symmetry:", sim_task_graph_size(g), (double)(b - a) / 1e6,
           sim_time_seconds(sim_schedule_makespan(s)), model);
    sim_schedule_free(s);
    sim_task_graph_free(g);
  }
  dev_cluster_free(c);
  return CLI_EXIT_OK;
}

int cli_bench(int argc, char **argv) {
  g_autofree char *model_spec = NULL, *cluster_spec = NULL, *strategy_spec = NULL;
  int repeat = 5;
  double search_seconds = 20;
  gboolean no_steady = FALSE;
  g_autofree char *suite = NULL, *data_dir = NULL;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model_spec, "model (default gpt3-6.7b:batch=256)", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_spec, "cluster (default dgx-a100:nodes=8)", "C"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &strategy_spec, "strategy (default megatron:tp=8,pp=4,dp=2,mb=1); suite predict: time this point only (on --model, --cluster or the 175B case)", "S"},
      {"repeat", 'n', 0, G_OPTION_ARG_INT, &repeat, "engine runs (default 5)", "N"},
      {"suite", 0, 0, G_OPTION_ARG_STRING, &suite, "engine, gpt3, allreduce, delta, store, table4, search, collectives, megatron, bridge, gemm, host, step, predict or all (default; store, table4, search, collectives, megatron, bridge, gemm, host, step and predict only by name)", "NAME"},
      {"data", 0, 0, G_OPTION_ARG_FILENAME, &data_dir, "megatron and bridge suites: the validation data folder (default: the checkout's tests/data/validation); gemm and host suites: one tests/data/gpu/ folder (default: each)", "DIR"},
      {"seconds", 0, 0, G_OPTION_ARG_DOUBLE, &search_seconds, "search suite: each algorithm's time budget (default 20)", "S"},
      {"no-steady", 0, 0, G_OPTION_ARG_NONE, &no_steady, "predict suite: time every microbatch (no steady-state route)", NULL},
      {NULL}};
  if (!cli_parse_options("bench", "Benchmarks the task-graph builder and the event engine.",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!(search_seconds > 0 && search_seconds <= 3600)) {
    fprintf(stderr, "stratsim bench: --seconds must be above 0 and at most 3600 (got %g)\n", search_seconds);
    return CLI_EXIT_BAD_INPUT;
  }
  if (repeat < 1 || repeat > 1000) {
    fprintf(stderr, "stratsim bench: --repeat must be 1..1000\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!suite) suite = g_strdup("all");
  gboolean all = g_strcmp0(suite, "all") == 0;
  if (!all && g_strcmp0(suite, "engine") != 0 && g_strcmp0(suite, "gpt3") != 0 &&
      g_strcmp0(suite, "allreduce") != 0 && g_strcmp0(suite, "delta") != 0 && g_strcmp0(suite, "table4") != 0 &&
      g_strcmp0(suite, "search") != 0 && g_strcmp0(suite, "store") != 0 &&
      g_strcmp0(suite, "collectives") != 0 && g_strcmp0(suite, "megatron") != 0 &&
      g_strcmp0(suite, "bridge") != 0 &&
      g_strcmp0(suite, "gemm") != 0 && g_strcmp0(suite, "host") != 0 && g_strcmp0(suite, "step") != 0 &&
      g_strcmp0(suite, "predict") != 0) {
    fprintf(stderr, "stratsim bench: --suite must be engine, gpt3, allreduce, delta, store, table4, search, collectives, megatron, bridge, gemm, host, step, predict or all\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!all && g_strcmp0(suite, "engine") != 0) {
    if (g_strcmp0(suite, "delta") == 0) return cli_bench_delta();
    if (g_strcmp0(suite, "table4") == 0) return cli_bench_table4();
    if (g_strcmp0(suite, "store") == 0) return cli_bench_store(repeat);
    if (g_strcmp0(suite, "search") == 0) return cli_bench_search(search_seconds);
    if (g_strcmp0(suite, "collectives") == 0) return cli_bench_collectives(NULL);
    if (g_strcmp0(suite, "megatron") == 0) return cli_bench_megatron(data_dir);
    if (g_strcmp0(suite, "bridge") == 0) return cli_bench_bridge(data_dir);
    if (g_strcmp0(suite, "gemm") == 0) return cli_bench_gemm(data_dir);
    if (g_strcmp0(suite, "host") == 0) return cli_bench_host(data_dir);
    if (g_strcmp0(suite, "step") == 0) return cli_bench_step();
    if (g_strcmp0(suite, "predict") == 0)
      return cli_bench_predict(repeat, model_spec, cluster_spec, strategy_spec, no_steady);
    return g_strcmp0(suite, "gpt3") == 0 ? bench_gpt3() : bench_allreduce();
  }
  if (!model_spec) model_spec = g_strdup("gpt3-6.7b:batch=256");
  if (!cluster_spec) cluster_spec = g_strdup("dgx-a100:nodes=8");
  if (!strategy_spec) strategy_spec = g_strdup("megatron:tp=8,pp=4,dp=2,mb=1");

  GError *error = NULL;
  int status = CLI_EXIT_OK;
  SimTaskGraph *tasks = NULL;
  double *secs = NULL;
  /* The expanded graph: this suite measures the engine on a large one (symmetry would fold it). */
  SesSpecs specs = {.model = model_spec, .cluster = cluster_spec, .strategy = strategy_spec,
                    .options = {.no_symmetry = TRUE}};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  if (!session) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  printf("bench: model %s, cluster %s, strategy %s\n", model_spec, cluster_spec, strategy_spec);
  gint64 t0 = g_get_monotonic_time();
  tasks = sim_build_with_options(ses_session_graph(session), ses_session_strategy(session),
                                 ses_session_cluster(session), ses_session_params(session),
                                 ses_session_options(session), &error);
  gint64 t1 = g_get_monotonic_time();
  if (!tasks) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  uint32_t n = sim_task_graph_size(tasks);
  uint32_t edges = sim_task_graph_num_edges(tasks);
  double build_s = (double)(t1 - t0) / 1e6;
  printf("bench: build   %u tasks, %u edges in %.3f s: %.2f M tasks/s\n", n, edges, build_s,
         n / build_s / 1e6);
  secs = g_new(double, repeat);
  SimTime makespan = 0;
  for (int r = 0; r < repeat; r++) {
    gint64 a = g_get_monotonic_time();
    SimSchedule *s = sim_engine_run(tasks, &error);
    gint64 b = g_get_monotonic_time();
    if (!s) {
      status = cli_fail(error, cli_status_for(error));
      goto out;
    }
    makespan = sim_schedule_makespan(s);
    sim_schedule_free(s);
    secs[r] = (double)(b - a) / 1e6;
  }
  qsort(secs, (size_t)repeat, sizeof(double), compare_double);
  printf("bench: engine  %u tasks in %.3f s best, %.3f s median of %d: %.2f M tasks/s "
         "(best), %.2f M tasks/s (median)\n",
         n, secs[0], secs[repeat / 2], repeat, n / secs[0] / 1e6, n / secs[repeat / 2] / 1e6);
  printf("bench: simulated iteration %.6g s\n", sim_time_seconds(makespan));
  if (all) {
    status = bench_gpt3();
    if (status == CLI_EXIT_OK) status = bench_allreduce();
    if (status == CLI_EXIT_OK) status = cli_bench_delta();
  }
out:
  g_free(secs);
  sim_task_graph_free(tasks);
  ses_session_free(session);
  return status;
}
