/* results/search — storing a `stratsim search` (tables search_runs and search_convergence,
 * schema v4); see res_db.h for the contract and results/README.md for the columns. */
#include "results/res_db-int.h"

#include <math.h>

static void bind_time(sqlite3_stmt *st, int i, double v) {
  if (isfinite(v)) sqlite3_bind_double(st, i, v);
  else sqlite3_bind_null(st, i);
}

gint64 res_db_store_search(ResDb *db, const ResSearchRecord *rec, GError **error) {
  g_return_val_if_fail(db != NULL && rec != NULL && rec->json != NULL, -1);
  g_autofree char *strategy = g_strdup_printf("search:%s", rec->algo);
  sqlite3_stmt *st = NULL;
  gint64 search_id = -1;
  if (!res_sql_run(db, "BEGIN IMMEDIATE;", error)) return -1;
  gint64 run_id = res_db_insert_run(db, "search", rec->model, rec->cluster, strategy);
  if (run_id < 0) goto fail;
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO search_runs(run_id, algo, ran, seed, threads, budget, "
                         "evaluations, simulated, over_memory, elapsed_s, complete, best_time_s, "
                         "best_memory_bytes, found_by, data_parallel_time_s, megatron_time_s, "
                         "megatron_config, weird_trick_time_s, strategy_json, json) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  sqlite3_bind_int64(st, 1, run_id);
  res_bind_text(st, 2, rec->algo);
  res_bind_text(st, 3, rec->ran);
  sqlite3_bind_int64(st, 4, rec->seed);
  sqlite3_bind_int(st, 5, rec->threads);
  res_bind_text(st, 6, rec->budget);
  sqlite3_bind_int64(st, 7, (sqlite3_int64)rec->evaluations);
  sqlite3_bind_int64(st, 8, (sqlite3_int64)rec->simulated);
  sqlite3_bind_int64(st, 9, (sqlite3_int64)rec->over_memory);
  sqlite3_bind_double(st, 10, rec->elapsed_s);
  sqlite3_bind_int(st, 11, rec->complete);
  bind_time(st, 12, rec->best_time_s);
  if (isfinite(rec->best_time_s)) sqlite3_bind_double(st, 13, rec->best_memory_bytes);
  else sqlite3_bind_null(st, 13);
  res_bind_text(st, 14, rec->found_by);
  bind_time(st, 15, rec->data_parallel_time_s);
  bind_time(st, 16, rec->megatron_time_s);
  res_bind_text(st, 17, rec->megatron_config);
  bind_time(st, 18, rec->weird_trick_time_s);
  res_bind_text(st, 19, rec->strategy_json);
  res_bind_text(st, 20, rec->json);
  if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  sqlite3_finalize(st);
  st = NULL;
  search_id = sqlite3_last_insert_rowid(db->sql);
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO search_convergence(search_id, evaluation, elapsed_s, "
                         "best_time_s) VALUES (?,?,?,?)",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  for (guint i = 0; i < rec->curve_len; i++) {
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, search_id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)rec->curve_evaluation[i]);
    sqlite3_bind_double(st, 3, rec->curve_elapsed_s[i]);
    sqlite3_bind_double(st, 4, rec->curve_best_time_s[i]);
    if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  }
  sqlite3_finalize(st);
  if (!res_sql_run(db, "COMMIT;", error)) {
    res_sql_run(db, "ROLLBACK;", NULL);
    return -1;
  }
  return search_id;
fail:
  g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
  sqlite3_finalize(st);
  res_sql_run(db, "ROLLBACK;", NULL);
  return -1;
}
