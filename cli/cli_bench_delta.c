/* cli/bench — the delta suite: delta simulation against full simulation for one-op changes
 * (FlexFlow's MCMC proposals: a random op to a random config) on task graphs of 16, 64 and 256
 * GPUs, every GPU simulated. Each change is timed both ways on the same strategy and the two
 * answers compared. Measures; asserts nothing. */
#include "cli/cli.h"

#include <stdio.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"
#include "sim/sim_delta.h"

/* A random op's split on a random mesh axis set to a random dim or replicated, until the
 * strategy validates (the change is undone otherwise). */
static void propose(GRand *rand, MdlStrategy *s, const MdlGraph *g, const DevCluster *c) {
  for (;;) {
    int o = g_rand_int_range(rand, 0, s->num_ops);
    const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[o].mesh);
    int a = g_rand_int_range(rand, 0, mesh->ndims);
    MdlOpConfig saved = s->configs[o];
    s->configs[o].split[a] = (int8_t)g_rand_int_range(rand, -1, mdl_graph_op(g, o)->ndims);
    if (memcmp(&saved, &s->configs[o], sizeof saved) == 0) continue;
    GError *error = NULL;
    if (mdl_strategy_validate(s, g, c, &error)) return;
    g_clear_error(&error);
    s->configs[o] = saved;
  }
}

static int bench_one(int gpus, int changes, gboolean expanded) {
  g_autofree char *cluster_spec = g_strdup_printf("dgx-a100:nodes=%d", gpus / 8);
  const char *model = "gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000,batch=256";
  g_autofree char *strategy_spec = g_strdup_printf("megatron:tp=4,pp=2,dp=%d,mb=%d", gpus / 8,
                                                   256 / (gpus / 8) / 8);
  GError *error = NULL;
  DevCluster *cluster = dev_cluster_parse_spec(cluster_spec, &error);
  MdlGraph *graph = cluster ? mdl_graph_parse_spec(model, &error) : NULL;
  MdlStrategy *s = graph ? mdl_strategy_parse_spec(strategy_spec, graph, cluster, &error) : NULL;
  if (!s) {
    mdl_graph_free(graph);
    dev_cluster_free(cluster);
    return cli_fail(error, CLI_EXIT_FAILURE);
  }
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.no_symmetry = expanded};
  SimDelta *delta = sim_delta_new(graph, cluster, &params, &options);
  int status = CLI_EXIT_OK, mismatches = 0;
  if (!sim_delta_simulate(delta, s, &error)) {
    status = cli_fail(error, CLI_EXIT_FAILURE);
    goto out;
  }
  guint64 tasks = sim_delta_run(delta)->prediction.tasks;
  GRand *rand = g_rand_new_with_seed(42);
  double full_s = 0, delta_s = 0;
  for (int i = 0; i < changes; i++) {
    propose(rand, s, graph, cluster);
    gint64 a = g_get_monotonic_time();
    SimRun *full = sim_run_new_with_options(graph, s, cluster, &params, &options, &error);
    gint64 b = g_get_monotonic_time();
    gboolean ok = full && sim_delta_simulate(delta, s, &error);
    gint64 c = g_get_monotonic_time();
    if (!ok) {
      sim_run_free(full);
      g_rand_free(rand);
      status = cli_fail(error, CLI_EXIT_FAILURE);
      goto out;
    }
    full_s += (double)(b - a) / 1e6;
    delta_s += (double)(c - b) / 1e6;
    if (full->schedule->makespan != sim_delta_run(delta)->schedule->makespan) mismatches++;
    sim_run_free(full);
  }
  g_rand_free(rand);
  const SimDeltaStats *st = sim_delta_stats(delta);
  printf("bench: delta  %3d GPUs %-8s %7" G_GUINT64_FORMAT " tasks: %d one-op changes, full %.3f ms, "
         "delta %.3f ms per change: %.1fx; %.1f%% of tasks rebuilt, %.1f%% of events kept; %d answers differ\n",
         gpus, expanded ? "expanded" : "symmetry", tasks, changes, full_s / changes * 1e3, delta_s / changes * 1e3, full_s / delta_s,
         100.0 * (double)st->tasks_rebuilt / (double)MAX(st->tasks_rebuilt + st->tasks_copied, 1),
         100.0 * (double)st->events_kept / (double)MAX(st->events_kept + st->events_simulated, 1),
         mismatches);
out:
  sim_delta_free(delta);
  mdl_strategy_free(s);
  mdl_graph_free(graph);
  dev_cluster_free(cluster);
  return status;
}

int cli_bench_delta(void) {
  printf("bench: delta  gpt:layers=8,hidden=2048 (batch 256), megatron tp=4 pp=2; random "
         "one-op changes (seed 42), with symmetry (the default) and every GPU simulated\n");
  const int gpus[3] = {16, 64, 256}, changes[3] = {200, 100, 30};
  for (int expanded = 0; expanded < 2; expanded++)
    for (int i = 0; i < 3; i++) {
      int status = bench_one(gpus[i], changes[i], expanded);
      if (status != CLI_EXIT_OK) return status;
    }
  return CLI_EXIT_OK;
}
