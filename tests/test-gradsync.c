/* Tests of the strategy key overlap_grad_reduce (sim/sim_build_sync.c): parse errors, describe,
 * JSON round trip, and the timeline: without overlap no gradient collective starts before the
 * last backward task (B or W) of every device it runs on has ended (Megatron-LM's default DDP,
 * finish_grad_sync after the whole backward), and the iteration is no shorter than the overlapped
 * one's where only the gradient sync communicates (plain data parallelism); the pruning bound
 * stays below the iteration. */
#include <glib.h>
#include <string.h>

#include "sim/sim_bound.h"
#include "test-util.h"

#define SMALL_GPT "gpt:layers=4,hidden=1024,heads=16,seq=512,vocab=8192,batch=32"
#define TWO_NODES "dgx-a100:nodes=2"

static MdlStrategy *parse_or_die(const char *spec, const MdlGraph *g, const DevCluster *c) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
  g_assert_no_error(error);
  return s;
}

/* @json with @from replaced by @to (of its length) is refused with a message holding @needle. */
static void json_refused(const char *json, const char *from, const char *to, const MdlGraph *g,
                         const DevCluster *c, const char *needle) {
  g_autofree char *edited = g_strdup(json);
  char *at = strstr(edited, from);
  g_assert_nonnull(at);
  g_assert_cmpuint(strlen(to), ==, strlen(from));
  memcpy(at, to, strlen(to));
  GError *error = NULL;
  g_assert_null(mdl_strategy_from_json(edited, "test", g, c, &error));
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, needle));
  g_error_free(error);
}

/* The key: parsed (default on), refused with one-line errors, named by describe only when off,
 * written to JSON only when off and read back, refused by JSON under zero 2 as by the spec. */
static void test_strategy_key(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(TWO_NODES, &error);
  g_assert_no_error(error);
  MdlGraph *g = test_parse_model(SMALL_GPT);
  test_assert_strategy_error(g, c, "megatron:dp=16,mb=2,overlap_grad_reduce=2", MDL_ERROR_PARSE,
                             "overlap_grad_reduce=2 must be 0 or 1");
  test_assert_strategy_error(g, c, "megatron:dp=16,mb=2,overlap_grad_reduce=", -1,
                             "overlap_grad_reduce");
  test_assert_strategy_error(g, c, "megatron:dp=16,mb=2,zero=2,overlap_grad_reduce=0",
                             MDL_ERROR_STRATEGY, "overlap_grad_reduce=0 needs zero=0 or 1 (got zero=2)");
  test_assert_strategy_error(g, c, "megatron:dp=16,mb=2,zero=3,overlap_grad_reduce=0",
                             MDL_ERROR_STRATEGY, "overlap_grad_reduce=0 needs zero=0 or 1 (got zero=3)");
  MdlStrategy *on = parse_or_die("megatron:dp=16,mb=2,zero=1", g, c);
  MdlStrategy *on1 = parse_or_die("megatron:dp=16,mb=2,zero=1,overlap_grad_reduce=1", g, c);
  MdlStrategy *off = parse_or_die("megatron:dp=16,mb=2,zero=1,overlap_grad_reduce=0", g, c);
  g_assert_true(on->overlap_grad_reduce);
  g_assert_true(on1->overlap_grad_reduce);
  g_assert_false(off->overlap_grad_reduce);
  g_assert_true(mdl_strategy_same_except_splits(on, on1));
  g_assert_false(mdl_strategy_same_except_splits(on, off));
  g_autofree char *d_on = mdl_strategy_describe(on, g), *d_off = mdl_strategy_describe(off, g);
  g_assert_null(strstr(d_on, "after the backward"));
  g_assert_nonnull(strstr(d_off, "gradients reduced after the backward"));
  g_autofree char *json_on = mdl_strategy_to_json(on, g), *json_off = mdl_strategy_to_json(off, g);
  g_assert_null(strstr(json_on, "overlap_grad_reduce"));
  g_assert_nonnull(strstr(json_off, "\"overlap_grad_reduce\":\tfalse"));
  MdlStrategy *back = mdl_strategy_from_json(json_off, "test", g, c, &error);
  g_assert_no_error(error);
  g_assert_false(back->overlap_grad_reduce);
  g_assert_true(mdl_strategy_same_except_splits(back, off));
  mdl_strategy_free(back);
  MdlStrategy *back_on = mdl_strategy_from_json(json_on, "test", g, c, &error);
  g_assert_no_error(error);
  g_assert_true(back_on->overlap_grad_reduce);
  mdl_strategy_free(back_on);
  /* JSON: zero 2, and a non-boolean value, are refused. */
  json_refused(json_off, "\"zero\":\t1", "\"zero\":\t2", g, c, "overlap_grad_reduce=0 needs zero=0 or 1");
  json_refused(json_off, "\"overlap_grad_reduce\":\tfalse", "\"overlap_grad_reduce\":\t1    ", g, c,
               "overlap_grad_reduce");
  mdl_strategy_free(on);
  mdl_strategy_free(on1);
  mdl_strategy_free(off);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Runs @spec without symmetry; checks that, without overlap, every gradient-sync task starts at
 * or after the end of the last backward (B or W) task of each device whose communication stream
 * it holds, and that with overlap some starts before (the check can fail). Returns the
 * iteration; *@syncs gets the number of gradient-sync tasks. */
static SimTime check_gating(const char *spec, gboolean expect_after, int *syncs) {
  SimRun *run = test_simulate_specs(SMALL_GPT, TWO_NODES, spec, TRUE);
  int ndev = 16;
  SimTime last_backward[16] = {0};
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if ((t.kind == SIM_TASK_BACKWARD || t.kind == SIM_TASK_BACKWARD_WEIGHT) && t.device >= 0 &&
        t.device < ndev)
      last_backward[t.device] = MAX(last_backward[t.device], t.end);
  }
  int early = 0;
  *syncs = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.kind != SIM_TASK_GRAD_SYNC || t.collective == CM_ALL_GATHER) continue; /* ZeRO's
                                                      parameter gather follows the step */
    (*syncs)++;
    for (int r = 0; r < t.nres; r++) {
      uint32_t res = t.resources[r];
      if (res >= sim_stream_resources(ndev) || sim_resource_stream_of(res) != SIM_STREAM_DP)
        continue; /* not a data-parallel stream */
      early += t.start < last_backward[sim_resource_device(res)];
    }
  }
  g_assert_cmpint(*syncs, >, 0);
  if (expect_after) g_assert_cmpint(early, ==, 0);
  else g_assert_cmpint(early, >, 0);
  SimTime iteration = sim_time_from_seconds(sim_run_prediction(run)->iteration_time_s);
  /* The pruning bound (sim/sim_bound.h) stays a lower bound: gating later only delays. */
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.no_symmetry = TRUE};
  SimTime bound = sim_iteration_bound(sim_run_graph(run), sim_run_strategy(run),
                                      sim_run_cluster(run), &params, &options);
  g_assert_cmpuint(bound, >, 0);
  g_assert_cmpuint(bound, <=, sim_schedule_makespan(sim_run_schedule(run)));
  test_run_free(run);
  return iteration;
}

static void test_timeline(void) {
  const char *specs[] = {"megatron:dp=16,mb=1", "megatron:dp=16,mb=1,zero=1",
                         "megatron:tp=2,pp=2,dp=4,mb=1", "megatron:tp=2,pp=2,dp=4,mb=1,wdelay=1,zero=1"};
  for (guint i = 0; i < G_N_ELEMENTS(specs); i++) {
    g_autofree char *off_spec = g_strdup_printf("%s,overlap_grad_reduce=0", specs[i]);
    int n_on, n_off;
    SimTime on = check_gating(specs[i], FALSE, &n_on);
    SimTime off = check_gating(off_spec, TRUE, &n_off);
    g_assert_cmpint(n_on, ==, n_off); /* the same buckets, only gated later */
    g_test_message("%s: overlapped %.3f ms, after the backward %.3f ms", specs[i],
                   sim_time_seconds(on) * 1e3, sim_time_seconds(off) * 1e3);
    /* Plain data parallelism: the gradient sync is the only communication, so gating it later
     * cannot shorten the iteration, and here it lengthens it. (With tp or pp the buckets share
     * each device's one communication stream with the tensor- and pipeline-parallel transfers,
     * which overlapped buckets can delay: not asserted.) */
    if (i < 2) g_assert_cmpuint(off, >, on);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/gradsync/strategy-key", test_strategy_key);
  g_test_add_func("/gradsync/timeline", test_timeline);
  return g_test_run();
}
