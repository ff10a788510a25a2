/* Tests of sweep point claims (issue 17, item 4; scenarios/scn_sweep.h, results/res_scenarios.h):
 * two sweeps of one scenario started at once on one database share its points (together they
 * simulate each point once, where each used to simulate all of them) and each summary says
 * what its own process did, adding up to the scenario; claims of a sweep that is gone (its
 * process dead on this host, or its lease lapsed) are taken over; a claim of a live sweep
 * elsewhere is left to it and reported. */
#include <glib.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/res_db.h"
#include "scenarios/scn_scenario.h"
#include "test-cli-util.h"
#include "test-db-util.h"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static const char *scenario = TEST_SCENARIO_80;
enum { POINTS = 80 };


/* The counts of one summary line: simulated by this process, already stored, stored meanwhile
 * by others, still run by another sweep. */
typedef struct {
  guint ran, before, by_others, held;
} Counts;

static Counts parse_summary(const char *out) {
  Counts c = {0};
  const char *line = strstr(out, "sweep claims: ");
  g_assert_nonnull(line);
  g_autoptr(GMatchInfo) m = NULL;
  g_autoptr(GRegex) re = g_regex_new("(\\d+) simulated now by this process \\(\\d+ failed or do "
                                     "not fit\\), (\\d+) already stored(, (\\d+) stored meanwhile "
                                     "by other sweeps, (\\d+) still being run by another sweep)?",
                                     0, 0, NULL);
  if (!g_regex_match(re, line, 0, &m)) g_error("no summary in: %s", out);
  g_autofree char *ran = g_match_info_fetch(m, 1), *before = g_match_info_fetch(m, 2);
  g_autofree char *others = g_match_info_fetch(m, 4), *held = g_match_info_fetch(m, 5);
  c.ran = (guint)atoi(ran);
  c.before = (guint)atoi(before);
  c.by_others = others && *others ? (guint)atoi(others) : 0;
  c.held = held && *held ? (guint)atoi(held) : 0;
  return c;
}

static void test_concurrent(void) {
  g_autofree char *file = tmp_path("claims.json");
  g_autofree char *db = tmp_path("concurrent.db");
  g_assert_true(g_file_set_contents(file, scenario, -1, NULL));
  /* The database exists first, so that both start sweeping, not creating it. */
  g_autofree char *create = g_strdup_printf("sweep '%s' --db '%s' --no-charts --max-points 1",
                                            file, db);
  TestCliResult r = test_cli_run(tmpdir, create);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  g_autofree char *cmd = g_strdup_printf("%s sweep '%s' --db '%s' --no-charts", STRATSIM_BIN,
                                         file, db);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  GPid pids[2];
  int outs[2];
  for (int k = 0; k < 2; k++) {
    GError *error = NULL;
    g_assert_true(g_spawn_async_with_pipes(tmpdir, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
                                           G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &pids[k],
                                           NULL, &outs[k], NULL, &error));
    g_assert_no_error(error);
  }
  guint ran = 0;
  for (int k = 0; k < 2; k++) {
    GString *out = g_string_new(NULL);
    char buf[4096];
    ssize_t n;
    while ((n = read(outs[k], buf, sizeof buf)) > 0) g_string_append_len(out, buf, n);
    close(outs[k]);
    int status = 0;
    g_assert_cmpint(waitpid(pids[k], &status, 0), ==, pids[k]);
    g_spawn_close_pid(pids[k]);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    Counts c = parse_summary(out->str);
    g_test_message("sweep %d: ran %u, before %u, by others %u, held %u", k, c.ran, c.before,
                   c.by_others, c.held);
    /* What this process did and what it found add up to the scenario. */
    g_assert_cmpuint(c.ran + c.before + c.by_others + c.held, ==, POINTS);
    ran += c.ran;
    g_string_free(out, TRUE);
  }
  /* Together: every point once (the first run stored one), none simulated twice. */
  g_assert_cmpuint(ran, ==, POINTS - 1);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM points"), ==, POINTS);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(DISTINCT point_key) FROM points"), ==, POINTS);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM point_claims"), ==, 0);
}

/* The pid of a process that has exited (and been reaped). */
static int dead_pid(void) {
  char *argv[] = {"/bin/true", NULL};
  GPid pid;
  g_assert_true(g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL));
  int status;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  return pid;
}

static void test_reclaim(void) {
  g_autofree char *file = tmp_path("claims.json");
  g_autofree char *db = tmp_path("reclaim.db");
  g_assert_true(g_file_set_contents(file, scenario, -1, NULL));
  g_autofree char *args = g_strdup_printf("sweep '%s' --db '%s' --no-charts --max-points 1", file,
                                          db);
  TestCliResult r = test_cli_run(tmpdir, args);
  g_assert_cmpint(r.status, ==, 0);
  test_cli_result_clear(&r);
  /* Claims on points 1-3: a sweep killed on this host (its process is gone, lease still
   * running), one on another host whose lease lapsed, one on another host still running. */
  GError *error = NULL;
  ScnScenario *sc = scn_scenario_from_json(scenario, NULL, &error);
  g_assert_no_error(error);
  GPtrArray *points = scn_scenario_expand(sc, &error);
  g_assert_no_error(error);
  double now = (double)g_get_real_time() / 1e6;
  struct { const char *host; int pid; double expires; } claims[3] = {
      {g_get_host_name(), dead_pid(), now + 3600},
      {"elsewhere.example", 4242, now - 1},
      {"elsewhere.example", 4243, now + 3600},
  };
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(db, &sql), ==, SQLITE_OK);
  for (int i = 0; i < 3; i++) {
    char *q = sqlite3_mprintf("INSERT INTO point_claims VALUES (1, %Q, 'other:%d', %Q, %d, %.3f)",
                              ((ScnPoint *)g_ptr_array_index(points, i + 1))->key, i,
                              claims[i].host, claims[i].pid, claims[i].expires);
    g_assert_cmpint(sqlite3_exec(sql, q, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_free(q);
  }
  sqlite3_close(sql);
  g_autofree char *all = g_strdup_printf("sweep '%s' --db '%s' --no-charts", file, db);
  r = test_cli_run(tmpdir, all);
  g_assert_cmpint(r.status, ==, 0);
  Counts c = parse_summary(r.out);
  g_assert_cmpuint(c.ran, ==, POINTS - 2);  /* the two free claims taken over */
  g_assert_cmpuint(c.before, ==, 1);
  g_assert_cmpuint(c.held, ==, 1);          /* left to the live sweep */
  test_cli_result_clear(&r);
  g_autofree char *held = g_strdup_printf("SELECT count(*) FROM points WHERE point_key = '%s'",
                                          ((ScnPoint *)g_ptr_array_index(points, 3))->key);
  g_assert_cmpint(test_db_query_int(db, held), ==, 0);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM points"), ==, POINTS - 1);
  g_assert_cmpint(test_db_query_int(db, "SELECT count(*) FROM point_claims"), ==, 1);
  g_ptr_array_free(points, TRUE);
  scn_scenario_free(sc);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-claims-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/scn/claims/concurrent", test_concurrent);
  g_test_add_func("/scn/claims/reclaim", test_reclaim);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
