/* cli/db — `stratsim db check [--db FILE]`: is the results database consistent?
 * Prints the schema version, the rows of every table and any problem found
 * (results/res_check.c); exit 0 when consistent, 1 when not, 2 when the file is missing or is
 * not a database. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <stdio.h>
#include <string.h>

#include "results/res_db.h"

static int check(const char *db_path) {
  GError *error = NULL;
  ResDbCheck *c = res_db_check(db_path, &error);
  if (!c) return cli_fail(error, cli_status_for(error));
  const char *age = c->schema_version == RES_SCHEMA_VERSION ? "current"
                    : c->schema_version > RES_SCHEMA_VERSION ? "newer than this stratsim's"
                    : c->schema_version < 0                  ? "not one stratsim writes"
                                                             : "older: migrated when next written";
  printf("database %s\n", db_path);
  printf("  schema       version %d (%s)\n", c->schema_version, age);
  if (c->tables->len == 0) printf("  tables       none\n");
  for (guint i = 0; i < c->tables->len; i++) {
    gint64 rows = g_array_index(c->rows, gint64, i);
    printf("  %-12s %-20s %" G_GINT64_FORMAT " rows\n", i == 0 ? "tables" : "",
           (const char *)g_ptr_array_index(c->tables, i), rows);
  }
  for (guint i = 0; i < c->problems->len; i++)
    printf("  problem      %s\n", (const char *)g_ptr_array_index(c->problems, i));
  int status = c->problems->len ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
  if (status == CLI_EXIT_OK) printf("  consistent   integrity_check and foreign_key_check pass\n");
  else
    fprintf(stderr, "stratsim db check: %s is not consistent (%u problem%s)\n", db_path,
            c->problems->len, c->problems->len == 1 ? "" : "s");
  res_db_check_free(c);
  return status;
}

int cli_db(int argc, char **argv) {
  g_autofree char *db_path = NULL;
  GOptionEntry entries[] = {
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)",
       "FILE"},
      {NULL}};
  const char *verb = argc > 1 ? argv[1] : "";
  if (strcmp(verb, "check") != 0) {
    fprintf(stderr, "stratsim db: say 'check [--db FILE]'\n");
    return CLI_EXIT_BAD_INPUT;
  }
  argc--, argv++;
  if (!cli_parse_options("db check",
                         "Checks a results database: PRAGMA integrity_check and foreign_key_check, "
                         "the tables its schema version needs, rows per table. Exit status 0 when "
                         "consistent, 1 when not, 2 when the file is missing or not a database.",
                         entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */
  return check(db_path);
}
