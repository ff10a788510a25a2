/* cli/profiles — `stratsim profiles import FILE... [--db FILE]`: stores measured kernel times
 * (costmodel/PROFILES.md) that then override the roofline for their device kind in simulate
 * and explain. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <stdio.h>
#include <string.h>

#include "costmodel/cm_profile.h"
#include "results/res_db.h"

static int import(int argc, char **argv, const char *db_path) {
  if (argc < 2) {
    fprintf(stderr, "stratsim profiles import: name at least one profile JSON file\n");
    return CLI_EXIT_BAD_INPUT;
  }
  GError *error = NULL;
  ResDb *db = res_db_open(db_path, &error);
  if (!db) return cli_fail(error, cli_status_for(error));
  int status = CLI_EXIT_OK;
  for (int i = 1; i < argc && status == CLI_EXIT_OK; i++) {
    g_autofree char *text = NULL;
    if (!g_file_get_contents(argv[i], &text, NULL, &error)) {
      status = cli_fail(error, cli_status_for(error));
      break;
    }
    CmProfiles *p = cm_profiles_from_json(text, argv[i], &error);
    if (!p) {
      status = cli_fail(error, cli_status_for(error));
      break;
    }
    /* The file's "source" says where and how the kernels were measured. */
    g_autofree char *source = g_strdup_printf("%s: %s", argv[i], cm_profiles_source(p));
    gint64 n = res_db_store_profiles(db, p, source, &error);
    cm_profiles_free(p);
    if (n < 0) {
      status = cli_fail(error, cli_status_for(error));
      break;
    }
    printf("profiles: stored %" G_GINT64_FORMAT " kernels from %s in %s\n", n, argv[i], db_path);
  }
  res_db_close(db);
  return status;
}

int cli_profiles(int argc, char **argv) {
  g_autofree char *db_path = NULL;
  GOptionEntry entries[] = {
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {NULL}};
  const char *verb = argc > 1 ? argv[1] : "";
  if (strcmp(verb, "import") != 0) {
    fprintf(stderr, "stratsim profiles: say 'import FILE...'\n");
    return CLI_EXIT_BAD_INPUT;
  }
  argc--, argv++;
  GOptionContext *ctx = g_option_context_new("FILE...");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  gboolean ok = g_option_context_parse(ctx, &argc, &argv, &error);
  g_option_context_free(ctx);
  if (!ok) {
    fprintf(stderr, "stratsim profiles: %s\n", error->message);
    g_error_free(error);
    return CLI_EXIT_BAD_INPUT;
  }
  g_autofree char *default_db = cli_results_path("stratsim.db"); /* cli_outputs.h */
  return import(argc, argv, db_path ? db_path : default_db);
}
