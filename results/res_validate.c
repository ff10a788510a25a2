/* results/validate — validate runs and their steps (res_validate.h, schema v6). */
#include "results/res_db-int.h"
#include "results/res_validate.h"

#include <math.h>
#include <string.h>

static gint64 existing_id(ResDb *db, const char *hash) {
  sqlite3_stmt *st = NULL;
  gint64 id = -1;
  if (sqlite3_prepare_v2(db->sql, "SELECT id FROM validate_runs WHERE content_hash = ?", -1, &st,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) id = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return id;
}

gint64 res_db_store_validate(ResDb *db, const ResValidateRecord *r, gboolean *existing,
                             GError **error) {
  g_return_val_if_fail(db && r && r->content_hash, -1);
  if (existing) *existing = FALSE;
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *stamp = g_date_time_format_iso8601(now);
  sqlite3_stmt *st = NULL;
  gint64 id = -1;
  if (!res_sql_run(db, "BEGIN IMMEDIATE;", error)) return -1;
  /* Under the write lock: one of two concurrent ingests of the same files finds the other's. */
  gint64 found = existing_id(db, r->content_hash);
  if (found >= 0) {
    res_sql_run(db, "ROLLBACK;", NULL);
    if (existing) *existing = TRUE;
    return found;
  }
  gint64 run_id = res_db_insert_run(db, "validate", r->model, r->cluster, r->strategy);
  if (run_id < 0) goto fail;
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO validate_runs(run_id, content_hash, model, cluster, strategy, "
                         "dtype, ranks, runner, warmup, iterations, predicted_s, measured_s, "
                         "error_pct, device, host, measured_at, environment, prediction, "
                         "iterations_s, plan, created_at) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                         "ON CONFLICT(content_hash) DO NOTHING",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  sqlite3_bind_int64(st, 1, run_id);
  res_bind_text(st, 2, r->content_hash);
  res_bind_text(st, 3, r->model);
  res_bind_text(st, 4, r->cluster);
  res_bind_text(st, 5, r->strategy);
  res_bind_text(st, 6, r->dtype);
  sqlite3_bind_int(st, 7, r->ranks);
  res_bind_text(st, 8, r->runner);
  sqlite3_bind_int(st, 9, r->warmup);
  sqlite3_bind_int(st, 10, r->iterations);
  sqlite3_bind_double(st, 11, r->predicted_s);
  sqlite3_bind_double(st, 12, r->measured_s);
  sqlite3_bind_double(st, 13, 100.0 * (r->predicted_s - r->measured_s) / r->measured_s);
  res_bind_text(st, 14, r->device);
  res_bind_text(st, 15, r->host);
  res_bind_text(st, 16, r->measured_at);
  res_bind_text(st, 17, r->environment);
  res_bind_text(st, 18, r->prediction);
  res_bind_text(st, 19, r->iterations_s);
  res_bind_text(st, 20, r->plan);
  sqlite3_bind_text(st, 21, stamp, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  sqlite3_finalize(st);
  st = NULL;
  id = sqlite3_last_insert_rowid(db->sql);
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO validate_steps(validate_id, rank, step, stream, kind, "
                         "collective, name, op, phase, microbatch, predicted_s, measured_s) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  for (guint i = 0; i < r->nsteps; i++) {
    const ResValidateStep *s = &r->steps[i];
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, s->rank);
    sqlite3_bind_int(st, 3, s->step);
    res_bind_text(st, 4, s->stream);
    res_bind_text(st, 5, s->kind);
    res_bind_text(st, 6, s->collective);
    res_bind_text(st, 7, s->name);
    res_bind_text(st, 8, s->op);
    res_bind_text(st, 9, s->phase);
    sqlite3_bind_int(st, 10, s->microbatch);
    sqlite3_bind_double(st, 11, s->predicted_s);
    if (isfinite(s->measured_s)) sqlite3_bind_double(st, 12, s->measured_s);
    else sqlite3_bind_null(st, 12);
    if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (!res_sql_run(db, "COMMIT;", error)) {
    res_sql_run(db, "ROLLBACK;", NULL);
    return -1;
  }
  return id;
fail:
  g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path,
              sqlite3_errmsg(db->sql));
  sqlite3_finalize(st);
  res_sql_run(db, "ROLLBACK;", NULL);
  return -1;
}

void res_validate_run_free(ResValidateRun *r) {
  if (!r) return;
  g_free(r->model);
  g_free(r->cluster);
  g_free(r->strategy);
  g_free(r->runner);
  g_free(r->dtype);
  g_free(r->device);
  g_free(r->host);
  g_free(r->measured_at);
  g_free(r->created_at);
  g_free(r->environment);
  g_free(r);
}

static char *column_text(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? g_strdup((const char *)t) : NULL;
}

GPtrArray *res_db_load_validate_runs(ResDb *db, GError **error) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql,
                         "SELECT id, model, cluster, strategy, runner, dtype, device, host, "
                         "measured_at, created_at, ranks, iterations, predicted_s, measured_s, "
                         "error_pct, environment FROM validate_runs ORDER BY id",
                         -1, &st, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
    return NULL;
  }
  GPtrArray *runs = g_ptr_array_new_with_free_func((GDestroyNotify)res_validate_run_free);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    ResValidateRun *r = g_new0(ResValidateRun, 1);
    r->id = sqlite3_column_int64(st, 0);
    r->model = column_text(st, 1);
    r->cluster = column_text(st, 2);
    r->strategy = column_text(st, 3);
    r->runner = column_text(st, 4);
    r->dtype = column_text(st, 5);
    r->device = column_text(st, 6);
    r->host = column_text(st, 7);
    r->measured_at = column_text(st, 8);
    r->created_at = column_text(st, 9);
    r->ranks = sqlite3_column_int(st, 10);
    r->iterations = sqlite3_column_int(st, 11);
    r->predicted_s = sqlite3_column_double(st, 12);
    r->measured_s = sqlite3_column_double(st, 13);
    r->error_pct = sqlite3_column_double(st, 14);
    r->environment = column_text(st, 15);
    g_ptr_array_add(runs, r);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
    g_ptr_array_unref(runs);
    return NULL;
  }
  return runs;
}

void res_validate_group_free(ResValidateGroup *g) {
  if (!g) return;
  g_free(g->key);
  g_free(g);
}

GPtrArray *res_db_validate_groups(ResDb *db, gint64 id, const char *by, GError **error) {
  g_return_val_if_fail(db && by, NULL);
  const char *key = strcmp(by, "op") == 0
                        ? "COALESCE(op, name)"
                        : "kind || COALESCE(':' || collective, '')";
  g_autofree char *sql = g_strdup_printf(
      "SELECT %s AS key, count(*), sum(predicted_s), sum(measured_s) FROM validate_steps "
      "WHERE validate_id = ? AND measured_s IS NOT NULL GROUP BY key ORDER BY sum(measured_s) DESC, key",
      key);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
    return NULL;
  }
  sqlite3_bind_int64(st, 1, id);
  GPtrArray *groups = g_ptr_array_new_with_free_func((GDestroyNotify)res_validate_group_free);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    ResValidateGroup *g = g_new0(ResValidateGroup, 1);
    g->key = column_text(st, 0);
    g->steps = (guint)sqlite3_column_int(st, 1);
    g->predicted_s = sqlite3_column_double(st, 2);
    g->measured_s = sqlite3_column_double(st, 3);
    g_ptr_array_add(groups, g);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
    g_ptr_array_unref(groups);
    return NULL;
  }
  return groups;
}
