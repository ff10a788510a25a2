/* validate/runner_gpu/micro — the plan's micro-benchmarks: each op alone on rank 0's device
 * (cuBLAS GEMM, or the copy stand-in for other kernels: rg_copy_launch), each collective over
 * a communicator of its own. Each is run run->warmup times untimed, then run->iterations times
 * one at a time between CUDA events after a synchronize (and, under MPI, a barrier); the
 * result is the median. A collective's time per run is its slowest member's. */
#include "validate/runner_gpu/rg.h"

#include <stdio.h>
#include <string.h>

#define CUDA(call) rg_cuda_ok((call), #call, error)
#define NCCL(call) rg_nccl_ok((call), #call, error)

static void free_device(void **ptrs, int n) {
  for (int i = 0; i < n; i++)
    if (ptrs[i]) cudaFree(ptrs[i]);
}

/* Times one op on @rr's device and compute stream; *time_s is the median. */
static gboolean time_op(RgRun *run, RgRank *rr, const ValMicroOp *op, double *time_s,
                        GError **error) {
  size_t size = val_dtype_size(op->dtype);
  void *buf[3] = {NULL, NULL, NULL};
  size_t bytes[3];
  gint64 traffic = 0;
  cudaStream_t stream = rr->streams[VAL_STREAM_COMPUTE];
  if (op->gemm) {
    bytes[0] = (size_t)(op->batch * op->m * op->k) * size;
    bytes[1] = (size_t)(op->batch * op->k * op->n) * size;
    bytes[2] = (size_t)(op->batch * op->m * op->n) * size;
  } else {
    /* The stand-in kernel reads and writes the op's elements once forward and twice backward
     * (the plan builder's elementwise convention: output and input, twice that backward). */
    traffic = 2 * op->elements * (gint64)size * (op->backward ? 2 : 1);
    bytes[0] = bytes[1] = rg_copy_bytes(traffic);
    bytes[2] = 0;
  }
  double *samples = g_new(double, run->iterations);
  cudaEvent_t start = NULL, end = NULL;
  gboolean ok = CUDA(cudaSetDevice(rr->device)) && CUDA(cudaEventCreate(&start)) &&
                CUDA(cudaEventCreate(&end));
  for (int i = 0; ok && i < 3; i++)
    if (bytes[i]) ok = CUDA(cudaMalloc(&buf[i], bytes[i])) && CUDA(cudaMemset(buf[i], 0, bytes[i]));
  /* A GEMM's operands hold random values (rg_fill.c: zeros run at higher clocks). */
  for (int i = 0; ok && op->gemm && i < 2; i++)
    ok = CUDA(rg_fill_random(buf[i], bytes[i], rg_fill_for(op->dtype)));
  if (ok && op->gemm) ok = rg_cublas_ok(cublasSetStream(rr->blas, stream), "cublasSetStream", error);
  for (int rep = 0; ok && rep < run->warmup + run->iterations; rep++) {
    ok = CUDA(cudaEventRecord(start, stream)) &&
         (op->gemm ? rg_gemm_launch(rr->blas, op->dtype, op->m, op->n, op->k, op->batch, buf[0],
                                    buf[1], buf[2], error)
                   : rg_copy_launch(buf[1], buf[0], traffic, stream, error)) &&
         CUDA(cudaEventRecord(end, stream)) && CUDA(cudaStreamSynchronize(stream));
    float ms = 0;
    if (ok && rep >= run->warmup) {
      ok = CUDA(cudaEventElapsedTime(&ms, start, end));
      samples[rep - run->warmup] = ms * 1e-3;
    }
  }
  if (ok) *time_s = val_median(samples, (guint)run->iterations);
  free_device(buf, 3);
  if (start) cudaEventDestroy(start);
  if (end) cudaEventDestroy(end);
  g_free(samples);
  return ok;
}

/* The plan ranks a collective of @n ranks over @nodes hosts runs on: @nodes hosts (in the
 * order they first appear) with n / nodes ranks each (the first n % nodes hosts one more),
 * when the hosts have them; else the first n ranks. Returns the hosts used. */
static int pick_members(const RgRun *run, int n, int nodes, int *members) {
  const ValPlan *plan = run->plan;
  GPtrArray *host_names = g_ptr_array_new();
  for (int r = 0; r < plan->ranks; r++) {
    gboolean seen = FALSE;
    for (guint h = 0; h < host_names->len && !seen; h++)
      seen = strcmp(host_names->pdata[h], run->hosts[r]) == 0;
    if (!seen) g_ptr_array_add(host_names, run->hosts[r]);
  }
  int taken = 0;
  if ((int)host_names->len >= nodes) {
    for (int h = 0; h < nodes; h++) {
      int want = n / nodes + (h < n % nodes ? 1 : 0), got = 0;
      for (int r = 0; r < plan->ranks && got < want; r++)
        if (strcmp(run->hosts[r], host_names->pdata[h]) == 0) members[taken + got++] = r;
      if (got < want) break;
      taken += got;
    }
  }
  int used = nodes;
  if (taken != n) {
    for (int r = 0; r < n; r++) members[r] = r;
    used = 0;
    for (guint h = 0; h < host_names->len; h++)
      for (int r = 0; r < n; r++)
        if (strcmp(run->hosts[r], host_names->pdata[h]) == 0) {
          used++;
          break;
        }
  }
  g_ptr_array_free(host_names, TRUE);
  return used;
}

/* Times one collective; on rank 0, *time_s is the median over runs of the slowest member. */
static gboolean time_collective(RgRun *run, const ValMicroCollective *mc, const int *members,
                                double *time_s, GError **error) {
  /* Per local member: its RgRank, communicator, buffers, events. */
  typedef struct {
    RgRank *rr;
    int position;
    ncclComm_t comm;
    void *send, *recv;
    cudaEvent_t start, end;
  } Member;
  const ValDtype dtype = VAL_DTYPE_FP32; /* measurement keys carry bytes, not a dtype */
  Member *mine = g_new0(Member, mc->ranks);
  int n_mine = 0;
  for (int j = 0; j < mc->ranks; j++)
    for (int l = 0; l < run->n_local; l++)
      if (run->local[l].rank == members[j]) mine[n_mine++] = (Member){&run->local[l], j, NULL, NULL, NULL, NULL, NULL};
  size_t count, send_bytes, recv_bytes;
  rg_collective_size(mc->kind, mc->bytes, dtype, mc->ranks, &count, &send_bytes, &recv_bytes);
  int reps = run->warmup + run->iterations;
  double *samples = g_new0(double, run->iterations);
  gboolean ok = TRUE;
  if (run->mpi) {
    /* collective over the world: every process calls the split, members get a communicator */
    int position = n_mine ? mine[0].position : -1;
    ncclComm_t comm = NULL;
    ok = NCCL(ncclCommSplit(run->world, position >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, MAX(position, 0),
                            &comm, NULL));
    if (n_mine) mine[0].comm = comm;
  } else {
    int *devices = g_new(int, mc->ranks);
    ncclComm_t *comms = g_new0(ncclComm_t, mc->ranks);
    for (int j = 0; j < mc->ranks; j++) devices[j] = run->local[members[j]].device;
    ok = NCCL(ncclCommInitAll(comms, mc->ranks, devices));
    for (int j = 0; ok && j < n_mine; j++) mine[j].comm = comms[mine[j].position];
    g_free(comms);
    g_free(devices);
  }
  for (int j = 0; ok && j < n_mine; j++) {
    Member *m = &mine[j];
    ok = CUDA(cudaSetDevice(m->rr->device)) && CUDA(cudaMalloc(&m->send, send_bytes)) &&
         CUDA(cudaMemset(m->send, 0, send_bytes)) && CUDA(cudaMalloc(&m->recv, recv_bytes)) &&
         CUDA(cudaMemset(m->recv, 0, recv_bytes)) && CUDA(cudaEventCreate(&m->start)) &&
         CUDA(cudaEventCreate(&m->end));
  }
  for (int rep = 0; ok && rep < reps; rep++) {
    rg_mpi_barrier(run);
    for (int j = 0; ok && j < n_mine; j++)
      ok = CUDA(cudaSetDevice(mine[j].rr->device)) &&
           CUDA(cudaEventRecord(mine[j].start, mine[j].rr->streams[VAL_STREAM_COMM]));
    if (!ok || !NCCL(ncclGroupStart())) break;
    for (int j = 0; ok && j < n_mine; j++)
      ok = rg_collective_launch(mc->kind, mine[j].send, mine[j].recv, count, dtype,
                                mine[j].position, mc->ranks, mine[j].comm,
                                mine[j].rr->streams[VAL_STREAM_COMM], error);
    if (!NCCL(ncclGroupEnd())) ok = FALSE;
    double slowest = 0;
    for (int j = 0; ok && j < n_mine; j++) {
      float ms = 0;
      ok = CUDA(cudaSetDevice(mine[j].rr->device)) &&
           CUDA(cudaEventRecord(mine[j].end, mine[j].rr->streams[VAL_STREAM_COMM])) &&
           CUDA(cudaStreamSynchronize(mine[j].rr->streams[VAL_STREAM_COMM])) &&
           CUDA(cudaEventElapsedTime(&ms, mine[j].start, mine[j].end));
      slowest = MAX(slowest, ms * 1e-3);
    }
    if (rep >= run->warmup) samples[rep - run->warmup] = slowest;
  }
  /* every process reaches this reduction (under MPI a failure aborts the job in rg_main.c) */
  if (ok) {
    rg_mpi_max_to_root(run, samples, run->iterations);
    *time_s = val_median(samples, (guint)run->iterations);
  }
  for (int j = 0; j < n_mine; j++) {
    Member *m = &mine[j];
    cudaSetDevice(m->rr->device);
    void *bufs[] = {m->send, m->recv};
    free_device(bufs, 2);
    if (m->start) cudaEventDestroy(m->start);
    if (m->end) cudaEventDestroy(m->end);
    if (m->comm) ncclCommDestroy(m->comm);
  }
  g_free(samples);
  g_free(mine);
  return ok;
}

gboolean rg_run_microbenchmarks(RgRun *run, ValMeasurements *m, GError **error) {
  const ValPlan *plan = run->plan;
  /* ops: on rank 0's device only */
  if (run->mpi_rank == 0)
    for (guint i = 0; i < plan->n_micro_ops; i++) {
      double t = 0;
      if (!time_op(run, &run->local[0], &plan->micro_ops[i], &t, error)) {
        g_prefix_error(error, "micro-benchmark %s: ", plan->micro_ops[i].op);
        return FALSE;
      }
      val_measurements_add_kernel(m, &plan->micro_ops[i], t);
    }
  int *members = g_new(int, plan->ranks);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < plan->n_micro_collectives; i++) {
    ValMicroCollective mc = plan->micro_collectives[i];
    int used = pick_members(run, mc.ranks, mc.nodes, members);
    double t = 0;
    ok = time_collective(run, &mc, members, &t, error);
    if (!ok) {
      g_prefix_error(error, "micro-benchmark %s over %d ranks: ", val_collective_name(mc.kind),
                     mc.ranks);
      break;
    }
    if (used != mc.nodes && run->mpi_rank == 0)
      fprintf(stderr,
              "stratsim-runner: note: micro-benchmark %s over %d ranks asked for %d host(s) and "
              "ran on %d; recorded with nodes = %d\n",
              val_collective_name(mc.kind), mc.ranks, mc.nodes, used, used);
    mc.nodes = used;
    if (run->mpi_rank == 0) val_measurements_add_collective(m, &mc, t);
  }
  g_free(members);
  return ok;
}
