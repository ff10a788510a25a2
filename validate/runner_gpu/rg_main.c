/* validate/runner_gpu/main — `stratsim-runner PLAN.json -o MEASUREMENTS.json`: reads a plan
 * (validate/PLAN.md), runs its iterations and micro-benchmarks on the GPUs and writes the run
 * measurements. Errors: one line on stderr, exit 2 for bad input, 1 for failures (no device,
 * CUDA/NCCL errors). Under mpirun (with MPI built in) each process drives one rank; rank 0
 * writes the file. */
#include "validate/runner_gpu/rg.h"

#include "devices/dev_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RG_HAVE_MPI
#include <mpi.h>
#endif

#define RG_HOST_MAX 256

static gboolean launched_by_mpirun(void) {
  return g_getenv("OMPI_COMM_WORLD_SIZE") || g_getenv("PMIX_RANK") || g_getenv("PMI_SIZE");
}

void rg_mpi_barrier(const RgRun *run) {
#ifdef RG_HAVE_MPI
  if (run->mpi) MPI_Barrier(MPI_COMM_WORLD);
#else
  (void)run;
#endif
}

void rg_mpi_max_to_root(const RgRun *run, double *values, int n) {
#ifdef RG_HAVE_MPI
  if (!run->mpi) return;
  double *out = g_new(double, n);
  MPI_Reduce(values, out, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (run->mpi_rank == 0) memcpy(values, out, sizeof(double) * (size_t)n);
  g_free(out);
#else
  (void)run, (void)values, (void)n;
#endif
}

/* One line on stderr and the exit status for @error. Under MPI, errors before the NCCL world
 * exists (options, the plan, devices, the process count) are the same on every rank: rank 0
 * says it and all exit; later ones are a rank's own: it says which and stops the whole job
 * (the other ranks would wait in NCCL for it). */
static int fail(const RgRun *run, GError *error) {
  int status = error->domain == RG_ERROR && error->code == RG_ERROR_FAILED ? 1
               : error->domain == VAL_PLAN_ERROR && error->code == VAL_PLAN_ERROR_IO ? 1
                                                                                     : 2;
  gboolean shared = !run->mpi || !run->world;
  if (!shared)
    fprintf(stderr, "stratsim-runner: rank %d: %s\n", run->mpi_rank, error->message);
  else if (run->mpi_rank == 0)
    fprintf(stderr, "stratsim-runner: %s\n", error->message);
  g_error_free(error);
#ifdef RG_HAVE_MPI
  if (!shared) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  return status;
}

/* Host names per plan rank (gathered under MPI). */
static void gather_hosts(RgRun *run) {
  const ValPlan *plan = run->plan;
  run->hosts = g_new0(char *, plan->ranks);
#ifdef RG_HAVE_MPI
  if (run->mpi) {
    char mine[RG_HOST_MAX];
    char *all = g_new0(char, (gsize)RG_HOST_MAX * (gsize)run->mpi_size);
    g_strlcpy(mine, g_get_host_name(), sizeof mine);
    MPI_Allgather(mine, RG_HOST_MAX, MPI_CHAR, all, RG_HOST_MAX, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < plan->ranks; r++) run->hosts[r] = g_strndup(all + (gsize)r * RG_HOST_MAX, RG_HOST_MAX);
    g_free(all);
    return;
  }
#endif
  for (int r = 0; r < plan->ranks; r++) run->hosts[r] = g_strdup(g_get_host_name());
}

/* MPI mode: this process's device (its node-local rank) and the world communicator (rank 0
 * makes the ncclUniqueId, MPI broadcasts it). */
static gboolean mpi_setup(RgRun *run, int n_devices, GError **error) {
#ifdef RG_HAVE_MPI
  MPI_Comm node;
  int local_rank = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, run->mpi_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  if (local_rank >= n_devices) {
    g_set_error(error, RG_ERROR, RG_ERROR_FAILED,
                "rank %d is process %d on host %s, which has %d CUDA device(s) visible: start at "
                "most one process per GPU on each host",
                run->mpi_rank, local_rank, g_get_host_name(), n_devices);
    return FALSE;
  }
  run->mpi_device = local_rank;
  ncclUniqueId id;
  if (run->mpi_rank == 0 && !rg_nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId", error))
    return FALSE;
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  return rg_cuda_ok(cudaSetDevice(run->mpi_device), "cudaSetDevice", error) &&
         rg_nccl_ok(ncclCommInitRank(&run->world, run->mpi_size, id, run->mpi_rank),
                    "ncclCommInitRank", error);
#else
  (void)run, (void)n_devices, (void)error;
  g_assert_not_reached();
  return FALSE;
#endif
}

/* Step medians of every rank into @m on rank 0 (gathered under MPI). */
static void add_steps(RgRun *run, ValMeasurements *m) {
  if (!run->mpi) {
    for (int l = 0; l < run->n_local; l++) {
      const RgRank *rr = &run->local[l];
      for (guint i = 0; i < rr->program->n_steps; i++)
        val_measurements_add_step(m, rr->rank, rr->program->steps[i].id, &rr->median_s[i], 1);
    }
    return;
  }
#ifdef RG_HAVE_MPI
  const ValPlan *plan = run->plan;
  int *counts = NULL, *offsets = NULL;
  double *all = NULL;
  if (run->mpi_rank == 0) {
    counts = g_new(int, plan->ranks);
    offsets = g_new(int, plan->ranks);
    int total = 0;
    for (int r = 0; r < plan->ranks; r++) {
      counts[r] = (int)plan->programs[r].n_steps;
      offsets[r] = total;
      total += counts[r];
    }
    all = g_new(double, MAX(total, 1));
  }
  const RgRank *rr = &run->local[0];
  MPI_Gatherv(rr->median_s, (int)rr->program->n_steps, MPI_DOUBLE, all, counts, offsets,
              MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (run->mpi_rank == 0)
    for (int r = 0; r < plan->ranks; r++)
      for (guint i = 0; i < plan->programs[r].n_steps; i++)
        val_measurements_add_step(m, r, plan->programs[r].steps[i].id, &all[offsets[r] + i], 1);
  g_free(counts);
  g_free(offsets);
  g_free(all);
#endif
}

typedef struct {
  char *output;
  int warmup, iterations;  /* -1: the plan's */
  gboolean microbench_only, no_microbench;
  char *device_kind;
} Options;

static gboolean parse_options(int *argc, char ***argv, Options *o, char **plan_path,
                              GError **error) {
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output, "Measurements file to write (required)",
       "FILE"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &o->warmup, "Warm-up iterations (default: the plan's)", "N"},
      {"iterations", 0, 0, G_OPTION_ARG_INT, &o->iterations,
       "Timed iterations (default: the plan's); micro-benchmarks take the median of as many", "N"},
      {"microbench-only", 0, 0, G_OPTION_ARG_NONE, &o->microbench_only,
       "Run only the plan's micro-benchmarks", NULL},
      {"no-microbench", 0, 0, G_OPTION_ARG_NONE, &o->no_microbench,
       "Skip the plan's micro-benchmarks", NULL},
      {"device-kind", 0, 0, G_OPTION_ARG_STRING, &o->device_kind,
       "stratsim device kind to record (default: guessed from the device name)", "KIND"},
      G_OPTION_ENTRY_NULL};
  GOptionContext *ctx = g_option_context_new("PLAN.json - run a stratsim plan on GPUs");
  g_option_context_set_summary(ctx, "Executes a plan from `stratsim validate plan` with cuBLAS and "
                                    "NCCL and writes run measurements (validate/PLAN.md).");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *local = NULL;
  gboolean ok = g_option_context_parse(ctx, argc, argv, &local);
  g_option_context_free(ctx);
  if (!ok) {
    g_set_error(error, RG_ERROR, RG_ERROR_INPUT, "%s (see --help)", local->message);
    g_error_free(local);
    return FALSE;
  }
  if (*argc != 2) {
    g_set_error(error, RG_ERROR, RG_ERROR_INPUT,
                "usage: stratsim-runner PLAN.json -o MEASUREMENTS.json [--warmup N] "
                "[--iterations N] [--microbench-only] [--no-microbench]");
    return FALSE;
  }
  *plan_path = (*argv)[1];
  if (!o->output) {
    g_set_error(error, RG_ERROR, RG_ERROR_INPUT, "-o MEASUREMENTS.json is required");
    return FALSE;
  }
  if (o->microbench_only && o->no_microbench) {
    g_set_error(error, RG_ERROR, RG_ERROR_INPUT,
                "--microbench-only and --no-microbench exclude each other");
    return FALSE;
  }
  if (o->device_kind && !g_strv_contains(dev_kind_names(), o->device_kind)) {
    char *known = g_strjoinv(", ", (char **)dev_kind_names());
    g_set_error(error, RG_ERROR, RG_ERROR_INPUT, "--device-kind %s: unknown (known: %s)",
                o->device_kind, known);
    g_free(known);
    return FALSE;
  }
  if (o->warmup != -1 && (o->warmup < 0 || o->warmup > VAL_PLAN_MAX_ITERATIONS_READ)) {
    g_set_error(error, RG_ERROR, RG_ERROR_INPUT, "--warmup %d: must be in 0..%d", o->warmup,
                VAL_PLAN_MAX_ITERATIONS_READ);
    return FALSE;
  }
  if (o->iterations != -1 && (o->iterations < 1 || o->iterations > VAL_PLAN_MAX_ITERATIONS_READ)) {
    g_set_error(error, RG_ERROR, RG_ERROR_INPUT, "--iterations %d: must be in 1..%d",
                o->iterations, VAL_PLAN_MAX_ITERATIONS_READ);
    return FALSE;
  }
  return TRUE;
}

int main(int argc, char **argv) {
  int status = 0;
  char **original_argv = g_strdupv(argv); /* the command line as typed, for the file */
  int original_argc = argc;
  Options o = {NULL, -1, -1, FALSE, FALSE, NULL};
  RgRun run;
  memset(&run, 0, sizeof run);
  run.mpi_size = 1;
  ValPlan *plan = NULL;
  ValMeasurements *m = NULL;
  char *plan_path = NULL, *kind = NULL;
  GError *error = NULL;

#ifdef RG_HAVE_MPI
  if (launched_by_mpirun()) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
      fprintf(stderr, "stratsim-runner: MPI_Init failed\n");
      return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &run.mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &run.mpi_size);
    run.mpi = run.mpi_size > 1;
  }
#else
  const char *size_env = g_getenv("OMPI_COMM_WORLD_SIZE");
  if (launched_by_mpirun() && size_env && atoi(size_env) > 1) {
    fprintf(stderr, "stratsim-runner: this build has no MPI: run one process over the host's "
                    "GPUs, or rebuild with MPI (libopenmpi-dev) for mpirun\n");
    return 1;
  }
#endif

  if (!parse_options(&argc, &argv, &o, &plan_path, &error)) goto fail;
  plan = val_plan_read(plan_path, &error);
  if (!plan) goto fail;
  run.plan = plan;
  run.warmup = o.warmup >= 0 ? o.warmup : plan->warmup;
  run.iterations = o.iterations >= 1 ? o.iterations : plan->iterations;

  int n_devices = 0;
  cudaError_t e = cudaGetDeviceCount(&n_devices);
  if (e != cudaSuccess || n_devices == 0) {
    g_set_error(&error, RG_ERROR, RG_ERROR_FAILED,
                "no CUDA device visible (cudaGetDeviceCount: %s)",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    goto fail;
  }
  if (run.mpi && run.mpi_size != plan->ranks) {
    g_set_error(&error, RG_ERROR, RG_ERROR_INPUT,
                "%s: the plan has %d rank(s) but mpirun started %d processes: use mpirun -np %d",
                plan_path, plan->ranks, run.mpi_size, plan->ranks);
    goto fail;
  }
  if (!run.mpi && plan->ranks > n_devices) {
    g_set_error(&error, RG_ERROR, RG_ERROR_FAILED,
                "%s: the plan has %d ranks but this host has %d CUDA device(s) visible: run it "
                "with one process per GPU, mpirun -np %d stratsim-runner ... over enough hosts%s",
                plan_path, plan->ranks, n_devices, plan->ranks,
#ifdef RG_HAVE_MPI
                ""
#else
                " (this build has no MPI: rebuild with libopenmpi-dev)"
#endif
    );
    goto fail;
  }
  if (run.mpi && !mpi_setup(&run, n_devices, &error)) goto fail;
  gather_hosts(&run);
  if (!rg_run_setup(&run, &error)) goto fail;

  m = val_measurements_new(plan, "gpu");
  val_measurements_set_warmup(m, run.warmup);
  kind = rg_environment(m, run.local[0].device, o.device_kind, original_argc, original_argv, &error);
  if (!kind && error) goto fail;
  val_measurements_set_env_string(m, "mode", run.mpi ? "mpi" : "single-process");
  if (!o.microbench_only) {
    if (!rg_run_iterations(&run, &error)) goto fail;
    if (run.mpi_rank == 0)
      for (int i = 0; i < run.iterations; i++) val_measurements_add_iteration(m, run.iteration_s[i]);
    add_steps(&run, m);
  }
  if (!o.no_microbench) {
    char *source = g_strdup_printf(
        "stratsim-runner: cuBLAS GEMMs (cublasGemmStridedBatchedEx) and NCCL collectives (fp32 "
        "elements), CUDA events, median of %d after %d warm-up; non-GEMM ops timed as a "
        "device-to-device copy of their bytes (a stand-in, not the real kernel)",
        run.iterations, run.warmup);
    /* without a known kind, the device name keys the entries (`stratsim profiles import` then
     * stores them under it) */
    char *device_name = NULL;
    if (!kind) {
      struct cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, run.local[0].device) == cudaSuccess)
        device_name = g_strdup(prop.name);
    }
    val_measurements_set_microbench_info(m, kind ? kind : device_name, source);
    g_free(device_name);
    g_free(source);
    if (!rg_run_microbenchmarks(&run, m, &error)) goto fail;
  }
  if (run.mpi_rank == 0 && !val_measurements_write(m, o.output, &error)) goto fail;
  goto out;

fail:
  status = fail(&run, error);
out:
  /* after a failure the GPUs are left to the driver (rg_run_teardown says why) */
  rg_run_teardown(&run, status == 0);
  if (run.world && status == 0) ncclCommDestroy(run.world);
  if (run.hosts)
    for (int r = 0; r < plan->ranks; r++) g_free(run.hosts[r]);
  g_free(run.hosts);
  val_measurements_free(m);
  val_plan_free(plan);
  g_free(kind);
  g_free(o.output);
  g_free(o.device_kind);
  g_strfreev(original_argv);
#ifdef RG_HAVE_MPI
  if (run.mpi_size > 1 || launched_by_mpirun()) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
#endif
  return status;
}
