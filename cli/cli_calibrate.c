/* cli/calibrate — `stratsim calibrate --cluster C --name NAME [--db FILE] [--kind K] [--json]
 * FILE...`: fits a collective calibration to measured collectives (nccl-tests output or the
 * runner's measurements JSON, costmodel/CALIBRATION.md) and stores it in SQLite under NAME,
 * for `stratsim collective --calibration NAME`. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <stdio.h>

#include "costmodel/cm_calibrate.h"
#include "results/res_db.h"

static void print_summary(const CmCalibration *c, guint nfiles, guint nmeasurements,
                          const char *db_path) {
  const char *links[DEV_LINK_COUNT] = {"intra-host", "inter-host"};
  printf("stratsim calibrate: %s for %s from %u file%s, %u measurements\n", cm_calibration_name(c),
         cm_calibration_cluster(c), nfiles, nfiles == 1 ? "" : "s", nmeasurements);
  for (guint i = 0; i < cm_calibration_n_fits(c); i++) {
    const CmCalibrationFit *f = cm_calibration_fit_at(c, i);
    printf("  fit    %-14s %s: base %.4g us + alpha %.4g us per step, busbw ",
           cm_collective_name(f->kind), links[f->link], f->base * 1e6, f->alpha * 1e6);
    if (f->beta > 0) printf("%.4g GB/s", 1e-9 / f->beta);
    else printf("unbounded");
    printf("; error over its %d points mean %.1f%%, max %.1f%%\n", f->points,
           100 * f->mean_rel_error, 100 * f->max_rel_error);
  }
  for (guint i = 0; i < cm_calibration_n_tables(c); i++) {
    const CmCalibrationTable *t = cm_calibration_table_at(c, i);
    printf("  table  %-14s %d ranks on %d host%s: %d sizes, %.0f to %.0f bytes\n",
           cm_collective_name(t->kind), t->ranks, t->nodes, t->nodes == 1 ? "" : "s", t->npoints,
           t->bytes[0], t->bytes[t->npoints - 1]);
  }
  printf("  stored calibration '%s' in %s\n", cm_calibration_name(c), db_path);
}

int cli_calibrate(int argc, char **argv) {
  g_autofree char *cluster_spec = NULL, *name = NULL, *db_path = NULL, *kind_name = NULL;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_spec, "the cluster measured: PRESET[:key=value,...] or a JSON file", "C"},
      {"name", 'n', 0, G_OPTION_ARG_STRING, &name, "name to store the calibration under", "NAME"},
      {"kind", 'k', 0, G_OPTION_ARG_STRING, &kind_name, "collective of nccl-tests files that do not name it", "K"},
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the calibration as JSON", NULL},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {NULL}};
  /* Files are positional: parse the options from a copy that stops at them. */
  GOptionContext *ctx = g_option_context_new("FILE...");
  g_set_prgname("stratsim calibrate");
  g_option_context_set_summary(ctx, "Fits collective costs to nccl-tests output or measurements JSON.");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  gboolean parsed = g_option_context_parse(ctx, &argc, &argv, &error);
  g_option_context_free(ctx);
  if (!parsed) {
    fprintf(stderr, "stratsim calibrate: %s\n", error->message);
    g_error_free(error);
    return CLI_EXIT_BAD_INPUT;
  }
  if (!cluster_spec || !name || !*name) {
    fprintf(stderr, "stratsim calibrate: --cluster and --name are required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (argc < 2) {
    fprintf(stderr, "stratsim calibrate: no measurement files (nccl-tests output or measurements JSON)\n");
    return CLI_EXIT_BAD_INPUT;
  }
  int kind_hint = -1;
  if (kind_name) {
    CmCollective kind;
    if (!cm_collective_parse(kind_name, &kind)) {
      fprintf(stderr, "stratsim calibrate: unknown collective '%s' (all_reduce, all_gather, "
                      "reduce_scatter, all_to_all, broadcast, reduce, send_recv)\n", kind_name);
      return CLI_EXIT_BAD_INPUT;
    }
    kind_hint = (int)kind;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */

  int status = CLI_EXIT_OK;
  CmCalibration *calibration = NULL;
  ResDb *db = NULL;
  char *text = NULL;
  GArray *measurements = g_array_new(FALSE, FALSE, sizeof(CmMeasurement));
  DevCluster *cluster = dev_cluster_parse_spec(cluster_spec, &error);
  if (!cluster) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  for (int i = 1; i < argc; i++) {
    guint before = measurements->len;
    if (!cm_measurements_load_file(argv[i], kind_hint, measurements, &error)) {
      status = cli_fail(error, cli_status_for(error));
      goto out;
    }
    /* Measurements must fit the cluster they calibrate: no more ranks on a host than it has. */
    for (guint j = before; j < measurements->len; j++) {
      const CmMeasurement *m = &g_array_index(measurements, CmMeasurement, j);
      int per_host = (m->ranks + m->nodes - 1) / m->nodes;
      if (per_host > cluster->gpus_per_node) {
        fprintf(stderr, "stratsim calibrate: %s: %d ranks on %d host%s is more than the %d GPUs "
                        "per host of %s\n", argv[i], m->ranks, m->nodes, m->nodes == 1 ? "" : "s",
                cluster->gpus_per_node, cluster_spec);
        status = CLI_EXIT_BAD_INPUT;
        goto out;
      }
    }
  }
  if (!(calibration = cm_calibration_fit(name, cluster_spec, (const CmMeasurement *)measurements->data,
                                         measurements->len, &error))) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  text = cm_calibration_to_json(calibration);
  if (!(db = res_db_open(db_path, &error)) ||
      !res_db_store_calibration(db, name, cluster_spec, text, &error)) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  if (json) printf("%s\n", text);
  else print_summary(calibration, (guint)(argc - 1), measurements->len, db_path);
out:
  g_free(text);
  res_db_close(db);
  cm_calibration_free(calibration);
  g_array_free(measurements, TRUE);
  dev_cluster_free(cluster);
  return status;
}
