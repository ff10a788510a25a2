/* costmodel/compute — roofline time of compute kernels and the optimizer step.
 *
 * GEMMs: the device kind's measured peak fraction and kernel floor (cm_gemm.c, cited there),
 * times tile and wave quantization by shape (below); at least the time their bytes take. The
 * other efficiencies are stated assumptions until measured profiles replace them; none is
 * fitted to end-to-end results:
 *  - matmul 0.70: only for device kinds cm_gemm.c has no measurement for. Large cuBLAS GEMMs
 *    reach 70-86% of the dense tensor peak (NVIDIA "Matrix Multiplication Background User's
 *    Guide", Deep Learning Performance docs; MAMF table cited in cm_gemm.c).
 *  - memory-bound kernels: the fraction of HBM their kind reaches, measured on H100
 *    (cm_membound.c). memory 0.80 for the other kinds, the GEMMs' byte roofline and devices
 *    without measurements: bandwidth-bound kernels reach ~80-90% of HBM peak (STREAM-like
 *    copies on A100/H100; the same NVIDIA guide's "memory-limited" layer discussion).
 *  - vector 0.50: elementwise kernels are memory bound long before the vector FLOP rate binds;
 *    the figure only matters for FLOP-heavy non-matmul kernels.
 *  - GEMM tiles: the thread-block tile shapes of CUTLASS's default SM80/SM90 configurations
 *    and cuBLAS's kernels (256x128, 128x256, 128x128, 128x64, 64x128, 64x64; the NVIDIA
 *    "Matrix Multiplication Background" guide uses 128x128 for its A100 examples and notes that
 *    the library picks among such sizes). The model takes the shape that loses least to tile
 *    and wave quantization and charges no efficiency difference between shapes: against the
 *    30 published H100 shapes of tests/data/validation/gemm_public.csv the mean error is 7.8%
 *    (8.4% with 128x128 alone), and on Korthikanti et al.'s Megatron GEMMs the simulated GEMM
 *    time is 0.7-5.5% above the FLOPs at the measured peak (12.1% with 128x128 alone).
 *  - kernel overhead 1 us: back-to-back launches of a ~2.9 us kernel measured ~3.8 us per
 *    kernel in one stream (NVIDIA Developer Blog, "Getting Started with CUDA Graphs", 2019): the
 *    GPU-side gap between kernels. The host's launch cost is the host stream's (sim_host.h).
 *  - Adam step: cm_adam_bytes_per_param below.
 */
#include "costmodel/costmodel.h"
#include "costmodel/cm_profile.h"

#include <math.h>

void cm_params_default(CmParams *params) {
  params->matmul_efficiency = 0.70;
  params->gemm_by_device = TRUE;
  params->vector_efficiency = 0.50;
  params->memory_efficiency = 0.80;
  params->memory_by_kind = TRUE;
  params->optimizer_bytes_per_param = cm_adam_bytes_per_param(DEV_DTYPE_BF16);
  params->kernel_overhead_s = 1e-6;
  params->gemm_tile_m = 0; /* the library's choice */
  params->gemm_tile_n = 0;
  params->calibration = NULL;
  params->profiles = NULL;
}

gboolean cm_gemm_shape(const MdlOp *op, const double *local, CmGemmShape *out) {
  if (op->kind != MDL_OP_MATMUL && op->kind != MDL_OP_BATCH_MATMUL && op->kind != MDL_OP_CONV2D)
    return FALSE;
  CmGemmShape s = {1, 1, 1, 1};
  for (int d = 0; d < op->ndims; d++) {
    if (op->dims[d].role == MDL_ROLE_REDUCTION) {
      s.k *= local[d];
      continue;
    }
    gboolean in0 = FALSE, in1 = FALSE;
    for (int i = 0; i < MDL_MAX_DIMS; i++) {
      in0 |= op->ninputs > 0 && op->inputs[0].dim_map[i] == d;
      in1 |= op->ninputs > 1 && op->inputs[1].dim_map[i] == d;
    }
    if (op->kind == MDL_OP_BATCH_MATMUL) {
      /* A dim the first input does not index belongs to the second's side (n), also when a
       * fused tensor hides it (the head dim inside GPT's [b, s, 3h] QKV activation). */
      if (in0 && in1) s.batch *= local[d];
      else if (in0) s.m *= local[d];
      else s.n *= local[d];
    } else if (in0 && in1) {
      /* A dim indexing the activation and the weight: one GEMM per index, a grouped GEMM (the
       * experts of an MoE layer, model/mdl_zoo_moe.c). */
      s.batch *= local[d];
    } else if (op->dims[d].role == MDL_ROLE_PARAMETER) {
      s.n *= local[d];
    } else {
      s.m *= local[d];
    }
  }
  if (op->kind == MDL_OP_CONV2D && op->kernel_elems > 1) s.k *= (double)op->kernel_elems;
  *out = s;
  return TRUE;
}

/* The tile extent a library kernel uses along a GEMM dim of size @dim: the configured tile, or
 * for a smaller dim the next power of two (at least 16), as cuBLAS/cuDNN pick narrower kernels
 * for skinny shapes. */
static double tile_extent(double tile, double dim) {
  double t = 16;
  while (t < dim && t < tile) t *= 2;
  return t < tile ? t : tile;
}

static double quantization(double tile_m, double tile_n, const DevKind *device, const CmGemmShape *s);

double cm_gemm_quantization(const CmParams *params, const DevKind *device, const CmGemmShape *s) {
  if (params->gemm_tile_m > 0 && params->gemm_tile_n > 0)
    return quantization(params->gemm_tile_m, params->gemm_tile_n, device, s);
  static const double tiles[][2] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
  double best = 0;
  for (guint i = 0; i < G_N_ELEMENTS(tiles); i++)
    best = MAX(best, quantization(tiles[i][0], tiles[i][1], device, s));
  return best;
}

static double quantization(double tile_m, double tile_n, const DevKind *device, const CmGemmShape *s) {
  double tm = tile_extent(tile_m, s->m), tn = tile_extent(tile_n, s->n);
  double tiles_m = ceil(s->m / tm), tiles_n = ceil(s->n / tn);
  if (tiles_m < 1 || tiles_n < 1) return 1.0;
  double tile = s->m * s->n / (tiles_m * tm * tiles_n * tn);
  double units = tiles_m * tiles_n * s->batch;
  double wave = 1.0;
  if (device->sm_count > 0) {
    /* Split-K: with fewer output tiles than SMs, libraries cut the reduction into slices run on
     * the idle SMs and sum them (cuBLAS and CUTLASS split-K; the "Matrix Multiplication
     * Background" guide's remedy for under-filled waves). Slices of at least 128 (one tile
     * depth) keep the partial sums' extra traffic small; it is not charged. */
    if (units < device->sm_count) {
      double split = floor(device->sm_count / units), slices = ceil(s->k / 128);
      units *= MAX(1.0, MIN(split, slices));
    }
    double waves = ceil(units / device->sm_count);
    wave = units / (waves * device->sm_count);
  }
  return tile * wave;
}

static double roofline(const CmParams *params, const DevKind *device, MdlOpKind kind,
                       DevDtype dtype, double flops, double bytes, CmMemoryKind memory);

/* cm_kernel_time with the memory-bound kind @memory. */
static double kernel_time(const CmParams *params, const DevKind *device, MdlOpKind kind,
                          DevDtype dtype, double flops, double bytes, const CmGemmShape *shape,
                          CmMemoryKind memory) {
  if (!shape)
    return roofline(params, device, kind, dtype, flops, bytes, memory) + params->kernel_overhead_s;
  double quant = cm_gemm_quantization(params, device, shape) *
                 cm_gemm_alignment(params, device, dtype, shape);
  double exposed = cm_gemm_exposed_bytes(params, device, dtype, shape, bytes);
  double epilogue = exposed / (device->hbm_bandwidth * cm_memory_efficiency(params, device, memory));
  return roofline(params, device, kind, dtype, flops / quant, bytes - exposed, memory) + epilogue +
         cm_gemm_min_kernel_s(params, device) + params->kernel_overhead_s;
}

/* The memory-bound kind of a kernel of @kind; contractions are CM_MEMORY_OTHER. */
static CmMemoryKind memory_kind(MdlOpKind kind, gboolean dropout) {
  return cm_gemm_kind(kind) ? CM_MEMORY_OTHER : cm_memory_kind(kind, dropout);
}

double cm_kernel_time_profiled(const CmParams *params, const DevKind *device, const MdlOp *op,
                               DevDtype dtype, double flops, double bytes,
                               const CmGemmShape *shape, double elements, gboolean backward,
                               double fraction) {
  double measured;
  if (params->profiles && cm_profiles_lookup(params->profiles, device->name, op->kind, dtype,
                                             shape, elements, backward, &measured))
    return (shape ? measured : measured * fraction) + params->kernel_overhead_s;
  return kernel_time(params, device, op->kind, dtype, flops, bytes, shape,
                     memory_kind(op->kind, op->dropout));
}

double cm_kernel_time(const CmParams *params, const DevKind *device, MdlOpKind kind,
                      DevDtype dtype, double flops, double bytes, const CmGemmShape *shape) {
  return kernel_time(params, device, kind, dtype, flops, bytes, shape, memory_kind(kind, FALSE));
}

gboolean cm_gemm_kind(MdlOpKind kind) {
  return kind == MDL_OP_MATMUL || kind == MDL_OP_BATCH_MATMUL || kind == MDL_OP_CONV2D;
}

double cm_compute_time(const CmParams *params, const DevKind *device, MdlOpKind kind,
                       DevDtype dtype, double flops, double bytes) {
  return roofline(params, device, kind, dtype, flops, bytes, memory_kind(kind, FALSE));
}

static double roofline(const CmParams *params, const DevKind *device, MdlOpKind kind,
                       DevDtype dtype, double flops, double bytes, CmMemoryKind memory) {
  double rate;
  if (cm_gemm_kind(kind)) {
    double peak = device->peak_flops[dtype];
    /* tf32 is a matmul mode: devices without it run fp32 GEMMs. */
    if (peak <= 0 && dtype == DEV_DTYPE_TF32) peak = device->peak_flops[DEV_DTYPE_FP32];
    rate = peak * cm_gemm_efficiency(params, device, dtype);
  } else {
    rate = device->vector_flops * params->vector_efficiency;
  }
  double t_flops = rate > 0 ? flops / rate : 0.0;
  double t_bytes = bytes / (device->hbm_bandwidth * cm_memory_efficiency(params, device, memory));
  return t_flops > t_bytes ? t_flops : t_bytes;
}

/* The optimizer step of Megatron-LM's training step (megatron/training.py train_step and
 * megatron/optimizer/optimizer.py, Float16OptimizerWithFloat16Params / FP32Optimizer; the same
 * in megatron/core/optimizer/optimizer.py), HBM bytes per local parameter, pass by pass:
 *  - FusedAdam (apex csrc/multi_tensor_adam.cu, AdamFunctor over tensor lists of depth 4): the
 *    fp32 main grad, main param, m and v loaded (16), param, m, v stored (12): 28.
 *  - clip_grad_norm (megatron/optimizer/clip_grads.py, --clip-grad 1.0 by default):
 *    multi_tensor_l2norm reads the fp32 grads: 4. (The multi_tensor_scale that clips them runs
 *    only when the norm exceeds the threshold: data dependent, not charged.)
 *  - 16-bit models: _copy_main_params_to_model_params, multi_tensor_scale from the fp32 main
 *    params into the model's: 4 read + 2 written.
 *  - the next iteration's model_chunk.zero_grad_buffer() (train_step's first statement) writes
 *    the grad buffer: 4 bytes (fp32 main_grad, bf16 and fp32 models: cm_framework_grad_bytes),
 *    2 for fp16.
 *  - fp16 only: _copy_model_grads_to_main_grads casts the fp16 main_grad to fp32 (2 read, 4
 *    written) and _unscale_main_grads_and_check_for_nan reads and writes them (8); bf16 runs
 *    with no grad scaler (get_megatron_optimizer: grad_scaler None unless --fp16 or
 *    --loss-scale) and no cast (main_grad is already fp32).
 * bf16: 28 + 4 + 6 + 4 = 42; fp32: 28 + 4 + 4 = 36; fp16: 28 + 4 + 6 + 2 + 6 + 8 = 54. FP8
 * runs keep bf16 params (Transformer Engine): the bf16 figure. Each pass is its own kernel(s)
 * at the memory efficiency below; the "about half of 54 ms" for 22B/tp=8 has no pass
 * structure behind it that we could find (cited sources above give 42 B, ~71 ms there). */
double cm_adam_bytes_per_param(DevDtype dtype) {
  double adam = 4 * 4 + 3 * 4, norm = 4;
  if (dtype == DEV_DTYPE_FP32 || dtype == DEV_DTYPE_TF32) return adam + norm + 4;
  double copy = 4 + 2, zero = dtype == DEV_DTYPE_FP16 ? 2 : 4;
  double fp16_grads = dtype == DEV_DTYPE_FP16 ? (2 + 4) + 8 : 0;
  return adam + norm + copy + zero + fp16_grads;
}

double cm_optimizer_bytes(const CmParams *params, DevDtype dtype) {
  return params->optimizer_bytes_per_param * cm_adam_bytes_per_param(dtype) /
         cm_adam_bytes_per_param(DEV_DTYPE_BF16);
}

double cm_optimizer_time(const CmParams *params, const DevKind *device, DevDtype dtype,
                         double params_local) {
  return params_local * cm_optimizer_bytes(params, dtype) /
         (device->hbm_bandwidth * params->memory_efficiency);
}
