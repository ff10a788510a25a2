/* validate/runner_cpu/main — stratsim-cpu-runner: runs a plan on the MPI ranks of this machine
 * and writes the run measurements (validate/PLAN.md), or measures the machine as a cluster.
 *
 *   mpirun -np R stratsim-cpu-runner PLAN.json -o MEASUREMENTS.json [--no-microbench]
 *                                    [--microbench-only]
 *   mpirun -np R stratsim-cpu-runner --host-cluster HOST.json
 *
 * Exit status 0 on success, 2 for a bad plan or arguments (one line on stderr from rank 0),
 * 1 when a file cannot be written. */
#include "validate/runner_cpu/cpu_runner.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_BAD_INPUT 2

typedef struct {
  char *output, *host_cluster;
  gboolean no_microbench, microbench_only;
  char *plan;
} Options;

static gboolean parse_options(int argc, char **argv, Options *o, GError **error) {
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output, "write the run measurements here", "FILE"},
      {"no-microbench", 0, 0, G_OPTION_ARG_NONE, &o->no_microbench, "skip the plan's micro-benchmarks", NULL},
      {"microbench-only", 0, 0, G_OPTION_ARG_NONE, &o->microbench_only, "run only the plan's micro-benchmarks", NULL},
      {"host-cluster", 0, 0, G_OPTION_ARG_FILENAME, &o->host_cluster, "measure this machine and write it as a cluster JSON file", "FILE"},
      {NULL}};
  GOptionContext *ctx = g_option_context_new("[PLAN.json]");
  g_option_context_set_summary(ctx, "Runs a stratsim plan on the MPI ranks of this machine "
                                    "(OpenBLAS GEMMs, MPI collectives), or measures the machine.");
  g_option_context_add_main_entries(ctx, entries, NULL);
  gboolean ok = g_option_context_parse(ctx, &argc, &argv, error);
  g_option_context_free(ctx);
  if (!ok) return FALSE;
  if (o->host_cluster) {
    if (argc > 1) {
      g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED, "--host-cluster takes no plan");
      return FALSE;
    }
    return TRUE;
  }
  if (argc != 2 || !o->output) {
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                "name one plan file and --output FILE (or --host-cluster FILE)");
    return FALSE;
  }
  if (o->no_microbench && o->microbench_only) {
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                "--no-microbench and --microbench-only exclude each other");
    return FALSE;
  }
  o->plan = g_strdup(argv[1]);
  return TRUE;
}

static char *command_line(int argc, char **argv) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < argc; i++) {
    g_autofree char *q = g_shell_quote(argv[i]);
    g_string_append_printf(s, "%s%s", i ? " " : "", strchr(argv[i], ' ') ? q : argv[i]);
  }
  return g_string_free(s, FALSE);
}

static char *mpi_version(void) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  char *nl = strchr(version, '\n');
  if (nl) *nl = '\0';
  return g_strstrip(g_strdup(version));
}

/* /proc/loadavg's first three fields ("4.78 4.87 3.95"), or NULL: other processes on the
 * cores the ranks run on stretch wall times, which a reader of the measurements must know. */
static char *load_average(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL)) return NULL;
  g_auto(GStrv) fields = g_strsplit(g_strstrip(text), " ", 4);
  if (g_strv_length(fields) < 3) return NULL;
  return g_strdup_printf("%s %s %s", fields[0], fields[1], fields[2]);
}

/* Rank 0: the measurements file of a run. */
static gboolean write_measurements(const CpuRank *r, const ValPlan *plan, const Options *o,
                                   int argc, char **argv, const double *iterations_s,
                                   const double *step_times, const guint64 *offsets,
                                   const double *op_times, const double *coll_times,
                                   const char *load_before, GError **error) {
  ValMeasurements *m = val_measurements_new(plan, "cpu");
  g_autofree char *cpu = cpu_model_name();
  g_autofree char *mpi = mpi_version();
  const char *kind = plan->predicted_device ? plan->predicted_device : "cpu";
  val_measurements_set_env_string(m, "device", cpu);
  val_measurements_set_env_string(m, "device_kind", kind);
  val_measurements_set_env_defaults(m, argc, argv);
  val_measurements_set_env_string(m, "blas", openblas_get_config());
  val_measurements_set_env_int(m, "blas_threads_per_rank", 1);
  val_measurements_set_env_string(m, "mpi", mpi);
  val_measurements_set_env_int(m, "mpi_ranks", r->size);
  val_measurements_set_env_string(m, "compute_dtype", "fp32");
  g_autofree char *load_after = load_average();
  g_autofree char *cores = g_strdup_printf("%d", g_get_num_processors());
  val_measurements_set_env_string(m, "cpu_cores", cores);
  val_measurements_set_env_string(m, "load_average_before", load_before);
  val_measurements_set_env_string(m, "load_average_after", load_after);
  val_measurements_set_env_string(m, "mpi_yield_when_idle", g_getenv("OMPI_MCA_mpi_yield_when_idle"));
  val_measurements_set_env_string(
      m, "note",
      "CPU runner: one stream per rank (compute and communication serialized in plan order); "
      "GEMMs by OpenBLAS sgemm, fp16/bf16/tf32 steps computed in fp32 with the planned bytes; "
      "elementwise steps as one memory pass; collectives and send/recv through MPI");
  if (!o->microbench_only) {
    for (int i = 0; i < plan->iterations; i++) val_measurements_add_iteration(m, iterations_s[i]);
    for (int rank = 0; rank < plan->ranks; rank++) {
      const ValProgram *p = &plan->programs[rank];
      for (guint i = 0; i < p->n_steps; i++)
        val_measurements_add_step(m, rank, p->steps[i].id,
                                  step_times + offsets[rank] + (guint64)i * plan->iterations,
                                  (guint)plan->iterations);
    }
  }
  if (!o->no_microbench) {
    g_autofree char *source = g_strdup_printf(
        "stratsim-cpu-runner on %s (%s), %d MPI ranks at once, OpenBLAS sgemm on 1 thread per "
        "rank (%s), median of %d after %d warm-up, slowest rank; %s",
        g_get_host_name(), cpu, r->size, openblas_get_config(), CPU_BENCH_REPS, CPU_BENCH_WARMUP,
        plan->dtype == VAL_DTYPE_FP32 ? "fp32" : "computed in fp32 for the plan's dtype");
    val_measurements_set_microbench_info(m, kind, source);
    for (guint i = 0; i < plan->n_micro_ops; i++)
      val_measurements_add_kernel(m, &plan->micro_ops[i], op_times[i]);
    for (guint i = 0; i < plan->n_micro_collectives; i++)
      if (isfinite(coll_times[i]) && coll_times[i] > 0)
        val_measurements_add_collective(m, &plan->micro_collectives[i], coll_times[i]);
  }
  gboolean ok = val_measurements_write(m, o->output, error);
  val_measurements_free(m);
  return ok;
}

static int run(int argc, char **argv, const Options *o, int rank, int size) {
  GError *error = NULL;
  g_autofree char *command = command_line(argc, argv);
  if (o->host_cluster) {
    CpuRank r;
    cpu_rank_init(&r, NULL, (gsize)(G_GINT64_CONSTANT(64) << 20) / 4);
    gboolean ok = cpu_host_cluster(&r, o->host_cluster, command, &error);
    cpu_rank_clear(&r);
    if (!ok) {
      /* Only rank 0 writes, and only it can fail after the measurements. */
      int status = error->domain == G_FILE_ERROR && error->code == G_FILE_ERROR_INVAL ? EXIT_BAD_INPUT : 1;
      if (rank == 0) fprintf(stderr, "stratsim-cpu-runner: %s\n", error->message);
      g_error_free(error);
      return status;
    }
    return 0;
  }
  ValPlan *plan = val_plan_read(o->plan, &error);
  if (!plan) {
    if (rank == 0) fprintf(stderr, "stratsim-cpu-runner: %s\n", error->message);
    int status = error->code == VAL_PLAN_ERROR_IO ? 1 : EXIT_BAD_INPUT;
    g_error_free(error);
    return status;
  }
  if (plan->ranks != size) {
    if (rank == 0)
      fprintf(stderr, "stratsim-cpu-runner: %s has %d ranks but mpirun started %d (mpirun -np %d)\n",
              o->plan, plan->ranks, size, plan->ranks);
    val_plan_free(plan);
    return EXIT_BAD_INPUT;
  }
  g_autofree char *load_before = load_average();
  CpuRank r;
  cpu_rank_init(&r, plan, 0);
  g_autofree double *iterations_s = g_new0(double, plan->iterations);
  double *step_times = NULL;
  guint64 *offsets = NULL;
  g_autofree double *op_times = g_new0(double, plan->n_micro_ops + 1);
  g_autofree double *coll_times = g_new0(double, plan->n_micro_collectives + 1);
  if (!o->microbench_only) cpu_run_plan(&r, plan, iterations_s, &step_times, &offsets);
  if (!o->no_microbench) {
    cpu_bench_ops(&r, plan, op_times);
    cpu_bench_collectives(&r, plan, coll_times);
  }
  int status = 0;
  if (rank == 0 && !write_measurements(&r, plan, o, argc, argv, iterations_s, step_times, offsets,
                                       op_times, coll_times, load_before, &error)) {
    fprintf(stderr, "stratsim-cpu-runner: %s\n", error->message);
    g_error_free(error);
    status = 1;
  }
  if (rank == 0 && status == 0) {
    if (!o->microbench_only) {
      double med = val_median(iterations_s, (guint)plan->iterations);
      printf("cpu runner: %s on %d ranks: iteration %.6g s measured (median of %d after %d "
             "warm-up), %.6g s predicted; %s\n", o->plan, size, med, plan->iterations,
             plan->warmup, plan->predicted_iteration_time_s, o->output);
    } else {
      printf("cpu runner: %s: %u op and %u collective micro-benchmarks in %s\n", o->plan,
             plan->n_micro_ops, plan->n_micro_collectives, o->output);
    }
  }
  g_free(step_times);
  g_free(offsets);
  cpu_rank_clear(&r);
  val_plan_free(plan);
  return status;
}

int main(int argc, char **argv) {
  /* One BLAS thread per rank: the ranks are the parallelism (set before OpenBLAS starts). */
  g_setenv("OPENBLAS_NUM_THREADS", "1", TRUE);
  MPI_Init(&argc, &argv);
  openblas_set_num_threads(1);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_autofree char **args = g_memdup2(argv, sizeof(char *) * (gsize)(argc + 1));
  int nargs = argc;
  Options o = {0};
  GError *error = NULL;
  int status;
  if (!parse_options(nargs, args, &o, &error)) {
    if (rank == 0) fprintf(stderr, "stratsim-cpu-runner: %s\n", error->message);
    g_error_free(error);
    status = EXIT_BAD_INPUT;
  } else {
    status = run(argc, argv, &o, rank, size);
  }
  g_free(o.output);
  g_free(o.host_cluster);
  g_free(o.plan);
  MPI_Finalize();
  return status;
}
