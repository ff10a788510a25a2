/* cli/reshard — `stratsim reshard FILE [--out DIR]`: the cases x methods of a reshard file
 * (scenarios/scn_reshard.h), each move simulated alone, as a table and a grouped bar chart;
 * `stratsim reshard --src-mesh 2x4 --src S0RR --dst-mesh 2x4 --dst S0RR [--tensor ...]`: one
 * move under every method. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <stdio.h>
#include <string.h>

#include "scenarios/scn_reshard.h"
#include "scenarios/scn_scenario.h"

/* "2x4" as the JSON array "[2, 4]"; NULL when it is not two positive integers. */
static char *mesh_json(const char *text) {
  int rows = 0, cols = 0;
  char tail = 0;
  if (!text || sscanf(text, "%dx%d%c", &rows, &cols, &tail) != 2 || rows < 1 || cols < 1) return NULL;
  return g_strdup_printf("[%d, %d]", rows, cols);
}

/* "1024x1024x512" as "[1024, 1024, 512]"; NULL when a dim is not a positive integer. */
static char *shape_json(const char *text) {
  g_auto(GStrv) dims = g_strsplit(text, "x", -1);
  GString *out = g_string_new("[");
  for (int i = 0; dims[i]; i++) {
    char *end = NULL;
    gint64 v = g_ascii_strtoll(dims[i], &end, 10);
    if (!*dims[i] || *end || v < 1) {
      g_string_free(out, TRUE);
      return NULL;
    }
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? ", " : "", v);
  }
  g_string_append(out, "]");
  return g_string_free(out, FALSE);
}

/* The reshard file of one move under the four methods, all with @order. */
static char *one_move_json(const char *cluster, const char *src_mesh, const char *src,
                           const char *dst_mesh, const char *dst, const char *tensor,
                           double element_bytes, const char *order) {
  GString *methods = g_string_new(NULL);
  for (int m = 0; m < SIM_CROSSMESH_METHOD_COUNT; m++) {
    const char *name = sim_crossmesh_method_name((SimCrossMeshMethod)m);
    g_string_append_printf(methods, "%s{\"label\": \"%s\", \"method\": \"%s\", \"order\": \"%s\"}",
                           m ? ", " : "", name, name, order);
  }
  char *json = g_strdup_printf(
      "{\"name\": \"reshard\", \"kind\": \"reshard\", \"cluster\": \"%s\", \"tensor\": %s, "
      "\"element_bytes\": %.17g, \"cases\": [{\"label\": \"1\", \"src_mesh\": %s, \"dst_mesh\": %s, "
      "\"src\": \"%s\", \"dst\": \"%s\"}], \"methods\": [%s]}",
      cluster, tensor, element_bytes, src_mesh, dst_mesh, src, dst, methods->str);
  g_string_free(methods, TRUE);
  return json;
}

/* Runs @r (consumed): the table, then (@chart) the chart in @out_dir (NULL: results/NAME). */
static int run_reshard(ScnReshard *r, const char *out_dir, gboolean chart) {
  GError *error = NULL;
  int status = CLI_EXIT_OK;
  GPtrArray *rows = scn_reshard_run(r, &error);
  if (!rows) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  scn_reshard_print(r, rows, stdout);
  if (chart) {
    /* results/NAME, NAME's characters other than letters, digits, '.', '_', '-' replaced. */
    g_autofree char *safe = g_strdup(r->name);
    for (char *c = safe; *c; c++)
      if (!g_ascii_isalnum(*c) && *c != '.' && *c != '_' && *c != '-') *c = '_';
    g_autofree char *dir = out_dir ? g_strdup(out_dir) : cli_results_path(safe);
    ScnChartOutcome outcome;
    scn_chart_outcome_init(&outcome);
    if (!scn_reshard_chart(r, rows, dir, safe, SCN_FORMAT_PNG | SCN_FORMAT_SVG, &outcome, &error)) {
      status = cli_fail(error, cli_status_for(error));
    } else if (outcome.gnuplot_missing) {
      printf("chart: %s/%s.dat and .gp written; gnuplot is not on PATH (draw with `cd %s && "
             "gnuplot %s.gp`)\n", dir, safe, dir, safe);
    } else {
      printf("chart: %s/%s.png and .svg\n", dir, safe);
    }
    scn_chart_outcome_clear(&outcome);
  }
  g_ptr_array_unref(rows);
out:
  scn_reshard_free(r);
  return status;
}

int cli_reshard(int argc, char **argv) {
  g_autofree char *out_dir = NULL, *cluster = NULL, *src_mesh = NULL, *dst_mesh = NULL;
  g_autofree char *src = NULL, *dst = NULL, *tensor = NULL, *order = NULL;
  double element_bytes = 2;
  gboolean no_chart = FALSE;
  GOptionEntry entries[] = {
      {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out_dir, "chart folder (default results/NAME/)", "DIR"},
      {"no-chart", 0, 0, G_OPTION_ARG_NONE, &no_chart, "print the table only", NULL},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster, "one move: cluster preset (default aws-p3.8xlarge, the paper's)", "PRESET"},
      {"src-mesh", 0, 0, G_OPTION_ARG_STRING, &src_mesh, "one move: sender mesh, hosts x GPUs per host, on the first hosts", "RxC"},
      {"dst-mesh", 0, 0, G_OPTION_ARG_STRING, &dst_mesh, "one move: receiver mesh, on the hosts after the sender's", "RxC"},
      {"src", 0, 0, G_OPTION_ARG_STRING, &src, "one move: sender layout, the paper's notation (S0RR, RS01R)", "LAYOUT"},
      {"dst", 0, 0, G_OPTION_ARG_STRING, &dst, "one move: receiver layout", "LAYOUT"},
      {"tensor", 0, 0, G_OPTION_ARG_STRING, &tensor, "one move: tensor shape (default 1024x1024x512)", "AxBxC"},
      {"element-bytes", 0, 0, G_OPTION_ARG_DOUBLE, &element_bytes, "one move: bytes per element (default 2)", "N"},
      {"order", 0, 0, G_OPTION_ARG_STRING, &order, "one move: load balancer of every method (default ensemble)", "naive|greedy|dfs|randomized_greedy|ensemble"},
      {NULL}};
  /* The file is a positional argument: take it out before GOption sees the rest. */
  const char *file = NULL;
  if (argc > 1 && argv[1][0] != '-') {
    file = argv[1];
    argv[1] = argv[0];
    argc--, argv++;
  }
  if (!cli_parse_options("reshard",
                         "Simulates single cross-mesh moves, each alone: `stratsim reshard FILE` runs "
                         "the cases x methods of a reshard file (scenarios/crossmesh-table2/table2.json) "
                         "and charts them; `stratsim reshard --src-mesh 2x4 --src RS0R --dst-mesh 2x4 "
                         "--dst S0RR` times one move under every method.",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  gboolean one = src_mesh || dst_mesh || src || dst;
  if (!file == !one) {
    fprintf(stderr, "stratsim reshard: give a reshard FILE, or --src-mesh, --src, --dst-mesh and "
                    "--dst for one move\n");
    return CLI_EXIT_BAD_INPUT;
  }
  GError *error = NULL;
  ScnReshard *r = NULL;
  if (one) {
    g_autofree char *sm = mesh_json(src_mesh), *dm = mesh_json(dst_mesh);
    g_autofree char *shape = shape_json(tensor ? tensor : "1024x1024x512");
    SimCrossMeshOrder parsed;
    if (!sm || !dm || !src || !dst || !shape ||
        (order && !sim_crossmesh_order_parse(order, &parsed)) || strpbrk(src, "\"\\") ||
        strpbrk(dst, "\"\\") || (cluster && strpbrk(cluster, "\"\\"))) {
      fprintf(stderr, "stratsim reshard: one move needs --src-mesh RxC, --src LAYOUT, --dst-mesh "
                      "RxC and --dst LAYOUT (and a tensor AxBxC, an order naive|greedy|dfs|"
                      "randomized_greedy|ensemble)\n");
      return CLI_EXIT_BAD_INPUT;
    }
    g_autofree char *json = one_move_json(cluster ? cluster : "aws-p3.8xlarge", sm, src, dm, dst,
                                          shape, element_bytes, order ? order : "ensemble");
    r = scn_reshard_from_json(json, &error);
  } else {
    r = scn_reshard_load(file, &error);
  }
  if (!r) return cli_fail(error, cli_status_for(error));
  return run_reshard(r, out_dir, !one && !no_chart);
}

int cli_reshard_file(const char *path, const char *out_dir, gboolean chart) {
  GError *error = NULL;
  ScnReshard *r = scn_reshard_load(path, &error);
  if (!r) return cli_fail(error, cli_status_for(error));
  return run_reshard(r, out_dir, chart);
}
