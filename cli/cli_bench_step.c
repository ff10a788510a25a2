/* cli/bench_step — `stratsim bench --suite step`: step-expanded collectives at the README's
 * scale (issue 16, item 5). The README example (GPT-3 13B on 4 DGX A100 with a 2:1
 * oversubscribed fabric, tp=8 pp=2 dp=2, 512 microbatches) in step mode, folded by symmetry
 * (sim_network.h's conditions hold): tasks, wall time and the peak resident memory of the run.
 * Then the same strategy on a 64-sample batch folded and expanded (every GPU, every transfer)
 * to show both give the same prediction bit for bit. Measures; asserts nothing. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "session/ses_session.h"
#include "sim/sim.h"

double cli_peak_rss(gboolean reset) {
  if (reset) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
      fputs("5", f);
      fclose(f);
    }
    return 0;
  }
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  double kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kib = g_ascii_strtod(line + 6, NULL);
  fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

/* One step-mode run; prints its line and returns its iteration time (-1 on error). */
static double run_one(const char *model, const char *cluster, const char *strategy,
                      gboolean expanded, GError **error) {
  SesSpecs specs = {.model = model, .cluster = cluster, .strategy = strategy,
                    .options = {.step_collectives = TRUE, .no_symmetry = expanded}};
  SesSession *session = ses_session_new_from_specs(&specs, error);
  if (!session) return -1;
  cli_peak_rss(TRUE);
  gint64 a = g_get_monotonic_time();
  SimRun *run = ses_session_simulate(session, error);
  gint64 b = g_get_monotonic_time();
  if (!run) {
    ses_session_free(session);
    return -1;
  }
  double peak = cli_peak_rss(FALSE);
  const SimPrediction *pr = sim_run_prediction(run);
  double iteration = pr->iteration_time_s;
  printf("bench: step   %s %s: %-8s %9" G_GUINT64_FORMAT " tasks, %2d GPUs simulated: %.3f s "
         "wall (build + engine + breakdown), peak memory %.0f MB; predicted iteration %.9g s\n",
         model, strategy, expanded ? "expanded" : "folded", pr->tasks, pr->simulated_gpus,
         (double)(b - a) / 1e6, peak / 1e6, iteration);
  sim_run_free(run);
  ses_session_free(session);
  return iteration;
}

int cli_bench_step(void) {
  const char *cluster = "dgx-a100:nodes=4,oversubscription=2";
  const char *strategy = "megatron:tp=8,pp=2,dp=2,mb=1";
  GError *error = NULL;
  printf("bench: step   on %s (peak memory: the run's high-water resident set, VmHWM)\n", cluster);
  if (run_one("gpt3-13b", cluster, strategy, FALSE, &error) < 0)
    return cli_fail(error, cli_status_for(error));
  double it[2];
  for (int expanded = 0; expanded < 2; expanded++)
    if ((it[expanded] = run_one("gpt3-13b:batch=64", cluster, strategy, expanded, &error)) < 0)
      return cli_fail(error, cli_status_for(error));
  printf("bench: step   folded and expanded predictions %s\n", it[0] == it[1] ? "identical" : "DIFFER");
  return CLI_EXIT_OK;
}
