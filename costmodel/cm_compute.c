/* costmodel/compute — roofline time of compute kernels and the optimizer step.
 *
 * Default efficiencies are stated assumptions until calibration replaces them with measured
 * GEMM and kernel profiles (issue 3); they are not fitted to end-to-end results:
 *  - matmul 0.70: large cuBLAS GEMMs reach 70-80% of the dense tensor peak on A100/H100
 *    (NVIDIA "Matrix Multiplication Background User's Guide", Deep Learning Performance docs,
 *    which shows A100 fp16 GEMMs at ~230-250 of 312 TFLOP/s for large square sizes).
 *  - memory 0.80: bandwidth-bound kernels reach ~80-90% of HBM peak (STREAM-like copies on
 *    A100/H100; the same NVIDIA guide's "memory-limited" layer discussion).
 *  - vector 0.50: elementwise kernels are memory bound long before the vector FLOP rate binds;
 *    the figure only matters for FLOP-heavy non-matmul kernels.
 *  - Adam step traffic: fp32 master weight, m, v read and written (24 B), gradient read (2-4 B)
 *    and the 16-bit weight written (2 B): 28-32 bytes per parameter; 32 used.
 */
#include "costmodel/costmodel.h"

void cm_params_default(CmParams *params) {
  params->matmul_efficiency = 0.70;
  params->vector_efficiency = 0.50;
  params->memory_efficiency = 0.80;
  params->optimizer_bytes_per_param = 32.0;
}

static gboolean is_contraction(MdlOpKind kind) {
  return kind == MDL_OP_MATMUL || kind == MDL_OP_BATCH_MATMUL || kind == MDL_OP_CONV2D;
}

double cm_compute_time(const CmParams *params, const DevKind *device, MdlOpKind kind,
                       DevDtype dtype, double flops, double bytes) {
  double rate;
  if (is_contraction(kind)) {
    double peak = device->peak_flops[dtype];
    /* tf32 is a matmul mode: devices without it run fp32 GEMMs. */
    if (peak <= 0 && dtype == DEV_DTYPE_TF32) peak = device->peak_flops[DEV_DTYPE_FP32];
    rate = peak * params->matmul_efficiency;
  } else {
    rate = device->vector_flops * params->vector_efficiency;
  }
  double t_flops = rate > 0 ? flops / rate : 0.0;
  double t_bytes = bytes / (device->hbm_bandwidth * params->memory_efficiency);
  return t_flops > t_bytes ? t_flops : t_bytes;
}

double cm_optimizer_time(const CmParams *params, const DevKind *device, double params_local) {
  return params_local * params->optimizer_bytes_per_param /
         (device->hbm_bandwidth * params->memory_efficiency);
}
