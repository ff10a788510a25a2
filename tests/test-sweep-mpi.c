/* Tests of `mpirun -np 2 stratsim sweep` (cli/cli_sweep.c, scenarios/README.md "Under
 * mpirun"): the two ranks share the points and store them into one database; every point is
 * stored exactly once, both ranks simulate some, the report built from that database is the
 * same bytes as after a one-process sweep; a sweep stopped by --max-points under mpirun, or
 * with mpirun and its ranks SIGKILLed at random moments, resumes to the same rows; a bad file
 * stops every rank. Skipped where mpirun is not on PATH or stratsim was built without MPI. */
#include <glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-cli-util.h"
#include "test-db-util.h"
#include "test-mpi-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* 14 points: 2 batches x (3 tp x 2 schedules + dp), a few seconds on one core. */
static const char *scenario_json =
    "{\"name\": \"mpi\","
    " \"models\": [\"gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1000,batch={batch}\"],"
    " \"clusters\": [\"dgx-a100:nodes=2\"],"
    " \"strategies\": [\"megatron:tp={tp},pp=2,mb=1,schedule={schedule}\", \"dp\"],"
    " \"axes\": {\"batch\": [16, 32], \"tp\": [1, 2, 4], \"schedule\": [\"1f1b\", \"gpipe\"]},"
    " \"outputs\": {\"charts\": [], \"tables\": [\"text\"]}}";
#define SCENARIO_POINTS 14

static gint64 count_rows(const char *db, const char *query) {
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open_v2(db, &sql, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  sqlite3_stmt *st = NULL;
  g_assert_cmpint(sqlite3_prepare_v2(sql, query, -1, &st, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
  gint64 n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(sql);
  return n;
}

/* FALSE (the test skipped) where mpirun is missing or stratsim ignores it. */
static gboolean have_mpi(void) {
  g_autofree char *probe = g_strdup_printf("sweep /nonexistent.json --db %s/probe.db", tmpdir);
  return test_have_mpi(tmpdir, probe);
}

/* Points simulated by RANK, read from its line "  rank R on HOST: N point(s) simulated". */
static int rank_points(const char *out, int rank) {
  g_autofree char *prefix = g_strdup_printf("  rank %d on ", rank);
  const char *line = strstr(out, prefix);
  if (!line) return -1;
  const char *colon = strchr(line, ':');
  g_assert_nonnull(colon);
  return atoi(colon + 1);
}

/* `report` of @scenario in @format with the database's path (the text table's heading
 * names it) written as DB, so that reports of two databases can be compared. */
static char *report(const char *db, const char *scenario, const char *format) {
  g_autofree char *args =
      g_strdup_printf("report --scenario %s --format %s --db '%s'", scenario, format, db);
  g_autofree char *text = test_cli_run_ok(tmpdir, args);
  g_auto(GStrv) parts = g_strsplit(text, db, -1);
  return g_strjoinv("DB", parts);
}

static void test_two_ranks(void) {
  if (!have_mpi()) return;
  g_autofree char *file = tmp_path("mpi.json");
  g_assert_true(g_file_set_contents(file, scenario_json, -1, NULL));
  g_autofree char *plain_db = tmp_path("plain.db"), *mpi_db = tmp_path("two-ranks.db");
  g_autofree char *plain_args =
      g_strdup_printf("sweep '%s' --db '%s' --no-charts --out '%s/plain'", file, plain_db, tmpdir);
  g_free(test_cli_run_ok(tmpdir, plain_args));

  g_autofree char *args =
      g_strdup_printf("sweep '%s' --db '%s' --no-charts --out '%s/mpi'", file, mpi_db, tmpdir);
  g_autofree char *out = test_mpirun_ok(tmpdir, args);
  g_test_message("%s", out);
  g_autofree char *first = g_strdup_printf(
      "sweep mpi: %d points; %d simulated now (0 failed or do not fit), 0 already stored; ",
      SCENARIO_POINTS, SCENARIO_POINTS);
  g_assert_true(g_str_has_prefix(out, first));
  g_assert_nonnull(strstr(out, " 2 ranks x 1 thread; "));
  /* one summary line: only rank 0 prints */
  g_assert_true(strstr(out, "sweep mpi:") == g_strrstr(out, "sweep mpi:"));
  int r0 = rank_points(out, 0), r1 = rank_points(out, 1);
  g_assert_cmpint(r0, >, 0);
  g_assert_cmpint(r1, >, 0);
  g_assert_cmpint(r0 + r1, ==, SCENARIO_POINTS);
  /* every point exactly once */
  g_assert_cmpint(count_rows(mpi_db, "SELECT count(*) FROM points"), ==, SCENARIO_POINTS);
  g_assert_cmpint(count_rows(mpi_db, "SELECT count(DISTINCT point_key) FROM points"), ==, SCENARIO_POINTS);
  /* the report is built from the database: the same bytes as after one process */
  const char *formats[] = {"text", "csv", "json"};
  for (gsize k = 0; k < G_N_ELEMENTS(formats); k++) {
    g_autofree char *a = report(plain_db, "mpi", formats[k]);
    g_autofree char *b = report(mpi_db, "mpi", formats[k]);
    g_assert_cmpstr(a, ==, b);
  }
  /* and rank 0 printed the table (from the database, with every point) */
  g_autofree char *table_args = g_strdup_printf("report --scenario mpi --db '%s'", mpi_db);
  g_autofree char *table = test_cli_run_ok(tmpdir, table_args);
  g_assert_nonnull(strstr(out, table));

  /* Again: nothing to do, nothing duplicated. */
  g_autofree char *again = test_mpirun_ok(tmpdir, args);
  g_autofree char *nothing = g_strdup_printf(
      "sweep mpi: %d points; 0 simulated now (0 failed or do not fit), %d already stored; ",
      SCENARIO_POINTS, SCENARIO_POINTS);
  g_assert_true(g_str_has_prefix(again, nothing));
  g_assert_cmpint(count_rows(mpi_db, "SELECT count(*) FROM points"), ==, SCENARIO_POINTS);
}

/* --max-points under mpirun counts the points of all ranks; the rest comes on the next run,
 * under mpirun or not, and the rows end as after one uninterrupted process. */
static void test_resume(void) {
  if (!have_mpi()) return;
  g_autofree char *file = tmp_path("mpi.json");
  g_assert_true(g_file_set_contents(file, scenario_json, -1, NULL));
  g_autofree char *plain_db = tmp_path("plain-resume.db"), *db = tmp_path("resume.db");
  g_autofree char *plain_args =
      g_strdup_printf("sweep '%s' --db '%s' --no-charts --out '%s/plain'", file, plain_db, tmpdir);
  g_free(test_cli_run_ok(tmpdir, plain_args));
  g_autofree char *args = g_strdup_printf(
      "sweep '%s' --db '%s' --no-charts --out '%s/resume' --max-points 5", file, db, tmpdir);
  g_autofree char *out = test_mpirun_ok(tmpdir, args);
  g_assert_nonnull(strstr(out, "5 simulated now"));
  g_assert_nonnull(strstr(out, "9 points left (--max-points 5)"));
  g_assert_cmpint(rank_points(out, 0), ==, 3);
  g_assert_cmpint(rank_points(out, 1), ==, 2);
  g_assert_cmpint(count_rows(db, "SELECT count(*) FROM points"), ==, 5);
  g_autofree char *more = test_mpirun_ok(tmpdir, args);
  g_assert_nonnull(strstr(more, "5 simulated now"));
  g_assert_nonnull(strstr(more, "5 already stored"));
  g_autofree char *rest_args =
      g_strdup_printf("sweep '%s' --db '%s' --no-charts --out '%s/resume'", file, db, tmpdir);
  g_autofree char *rest = test_cli_run_ok(tmpdir, rest_args);
  g_assert_nonnull(strstr(rest, "4 simulated now"));
  g_assert_nonnull(strstr(rest, "10 already stored"));
  g_assert_cmpint(count_rows(db, "SELECT count(*) FROM points"), ==, SCENARIO_POINTS);
  g_assert_cmpint(count_rows(db, "SELECT count(DISTINCT point_key) FROM points"), ==, SCENARIO_POINTS);
  g_autofree char *a = report(plain_db, "mpi", "json"), *b = report(db, "mpi", "json");
  g_assert_cmpstr(a, ==, b);
}

/* 80 points, about 2.5 s on two ranks: long enough to be killed mid-way. */
static const char *kill_json =
    "{\"name\": \"mpikill\","
    " \"models\": [\"gpt:layers={layers},hidden=512,heads=8,seq=512,vocab=1000,batch={batch}\"],"
    " \"clusters\": [\"dgx-a100:nodes=2\"],"
    " \"strategies\": [\"megatron:tp={tp},pp=2,mb=1,schedule={schedule}\"],"
    " \"axes\": {\"layers\": [8, 12], \"batch\": [16, 32, 48, 64, 80], \"tp\": [1, 2, 4, 8],"
    "          \"schedule\": [\"1f1b\", \"gpipe\"]},"
    " \"options\": {\"symmetry\": false}, \"outputs\": {\"charts\": [], \"tables\": []}}";
#define KILL_POINTS 80

static void new_session(gpointer data) {
  (void)data;
  setsid();
}

/* The processes of session @sid (mpirun and its ranks: the ranks get process groups of their
 * own, and outlive a killed mpirun). */
static GArray *session_pids(pid_t sid) {
  GArray *pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
  GDir *proc = g_dir_open("/proc", 0, NULL);
  g_assert_nonnull(proc);
  for (const char *name; (name = g_dir_read_name(proc));) {
    if (!g_ascii_isdigit(name[0])) continue;
    g_autofree char *path = g_strdup_printf("/proc/%s/stat", name), *stat = NULL;
    if (!g_file_get_contents(path, &stat, NULL, NULL)) continue;
    /* pid (comm) state ppid pgrp session ...; comm may hold spaces: parse after its ')' */
    const char *rest = strrchr(stat, ')');
    int ppid = 0, pgrp = 0, session = 0;
    char state = 0;
    if (rest && sscanf(rest + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) == 4 &&
        session == sid && state != 'Z') {
      pid_t pid = (pid_t)atoi(name);
      g_array_append_val(pids, pid);
    }
  }
  g_dir_close(proc);
  return pids;
}

/* SIGKILL to mpirun and every rank at a random moment (a crash of the machines), three times;
 * each time the database is intact and holds no point twice; then a sweep under mpirun
 * completes it, and its report equals a one-process sweep's. */
static void test_kill(gconstpointer data) {
  if (!have_mpi()) return;
  guint32 seed = GPOINTER_TO_UINT(data);
  GRand *rand = g_rand_new_with_seed(seed);
  g_autofree char *file = tmp_path("mpikill.json");
  g_assert_true(g_file_set_contents(file, kill_json, -1, NULL));
  g_autofree char *db = g_strdup_printf("%s/mpikill-%u.db", tmpdir, seed);
  g_autofree char *cmd = g_strdup_printf(
      "mpirun --allow-run-as-root --oversubscribe -np 2 %s sweep '%s' --db '%s' --no-charts",
      STRATSIM_BIN, file, db);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_auto(GStrv) env = test_mpi_environ(tmpdir);
  for (int round = 0; round < 3; round++) {
    GPid pid;
    GError *error = NULL;
    g_assert_true(g_spawn_async(tmpdir, argv, env,
                                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH |
                                    G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                                new_session, NULL, &pid, &error));
    g_assert_no_error(error);
    /* mpirun starts the ranks in about a second; they sweep for about 2.5 s */
    g_usleep((gulong)g_rand_int_range(rand, 800000, 3000000));
    GArray *pids = session_pids(pid);
    for (guint i = 0; i < pids->len; i++) kill(g_array_index(pids, pid_t, i), SIGKILL);
    g_test_message("seed %u round %d: killed %u processes", seed, round, pids->len);
    g_array_free(pids, TRUE);
    int status = 0;
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_spawn_close_pid(pid);
    /* the ranks are not our children: wait until they are gone */
    for (int t = 0; t < 500; t++) {
      GArray *left = session_pids(pid);
      guint n = left->len;
      g_array_free(left, TRUE);
      if (!n) break;
      g_usleep(10000);
    }
    if (!g_file_test(db, G_FILE_TEST_EXISTS) ||
        count_rows(db, "SELECT count(*) FROM sqlite_master WHERE name = 'points'") != 1)
      continue;
    gint64 n = count_rows(db, "SELECT count(*) FROM points");
    g_assert_cmpint(n, ==, count_rows(db, "SELECT count(DISTINCT point_key) FROM points"));
    g_test_message("seed %u round %d: %" G_GINT64_FORMAT " points stored", seed, round, n);
  }
  g_rand_free(rand);
  g_autofree char *args = g_strdup_printf("sweep '%s' --db '%s' --no-charts", file, db);
  g_autofree char *out = test_mpirun_ok(tmpdir, args);
  g_test_message("%s", out);
  g_autofree char *points = g_strdup_printf("sweep mpikill: %d points; ", KILL_POINTS);
  g_assert_true(g_str_has_prefix(out, points));
  test_db_assert_integrity(db);
  g_assert_cmpint(count_rows(db, "SELECT count(*) FROM points"), ==, KILL_POINTS);
  g_assert_cmpint(count_rows(db, "SELECT count(DISTINCT point_key) FROM points"), ==, KILL_POINTS);
  g_autofree char *plain_db = g_strdup_printf("%s/mpikill-plain-%u.db", tmpdir, seed);
  g_autofree char *plain = g_strdup_printf("sweep '%s' --db '%s' --no-charts", file, plain_db);
  g_free(test_cli_run_ok(tmpdir, plain));
  g_autofree char *a = report(plain_db, "mpikill", "json"), *b = report(db, "mpikill", "json");
  g_assert_cmpstr(a, ==, b);
}

/* A bad scenario file under mpirun: every rank stops with status 2, nothing hangs. */
static void test_bad_input(void) {
  if (!have_mpi()) return;
  g_autofree char *file = tmp_path("bad.json");
  g_assert_true(g_file_set_contents(file, "{\"name\": \"bad\", \"modles\": []}", -1, NULL));
  g_autofree char *cmd = g_strdup_printf(
      "mpirun --allow-run-as-root --oversubscribe -np 2 %s sweep '%s' --db '%s/bad.db'",
      STRATSIM_BIN, file, tmpdir);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_auto(GStrv) env = test_mpi_environ(tmpdir);
  g_autofree char *out = NULL, *err = NULL;
  int wait_status = 0;
  GError *error = NULL;
  g_assert_true(g_spawn_sync(tmpdir, argv, env, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                             &wait_status, &error));
  g_assert_no_error(error);
  g_test_message("%s", err);
  g_assert_true(WIFEXITED(wait_status));
  g_assert_cmpint(WEXITSTATUS(wait_status), ==, 2);
  g_assert_nonnull(strstr(err, "modles"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-sweep-mpi-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/scn/mpi/two-ranks", test_two_ranks);
  g_test_add_func("/scn/mpi/resume", test_resume);
  static const guint32 seeds[] = {1, 2};
  gsize nseeds = G_N_ELEMENTS(seeds);
#if defined(__SANITIZE_ADDRESS__)
  nseeds = 1; /* each kill round is ~12 s instrumented; the release run kills at both seeds' instants */
#endif
  for (gsize i = 0; i < nseeds; i++) {
    g_autofree char *path = g_strdup_printf("/scn/mpi/kill/seed:%u", seeds[i]);
    g_test_add_data_func(path, GUINT_TO_POINTER(seeds[i]), test_kill);
  }
  g_test_add_func("/scn/mpi/bad-input", test_bad_input);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
