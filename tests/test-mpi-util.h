/* Running stratsim under mpirun from tests (search and sweep over ranks). Header-only; include
 * after test-cli-util.h. */
#ifndef STRATSIM_TEST_MPI_UTIL_H
#define STRATSIM_TEST_MPI_UTIL_H

#include <glib.h>
#include <string.h>
#include <sys/wait.h>

#include "test-cli-util.h"
#include "validate/val_run.h"

/* stdout of `stratsim ARGS` in @dir (exit 0 required); caller g_frees. */
static inline char *test_cli_run_ok(const char *dir, const char *args) {
  TestCliResult r = test_cli_run(dir, args);
  if (r.status != 0) g_error("stratsim %s: exit %d: %s%s", args, r.status, r.out, r.err);
  g_free(r.err);
  return r.out;
}

/* The environment for `mpirun -np 2 stratsim` from a test that works in @dir: oversubscribed
 * and yielding when idle (2 ranks on a 1- or 2-core machine), and Open MPI's session directory
 * and shared-memory segments kept in @dir. Those two otherwise go to /tmp/ompi.<host>.<uid> and
 * /dev/shm, where a test that SIGKILLs mpirun and its ranks leaves them behind after the test
 * has removed its folder. Caller g_strfreevs. */
static inline char **test_mpi_environ(const char *dir) {
  char **env = g_get_environ();
  env = g_environ_setenv(env, "OMPI_MCA_mpi_yield_when_idle", "1", TRUE);
  env = g_environ_setenv(env, "OMPI_MCA_rmaps_base_oversubscribe", "1", TRUE);
  env = g_environ_setenv(env, "OMPI_MCA_orte_tmpdir_base", dir, TRUE);
  env = g_environ_setenv(env, "OMPI_MCA_btl_vader_backing_directory", dir, TRUE);
#if defined(__SANITIZE_ADDRESS__)
  /* Open MPI does not free its allocations at MPI_Finalize (tests/test-validate.c says more):
   * leak checks off for the ranks; address and undefined-behaviour checks stay on. */
  const char *asan = g_environ_getenv(env, "ASAN_OPTIONS");
  g_autofree char *asan_opts = g_strdup_printf("%s%sdetect_leaks=0", asan ? asan : "", asan ? ":" : "");
  env = g_environ_setenv(env, "ASAN_OPTIONS", asan_opts, TRUE);
#endif
  return env;
}

/* Open MPI's launcher race (validate/val_run.h, val_mpirun_lost_pid, which the CPU runner's
 * launches retry on too). */
static inline gboolean test_mpirun_lost_pid(const char *err) { return val_mpirun_lost_pid(err); }

/* `mpirun -np 2 stratsim ARGS` in @dir (test_mpi_environ's environment); exit 0 required.
 * Returns stdout; stderr goes to the test log. A run that failed only by
 * test_mpirun_lost_pid's launcher race runs again, at most twice, and says so in the log:
 * every stratsim command the tests run this way resumes or repeats to the same output. Not
 * inlined: GCC 12 at -O3 then takes pointers into the result for ones to the local `out`
 * (-Wdangling-pointer in the callers). */
static G_GNUC_UNUSED G_GNUC_NO_INLINE char *test_mpirun_ok(const char *dir, const char *args) {
  g_autofree char *cmd = g_strdup_printf(
      "mpirun --allow-run-as-root --oversubscribe -np 2 %s %s", STRATSIM_BIN, args);
  g_auto(GStrv) argv = NULL;
  GError *error = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, &error));
  g_auto(GStrv) env = test_mpi_environ(dir);
  for (int attempt = 0;; attempt++) {
    char *out = NULL, *err = NULL;
    int wait_status = 0;
    g_assert_true(g_spawn_sync(dir, argv, env, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                               &wait_status, &error));
    g_assert_no_error(error);
    g_test_message("%s\n%s", cmd, err);
    gboolean ok = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
    if (!ok && attempt < 2 && test_mpirun_lost_pid(err)) {
      g_test_message("Open MPI's launcher lost a rank's pid (test_mpirun_lost_pid): run again");
      g_free(out);
      g_free(err);
      continue;
    }
    if (!ok) g_error("%s: status %d\n%s%s", cmd, wait_status, out, err);
    g_free(err);
    return out;
  }
}

/* FALSE (the test skipped) where mpirun is missing or stratsim ignores it: runs `mpirun -np 1
 * stratsim PROBE_ARGS` in @dir, which a stratsim built without MPI answers with "built without
 * MPI" on stderr (cli/cli_mpi.h). */
static inline gboolean test_have_mpi(const char *dir, const char *probe_args) {
  g_autofree char *mpirun = g_find_program_in_path("mpirun");
  if (!mpirun) {
    g_test_skip("mpirun is not on PATH (install openmpi-bin)");
    return FALSE;
  }
  g_autofree char *cmd = g_strdup_printf("mpirun --allow-run-as-root --oversubscribe -np 1 %s %s",
                                         STRATSIM_BIN, probe_args);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_autofree char *out = NULL, *err = NULL;
  int wait_status = 0;
  if (!g_spawn_sync(dir, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &wait_status,
                    NULL) ||
      strstr(err, "built without MPI")) {
    g_test_skip("stratsim was built without MPI (install libopenmpi-dev and rebuild)");
    return FALSE;
  }
  return TRUE;
}

#endif
