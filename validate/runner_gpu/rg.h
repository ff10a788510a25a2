/* validate/runner_gpu — stratsim-runner's private header: a plan (validate/val_plan.h) executed
 * on CUDA devices with cuBLAS and NCCL (README.md in this folder says what each step becomes).
 *
 * Two ways to drive the ranks:
 *  - one process over all the plan's ranks (rank r on CUDA device r): one thread issues every
 *    rank's steps in the plan's issue order (ValPlan.issue), each collective's members and each
 *    send/recv pair inside one ncclGroupStart/End, so a single thread cannot block on NCCL;
 *  - under mpirun (RG_HAVE_MPI), one process per rank on the device of its node-local rank:
 *    each issues its own program in list order (the plan cannot deadlock: val_plan.h).
 * All state of a run hangs off RgRun; nothing global but the error quark. */
#ifndef STRATSIM_RG_H
#define STRATSIM_RG_H

#include "validate/runner_gpu/rg_fill.h"
#include "validate/runner_gpu/rg_kind.h"
#include "validate/val_plan.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <glib.h>
#include <nccl.h>

G_BEGIN_DECLS

#define RG_ERROR (rg_error_quark())
GQuark rg_error_quark(void);
typedef enum {
  RG_ERROR_INPUT,   /* a plan or option this machine cannot run as asked (exit 2) */
  RG_ERROR_FAILED,  /* CUDA, cuBLAS, NCCL or MPI failed, or no device (exit 1) */
} RgError;

/* Each returns TRUE on success, else sets @error to "WHAT: library message" (RG_ERROR_FAILED). */
gboolean rg_cuda_ok(cudaError_t status, const char *what, GError **error);
gboolean rg_cublas_ok(cublasStatus_t status, const char *what, GError **error);
gboolean rg_nccl_ok(ncclResult_t status, const char *what, GError **error);

/* One plan rank driven by this process. */
typedef struct {
  int rank;                   /* plan rank */
  int device;                 /* CUDA device ordinal */
  const ValProgram *program;
  cudaStream_t streams[VAL_STREAMS]; /* indexed by ValStream */
  cublasHandle_t blas;
  ncclComm_t *comms;          /* per plan group index: this rank's communicator, NULL if not a member */
  void *gemm_a, *gemm_b, *gemm_c;  /* each the largest operand of the rank's gemms */
  void *copy_src, *copy_dst;  /* the largest elementwise stand-in copy */
  /* Per communication stream (indexed by ValStream; compute's unused): the largest collective
   * or transfer buffers of its steps, so streams that overlap never share a buffer. */
  void *comm_send[VAL_STREAMS], *comm_recv[VAL_STREAMS];
  cudaEvent_t *start, *end;   /* per step: around its kernel or NCCL call */
  cudaEvent_t begin, finish, comm_done;  /* per iteration: every stream starts after begin;
                                            finish follows every stream's last step */
  float *step_ms;             /* n_steps x timed iterations: [step * iterations + iteration] */
  double *median_s;           /* per step: median over the timed iterations */
  ncclComm_t world;           /* all plan ranks (rank = plan rank): transfers; NULL if none */
} RgRank;

typedef struct {
  const ValPlan *plan;
  int warmup, iterations;
  gboolean mpi;               /* one process per rank */
  int mpi_rank, mpi_size;     /* 0, 1 without MPI */
  int n_local;
  RgRank *local;              /* the ranks this process drives */
  int mpi_device;             /* MPI mode: this process's CUDA device (its node-local rank) */
  ncclComm_t world;           /* MPI mode: all ranks, made by rg_main.c (NULL otherwise) */
  char **hosts;               /* per plan rank: its host's name (this host without MPI) */
  double *iteration_s;        /* rank 0: per timed iteration, the slowest rank's time */
} RgRun;

/* --- rg_exec.c: set-up and the timed iterations --- */

/* Maps the plan's ranks to this process (all of them, or run->mpi_rank under MPI), creates
 * streams, cuBLAS handles, the groups' NCCL communicators, events and buffers. */
gboolean rg_run_setup(RgRun *run, GError **error);
/* Runs run->warmup then run->iterations iterations; fills iteration_s and each local rank's
 * median_s. */
gboolean rg_run_iterations(RgRun *run, GError **error);
/* Frees what rg_run_setup made (safe on a half-made run): host memory always; GPU resources
 * (synchronizing each device, destroying communicators, events, buffers) only with
 * @release_gpu, which a failed run skips, since that could wait forever on an NCCL kernel whose
 * peers never came (the driver frees them at exit). */
void rg_run_teardown(RgRun *run, gboolean release_gpu);

/* NCCL data type and element size of a plan dtype (tf32 moves as fp32). */
ncclDataType_t rg_nccl_dtype(ValDtype dtype);
/* Elements and buffer bytes a collective of @bytes (CALIBRATION.md convention) over @n ranks
 * needs: @count is what the NCCL call takes, @send_bytes and @recv_bytes the buffers. */
void rg_collective_size(ValCollectiveKind kind, gint64 bytes, ValDtype dtype, int n,
                        size_t *count, size_t *send_bytes, size_t *recv_bytes);
/* Enqueues one collective of @kind on @stream (root: rank 0 of @comm). */
gboolean rg_collective_launch(ValCollectiveKind kind, const void *send, void *recv, size_t count,
                              ValDtype dtype, int comm_rank, int comm_size, ncclComm_t comm,
                              cudaStream_t stream, GError **error);
/* Enqueues C[batch,m,n] = A[batch,m,k] B[batch,k,n] in @dtype on @blas's stream. */
gboolean rg_gemm_launch(cublasHandle_t blas, ValDtype dtype, gint64 m, gint64 n, gint64 k,
                        gint64 batch, const void *a, const void *b, void *c, GError **error);
/* The stand-in for a non-GEMM kernel: a device-to-device copy of half of @traffic_bytes (it
 * reads and writes that much, so @traffic_bytes move through memory). */
gboolean rg_copy_launch(void *dst, const void *src, gint64 traffic_bytes, cudaStream_t stream,
                        GError **error);
/* Bytes the copy stand-in moves one way for @traffic_bytes of traffic (at least 1). */
size_t rg_copy_bytes(gint64 traffic_bytes);

/* --- rg_micro.c: micro-benchmarks --- */

/* Times the plan's microbenchmarks (each warm-up times, then the median of run->iterations
 * single runs) and adds them to @m on rank 0. Collectives use the first ranks of the plan
 * (spread over hosts as asked where the hosts allow; the nodes written are those used). */
gboolean rg_run_microbenchmarks(RgRun *run, ValMeasurements *m, GError **error);

/* --- rg_env.c: the environment --- */

/* Writes device, device_kind, driver, cuda_runtime, nccl, clocks (rank 0's device) and host,
 * date, command into @m; @device_kind overrides the kind guessed from the device name.
 * Returns the device kind used (caller g_frees; NULL when unknown). */
char *rg_environment(ValMeasurements *m, int device, const char *device_kind, int argc,
                     char **argv, GError **error);

/* --- MPI (rg_main.c; no-ops without MPI) --- */
void rg_mpi_barrier(const RgRun *run);
/* Element-wise max of @n doubles over the ranks into @values on rank 0. */
void rg_mpi_max_to_root(const RgRun *run, double *values, int n);

G_END_DECLS

#endif
