/* costmodel/gemm — what a GEMM kernel reaches on a device kind: the fraction of the datasheet
 * tensor peak large, well-shaped GEMMs attain, and the fixed duration of any GEMM kernel.
 *
 * Sources (each row of the table below):
 *  - peak fraction: the "Maximum Achievable Matmul FLOPS" (MAMF) table of S. Bekman,
 *    ml-engineering, compute/accelerator/README.md, bf16 matmul scanned over large shapes with
 *    torch.mm on cuBLAS: A100 SXM 267.9 of 312 TFLOP/s (85.9%, CUDA 12.1), H100 SXM 792.1 of 989
 *    (80.1%, CUDA 12.1). H200 has the H100's GH100 die and clocks (only its HBM differs), so it
 *    takes the H100 figure; that repository's H100/H200 row (794.5, 80.3%) agrees.
 *  - fixed kernel time: OpenXLA's measured H100 GEMM table (tensorflow/tensorflow
 *    third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h, key "sm_90",
 *    "bf16xbf16->bf16"): its smallest shapes (256x512x256, 512x256x256, 256x256x512) all run at
 *    11.46 TFLOP/s, i.e. 5.9 us whatever their FLOPs, while their roofline time is under 1 us.
 *    With the 1 us per-kernel overhead every kernel pays (cm_compute.c), 5 us is the GEMM
 *    kernel's own floor: prologue, pipeline fill and epilogue of one output tile. No A100 table
 *    is published; the H100 floor stands for it (an assumption, stated where it is used).
 * Shape effects (tile and wave quantization, split-K; the roofline on bytes) are in
 * cm_compute.c. tests/data/validation/gemm_h100_xla.csv holds the table rows the test-costmodel
 * GEMM check compares against. */
#include "costmodel/costmodel.h"

#include <string.h>

typedef struct {
  const char *prefix;      /* device kind names it covers ("a100" covers a100-40gb, a100-80gb) */
  double peak_fraction;    /* MAMF / datasheet peak */
  double min_kernel_s;     /* the shortest a GEMM kernel runs */
} GemmFigures;

static const GemmFigures gemm_table[] = {
  {"a100", 267.9 / 312.0, 5e-6},  /* MAMF A100 SXM; floor assumed from the H100 table */
  {"h100", 792.1 / 989.0, 5e-6},  /* MAMF H100 SXM; floor from XLA's sm_90 table */
  {"h200", 792.1 / 989.0, 5e-6},  /* same GH100 die as H100 */
};

static const GemmFigures *gemm_figures(const DevKind *device) {
  if (!device->name) return NULL;
  for (guint i = 0; i < G_N_ELEMENTS(gemm_table); i++)
    if (g_str_has_prefix(device->name, gemm_table[i].prefix)) return &gemm_table[i];
  return NULL;
}

double cm_gemm_efficiency(const CmParams *params, const DevKind *device) {
  const GemmFigures *f = params->gemm_by_device ? gemm_figures(device) : NULL;
  return f ? f->peak_fraction : params->matmul_efficiency;
}

double cm_gemm_min_kernel_s(const CmParams *params, const DevKind *device) {
  const GemmFigures *f = params->gemm_by_device ? gemm_figures(device) : NULL;
  return f ? f->min_kernel_s : 0.0;
}
