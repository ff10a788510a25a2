/* cli/bench_predict — `stratsim bench --suite predict [--repeat N]`: how long one prediction of
 * a GPT-3 175B iteration on 1024 A100s takes (issue 16, item 2: the target is 10 ms on one
 * core). Megatron-LM's configuration (Narayanan et al. 2021, Table 1: tp=8, pp=16, dp=8,
 * micro-batch 1, interleaved with 2 chunks per rank here) and neighbouring points of the search
 * space, each as the search evaluates it: symmetry and prediction only (chain merging,
 * sim/sim_merge.c), the allocator keeping freed memory (srch_keep_freed_memory). Per strategy: the task graph's build and the rest of the run (merging, the
 * engine over the reduced graph, breakdown, memory) in milliseconds, median and best of N runs
 * in one process (the first run, which also pays the page faults of a fresh process, is shown
 * apart), the thread's CPU time per run (median, best, first) and the engine's and the breakdown's
 * share of it (SimPrediction.engine_cpu_s, breakdown_cpu_s: medians, first), the tasks before
 * and after merging, the minor page faults a run takes (first, median: the process's, bench
 * being one thread; STRATSIM_HUGE_PAGES=1 cuts the first one's: util_memory.c) and the peak
 * resident memory over the runs, and whether the steady-state route timed the first microbatches
 * only (sim/sim_merge_period.c; --no-steady: every microbatch, as before it).
 * --strategy (and --model, --cluster) benches one point instead. Measures; asserts nothing. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "search/srch_search.h" /* srch_keep_freed_memory, srch_thread_cpu_s: as the search runs */
#include "session/ses_session.h"
#include "sim/sim.h"

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* @repeat prediction-only runs of @strategy; prints one line. */
static int bench_one(const char *model, const char *cluster, const char *strategy, int repeat,
                     gboolean every) {
  GError *error = NULL;
  SesSpecs specs = {.model = model, .cluster = cluster, .strategy = strategy,
                    .options = {.prediction_only = TRUE, .no_steady_state = every}};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  if (!session) return cli_fail(error, cli_status_for(error));
  g_autofree double *build = g_new(double, repeat);
  g_autofree double *rest = g_new(double, repeat);
  g_autofree double *cpu = g_new(double, repeat);
  g_autofree double *engine = g_new(double, repeat);
  g_autofree double *breakdown = g_new(double, repeat);
  g_autofree double *faults = g_new(double, repeat);
  SimPrediction first = {0};
  cli_peak_rss(TRUE);
  for (int r = 0; r < repeat; r++) {
    struct rusage u0, u1;
    getrusage(RUSAGE_SELF, &u0);
    double cpu0 = srch_thread_cpu_s();
    SimRun *run = ses_session_simulate(session, &error);
    cpu[r] = (srch_thread_cpu_s() - cpu0) * 1e3;
    getrusage(RUSAGE_SELF, &u1);
    faults[r] = (double)(u1.ru_minflt - u0.ru_minflt);
    if (!run) {
      ses_session_free(session);
      return cli_fail(error, cli_status_for(error));
    }
    const SimPrediction *p = sim_run_prediction(run);
    if (r == 0) first = *p;
    build[r] = p->build_wall_s * 1e3;
    engine[r] = p->engine_cpu_s * 1e3;
    breakdown[r] = p->breakdown_cpu_s * 1e3;
    rest[r] = (p->sim_wall_s - p->build_wall_s) * 1e3;
    sim_run_free(run);
  }
  double peak = cli_peak_rss(FALSE);
  double build0 = build[0], rest0 = rest[0], cpu0 = cpu[0], engine0 = engine[0];
  double breakdown0 = breakdown[0], faults0 = faults[0];
  g_autofree char *steady =
      first.steady_microbatches
          ? g_strdup_printf("steady state: %d microbatches timed, the rest proven to repeat a "
                            "period of %.9g s (sim/sim_merge_period.c)",
                            first.steady_microbatches, first.steady_period_s)
          : g_strdup(every ? "every microbatch timed (--no-steady)" : "every microbatch timed");
  qsort(faults, (size_t)repeat, sizeof(double), compare_double);
  qsort(build, (size_t)repeat, sizeof(double), compare_double);
  qsort(rest, (size_t)repeat, sizeof(double), compare_double);
  qsort(cpu, (size_t)repeat, sizeof(double), compare_double);
  qsort(engine, (size_t)repeat, sizeof(double), compare_double);
  qsort(breakdown, (size_t)repeat, sizeof(double), compare_double);
  printf("bench: predict %s: build %.1f ms, simulate %.1f ms (median of %d; best %.1f + %.1f; "
         "first %.1f + %.1f), CPU %.1f ms (median; best %.1f, first %.1f; of which engine %.2f, "
         "breakdown %.2f: medians; first %.2f + %.2f), %" G_GUINT64_FORMAT
         " tasks, %" G_GUINT64_FORMAT " after merging, minor page faults %.0f (median; first "
         "%.0f), peak RSS %.0f MB; iteration %.9g s; %s\n",
         strategy, build[repeat / 2], rest[repeat / 2], repeat, build[0], rest[0], build0, rest0,
         cpu[repeat / 2], cpu[0], cpu0, engine[repeat / 2], breakdown[repeat / 2], engine0,
         breakdown0, first.tasks, first.merged_tasks, faults[repeat / 2], faults0, peak / 1e6,
         first.iteration_time_s, steady);
  ses_session_free(session);
  return CLI_EXIT_OK;
}

int cli_bench_predict(int repeat, const char *model_spec, const char *cluster_spec,
                      const char *strategy, gboolean every) {
  const char *model = model_spec ? model_spec : "gpt3-175b:batch=1536";
  const char *cluster = cluster_spec ? cluster_spec : "dgx-a100:nodes=128";
  static const char *const strategies[] = {
      "megatron:tp=8,pp=16,dp=8,mb=1,schedule=interleaved,vp=2", /* Narayanan et al. Table 1 */
      "megatron:tp=8,pp=16,dp=8,mb=1,schedule=1f1b",
      "megatron:tp=8,pp=16,dp=8,mb=1,schedule=interleaved,vp=2,recompute=selective,sp=1",
      "megatron:tp=8,pp=8,dp=16,mb=1,schedule=interleaved,vp=4,zero=1",
  };
  printf("bench: predict %s on %s, prediction only with symmetry (milliseconds: build + "
         "simulate = merging, engine, breakdown and memory; CPU: the thread's CPU time, which a "
         "loaded machine inflates less than the wall clock)\n", model, cluster);
  srch_keep_freed_memory(); /* the search's allocator settings (srch_eval.c) */
  if (strategy) return bench_one(model, cluster, strategy, repeat, every);
  for (gsize i = 0; i < G_N_ELEMENTS(strategies); i++) {
    int status = bench_one(model, cluster, strategies[i], repeat, every);
    if (status != CLI_EXIT_OK) return status;
  }
  return CLI_EXIT_OK;
}
