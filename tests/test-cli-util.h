/* Running the stratsim binary from tests (end-to-end checks). Header-only. */
#ifndef STRATSIM_TEST_CLI_UTIL_H
#define STRATSIM_TEST_CLI_UTIL_H

#include <glib.h>
#include <stdlib.h>
#include <sys/wait.h>

typedef struct {
  int status; /* exit status */
  char *out;  /* stdout, owned */
  char *err;  /* stderr, owned */
} TestCliResult;

/* Runs `stratsim ARGS` (shell-style quoting) in directory @dir with environment @envp (NULL:
 * this process's) and waits for it. */
static inline TestCliResult test_cli_run_env(const char *dir, char **envp, const char *args) {
  g_autofree char *cmd = g_strdup_printf("%s %s", STRATSIM_BIN, args);
  TestCliResult r = {0};
  GError *error = NULL;
  int wait_status = 0;
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, &error));
  g_assert_true(g_spawn_sync(dir, argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &r.err,
                             &wait_status, &error));
  g_assert_no_error(error);
  g_assert_true(WIFEXITED(wait_status));
  r.status = WEXITSTATUS(wait_status);
  return r;
}

/* Runs `stratsim ARGS` (shell-style quoting) in directory @dir and waits for it. */
static inline TestCliResult test_cli_run(const char *dir, const char *args) {
  return test_cli_run_env(dir, NULL, args);
}

/* As test_cli_run with PATH=@path the child's whole environment (a fake or no gnuplot). */
static inline TestCliResult test_cli_run_path(const char *dir, const char *path, const char *args) {
  g_autofree char *path_env = g_strdup_printf("PATH=%s", path);
  char *envp[] = {path_env, NULL};
  return test_cli_run_env(dir, envp, args);
}

static inline void test_cli_result_clear(TestCliResult *r) {
  g_clear_pointer(&r->out, g_free);
  g_clear_pointer(&r->err, g_free);
}

/* Removes a test's temporary directory tree. */
static inline void test_remove_tree(const char *dir) {
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  if (system(rm) != 0) g_warning("could not remove %s", dir);
}

#endif
