/* cli/bench — `stratsim bench [--model M --cluster C --strategy S] [--repeat N]`: builds the
 * task graph of a large iteration (default well over a million tasks) and reports the
 * task-graph build rate and the engine's tasks simulated per second (best and median of N
 * engine runs on one core). Measures; asserts nothing. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int cli_bench(int argc, char **argv) {
  g_autofree char *model_spec = NULL, *cluster_spec = NULL, *strategy_spec = NULL;
  int repeat = 5;
  GOptionEntry entries[] = {
      {"model", 'm', 0, G_OPTION_ARG_STRING, &model_spec, "model (default gpt3-6.7b:batch=256)", "M"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_spec, "cluster (default dgx-a100:nodes=8)", "C"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &strategy_spec, "strategy (default megatron:tp=8,pp=4,dp=2,mb=1)", "S"},
      {"repeat", 'n', 0, G_OPTION_ARG_INT, &repeat, "engine runs (default 5)", "N"},
      {NULL}};
  if (!cli_parse_options("bench", "Benchmarks the task-graph builder and the event engine.",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (repeat < 1 || repeat > 1000) {
    fprintf(stderr, "stratsim bench: --repeat must be 1..1000\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!model_spec) model_spec = g_strdup("gpt3-6.7b:batch=256");
  if (!cluster_spec) cluster_spec = g_strdup("dgx-a100:nodes=8");
  if (!strategy_spec) strategy_spec = g_strdup("megatron:tp=8,pp=4,dp=2,mb=1");

  GError *error = NULL;
  int status = CLI_EXIT_OK;
  DevCluster *cluster = NULL;
  MdlGraph *graph = NULL;
  MdlStrategy *strategy = NULL;
  SimTaskGraph *tasks = NULL;
  double *secs = NULL;
  CmParams params;
  cm_params_default(&params);
  if (!(cluster = dev_cluster_parse_spec(cluster_spec, &error)) ||
      !(graph = mdl_graph_parse_spec(model_spec, &error)) ||
      !(strategy = mdl_strategy_parse_spec(strategy_spec, graph, cluster, &error))) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  printf("bench: model %s, cluster %s, strategy %s\n", model_spec, cluster_spec, strategy_spec);
  gint64 t0 = g_get_monotonic_time();
  tasks = sim_build(graph, strategy, cluster, &params, &error);
  gint64 t1 = g_get_monotonic_time();
  if (!tasks) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  uint32_t n = sim_task_graph_size(tasks);
  uint32_t edges = tasks->succ_offsets[n];
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
      status = cli_fail(error, CLI_EXIT_FAILURE);
      goto out;
    }
    makespan = s->makespan;
    sim_schedule_free(s);
    secs[r] = (double)(b - a) / 1e6;
  }
  qsort(secs, (size_t)repeat, sizeof(double), compare_double);
  printf("bench: engine  %u tasks in %.3f s best, %.3f s median of %d: %.2f M tasks/s "
         "(best), %.2f M tasks/s (median)\n",
         n, secs[0], secs[repeat / 2], repeat, n / secs[0] / 1e6, n / secs[repeat / 2] / 1e6);
  printf("bench: simulated iteration %.6g s\n", sim_time_seconds(makespan));
out:
  g_free(secs);
  sim_task_graph_free(tasks);
  mdl_strategy_free(strategy);
  mdl_graph_free(graph);
  dev_cluster_free(cluster);
  return status;
}
