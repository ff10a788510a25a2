/* Tests of the steady-state proof (sim/sim_period.c): wherever it extrapolates a run of k
 * microbatches to N, the full engine on the N-microbatch graph gives the same makespan, bit for
 * bit, over schedules, frameworks and memory options; it finds a proof once k reaches the
 * steady state, and refuses where no single cut repeats (GPipe's two phases). */
#include <glib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim-int.h"
#include "sim/sim_period.h"
#include "test-util.h"

static const char *cluster = "dgx-a100:nodes=2";

/* Spec @spec (data parallelism dp, microbatch size mb) with @M microbatches of gpt3-1.3b: the
 * model's batch is M dp mb. */
static SimRun *run_with(const char *spec, int dp, int mb, int M) {
  g_autofree char *model = g_strdup_printf("gpt3-1.3b:batch=%d", M * dp * mb);
  SimOptions options = {0};
  SimRun *run = test_simulate_options(model, cluster, spec, &options);
  g_assert_cmpint(sim_run_strategy(run)->num_microbatches, ==, M);
  return run;
}

typedef struct {
  const char *spec;
  int dp, mb;
  int p;          /* microbatches a period */
  gboolean steady; /* a proof must be found from the largest k tried */
} Case;

static const Case cases[] = {
    {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=1f1b", 2, 1, 1, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=1f1b,framework=none", 2, 1, 1, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=interleaved,vp=2", 2, 1, 4, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=eager1f1b", 2, 1, 1, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,wdelay=1", 2, 1, 1, FALSE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,sp=1,recompute=selective", 2, 1, 1, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=interleaved,vp=2,recompute=full", 2, 1, 4, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,zero=1,overlap_param_gather=1", 2, 1, 1, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,zero=3", 2, 1, 1, FALSE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,framework=pytorch-eager", 2, 1, 1, FALSE},
    {"megatron:tp=1,pp=8,dp=2,mb=1,schedule=1f1b", 2, 1, 1, TRUE},
    {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=gpipe", 2, 1, 1, FALSE},
};

static void check_case(const Case *cs) {
  /* k in whole periods (interleaved: groups of pp microbatches), at least two */
  static const int ks[] = {2, 3, 4, 6, 8, 12, 16, 24, 32};
  int found = 0;
  gboolean found_last = FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS(ks); i++) {
    int k = ks[i] * cs->p;
    if (cs->p > 1 && ks[i] > 6) break;
    SimRun *small = run_with(cs->spec, cs->dp, cs->mb, k);
    found_last = FALSE;
    for (int periods = 1; periods <= 3; periods += 2) {
      int N = k + periods * cs->p;
      SimRun *big = run_with(cs->spec, cs->dp, cs->mb, N);
      SimPeriodProof proof = {0};
      gboolean ok = sim_period_extrapolate(sim_run_task_graph(small), sim_run_schedule(small),
                                           sim_run_strategy(small), N, &proof);
      SimTime want = sim_schedule_makespan(sim_run_schedule(big));
      if (g_test_verbose())
        g_printerr("%s k=%d N=%d: %s (tried %u; period %" G_GUINT64_FORMAT " ps, %u tasks)\n",
                   cs->spec, k, N, ok ? "proven" : "no proof", proof.tried, proof.length,
                   proof.segment);
      if (ok) {
        if (proof.makespan != want)
          g_error("%s k=%d N=%d: extrapolated %" G_GUINT64_FORMAT " ps, full run %" G_GUINT64_FORMAT
                  " ps", cs->spec, k, N, proof.makespan, want);
        g_assert_cmpint(proof.period, ==, cs->p);
        g_assert_cmpint(proof.periods, ==, periods);
        g_assert_cmpuint(proof.length, >, 0);
        found++;
        found_last = TRUE;
      }
      test_run_free(big);
    }
    test_run_free(small);
  }
  if (cs->steady) g_assert_true(found_last);
  if (cs->spec && strstr(cs->spec, "gpipe")) g_assert_cmpint(found, ==, 0);
}

static void test_cases(void) {
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) check_case(&cases[i]);
}

/* A timeline that drifts (every task of microbatch m ending m ps later than its run: pop
 * times and so which tasks pop between two cuts unchanged) repeats no state: the proof must
 * be refused where the real run's is found. */
static void test_drift(void) {
  static const char *const specs[] = {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=1f1b",
                                      "megatron:tp=2,pp=4,dp=2,mb=1,schedule=1f1b,framework=none"};
  for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
    SimRun *run = run_with(specs[i], 2, 1, 16);
    const SimTaskGraph *g = sim_run_task_graph(run);
    const SimSchedule *s = sim_run_schedule(run);
    SimPeriodProof proof = {0};
    g_assert_true(sim_period_extrapolate(g, s, sim_run_strategy(run), 20, &proof));
    SimSchedule drift = *s;
    drift.start = g_memdup2(s->start, sizeof(SimTime) * s->num_tasks);
    const SimTask *tasks = (const SimTask *)g->tasks->data;
    for (uint32_t x = 0; x < s->num_tasks; x++) {
      int32_t m = tasks[x].microbatch;
      if (g->host_base != UINT32_MAX && x >= g->host_base && x < g->host_base + g->num_compute)
        m = tasks[x - g->host_base].microbatch;
      if (m > 0) drift.start[x] += (SimTime)m;
    }
    g_assert_false(sim_period_extrapolate(g, &drift, sim_run_strategy(run), 20, &proof));
    g_assert_cmpuint(proof.tried, >, 0);
    g_free(drift.start);
    test_run_free(run);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/period/cases", test_cases);
  g_test_add_func("/period/drift", test_drift);
  return g_test_run();
}
