/* Tests of the steady-state proof (sim/sim_period.c): wherever it extrapolates a run of k
 * microbatches to N, the full engine on the N-microbatch graph gives the same makespan, bit for
 * bit, over schedules, frameworks and memory options; it finds a proof once k reaches the
 * steady state, and refuses where no single cut repeats (GPipe's two phases). */
#include <glib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim-int.h"
#include "sim/sim_period.h"
#include "test-space.h"

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

static void assert_same_prediction(const char *what, const SimPrediction *a, const SimPrediction *b) {
  test_assert_same_prediction(what, "every microbatch", "steady", a, b);
  g_assert_cmpuint(a->merged_tasks, ==, b->merged_tasks);
}

/* A prediction of @spec on @model with and without the steady-state route: the same figures;
 * returns whether the route applied. */
static gboolean check_steady(const char *model, const char *clu, const char *spec) {
  SimOptions every = {.prediction_only = TRUE, .no_steady_state = TRUE};
  SimOptions steady = {.prediction_only = TRUE};
  SimRun *a = test_simulate_options(model, clu, spec, &every);
  SimRun *b = test_simulate_options(model, clu, spec, &steady);
  const SimPrediction *pa = sim_run_prediction(a), *pb = sim_run_prediction(b);
  g_autofree char *what = g_strdup_printf("%s %s", model, spec);
  assert_same_prediction(what, pa, pb);
  g_assert_cmpint(pa->steady_microbatches, ==, 0);
  gboolean applied = pb->steady_microbatches > 0;
  if (g_test_verbose())
    g_printerr("%s: %s (%d of %d microbatches timed, period %.9f s)\n", what,
               applied ? "steady" : "every microbatch", pb->steady_microbatches,
               sim_run_strategy(b)->num_microbatches, pb->steady_period_s);
  if (applied) {
    g_assert_cmpint(pb->steady_microbatches, <, sim_run_strategy(b)->num_microbatches);
    g_assert_cmpfloat(pb->steady_period_s, >, 0);
  }
  test_run_free(a);
  test_run_free(b);
  return applied;
}

/* The route's predictions are the whole run's, over schedules, frameworks, memory and overlap
 * options; on GPT-3 13B it applies to every pipelined one but weight delay and GPipe. */
static void test_steady(void) {
  static const struct {
    const char *spec;
    gboolean applies;
  } specs[] = {
      {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=1f1b", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=interleaved,vp=2", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=eager1f1b", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,framework=none", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,sp=1,recompute=selective", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=interleaved,vp=2,recompute=full", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,zero=1,overlap_param_gather=1", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,zero=2", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,sp=1,tp_overlap=1", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,async_tensor_model_parallel_allreduce=0", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,overlap_grad_reduce=0", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,zero=3", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,framework=pytorch-eager", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,framework=cuda-graphs", TRUE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,wdelay=1", FALSE},
      {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=gpipe", FALSE},
      {"megatron:tp=1,pp=8,dp=2,mb=1,schedule=1f1b", TRUE},
      {"megatron:tp=1,pp=8,dp=2,mb=1,schedule=interleaved,vp=5", TRUE},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
    gboolean applied = check_steady("gpt3-13b:batch=192", cluster, specs[i].spec);
    if (specs[i].applies && !applied) g_error("%s: the steady state was not proven", specs[i].spec);
  }
}

/* A smaller model, whose launches come close enough to their kernels that the host pass walks
 * a device (sim_merge_walk_state): the route compares the walk's state at the cuts. */
static void test_steady_walked(void) {
  static const char *const specs[] = {
      "megatron:tp=2,pp=4,dp=2,mb=1,schedule=1f1b",
      "megatron:tp=2,pp=4,dp=2,mb=1,schedule=interleaved,vp=2",
      "megatron:tp=2,pp=4,dp=2,mb=1,framework=pytorch-eager",
      "megatron:tp=2,pp=4,dp=2,mb=1,sp=1,recompute=selective",
      "megatron:tp=4,pp=2,dp=2,mb=2,schedule=1f1b",
  };
  int applied = 0;
  for (gsize i = 0; i < G_N_ELEMENTS(specs); i++)
    applied += check_steady("gpt3-1.3b:batch=256", cluster, specs[i]);
  g_test_message("%d of %" G_GSIZE_FORMAT " proven", applied, G_N_ELEMENTS(specs));
  g_assert_cmpint(applied, >=, 3);
}

/* Over the Megatron space of a 16-layer model on 16 GPUs with 96 samples a batch: the route's
 * predictions are the whole run's wherever it applies. */
static gboolean was_steady(const SimPrediction *p) { return p->steady_microbatches > 0; }

static void test_steady_space(void) {
  guint stride = 13; /* (~6 s) */
#if defined(__SANITIZE_ADDRESS__)
  stride = 61;
#endif
  SimOptions every = {.prediction_only = TRUE, .no_steady_state = TRUE};
  SimOptions steady = {.prediction_only = TRUE};
  int checked = 0;
  int applied = test_space_compare("gpt:layers=16,hidden=5120,heads=40,seq=2048,vocab=32000,batch=192",
                                   cluster, stride, 0, &every, &steady, "every microbatch",
                                   "steady", was_steady, &checked);
  g_test_message("%d points checked, the steady state proven on %d", checked, applied);
  g_assert_cmpint(applied, >, checked / 10);
}

/* A graph of the first k of a strategy's microbatches (SimOptions.build_microbatches) is the
 * graph of a strategy of k microbatches of the same size: same tasks, same full run. */
static void test_build_microbatches(void) {
  static const char *const specs[] = {"megatron:tp=2,pp=4,dp=2,mb=1,schedule=1f1b",
                                      "megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2,sp=1"};
  for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
    int mb = strstr(specs[i], "mb=2") ? 2 : 1;
    SimOptions part = {.build_microbatches = 8, .no_steady_state = TRUE};
    g_autofree char *big = g_strdup_printf("gpt3-1.3b:batch=%d", 32 * 2 * mb);
    g_autofree char *small = g_strdup_printf("gpt3-1.3b:batch=%d", 8 * 2 * mb);
    SimOptions whole = {.no_steady_state = TRUE};
    SimRun *a = test_simulate_options(big, cluster, specs[i], &part);
    SimRun *b = test_simulate_options(small, cluster, specs[i], &whole);
    g_assert_cmpint(sim_run_strategy(a)->num_microbatches, ==, 32);
    g_assert_cmpint(sim_run_strategy(b)->num_microbatches, ==, 8);
    g_assert_cmpuint(sim_run_num_tasks(a), ==, sim_run_num_tasks(b));
    g_assert_cmpuint(sim_schedule_makespan(sim_run_schedule(a)), ==,
                     sim_schedule_makespan(sim_run_schedule(b)));
    test_run_free(a);
    test_run_free(b);
  }
}

/* The host bound over a program with a period repeated (sim_merge_launches_repeated) is the
 * bound over that program written out: position by position the same answer, and by chunks
 * never early where the exact walk is not (random programs). */
static void test_launches_repeated(void) {
  GRand *rng = g_rand_new_with_seed(20261202);
  enum { BLOCKS = 6 };
  SimTime host[BLOCKS], duration[BLOCKS];
  int kernels[BLOCKS];
  int early = 0;
  for (int trial = 0; trial < 3000; trial++) {
    for (int b = 0; b < BLOCKS; b++) {
      duration[b] = (SimTime)g_rand_int_range(rng, 0, 400);
      host[b] = (SimTime)g_rand_int_range(rng, 0, trial % 3 == 0 ? 600 : 150);
      kernels[b] = g_rand_int_range(rng, 0, 4);
    }
    uint32_t first = 0, from = (uint32_t)g_rand_int_range(rng, 0, 200);
    uint32_t to = from + (uint32_t)g_rand_int_range(rng, 0, 200);
    uint32_t end = to + (uint32_t)g_rand_int_range(rng, 0, 200);
    guint copies = (guint)g_rand_int_range(rng, 0, 6);
    guint64 depth = (guint64)g_rand_int_range(rng, 1, 80);
    SimTime start = (SimTime)g_rand_int_range(rng, 0, 300);
    g_autofree uint32_t *block = g_new(uint32_t, end + 1);
    for (uint32_t k = 0; k < end; k++) block[k] = (uint32_t)g_rand_int_range(rng, 0, BLOCKS);
    g_autofree SimTime *cum = g_new(SimTime, end + 1);
    cum[0] = 0;
    for (uint32_t k = 0; k < end; k++) cum[k + 1] = cum[k] + duration[block[k]];
    /* written out: [first, to) ++ [from, to) x copies ++ [to, end) */
    uint32_t n = end + copies * (to - from);
    g_autofree uint32_t *wb = g_new(uint32_t, n + 1);
    uint32_t w = 0;
    for (uint32_t k = first; k < to; k++) wb[w++] = block[k];
    for (guint c = 0; c < copies; c++)
      for (uint32_t k = from; k < to; k++) wb[w++] = block[k];
    for (uint32_t k = to; k < end; k++) wb[w++] = block[k];
    g_autofree SimTime *wc = g_new(SimTime, n + 1);
    wc[0] = 0;
    for (uint32_t k = 0; k < n; k++) wc[k + 1] = wc[k] + duration[wb[k]];
    gboolean exact = sim_merge_launches_early(wb, host, kernels, depth, wc, 0, n, start, TRUE);
    gboolean exact_r = sim_merge_launches_repeated(block, host, kernels, depth, cum, first, from,
                                                   to, end, copies, start, TRUE);
    gboolean chunked_r = sim_merge_launches_repeated(block, host, kernels, depth, cum, first, from,
                                                     to, end, copies, start, FALSE);
    if (exact != exact_r) g_error("trial %d: written out %d, repeated %d", trial, exact, exact_r);
    if (chunked_r && !exact) g_error("trial %d: chunks prove what positions do not", trial);
    early += chunked_r;
  }
  g_assert_cmpint(early, >, 100);
  g_rand_free(rng);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/period/cases", test_cases);
  g_test_add_func("/period/drift", test_drift);
  g_test_add_func("/period/steady", test_steady);
  g_test_add_func("/period/steady-walked", test_steady_walked);
  g_test_add_func("/period/steady-space", test_steady_space);
  g_test_add_func("/period/build-microbatches", test_build_microbatches);
  g_test_add_func("/period/launches-repeated", test_launches_repeated);
  return g_test_run();
}
