/* results/scenarios — the scenarios and points tables (res_scenarios.h). */
#include "results/res_scenarios.h"
#include "results/res_db-int.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

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
  st = NULL;
  /* Stored: whoever claimed it is done with it. */
  if (sqlite3_prepare_v2(sql, "DELETE FROM point_claims WHERE scenario_id = ? AND point_key = ?",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  sqlite3_bind_int64(st, 1, scenario_id);
  sqlite3_bind_text(st, 2, p->key, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) != SQLITE_DONE) goto fail;
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

void res_claimer_init(ResClaimer *c, double lease_s) {
  c->host = g_strdup(g_get_host_name());
  c->pid = (int)getpid();
  c->owner = g_strdup_printf("%s:%d:%" G_GINT64_FORMAT, c->host, c->pid, g_get_real_time());
  c->lease_s = lease_s;
}

void res_claimer_clear(ResClaimer *c) {
  g_clear_pointer(&c->owner, g_free);
  g_clear_pointer(&c->host, g_free);
}

static double unix_now_s(void) { return (double)g_get_real_time() / 1e6; }

/* Whether a claim of process @pid on @host may still be live: elsewhere, or on this host and
 * the process exists (kill with signal 0 only checks). */
static gboolean claim_process_alive(const ResClaimer *me, const char *host, int pid) {
  if (g_strcmp0(host, me->host) != 0) return TRUE;
  if (pid == me->pid) return TRUE;
  return !(kill((pid_t)pid, 0) != 0 && errno == ESRCH);
}

/* One row or none from @st (bound); @have tells which. FALSE on an error. */
static gboolean step_row(sqlite3_stmt *st, gboolean *have) {
  int rc = sqlite3_step(st);
  *have = rc == SQLITE_ROW;
  return rc == SQLITE_ROW || rc == SQLITE_DONE;
}

gboolean res_db_claim_point(ResDb *db, gint64 scenario_id, const char *key,
                            const ResClaimer *me, ResClaimOutcome *outcome, GError **error) {
  g_return_val_if_fail(db && key && me && me->owner && outcome, FALSE);
  sqlite3 *sql = db->sql;
  sqlite3_stmt *st = NULL;
  gboolean have = FALSE;
  if (!res_sql_run(db, "BEGIN IMMEDIATE", error)) return FALSE;
  if (sqlite3_prepare_v2(sql, "SELECT 1 FROM points WHERE scenario_id = ? AND point_key = ?", -1,
                         &st, NULL) != SQLITE_OK)
    goto fail;
  sqlite3_bind_int64(st, 1, scenario_id);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
  if (!step_row(st, &have)) goto fail;
  sqlite3_finalize(st);
  st = NULL;
  if (have) {
    *outcome = RES_CLAIM_STORED;
    return res_sql_run(db, "COMMIT", error);
  }
  if (sqlite3_prepare_v2(sql, "SELECT owner, host, pid, expires_at FROM point_claims WHERE "
                         "scenario_id = ? AND point_key = ?", -1, &st, NULL) != SQLITE_OK)
    goto fail;
  sqlite3_bind_int64(st, 1, scenario_id);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
  if (!step_row(st, &have)) goto fail;
  double now = unix_now_s();
  if (have && g_strcmp0((const char *)sqlite3_column_text(st, 0), me->owner) != 0 &&
      sqlite3_column_double(st, 3) > now &&
      claim_process_alive(me, (const char *)sqlite3_column_text(st, 1), sqlite3_column_int(st, 2))) {
    sqlite3_finalize(st);
    *outcome = RES_CLAIM_HELD;
    return res_sql_run(db, "COMMIT", error);
  }
  sqlite3_finalize(st);
  st = NULL;
  if (sqlite3_prepare_v2(sql, "INSERT OR REPLACE INTO point_claims(scenario_id, point_key, owner, "
                         "host, pid, expires_at) VALUES (?, ?, ?, ?, ?, ?)", -1, &st, NULL) != SQLITE_OK)
    goto fail;
  sqlite3_bind_int64(st, 1, scenario_id);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, me->owner, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, me->host, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 5, me->pid);
  sqlite3_bind_double(st, 6, now + me->lease_s);
  if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  sqlite3_finalize(st);
  *outcome = RES_CLAIM_TAKEN;
  return res_sql_run(db, "COMMIT", error);
fail:
  sql_fail(db, RES_ERROR_WRITE, error);
  sqlite3_finalize(st);
  sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
  return FALSE;
}

/* Runs one statement over @claimer's claims: @sql_text with the owner as ?1, the new expiry as
 * ?2 where it has one. */
static gboolean claims_statement(ResDb *db, const ResClaimer *me, const char *sql_text,
                                 GError **error) {
  sqlite3_stmt *st = NULL;
  gboolean ok = sqlite3_prepare_v2(db->sql, sql_text, -1, &st, NULL) == SQLITE_OK;
  if (ok) {
    sqlite3_bind_text(st, 1, me->owner, -1, SQLITE_TRANSIENT);
    if (sqlite3_bind_parameter_count(st) > 1) sqlite3_bind_double(st, 2, unix_now_s() + me->lease_s);
    ok = sqlite3_step(st) == SQLITE_DONE;
  }
  if (!ok) sql_fail(db, RES_ERROR_WRITE, error);
  sqlite3_finalize(st);
  return ok;
}

gboolean res_db_renew_claims(ResDb *db, const ResClaimer *me, GError **error) {
  return claims_statement(db, me, "UPDATE point_claims SET expires_at = ?2 WHERE owner = ?1", error);
}

gboolean res_db_release_claims(ResDb *db, const ResClaimer *me, GError **error) {
  return claims_statement(db, me, "DELETE FROM point_claims WHERE owner = ?1", error);
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
