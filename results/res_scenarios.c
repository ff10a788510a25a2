/* results/scenarios — the scenarios and points tables (res_scenarios.h). */
#include "results/res_scenarios.h"
#include "results/res_db-int.h"

#include <string.h>

void res_point_free(ResPoint *p) {
  if (!p) return;
  g_free(p->key);
  g_free(p->model);
  g_free(p->cluster);
  g_free(p->strategy);
  g_free(p->label);
  g_free(p->axes);
  g_free(p->error);
  g_free(p->prediction);
  g_free(p->created_at);
  g_free(p);
}

static gboolean sql_fail(ResDb *db, int code, GError **error) {
  g_set_error(error, RES_ERROR, code, "database %s: %s", db->path,
              sqlite3_errmsg(db->sql));
  return FALSE;
}

static char *now_iso8601(void) {
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  return g_date_time_format_iso8601(now);
}

gint64 res_db_store_scenario(ResDb *db, const char *name, const char *file, const char *json,
                             GError **error) {
  g_return_val_if_fail(db && name && json, -1);
  sqlite3 *sql = db->sql;
  g_autofree char *stamp = now_iso8601();
  sqlite3_stmt *st = NULL;
  gint64 id = -1;
  if (sqlite3_prepare_v2(sql,
                         "INSERT INTO scenarios(name, file, json, created_at, updated_at) "
                         "VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT(name) DO UPDATE SET "
                         "file = excluded.file, json = excluded.json, updated_at = excluded.updated_at "
                         "RETURNING id",
                         -1, &st, NULL) != SQLITE_OK) {
    sql_fail(db, RES_ERROR_WRITE, error);
    return -1;
  }
  sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
  if (file) sqlite3_bind_text(st, 2, file, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, 2);
  sqlite3_bind_text(st, 3, json, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, stamp, -1, SQLITE_TRANSIENT);
  /* One statement: its own transaction. */
  if (sqlite3_step(st) == SQLITE_ROW) id = sqlite3_column_int64(st, 0);
  if (sqlite3_step(st) != SQLITE_DONE || id < 0) {
    sql_fail(db, RES_ERROR_WRITE, error);
    id = -1;
  }
  sqlite3_finalize(st);
  return id;
}

gint64 res_db_find_scenario(ResDb *db, const char *name, char **json, char **file,
                            GError **error) {
  sqlite3 *sql = db->sql;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(sql, "SELECT id, json, file FROM scenarios WHERE name = ?", -1, &st,
                         NULL) != SQLITE_OK) {
    sql_fail(db, RES_ERROR_OPEN, error);
    return -1;
  }
  sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    gint64 id = sqlite3_column_int64(st, 0);
    if (json) *json = g_strdup((const char *)sqlite3_column_text(st, 1));
    if (file) *file = g_strdup((const char *)sqlite3_column_text(st, 2)); /* NULL stays NULL */
    sqlite3_finalize(st);
    return id;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    sql_fail(db, RES_ERROR_OPEN, error);
    return -1;
  }
  GString *names = g_string_new(NULL);
  if (sqlite3_prepare_v2(sql, "SELECT name FROM scenarios ORDER BY name", -1, &st, NULL) == SQLITE_OK)
    while (sqlite3_step(st) == SQLITE_ROW)
      g_string_append_printf(names, "%s%s", names->len ? ", " : "", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  g_set_error(error, RES_ERROR, RES_ERROR_NOT_FOUND,
              "no scenario named '%s' in %s (%s%s); run 'stratsim sweep FILE' first", name,
              db->path, names->len ? "stored: " : "none stored", names->str);
  g_string_free(names, TRUE);
  return -1;
}

GHashTable *res_db_point_keys(ResDb *db, gint64 scenario_id, GError **error) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql, "SELECT point_key FROM points WHERE scenario_id = ?",
                         -1, &st, NULL) != SQLITE_OK) {
    sql_fail(db, RES_ERROR_OPEN, error);
    return NULL;
  }
  sqlite3_bind_int64(st, 1, scenario_id);
  GHashTable *keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    g_hash_table_add(keys, g_strdup((const char *)sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    g_hash_table_destroy(keys);
    sql_fail(db, RES_ERROR_OPEN, error);
    return NULL;
  }
  return keys;
}

gboolean res_db_store_point(ResDb *db, gint64 scenario_id, const ResPoint *p, gboolean *inserted,
                            GError **error) {
  g_return_val_if_fail(db && p && p->key, FALSE);
  sqlite3 *sql = db->sql;
  g_autofree char *stamp = now_iso8601();
  sqlite3_stmt *st = NULL;
  char *msg = NULL;
  if (sqlite3_exec(sql, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path, msg ? msg : "error");
    sqlite3_free(msg);
    return FALSE;
  }
  if (sqlite3_prepare_v2(sql,
                         "INSERT INTO points(scenario_id, point_key, idx, model, cluster, strategy, "
                         "label, axes, status, error, num_gpus, iteration_time_s, samples_per_s, "
                         "tflops_per_gpu, mfu, compute_s, comm_exposed_s, bubble_s, "
                         "peak_memory_bytes, memory_capacity_bytes, fits_memory, prediction, "
                         "created_at, host_bound_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                         "ON CONFLICT(scenario_id, point_key) DO NOTHING",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  int i = 1;
  sqlite3_bind_int64(st, i++, scenario_id);
  sqlite3_bind_text(st, i++, p->key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, i++, p->index);
  sqlite3_bind_text(st, i++, p->model, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, p->cluster, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, p->strategy, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, p->label ? p->label : p->strategy, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, p->axes ? p->axes : "{}", -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, p->ok ? "ok" : "error", -1, SQLITE_STATIC);
  if (p->error) sqlite3_bind_text(st, i++, p->error, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, i++);
  if (p->has_prediction) {
    sqlite3_bind_int(st, i++, p->num_gpus);
    double figures[] = {p->iteration_time_s, p->samples_per_s, p->tflops_per_gpu, p->mfu,
                        p->compute_s,        p->comm_exposed_s, p->bubble_s,
                        p->peak_memory_bytes, p->memory_capacity_bytes};
    for (gsize k = 0; k < G_N_ELEMENTS(figures); k++) sqlite3_bind_double(st, i++, figures[k]);
    sqlite3_bind_int(st, i++, p->fits_memory);
    sqlite3_bind_text(st, i++, p->prediction ? p->prediction : "{}", -1, SQLITE_TRANSIENT);
  } else {
    for (int k = 0; k < 12; k++) sqlite3_bind_null(st, i++);
  }
  sqlite3_bind_text(st, i++, stamp, -1, SQLITE_TRANSIENT);
  if (p->has_prediction) sqlite3_bind_double(st, i++, p->host_bound_s);
  else sqlite3_bind_null(st, i++);
  if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  if (inserted) *inserted = sqlite3_changes(sql) > 0;
  sqlite3_finalize(st);
  if (sqlite3_exec(sql, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path, msg ? msg : "error");
    sqlite3_free(msg);
    sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
    return FALSE;
  }
  return TRUE;
fail:
  sql_fail(db, RES_ERROR_WRITE, error);
  sqlite3_finalize(st);
  sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
  return FALSE;
}

static char *column_text(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? g_strdup((const char *)t) : NULL;
}

GPtrArray *res_db_load_points(ResDb *db, gint64 scenario_id, GError **error) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql,
                         "SELECT point_key, idx, model, cluster, strategy, label, axes, status, "
                         "error, num_gpus, iteration_time_s, samples_per_s, tflops_per_gpu, mfu, "
                         "compute_s, comm_exposed_s, bubble_s, peak_memory_bytes, "
                         "memory_capacity_bytes, fits_memory, prediction, created_at, "
                         "host_bound_s FROM points WHERE scenario_id = ? ORDER BY id",
                         -1, &st, NULL) != SQLITE_OK) {
    sql_fail(db, RES_ERROR_OPEN, error);
    return NULL;
  }
  sqlite3_bind_int64(st, 1, scenario_id);
  GPtrArray *points = g_ptr_array_new_with_free_func((GDestroyNotify)res_point_free);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    ResPoint *p = g_new0(ResPoint, 1);
    p->key = column_text(st, 0);
    p->index = sqlite3_column_int(st, 1);
    p->model = column_text(st, 2);
    p->cluster = column_text(st, 3);
    p->strategy = column_text(st, 4);
    p->label = column_text(st, 5);
    p->axes = column_text(st, 6);
    p->ok = g_strcmp0((const char *)sqlite3_column_text(st, 7), "ok") == 0;
    p->error = column_text(st, 8);
    p->has_prediction = sqlite3_column_type(st, 9) != SQLITE_NULL;
    if (p->has_prediction) {
      p->num_gpus = sqlite3_column_int(st, 9);
      p->iteration_time_s = sqlite3_column_double(st, 10);
      p->samples_per_s = sqlite3_column_double(st, 11);
      p->tflops_per_gpu = sqlite3_column_double(st, 12);
      p->mfu = sqlite3_column_double(st, 13);
      p->compute_s = sqlite3_column_double(st, 14);
      p->comm_exposed_s = sqlite3_column_double(st, 15);
      p->bubble_s = sqlite3_column_double(st, 16);
      p->peak_memory_bytes = sqlite3_column_double(st, 17);
      p->memory_capacity_bytes = sqlite3_column_double(st, 18);
      p->fits_memory = sqlite3_column_int(st, 19);
      p->prediction = column_text(st, 20);
      p->host_bound_s = sqlite3_column_double(st, 22); /* NULL (older rows): 0 */
    }
    p->created_at = column_text(st, 21);
    g_ptr_array_add(points, p);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    g_ptr_array_free(points, TRUE);
    sql_fail(db, RES_ERROR_OPEN, error);
    return NULL;
  }
  return points;
}
