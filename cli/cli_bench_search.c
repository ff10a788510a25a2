/* cli/bench_search — the search suite of `stratsim bench`:
 *  (a) evaluations per second, one thread, with delta simulation and with every candidate
 *      simulated in full (--no-delta), per algorithm on GPT-3 1.3B over 16 A100s, against
 *      Calculon's analytical model (Isaev et al. 2023: about 45 Megatron configurations per
 *      second per core);
 *  (b) the full Megatron space, configuration-count matched against Calculon: Megatron-5B on
 *      64 A100s and GPT-3 175B on 1024 A100s exhaustively, then GPT-3 175B under a budget of
 *      200 simulations;
 *  (c) per algorithm, under one time budget on two threads, the wall time until its best is
 *      within 1% of the best any algorithm found, on GPT-3 2.7B over 64 A100s and VGG13 over
 *      32 P100s (FlexFlow's P100 cluster scaled to 8 hosts).
 * Wall-clock figures depend on the machine and its load: it measures and prints, it asserts
 * nothing. Seeds are fixed (1). */
#include "cli/cli_bench_search.h"
#include "cli/cli.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

#include "costmodel/costmodel.h"
#include "search/srch_search.h"
#include "session/ses_session.h"
#include "sim/sim_progress.h"

#define CALCULON_CONFIGS_PER_S_PER_CORE 45.0

/* Lines appear as each measurement ends (the suite runs for minutes, often into a file). */
#define say(...) (printf(__VA_ARGS__), fflush(stdout))

/* A model on a cluster, presets and rooflines (no database): what each measurement searches. */
typedef struct {
  SesSession *session;
  SimProgress *progress;  /* the suite's progress line (nullable, borrowed) */
} Case;

/* A search's state on the suite's progress line (sim/sim_progress.h). */
static void show_progress(const SrchProgress *p, gpointer data) {
  const Case *c = data;
  sim_progress_set(c->progress, "%s on %s: %s, %" G_GUINT64_FORMAT " evaluations, %.0f s",
                   ses_session_graph(c->session)->name, ses_session_cluster(c->session)->name,
                   p->phase, p->evaluations, p->elapsed_s);
}

/* Reports @o's progress on @c's line. */
static void report_to(const Case *c, SrchOptions *o) {
  if (!c->progress) return;
  o->progress = show_progress;
  o->progress_data = (gpointer)c;
}

static gboolean case_init(Case *c, const char *model, const char *cluster, SimProgress *progress,
                          GError **error) {
  c->progress = progress;
  SesSpecs specs = {.model = model, .cluster = cluster};
  c->session = ses_session_new_from_specs(&specs, error);
  return c->session != NULL;
}

static void case_clear(Case *c) { ses_session_free(c->session); }

static SrchResult *search(const Case *c, SrchAlgo algo, guint64 evaluations, double seconds,
                          int threads, gboolean no_delta, GError **error) {
  SrchOptions o;
  srch_options_default(&o);
  o.algo = algo;
  o.budget.evaluations = evaluations;
  o.budget.seconds = seconds;
  o.threads = threads;
  o.no_delta = no_delta;
  o.no_baselines = TRUE;
  report_to(c, &o);
  return srch_run(ses_session_graph(c->session), ses_session_cluster(c->session),
                  ses_session_params(c->session), &o, error);
}

/* (a) */
static int bench_rates(SimProgress *progress) {
  const char *model = "gpt3-1.3b", *cluster = "dgx-a100:nodes=2";
  const guint64 budget = 300;
  GError *error = NULL;
  Case c;
  if (!case_init(&c, model, cluster, progress, &error)) return cli_fail(error, cli_status_for(error));
  say("bench: search rates  %s on %s, one thread, %" G_GUINT64_FORMAT
         " evaluations each (the grid: its full Megatron space, exhaustively), space construction included; Calculon: %.0f "
         "Megatron configurations/s/core\n", model, cluster, budget, CALCULON_CONFIGS_PER_S_PER_CORE);
  static const SrchAlgo algos[] = {SRCH_ALGO_MCMC, SRCH_ALGO_CD, SRCH_ALGO_RANDOM, SRCH_ALGO_EXHAUSTIVE,
                                   SRCH_ALGO_GRID};
  for (guint i = 0; i < G_N_ELEMENTS(algos); i++) {
    double rate[2] = {0}, sim_rate[2] = {0}, best[2] = {0};
    /* The grid evaluates whole strategies, random points share nothing with the last one:
     * both simulate in full (srch_run.c). */
    int variants = algos[i] == SRCH_ALGO_GRID || algos[i] == SRCH_ALGO_RANDOM ? 1 : 2;
    for (int full = 0; full < variants; full++) {
      SrchResult *r = search(&c, algos[i], algos[i] == SRCH_ALGO_GRID ? 1000000 : budget, 0, 1, full, &error);
      if (!r) {
        case_clear(&c);
        return cli_fail(error, cli_status_for(error));
      }
      /* The grid screens most of its space without simulating: its rate is configurations
       * covered (simulated, over memory or pruned by the bound) per second. */
      double covered = algos[i] == SRCH_ALGO_GRID ? srch_result_covered_share(r) * (double)r->space_points
                                                  : (double)r->evaluations;
      rate[full] = r->elapsed_s > 0 ? covered / r->elapsed_s : 0;
      sim_rate[full] = r->elapsed_s > 0 ? r->simulated / r->elapsed_s : 0;
      best[full] = r->best_time_s;
      srch_result_free(r);
    }
    if (variants == 1)
      say("bench: search rates  %-10s %8.1f %s/s (%.1f simulated/s), %.2fx Calculon\n",
             srch_algo_name(algos[i]), rate[0], algos[i] == SRCH_ALGO_GRID ? "configurations" : "evaluations",
             sim_rate[0], rate[0] / CALCULON_CONFIGS_PER_S_PER_CORE);
    else
      say("bench: search rates  %-10s delta %8.1f evaluations/s (%.1f simulated/s), %.2fx Calculon;"
             " full %8.1f evaluations/s (%.1f simulated/s), %.2fx Calculon; delta/full %.2fx, same best: %s\n",
             srch_algo_name(algos[i]), rate[0], sim_rate[0], rate[0] / CALCULON_CONFIGS_PER_S_PER_CORE,
             rate[1], sim_rate[1], rate[1] / CALCULON_CONFIGS_PER_S_PER_CORE,
             rate[1] > 0 ? rate[0] / rate[1] : 0, best[0] == best[1] ? "yes" : "NO");
  }
  case_clear(&c);
  return CLI_EXIT_OK;
}

/* (b) The full Megatron space (srch_grid.c), configuration-count matched against Calculon's
 * llm-optimal-execution (search/SEARCH.md gives the Calculon commands): Megatron-5B (Calculon's
 * models/megatron-5B.json: 24 blocks, hidden 4096, 32 heads, seq 2048; vocabulary 51200 here)
 * on 64 A100s, batch 512, and GPT-3 175B on 1024 A100s (batch 1536), searched exhaustively;
 * then GPT-3 175B under an evaluation budget of 200 simulations, which the classic grid
 * precedes in full. Configurations per second per core: the space's configurations covered
 * (over memory, pruned by the bound or simulated) over the process's CPU seconds, and over
 * wall seconds x threads (the same when the cores are free). */
static int bench_space(const char *model, const char *cluster, guint64 budget,
                       SimProgress *progress) {
  GError *error = NULL;
  Case c;
  if (!case_init(&c, model, cluster, progress, &error)) return cli_fail(error, cli_status_for(error));
  SrchOptions o;
  srch_options_default(&o);
  o.algo = SRCH_ALGO_GRID;
  o.budget.evaluations = budget;
  o.threads = 2;
  report_to(&c, &o);
  clock_t cpu0 = clock();
  SrchResult *r = srch_run(ses_session_graph(c.session), ses_session_cluster(c.session),
                           ses_session_params(c.session), &o, &error);
  double cpu = (double)(clock() - cpu0) / CLOCKS_PER_SEC;
  if (!r) {
    case_clear(&c);
    return cli_fail(error, cli_status_for(error));
  }
  double covered = srch_result_covered_share(r) * (double)r->space_points;
  char how[64];
  if (budget >= r->space_points) g_snprintf(how, sizeof how, "exhaustive");
  else g_snprintf(how, sizeof how, "budget %" G_GUINT64_FORMAT " simulations", budget);
  say("bench: search space  %s on %s, two threads, %s: %" G_GUINT64_FORMAT
      " configurations, %.1f%% covered (%" G_GUINT64_FORMAT " simulated, %" G_GUINT64_FORMAT " over memory, %"
      G_GUINT64_FORMAT " pruned by the bound; classic grid first: %" G_GUINT64_FORMAT " simulated)%s in %.2f s "
      "wall, %.2f s CPU: %.0f configurations/s/core by CPU (%.1fx Calculon), %.0f by wall x threads (%.1fx)\n",
      model, cluster, how, r->space_points, 100 * srch_result_covered_share(r), r->simulated, r->over_memory,
      r->pruned, r->baseline_evaluations, r->complete ? ", the whole space" : "", r->elapsed_s, cpu,
      cpu > 0 ? covered / cpu : 0, cpu > 0 ? covered / cpu / CALCULON_CONFIGS_PER_S_PER_CORE : 0,
      covered / (r->elapsed_s * 2), covered / (r->elapsed_s * 2) / CALCULON_CONFIGS_PER_S_PER_CORE);
  /* How the configurations are counted, and where the CPU went. Calculon's "Total executions"
   * counts every execution its loops enumerate, feasible or not ("Bad executions": those its
   * model rejects, memory included), and its "Calculation rate" divides them by the wall time
   * (calculon/llm/optimal_execution.py): here every configuration of the space counts once,
   * whether a simulation, the memory rule or the lower bound (time >= bound > best: it cannot
   * win) decided it. */
  double other = cpu - r->screen_cpu_s - r->memory_cpu_s - r->simulate_cpu_s;
  say("bench: search space  counted as Calculon counts executions: each of the %" G_GUINT64_FORMAT
      " configurations once, decided by a simulation, the memory rule or the lower bound; CPU: screening "
      "(build and bound of every point) %.2f s, memory rule %.2f s, %" G_GUINT64_FORMAT " simulations %.2f s "
      "(%.1f ms each), classic grid first and the rest %.2f s; Calculon at %.0f/s/core would take %.0f core-s for "
      "as many\n",
      r->space_points, r->screen_cpu_s, r->memory_cpu_s, r->simulated, r->simulate_cpu_s,
      r->simulated ? 1e3 * r->simulate_cpu_s / (double)r->simulated : 0, other, CALCULON_CONFIGS_PER_S_PER_CORE,
      (double)r->space_points / CALCULON_CONFIGS_PER_S_PER_CORE);
  say("bench: search space  best %.6g s (%s); classic grid's best %.6g s (%s)\n", r->best_time_s,
      r->best_origin ? r->best_origin : "none", r->baselines[1].iteration_time_s, r->baselines[1].detail);
  srch_result_free(r);
  case_clear(&c);
  return CLI_EXIT_OK;
}

/* (c): wall time until @r's best was within 1% of @target, or < 0. */
static double time_to_within(const SrchResult *r, double target) {
  for (guint k = 0; k < r->timeline->len; k++) {
    const SrchCurvePoint *p = &g_array_index(r->timeline, SrchCurvePoint, k);
    if (p->best_time_s <= target * 1.01) return p->elapsed_s;
  }
  return -1;
}

static int bench_convergence(const char *model, const char *cluster, double seconds,
                             SimProgress *progress) {
  static const SrchAlgo algos[] = {SRCH_ALGO_MCMC, SRCH_ALGO_CD, SRCH_ALGO_RANDOM, SRCH_ALGO_GRID,
                                   SRCH_ALGO_AUTO, SRCH_ALGO_DP};
  enum { N = G_N_ELEMENTS(algos) };
  GError *error = NULL;
  Case c;
  if (!case_init(&c, model, cluster, progress, &error)) return cli_fail(error, cli_status_for(error));
  SrchResult *results[N] = {NULL};
  double overall = INFINITY;
  for (int i = 0; i < N; i++) {
    results[i] = search(&c, algos[i], 0, seconds, 2, FALSE, &error);
    if (!results[i]) {
      /* A driver that cannot run here (no single-stage strategy fits: mcmc, cd, random). */
      say("bench: search 1%%    %s on %s: %-6s cannot run: %s\n", model, cluster,
             srch_algo_name(algos[i]), error->message);
      g_clear_error(&error);
      continue;
    }
    overall = MIN(overall, results[i]->best_time_s);
  }
  say("bench: search 1%%    %s on %s, %.0f s each, two threads: best found %.6g s\n", model,
         cluster, seconds, overall);
  for (int i = 0; i < N; i++) {
    const SrchResult *r = results[i];
    if (!r) continue;
    double t = time_to_within(r, overall);
    char when[64];
    if (t >= 0) g_snprintf(when, sizeof when, "within 1%% after %.2f s", t);
    else if (isfinite(r->best_time_s))
      g_snprintf(when, sizeof when, "not within 1%% (%.2f%% above)", 100 * (r->best_time_s / overall - 1));
    else g_snprintf(when, sizeof when, "found nothing that fits");
    say("bench: search 1%%    %-6s %-34s best %.6g s after %" G_GUINT64_FORMAT " evaluations in %.2f s%s (%s)\n",
           srch_algo_name(algos[i]), when, r->best_time_s, r->evaluations, r->elapsed_s,
           r->complete ? ", complete" : "", r->best_origin ? r->best_origin : "none");
  }
  for (int i = 0; i < N; i++) srch_result_free(results[i]);
  case_clear(&c);
  return CLI_EXIT_OK;
}

int cli_bench_search(double seconds) {
  /* The suite runs for minutes, often into a file: a progress line every few seconds. */
  g_autoptr(SimProgress) progress = sim_progress_new_stderr("bench");
  int status = bench_rates(progress);
  if (status == CLI_EXIT_OK)
    status = bench_space("gpt:layers=24,hidden=4096,heads=32,seq=2048,vocab=51200,batch=512", "dgx-a100:nodes=8",
                         1000000, progress);
  if (status == CLI_EXIT_OK)
    status = bench_space("gpt3-175b:batch=1536", "dgx-a100:nodes=128", 1000000, progress);
  if (status == CLI_EXIT_OK)
    status = bench_space("gpt3-175b:batch=1536", "dgx-a100:nodes=128", 200, progress);
  if (status == CLI_EXIT_OK)
    status = bench_convergence("gpt3-2.7b", "dgx-a100:nodes=8", seconds, progress);
  if (status == CLI_EXIT_OK)
    status = bench_convergence("vgg13", "flexflow-p100:nodes=8", seconds, progress);
  return status;
}
