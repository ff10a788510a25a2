/* cli/bench — the delta suite: delta simulation against full simulation for one-op changes
 * (FlexFlow's MCMC proposals: a random op to a random config) on task graphs of 16, 64 and 256
 * GPUs, every GPU simulated. Each change is timed both ways on the same strategy and the two
 * answers compared. Measures; asserts nothing. */
#include "cli/cli.h"

#include <stdio.h>

#include "session/ses_session.h"
#include "sim/sim.h"
#include "sim/sim_delta.h"
#include "search/srch_search.h"

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

/* Of the compute tasks both runs have (same id, kind, op and microbatch: the builder numbers
 * compute tasks alike for strategies that differ in splits only), how many start at another
 * instant after the change. Every one of them must be re-timed by any exact delta method:
 * their share bounds what re-timing "only the affected part" can save. Adds to @compared and
 * @moved. */
static void count_moved(const SimRun *before, const SimRun *after, guint64 *compared,
                        guint64 *moved) {
  uint32_t n = MIN(sim_run_num_tasks(before), sim_run_num_tasks(after));
  SimTaskInfo a, b;
  for (uint32_t t = 0; t < n; t++) {
    sim_run_task(before, t, &a);
    sim_run_task(after, t, &b);
    if ((a.kind != SIM_TASK_FORWARD && a.kind != SIM_TASK_BACKWARD) || a.kind != b.kind ||
        a.op != b.op || a.microbatch != b.microbatch)
      continue;
    (*compared)++;
    if (a.start != b.start) (*moved)++;
  }
}

static int bench_one(int gpus, int changes, gboolean expanded) {
  g_autofree char *cluster_spec = g_strdup_printf("dgx-a100:nodes=%d", gpus / 8);
  const char *model = "gpt:layers=8,hidden=2048,heads=16,seq=1024,vocab=32000,batch=256";
  g_autofree char *strategy_spec = g_strdup_printf("megatron:tp=4,pp=2,dp=%d,mb=%d", gpus / 8,
                                                   256 / (gpus / 8) / 8);
  GError *error = NULL;
  SesSpecs specs = {.model = model, .cluster = cluster_spec, .strategy = strategy_spec,
                    .options = {.no_symmetry = expanded}};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  if (!session) return cli_fail(error, cli_status_for(error));
  const MdlGraph *graph = ses_session_graph(session);
  const DevCluster *cluster = ses_session_cluster(session);
  const CmParams params = *ses_session_params(session);
  const SimOptions options = *ses_session_options(session);
  /* The changes are made to a copy of the session's strategy. */
  MdlStrategy *s = mdl_strategy_copy(ses_session_strategy(session));
  SimDelta *delta = sim_delta_new(graph, cluster, &params, &options);
  int status = CLI_EXIT_OK, mismatches = 0;
  if (!sim_delta_simulate(delta, s, &error)) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  guint64 tasks = sim_run_prediction(sim_delta_run(delta))->tasks;
  GRand *rand = g_rand_new_with_seed(42);
  double full_s = 0, delta_s = 0;
  guint64 compared = 0, moved = 0;
  SimRun *previous = NULL;
  for (int i = 0; i < changes; i++) {
    propose(rand, s, graph, cluster);
    gint64 a = g_get_monotonic_time();
    SimRun *full = sim_run_new_with_options(graph, s, cluster, &params, &options, &error);
    gint64 b = g_get_monotonic_time();
    gboolean ok = full && sim_delta_simulate(delta, s, &error);
    gint64 c = g_get_monotonic_time();
    if (!ok) {
      sim_run_free(full);
      sim_run_free(previous);
      g_rand_free(rand);
      status = cli_fail(error, cli_status_for(error));
      goto out;
    }
    full_s += (double)(b - a) / 1e6;
    delta_s += (double)(c - b) / 1e6;
    if (sim_schedule_makespan(sim_run_schedule(full)) !=
        sim_schedule_makespan(sim_run_schedule(sim_delta_run(delta))))
      mismatches++;
    if (previous) count_moved(previous, full, &compared, &moved);
    sim_run_free(previous);
    previous = full;
  }
  sim_run_free(previous);
  g_rand_free(rand);
  const SimDeltaStats *st = sim_delta_stats(delta);
  printf("bench: delta  %3d GPUs %-8s %7" G_GUINT64_FORMAT " tasks: %d one-op changes, full %.3f ms, "
         "delta %.3f ms per change: %.1fx; %.1f%% of tasks rebuilt, %.1f%% of events kept, "
         "%.1f%% of compute tasks start elsewhere after a change; %" G_GUINT64_FORMAT
         " of %d changes simulated in full (symmetry or cross-mesh moves changed); %d answers differ\n",
         gpus, expanded ? "expanded" : "symmetry", tasks, changes, full_s / changes * 1e3, delta_s / changes * 1e3, full_s / delta_s,
         100.0 * (double)st->tasks_rebuilt / (double)MAX(st->tasks_rebuilt + st->tasks_copied, 1),
         100.0 * (double)st->events_kept / (double)MAX(st->events_kept + st->events_simulated, 1),
         100.0 * (double)moved / (double)MAX(compared, 1), st->full - 1, changes, mismatches);
out:
  sim_delta_free(delta);
  mdl_strategy_free(s);
  ses_session_free(session);
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

/* FlexFlow's Table 4: the end-to-end search time with full and with delta simulation, per
 * model and GPU count on the P100 cluster (4 GPUs per node). MCMC with a fixed evaluation
 * budget and seed: both runs walk the same chain and must find the same winner. */
static int table4_one(const char *model, int nodes, int budget) {
  g_autofree char *cluster_spec = g_strdup_printf("flexflow-p100:nodes=%d", nodes);
  GError *error = NULL;
  SesSpecs specs = {.model = model, .cluster = cluster_spec};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  if (!session) {
    if (nodes == 1) printf("bench: table4 %-14s skipped: not a model this build knows\n", model);
    g_clear_error(&error);
    return CLI_EXIT_OK;
  }
  double wall[2] = {0}, best[2] = {0};
  guint64 evals = 0;
  for (int k = 0; k < 2; k++) {
    SrchOptions o;
    srch_options_default(&o);
    o.algo = SRCH_ALGO_MCMC;
    o.budget.evaluations = (guint64)budget;
    o.seed = 1;
    o.no_baselines = TRUE;
    o.no_delta = k == 0;
    gint64 a = g_get_monotonic_time();
    SrchResult *r = srch_run(ses_session_graph(session), ses_session_cluster(session),
                             ses_session_params(session), &o, &error);
    wall[k] = (double)(g_get_monotonic_time() - a) / 1e6;
    if (!r) {
      ses_session_free(session);
      return cli_fail(error, cli_status_for(error));
    }
    best[k] = r->best_time_s;
    evals = r->evaluations;
    srch_result_free(r);
  }
  printf("bench: table4 %-14s %2d GPUs: %" G_GUINT64_FORMAT " MCMC evaluations, full %.2f s, "
         "delta %.2f s: %.1fx; winners %s (%.6g s)\n",
         model, nodes * 4, evals, wall[0], wall[1], wall[0] / wall[1],
         best[0] == best[1] ? "identical" : "DIFFER", best[1]);
  ses_session_free(session);
  return CLI_EXIT_OK;
}

int cli_bench_table4(void) {
  const char *models[] = {"alexnet", "inception-v3", "resnet-101", "rnntc", "rnnlm", "nmt"};
  const int nodes[] = {1, 2, 4};
  printf("bench: table4 FlexFlow Table 4: search time with full vs delta simulation, "
         "flexflow-p100 (4 P100 per node), MCMC, 1000 evaluations, seed 1, one thread\n");
  for (gsize m = 0; m < G_N_ELEMENTS(models); m++)
    for (gsize n = 0; n < G_N_ELEMENTS(nodes); n++) {
      int status = table4_one(models[m], nodes[n], 1000);
      if (status != CLI_EXIT_OK) return status;
    }
  return CLI_EXIT_OK;
}
