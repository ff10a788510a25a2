/* validate/runner_gpu/exec — a plan's iterations on CUDA devices: per-rank streams, buffers,
 * cuBLAS handles and NCCL communicators, each step issued between two CUDA events, dependencies
 * across a rank's two streams as event waits.
 *
 * Buffers hold zeros and are shared by the steps of one kind on one rank (each kind gets the
 * largest size its steps need): the runner measures time, not values, and a GEMM on zeros
 * takes as long as on data on the tensor-core paths it exercises. */
#include "validate/runner_gpu/rg.h"

#include <string.h>

G_DEFINE_QUARK(stratsim-runner-error-quark, rg_error)

gboolean rg_cuda_ok(cudaError_t status, const char *what, GError **error) {
  if (status == cudaSuccess) return TRUE;
  g_set_error(error, RG_ERROR, RG_ERROR_FAILED, "%s: %s", what, cudaGetErrorString(status));
  return FALSE;
}

gboolean rg_cublas_ok(cublasStatus_t status, const char *what, GError **error) {
  if (status == CUBLAS_STATUS_SUCCESS) return TRUE;
  g_set_error(error, RG_ERROR, RG_ERROR_FAILED, "%s: %s", what, cublasGetStatusString(status));
  return FALSE;
}

gboolean rg_nccl_ok(ncclResult_t status, const char *what, GError **error) {
  if (status == ncclSuccess) return TRUE;
  g_set_error(error, RG_ERROR, RG_ERROR_FAILED, "%s: %s", what, ncclGetErrorString(status));
  return FALSE;
}

#define CUDA(call) rg_cuda_ok((call), #call, error)
#define BLAS(call) rg_cublas_ok((call), #call, error)
#define NCCL(call) rg_nccl_ok((call), #call, error)

/* --- kernels --- */

ncclDataType_t rg_nccl_dtype(ValDtype dtype) {
  switch (dtype) {
  case VAL_DTYPE_FP16: return ncclFloat16;
  case VAL_DTYPE_BF16: return ncclBfloat16;
  case VAL_DTYPE_FP32:
  case VAL_DTYPE_TF32: break;
  }
  return ncclFloat32;
}

void rg_collective_size(ValCollectiveKind kind, gint64 bytes, ValDtype dtype, int n,
                        size_t *count, size_t *send_bytes, size_t *recv_bytes) {
  size_t size = val_dtype_size(dtype);
  size_t elements = ((size_t)bytes + size - 1) / size;
  size_t per_rank = (elements + (size_t)n - 1) / (size_t)n;
  switch (kind) {
  case VAL_COLL_ALL_GATHER: /* bytes: the gathered output */
    *count = per_rank, *send_bytes = per_rank * size, *recv_bytes = per_rank * n * size;
    return;
  case VAL_COLL_REDUCE_SCATTER: /* bytes: the input */
    *count = per_rank, *send_bytes = per_rank * n * size, *recv_bytes = per_rank * size;
    return;
  case VAL_COLL_ALL_TO_ALL: /* bytes: each rank's buffer, count: per peer */
    *count = per_rank, *send_bytes = *recv_bytes = per_rank * n * size;
    return;
  case VAL_COLL_ALL_REDUCE:
  case VAL_COLL_BROADCAST:
  case VAL_COLL_REDUCE:
  case VAL_COLL_SEND_RECV: /* bytes: the buffer or message */
    break;
  }
  *count = elements, *send_bytes = *recv_bytes = elements * size;
}

gboolean rg_collective_launch(ValCollectiveKind kind, const void *send, void *recv, size_t count,
                              ValDtype dtype, int comm_rank, int comm_size, ncclComm_t comm,
                              cudaStream_t stream, GError **error) {
  ncclDataType_t t = rg_nccl_dtype(dtype);
  switch (kind) {
  case VAL_COLL_ALL_REDUCE:
    return NCCL(ncclAllReduce(send, recv, count, t, ncclSum, comm, stream));
  case VAL_COLL_ALL_GATHER:
    return NCCL(ncclAllGather(send, recv, count, t, comm, stream));
  case VAL_COLL_REDUCE_SCATTER:
    return NCCL(ncclReduceScatter(send, recv, count, t, ncclSum, comm, stream));
  case VAL_COLL_ALL_TO_ALL:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    return NCCL(ncclAlltoAll(send, recv, count, t, comm, stream));
#else
  { /* before NCCL 2.28: one send and one receive per peer in a group, as nccl-tests does */
    size_t chunk = count * val_dtype_size(dtype);
    gboolean ok = NCCL(ncclGroupStart());
    for (int peer = 0; ok && peer < comm_size; peer++)
      ok = NCCL(ncclSend((const char *)send + peer * chunk, count, t, peer, comm, stream)) &&
           NCCL(ncclRecv((char *)recv + peer * chunk, count, t, peer, comm, stream));
    return NCCL(ncclGroupEnd()) && ok;
  }
#endif
  case VAL_COLL_BROADCAST:
    return NCCL(ncclBroadcast(send, recv, count, t, 0, comm, stream));
  case VAL_COLL_REDUCE:
    return NCCL(ncclReduce(send, recv, count, t, ncclSum, 0, comm, stream));
  case VAL_COLL_SEND_RECV: /* nccl-tests' sendrecv: a ring, each rank sends to the next */
    return NCCL(ncclGroupStart()) &&
           NCCL(ncclSend(send, count, t, (comm_rank + 1) % comm_size, comm, stream)) &&
           NCCL(ncclRecv(recv, count, t, (comm_rank + comm_size - 1) % comm_size, comm, stream)) &&
           NCCL(ncclGroupEnd());
  }
  g_assert_not_reached();
  return FALSE;
}

gboolean rg_gemm_launch(cublasHandle_t blas, ValDtype dtype, gint64 m, gint64 n, gint64 k,
                        gint64 batch, const void *a, const void *b, void *c, GError **error) {
  /* fp16 and bf16 accumulate in fp32, as mixed-precision training does; tf32 is fp32 storage
   * with TF32 tensor-core math. cuBLAS is column-major: C (m x n, ldc m) = A (m x k, lda m) B
   * (k x n, ldb k), the row-major product's FLOPs and bytes exactly. The plan reader bounds m,
   * n, k and batch by G_MAXINT (cuBLAS takes int). */
  cudaDataType type = dtype == VAL_DTYPE_FP16   ? CUDA_R_16F
                      : dtype == VAL_DTYPE_BF16 ? CUDA_R_16BF
                                                : CUDA_R_32F;
  cublasComputeType_t compute =
      dtype == VAL_DTYPE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  return BLAS(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)n, (int)k,
                                         &alpha, a, type, (int)m, (long long)(m * k), b, type,
                                         (int)k, (long long)(k * n), &beta, c, type, (int)m,
                                         (long long)(m * n), (int)batch, compute,
                                         CUBLAS_GEMM_DEFAULT));
}

size_t rg_copy_bytes(gint64 traffic_bytes) { return traffic_bytes >= 2 ? (size_t)traffic_bytes / 2 : 1; }

gboolean rg_copy_launch(void *dst, const void *src, gint64 traffic_bytes, cudaStream_t stream,
                        GError **error) {
  /* Stands in for every non-GEMM kernel (activations, norms, softmax, optimizer): a
   * memory-bound pass that reads and writes traffic_bytes in all, as the plan's elementwise
   * step charges. It has the bandwidth of a copy engine or copy kernel, not of the real
   * kernel's arithmetic or access pattern. */
  return CUDA(cudaMemcpyAsync(dst, src, rg_copy_bytes(traffic_bytes), cudaMemcpyDeviceToDevice,
                              stream));
}

/* --- set-up --- */

/* The largest buffer of each kind the rank's steps need. */
typedef struct {
  size_t a, b, c, copy, send[VAL_STREAMS], recv[VAL_STREAMS];
} Sizes;

static void rank_sizes(const ValPlan *plan, const ValProgram *p, Sizes *z) {
  memset(z, 0, sizeof *z);
  for (guint i = 0; i < p->n_steps; i++) {
    const ValStep *s = &p->steps[i];
    size_t size = val_dtype_size(s->dtype), send = 0, recv = 0, count;
    switch (s->kind) {
    case VAL_STEP_GEMM:
      z->a = MAX(z->a, (size_t)(s->batch * s->m * s->k) * size);
      z->b = MAX(z->b, (size_t)(s->batch * s->k * s->n) * size);
      z->c = MAX(z->c, (size_t)(s->batch * s->m * s->n) * size);
      break;
    case VAL_STEP_ELEMENTWISE:
      z->copy = MAX(z->copy, rg_copy_bytes(s->bytes));
      break;
    case VAL_STEP_COLLECTIVE:
      rg_collective_size(s->collective, s->bytes, s->dtype, plan->groups[s->group].n_ranks,
                         &count, &send, &recv);
      break;
    case VAL_STEP_SEND:
      send = ((size_t)s->bytes + size - 1) / size * size;
      break;
    case VAL_STEP_RECV:
      recv = ((size_t)s->bytes + size - 1) / size * size;
      break;
    }
    z->send[s->stream] = MAX(z->send[s->stream], send);
    z->recv[s->stream] = MAX(z->recv[s->stream], recv);
  }
}

static gboolean alloc_zeroed(void **ptr, size_t bytes, const RgRank *rr, const char *what,
                             GError **error) {
  if (bytes == 0) return TRUE;
  cudaError_t e = cudaMalloc(ptr, bytes);
  if (e != cudaSuccess) {
    *ptr = NULL;
    g_set_error(error, RG_ERROR, RG_ERROR_FAILED,
                "cudaMalloc of %zu bytes (%s) for rank %d on device %d: %s", bytes, what,
                rr->rank, rr->device, cudaGetErrorString(e));
    return FALSE;
  }
  return CUDA(cudaMemset(*ptr, 0, bytes));
}

static gboolean rank_setup(RgRun *run, RgRank *rr, GError **error) {
  const ValPlan *plan = run->plan;
  const ValProgram *p = rr->program;
  if (!CUDA(cudaSetDevice(rr->device))) return FALSE;
  for (int s = 0; s < VAL_STREAMS; s++)
    if (!CUDA(cudaStreamCreateWithFlags(&rr->streams[s], cudaStreamNonBlocking))) return FALSE;
  if (!BLAS(cublasCreate(&rr->blas))) return FALSE;
  rr->start = g_new0(cudaEvent_t, MAX(p->n_steps, 1));
  rr->end = g_new0(cudaEvent_t, MAX(p->n_steps, 1));
  for (guint i = 0; i < p->n_steps; i++)
    if (!CUDA(cudaEventCreate(&rr->start[i])) || !CUDA(cudaEventCreate(&rr->end[i]))) return FALSE;
  if (!CUDA(cudaEventCreate(&rr->begin)) || !CUDA(cudaEventCreate(&rr->finish)) ||
      !CUDA(cudaEventCreateWithFlags(&rr->comm_done, cudaEventDisableTiming)))
    return FALSE;
  Sizes z;
  rank_sizes(plan, p, &z);
  if (!alloc_zeroed(&rr->gemm_a, z.a, rr, "gemm A", error) ||
      !alloc_zeroed(&rr->gemm_b, z.b, rr, "gemm B", error) ||
      !alloc_zeroed(&rr->gemm_c, z.c, rr, "gemm C", error) ||
      !alloc_zeroed(&rr->copy_src, z.copy, rr, "elementwise source", error) ||
      !alloc_zeroed(&rr->copy_dst, z.copy, rr, "elementwise destination", error))
    return FALSE;
  for (int s = VAL_STREAM_COMM; s < VAL_STREAMS; s++)
    if (!alloc_zeroed(&rr->comm_send[s], z.send[s], rr, "communication send", error) ||
        !alloc_zeroed(&rr->comm_recv[s], z.recv[s], rr, "communication receive", error))
      return FALSE;
  /* GEMM operands hold random values, not zeros: rg_fill.c says why. */
  if (!CUDA(rg_fill_random(rr->gemm_a, z.a, rg_fill_for(plan->dtype))) ||
      !CUDA(rg_fill_random(rr->gemm_b, z.b, rg_fill_for(plan->dtype))))
    return FALSE;
  rr->comms = g_new0(ncclComm_t, MAX(plan->n_groups, 1));
  rr->step_ms = g_new0(float, (gsize)MAX(p->n_steps, 1) * (gsize)run->iterations);
  rr->median_s = g_new0(double, MAX(p->n_steps, 1));
  return TRUE;
}

static gboolean plan_has_transfers(const ValPlan *plan) {
  for (int r = 0; r < plan->ranks; r++)
    for (guint i = 0; i < plan->programs[r].n_steps; i++)
      if (plan->programs[r].steps[i].kind == VAL_STEP_SEND) return TRUE;
  return FALSE;
}

/* One process over all ranks: rank r on device r; each group's communicators by
 * ncclCommInitAll over its members' devices, in the group's order (comm rank = position). */
static gboolean comms_single(RgRun *run, GError **error) {
  const ValPlan *plan = run->plan;
  int *devices = g_new(int, plan->ranks);
  ncclComm_t *comms = g_new0(ncclComm_t, plan->ranks);
  gboolean ok = TRUE;
  for (int g = 0; g < plan->n_groups && ok; g++) {
    const ValGroup *grp = &plan->groups[g];
    for (int j = 0; j < grp->n_ranks; j++) devices[j] = run->local[grp->ranks[j]].device;
    ok = NCCL(ncclCommInitAll(comms, grp->n_ranks, devices));
    for (int j = 0; ok && j < grp->n_ranks; j++) run->local[grp->ranks[j]].comms[g] = comms[j];
  }
  if (ok && plan->ranks > 1 && plan_has_transfers(plan)) {
    for (int r = 0; r < plan->ranks; r++) devices[r] = run->local[r].device;
    ok = NCCL(ncclCommInitAll(comms, plan->ranks, devices));
    for (int r = 0; ok && r < plan->ranks; r++) run->local[r].world = comms[r];
  }
  g_free(comms);
  g_free(devices);
  return ok;
}

/* One process per rank: every process splits the world communicator once per group, in the
 * plan's group order (ncclCommSplit is collective over the world). */
static gboolean comms_mpi(RgRun *run, GError **error) {
  const ValPlan *plan = run->plan;
  RgRank *rr = &run->local[0];
  rr->world = run->world;
  for (int g = 0; g < plan->n_groups; g++) {
    int position = val_group_find(&plan->groups[g], rr->rank);
    if (!NCCL(ncclCommSplit(run->world, position >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                            MAX(position, 0), &rr->comms[g], NULL)))
      return FALSE;
  }
  return TRUE;
}

gboolean rg_run_setup(RgRun *run, GError **error) {
  const ValPlan *plan = run->plan;
  run->n_local = run->mpi ? 1 : plan->ranks;
  run->local = g_new0(RgRank, run->n_local);
  for (int i = 0; i < run->n_local; i++) {
    RgRank *rr = &run->local[i];
    rr->rank = run->mpi ? run->mpi_rank : i;
    rr->device = run->mpi ? run->mpi_device : i;
    rr->program = &plan->programs[rr->rank];
    if (!rank_setup(run, rr, error)) return FALSE;
  }
  run->iteration_s = g_new0(double, run->iterations);
  return run->mpi ? comms_mpi(run, error) : comms_single(run, error);
}

void rg_run_teardown(RgRun *run, gboolean release_gpu) {
  const ValPlan *plan = run->plan;
  for (int i = 0; run->local && i < run->n_local; i++) {
    RgRank *rr = &run->local[i];
    if (rr->program && release_gpu) {
      cudaSetDevice(rr->device);
      cudaDeviceSynchronize();
      for (int g = 0; rr->comms && g < plan->n_groups; g++)
        if (rr->comms[g]) ncclCommDestroy(rr->comms[g]);
      if (rr->world && rr->world != run->world) ncclCommDestroy(rr->world);
      for (guint s = 0; rr->start && s < rr->program->n_steps; s++) {
        if (rr->start[s]) cudaEventDestroy(rr->start[s]);
        if (rr->end[s]) cudaEventDestroy(rr->end[s]);
      }
      cudaEvent_t events[] = {rr->begin, rr->finish, rr->comm_done};
      for (guint e = 0; e < G_N_ELEMENTS(events); e++)
        if (events[e]) cudaEventDestroy(events[e]);
      void *buffers[] = {rr->gemm_a, rr->gemm_b, rr->gemm_c, rr->copy_src, rr->copy_dst};
      for (guint b = 0; b < G_N_ELEMENTS(buffers); b++)
        if (buffers[b]) cudaFree(buffers[b]);
      for (int s = 0; s < VAL_STREAMS; s++) {
        if (rr->comm_send[s]) cudaFree(rr->comm_send[s]);
        if (rr->comm_recv[s]) cudaFree(rr->comm_recv[s]);
      }
      if (rr->blas) cublasDestroy(rr->blas);
      for (int s = 0; s < VAL_STREAMS; s++)
        if (rr->streams[s]) cudaStreamDestroy(rr->streams[s]);
    }
    g_free(rr->comms);
    g_free(rr->start);
    g_free(rr->end);
    g_free(rr->step_ms);
    g_free(rr->median_s);
  }
  g_free(run->local);
  run->local = NULL;
  run->n_local = 0;
  g_free(run->iteration_s);
  run->iteration_s = NULL;
}

/* --- issuing --- */

static RgRank *local_rank(RgRun *run, int rank) {
  return run->mpi ? &run->local[0] : &run->local[rank];
}

/* Before the step: its device, waits for dependencies on the rank's other stream, its start. */
static gboolean step_begin(RgRank *rr, guint i, GError **error) {
  const ValStep *s = &rr->program->steps[i];
  cudaStream_t stream = rr->streams[s->stream];
  if (!CUDA(cudaSetDevice(rr->device))) return FALSE;
  for (guint d = 0; d < s->n_deps; d++)
    if (rr->program->steps[s->deps[d]].stream != s->stream &&
        !CUDA(cudaStreamWaitEvent(stream, rr->end[s->deps[d]], 0)))
      return FALSE;
  return CUDA(cudaEventRecord(rr->start[i], stream));
}

static gboolean step_launch(RgRun *run, RgRank *rr, guint i, GError **error) {
  const ValStep *s = &rr->program->steps[i];
  cudaStream_t stream = rr->streams[s->stream];
  size_t count, send, recv, size = val_dtype_size(s->dtype);
  if (!CUDA(cudaSetDevice(rr->device))) return FALSE;
  switch (s->kind) {
  case VAL_STEP_GEMM:
    return BLAS(cublasSetStream(rr->blas, stream)) &&
           rg_gemm_launch(rr->blas, s->dtype, s->m, s->n, s->k, s->batch, rr->gemm_a, rr->gemm_b,
                          rr->gemm_c, error);
  case VAL_STEP_ELEMENTWISE:
    return rg_copy_launch(rr->copy_dst, rr->copy_src, s->bytes, stream, error);
  case VAL_STEP_COLLECTIVE: {
    const ValGroup *g = &run->plan->groups[s->group];
    rg_collective_size(s->collective, s->bytes, s->dtype, g->n_ranks, &count, &send, &recv);
    return rg_collective_launch(s->collective, rr->comm_send[s->stream], rr->comm_recv[s->stream], count, s->dtype,
                                s->group_rank, g->n_ranks, rr->comms[s->group], stream, error);
  }
  case VAL_STEP_SEND:
    return NCCL(ncclSend(rr->comm_send[s->stream], ((size_t)s->bytes + size - 1) / size,
                         rg_nccl_dtype(s->dtype), s->peer, rr->world, stream));
  case VAL_STEP_RECV:
    return NCCL(ncclRecv(rr->comm_recv[s->stream], ((size_t)s->bytes + size - 1) / size,
                         rg_nccl_dtype(s->dtype), s->peer, rr->world, stream));
  }
  g_assert_not_reached();
  return FALSE;
}

static gboolean step_end(RgRank *rr, guint i, GError **error) {
  return CUDA(cudaSetDevice(rr->device)) &&
         CUDA(cudaEventRecord(rr->end[i], rr->streams[rr->program->steps[i].stream]));
}

static gboolean is_compute(const ValStep *s) {
  return s->kind == VAL_STEP_GEMM || s->kind == VAL_STEP_ELEMENTWISE;
}

/* One process over all ranks: ValPlan.issue, launch by launch; a rendezvous's NCCL calls in one
 * group, so one thread can enqueue every member before any of them must progress. */
static gboolean issue_single(RgRun *run, GError **error) {
  const ValPlan *plan = run->plan;
  for (guint64 j = 0; j < plan->n_steps;) {
    guint64 k = j;
    while (k < plan->n_steps && plan->issue[k].launch == plan->issue[j].launch) k++;
    const ValIssue *first = &plan->issue[j];
    RgRank *rr = local_rank(run, first->rank);
    if (k - j == 1 && is_compute(&rr->program->steps[first->step])) {
      if (!step_begin(rr, first->step, error) || !step_launch(run, rr, first->step, error) ||
          !step_end(rr, first->step, error))
        return FALSE;
    } else {
      for (guint64 e = j; e < k; e++)
        if (!step_begin(local_rank(run, plan->issue[e].rank), plan->issue[e].step, error))
          return FALSE;
      if (!NCCL(ncclGroupStart())) return FALSE;
      gboolean ok = TRUE;
      for (guint64 e = j; e < k && ok; e++)
        ok = step_launch(run, local_rank(run, plan->issue[e].rank), plan->issue[e].step, error);
      /* the group is closed even after a failed call, so NCCL's state stays consistent */
      if (!NCCL(ncclGroupEnd()) || !ok) return FALSE;
      for (guint64 e = j; e < k; e++)
        if (!step_end(local_rank(run, plan->issue[e].rank), plan->issue[e].step, error))
          return FALSE;
    }
    j = k;
  }
  return TRUE;
}

/* One process per rank: its program in list order. */
static gboolean issue_own(RgRun *run, GError **error) {
  RgRank *rr = &run->local[0];
  for (guint i = 0; i < rr->program->n_steps; i++)
    if (!step_begin(rr, i, error) || !step_launch(run, rr, i, error) || !step_end(rr, i, error))
      return FALSE;
  return TRUE;
}

/* One iteration; @timed: its step times go to slot @slot of step_ms and its time (the slowest
 * rank's, begin to finish on the GPU) to iteration_s[@slot]. */
static gboolean iteration(RgRun *run, gboolean timed, int slot, GError **error) {
  rg_mpi_barrier(run);
  /* Every rank's streams start from its begin event, recorded for all local devices before any
   * step is issued: the streams are idle (the last iteration was synchronized), so the begin
   * events of all devices fire within the host loop's few microseconds. */
  for (int l = 0; l < run->n_local; l++) {
    RgRank *rr = &run->local[l];
    if (!CUDA(cudaSetDevice(rr->device)) ||
        !CUDA(cudaEventRecord(rr->begin, rr->streams[VAL_STREAM_COMPUTE])))
      return FALSE;
    for (int s = VAL_STREAM_COMM; s < VAL_STREAMS; s++)
      if (!CUDA(cudaStreamWaitEvent(rr->streams[s], rr->begin, 0))) return FALSE;
  }
  if (!(run->mpi ? issue_own(run, error) : issue_single(run, error))) return FALSE;
  for (int l = 0; l < run->n_local; l++) {
    RgRank *rr = &run->local[l];
    if (!CUDA(cudaSetDevice(rr->device))) return FALSE;
    /* One event serves every stream: a wait takes the record made just before it. */
    for (int s = VAL_STREAM_COMM; s < VAL_STREAMS; s++)
      if (!CUDA(cudaEventRecord(rr->comm_done, rr->streams[s])) ||
          !CUDA(cudaStreamWaitEvent(rr->streams[VAL_STREAM_COMPUTE], rr->comm_done, 0)))
        return FALSE;
    if (!CUDA(cudaEventRecord(rr->finish, rr->streams[VAL_STREAM_COMPUTE]))) return FALSE;
  }
  double slowest = 0;
  for (int l = 0; l < run->n_local; l++) {
    RgRank *rr = &run->local[l];
    float ms = 0;
    /* a device-wide synchronize also reports errors of kernels launched asynchronously */
    if (!CUDA(cudaSetDevice(rr->device)) || !CUDA(cudaDeviceSynchronize()) ||
        !CUDA(cudaEventElapsedTime(&ms, rr->begin, rr->finish)))
      return FALSE;
    slowest = MAX(slowest, ms * 1e-3);
    if (!timed) continue;
    for (guint i = 0; i < rr->program->n_steps; i++) {
      float step_ms = 0;
      if (!CUDA(cudaEventElapsedTime(&step_ms, rr->start[i], rr->end[i]))) return FALSE;
      rr->step_ms[(gsize)i * run->iterations + slot] = step_ms;
    }
  }
  rg_mpi_max_to_root(run, &slowest, 1);
  if (timed) run->iteration_s[slot] = slowest;
  return TRUE;
}

gboolean rg_run_iterations(RgRun *run, GError **error) {
  for (int i = 0; i < run->warmup; i++)
    if (!iteration(run, FALSE, 0, error)) return FALSE;
  for (int i = 0; i < run->iterations; i++)
    if (!iteration(run, TRUE, i, error)) return FALSE;
  double *times = g_new(double, run->iterations);
  for (int l = 0; l < run->n_local; l++) {
    RgRank *rr = &run->local[l];
    for (guint i = 0; i < rr->program->n_steps; i++) {
      for (int t = 0; t < run->iterations; t++)
        times[t] = rr->step_ms[(gsize)i * run->iterations + t] * 1e-3;
      rr->median_s[i] = val_median(times, (guint)run->iterations);
    }
  }
  g_free(times);
  return TRUE;
}
