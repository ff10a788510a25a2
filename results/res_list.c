/* results/list — listing runs, searches, calibrations and scenarios (res_list.h). */
#include "results/res_list.h"
#include "results/res_db-int.h"

#include <string.h>

typedef struct {
  const char *kind;
  const char *sql; /* ?1: the row limit (-1: all) */
} Listing;

/* Column names are the titles printed; figures rounded by SQLite, so the text is stable. */
static const Listing listings[] = {
    {"runs",
     "SELECT r.id AS run, r.created_at AS \"created (UTC)\", r.command, r.model, r.cluster, "
     "r.strategy, printf('%.6g', p.iteration_time_s) AS \"iteration s\", "
     "printf('%.3g', p.peak_memory_bytes / 1073741824.0) AS \"peak GiB\" "
     "FROM runs r LEFT JOIN predictions p ON p.run_id = r.id ORDER BY r.id DESC LIMIT ?1"},
    {"searches",
     "SELECT s.id AS search, s.run_id AS run, r.created_at AS \"created (UTC)\", r.model, "
     "r.cluster, s.ran AS algo, s.budget, s.evaluations, "
     "printf('%.6g', s.best_time_s) AS \"best s\", s.found_by AS \"found by\" "
     "FROM search_runs s JOIN runs r ON r.id = s.run_id ORDER BY s.id DESC LIMIT ?1"},
    {"calibrations",
     "SELECT name, cluster, created_at AS \"created (UTC)\", length(json) AS \"JSON bytes\" "
     "FROM calibrations ORDER BY name LIMIT ?1"},
    {"scenarios",
     "SELECT s.name, s.file, (SELECT count(*) FROM points p WHERE p.scenario_id = s.id) AS "
     "\"points stored\", (SELECT count(*) FROM points p WHERE p.scenario_id = s.id AND "
     "p.status = 'error') AS errors, s.updated_at AS \"updated (UTC)\" "
     "FROM scenarios s ORDER BY s.name LIMIT ?1"},
};

static const char *const kinds[] = {"runs", "searches", "calibrations", "scenarios", NULL};

const char *const *res_list_kinds(void) { return kinds; }

void res_table_free(ResTable *t) {
  if (!t) return;
  g_ptr_array_unref(t->columns);
  g_ptr_array_unref(t->rows);
  g_free(t);
}

ResTable *res_db_list(ResDb *db, const char *what, guint limit, GError **error) {
  g_return_val_if_fail(db != NULL && what != NULL, NULL);
  const Listing *l = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(listings) && !l; i++)
    if (strcmp(listings[i].kind, what) == 0) l = &listings[i];
  if (!l) {
    g_autofree char *known = g_strjoinv(", ", (char **)kinds);
    g_set_error(error, RES_ERROR, RES_ERROR_NOT_FOUND, "cannot list '%s' from a database (%s)",
                what, known);
    return NULL;
  }
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql, l->sql, -1, &st, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path,
                sqlite3_errmsg(db->sql));
    return NULL;
  }
  sqlite3_bind_int64(st, 1, limit ? (sqlite3_int64)limit : -1);
  ResTable *t = g_new0(ResTable, 1);
  t->columns = g_ptr_array_new_with_free_func(g_free);
  t->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  int n = sqlite3_column_count(st);
  for (int c = 0; c < n; c++) g_ptr_array_add(t->columns, g_strdup(sqlite3_column_name(st, c)));
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char **row = g_new0(char *, n + 1);
    for (int c = 0; c < n; c++) {
      const char *text = (const char *)sqlite3_column_text(st, c);
      row[c] = g_strdup(text && *text ? text : "-");
    }
    g_ptr_array_add(t->rows, row);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path,
                sqlite3_errmsg(db->sql));
    res_table_free(t);
    return NULL;
  }
  return t;
}
