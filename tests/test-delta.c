/* Delta simulation (sim/sim_delta.h): after every random change of ops' splits, the delta
 * answer equals a full simulation of the same strategy, bit for bit — the timeline (every
 * task's start, the engine's pop order) and the prediction's JSON. Each case is a model,
 * cluster, base strategy and options; a change sets a random op's split on a random mesh
 * axis to a random dim (or replicated), kept when the strategy validates, so the walk visits
 * layouts no builder writes (partial sums, all-to-alls, splits of reduction dims).
 * STRATSIM_DELTA_MUTATIONS overrides the changes per case (default 400). */
#include <glib.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"
#include "sim/sim.h"
#include "sim/sim_crossmesh.h"
#include "sim/sim_delta.h"
#include "search/srch_search.h"

typedef struct {
  const char *model, *cluster, *strategy;
  gboolean step, no_symmetry;
  guint32 seed;
  gboolean crossmesh;          /* SimOptions.crossmesh with the method and order below */
  int crossmesh_method, crossmesh_order;
} DeltaCase;

static const DeltaCase cases[] = {
    {"gpt:layers=2,hidden=256,heads=4,seq=128,vocab=1024,batch=16", "dgx-a100:nodes=2",
     "megatron:tp=4,pp=2,dp=2,mb=2", FALSE, FALSE, 1, FALSE, 0, 0},
    {"gpt:layers=2,hidden=256,heads=4,seq=128,vocab=1024,batch=16", "dgx-a100:nodes=2",
     "megatron:tp=4,pp=2,dp=2,mb=2", FALSE, TRUE, 2, FALSE, 0, 0},
    {"gpt:layers=4,hidden=256,heads=4,seq=64,vocab=1024,batch=16", "dgx-a100",
     "megatron:tp=2,pp=2,dp=2,mb=4,schedule=interleaved,vp=2,zero=3,recompute=full", FALSE, TRUE, 3, FALSE, 0, 0},
    {"gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1024,batch=8", "dgx-a100",
     "megatron:tp=4,dp=2,mb=2,sp=1,zero=2,recompute=selective,wdelay=1", FALSE, FALSE, 4, FALSE, 0, 0},
    {"gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1024,batch=8", "dgx-a100",
     "megatron:tp=2,pp=2,dp=2,mb=2,zero=1", TRUE, FALSE, 5, FALSE, 0, 0},
    {"mlp:layers=4,hidden=512,batch=64", "flexflow-p100", "megatron:tp=2,dp=4,mb=2", FALSE, TRUE, 6, FALSE, 0, 0},
    {"mlp:layers=4,hidden=512,batch=64", "flexflow-k80:nodes=2", "summa:q=2,dp=2", FALSE, TRUE, 7, FALSE, 0, 0},
    {"alexnet:batch=64", "flexflow-p100", "dp", FALSE, TRUE, 8, FALSE, 0, 0},
    /* Every move between the stages planned, with send + local all-gather and greedy order. */
    {"gpt:layers=2,hidden=256,heads=4,seq=128,vocab=1024,batch=16", "dgx-a100:nodes=2",
     "megatron:tp=4,pp=2,dp=2,mb=2", FALSE, FALSE, 9, TRUE, SIM_CROSSMESH_LOCAL_ALLGATHER,
     SIM_CROSSMESH_GREEDY},
};

static int mutations_per_case(void) {
  const char *env = g_getenv("STRATSIM_DELTA_MUTATIONS");
  int n = env ? atoi(env) : 400;
  return n > 0 ? n : 400;
}

/* Sets a random op's split on a random axis of its mesh to a random dim or -1; TRUE when
 * the result validates (else the change is undone). Sometimes changes two ops at once. */
static gboolean mutate(GRand *rand, MdlStrategy *s, const MdlGraph *g, const DevCluster *c) {
  int changes = g_rand_int_range(rand, 0, 8) == 0 ? 2 : 1;
  MdlOpConfig saved[2];
  int ops[2];
  for (int i = 0; i < changes; i++) {
    int o = g_rand_int_range(rand, 0, s->num_ops);
    const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[o].mesh);
    int a = g_rand_int_range(rand, 0, mesh->ndims);
    ops[i] = o;
    saved[i] = s->configs[o];
    s->configs[o].split[a] = (int8_t)g_rand_int_range(rand, -1, mdl_graph_op(g, o)->ndims);
  }
  GError *error = NULL;
  if (mdl_strategy_validate(s, g, c, &error)) return TRUE;
  g_clear_error(&error);
  for (int i = changes - 1; i >= 0; i--) s->configs[ops[i]] = saved[i];
  return FALSE;
}

static void check_equal(const SimRun *delta, const SimRun *full) {
  g_autofree char *a = sim_prediction_to_json(delta, FALSE);
  g_autofree char *b = sim_prediction_to_json(full, FALSE);
  g_assert_cmpstr(a, ==, b);
  guint32 n = sim_run_num_tasks(full);
  g_assert_cmpuint(sim_run_num_tasks(delta), ==, n);
  const SimSchedule *ds = sim_run_schedule(delta), *fs = sim_run_schedule(full);
  g_assert_cmpuint(sim_schedule_makespan(ds), ==, sim_schedule_makespan(fs));
  for (uint32_t t = 0; t < n; t++) {
    g_assert_cmpuint(sim_schedule_start(ds, t), ==, sim_schedule_start(fs, t));
    g_assert_cmpuint(sim_schedule_order(ds, t), ==, sim_schedule_order(fs, t));
  }
}

static void test_delta_equals_full(gconstpointer data) {
  const DeltaCase *dc = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(dc->cluster, &error);
  g_assert_no_error(error);
  MdlGraph *g = mdl_graph_parse_spec(dc->model, &error);
  g_assert_no_error(error);
  MdlStrategy *s = mdl_strategy_parse_spec(dc->strategy, g, c, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.no_symmetry = dc->no_symmetry, .step_collectives = dc->step,
                        .crossmesh = dc->crossmesh, .crossmesh_method = dc->crossmesh_method,
                        .crossmesh_order = dc->crossmesh_order};
  SimDelta *delta = sim_delta_new(g, c, &params, &options);
  GRand *rand = g_rand_new_with_seed(dc->seed);
  int n = mutations_per_case(), checked = 0, refused = 0;
  for (int i = 0; i <= n; i++) {
    if (i > 0 && !mutate(rand, s, g, c)) continue;
    SimRun *full = sim_run_new_with_options(g, s, c, &params, &options, &error);
    gboolean ok = sim_delta_simulate(delta, s, error ? NULL : &error);
    if (!full) {
      /* The simulator refuses it (a move between meshes it cannot plan): so must delta. */
      g_assert_false(ok);
      g_clear_error(&error);
      refused++;
      continue;
    }
    g_assert_no_error(error);
    g_assert_true(ok);
    check_equal(sim_delta_run(delta), full);
    sim_run_free(full);
    checked++;
  }
  const SimDeltaStats *st = sim_delta_stats(delta);
  g_test_message("%s / %s / %s: %d strategies checked (%d refused); %" G_GUINT64_FORMAT
                 " by delta, %" G_GUINT64_FORMAT " full, %" G_GUINT64_FORMAT
                 " tasks rebuilt, %" G_GUINT64_FORMAT " copied; %" G_GUINT64_FORMAT
                 " events kept, %" G_GUINT64_FORMAT " simulated",
                 dc->model, dc->cluster, dc->strategy, checked, refused, st->delta, st->full,
                 st->tasks_rebuilt, st->tasks_copied, st->events_kept, st->events_simulated);
  /* The walk must exercise the delta path, not fall back to full simulations. */
  g_assert_cmpuint(st->delta, >, (guint64)checked / 4);
  g_assert_cmpuint(st->events_kept, >, 0); /* and the re-timing resumes mid-timeline */
  g_rand_free(rand);
  sim_delta_free(delta);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Structural changes (a different microbatch count) fall back to a full simulation and stay
 * exact; a refused strategy leaves the last run current. */
static void test_delta_fallback(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1024,batch=8", &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {0};
  SimDelta *delta = sim_delta_new(g, c, &params, &options);
  g_assert_null(sim_delta_run(delta));
  const char *specs[] = {"megatron:tp=2,dp=4,mb=2", "megatron:tp=2,dp=4,mb=1", "megatron:tp=4,dp=2,mb=1"};
  for (int k = 0; k < 3; k++) {
    MdlStrategy *s = mdl_strategy_parse_spec(specs[k], g, c, &error);
    g_assert_no_error(error);
    g_assert_true(sim_delta_simulate(delta, s, &error));
    g_assert_no_error(error);
    SimRun *full = sim_run_new(g, s, c, &params, &error);
    check_equal(sim_delta_run(delta), full);
    sim_run_free(full);
    mdl_strategy_free(s);
  }
  g_assert_cmpuint(sim_delta_stats(delta)->full, ==, 3);
  /* A split the op does not have: refused, the last run stays. */
  MdlStrategy *s = mdl_strategy_copy(sim_run_strategy(sim_delta_run(delta)));
  double before = sim_run_prediction(sim_delta_run(delta))->iteration_time_s;
  s->configs[0].split[0] = 40;
  g_assert_false(sim_delta_simulate(delta, s, &error));
  g_assert_nonnull(error);
  g_clear_error(&error);
  g_assert_cmpfloat(sim_run_prediction(sim_delta_run(delta))->iteration_time_s, ==, before);
  mdl_strategy_free(s);
  sim_delta_free(delta);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* A search with delta simulation (the default) and one without print the same bytes: the
 * same candidates, the same costs, the same winner. */
static void test_search_same_with_and_without_delta(gconstpointer data) {
  const char *algo = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100:nodes=2", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=4,hidden=512,heads=8,seq=128,vocab=4096,batch=32", &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  char *json[2];
  for (int k = 0; k < 2; k++) {
    SrchOptions o;
    srch_options_default(&o);
    g_assert_true(srch_algo_parse(algo, &o.algo));
    o.budget.evaluations = 300;
    o.seed = 7;
    o.no_baselines = TRUE;
    o.no_delta = k == 1;
    SrchResult *r = srch_run(g, c, &params, &o, &error);
    g_assert_no_error(error);
    g_assert_nonnull(r->best);
    json[k] = srch_result_to_json(r, &o, g, c);
    srch_result_free(r);
  }
  g_assert_cmpstr(json[0], ==, json[1]);
  g_free(json[0]);
  g_free(json[1]);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/sim/delta/random/case:%zu/seed:%u", i, cases[i].seed);
    g_test_add_data_func(path, &cases[i], test_delta_equals_full);
  }
  g_test_add_func("/sim/delta/fallback", test_delta_fallback);
  g_test_add_data_func("/sim/delta/search/mcmc", "mcmc", test_search_same_with_and_without_delta);
  g_test_add_data_func("/sim/delta/search/cd", "cd", test_search_same_with_and_without_delta);
  return g_test_run();
}
