/* results/check — `stratsim db check`: is a database file consistent? (res_db.h)
 *
 * Opens the file as it is (no creation, no migration), runs SQLite's own checks (PRAGMA
 * integrity_check: b-trees, indexes, UNIQUE and NOT NULL; PRAGMA foreign_key_check: every
 * run_id, search_id and scenario_id points at a row), checks that the tables the stored schema
 * version promises exist, and counts the rows of every table. A run killed mid-write leaves its
 * transaction in the WAL uncommitted; SQLite rolls it back on open, so a killed stratsim shows
 * up here as consistent, without the partial rows. */
#include "results/res_db-int.h"

#include <sqlite3.h>
#include <string.h>

void res_db_check_free(ResDbCheck *check) {
  if (!check) return;
  g_ptr_array_unref(check->tables);
  g_array_unref(check->rows);
  g_ptr_array_unref(check->problems);
  g_free(check);
}

/* Runs @pragma and adds every row but a lone "ok" as a problem (text columns joined). */
static void collect(sqlite3 *sql, const char *pragma, const char *what, GPtrArray *problems) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(sql, pragma, -1, &st, NULL) != SQLITE_OK) {
    g_ptr_array_add(problems, g_strdup_printf("%s could not run: %s", what, sqlite3_errmsg(sql)));
    return;
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    GString *row = g_string_new(NULL);
    for (int i = 0; i < sqlite3_column_count(st); i++) {
      const char *text = (const char *)sqlite3_column_text(st, i);
      g_string_append_printf(row, "%s%s", i ? " " : "", text ? text : "NULL");
    }
    if (strcmp(row->str, "ok") != 0) { /* integrity_check may put several findings in a row */
      g_auto(GStrv) lines = g_strsplit(row->str, "\n", -1);
      for (char **l = lines; *l; l++)
        if (**l) g_ptr_array_add(problems, g_strdup_printf("%s: %s", what, *l));
    }
    g_string_free(row, TRUE);
  }
  if (rc != SQLITE_DONE)
    g_ptr_array_add(problems, g_strdup_printf("%s stopped: %s", what, sqlite3_errmsg(sql)));
  sqlite3_finalize(st);
}

static gint64 count_rows(sqlite3 *sql, const char *table) {
  char *query = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", table);
  sqlite3_stmt *st = NULL;
  gint64 n = -1;
  if (sqlite3_prepare_v2(sql, query, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_free(query);
  return n;
}

ResDbCheck *res_db_check(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "%s is a directory, not a database file", path);
    return NULL;
  }
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "no database file %s", path);
    return NULL;
  }
  sqlite3 *sql = NULL;
  /* Read-write (a WAL left by a killed run is recovered as any open does), read-only where the
   * file or its directory cannot be written. */
  if (sqlite3_open_v2(path, &sql, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    sqlite3_close(sql);
    sql = NULL;
    if (sqlite3_open_v2(path, &sql, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
      g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "cannot open database %s: %s", path,
                  sql ? sqlite3_errmsg(sql) : "out of memory");
      sqlite3_close(sql);
      return NULL;
    }
  }
  sqlite3_busy_timeout(sql, 10000);
  sqlite3_stmt *st = NULL;
  int version = 0;
  gboolean read = FALSE;
  /* The first read looks at the file header: a file that is not a database fails here. */
  if (sqlite3_prepare_v2(sql, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    version = sqlite3_column_int(st, 0);
    read = TRUE;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (!read) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "%s is not a SQLite database (%s)", path,
                sqlite3_errmsg(sql));
    sqlite3_close(sql);
    return NULL;
  }
  ResDbCheck *check = g_new0(ResDbCheck, 1);
  check->schema_version = version;
  check->tables = g_ptr_array_new_with_free_func(g_free);
  check->rows = g_array_new(FALSE, FALSE, sizeof(gint64));
  check->problems = g_ptr_array_new_with_free_func(g_free);
  collect(sql, "PRAGMA integrity_check", "integrity_check", check->problems);
  collect(sql, "PRAGMA foreign_key_check", "foreign_key_check (table, rowid, parent, key)",
          check->problems);
  if (sqlite3_prepare_v2(sql,
                         "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                         "'sqlite_%' ORDER BY name",
                         -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW)
      g_ptr_array_add(check->tables, g_strdup((const char *)sqlite3_column_text(st, 0)));
  } else {
    g_ptr_array_add(check->problems,
                    g_strdup_printf("cannot list the tables: %s", sqlite3_errmsg(sql)));
  }
  sqlite3_finalize(st);
  for (guint i = 0; i < check->tables->len; i++) {
    const char *table = g_ptr_array_index(check->tables, i);
    gint64 n = count_rows(sql, table);
    if (n < 0)
      g_ptr_array_add(check->problems,
                      g_strdup_printf("table %s cannot be read: %s", table, sqlite3_errmsg(sql)));
    g_array_append_val(check->rows, n);
  }
  /* A version this stratsim cannot vouch for is a problem, not a pass: a newer stratsim's
   * tables are not known here, a negative one no stratsim writes, tables of later versions
   * under an older number mean user_version was changed by hand (the next write would fail). */
  int added_in = 0;
  const char *ahead = version >= 0 && version < RES_SCHEMA_VERSION
                          ? res_table_ahead_of_version(sql, version, &added_in) : NULL;
  if (version > RES_SCHEMA_VERSION)
    g_ptr_array_add(check->problems,
                    g_strdup_printf("schema version %d is newer than this stratsim's %d: its tables "
                                    "cannot be checked here", version, RES_SCHEMA_VERSION));
  else if (version < 0)
    g_ptr_array_add(check->problems,
                    g_strdup_printf("schema version %d (PRAGMA user_version) is one no stratsim "
                                    "writes (0 to %d)", version, RES_SCHEMA_VERSION));
  else if (ahead)
    g_ptr_array_add(check->problems,
                    g_strdup_printf("schema version %d but table %s of version %d exists: "
                                    "user_version was changed by hand", version, ahead, added_in));
  for (int v = 0; v < MIN(version, RES_SCHEMA_VERSION); v++)
    for (int k = 0; k < 3 && res_tables_of_version[v][k]; k++) {
      const char *want = res_tables_of_version[v][k];
      gboolean found = FALSE;
      for (guint i = 0; i < check->tables->len && !found; i++)
        found = strcmp(g_ptr_array_index(check->tables, i), want) == 0;
      if (!found)
        g_ptr_array_add(check->problems,
                        g_strdup_printf("schema version %d but no table %s (added in version %d)",
                                        version, want, v + 1));
    }
  sqlite3_close(sql);
  return check;
}
