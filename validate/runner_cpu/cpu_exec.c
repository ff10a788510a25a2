/* validate/runner_cpu/exec — one rank's program executed in list order, and the micro-benchmarks
 * (cpu_runner.h). Buffers are allocated once, for the largest step; their contents do not
 * matter (small constants: no denormals, no overflow) but are real memory that every kernel
 * reads and writes. */
#include "validate/runner_cpu/cpu_runner.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define SEND_RECV_TAG 7

static gsize floats_of(gint64 bytes) {
  return (gsize)((bytes + 3) / 4);
}

/* Elements per member of a collective of @count floats over @p ranks (rounded up). */
static gsize chunk_of(gsize count, int p) {
  gsize chunk = (count + (gsize)p - 1) / (gsize)p;
  return chunk ? chunk : 1;
}

/* The bytes of an elementwise micro-benchmark: those of a plan step of the same size and pass,
 * else a read and a write of its elements. */
static gint64 micro_op_bytes(const ValPlan *plan, const ValMicroOp *op) {
  for (int r = 0; r < plan->ranks; r++) {
    const ValProgram *p = &plan->programs[r];
    for (guint i = 0; i < p->n_steps; i++) {
      const ValStep *s = &p->steps[i];
      if (s->kind != VAL_STEP_ELEMENTWISE || s->elements != op->elements) continue;
      gboolean backward = s->phase && strcmp(s->phase, "backward") == 0;
      if (backward == op->backward) return s->bytes;
    }
  }
  return op->elements * (gint64)val_dtype_size(op->dtype) * 2;
}

static void need_gemm(CpuRank *r, gint64 m, gint64 n, gint64 k, gint64 batch) {
  r->gemm_a = MAX(r->gemm_a, (gsize)(batch * m * k));
  r->gemm_b = MAX(r->gemm_b, (gsize)(batch * k * n));
  r->gemm_c = MAX(r->gemm_c, (gsize)(batch * m * n));
}

static void need_collective(CpuRank *r, gint64 bytes, int p) {
  gsize count = floats_of(bytes);
  r->buffer = MAX(r->buffer, chunk_of(count, p) * (gsize)p);
}

static float *filled(gsize n, float value) {
  float *x = g_new(float, n ? n : 1);
  for (gsize i = 0; i < n; i++) x[i] = value;
  return x;
}

void cpu_rank_init(CpuRank *r, const ValPlan *plan, gsize floats) {
  memset(r, 0, sizeof *r);
  MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r->size);
  r->buffer = MAX(floats, 1024);
  if (!plan) need_gemm(r, 1024, 1024, 1024, 1); /* the host measurements' largest sgemm */
  if (plan) {
    const ValProgram *p = &plan->programs[r->rank];
    for (guint i = 0; i < p->n_steps; i++) {
      const ValStep *s = &p->steps[i];
      switch (s->kind) {
      case VAL_STEP_GEMM: need_gemm(r, s->m, s->n, s->k, s->batch); break;
      case VAL_STEP_ELEMENTWISE: r->buffer = MAX(r->buffer, floats_of((s->bytes + 1) / 2)); break;
      case VAL_STEP_COLLECTIVE: need_collective(r, s->bytes, plan->groups[s->group].n_ranks); break;
      default: r->buffer = MAX(r->buffer, floats_of(s->bytes)); break;
      }
    }
    for (guint i = 0; i < plan->n_micro_ops; i++) {
      const ValMicroOp *op = &plan->micro_ops[i];
      if (op->gemm) need_gemm(r, op->m, op->n, op->k, op->batch);
      else r->buffer = MAX(r->buffer, floats_of((micro_op_bytes(plan, op) + 1) / 2));
    }
    for (guint i = 0; i < plan->n_micro_collectives; i++)
      need_collective(r, plan->micro_collectives[i].bytes, plan->micro_collectives[i].ranks);
  }
  r->a = filled(r->gemm_a, 0.001f);
  r->b = filled(r->gemm_b, 0.002f);
  r->c = filled(r->gemm_c, 0.0f);
  r->src = filled(r->buffer, 1.0f);
  r->dst = filled(r->buffer, 0.0f);
  if (!plan) return;
  /* One communicator per group, created in group order by its members only. */
  r->n_comms = plan->n_groups;
  r->comms = g_new(MPI_Comm, plan->n_groups ? plan->n_groups : 1);
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  for (int g = 0; g < plan->n_groups; g++) {
    const ValGroup *group = &plan->groups[g];
    r->comms[g] = MPI_COMM_NULL;
    if (val_group_find(group, r->rank) < 0) continue;
    MPI_Group members;
    MPI_Group_incl(world, group->n_ranks, group->ranks, &members);
    MPI_Comm_create_group(MPI_COMM_WORLD, members, g, &r->comms[g]);
    MPI_Group_free(&members);
  }
  MPI_Group_free(&world);
}

void cpu_rank_clear(CpuRank *r) {
  for (int g = 0; g < r->n_comms; g++)
    if (r->comms[g] != MPI_COMM_NULL) MPI_Comm_free(&r->comms[g]);
  g_free(r->comms);
  g_free(r->a);
  g_free(r->b);
  g_free(r->c);
  g_free(r->src);
  g_free(r->dst);
  memset(r, 0, sizeof *r);
}

void cpu_gemm(CpuRank *r, gint64 m, gint64 n, gint64 k, gint64 batch) {
  for (gint64 i = 0; i < batch; i++)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,
                r->a + i * m * k, (int)k, r->b + i * k * n, (int)n, 0.0f, r->c + i * m * n, (int)n);
}

void cpu_memory_pass(CpuRank *r, gint64 bytes) {
  /* Reads half the bytes and writes the other half, as a kernel reading its inputs and writing
   * its output does; one multiply-add per element. */
  gsize n = floats_of((bytes + 1) / 2);
  const float *restrict src = r->src;
  float *restrict dst = r->dst;
  for (gsize i = 0; i < n; i++) dst[i] = src[i] * 0.5f + 1.0f;
}

void cpu_collective(CpuRank *r, ValCollectiveKind kind, gint64 bytes, MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  gsize count = floats_of(bytes), chunk = chunk_of(count, p);
  switch (kind) {
  case VAL_COLL_ALL_REDUCE:
    MPI_Allreduce(r->src, r->dst, (int)count, MPI_FLOAT, MPI_SUM, comm);
    break;
  case VAL_COLL_ALL_GATHER: /* bytes: the gathered output */
    MPI_Allgather(r->src, (int)chunk, MPI_FLOAT, r->dst, (int)chunk, MPI_FLOAT, comm);
    break;
  case VAL_COLL_REDUCE_SCATTER: /* bytes: the input */
    MPI_Reduce_scatter_block(r->src, r->dst, (int)chunk, MPI_FLOAT, MPI_SUM, comm);
    break;
  case VAL_COLL_ALL_TO_ALL: /* bytes: each rank's buffer */
    MPI_Alltoall(r->src, (int)chunk, MPI_FLOAT, r->dst, (int)chunk, MPI_FLOAT, comm);
    break;
  case VAL_COLL_BROADCAST:
    MPI_Bcast(r->src, (int)count, MPI_FLOAT, 0, comm);
    break;
  case VAL_COLL_REDUCE:
    MPI_Reduce(r->src, r->dst, (int)count, MPI_FLOAT, MPI_SUM, 0, comm);
    break;
  case VAL_COLL_SEND_RECV: { /* nccl-tests' sendrecv: each rank sends to the next, receives from
                                the previous */
    int me;
    MPI_Comm_rank(comm, &me);
    MPI_Sendrecv(r->src, (int)count, MPI_FLOAT, (me + 1) % p, SEND_RECV_TAG, r->dst, (int)count,
                 MPI_FLOAT, (me + p - 1) % p, SEND_RECV_TAG, comm, MPI_STATUS_IGNORE);
    break;
  }
  }
}

void cpu_run_step(CpuRank *r, const ValPlan *plan, const ValStep *s) {
  MPI_Request req;
  switch (s->kind) {
  case VAL_STEP_GEMM: cpu_gemm(r, s->m, s->n, s->k, s->batch); break;
  case VAL_STEP_ELEMENTWISE: cpu_memory_pass(r, s->bytes); break;
  case VAL_STEP_COLLECTIVE: cpu_collective(r, s->collective, s->bytes, r->comms[s->group]); break;
  case VAL_STEP_SEND:
    MPI_Isend(r->src, (int)floats_of(s->bytes), MPI_FLOAT, s->peer, SEND_RECV_TAG, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    break;
  case VAL_STEP_RECV:
    MPI_Irecv(r->dst, (int)floats_of(s->bytes), MPI_FLOAT, s->peer, SEND_RECV_TAG, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    break;
  }
  (void)plan;
}

void cpu_run_plan(CpuRank *r, const ValPlan *plan, double *iterations_s, double **step_times,
                  guint64 **step_offsets) {
  const ValProgram *prog = &plan->programs[r->rank];
  int iters = plan->iterations;
  g_autofree double *times = g_new0(double, (gsize)prog->n_steps * iters + 1);
  for (int it = 0; it < plan->warmup + iters; it++) {
    int timed = it - plan->warmup;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (guint i = 0; i < prog->n_steps; i++) {
      double s0 = MPI_Wtime();
      cpu_run_step(r, plan, &prog->steps[i]);
      if (timed >= 0) times[(gsize)i * iters + timed] = MPI_Wtime() - s0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (timed >= 0 && r->rank == 0) iterations_s[timed] = MPI_Wtime() - t0;
  }
  /* Every rank's step times to rank 0. */
  int mine = (int)(prog->n_steps * (guint)iters);
  g_autofree int *counts = r->rank == 0 ? g_new(int, r->size) : NULL;
  MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  g_autofree int *displs = NULL;
  double *all = NULL;
  if (r->rank == 0) {
    displs = g_new(int, r->size);
    guint64 *offsets = g_new0(guint64, r->size + 1);
    for (int k = 0; k < r->size; k++) {
      displs[k] = (int)offsets[k];
      offsets[k + 1] = offsets[k] + (guint64)counts[k];
    }
    all = g_new(double, offsets[r->size] + 1);
    *step_offsets = offsets;
    *step_times = all;
  }
  MPI_Gatherv(times, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void cpu_bench_ops(CpuRank *r, const ValPlan *plan, double *times_s) {
  /* Every rank runs the kernel at once, as data-parallel ranks do (they share memory
   * bandwidth); the slowest rank's median counts. */
  for (guint i = 0; i < plan->n_micro_ops; i++) {
    const ValMicroOp *op = &plan->micro_ops[i];
    gint64 bytes = op->gemm ? 0 : micro_op_bytes(plan, op);
    double reps[CPU_BENCH_REPS];
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < CPU_BENCH_WARMUP + CPU_BENCH_REPS; k++) {
      double t0 = MPI_Wtime();
      if (op->gemm) cpu_gemm(r, op->m, op->n, op->k, op->batch);
      else cpu_memory_pass(r, bytes);
      if (k >= CPU_BENCH_WARMUP) reps[k - CPU_BENCH_WARMUP] = MPI_Wtime() - t0;
    }
    double mine = median(reps, CPU_BENCH_REPS), slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r->rank == 0) times_s[i] = slowest;
  }
}

void cpu_bench_collectives(CpuRank *r, const ValPlan *plan, double *times_s) {
  for (guint i = 0; i < plan->n_micro_collectives; i++) {
    const ValMicroCollective *c = &plan->micro_collectives[i];
    MPI_Comm comm;
    /* The first c->ranks ranks of this machine; nodes > 1 cannot be had on one host. */
    MPI_Comm_split(MPI_COMM_WORLD, r->rank < c->ranks ? 0 : MPI_UNDEFINED, r->rank, &comm);
    double mine = 0, slowest = 0;
    if (comm != MPI_COMM_NULL) {
      double reps[CPU_BENCH_REPS];
      for (int k = 0; k < CPU_BENCH_WARMUP + CPU_BENCH_REPS; k++) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        cpu_collective(r, c->kind, c->bytes, comm);
        if (k >= CPU_BENCH_WARMUP) reps[k - CPU_BENCH_WARMUP] = MPI_Wtime() - t0;
      }
      mine = median(reps, CPU_BENCH_REPS);
      MPI_Comm_free(&comm);
    }
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r->rank == 0) times_s[i] = c->ranks <= r->size ? slowest : NAN;
  }
}
