/* Private to results/res_*.c: the database handle behind the opaque ResDb. */
#ifndef STRATSIM_RES_DB_INT_H
#define STRATSIM_RES_DB_INT_H

#include <sqlite3.h>
#include "results/res_db.h"

struct ResDb {
  sqlite3 *sql;
  char *path;
};

/* Runs @sql (no results); FALSE with RES_ERROR_WRITE naming the database on failure. */
static inline gboolean res_sql_run(ResDb *db, const char *sql, GError **error) {
  char *msg = NULL;
  if (sqlite3_exec(db->sql, sql, NULL, NULL, &msg) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path, msg ? msg : "error");
    sqlite3_free(msg);
    return FALSE;
  }
  return TRUE;
}

/* Binds @text (copied) to parameter @i, or NULL when @text is NULL. */
static inline void res_bind_text(sqlite3_stmt *st, int i, const char *text) {
  if (text) sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, i);
}

/* Inside an open transaction: adds a `runs` row (now, @command, the specs as typed, this
 * binary's version) and returns its id, or -1 (sqlite3_errmsg tells why; the caller rolls
 * back). NULL specs are stored as NULL. */
/* The tables each schema version adds: row v lists those of migration v -> v + 1 (res_db.c). */
extern const char *const res_tables_of_version[RES_SCHEMA_VERSION][3];

/* Whether @sql has a table named @table. */
gboolean res_table_exists(sqlite3 *sql, const char *table);

/* The first table that a schema version after @version adds and that @sql already has (its
 * version was set back by hand), with the version that adds it in @added_in (nullable); NULL
 * when there is none. */
const char *res_table_ahead_of_version(sqlite3 *sql, int version, int *added_in);

gint64 res_db_insert_run(ResDb *db, const char *command, const char *model, const char *cluster,
                         const char *strategy);

#endif
