/* validate/run — launching the runners (`stratsim validate run`, `validate host-cluster`,
 * `stratsim profile`).
 *
 * The CPU runner is `mpirun -np R stratsim-cpu-runner ...` (one rank per plan rank, OpenBLAS
 * on one thread per rank; `--allow-run-as-root` when running as root, `--oversubscribe` so that
 * more ranks than cores can start); the GPU runner `stratsim-runner PLAN -o OUT` (one process
 * over the GPUs of the host); the CPU runner's ranks yield their core while they wait in MPI
 * (OMPI_MCA_mpi_yield_when_idle=1 unless the environment sets it). Both binaries are looked up next to the running stratsim first
 * (the build directory), then on PATH; STRATSIM_CPU_RUNNER, STRATSIM_GPU_RUNNER and MPIRUN
 * override. */
#ifndef STRATSIM_VAL_RUN_H
#define STRATSIM_VAL_RUN_H

#include <glib.h>

G_BEGIN_DECLS

#define VAL_RUN_ERROR (val_run_error_quark())
GQuark val_run_error_quark(void);
typedef enum {
  VAL_RUN_ERROR_MISSING,  /* a runner or mpirun is not there (exit status 1) */
  VAL_RUN_ERROR_INPUT,    /* bad arguments: an unknown runner, no ranks (exit status 2) */
  VAL_RUN_ERROR_FAILED,   /* the runner ran and failed (exit status 1; its last line) */
} ValRunError;

typedef enum { VAL_RUNNER_CPU, VAL_RUNNER_GPU } ValRunner;

gboolean val_runner_parse(const char *text, ValRunner *out, GError **error);

/* Path of the runner binary (caller g_frees), or NULL with VAL_RUN_ERROR_MISSING saying how to
 * build it. */
char *val_runner_find(ValRunner runner, GError **error);

/* Runs the @runner on plan @plan_path with @ranks ranks (the CPU runner's mpirun -np), writing
 * @measurements_path; @microbench_only runs only the plan's micro-benchmarks. The runner's
 * stdout is returned in @output (nullable; g_free). */
gboolean val_run_runner(ValRunner runner, const char *plan_path, int ranks,
                        const char *measurements_path, gboolean microbench_only, char **output,
                        GError **error);

/* `mpirun -np @ranks stratsim-cpu-runner --host-cluster @path`: this machine as a cluster JSON
 * file fitted from the runner's micro-benchmarks. */
gboolean val_host_cluster(const char *path, int ranks, char **output, GError **error);

/* TRUE when mpirun's stderr @err says only that Open MPI's launcher lost track of a rank that
 * ran to its end: Open MPI 4.x reports "process rank N with PID 0 ... exiting improperly" when a
 * short-lived rank exits before the launcher recorded its pid (PID 0 is the pid it never
 * stored), also for a hello-world that calls MPI_Finalize (open-mpi/ompi issues 7833, 9389,
 * 12607; prrte PR 2713 describes the same race in Open MPI 5's launcher). A rank that exits
 * without MPI_Finalize, or on a signal, is reported with its real pid and does not match. The
 * CPU runner's launches (above) and the tests' mpirun helper run such a command again. */
gboolean val_mpirun_lost_pid(const char *err);

G_END_DECLS

#endif
