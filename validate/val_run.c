/* validate/run — launching the runners (val_run.h). */
#include "validate/val_run.h"

#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(val-run-error-quark, val_run_error)

gboolean val_runner_parse(const char *text, ValRunner *out, GError **error) {
  if (!text || strcmp(text, "cpu") == 0) {
    *out = VAL_RUNNER_CPU;
    return TRUE;
  }
  if (strcmp(text, "gpu") == 0) {
    *out = VAL_RUNNER_GPU;
    return TRUE;
  }
  g_set_error(error, VAL_RUN_ERROR, VAL_RUN_ERROR_INPUT, "--runner must be cpu or gpu, not '%s'", text);
  return FALSE;
}

/* @name next to this executable, else on PATH. */
static char *find_binary(const char *name, const char *env) {
  const char *given = g_getenv(env);
  if (given && *given) return g_file_test(given, G_FILE_TEST_IS_EXECUTABLE) ? g_strdup(given) : NULL;
  g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
  if (self) {
    g_autofree char *dir = g_path_get_dirname(self);
    char *path = g_build_filename(dir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_EXECUTABLE)) return path;
    g_free(path);
  }
  return g_find_program_in_path(name);
}

char *val_runner_find(ValRunner runner, GError **error) {
  const char *name = runner == VAL_RUNNER_CPU ? "stratsim-cpu-runner" : "stratsim-runner";
  char *path = find_binary(name, runner == VAL_RUNNER_CPU ? "STRATSIM_CPU_RUNNER" : "STRATSIM_GPU_RUNNER");
  if (!path)
    g_set_error(error, VAL_RUN_ERROR, VAL_RUN_ERROR_MISSING,
                runner == VAL_RUNNER_CPU
                    ? "%s is not built (CMake builds it next to stratsim when it finds MPI and "
                      "OpenBLAS: install libopenmpi-dev and libopenblas-dev)"
                    : "%s is not built (it needs CUDA, cuBLAS and NCCL: validate/runner_gpu/)",
                name);
  return path;
}

/* The last non-empty line of @text (for one-line errors). */
static char *last_line(const char *text) {
  if (!text) return g_strdup("");
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (int i = (int)g_strv_length(lines) - 1; i >= 0; i--) {
    g_strstrip(lines[i]);
    if (*lines[i] && !g_str_has_prefix(lines[i], "---")) return g_strdup(lines[i]);
  }
  return g_strdup("");
}

gboolean val_mpirun_lost_pid(const char *err) {
  return err && strstr(err, "with PID 0 on") && strstr(err, "exiting improperly");
}

/* Runs @argv; on failure the error names the command and the runner's own last stderr line.
 * With @mpi (an mpirun command line) a run that failed only by val_mpirun_lost_pid runs again,
 * at most twice, saying so on stderr: every runner command rewrites its output file whole. */
static gboolean spawn(GPtrArray *argv, gboolean mpi, char **output, GError **error) {
  g_ptr_array_add(argv, NULL);
  g_auto(GStrv) env = g_get_environ();
  env = g_environ_setenv(env, "OPENBLAS_NUM_THREADS", "1", TRUE);
  /* A rank waiting in MPI gives its core back instead of spinning: on a machine shared with
   * other processes a spinning rank takes the core its partner needs (measured here: a
   * tensor-parallel plan's iteration 0.075-0.099 s spinning, 0.040-0.044 s yielding, load
   * average 4.7 on 2 cores). An explicit setting in the environment wins. */
  env = g_environ_setenv(env, "OMPI_MCA_mpi_yield_when_idle", "1", FALSE);
  for (int attempt = 0;; attempt++) {
    g_autofree char *out = NULL, *err = NULL;
    int status = 0;
    if (!g_spawn_sync(NULL, (char **)argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                      &status, error))
      return FALSE;
    GError *local = NULL;
    if (g_spawn_check_wait_status(status, &local)) {
      if (output) *output = g_steal_pointer(&out);
      return TRUE;
    }
    if (mpi && attempt < 2 && val_mpirun_lost_pid(err)) {
      g_printerr("stratsim: mpirun reported a rank with PID 0 exiting improperly (Open MPI's "
                 "launcher losing a quick rank's pid): running it again\n");
      g_error_free(local);
      continue;
    }
    /* The runner's own message: its first "stratsim-cpu-runner:" line, else the last line. */
    g_autofree char *line = NULL;
    if (err) {
      g_auto(GStrv) lines = g_strsplit(err, "\n", -1);
      for (char **l = lines; *l && !line; l++)
        if (strstr(*l, "stratsim-cpu-runner:") || strstr(*l, "stratsim-runner:")) line = g_strdup(g_strstrip(*l));
    }
    if (!line) line = last_line(err && *err ? err : out);
    g_set_error(error, VAL_RUN_ERROR, VAL_RUN_ERROR_FAILED, "%s failed (%s): %s",
                (const char *)g_ptr_array_index(argv, 0), local->message, line);
    g_error_free(local);
    return FALSE;
  }
}

/* mpirun -np @ranks (as root: --allow-run-as-root) --oversubscribe @runner */
static GPtrArray *mpirun_argv(int ranks, const char *runner, GError **error) {
  char *mpirun = find_binary("mpirun", "MPIRUN");
  if (!mpirun) {
    g_set_error(error, VAL_RUN_ERROR, VAL_RUN_ERROR_MISSING,
                "mpirun is not on PATH (install openmpi-bin): the CPU runner needs it");
    return NULL;
  }
  GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(argv, mpirun);
  if (geteuid() == 0) g_ptr_array_add(argv, g_strdup("--allow-run-as-root"));
  g_ptr_array_add(argv, g_strdup("--oversubscribe"));
  g_ptr_array_add(argv, g_strdup("-np"));
  g_ptr_array_add(argv, g_strdup_printf("%d", ranks));
  g_ptr_array_add(argv, g_strdup(runner));
  return argv;
}

gboolean val_run_runner(ValRunner runner, const char *plan_path, int ranks,
                        const char *measurements_path, gboolean microbench_only, char **output,
                        GError **error) {
  if (ranks < 1) {
    g_set_error(error, VAL_RUN_ERROR, VAL_RUN_ERROR_INPUT, "a run needs at least one rank");
    return FALSE;
  }
  g_autofree char *binary = val_runner_find(runner, error);
  if (!binary) return FALSE;
  GPtrArray *argv;
  if (runner == VAL_RUNNER_CPU) {
    if (!(argv = mpirun_argv(ranks, binary, error))) return FALSE;
  } else {
    argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_strdup(binary));
  }
  g_ptr_array_add(argv, g_strdup(plan_path));
  g_ptr_array_add(argv, g_strdup("-o"));
  g_ptr_array_add(argv, g_strdup(measurements_path));
  if (microbench_only) g_ptr_array_add(argv, g_strdup("--microbench-only"));
  gboolean ok = spawn(argv, runner == VAL_RUNNER_CPU, output, error);
  g_ptr_array_unref(argv);
  return ok;
}

gboolean val_host_cluster(const char *path, int ranks, char **output, GError **error) {
  if (ranks < 2) {
    g_set_error(error, VAL_RUN_ERROR, VAL_RUN_ERROR_INPUT,
                "--ranks must be at least 2: the link between ranks is measured");
    return FALSE;
  }
  g_autofree char *binary = val_runner_find(VAL_RUNNER_CPU, error);
  if (!binary) return FALSE;
  GPtrArray *argv = mpirun_argv(ranks, binary, error);
  if (!argv) return FALSE;
  g_ptr_array_add(argv, g_strdup("--host-cluster"));
  g_ptr_array_add(argv, g_strdup(path));
  gboolean ok = spawn(argv, TRUE, output, error);
  g_ptr_array_unref(argv);
  return ok;
}
