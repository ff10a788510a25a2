/* cli/sweep — `[mpirun -np N] stratsim sweep FILE [--threads T] [--db FILE] [--out DIR]
 * [--max-points N] [--no-charts]`, `stratsim report --scenario NAME [--format text|csv|json]
 * [--db FILE]` and `stratsim plot --scenario NAME [--db FILE] [--out DIR]`: run a scenario's
 * points into SQLite (resuming where an earlier run stopped; under mpirun the ranks share
 * them), then print its table and draw its charts. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_mpi.h"
#include "results/res_db.h"
#include "scenarios/scn_chart.h"
#include "scenarios/scn_report.h"
#include "scenarios/scn_reshard.h"
#include "scenarios/scn_sweep.h"
#include "sim/sim_progress.h"

#define DEFAULT_DB "results/stratsim.db" /* as shown in --help; resolved by cli_results_path */

/* The sweep's state for the progress line (sim/sim_progress.h: a bar in place on a terminal,
 * a line every few seconds elsewhere). */
static void show_progress(guint done, guint total, guint errors, gpointer data) {
  if (total == 0) return;
  int width = 30, filled = (int)((double)width * MIN(done, total) / total);
  char bar[64];
  for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '-';
  bar[width] = '\0';
  if (errors)
    sim_progress_set(data, "[%s] %u/%u points, %u failed or OOM", bar, done, total, errors);
  else
    sim_progress_set(data, "[%s] %u/%u points", bar, done, total);
}

/* results/NAME with characters other than letters, digits, '.', '_', '-' replaced. */
static char *default_out_dir(const char *name) {
  g_autofree char *safe = g_strdup(name);
  for (char *c = safe; *c; c++)
    if (!g_ascii_isalnum(*c) && *c != '.' && *c != '_' && *c != '-') *c = '_';
  return cli_results_path(safe); /* cli_outputs.h */
}

/* Writes the charts of @results into @out and says what it drew, or how to draw them. */
static int draw_charts(ResDb *db, const ScnResults *results, const char *out, unsigned charts) {
  GError *error = NULL;
  ScnCosts *costs = NULL;
  if ((charts & SCN_CHART_TIMELINE) &&
      !(costs = scn_costs_load(db, results->scenario, results->points, &error)))
    return cli_fail(error, cli_status_for(error));
  ScnChartOutcome o;
  scn_chart_outcome_init(&o);
  int status = CLI_EXIT_OK;
  if (!scn_charts_write(results, costs, out, charts, results->scenario->formats, &o, &error)) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  for (guint i = 0; i < o.notes->len; i++) printf("  note: %s\n", (char *)g_ptr_array_index(o.notes, i));
  if (o.gnuplot_missing) {
    GString *scripts = g_string_new(NULL);
    for (guint i = 0; i < o.scripts->len; i++)
      g_string_append_printf(scripts, " %s.gp", (char *)g_ptr_array_index(o.scripts, i));
    printf("gnuplot is not on PATH: wrote the chart data (.dat) and gnuplot scripts (.gp) to %s; "
           "draw them with: cd %s && gnuplot%s\n", out, out, scripts->str);
    g_string_free(scripts, TRUE);
  } else if (o.scripts->len) {
    printf("charts in %s:", out);
    for (guint i = 0; i < o.scripts->len; i++) {
      const char *base = g_ptr_array_index(o.scripts, i);
      printf(" %s%s", base, results->scenario->formats & SCN_FORMAT_PNG ? ".png" : ".svg");
    }
    printf(" (%u images, with their .dat and .gp)\n", o.images);
  }
out:
  scn_chart_outcome_clear(&o);
  ses_costs_free(costs);
  return status;
}

/* Writes the tables the scenario asks for: text on stdout, CSV and JSON into @out. */
static int write_tables(const ScnResults *results, const char *out) {
  unsigned tables = results->scenario->tables;
  if (tables & SCN_TABLE_TEXT) {
    g_autofree char *text = scn_report(results, SCN_REPORT_TEXT);
    fputs(text, stdout);
  }
  static const struct { unsigned flag; ScnReportFormat format; const char *file; } files[] = {
      {SCN_TABLE_CSV, SCN_REPORT_CSV, "points.csv"}, {SCN_TABLE_JSON, SCN_REPORT_JSON, "points.json"}};
  for (gsize k = 0; k < G_N_ELEMENTS(files); k++) {
    if (!(tables & files[k].flag)) continue;
    GError *error = NULL;
    g_autofree char *text = scn_report(results, files[k].format);
    if (g_mkdir_with_parents(out, 0755) != 0 ||
        !util_write_file(out, files[k].file, text, NULL, &error)) {
      if (!error) g_set_error(&error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "cannot create %s", out);
      return cli_fail(error, cli_status_for(error));
    }
    printf("table: %s/%s\n", out, files[k].file);
  }
  return CLI_EXIT_OK;
}

/* --- under mpirun ---------------------------------------------------------------------- */

/* Ends every rank after a failure once the ranks share the sweep: the others would wait for
 * this one at the next collective. What the ranks stored stays stored. */
static int fail_sweep(GError *error, int status) {
  status = cli_fail(error, status);
  if (cli_mpi_active()) cli_mpi_abort(status);
  return status;
}

static int sweep_main(int argc, char **argv);

/* `stratsim sweep` runs as one process, or under mpirun as ranks that share the points (see
 * scenarios/README.md, "Under mpirun"): every rank opens the same database and stores the
 * points of its share, each in its own transaction; rank 0 then prints and draws from the
 * database alone. */
int cli_sweep(int argc, char **argv) {
  if (!cli_mpi_init(&argc, &argv)) return CLI_EXIT_FAILURE;
  int status = sweep_main(argc, argv);
  cli_mpi_finalize();
  return status;
}

static int sweep_main(int argc, char **argv) {
  g_autofree char *db_path = NULL, *out = NULL;
  g_auto(GStrv) files = NULL;
  int threads = 1, max_points = 0;
  gboolean no_charts = FALSE;
  GOptionEntry entries[] = {
      {"threads", 'j', 0, G_OPTION_ARG_INT, &threads, "simulate T points at once (default 1)", "T"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default " DEFAULT_DB ")", "FILE"},
      {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "directory for tables and charts (default results/NAME)", "DIR"},
      {"max-points", 0, 0, G_OPTION_ARG_INT, &max_points, "simulate at most N new points, then stop (run again to continue)", "N"},
      {"no-charts", 0, 0, G_OPTION_ARG_NONE, &no_charts, "store and print the table only", NULL},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &files, NULL, "FILE"},
      {NULL}};
  if (!cli_parse_options("sweep", "Runs every point of a scenario file into the database (resumable), "
                                  "then prints its table and draws its charts (scenarios/README.md).",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!files || !files[0] || files[1]) {
    fprintf(stderr, "stratsim sweep: give exactly one scenario FILE\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (threads < 1 || threads > 1024) {
    fprintf(stderr, "stratsim sweep: --threads must be from 1 to 1024\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (max_points < 0) {
    fprintf(stderr, "stratsim sweep: --max-points must not be negative\n");
    return CLI_EXIT_BAD_INPUT;
  }
  /* A reshard file (cases x methods of single cross-mesh moves) is not a training sweep: it
   * runs as `stratsim reshard FILE`, with no database. */
  g_autofree char *text = NULL;
  if (g_file_get_contents(files[0], &text, NULL, NULL) && scn_reshard_is(text)) {
    if (cli_mpi_rank() != 0) return CLI_EXIT_OK; /* under mpirun: rank 0 runs it alone */
    if (db_path || threads > 1 || max_points > 0)
      printf("stratsim sweep: %s is a reshard file: runs as `stratsim reshard`, no database "
             "(--db, --threads, --max-points ignored)\n", files[0]);
    return cli_reshard_file(files[0], out, !no_charts);
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  GError *error = NULL;
  int status = CLI_EXIT_OK;
  ScnScenario *scenario = NULL;
  ResDb *db = NULL;
  ScnResults *results = NULL;
  /* Under mpirun rank 0 opens (creating the database and its schema) before the others; the
   * ranks talk through the library's protocol (scenarios/scn_sweep.h, search/srch_comm.h). */
  SrchComm comm;
  cli_mpi_comm(&comm);
  int rank = comm.rank, ranks = comm.size;
  /* The tables and charts directory is checked before anything is opened or run
   * (cli_outputs.h); a bad one is bad input. */
  gboolean out_ok = TRUE;
  if ((scenario = scn_scenario_load(files[0], &error)) && !out)
    out = default_out_dir(scenario->name);
  if (scenario && rank == 0) out_ok = cli_output_dir_ok("--out", out, &error);
  if (!scenario || !out_ok || (rank == 0 && !(db = res_db_open(db_path, &error)))) {
    int bad = out_ok ? cli_status_for(error) : CLI_EXIT_BAD_INPUT;
    if (rank == 0) {
      status = cli_fail(error, bad);
    } else { /* rank 0 read the same file and said why */
      g_clear_error(&error);
      status = bad;
    }
  }
  if (!scn_sweep_all_ok(&comm, status == CLI_EXIT_OK)) {
    if (status == CLI_EXIT_OK) status = CLI_EXIT_FAILURE; /* another rank said why */
    goto done;
  }
  if (rank != 0 && !(db = res_db_open(db_path, &error))) {
    status = fail_sweep(error, CLI_EXIT_FAILURE);
    goto done;
  }
  gint64 started_us = g_get_monotonic_time();
  ScnSweepOptions options = {.threads = threads, .max_points = (guint)max_points};
  SimProgress *progress = rank == 0 ? sim_progress_new_stderr("sweep") : NULL;
  if (progress) {
    options.progress = show_progress;
    options.progress_data = progress;
  }
  scn_sweep_share(&options, &comm);
  ScnSweepSummary sum;
  gboolean ok = scn_sweep_run(scenario, db, &options, &sum, &error);
  sim_progress_free(progress);
  double elapsed = (double)(g_get_monotonic_time() - started_us) / 1e6;
  if (!ok) {
    status = fail_sweep(error, cli_status_for(error));
    goto done;
  }
  if (ranks > 1) {
    /* Every rank has stored its share when the sums arrive: rank 0 reads every point. */
    char **lines = NULL;
    scn_sweep_gather(&comm, &sum, &elapsed, &lines);
    if (rank != 0) goto done; /* gathered nothing */
    printf("sweep %s: %u points; %u simulated now (%u failed or do not fit), %u already stored; "
           "%.1f s, %d ranks x %d thread%s; %s\n",
           scenario->name, sum.points, sum.ran, sum.errors, sum.stored_before, elapsed, ranks,
           threads, threads == 1 ? "" : "s", db_path);
    for (int r = 0; r < ranks; r++)
      if (lines[r]) printf("%s\n", lines[r]);
    comm.strings_free(comm.data, lines);
  } else {
    /* What this process did: other sweeps of the scenario on the same database share the
     * points through claims (scn_sweep.h), and their part is counted apart. */
    g_autofree char *others =
        sum.by_others || sum.held_elsewhere
            ? g_strdup_printf(", %u stored meanwhile by other sweeps, %u still being run by "
                              "another sweep", sum.by_others, sum.held_elsewhere)
            : g_strdup("");
    printf("sweep %s: %u points; %u simulated now by this process (%u failed or do not fit), %u "
           "already stored%s; %.1f s, %d thread%s; %s\n",
           scenario->name, sum.points, sum.ran, sum.errors, sum.stored_before, others, elapsed,
           threads, threads == 1 ? "" : "s", db_path);
  }
  if (sum.left)
    printf("%u points left (--max-points %d): run the same command again to continue\n", sum.left, max_points);
  if (!(results = scn_results_load(db, db_path, scenario->name, &error))) {
    status = cli_fail(error, cli_status_for(error));
    goto done;
  }
  if ((status = write_tables(results, out)) != CLI_EXIT_OK) goto done;
  if (!no_charts && scenario->charts) status = draw_charts(db, results, out, scenario->charts);
done:
  scn_results_free(results);
  res_db_close(db);
  scn_scenario_free(scenario);
  return status;
}

/* Opens @db_path for reading a scenario, which must exist (a lookup creates nothing). */
static ResDb *open_existing(const char *db_path, const char *name, GError **error) {
  if (!g_file_test(db_path, G_FILE_TEST_EXISTS)) {
    g_set_error(error, RES_ERROR, RES_ERROR_NOT_FOUND,
                "no database %s to read scenario '%s' from (run 'stratsim sweep FILE' first)",
                db_path, name);
    return NULL;
  }
  return res_db_open(db_path, error);
}

int cli_report(int argc, char **argv) {
  g_autofree char *db_path = NULL, *name = NULL, *format_text = NULL;
  GOptionEntry entries[] = {
      {"scenario", 's', 0, G_OPTION_ARG_STRING, &name, "the scenario's name (its \"name\" field)", "NAME"},
      {"format", 'f', 0, G_OPTION_ARG_STRING, &format_text, "text (default), csv or json", "FORMAT"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default " DEFAULT_DB ")", "FILE"},
      {NULL}};
  if (!cli_parse_options("report", "Prints the stored points of a swept scenario as a table.",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  ScnReportFormat format;
  if (!name) {
    fprintf(stderr, "stratsim report: --scenario NAME is required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!scn_report_format_parse(format_text, &format)) {
    fprintf(stderr, "stratsim report: --format must be text, csv or json, not '%s'\n", format_text);
    return CLI_EXIT_BAD_INPUT;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  GError *error = NULL;
  ResDb *db = open_existing(db_path, name, &error);
  ScnResults *results = db ? scn_results_load(db, db_path, name, &error) : NULL;
  int status = CLI_EXIT_OK;
  if (!results) {
    status = cli_fail(error, cli_status_for(error));
  } else {
    g_autofree char *text = scn_report(results, format);
    fputs(text, stdout);
  }
  scn_results_free(results);
  res_db_close(db);
  return status;
}

int cli_plot(int argc, char **argv) {
  g_autofree char *db_path = NULL, *name = NULL, *out = NULL;
  GOptionEntry entries[] = {
      {"scenario", 's', 0, G_OPTION_ARG_STRING, &name, "the scenario's name (its \"name\" field)", "NAME"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default " DEFAULT_DB ")", "FILE"},
      {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "directory for the charts (default results/NAME)", "DIR"},
      {NULL}};
  if (!cli_parse_options("plot", "Draws a swept scenario's charts from the database with gnuplot.",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!name) {
    fprintf(stderr, "stratsim plot: --scenario NAME is required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  if (!out) out = default_out_dir(name);
  GError *error = NULL;
  if (!cli_output_dir_ok("--out", out, &error)) return cli_fail(error, CLI_EXIT_BAD_INPUT);
  ResDb *db = open_existing(db_path, name, &error);
  ScnResults *results = db ? scn_results_load(db, db_path, name, &error) : NULL;
  int status;
  if (!results) {
    status = cli_fail(error, cli_status_for(error));
  } else {
    unsigned charts = results->scenario->charts;
    if (!charts) charts = SCN_CHART_THROUGHPUT | SCN_CHART_BREAKDOWN | SCN_CHART_MEMORY;
    printf("scenario %s: %u of %u points stored\n", name, results->stored_count, results->points->len);
    status = draw_charts(db, results, out, charts);
  }
  scn_results_free(results);
  res_db_close(db);
  return status;
}
