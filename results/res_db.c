/* results — SQLite storage of runs and predictions; see res_db.h for the contract. */
#include "results/res_db-int.h"
#include "costmodel/cm_profile.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(res-error-quark, res_error)

/* Migration i brings a database from schema version i to i + 1. */
static const char *const migrations[RES_SCHEMA_VERSION] = {
    /* v0 -> v1 */
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  created_at TEXT NOT NULL,"          /* ISO 8601 UTC */
    "  command TEXT NOT NULL,"             /* simulate, search, sweep, ... */
    "  model TEXT NOT NULL,"
    "  cluster TEXT NOT NULL,"
    "  strategy TEXT NOT NULL,"
    "  stratsim_version TEXT NOT NULL);"
    "CREATE TABLE predictions ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  iteration_time_s REAL NOT NULL,"
    "  samples_per_s REAL NOT NULL,"
    "  tflops_per_gpu REAL NOT NULL,"
    "  mfu REAL NOT NULL,"
    "  compute_s REAL NOT NULL,"
    "  comm_exposed_s REAL NOT NULL,"
    "  bubble_s REAL NOT NULL,"
    "  peak_memory_bytes REAL NOT NULL,"
    "  fits_memory INTEGER NOT NULL,"
    "  num_gpus INTEGER NOT NULL,"
    "  tasks INTEGER NOT NULL,"
    "  json TEXT NOT NULL);"
    "CREATE INDEX predictions_run ON predictions(run_id);",
    /* v1 -> v2 */
    "CREATE TABLE calibrations ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"         /* what --calibration NAME refers to */
    "  cluster TEXT NOT NULL,"             /* the cluster spec as typed */
    "  created_at TEXT NOT NULL,"          /* ISO 8601 UTC */
    "  json TEXT NOT NULL);",              /* costmodel/CALIBRATION.md */
    /* v2 -> v3 */
    "CREATE TABLE op_profiles ("
    "  device TEXT NOT NULL,"               /* device kind, e.g. a100-80gb */
    "  op TEXT NOT NULL,"                   /* op kind (mdl_op_kind_name) */
    "  dtype TEXT NOT NULL,"
    "  phase TEXT NOT NULL,"                /* forward | backward (other kinds than GEMMs) */
    "  m REAL NOT NULL, n REAL NOT NULL, k REAL NOT NULL, batch REAL NOT NULL," /* GEMMs, else 0 */
    "  elements REAL NOT NULL,"             /* other kinds, else 0 */
    "  time_s REAL NOT NULL,"
    "  source TEXT NOT NULL,"               /* where and how it was measured */
    "  created_at TEXT NOT NULL,"
    "  PRIMARY KEY (device, op, dtype, phase, m, n, k, batch, elements));",
    /* v3 -> v4 */
    "CREATE TABLE search_runs ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  algo TEXT NOT NULL,"                 /* as asked: mcmc, cd, exhaustive, random, grid, auto */
    "  ran TEXT NOT NULL,"                  /* what auto resolved to */
    "  seed INTEGER NOT NULL,"
    "  threads INTEGER NOT NULL,"
    "  budget TEXT NOT NULL,"               /* as typed: 500, 60s, 2m */
    "  evaluations INTEGER NOT NULL,"
    "  simulated INTEGER NOT NULL,"
    "  over_memory INTEGER NOT NULL,"
    "  elapsed_s REAL NOT NULL,"
    "  complete INTEGER NOT NULL,"          /* exhaustive or grid covered everything */
    "  best_time_s REAL,"                   /* NULL: nothing fit */
    "  best_memory_bytes REAL,"
    "  found_by TEXT,"
    "  data_parallel_time_s REAL,"          /* baselines; NULL: absent or does not fit */
    "  megatron_time_s REAL,"
    "  megatron_config TEXT,"
    "  weird_trick_time_s REAL,"
    "  strategy_json TEXT,"                 /* the winner (model/STRATEGY.md) */
    "  json TEXT NOT NULL);"                /* the whole `search --json` object */
    "CREATE INDEX search_runs_run ON search_runs(run_id);"
    "CREATE TABLE search_convergence ("
    "  search_id INTEGER NOT NULL REFERENCES search_runs(id) ON DELETE CASCADE,"
    "  evaluation INTEGER NOT NULL,"        /* when the best improved */
    "  elapsed_s REAL NOT NULL,"
    "  best_time_s REAL NOT NULL,"
    "  PRIMARY KEY (search_id, evaluation));",
    /* v4 -> v5: sweeps (scenarios/scn_sweep.h); UNIQUE (scenario_id, point_key) is what makes
     * a killed and rerun sweep store every point exactly once. */
    "CREATE TABLE scenarios ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"          /* the scenario file's "name" */
    "  file TEXT,"                          /* the file it was last swept from */
    "  json TEXT NOT NULL,"                 /* the scenario as last swept */
    "  created_at TEXT NOT NULL,"           /* ISO 8601 UTC */
    "  updated_at TEXT NOT NULL);"
    "CREATE TABLE points ("
    "  id INTEGER PRIMARY KEY,"
    "  scenario_id INTEGER NOT NULL REFERENCES scenarios(id) ON DELETE CASCADE,"
    "  point_key TEXT NOT NULL,"            /* SHA-256 of the substituted specs and options */
    "  idx INTEGER NOT NULL,"               /* position in the expansion when stored */
    "  model TEXT NOT NULL, cluster TEXT NOT NULL, strategy TEXT NOT NULL," /* substituted specs */
    "  label TEXT NOT NULL,"                /* the strategy's label */
    "  axes TEXT NOT NULL,"                 /* JSON object of the axis values */
    "  status TEXT NOT NULL CHECK (status IN ('ok', 'error')),"
    "  error TEXT,"                         /* why it failed or does not fit */
    "  num_gpus INTEGER, iteration_time_s REAL, samples_per_s REAL, tflops_per_gpu REAL,"
    "  mfu REAL, compute_s REAL, comm_exposed_s REAL, bubble_s REAL, peak_memory_bytes REAL,"
    "  memory_capacity_bytes REAL, fits_memory INTEGER," /* NULL when not simulated */
    "  prediction TEXT,"                    /* the simulate --json object, or NULL */
    "  created_at TEXT NOT NULL,"
    "  UNIQUE (scenario_id, point_key));",
    /* v5 -> v6: validate runs (validate/README.md); UNIQUE content_hash is what makes ingesting
     * the same plan and measurements twice store them once. */
    "CREATE TABLE validate_runs ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  content_hash TEXT NOT NULL UNIQUE,"  /* SHA-256 of the plan and measurements texts */
    "  model TEXT NOT NULL, cluster TEXT NOT NULL, strategy TEXT NOT NULL," /* the plan's specs */
    "  dtype TEXT NOT NULL,"
    "  ranks INTEGER NOT NULL,"
    "  runner TEXT NOT NULL,"               /* gpu | cpu */
    "  warmup INTEGER NOT NULL,"
    "  iterations INTEGER NOT NULL,"        /* timed iterations measured */
    "  predicted_s REAL NOT NULL,"          /* the plan's predicted iteration time */
    "  measured_s REAL NOT NULL,"           /* median measured iteration time */
    "  error_pct REAL NOT NULL,"            /* 100 (predicted - measured) / measured */
    "  device TEXT,"                        /* environment.device */
    "  host TEXT,"                          /* environment.host */
    "  measured_at TEXT,"                   /* environment.date */
    "  environment TEXT NOT NULL,"          /* the measurements' environment object (JSON) */
    "  prediction TEXT NOT NULL,"           /* the plan's predicted object (JSON) */
    "  iterations_s TEXT NOT NULL,"         /* JSON array of the timed iterations */
    "  plan TEXT NOT NULL,"                 /* the whole plan (JSON) */
    "  created_at TEXT NOT NULL);"
    "CREATE INDEX validate_runs_run ON validate_runs(run_id);"
    "CREATE TABLE validate_steps ("
    "  validate_id INTEGER NOT NULL REFERENCES validate_runs(id) ON DELETE CASCADE,"
    "  rank INTEGER NOT NULL,"
    "  step INTEGER NOT NULL,"              /* the plan's step id */
    "  stream TEXT NOT NULL,"               /* compute | comm */
    "  kind TEXT NOT NULL,"                 /* gemm, elementwise, collective, send, recv */
    "  collective TEXT,"                    /* all_reduce, ... for collectives */
    "  name TEXT NOT NULL,"
    "  op TEXT,"                            /* the op it computes or feeds, NULL if none */
    "  phase TEXT,"
    "  microbatch INTEGER,"
    "  predicted_s REAL NOT NULL,"
    "  measured_s REAL,"                    /* median over timed iterations; NULL: not measured */
    "  PRIMARY KEY (validate_id, rank, step));",
    /* v6 -> v7: claims of sweep points (results/res_scenarios.h), so that sweeps of one
     * scenario running at once share its points instead of each simulating all of them. */
    "CREATE TABLE point_claims ("
    "  scenario_id INTEGER NOT NULL REFERENCES scenarios(id) ON DELETE CASCADE,"
    "  point_key TEXT NOT NULL,"
    "  owner TEXT NOT NULL,"                /* host:pid:start of the claiming sweep */
    "  host TEXT NOT NULL,"                 /* its host name and process id: a claim of a */
    "  pid INTEGER NOT NULL,"               /* process gone from this host is free at once */
    "  expires_at REAL NOT NULL,"           /* Unix seconds: the lease, renewed while it runs */
    "  PRIMARY KEY (scenario_id, point_key));",
    /* v7 -> v8: the breakdown's host-bound time (sim/sim_build_host.c); NULL in older rows (0).
     * One migration of two statements: the parentheses tell clang the concatenation is meant. */
    ("ALTER TABLE predictions ADD COLUMN host_bound_s REAL;"
     "ALTER TABLE points ADD COLUMN host_bound_s REAL;"),
};

static gboolean exec(ResDb *db, const char *sql, int code, GError **error) {
  char *msg = NULL;
  if (sqlite3_exec(db->sql, sql, NULL, NULL, &msg) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, code, "database %s: %s", db->path, msg ? msg : "error");
    sqlite3_free(msg);
    return FALSE;
  }
  return TRUE;
}

/* Reads PRAGMA user_version into @out; FALSE when it cannot be read (not a database). A stored
 * version may be any integer, negative ones included, so failure is not a value. */
static gboolean read_version(sqlite3 *sql, int *out) {
  sqlite3_stmt *st = NULL;
  gboolean ok = sqlite3_prepare_v2(sql, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
                sqlite3_step(st) == SQLITE_ROW;
  if (ok) *out = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return ok;
}

int res_db_schema_version(ResDb *db) {
  int v = -1;
  return read_version(db->sql, &v) ? v : -1;
}

const char *const res_tables_of_version[RES_SCHEMA_VERSION][3] = {
    {"runs", "predictions", NULL},
    {"calibrations", NULL, NULL},
    {"op_profiles", NULL, NULL},
    {"search_runs", "search_convergence", NULL},
    {"scenarios", "points", NULL},
    {"validate_runs", "validate_steps", NULL},
    {"point_claims", NULL, NULL},
    {NULL, NULL, NULL}, /* v8: columns only (host_bound_s) */
};

gboolean res_table_exists(sqlite3 *sql, const char *table) {
  sqlite3_stmt *st = NULL;
  gboolean found = FALSE;
  if (sqlite3_prepare_v2(sql, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1,
                         &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
  }
  sqlite3_finalize(st);
  return found;
}

const char *res_table_ahead_of_version(sqlite3 *sql, int version, int *added_in) {
  for (int v = MAX(version, 0); v < RES_SCHEMA_VERSION; v++)
    for (int k = 0; k < 3 && res_tables_of_version[v][k]; k++)
      if (res_table_exists(sql, res_tables_of_version[v][k])) {
        if (added_in) *added_in = v + 1;
        return res_tables_of_version[v][k];
      }
  return NULL;
}

/* Under the write lock, before migrating from @v: a version no stratsim writes, or tables that
 * a later version adds already there (user_version set back by hand), are refused, naming the
 * version and the table, rather than failing inside a migration. */
static gboolean version_sane(ResDb *db, int v, GError **error) {
  if (v < 0) {
    g_set_error(error, RES_ERROR, RES_ERROR_SCHEMA,
                "database %s has schema version %d (PRAGMA user_version), which no stratsim "
                "writes (versions are 0 to %d): not a stratsim database, or changed by hand",
                db->path, v, RES_SCHEMA_VERSION);
    return FALSE;
  }
  int added_in = 0;
  const char *ahead = res_table_ahead_of_version(db->sql, v, &added_in);
  if (ahead) {
    g_set_error(error, RES_ERROR, RES_ERROR_SCHEMA,
                "database %s has schema version %d (PRAGMA user_version) but already has table "
                "%s of version %d: the version was changed by hand; the file is left as it is",
                db->path, v, ahead, added_in);
    return FALSE;
  }
  return TRUE;
}

static gboolean migrate(ResDb *db, GError **error) {
  int v = 0;
  if (!read_version(db->sql, &v)) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path,
                sqlite3_errmsg(db->sql));
    return FALSE;
  }
  if (v > RES_SCHEMA_VERSION) {
    g_set_error(error, RES_ERROR, RES_ERROR_SCHEMA,
                "database %s has schema version %d, newer than this stratsim's %d", db->path, v,
                RES_SCHEMA_VERSION);
    return FALSE;
  }
  if (v < 0) return version_sane(db, v, error);
  while (v < RES_SCHEMA_VERSION) {
    if (!exec(db, "BEGIN IMMEDIATE;", RES_ERROR_SCHEMA, error)) return FALSE;
    /* Read again under the write lock: another process may have migrated meanwhile (two
     * stratsim runs opening a new database at once). */
    if (!read_version(db->sql, &v)) v = -1;
    if (v < 0 || v > RES_SCHEMA_VERSION) {
      g_set_error(error, RES_ERROR, RES_ERROR_SCHEMA, "database %s: schema version %d changed "
                  "while opening it (a newer stratsim?)", db->path, v);
      exec(db, "ROLLBACK;", RES_ERROR_SCHEMA, NULL);
      return FALSE;
    }
    if (v == RES_SCHEMA_VERSION) {
      if (!exec(db, "COMMIT;", RES_ERROR_SCHEMA, error)) return FALSE;
      break;
    }
    if (!version_sane(db, v, error)) {
      exec(db, "ROLLBACK;", RES_ERROR_SCHEMA, NULL);
      return FALSE;
    }
    g_autofree char *bump = g_strdup_printf("PRAGMA user_version = %d;", v + 1);
    if (!exec(db, migrations[v], RES_ERROR_SCHEMA, error) ||
        !exec(db, bump, RES_ERROR_SCHEMA, error)) {
      exec(db, "ROLLBACK;", RES_ERROR_SCHEMA, NULL);
      return FALSE;
    }
    if (!exec(db, "COMMIT;", RES_ERROR_SCHEMA, error)) return FALSE;
    v++;
  }
  return TRUE;
}

/* WAL mode (persistent in the file). Switching to it takes an exclusive lock and SQLite answers
 * SQLITE_BUSY at once instead of calling the busy handler, so two stratsim runs creating one
 * database together retry here (every 10 ms, up to the busy timeout). */
static gboolean set_wal(ResDb *db, GError **error) {
  for (int attempt = 0;; attempt++) {
    char *msg = NULL;
    int rc = sqlite3_exec(db->sql, "PRAGMA journal_mode=WAL;", NULL, NULL, &msg);
    if (rc == SQLITE_OK) return TRUE;
    if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && attempt < 1000) {
      sqlite3_free(msg);
      g_usleep(10000);
      continue;
    }
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, msg ? msg : "error");
    sqlite3_free(msg);
    return FALSE;
  }
}

static ResDb *open_file(const char *path, gboolean no_checkpoint, GError **error);

/* Makes a new database at @path whole or not at all (a process killed while creating it leaves
 * no half-made file that a later read-only open could not read): the schema is written into a
 * temporary file beside it, checkpointed into that file, and the file linked to @path, which
 * fails harmlessly when another process made @path meanwhile (its database is then used).
 * TRUE when @path exists afterwards. A process killed here leaves only its temporary
 * PATH.new-PID-TIME, which nothing reads. */
static gboolean create_whole(const char *path, GError **error) {
  g_autofree char *tmp = g_strdup_printf("%s.new-%d-%" G_GINT64_FORMAT, path, (int)getpid(),
                                         g_get_monotonic_time());
  ResDb *db = open_file(tmp, FALSE, error);
  gboolean ok = db && exec(db, "PRAGMA wal_checkpoint(TRUNCATE);", RES_ERROR_OPEN, error);
  res_db_close(db); /* the last connection: the WAL is checkpointed and removed */
  if (ok && link(tmp, path) != 0 && errno != EEXIST) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "cannot create database %s: %s", path,
                g_strerror(errno));
    ok = FALSE;
  }
  static const char *const made[] = {"", "-wal", "-shm"};
  for (gsize i = 0; i < G_N_ELEMENTS(made); i++) {
    g_autofree char *f = g_strconcat(tmp, made[i], NULL);
    g_unlink(f);
  }
  return ok;
}

ResDb *res_db_open(const char *path, GError **error) {
  g_autofree char *dir = g_path_get_dirname(path);
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "cannot create directory %s for database %s",
                dir, path);
    return NULL;
  }
  if (!g_file_test(path, G_FILE_TEST_EXISTS) && !create_whole(path, error)) return NULL;
  return open_file(path, TRUE, error);
}

/* Opens (creating when missing) and migrates the database at @path in WAL mode; @no_checkpoint:
 * the WAL stays when the connection closes (see below). */
static ResDb *open_file(const char *path, gboolean no_checkpoint, GError **error) {
  ResDb *db = g_new0(ResDb, 1);
  db->path = g_strdup(path);
  if (sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "cannot open database %s: %s", path,
                db->sql ? sqlite3_errmsg(db->sql) : "out of memory");
    res_db_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db->sql, 10000);
  /* A stored run costs no fsync (issue 13 item 5: five fdatasync calls were 20 ms of a 28 ms
   * `simulate`). In WAL mode with synchronous=NORMAL a commit appends to the WAL without a sync:
   * a killed process loses nothing committed (the OS holds the pages), a power cut may lose the
   * last commits but never corrupts the file (sqlite.org/pragma.html#pragma_synchronous, "WAL
   * mode is safe from corruption with synchronous=NORMAL"). The last connection closing would
   * checkpoint (four syncs, the WAL deleted and made again next run): the WAL stays instead and
   * SQLite's automatic checkpoint (every 1000 pages) moves it into the file, so the database is
   * the file with its -wal beside it (copy it with `sqlite3 DB ".backup COPY"`). */
  if (no_checkpoint) sqlite3_db_config(db->sql, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
  /* journal_mode=WAL reads the file header: a file that is not a database fails here. */
  if (!set_wal(db, error) || !exec(db, "PRAGMA synchronous=NORMAL;", RES_ERROR_OPEN, error) ||
      !exec(db, "PRAGMA foreign_keys=ON;", RES_ERROR_OPEN, error) ||
      !migrate(db, error)) {
    res_db_close(db);
    return NULL;
  }
  return db;
}

ResDb *res_db_open_read_only(const char *path, GError **error) {
  ResDb *db = g_new0(ResDb, 1);
  db->path = g_strdup(path);
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR) ||
      sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "cannot open database %s: %s", path,
                db->sql ? sqlite3_errmsg(db->sql) : "no such file");
    res_db_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db->sql, 10000);
  int version = 0;
  if (!read_version(db->sql, &version)) {
    /* Not a database, or a WAL left by a killed writer that only a writer can recover. */
    gboolean recover = sqlite3_errcode(db->sql) == SQLITE_READONLY;
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "cannot read database %s read-only: %s%s", path,
                sqlite3_errmsg(db->sql),
                recover ? " (run once without --no-store to recover it)" : "");
    res_db_close(db);
    return NULL;
  }
  /* A version no stratsim writes, or set back by hand, is named as such (version_sane). */
  if (version != RES_SCHEMA_VERSION && version <= RES_SCHEMA_VERSION &&
      !version_sane(db, version, error)) {
    res_db_close(db);
    return NULL;
  }
  if (version != RES_SCHEMA_VERSION) {
    g_set_error(error, RES_ERROR, RES_ERROR_SCHEMA,
                "database %s has schema version %d, this stratsim reads %d (open it once "
                "without --no-store to migrate it)", path, version, RES_SCHEMA_VERSION);
    res_db_close(db);
    return NULL;
  }
  return db;
}

void res_db_close(ResDb *db) {
  if (!db) return;
  sqlite3_close(db->sql);
  g_free(db->path);
  g_free(db);
}

static gboolean step_done(ResDb *db, sqlite3_stmt *st, GError **error) {
  if (sqlite3_step(st) != SQLITE_DONE) {
    g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path,
                sqlite3_errmsg(db->sql));
    return FALSE;
  }
  return TRUE;
}

gint64 res_db_insert_run(ResDb *db, const char *command, const char *model, const char *cluster,
                         const char *strategy) {
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *stamp = g_date_time_format_iso8601(now);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO runs(created_at, command, model, cluster, strategy, "
                         "stratsim_version) VALUES (?, ?, ?, ?, ?, ?)",
                         -1, &st, NULL) != SQLITE_OK)
    return -1;
  const char *texts[5] = {stamp, command, model, cluster, strategy};
  for (int i = 0; i < 5; i++) {
    if (texts[i]) sqlite3_bind_text(st, i + 1, texts[i], -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i + 1);
  }
  sqlite3_bind_text(st, 6, STRATSIM_VERSION_STRING, -1, SQLITE_STATIC);
  gint64 id = sqlite3_step(st) == SQLITE_DONE ? sqlite3_last_insert_rowid(db->sql) : -1;
  sqlite3_finalize(st);
  return id;
}

gint64 res_db_store_simulation(ResDb *db, const char *model_spec, const char *cluster_spec,
                               const char *strategy_spec, const SimRun *run, GError **error) {
  const SimPrediction *p = sim_run_prediction(run);
  sqlite3_stmt *st = NULL;
  gint64 run_id = -1;
  g_autofree char *json = sim_prediction_to_json(run, TRUE);
  if (!exec(db, "BEGIN IMMEDIATE;", RES_ERROR_WRITE, error)) return -1;
  run_id = res_db_insert_run(db, "simulate", model_spec, cluster_spec, strategy_spec);
  if (run_id < 0) goto fail;
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO predictions(run_id, iteration_time_s, samples_per_s, "
                         "tflops_per_gpu, mfu, compute_s, comm_exposed_s, bubble_s, "
                         "peak_memory_bytes, fits_memory, num_gpus, tasks, json, host_bound_s) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_double(st, 2, p->iteration_time_s);
  sqlite3_bind_double(st, 3, p->samples_per_s);
  sqlite3_bind_double(st, 4, p->tflops_per_gpu);
  sqlite3_bind_double(st, 5, p->mfu);
  sqlite3_bind_double(st, 6, p->compute_s);
  sqlite3_bind_double(st, 7, p->comm_exposed_s);
  sqlite3_bind_double(st, 8, p->bubble_s);
  sqlite3_bind_double(st, 9, p->peak_memory_bytes);
  sqlite3_bind_int(st, 10, p->fits_memory);
  sqlite3_bind_int(st, 11, p->num_gpus);
  sqlite3_bind_int64(st, 12, (sqlite3_int64)p->tasks);
  sqlite3_bind_text(st, 13, json, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 14, p->host_bound_s);
  if (!step_done(db, st, error)) goto rollback;
  sqlite3_finalize(st);
  if (!exec(db, "COMMIT;", RES_ERROR_WRITE, error)) {
    exec(db, "ROLLBACK;", RES_ERROR_WRITE, NULL);
    return -1;
  }
  return run_id;
fail:
  g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path,
              sqlite3_errmsg(db->sql));
rollback:
  sqlite3_finalize(st);
  exec(db, "ROLLBACK;", RES_ERROR_WRITE, NULL);
  return -1;
}

gboolean res_db_store_calibration(ResDb *db, const char *name, const char *cluster,
                                  const char *json, GError **error) {
  g_return_val_if_fail(db != NULL && name != NULL && cluster != NULL && json != NULL, FALSE);
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *stamp = g_date_time_format_iso8601(now);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT INTO calibrations(name, cluster, created_at, json) "
                         "VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                         "cluster = excluded.cluster, created_at = excluded.created_at, "
                         "json = excluded.json",
                         -1, &st, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path,
                sqlite3_errmsg(db->sql));
    return FALSE;
  }
  sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, cluster, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, stamp, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, json, -1, SQLITE_TRANSIENT);
  gboolean ok = step_done(db, st, error); /* one statement: its own transaction */
  sqlite3_finalize(st);
  return ok;
}

char *res_db_load_calibration(ResDb *db, const char *name, char **cluster, GError **error) {
  g_return_val_if_fail(db != NULL && name != NULL, NULL);
  sqlite3_stmt *st = NULL;
  char *json = NULL;
  if (sqlite3_prepare_v2(db->sql, "SELECT json, cluster FROM calibrations WHERE name = ?", -1,
                         &st, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path,
                sqlite3_errmsg(db->sql));
    return NULL;
  }
  sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    json = g_strdup((const char *)sqlite3_column_text(st, 0));
    if (cluster) *cluster = g_strdup((const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    return json;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path,
                sqlite3_errmsg(db->sql));
    return NULL;
  }
  /* Not there: say what is. */
  GString *names = g_string_new(NULL);
  if (sqlite3_prepare_v2(db->sql, "SELECT name FROM calibrations ORDER BY name", -1, &st, NULL) ==
      SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW)
      g_string_append_printf(names, "%s%s", names->len ? ", " : "",
                             (const char *)sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  g_set_error(error, RES_ERROR, RES_ERROR_NOT_FOUND,
              "no calibration named '%s' in %s (%s%s); make one with 'stratsim calibrate'", name,
              db->path, names->len ? "stored: " : "none stored", names->str);
  g_string_free(names, TRUE);
  return NULL;
}

gint64 res_db_count(ResDb *db, const char *table, GError **error) {
  if (strcmp(table, "runs") != 0 && strcmp(table, "predictions") != 0 &&
      strcmp(table, "calibrations") != 0 && strcmp(table, "search_runs") != 0 &&
      strcmp(table, "search_convergence") != 0) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "unknown table %s", table);
    return -1;
  }
  g_autofree char *sql = g_strdup_printf("SELECT count(*) FROM %s", table);
  sqlite3_stmt *st = NULL;
  gint64 n = -1;
  if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  else
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
  sqlite3_finalize(st);
  return n;
}

gint64 res_db_store_profiles(ResDb *db, const CmProfiles *profiles, const char *source,
                             GError **error) {
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *stamp = g_date_time_format_iso8601(now);
  sqlite3_stmt *st = NULL;
  if (!exec(db, "BEGIN IMMEDIATE;", RES_ERROR_WRITE, error)) return -1;
  if (sqlite3_prepare_v2(db->sql,
                         "INSERT OR REPLACE INTO op_profiles(device, op, dtype, phase, m, n, k, "
                         "batch, elements, time_s, source, created_at) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  guint n = cm_profiles_size(profiles);
  for (guint i = 0; i < n; i++) {
    const CmProfilePoint *p = cm_profiles_at(profiles, i);
    gboolean gemm = p->kind == MDL_OP_MATMUL || p->kind == MDL_OP_BATCH_MATMUL || p->kind == MDL_OP_CONV2D;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, p->device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, mdl_op_kind_name(p->kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, dev_dtype_name(p->dtype), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, p->backward ? "backward" : "forward", -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, gemm ? p->shape.m : 0);
    sqlite3_bind_double(st, 6, gemm ? p->shape.n : 0);
    sqlite3_bind_double(st, 7, gemm ? p->shape.k : 0);
    sqlite3_bind_double(st, 8, gemm ? p->shape.batch : 0);
    sqlite3_bind_double(st, 9, gemm ? 0 : p->elements);
    sqlite3_bind_double(st, 10, p->time_s);
    sqlite3_bind_text(st, 11, source, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 12, stamp, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) goto fail;
  }
  sqlite3_finalize(st);
  if (!exec(db, "COMMIT;", RES_ERROR_WRITE, error)) {
    exec(db, "ROLLBACK;", RES_ERROR_WRITE, NULL);
    return -1;
  }
  return n;
fail:
  g_set_error(error, RES_ERROR, RES_ERROR_WRITE, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
  sqlite3_finalize(st);
  exec(db, "ROLLBACK;", RES_ERROR_WRITE, NULL);
  return -1;
}

CmProfiles *res_db_load_profiles(ResDb *db, const char *device, GError **error) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->sql,
                         "SELECT op, dtype, phase, m, n, k, batch, elements, time_s FROM "
                         "op_profiles WHERE device = ? ORDER BY op, dtype, phase, m, n, k, batch, "
                         "elements",
                         -1, &st, NULL) != SQLITE_OK) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
    return NULL;
  }
  sqlite3_bind_text(st, 1, device, -1, SQLITE_TRANSIENT);
  CmProfiles *profiles = cm_profiles_new();
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    CmProfilePoint p = {.device = (char *)device};
    if (!mdl_op_kind_parse((const char *)sqlite3_column_text(st, 0), &p.kind) ||
        !dev_dtype_parse((const char *)sqlite3_column_text(st, 1), &p.dtype))
      continue; /* a kind this build does not know: written by a newer stratsim */
    p.backward = g_strcmp0((const char *)sqlite3_column_text(st, 2), "backward") == 0;
    p.shape = (CmGemmShape){sqlite3_column_double(st, 3), sqlite3_column_double(st, 4),
                            sqlite3_column_double(st, 5), sqlite3_column_double(st, 6)};
    p.elements = sqlite3_column_double(st, 7);
    p.time_s = sqlite3_column_double(st, 8);
    cm_profiles_add(profiles, &p);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    g_set_error(error, RES_ERROR, RES_ERROR_OPEN, "database %s: %s", db->path, sqlite3_errmsg(db->sql));
    cm_profiles_free(profiles);
    return NULL;
  }
  return profiles;
}
