/* validate/runner_gpu/test-cuda-model — a CHECKING MODEL of the CUDA runtime, cuBLAS and NCCL
 * calls stratsim-runner makes, linked instead of the real libraries into test-runner-model (a
 * test executable, never installed) so the runner's control flow is exercised on machines
 * without a GPU. It runs nothing and its times are virtual: the measurements files it leads to
 * are only checked for shape, never used as results.
 *
 * What it checks, as a real GPU run would need (any violation aborts with "cuda-model: ..."):
 *  - every buffer a copy, GEMM or NCCL call touches lies inside one cudaMalloc'd allocation of
 *    the device the call runs on (sizes from the call's count, dtype, strides and ranks);
 *  - streams, events, cuBLAS handles and communicators are used on their own device; no call
 *    goes to the legacy default stream;
 *  - events are recorded before a stream waits on them or their elapsed time is read, timing
 *    events only, end not before start;
 *  - one thread driving several devices: every NCCL collective is called for all members of its
 *    communicator inside one ncclGroupStart/End, with the same count, type and root, and every
 *    send has its recv in the same group (anything else hangs real NCCL);
 *  - GEMM operand types and compute types are valid combinations.
 * Memory is address space only (mmap PROT_NONE, MAP_NORESERVE): nothing is read or written. */
/* MAP_ANONYMOUS and MAP_NORESERVE are not in POSIX 2008 (the build's _POSIX_C_SOURCE). */
#define _DEFAULT_SOURCE
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "cuda-model: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  abort();
}

/* MODEL_DEVICES (default 8) devices. */
static int model_devices(void) {
  const char *e = getenv("MODEL_DEVICES");
  return e ? atoi(e) : 8;
}
static int current_device;

typedef struct {
  char *base;
  size_t bytes;
  int device;
} Allocation;
enum { MAX_ALLOCATIONS = 1 << 16 };
static Allocation allocations[MAX_ALLOCATIONS];
static int n_allocations;

static void check_range(const void *ptr, size_t bytes, int device, const char *what) {
  if (bytes == 0) return;
  for (int i = 0; i < n_allocations; i++) {
    const Allocation *a = &allocations[i];
    if (a->base && (const char *)ptr >= a->base && (const char *)ptr + bytes <= a->base + a->bytes) {
      if (a->device != device) die("%s: a buffer of device %d used on device %d", what, a->device, device);
      return;
    }
  }
  die("%s: %zu bytes at %p lie outside every allocation", what, bytes, ptr);
}

struct CUstream_st {
  int device;
  double clock; /* virtual seconds */
};
struct CUevent_st {
  int device, recorded, timing;
  double at;
};
struct cublasContext {
  int device;
  cudaStream_t stream;
};
struct ncclComm {
  int device, rank, ranks, clique;
};

static void on_stream(cudaStream_t s, const char *what) {
  if (!s) die("%s: the legacy default stream", what);
  if (s->device != current_device)
    die("%s: a stream of device %d while device %d is current", what, s->device, current_device);
}

cudaError_t cudaGetDeviceCount(int *count) {
  *count = model_devices();
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= model_devices()) die("cudaSetDevice(%d)", device);
  current_device = device;
  return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t error) {
  (void)error;
  return "cuda-model error";
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (device < 0 || device >= model_devices()) die("cudaGetDeviceProperties(%d)", device);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "cuda-model device");
  prop->totalGlobalMem = (size_t)80 << 30;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  (void)attr, (void)device;
  *value = 1000000;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  if (n_allocations == MAX_ALLOCATIONS) die("more than %d allocations", MAX_ALLOCATIONS);
  void *base = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return cudaErrorMemoryAllocation;
  allocations[n_allocations++] = (Allocation){base, bytes, current_device};
  *ptr = base;
  return cudaSuccess;
}
cudaError_t cudaFree(void *ptr) {
  for (int i = 0; i < n_allocations; i++)
    if (allocations[i].base == ptr) {
      munmap(ptr, allocations[i].bytes);
      allocations[i].base = NULL;
      return cudaSuccess;
    }
  die("cudaFree of %p, which cudaMalloc did not return", ptr);
}
cudaError_t cudaMemset(void *ptr, int value, size_t bytes) {
  (void)value;
  check_range(ptr, bytes, current_device, "cudaMemset");
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind) {
  (void)src;
  if (kind != cudaMemcpyHostToDevice) die("cudaMemcpy: not host to device");
  check_range(dst, bytes, current_device, "cudaMemcpy destination");
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (kind != cudaMemcpyDeviceToDevice) die("cudaMemcpyAsync: not device to device");
  on_stream(stream, "cudaMemcpyAsync");
  check_range(dst, bytes, stream->device, "cudaMemcpyAsync destination");
  check_range(src, bytes, stream->device, "cudaMemcpyAsync source");
  stream->clock += 1e-6 + (double)bytes / 1e12;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
  (void)flags;
  *stream = calloc(1, sizeof **stream);
  (*stream)->device = current_device;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  free(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  on_stream(stream, "cudaStreamSynchronize");
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  *event = calloc(1, sizeof **event);
  (*event)->device = current_device;
  (*event)->timing = !(flags & cudaEventDisableTiming);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  free(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!stream) die("cudaEventRecord on the legacy default stream");
  if (event->device != stream->device)
    die("cudaEventRecord: an event of device %d on a stream of device %d", event->device, stream->device);
  event->recorded = 1;
  event->at = stream->clock;
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  (void)flags;
  if (!event->recorded) die("cudaStreamWaitEvent on an event never recorded");
  if (event->device != stream->device) die("cudaStreamWaitEvent across devices");
  if (event->at > stream->clock) stream->clock = event->at;
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start->recorded || !end->recorded) die("cudaEventElapsedTime of an event never recorded");
  if (!start->timing || !end->timing) die("cudaEventElapsedTime of an event without timing");
  if (start->device != end->device) die("cudaEventElapsedTime across devices");
  if (end->at < start->at) die("cudaEventElapsedTime: end before start");
  *ms = (float)((end->at - start->at) * 1e3);
  return cudaSuccess;
}

/* --- cuBLAS --- */

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  *handle = calloc(1, sizeof **handle);
  (*handle)->device = current_device;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!stream || stream->device != handle->device) die("cublasSetStream: a stream of another device");
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t status) {
  (void)status;
  return "cuda-model cuBLAS error";
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long int strideA, const void *B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)alpha, (void)beta, (void)algo;
  on_stream(handle->stream, "cublasGemmStridedBatchedEx");
  if (handle->device != current_device) die("cublasGemmStridedBatchedEx: a handle of another device");
  if (transa != CUBLAS_OP_N || transb != CUBLAS_OP_N) die("cublasGemmStridedBatchedEx: transposes");
  if (Atype != Btype || Btype != Ctype) die("cublasGemmStridedBatchedEx: operand types differ");
  if (Atype == CUDA_R_32F) {
    if (computeType != CUBLAS_COMPUTE_32F && computeType != CUBLAS_COMPUTE_32F_FAST_TF32)
      die("cublasGemmStridedBatchedEx: fp32 operands with compute type %d", (int)computeType);
  } else if (Atype == CUDA_R_16F || Atype == CUDA_R_16BF) {
    if (computeType != CUBLAS_COMPUTE_32F) die("cublasGemmStridedBatchedEx: 16-bit operands, compute type %d", (int)computeType);
  } else {
    die("cublasGemmStridedBatchedEx: operand type %d", (int)Atype);
  }
  size_t size = Atype == CUDA_R_32F ? 4 : 2;
  if (m < 1 || n < 1 || k < 1 || batchCount < 1 || lda < m || ldb < k || ldc < m)
    die("cublasGemmStridedBatchedEx: m=%d n=%d k=%d batch=%d lda=%d ldb=%d ldc=%d", m, n, k,
        batchCount, lda, ldb, ldc);
  if (strideA < (long long)lda * k || strideB < (long long)ldb * n || strideC < (long long)ldc * n)
    die("cublasGemmStridedBatchedEx: batch strides overlap");
  check_range(A, ((size_t)strideA * (size_t)(batchCount - 1) + (size_t)lda * (size_t)k) * size, handle->device, "GEMM A");
  check_range(B, ((size_t)strideB * (size_t)(batchCount - 1) + (size_t)ldb * (size_t)n) * size, handle->device, "GEMM B");
  check_range(C, ((size_t)strideC * (size_t)(batchCount - 1) + (size_t)ldc * (size_t)n) * size, handle->device, "GEMM C");
  handle->stream->clock += 5e-6 + 2.0 * m * n * k * batchCount / 5e14;
  return CUBLAS_STATUS_SUCCESS;
}

/* --- NCCL --- */

typedef enum { OP_ALL_REDUCE, OP_ALL_GATHER, OP_REDUCE_SCATTER, OP_ALL_TO_ALL, OP_BROADCAST, OP_REDUCE, OP_SEND, OP_RECV } OpKind;
typedef struct {
  OpKind kind;
  ncclComm_t comm;
  cudaStream_t stream;
  size_t count;
  ncclDataType_t type;
  int peer, root;
} Op;
enum { MAX_GROUP_OPS = 1 << 16 };
static Op group_ops[MAX_GROUP_OPS];
static int n_group_ops, group_depth, n_cliques;

static size_t type_size(ncclDataType_t type) {
  switch (type) {
  case ncclFloat32: return 4;
  case ncclFloat16:
  case ncclBfloat16: return 2;
  default: die("NCCL data type %d", (int)type);
  }
}

ncclResult_t ncclGetVersion(int *version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t result) {
  (void)result;
  return "cuda-model NCCL error";
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  (void)id;
  die("ncclGetUniqueId: MPI mode is not modelled");
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int ranks, ncclUniqueId id, int rank) {
  (void)comm, (void)ranks, (void)id, (void)rank;
  die("ncclCommInitRank: MPI mode is not modelled");
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
  (void)comm, (void)color, (void)key, (void)newcomm, (void)config;
  die("ncclCommSplit: MPI mode is not modelled");
}
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ranks, const int *devices) {
  if (group_depth) die("ncclCommInitAll inside a group");
  for (int i = 0; i < ranks; i++) {
    for (int j = 0; j < i; j++)
      if (devices[i] == devices[j]) die("ncclCommInitAll: device %d twice", devices[i]);
    comms[i] = calloc(1, sizeof *comms[i]);
    *comms[i] = (struct ncclComm){devices[i], i, ranks, n_cliques};
  }
  n_cliques++;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  free(comm);
  return ncclSuccess;
}

/* At the end of the outermost group: match every op with the rest of its rendezvous, then let
 * the members' streams meet (each clock to the latest, plus the op's virtual time). */
static void group_complete(void) {
  int *done = calloc((size_t)n_group_ops + 1, sizeof *done);
  for (int i = 0; i < n_group_ops; i++) {
    if (done[i]) continue;
    Op *op = &group_ops[i];
    double bytes = (double)(op->count * type_size(op->type));
    if (op->kind == OP_SEND || op->kind == OP_RECV) {
      OpKind other = op->kind == OP_SEND ? OP_RECV : OP_SEND;
      int j = i + 1;
      for (; j < n_group_ops; j++)
        if (!done[j] && group_ops[j].kind == other && group_ops[j].comm->clique == op->comm->clique &&
            group_ops[j].comm->rank == op->peer && group_ops[j].peer == op->comm->rank)
          break;
      if (j == n_group_ops)
        die("nccl%s from rank %d to rank %d has no matching nccl%s in its group (one thread would hang)",
            op->kind == OP_SEND ? "Send" : "Recv", op->comm->rank, op->peer, op->kind == OP_SEND ? "Recv" : "Send");
      if (group_ops[j].count != op->count || group_ops[j].type != op->type) die("ncclSend and ncclRecv sizes differ");
      done[i] = done[j] = 1;
      double t = (op->stream->clock > group_ops[j].stream->clock ? op->stream->clock : group_ops[j].stream->clock) + 2e-6 + bytes / 5e10;
      op->stream->clock = group_ops[j].stream->clock = t;
      continue;
    }
    int members = 0;
    double t = 0;
    for (int j = i; j < n_group_ops; j++) {
      Op *o = &group_ops[j];
      if (done[j] || o->comm->clique != op->comm->clique || o->kind == OP_SEND || o->kind == OP_RECV) continue;
      if (o->kind != op->kind || o->count != op->count || o->type != op->type || o->root != op->root)
        die("a collective's members differ in kind, count, type or root");
      done[j] = 1;
      members++;
      if (o->stream->clock > t) t = o->stream->clock;
    }
    if (members != op->comm->ranks)
      die("collective %d on a communicator of %d ranks: %d member(s) in the group (one thread would hang)",
          (int)op->kind, op->comm->ranks, members);
    t += 5e-6 + bytes / 5e10;
    for (int j = i; j < n_group_ops; j++)
      if (group_ops[j].comm->clique == op->comm->clique && group_ops[j].kind == op->kind) group_ops[j].stream->clock = t;
  }
  free(done);
  n_group_ops = 0;
}

static ncclResult_t enqueue(Op op, const void *send, void *recv) {
  if (!op.comm) die("an NCCL call on a NULL communicator");
  if (!op.stream || op.stream->device != op.comm->device)
    die("an NCCL call with a stream of another device than its communicator's");
  size_t bytes = op.count * type_size(op.type), ranks = (size_t)op.comm->ranks;
  size_t send_bytes = bytes, recv_bytes = bytes;
  switch (op.kind) {
  case OP_ALL_GATHER: recv_bytes = bytes * ranks; break;
  case OP_REDUCE_SCATTER: send_bytes = bytes * ranks; break;
  case OP_ALL_TO_ALL: send_bytes = recv_bytes = bytes * ranks; break;
  case OP_SEND: recv_bytes = 0; break;
  case OP_RECV: send_bytes = 0; break;
  default: break;
  }
  if (send_bytes) check_range(send, send_bytes, op.comm->device, "NCCL send buffer");
  if (recv_bytes) check_range(recv, recv_bytes, op.comm->device, "NCCL receive buffer");
  if ((op.kind == OP_SEND || op.kind == OP_RECV) &&
      (op.peer < 0 || op.peer >= op.comm->ranks || op.peer == op.comm->rank))
    die("NCCL peer %d from rank %d of %d", op.peer, op.comm->rank, op.comm->ranks);
  if (n_group_ops == MAX_GROUP_OPS) die("more than %d NCCL calls in one group", MAX_GROUP_OPS);
  group_ops[n_group_ops++] = op;
  if (!group_depth) group_complete();
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void) {
  if (group_depth <= 0) die("ncclGroupEnd without ncclGroupStart");
  if (--group_depth == 0) group_complete();
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)op;
  return enqueue((Op){OP_ALL_REDUCE, comm, stream, count, datatype, -1, -1}, sendbuff, recvbuff);
}
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return enqueue((Op){OP_ALL_GATHER, comm, stream, sendcount, datatype, -1, -1}, sendbuff, recvbuff);
}
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)op;
  return enqueue((Op){OP_REDUCE_SCATTER, comm, stream, recvcount, datatype, -1, -1}, sendbuff, recvbuff);
}
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream) {
  return enqueue((Op){OP_ALL_TO_ALL, comm, stream, count, datatype, -1, -1}, sendbuff, recvbuff);
}
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return enqueue((Op){OP_BROADCAST, comm, stream, count, datatype, -1, root}, sendbuff, recvbuff);
}
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)op;
  return enqueue((Op){OP_REDUCE, comm, stream, count, datatype, -1, root}, sendbuff, recvbuff);
}
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return enqueue((Op){OP_SEND, comm, stream, count, datatype, peer, -1}, sendbuff, NULL);
}
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return enqueue((Op){OP_RECV, comm, stream, count, datatype, peer, -1}, NULL, recvbuff);
}
