/* costmodel — what each task costs: compute time (roofline with a stated efficiency),
 * collective time (NCCL's tuner model for NCCL's collectives, costmodel/COLLECTIVES.md; alpha-beta
 * per link class, AutoDDL Table 2, for transfers), memory per device.
 * All times in seconds, sizes in bytes. Pure functions of their inputs: no globals, safe to
 * call from many simulations on threads at once. */
#ifndef STRATSIM_COSTMODEL_H
#define STRATSIM_COSTMODEL_H

#include <glib.h>
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"

G_BEGIN_DECLS

/* Efficiencies applied to datasheet peaks until calibration (issue 3) measures them. */
typedef struct {
  double matmul_efficiency;  /* fraction of peak tensor FLOP/s large GEMMs/convs reach on a
                                device kind without measured figures (cm_gemm_efficiency) */
  gboolean gemm_by_device;   /* use the measured per-device GEMM figures of cm_gemm.c (default
                                TRUE); FALSE: matmul_efficiency everywhere, no kernel floor */
  double vector_efficiency;  /* fraction of vector FLOP/s elementwise kernels reach */
  double memory_efficiency;  /* fraction of HBM bandwidth memory-bound kernels reach where no
                                per-kind figure applies (cm_memory_efficiency), and the
                                optimizer step's */
  gboolean memory_by_kind;   /* use the measured per-kind figures of cm_membound.c (default
                                TRUE); FALSE: memory_efficiency for every kernel */
  double optimizer_bytes_per_param; /* HBM traffic of one optimizer step per local parameter
                                       of a bf16 model (cm_adam_bytes_per_param); other
                                       dtypes scale by cm_adam_bytes_per_param's ratio */
  double kernel_overhead_s;  /* added to every compute kernel: launch and scheduling gap */
  int gemm_tile_m, gemm_tile_n; /* output tile of one thread block (tile/wave quantization);
                                   0 (default): the library's choice among its tile shapes,
                                   the one that loses least (cm_gemm_quantization) */
  const struct CmCalibration *calibration; /* measured collectives (cm_calibrate.h), or NULL:
                                              the preset's alpha-beta figures; borrowed */
  const struct CmProfiles *profiles;       /* measured kernels (cm_profile.h) that override the
                                              roofline, or NULL; borrowed */
} CmParams;

/* Memory-bound kernels by kind (costmodel/cm_membound.c, each figure's source there). */
typedef enum {
  CM_MEMORY_STREAM,  /* elementwise without dropout: adds, activations, bias, casts */
  CM_MEMORY_DROPOUT, /* elementwise with a dropout (random numbers and a 1-byte mask) */
  CM_MEMORY_NORM,    /* layer norm, RMS norm */
  CM_MEMORY_SOFTMAX, /* softmax and the softmax cross-entropy loss */
  CM_MEMORY_OTHER    /* anything else: CmParams.memory_efficiency */
} CmMemoryKind;

/* The memory-bound kind of an op of @kind (with a dropout folded in when @dropout). */
CmMemoryKind cm_memory_kind(MdlOpKind kind, gboolean dropout);
/* The fraction of @device's HBM bandwidth a kernel of @kind reaches on its nominal bytes:
 * measured for the device kind (cm_membound.c), else @params->memory_efficiency (also for
 * CM_MEMORY_OTHER and with @params->memory_by_kind off). */
double cm_memory_efficiency(const CmParams *params, const DevKind *device, CmMemoryKind kind);

/* A contraction viewed as a (batched) GEMM: C[batch, m, n] = A[batch, m, k] B[batch, k, n]. */
typedef struct {
  double m, n, k, batch;
} CmGemmShape;

/* The GEMM shape of contraction @op (MATMUL, BATCH_MATMUL, CONV2D as implicit GEMM) with
 * per-device dim sizes @local (one per op dim): k = the REDUCTION dims (times the kernel window
 * of a convolution); MATMUL and CONV2D: dims indexed by both inputs (an MoE layer's experts)
 * form the batch of a grouped GEMM, n = the other PARAMETER dims, m = the other output dims;
 * BATCH_MATMUL: dims indexed by both inputs form the batch, those only in the first input m,
 * the others n. FALSE for other op kinds. */
gboolean cm_gemm_shape(const MdlOp *op, const double *local, CmGemmShape *out);

/* Fraction of peak a GEMM of @shape can reach on @device because of tile quantization (partial
 * output tiles do full work) and wave quantization (the last wave of tiles leaves SMs idle):
 * NVIDIA Deep Learning Performance docs, "Matrix Multiplication Background User's Guide",
 * sections "Tile Quantization" and "Wave Quantization". Dims smaller than the tile use a tile
 * of the next power of two (at least 16); output tiles fewer than the SMs are multiplied by a
 * split of the reduction (split-K) up to the SM count. With @params' tile 0 x 0 the best of the
 * tile shapes cuBLAS and CUTLASS offer (256x128, 128x256, 128x128, 128x64, 64x128, 64x64) is
 * taken, as their heuristics pick the configuration that fills the SMs. In (0, 1]; without the
 * SM count, tile quantization only. */
double cm_gemm_quantization(const CmParams *params, const DevKind *device, const CmGemmShape *shape);

/* The fraction of @device's tensor peak for @dtype that large GEMMs reach: measured for its kind
 * (sources in costmodel/cm_gemm.c), else @params->matmul_efficiency. */
double cm_gemm_efficiency(const CmParams *params, const DevKind *device, DevDtype dtype);
/* The fraction of the aligned rate a GEMM of @shape keeps when one of m, n, k spans a multiple
 * of fewer than 16 bytes in @dtype (cuBLAS then leaves its fastest kernels): measured for its
 * kind (cm_gemm.c), else 1. */
double cm_gemm_alignment(const CmParams *params, const DevKind *device, DevDtype dtype,
                         const CmGemmShape *shape);
/* The shortest a GEMM kernel runs on @device (fill and drain of one tile; cm_gemm.c), 0 for a
 * kind without measured figures. */
double cm_gemm_min_kernel_s(const CmParams *params, const DevKind *device);
/* The bytes of a GEMM's @bytes (inputs and output) whose writing does not overlap its main loop
 * on @device: the output (m x n x batch in @dtype; fp8 GEMMs write bf16, at most @bytes) where
 * the kind's library kernels run each tile's epilogue after its main loop (cm_gemm.c: A100), 0
 * where a tile's epilogue overlaps another's math (Hopper and Blackwell warp-specialized
 * kernels) or the kind has no figures. cm_kernel_time charges them after the roofline of the
 * rest. */
double cm_gemm_exposed_bytes(const CmParams *params, const DevKind *device, DevDtype dtype,
                             const CmGemmShape *shape, double bytes);

/* cm_compute_time for a contraction with a known GEMM shape (@shape may be NULL), plus the
 * per-kernel overhead. With a shape the efficiency depends on it: the peak fraction of the
 * device kind times cm_gemm_quantization, the time at least the roofline of the bytes that
 * overlap the math, then the cm_gemm_exposed_bytes at the memory rate, plus the kernel floor
 * cm_gemm_min_kernel_s. */
double cm_kernel_time(const CmParams *params, const DevKind *device, MdlOpKind kind,
                      DevDtype dtype, double flops, double bytes, const CmGemmShape *shape);
/* The same for a kernel of @op (its kind, and its dropout for the memory-bound kind), first
 * asking @params->profiles for a measured or interpolated time of the kernel: by its GEMM
 * @shape, or for other kinds by its output @elements and pass (@backward); such a kernel that
 * is the @fraction of the op's backward (its dX or dW share) takes that fraction of the
 * measured backward. */
double cm_kernel_time_profiled(const CmParams *params, const DevKind *device, const MdlOp *op,
                               DevDtype dtype, double flops, double bytes,
                               const CmGemmShape *shape, double elements, gboolean backward,
                               double fraction);

/* Fills the stated defaults (sources in costmodel/cm_compute.c). */
void cm_params_default(CmParams *params);

/* Time of one compute kernel: max(flops / (peak * eff), bytes / (hbm * eff)) — a roofline.
 * Contractions (matmul, batched matmul, conv) use the tensor peak of @dtype; the rest the
 * vector rate. The HBM fraction is cm_memory_efficiency's for @kind without a dropout
 * (contractions: CM_MEMORY_OTHER). */
double cm_compute_time(const CmParams *params, const DevKind *device, MdlOpKind kind,
                       DevDtype dtype, double flops, double bytes);
/* Whether ops of @kind run as GEMMs on the tensor cores (matmul, batch matmul, convolution). */
gboolean cm_gemm_kind(MdlOpKind kind);

/* HBM bytes per parameter of Megatron-LM's optimizer step for a model of @dtype: the fused
 * multi-tensor Adam (apex FusedAdam over fp32 grad, param, m, v), the grad-norm reduction, the
 * copy of the fp32 main params into 16-bit model params, the grad buffer's zeroing and, for
 * fp16, the grads' cast and unscale (derivation in cm_compute.c): bf16 42, fp32 36, fp16 54. */
double cm_adam_bytes_per_param(DevDtype dtype);

/* FP8 (costmodel/cm_fp8.c, Transformer Engine's recipe). Whether @op runs its GEMMs in FP8
 * under strategy dtype @dtype: DEV_DTYPE_FP8 and a MATMUL inside a layer. */
gboolean cm_fp8_gemm(const MdlOp *op, DevDtype dtype);
/* Whether an FP8 GEMM's input @tensor needs no cast kernel of its own: a weight (cast once an
 * iteration, cached) or a norm's output (the norm kernel writes it in fp8). */
gboolean cm_fp8_cast_fused(const MdlGraph *graph, int tensor);
/* The dtype @op's kernels run in: @dtype, except BF16 for the ops an FP8 strategy leaves in
 * bf16 (everything but the layers' linear GEMMs). */
DevDtype cm_op_dtype(const MdlOp *op, DevDtype dtype);
/* One fused cast-transpose-amax kernel over @elements bf16 values (read 2 bytes, write the fp8
 * copy and its transpose): memory bound, plus the kernel overhead; 0 for none. */
double cm_fp8_cast_time(const CmParams *params, const DevKind *device, double elements);

/* Optimizer step bytes per parameter for a model of @dtype: params->optimizer_bytes_per_param
 * (stated for bf16) times cm_adam_bytes_per_param(@dtype) / cm_adam_bytes_per_param(bf16). */
double cm_optimizer_bytes(const CmParams *params, DevDtype dtype);
/* Optimizer (Adam) step over @params_local parameters of a @dtype model on one device: memory
 * bound. */
double cm_optimizer_time(const CmParams *params, const DevKind *device, DevDtype dtype,
                         double params_local);

typedef enum {
  CM_ALL_REDUCE,
  CM_ALL_GATHER,
  CM_REDUCE_SCATTER,
  CM_ALL_TO_ALL,
  CM_SEND_RECV,
  CM_BROADCAST,  /* from one root to every member (richer model: costmodel/cm_collective.h) */
  CM_REDUCE,     /* to one root */
  CM_COLLECTIVE_COUNT
} CmCollective;

const char *cm_collective_name(CmCollective kind);
/* Parses a collective name: the names cm_collective_name gives ("all_reduce", "all_to_all",
 * "send_recv", ...) and the spellings of nccl-tests ("allreduce", "alltoall", "sendrecv").
 * FALSE for anything else. */
gboolean cm_collective_parse(const char *name, CmCollective *out);

/* The alpha and beta (seconds per byte) a group of devices communicates at, and its class.
 * A group inside one host uses the intra-host link. A group spanning hosts with k members per
 * host runs its ring over the NICs; all GPUs of a host are assumed busy in concurrent groups
 * of the same shape (symmetric strategies), so the group gets k/gpus_per_node of the host's
 * NIC bandwidth: beta = 1 / min(intra_bw, nics * nic_bw * k / gpus_per_node), alpha = the
 * inter-host latency. Contention between unlike groups is issue 4's step-expanded mode. */
typedef struct {
  double alpha;
  double beta;
  DevLinkClass link;
} CmLinkCost;

CmLinkCost cm_group_link(const DevCluster *cluster, const int *devices, int n);

/* Bandwidth-optimal collective time, AutoDDL Table 2 (ring all-reduce and all-gather, pairwise
 * reduce-scatter and all-to-all), p = group size, n = bytes: the reduce-scatter's input, the
 * other collectives' output (per device). all-reduce (2p-1)a + 2(p-1)/p n b; all-gather and
 * reduce-scatter (p-1)a + (p-1)/p n b; all-to-all (p-1)a + n b; send/recv a + n b.
 * Broadcast and reduce (not in Table 2): a pipelined chain, (p-1)a + n b, its many-chunk limit.
 * p <= 1 costs nothing. */
double cm_collective_time(CmCollective kind, int p, double bytes, const CmLinkCost *link);

/* Time of @kind over the @p @devices of a group: cm_collective_estimate (cm_tuner.h) with
 * @params->calibration, the same model and calibration `stratsim collective` uses: NCCL's tuner
 * model for NCCL's collectives, alpha-beta for all-to-all and send/recv, the calibration's
 * time where it covers the case. */
double cm_group_collective_time(const CmParams *params, const DevCluster *cluster,
                                CmCollective kind, const int *devices, int p, double bytes);

/* Memory per device, bytes, by category. */
typedef struct {
  double weights;
  double gradients;
  double optimizer;     /* Adam m and v, plus fp32 master weights under mixed precision */
  double activations;   /* saved for backward, times the microbatches in flight, plus the
                           largest recomputed group's for one microbatch */
  double buffers;       /* ZeRO-3: the gathered full weights of the two ops in flight */
  double total;
} CmMemory;

/* Peak memory of every device of the cluster under @strategy (array of
 * dev_cluster_num_devices entries, caller frees with g_free). Weights and gradients in the
 * compute dtype; Adam states fp32 (+ fp32 master copy when the dtype is 16-bit: 16 bytes per
 * parameter in all, Rajbhandari et al. 2020), partitioned over the data-parallel replicas by
 * the ZeRO stage; activations: every non-weight input an op saves for its backward (and its
 * dropout mask), per microbatch, times the microbatches its pipeline rank holds at once
 * (GPipe: all of them; 1F1B: min(m, p - rank); eager-1F1B, interleaved and weight delay: the
 * closed forms in cm_memory.c), less what recomputation rebuilds (Korthikanti et al. 2022). */
CmMemory *cm_memory_per_device(const MdlGraph *graph, const MdlStrategy *strategy,
                               const DevCluster *cluster);
/* cm_memory_per_device under each ZeRO stage z = 0..3 at once (@out[z]; @strategy's own
 * stage ignored, its other fields as they are): the same arrays, bit for bit, as four calls
 * with zero_stage set to each, at about the cost of one (a search's memory rule checks a
 * shape's variants). Caller g_free()s each. */
void cm_memory_per_device_zero_stages(const MdlGraph *graph, const MdlStrategy *strategy,
                                      const DevCluster *cluster, CmMemory *out[4]);

G_END_DECLS

#endif
