/* cli/bench — the store suite: what recording a run costs beyond simulating it (issue 13,
 * "a 16-GPU simulate that stores its run takes under 10 ms of wall time beyond the
 * simulation"). A 16-GPU simulate, as `stratsim simulate` runs it, into a fresh database in a
 * temporary directory: each repetition times opening the session (specs, database, kernel
 * times), the simulation, and storing the run, then the same with --no-store (a read-only
 * session). Reports medians and the overhead beyond the simulation. Measures; asserts
 * nothing. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>

#include "session/ses_session.h"
#include "sim/sim.h"

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), compare_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double since_ms(gint64 t0) { return (double)(g_get_monotonic_time() - t0) / 1e3; }

/* One simulate as the command runs it: session, simulation, store (unless @read_only).
 * Adds the phases' wall times (ms) at @i; the total is their sum (freeing the run and the
 * session, the same either way, is left out). */
static gboolean one_run(const SesSpecs *specs, int i, double *open_ms, double *sim_ms,
                        double *store_ms, double *total_ms, GError **error) {
  gint64 t0 = g_get_monotonic_time();
  SesSession *session = ses_session_new_from_specs(specs, error);
  if (!session) return FALSE;
  open_ms[i] = since_ms(t0);
  gint64 t1 = g_get_monotonic_time();
  SimRun *run = ses_session_simulate(session, error);
  sim_ms[i] = since_ms(t1);
  gint64 t2 = g_get_monotonic_time();
  gboolean ok = run && (specs->read_only || ses_session_store_simulation(session, run, error) > 0);
  store_ms[i] = since_ms(t2);
  total_ms[i] = open_ms[i] + sim_ms[i] + store_ms[i];
  sim_run_free(run);
  ses_session_free(session);
  return ok;
}

int cli_bench_store(int repeat) {
  const char *model = "gpt3-1.3b:batch=64", *cluster = "dgx-a100:nodes=2";
  const char *strategy = "megatron:tp=8,pp=2,dp=1,mb=1";
  GError *error = NULL;
  g_autofree char *dir = g_dir_make_tmp("stratsim-bench-store-XXXXXX", &error);
  if (!dir) return cli_fail(error, cli_status_for(error));
  g_autofree char *db = g_build_filename(dir, "store.db", NULL);
  printf("bench: store  %s on %s (16 GPUs), %s; %d runs each into %s\n", model, cluster,
         strategy, repeat, db);
  double *v = g_new(double, 8 * (gsize)repeat);
  double *open_ms[2] = {v, v + repeat}, *sim_ms[2] = {v + 2 * repeat, v + 3 * repeat};
  double *store_ms[2] = {v + 4 * repeat, v + 5 * repeat}, *total_ms[2] = {v + 6 * repeat, v + 7 * repeat};
  int status = CLI_EXIT_OK;
  /* Alternate stored and --no-store runs so that both see the same machine state. */
  for (int i = 0; i < repeat && status == CLI_EXIT_OK; i++)
    for (int ro = 0; ro < 2; ro++) {
      SesSpecs specs = {.model = model, .cluster = cluster, .strategy = strategy, .db_path = db,
                        .read_only = ro};
      if (!one_run(&specs, i, open_ms[ro], sim_ms[ro], store_ms[ro], total_ms[ro], &error)) {
        status = cli_fail(error, cli_status_for(error));
        break;
      }
    }
  if (status == CLI_EXIT_OK) {
    const char *what[2] = {"stored   ", "--no-store"};
    double beyond[2];
    for (int ro = 0; ro < 2; ro++) {
      double o = median(open_ms[ro], repeat), s = median(sim_ms[ro], repeat);
      double st = median(store_ms[ro], repeat), t = median(total_ms[ro], repeat);
      beyond[ro] = o + st;
      printf("bench: store  %s median of %d: session (specs, database, kernel times) %.2f ms, "
             "simulation %.2f ms, store %.2f ms; total %.2f ms, %.2f ms beyond the simulation\n",
             what[ro], repeat, o, s, st, t, beyond[ro]);
    }
    printf("bench: store  storing the run costs %.2f ms beyond a --no-store run\n",
           beyond[0] - beyond[1]);
  }
  g_free(v);
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  if (system(rm) != 0) fprintf(stderr, "stratsim bench: could not remove %s\n", dir);
  return status;
}
