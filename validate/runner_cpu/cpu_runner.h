/* validate/runner_cpu — stratsim-cpu-runner: a plan (validate/PLAN.md) executed on the MPI ranks
 * of this machine, one rank per plan rank, private to the runner's files.
 *
 * What it can say and what it cannot (validate/README.md, "The CPU runner"): each rank runs its
 * program as ONE stream in list order (a CPU process has no concurrent CUDA streams), so compute
 * and communication that the simulator overlaps are serialized here; GEMMs run through OpenBLAS
 * sgemm on one thread; fp16/bf16 steps are computed in fp32 with the planned byte traffic; an
 * elementwise step is one memory pass (read half the bytes, write the other half); collectives
 * and transfers go through MPI on one communicator per plan group. Sends and receives are
 * nonblocking calls waited for at once: the plan's order rules (checked by val_plan_parse)
 * guarantee that this cannot deadlock, and a step's time is then its whole transfer.
 * Wall times come from MPI_Wtime. */
#ifndef STRATSIM_CPU_RUNNER_H
#define STRATSIM_CPU_RUNNER_H

#include <glib.h>
#include <mpi.h>

#include "validate/val_plan.h"

/* Per-rank state: buffers sized for the largest step and one communicator per group. */
typedef struct {
  int rank, size;
  float *a, *b, *c;            /* GEMM operands (the largest batch*m*k, batch*k*n, batch*m*n) */
  gsize gemm_a, gemm_b, gemm_c; /* their sizes in floats */
  float *src, *dst;            /* elementwise passes and communication buffers */
  gsize buffer;                /* floats in each */
  MPI_Comm *comms;             /* per plan group: MPI_COMM_NULL where this rank is no member */
  int n_comms;
} CpuRank;

/* Sizes the buffers for @plan's steps and micro-benchmarks on this rank (and at least @floats
 * floats for the host measurements) and creates the group communicators (collective over
 * MPI_COMM_WORLD). */
void cpu_rank_init(CpuRank *r, const ValPlan *plan, gsize floats);
void cpu_rank_clear(CpuRank *r);

/* One kernel: C = A B per batch entry through cblas_sgemm; a memory pass over @bytes. */
void cpu_gemm(CpuRank *r, gint64 m, gint64 n, gint64 k, gint64 batch);
void cpu_memory_pass(CpuRank *r, gint64 bytes);
/* One collective of @bytes (CALIBRATION.md's convention) on @comm; send_recv is nccl-tests'
 * ring (each rank sends to the next, receives from the previous), reduce goes to rank 0. */
void cpu_collective(CpuRank *r, ValCollectiveKind kind, gint64 bytes, MPI_Comm comm);
/* One step of @plan on this rank (its program's step @index). */
void cpu_run_step(CpuRank *r, const ValPlan *plan, const ValStep *step);

/* Runs the plan: warmup + timed iterations; fills, on rank 0, @iterations_s (plan->iterations
 * entries) and @step_times (per rank, per step, per timed iteration: rank-major, gathered from
 * every rank; offsets of each rank's block in @step_offsets, plan->ranks + 1 entries). */
void cpu_run_plan(CpuRank *r, const ValPlan *plan, double *iterations_s, double **step_times,
                  guint64 **step_offsets);

/* Micro-benchmarks of the plan's lists; on rank 0 the time of each (the slowest rank's median). */
void cpu_bench_ops(CpuRank *r, const ValPlan *plan, double *times_s);
void cpu_bench_collectives(CpuRank *r, const ValPlan *plan, double *times_s);

/* Timed repetitions of the micro-benchmarks. */
#define CPU_BENCH_WARMUP 3
#define CPU_BENCH_REPS 15

/* `--host-cluster OUT`: measures this machine and writes a cluster JSON in the preset format
 * (rank 0 writes), and beside it OUT with ".json" replaced by ".collectives.json": the
 * collectives over all ranks at several sizes as a `stratsim calibrate` measurements file.
 * @command is the command line recorded in each source. FALSE with @error (rank 0) when a
 * file cannot be written. */
gboolean cpu_host_cluster(CpuRank *r, const char *path, const char *command, GError **error);

/* The CPU's model name (/proc/cpuinfo), or "unknown CPU"; caller g_frees. */
char *cpu_model_name(void);

#endif
