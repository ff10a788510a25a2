/* Tests of the results database under stress (results/, `stratsim db check`): several stratsim
 * processes writing one new database at once lose nothing (WAL, the busy timeout, migrations
 * that re-read the version under the write lock); a search SIGKILLed at seeded random moments
 * leaves a consistent database and stores either nothing or its whole run; databases written
 * at schema versions 1 to 5 are migrated, not rejected; `db check` tells a consistent database
 * (exit 0) from a damaged one (1) and from a file that is missing or not a database (2). */
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/res_db.h"
#include "test-cli-util.h"
#include "test-db-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }


static void exec_sql(const char *db_path, const char *sql_text) {
  sqlite3 *sql = NULL;
  char *msg = NULL;
  g_assert_cmpint(sqlite3_open(db_path, &sql), ==, SQLITE_OK);
  if (sqlite3_exec(sql, sql_text, NULL, NULL, &msg) != SQLITE_OK) g_error("%s: %s", sql_text, msg);
  sqlite3_close(sql);
}

/* `stratsim db check --db @db`: its exit status; the output goes to the test log. */
static int db_check(const char *db) {
  g_autofree char *args = g_strdup_printf("db check --db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_test_message("db check: exit %d\n%s%s", r.status, r.out, r.err);
  int status = r.status;
  test_cli_result_clear(&r);
  return status;
}

/* --- concurrent writers ---------------------------------------------------------------------- */

/* @writers shell loops, each running `stratsim simulate` @times times into one new database, all
 * at once; every run must succeed and be stored. Two rounds, each on a fresh file: the race on
 * creating and migrating it is the hard part. */
static void test_concurrent_writers(void) {
  enum { WRITERS = 4, TIMES = 5 };
  for (int round = 0; round < 2; round++) {
    g_autofree char *name = g_strdup_printf("concurrent-%d.db", round);
    g_autofree char *db = tmp_path(name);
    g_autofree char *loop = g_strdup_printf(
        "for i in 1 2 3 4 5; do '%s' simulate --model mlp --cluster dgx-a100 --strategy "
        "megatron:tp=2,dp=4 --db '%s' >/dev/null || exit 1; done",
        STRATSIM_BIN, db);
    G_STATIC_ASSERT(TIMES == 5);
    GPid pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
      char *argv[] = {"/bin/sh", "-c", loop, NULL};
      GError *error = NULL;
      g_assert_true(g_spawn_async(tmpdir, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                  &pids[w], &error));
      g_assert_no_error(error);
    }
    for (int w = 0; w < WRITERS; w++) {
      int status = 0;
      g_assert_cmpint(waitpid(pids[w], &status, 0), ==, pids[w]);
      g_spawn_close_pid(pids[w]);
      g_assert_true(WIFEXITED(status));
      g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    }
    g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM runs"), ==, WRITERS * TIMES);
    g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM predictions"), ==, WRITERS * TIMES);
    g_assert_cmpint(test_db_query_int(db, "SELECT count(DISTINCT run_id) FROM predictions"), ==,
                    WRITERS * TIMES);
    g_assert_cmpint(test_db_query_int(db, "PRAGMA user_version"), ==, RES_SCHEMA_VERSION);
    g_assert_cmpint(db_check(db), ==, 0);
  }
}

/* --- a database killed while it is being created ---------------------------------------------- */

/* res_db_open on a new path in a child killed after a random 0-30 ms (creating the schema takes
 * about 10): afterwards the path is either absent or a whole database of the current schema that a
 * read-only open (--no-store) reads. (A killed creation's temporary DB.new-PID-TIME stays.) */
static void test_create_killed(void) {
  GRand *rand = g_rand_new_with_seed(11);
  int absent = 0, whole = 0;
  for (int round = 0; round < 40; round++) {
    g_autofree char *name = g_strdup_printf("create-killed-%d.db", round);
    g_autofree char *db = tmp_path(name);
    pid_t pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
      ResDb *d = res_db_open(db, NULL);
      res_db_close(d);
      _exit(d ? 0 : 1);
    }
    g_usleep((gulong)g_rand_int_range(rand, 0, 30000));
    kill(pid, SIGKILL);
    int status = 0;
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    if (!g_file_test(db, G_FILE_TEST_EXISTS)) {
      absent++;
      continue;
    }
    whole++;
    GError *error = NULL;
    ResDb *ro = res_db_open_read_only(db, &error);
    g_assert_no_error(error);
    res_db_close(ro);
    g_assert_cmpint(test_db_query_int(db, "PRAGMA user_version"), ==, RES_SCHEMA_VERSION);
  }
  g_test_message("40 creations killed: %d left no file, %d a whole database", absent, whole);
  g_rand_free(rand);
}

/* --- a search killed at random moments ------------------------------------------------------- */

static void test_search_kill(gconstpointer data) {
  guint32 seed = GPOINTER_TO_UINT(data);
  g_autofree char *name = g_strdup_printf("search-kill-%u.db", seed);
  g_autofree char *db = tmp_path(name);
  GRand *rand = g_rand_new_with_seed(seed);
  char *argv[] = {STRATSIM_BIN, "search", "--model", "gpt3-125m", "--cluster", "dgx-a100:nodes=2",
                  "--algo", "mcmc", "--budget", "150", "--seed", "7", "--db", db, NULL};
  gint64 stored = 0;
  int interrupted = 0;
  for (int round = 0; round < 3; round++) {
    GPid pid;
    GError *error = NULL;
    g_assert_true(g_spawn_async(tmpdir, argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                    G_SPAWN_STDERR_TO_DEV_NULL,
                                NULL, NULL, &pid, &error));
    g_assert_no_error(error);
    g_usleep((gulong)g_rand_int_range(rand, 2000, 500000));
    kill(pid, SIGKILL);
    int status = 0;
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_spawn_close_pid(pid);
    if (WIFSIGNALED(status)) interrupted++;
    else g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    if (!g_file_test(db, G_FILE_TEST_EXISTS)) continue; /* killed before it made the file */
    g_assert_cmpint(db_check(db), ==, 0);
    if (test_db_query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'search_runs'") == 0) continue;
    /* All of a search or nothing: one more row when it finished (or was killed between its
     * commit and its exit); every stored search has its runs row and its convergence curve. */
    gint64 n = test_db_query_int(db, "SELECT count(*) FROM search_runs");
    if (WIFSIGNALED(status)) g_assert_true(n == stored || n == stored + 1);
    else g_assert_cmpint(n, ==, stored + 1);
    stored = n;
    g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM runs WHERE command = 'search'"), ==, n);
    g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM search_runs s WHERE NOT EXISTS (SELECT 1 "
                                  "FROM search_convergence c WHERE c.search_id = s.id)"),
                    ==, 0);
    g_test_message("seed %u round %d: %s, %" G_GINT64_FORMAT " searches stored", seed, round,
                   WIFSIGNALED(status) ? "killed" : "finished", n);
  }
  g_test_message("%d of 3 searches were killed", interrupted);
  /* A complete run now stores exactly one more complete search. */
  g_autofree char *args = g_strdup_printf(
      "search --model gpt3-125m --cluster dgx-a100:nodes=2 --algo mcmc --budget 150 --seed 7 "
      "--db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  g_assert_cmpint(db_check(db), ==, 0);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM search_runs"), ==, stored + 1);
  g_assert_cmpint(test_db_query_int(db, "SELECT evaluations FROM search_runs ORDER BY id DESC LIMIT 1"),
                  ==, 150);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM search_convergence WHERE search_id = "
                                "(SELECT max(id) FROM search_runs)"),
                  >, 0);
  g_rand_free(rand);
}

/* --- migrations ------------------------------------------------------------------------------ */

/* The schema as versions 1 to 7 wrote it (frozen copies of res_db.c's migrations[0..6]), and a
 * row for each of the first five's tables. */
static const char *const old_schema[] = {
    "CREATE TABLE runs (id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, command TEXT NOT NULL,"
    " model TEXT NOT NULL, cluster TEXT NOT NULL, strategy TEXT NOT NULL,"
    " stratsim_version TEXT NOT NULL);"
    "CREATE TABLE predictions (id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " iteration_time_s REAL NOT NULL, samples_per_s REAL NOT NULL, tflops_per_gpu REAL NOT NULL,"
    " mfu REAL NOT NULL, compute_s REAL NOT NULL, comm_exposed_s REAL NOT NULL,"
    " bubble_s REAL NOT NULL, peak_memory_bytes REAL NOT NULL, fits_memory INTEGER NOT NULL,"
    " num_gpus INTEGER NOT NULL, tasks INTEGER NOT NULL, json TEXT NOT NULL);"
    "CREATE INDEX predictions_run ON predictions(run_id);"
    "INSERT INTO runs VALUES (1, '2024-01-01T00:00:00Z', 'simulate', 'mlp', 'dgx-a100', 'dp', '0.0.1');"
    "INSERT INTO predictions VALUES (1, 1, 1, 1, 1, 0.1, 1, 0, 0, 1, 1, 8, 12, '{}');",
    "CREATE TABLE calibrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " cluster TEXT NOT NULL, created_at TEXT NOT NULL, json TEXT NOT NULL);"
    "INSERT INTO calibrations VALUES (1, 'lab', 'dgx-a100', '2024-01-01T00:00:00Z', '{}');",
    "CREATE TABLE op_profiles (device TEXT NOT NULL, op TEXT NOT NULL, dtype TEXT NOT NULL,"
    " phase TEXT NOT NULL, m REAL NOT NULL, n REAL NOT NULL, k REAL NOT NULL,"
    " batch REAL NOT NULL, elements REAL NOT NULL, time_s REAL NOT NULL, source TEXT NOT NULL,"
    " created_at TEXT NOT NULL, PRIMARY KEY (device, op, dtype, phase, m, n, k, batch, elements));"
    "INSERT INTO op_profiles VALUES ('a100-80gb', 'matmul', 'fp16', 'forward', 1024, 1024, 1024,"
    " 1, 0, 1e-5, 'test', '2024-01-01T00:00:00Z');",
    "CREATE TABLE search_runs (id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, algo TEXT NOT NULL,"
    " ran TEXT NOT NULL, seed INTEGER NOT NULL, threads INTEGER NOT NULL, budget TEXT NOT NULL,"
    " evaluations INTEGER NOT NULL, simulated INTEGER NOT NULL, over_memory INTEGER NOT NULL,"
    " elapsed_s REAL NOT NULL, complete INTEGER NOT NULL, best_time_s REAL,"
    " best_memory_bytes REAL, found_by TEXT, data_parallel_time_s REAL, megatron_time_s REAL,"
    " megatron_config TEXT, weird_trick_time_s REAL, strategy_json TEXT, json TEXT NOT NULL);"
    "CREATE INDEX search_runs_run ON search_runs(run_id);"
    "CREATE TABLE search_convergence ("
    " search_id INTEGER NOT NULL REFERENCES search_runs(id) ON DELETE CASCADE,"
    " evaluation INTEGER NOT NULL, elapsed_s REAL NOT NULL, best_time_s REAL NOT NULL,"
    " PRIMARY KEY (search_id, evaluation));"
    "INSERT INTO runs VALUES (2, '2024-01-01T00:00:00Z', 'search', 'mlp', 'dgx-a100',"
    " 'search:mcmc', '0.0.1');"
    "INSERT INTO search_runs VALUES (1, 2, 'mcmc', 'mcmc', 1, 1, '10', 10, 10, 0, 0.5, 0, 1,"
    " 1, 'chain 0', NULL, NULL, NULL, NULL, NULL, '{}');"
    "INSERT INTO search_convergence VALUES (1, 1, 0.1, 1);",
    "CREATE TABLE scenarios (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, file TEXT,"
    " json TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);"
    "CREATE TABLE points (id INTEGER PRIMARY KEY,"
    " scenario_id INTEGER NOT NULL REFERENCES scenarios(id) ON DELETE CASCADE,"
    " point_key TEXT NOT NULL, idx INTEGER NOT NULL, model TEXT NOT NULL, cluster TEXT NOT NULL,"
    " strategy TEXT NOT NULL, label TEXT NOT NULL, axes TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('ok', 'error')), error TEXT, num_gpus INTEGER,"
    " iteration_time_s REAL, samples_per_s REAL, tflops_per_gpu REAL, mfu REAL, compute_s REAL,"
    " comm_exposed_s REAL, bubble_s REAL, peak_memory_bytes REAL, memory_capacity_bytes REAL,"
    " fits_memory INTEGER, prediction TEXT, created_at TEXT NOT NULL,"
    " UNIQUE (scenario_id, point_key));"
    "INSERT INTO scenarios VALUES (1, 's', NULL, '{}', '2024-01-01T00:00:00Z',"
    " '2024-01-01T00:00:00Z');"
    "INSERT INTO points(scenario_id, point_key, idx, model, cluster, strategy, label, axes,"
    " status, created_at) VALUES (1, 'k', 0, 'mlp', 'dgx-a100', 'dp', 'dp', '{}', 'ok',"
    " '2024-01-01T00:00:00Z');",
    "CREATE TABLE validate_runs (id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " content_hash TEXT NOT NULL UNIQUE, model TEXT NOT NULL, cluster TEXT NOT NULL,"
    " strategy TEXT NOT NULL, dtype TEXT NOT NULL, ranks INTEGER NOT NULL, runner TEXT NOT NULL,"
    " warmup INTEGER NOT NULL, iterations INTEGER NOT NULL, predicted_s REAL NOT NULL,"
    " measured_s REAL NOT NULL, error_pct REAL NOT NULL, device TEXT, host TEXT,"
    " measured_at TEXT, environment TEXT NOT NULL, prediction TEXT NOT NULL,"
    " iterations_s TEXT NOT NULL, plan TEXT NOT NULL, created_at TEXT NOT NULL);"
    "CREATE INDEX validate_runs_run ON validate_runs(run_id);"
    "CREATE TABLE validate_steps ("
    " validate_id INTEGER NOT NULL REFERENCES validate_runs(id) ON DELETE CASCADE,"
    " rank INTEGER NOT NULL, step INTEGER NOT NULL, stream TEXT NOT NULL, kind TEXT NOT NULL,"
    " collective TEXT, name TEXT NOT NULL, op TEXT, phase TEXT, microbatch INTEGER,"
    " predicted_s REAL NOT NULL, measured_s REAL, PRIMARY KEY (validate_id, rank, step));",
    "CREATE TABLE point_claims ("
    " scenario_id INTEGER NOT NULL REFERENCES scenarios(id) ON DELETE CASCADE,"
    " point_key TEXT NOT NULL, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,"
    " expires_at REAL NOT NULL, PRIMARY KEY (scenario_id, point_key));",
};
G_STATIC_ASSERT(G_N_ELEMENTS(old_schema) == RES_SCHEMA_VERSION - 1);

static void test_migrate(gconstpointer data) {
  int version = GPOINTER_TO_INT(data);
  g_autofree char *name = g_strdup_printf("v%d.db", version);
  g_autofree char *db = tmp_path(name);
  for (int v = 0; v < version; v++) exec_sql(db, old_schema[v]);
  g_autofree char *bump = g_strdup_printf("PRAGMA user_version = %d;", version);
  exec_sql(db, bump);
  gint64 runs = test_db_query_int(db, "SELECT count(*) FROM runs");
  /* db check reads it as it is: consistent, the old version, nothing migrated yet */
  g_assert_cmpint(db_check(db), ==, 0);
  g_assert_cmpint(test_db_query_int(db, "PRAGMA user_version"), ==, version);
  /* a run writes to it: migrated, not rejected, old rows kept */
  g_autofree char *args = g_strdup_printf(
      "simulate --model mlp --cluster dgx-a100 --strategy dp --db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  g_assert_cmpint(test_db_query_int(db, "PRAGMA user_version"), ==, RES_SCHEMA_VERSION);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM runs"), ==, runs + 1);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM predictions"), ==, 2);
  if (version >= 2) g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM calibrations"), ==, 1);
  if (version >= 3) g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM op_profiles"), ==, 1);
  if (version >= 4) g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM search_convergence"), ==, 1);
  if (version >= 5) g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM points"), ==, 1);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'points'"), ==, 1);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'validate_steps'"), ==, 1);
  g_assert_cmpint(db_check(db), ==, 0);
  /* the library agrees */
  GError *error = NULL;
  ResDb *handle = res_db_open(db, &error);
  g_assert_no_error(error);
  g_assert_cmpint(res_db_schema_version(handle), ==, RES_SCHEMA_VERSION);
  res_db_close(handle);
}

/* Stores one simulate run into @db (exit 0 asserted); returns the command's arguments. */
static char *simulate_into(const char *db) {
  char *args = g_strdup_printf("simulate --model mlp --cluster dgx-a100 --strategy dp --db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  return args;
}

/* A database from a newer stratsim is refused with one line, and left as it was. */
static void test_newer_refused(void) {
  g_autofree char *db = tmp_path("newer.db");
  g_autofree char *args = simulate_into(db);
  TestCliResult r;
  g_autofree char *bump = g_strdup_printf("PRAGMA user_version = %d;", RES_SCHEMA_VERSION + 1);
  exec_sql(db, bump);
  r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "newer than this stratsim"));
  g_assert_true(strchr(r.err, '\n') == r.err + strlen(r.err) - 1);
  test_cli_result_clear(&r);
  g_assert_cmpint(test_db_query_int(db, "PRAGMA user_version"), ==, RES_SCHEMA_VERSION + 1);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM runs"), ==, 1);
  /* issue 17, item 6: db check cannot vouch for a newer schema: a problem, exit 1 */
  g_assert_cmpint(db_check(db), ==, 1);
}

/* Issue 17, item 6: user_version values no stratsim writes get messages that say so. A
 * negative version used to read as "not an error"; a v6 database set back to 3 by hand used to
 * fail inside migration 3 with "table search_runs already exists". Both are refused naming the
 * version (and the table), the file untouched, and db check reports them (exit 1). A directory
 * given to db check is called a directory. */
static void test_hand_set_version(void) {
  g_autofree char *base = tmp_path("hand.db");
  g_free(simulate_into(base));
  TestCliResult r;
  static const struct { int version; const char *message, *check; } cases[] = {
      {-5, "has schema version -5 (PRAGMA user_version), which no stratsim writes",
       "schema version -5 (PRAGMA user_version) is one no stratsim writes"},
      {3, "has schema version 3 (PRAGMA user_version) but already has table search_runs of "
          "version 4: the version was changed by hand",
       "schema version 3 but table search_runs of version 4 exists"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *name = g_strdup_printf("hand-%zu.db", i);
    g_autofree char *db = tmp_path(name);
    /* the database is the file with its -wal beside it (res_db.c keeps the WAL on close) */
    g_autofree char *copy = g_strdup_printf("cp '%s' '%s' && if [ -f '%s-wal' ]; then cp '%s-wal' "
                                            "'%s-wal'; fi", base, db, base, base, db);
    g_assert_cmpint(system(copy), ==, 0);
    g_autofree char *bump = g_strdup_printf("PRAGMA user_version = %d;", cases[i].version);
    exec_sql(db, bump);
    GError *error = NULL;
    g_assert_null(res_db_open(db, &error));
    g_assert_error(error, RES_ERROR, RES_ERROR_SCHEMA);
    if (!strstr(error->message, cases[i].message))
      g_error("'%s' lacks '%s'", error->message, cases[i].message);
    g_clear_error(&error);
    g_assert_cmpint(test_db_query_int(db, "PRAGMA user_version"), ==, cases[i].version);
    g_autofree char *check = g_strdup_printf("db check --db '%s'", db);
    r = test_cli_run(tmpdir, check);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.out, cases[i].check));
    test_cli_result_clear(&r);
  }
  g_autofree char *check = g_strdup_printf("db check --db '%s'", tmpdir);
  r = test_cli_run(tmpdir, check);
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "is a directory, not a database file"));
  test_cli_result_clear(&r);
}

/* --- db check -------------------------------------------------------------------------------- */

static void test_db_check(void) {
  g_autofree char *db = tmp_path("check.db");
  g_autofree char *args = g_strdup_printf(
      "simulate --model mlp --cluster dgx-a100 --strategy dp --db '%s'", db);
  for (int i = 0; i < 3; i++) {
    TestCliResult r = test_cli_run(tmpdir, args);
    g_assert_cmpint(r.status, ==, 0);
    test_cli_result_clear(&r);
  }
  g_autofree char *check = g_strdup_printf("db check --db '%s'", db);
  TestCliResult r = test_cli_run(tmpdir, check);
  g_assert_cmpint(r.status, ==, 0);
  g_autofree char *current = g_strdup_printf("version %d (current)", RES_SCHEMA_VERSION);
  g_assert_nonnull(strstr(r.out, current));
  g_assert_nonnull(g_regex_match_simple("runs +3 rows", r.out, 0, 0));
  g_assert_nonnull(g_regex_match_simple("predictions +3 rows", r.out, 0, 0));
  g_assert_nonnull(strstr(r.out, "consistent"));
  test_cli_result_clear(&r);

  /* a prediction whose run is gone (written with foreign keys off): exit 1, named */
  g_autofree char *orphan = tmp_path("orphan.db");
  /* The database is the file and its -wal (results/README.md): copy it through SQLite. */
  g_autofree char *copy = g_strdup_printf("VACUUM INTO '%s';", orphan);
  exec_sql(db, copy);
  exec_sql(orphan, "PRAGMA foreign_keys=OFF; INSERT INTO predictions(run_id, iteration_time_s, "
                   "samples_per_s, tflops_per_gpu, mfu, compute_s, comm_exposed_s, bubble_s, "
                   "peak_memory_bytes, fits_memory, num_gpus, tasks, json) VALUES "
                   "(999, 1, 1, 1, 1, 1, 0, 0, 1, 1, 8, 12, '{}');");
  g_autofree char *check_orphan = g_strdup_printf("db check --db '%s'", orphan);
  r = test_cli_run(tmpdir, check_orphan);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "foreign_key_check"));
  g_assert_nonnull(strstr(r.out, "predictions"));
  test_cli_result_clear(&r);

  /* pages overwritten with garbage: exit 1 */
  g_autofree char *corrupt = tmp_path("corrupt.db");
  exec_sql(corrupt, "PRAGMA journal_mode=DELETE; CREATE TABLE t (x INTEGER PRIMARY KEY, y TEXT);"
                    "CREATE INDEX ty ON t(y);"
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)"
                    " INSERT INTO t SELECT i, printf('row %d of the table', i) FROM n;");
  FILE *f = fopen(corrupt, "r+b");
  g_assert_nonnull(f);
  g_assert_cmpint(fseek(f, 4096 * 3 + 100, SEEK_SET), ==, 0);
  for (int i = 0; i < 3000; i++) fputc(0xff, f);
  fclose(f);
  g_autofree char *check_corrupt = g_strdup_printf("db check --db '%s'", corrupt);
  r = test_cli_run(tmpdir, check_corrupt);
  g_assert_cmpint(r.status, ==, 1);
  g_assert_nonnull(strstr(r.out, "integrity_check"));
  test_cli_result_clear(&r);

  /* missing, and not a database: exit 2, one line */
  g_autofree char *text = tmp_path("notes.txt");
  g_assert_true(g_file_set_contents(text, "these are not the pages you are looking for\n", -1, NULL));
  const char *files[] = {"missing.db", "notes.txt"};
  for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *path = tmp_path(files[i]);
    g_autofree char *a = g_strdup_printf("db check --db '%s'", path);
    r = test_cli_run(tmpdir, a);
    g_assert_cmpint(r.status, ==, 2);
    g_assert_true(strchr(r.err, '\n') == r.err + strlen(r.err) - 1);
    g_assert_nonnull(strstr(r.err, files[i]));
    test_cli_result_clear(&r);
    g_assert_false(g_str_equal(files[i], "missing.db") && g_file_test(path, G_FILE_TEST_EXISTS));
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-storage-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/results/storage/concurrent-writers", test_concurrent_writers);
  g_test_add_func("/results/storage/create-killed", test_create_killed);
  static const guint32 seeds[] = {1, 2};
  for (gsize i = 0; i < G_N_ELEMENTS(seeds); i++) {
    g_autofree char *path = g_strdup_printf("/results/storage/search-kill/seed:%u", seeds[i]);
    g_test_add_data_func(path, GUINT_TO_POINTER(seeds[i]), test_search_kill);
  }
  for (int v = 1; v < RES_SCHEMA_VERSION; v++) {
    g_autofree char *path = g_strdup_printf("/results/storage/migrate/v%d", v);
    g_test_add_data_func(path, GINT_TO_POINTER(v), test_migrate);
  }
  g_test_add_func("/results/storage/newer-refused", test_newer_refused);
  g_test_add_func("/results/storage/db-check", test_db_check);
  g_test_add_func("/results/storage/hand-set-version", test_hand_set_version);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
