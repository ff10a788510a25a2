/* cli/list — `stratsim list models|clusters|devices`: what is built in; `stratsim list
 * runs|searches|calibrations|scenarios`: what the results database holds. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "results/res_list.h"

static int list_clusters(void) {
  printf("%-16s %-8s %-10s %-26s  %-20s  %s\n", "preset", "nodes", "device",
         "intra-node link", "inter-node NICs", "description");
  for (const char *const *n = dev_preset_names(); *n; n++) {
    GError *error = NULL;
    DevCluster *c = dev_cluster_parse_spec(*n, &error);
    if (!c) return cli_fail(error, cli_status_for(error));
    printf("%-16s %3d x %-2d %-10s intra %-8s %6.1f GB/s  inter %d x %5.1f Gb/s  %s\n", *n,
           c->nodes, c->gpus_per_node, c->device.name, c->link[DEV_LINK_INTRA].kind,
           c->link[DEV_LINK_INTRA].bandwidth / 1e9, c->nics_per_node,
           c->link[DEV_LINK_INTER].bandwidth * 8 / 1e9, c->description ? c->description : "");
    dev_cluster_free(c);
  }
  return CLI_EXIT_OK;
}

static int list_devices(void) {
  for (const char *const *n = dev_kind_names(); *n; n++) {
    DevKind k;
    GError *error = NULL;
    if (!dev_kind_lookup(*n, &k, &error)) return cli_fail(error, cli_status_for(error));
    printf("%-10s fp32 %6.1f  tf32 %6.1f  fp16 %6.1f  bf16 %6.1f  fp8 %6.1f TFLOP/s  %5.0f GiB  "
           "%5.0f GB/s\n",
           *n, k.peak_flops[DEV_DTYPE_FP32] / 1e12, k.peak_flops[DEV_DTYPE_TF32] / 1e12,
           k.peak_flops[DEV_DTYPE_FP16] / 1e12, k.peak_flops[DEV_DTYPE_BF16] / 1e12,
           k.peak_flops[DEV_DTYPE_FP8] / 1e12,
           k.memory_bytes / (1024.0 * 1024 * 1024), k.hbm_bandwidth / 1e9);
    dev_kind_clear(&k);
  }
  return CLI_EXIT_OK;
}

static int list_models(void) {
  for (const char *const *n = mdl_zoo_names(); *n; n++) printf("%-12s %s\n", *n, mdl_zoo_describe(*n));
  printf("%-12s %s\n", "gpt:...", "gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V,batch=B,ffn=F");
  printf("%-12s %s\n", "llama:...",
         "llama:layers=L,hidden=H,heads=A,kv_heads=G,ffn=F,seq=S,vocab=V,batch=B,head_dim=D,"
         "tied=0|1,attn=flash|unfused");
  printf("%-12s %s\n", "mlp:...", "mlp:layers=L,hidden=H,batch=B");
  printf("%-12s %s\n", "FILE.json", "an operator graph in JSON (model/README.md)");
  return CLI_EXIT_OK;
}

/* `list runs|searches|calibrations|scenarios [--db FILE] [--limit N]`: what the database
 * holds, newest first, as an aligned table (results/res_list.h). */
static int list_stored(const char *what, int argc, char **argv) {
  g_autofree char *db_path = NULL;
  int limit = 50;
  GOptionEntry entries[] = {
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {"limit", 'n', 0, G_OPTION_ARG_INT, &limit, "at most N rows, newest first (0: all; default 50)", "N"},
      {NULL}};
  g_autofree char *command = g_strdup_printf("list %s", what);
  if (!cli_parse_options(command, "Lists what the results database holds.", entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (limit < 0) {
    fprintf(stderr, "stratsim list: --limit must not be negative\n");
    return CLI_EXIT_BAD_INPUT;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  const char *path = db_path;
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    printf("no database at %s: nothing stored yet (simulate, search, sweep and calibrate store "
           "there; --db FILE for another)\n", path);
    return CLI_EXIT_OK;
  }
  GStatBuf st;
  if (g_stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) { /* (SQLite: an empty database) */
    printf("database %s is empty: nothing stored yet\n", path);
    return CLI_EXIT_OK;
  }
  GError *error = NULL;
  ResDb *db = res_db_open_read_only(path, &error);
  ResTable *t = db ? res_db_list(db, what, (guint)limit, &error) : NULL;
  res_db_close(db);
  if (!t) return cli_fail(error, cli_status_for(error));
  guint ncol = t->columns->len;
  g_autofree int *width = g_new0(int, ncol);
  for (guint c = 0; c < ncol; c++) width[c] = (int)g_utf8_strlen(g_ptr_array_index(t->columns, c), -1);
  for (guint r = 0; r < t->rows->len; r++) {
    char **row = g_ptr_array_index(t->rows, r);
    for (guint c = 0; c < ncol; c++) width[c] = MAX(width[c], (int)g_utf8_strlen(row[c], -1));
  }
  for (guint c = 0; c < ncol; c++)
    printf("%-*s%s", c + 1 < ncol ? width[c] : 0, (char *)g_ptr_array_index(t->columns, c),
           c + 1 < ncol ? "  " : "\n");
  for (guint r = 0; r < t->rows->len; r++) {
    char **row = g_ptr_array_index(t->rows, r);
    for (guint c = 0; c < ncol; c++)
      printf("%-*s%s", c + 1 < ncol ? width[c] : 0, row[c], c + 1 < ncol ? "  " : "\n");
  }
  if (t->rows->len == 0) printf("(no %s in %s)\n", what, path);
  res_table_free(t);
  return CLI_EXIT_OK;
}

int cli_list(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "models") == 0) return list_models();
  if (strcmp(what, "clusters") == 0) return list_clusters();
  if (strcmp(what, "devices") == 0) return list_devices();
  for (const char *const *k = res_list_kinds(); *k; k++)
    if (strcmp(what, *k) == 0) return list_stored(what, argc - 1, argv + 1);
  fprintf(stderr, "stratsim list: say what to list: models, clusters, devices (built in) or runs, "
                  "searches, calibrations, scenarios (stored in the database)\n");
  return CLI_EXIT_BAD_INPUT;
}
