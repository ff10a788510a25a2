/* costmodel/gemm — what a GEMM kernel reaches on a device kind: the fraction of the datasheet
 * tensor peak large, well-shaped GEMMs attain (by dtype where measured), what a dimension that
 * is not 16-byte aligned costs, and the fixed duration of any GEMM kernel.
 *
 * Sources (each row of the table below):
 *  - peak fraction, A100: published by-shape measurements (tests/data/validation/
 *    gemm_a100_public.csv, each row's source, operands and timing in its columns): the median
 *    over single GEMMs of measured / (312 TFLOP/s x the model's quantization), the time of the
 *    exposed epilogue (below) taken off the measured time, 0.804 (250.8 TFLOP/s) over 6 GEMMs:
 *    EleutherAI's cookbook sample of a GPT layer's GEMMs (h 4096, 8192 tokens: qkv 0.805, proj
 *    0.782, fc1 0.803, fc2 0.820, logits 0.823; fp16 on torch.randn, the slowest of 200 runs)
 *    and CUTLASS's profiler example (3456x4096x8192, 0.767, uniform random, the mean). Neither
 *    names its GPU; the rates place them on an A100 (the CSV says why). For every dtype (bf16
 *    and fp16 share the A100's tensor rate). Without the epilogue term the same median is 0.775.
 *    Bekman's MAMF (267.9 of 312, 0.859) is a maximum: the fastest of 100 runs of the fastest
 *    shape of a scan.
 *  - epilogue, A100: Ampere's GEMM kernels (cuBLAS and CUTLASS 2.x sm80 multistage kernels)
 *    run each threadblock's main loop over K, then its epilogue writes the output tile; the
 *    large tiles (256x128: 128 fp32 accumulators per thread of 256) fill most of the register
 *    file, one threadblock per SM, so no other tile's math hides the writes (CUTLASS media/docs/efficient_gemm.md, "Hierarchical
 *    Structure" and "Epilogue"). The output's bytes are charged after the rest. Hopper's
 *    warp-specialized persistent kernels overlap one tile's epilogue with another's math
 *    ("ping-pong": L. Wright, A. Hoque, "Deep Dive on CUTLASS Ping-Pong GEMM Kernel", PyTorch
 *    blog, 2024), and our H100 measurements agree: the attention-score GEMMs (K = 64-128, an
 *    s x s output per head) follow the plain byte roofline (gemm.csv attn-scores, 5% mean
 *    error) where a serial epilogue would be 14-20% slow. Blackwell's tcgen05 kernels are
 *    warp-specialized too (the accumulator in tensor memory, double-buffered) and are taken as
 *    overlapped; open: OpenXLA's sm_100 entries with K = 256-512 and a 2048-4096 square output
 *    (gemm_blackwell_public.csv's source, not copied) run 25-100% slower than that predicts and
 *    within -14..+22% of a serial epilogue, while Azure's large GEMMs on GB200 fit the
 *    overlapped figures better (2.5% mean against 5.6% with a serial epilogue and the figure
 *    re-derived, 0.677). XLA may run its own (Triton) GEMMs there. The effect is a shallow-reduction
 *    one: the output's bytes per FLOP are 1/K, so it is 0-4% on the layer GEMMs above and
 *    1.5x on EleutherAI's attention scores (64 x 2048 x 2048, K = 256: 0.42 of peak measured,
 *    0.77 predicted before, 0.50 now); held out, their two batched 1024 x 1024 GEMMs (K 1024 and
 *    2048, bmm.out) are within 5%.
 *  - peak fraction and alignment, H100 and H200: measured by stratsim (below the struct). H200
 *    has the H100's GH100 die and clocks (only its HBM differs), so it takes the H100 figures.
 *  - peak fraction, B200 and GB200 (Blackwell, sm_100): published measurements, BLACKWELL_*
 *    below the struct.
 *  - fixed kernel time: a 128^3 bf16 GEMM replayed from a CUDA graph on an H100 takes 2.18 us
 *    per kernel (tests/data/gpu/h100-sxm-2026-11-24/gemm_graph.csv), of which the 1 us
 *    per-kernel overhead every kernel pays (cm_compute.c) leaves 1.2 us: the GEMM kernel's own
 *    prologue, pipeline fill and epilogue. OpenXLA's H100 table (matmul_interpolator_data.h,
 *    sm_90) times its smallest GEMMs at 5.9 us, a figure that carries a launch (a host-launched
 *    cuBLAS call costs 11 us of host time there, launch.csv). No A100 floor is measured; the
 *    H100 figure stands for it (an assumption).
 * Shape effects (tile and wave quantization, split-K; the roofline on bytes) are in
 * cm_compute.c. tests/data/validation/gemm_public.csv holds the table rows the test-costmodel
 * GEMM check compares against. */
#include "costmodel/costmodel.h"

#include <math.h>
#include <string.h>

typedef struct {
  const char *prefix;      /* device kind names it covers ("a100" covers a100-40gb, a100-80gb) */
  double peak_fraction[DEV_DTYPE_COUNT]; /* achieved / datasheet peak by dtype; 0: the bf16 one */
  double min_kernel_s;     /* the shortest a GEMM kernel runs */
  /* Fraction of the aligned rate when the worst-aligned of m, n, k spans a multiple of only 4
   * bytes, or only 2 bytes (cm_gemm_alignment); 0: not measured for this kind, no penalty. */
  double align_4b, align_2b;
  /* TRUE: the library's kernels write each output tile after their main loop, not under other
   * tiles' math (cm_gemm_exposed_bytes). */
  gboolean epilogue_serial;
} GemmFigures;

/* H100 (and H200, the same GH100 die and clocks) figures measured with stratsim-gpubench on an
 * H100 80GB HBM3 SXM (700 W, CUDA 13.0, cuBLAS 13.1), operands random (rg_fill.c: zeros run
 * about 18% faster), 2026-11-24: tests/data/gpu/h100-sxm-2026-11-24/ (README.md there).
 *  - peak fraction by dtype: the median TFLOP/s over that folder's GEMMs of at least 100 GFLOP
 *    with every dimension a multiple of 16 bytes (Megatron GPT layer GEMMs over hidden 1024-12288,
 *    tp 1-8, 1024-8192 tokens, output layers, squares), over the preset's dense peak (989.5
 *    bf16/fp16, 494.5 tf32, 1979 fp8): bf16 0.687 (651 GEMMs), fp16 0.664 (226), tf32 0.668
 *    (223), fp8 0.601 (649). Bekman's MAMF for H100 (792.1 of 989, 0.801) is the maximum over a
 *    shape scan; the largest bf16 figure here is 0.744.
 *  - alignment: output-layer GEMMs over a 50257-token vocabulary (an odd dimension: 2-byte
 *    alignment in bf16) ran at a median 0.206 of the same GEMM over 51200 tokens (9 pairs,
 *    0.155-0.233); over 6282 (50257 / 8 rounded down, 4-byte alignment) at 0.370 of 6400 (9
 *    pairs, 0.352-0.422). cuBLAS's fast Hopper kernels need 16-byte aligned leading dimensions
 *    (NVIDIA Matrix Multiplication Background User's Guide, "Tensor Core Requirements"); 8-byte
 *    alignment was not measured and is charged as 4-byte. */
#define H100_MEASURED {0, 0.668, 0.664, 0.687, 0.601}

/* Blackwell (B200 at 1,000 W in HGX/DGX B200; GB200, the same die pair at up to 1,200 W), from
 * published measurements (tests/data/validation/gemm_blackwell_public.csv, gemm_mamf_public.csv);
 * no stratsim measurement exists. Derived as the A100 figure was: published GEMMs taken as
 * published, the median of typical large ones, not a maximum.
 *  - B200 bf16 0.637: the median over the 15 GEMMs of at least 128 GFLOP (b x m x n x k >= 2^36:
 *    1-4 x 1024-4096 cubes and slabs) of OpenXLA's sm_100 GEMM table of measured / (2250 TFLOP/s
 *    x the model's quantization): 1345-1670 TFLOP/s, fractions 0.602-0.744 (the grid stops at
 *    4096). Random operands, the median CUPTI kernel time of 5 runs
 *    (xla/tools/matmul_perf_table_gen.cc). The table does not say which sm_100 part it ran on;
 *    it is taken as the HGX B200.
 *  - fp8 0.627 (B200): the bf16 figure times B200's MAMF fp8 / bf16 efficiency (3432.5 / 4500 over
 *    1745.0 / 2250 = 0.984; S. Bekman's ml-engineering MAMF table, a maximum over a shape scan).
 *    XLA's fp8 columns are not used: on sm_90 they exceed the H100's dense fp8 peak (2593 > 1979
 *    TFLOP/s at 4 x 4096^3), so they time something other than the whole GEMM. On H100 the same
 *    MAMF ratio (1402.6 / 1979 over 794.5 / 989 = 0.883) predicts our measured fp8 / bf16 (0.601
 *    / 0.687 = 0.875) within 1%.
 *  - GB200: the B200 figures times GB200 / B200 MAMF efficiency, bf16 (1822.0 / 2500) / (1745.0 /
 *    2250) = 0.940, fp8 (3615.6 / 5000) / (3432.5 / 4500) = 0.948: bf16 0.599, fp8 0.594. GB200's
 *    datasheet peak is 11% above B200's, its measured maximum only 4.4% (fp8 5.3%). Held out:
 *    Azure's cuBLASLt FP8 GEMMs on a GB200 VM (random operands, 4096^3 to 32768^3 and
 *    6144x12288x12288: 2826-2907 TFLOP/s) are within 2.5% of the model on average, 5.1% at most.
 *  - How far to trust it: on H100 the published harnesses read faster than ours. The same XLA
 *    table's 15 sm_90 entries have a median of 0.804 of peak x shape where our random-operand
 *    median is 0.687 (0.854x); Azure's H100 FP8 GEMMs 0.685 where ours is 0.601. If XLA's bias
 *    carries over to sm_100, B200 is 0.544 (15% below 0.637); Bekman's B200 MAMF scaled by our
 *    H100 typical / MAMF (0.687 / 0.803) gives 0.663 instead. So Blackwell GEMMs carry a
 *    -15% .. +4% uncertainty that H100's do not.
 *  - fp16 takes the bf16 figure (the same tensor rate), tf32 too (unmeasured); the kernel floor
 *    is the H100's (unmeasured on Blackwell); no alignment penalty (unmeasured). */
#define BLACKWELL_B200 {[DEV_DTYPE_BF16] = 0.637, [DEV_DTYPE_FP8] = 0.627}
#define BLACKWELL_GB200 {[DEV_DTYPE_BF16] = 0.599, [DEV_DTYPE_FP8] = 0.594}

static const GemmFigures gemm_table[] = {
  /* published A100 GEMMs by shape (gemm_a100_public.csv) for every dtype; floor assumed from
   * the H100 measurement */
  {"a100", {[DEV_DTYPE_BF16] = 0.804}, 1.2e-6, 0, 0, TRUE},
  {"h100", H100_MEASURED, 1.2e-6, 0.370, 0.206, FALSE}, /* gpubench on H100 SXM */
  {"h200", H100_MEASURED, 1.2e-6, 0.370, 0.206, FALSE}, /* same GH100 die as H100 */
  {"b200", BLACKWELL_B200, 1.2e-6, 0, 0, FALSE},        /* OpenXLA sm_100 table, MAMF ratios */
  {"gb200", BLACKWELL_GB200, 1.2e-6, 0, 0, FALSE},      /* B200's, by the MAMF ratio */
};

static const GemmFigures *gemm_figures(const DevKind *device) {
  if (!device->name) return NULL;
  for (guint i = 0; i < G_N_ELEMENTS(gemm_table); i++)
    if (g_str_has_prefix(device->name, gemm_table[i].prefix)) return &gemm_table[i];
  return NULL;
}

double cm_gemm_efficiency(const CmParams *params, const DevKind *device, DevDtype dtype) {
  const GemmFigures *f = params->gemm_by_device ? gemm_figures(device) : NULL;
  if (!f) return params->matmul_efficiency;
  double by_dtype = dtype >= 0 && dtype < DEV_DTYPE_COUNT ? f->peak_fraction[dtype] : 0;
  return by_dtype > 0 ? by_dtype : f->peak_fraction[DEV_DTYPE_BF16];
}

/* The largest power of two (at most 16) dividing @elements x @bytes. */
static double aligned_bytes(double elements, double bytes) {
  double span = elements * bytes, a = 16;
  while (a > 1 && fmod(span, a) != 0) a /= 2;
  return a;
}

double cm_gemm_alignment(const CmParams *params, const DevKind *device, DevDtype dtype,
                         const CmGemmShape *shape) {
  const GemmFigures *f = params->gemm_by_device ? gemm_figures(device) : NULL;
  /* FP8: Transformer Engine only runs FP8 GEMMs on tensors whose dimensions are multiples of 16
   * (transformer_engine/pytorch/utils.py, assert_dim_for_fp8_exec), so they are aligned by
   * construction; on this H100, cuBLASLt's FP8 GEMMs over 50257 columns (not a leading
   * dimension in its TN layout) ran at full rate. */
  if (!f || f->align_2b <= 0 || !shape || dtype == DEV_DTYPE_FP8) return 1.0;
  double bytes = dev_dtype_bytes(dtype); /* tf32 moves fp32 */
  double a = MIN(aligned_bytes(shape->m, bytes),
                 MIN(aligned_bytes(shape->n, bytes), aligned_bytes(shape->k, bytes)));
  return a >= 16 ? 1.0 : a >= 4 ? f->align_4b : f->align_2b;
}

double cm_gemm_exposed_bytes(const CmParams *params, const DevKind *device, DevDtype dtype,
                             const CmGemmShape *shape, double bytes) {
  const GemmFigures *f = params->gemm_by_device ? gemm_figures(device) : NULL;
  if (!f || !f->epilogue_serial || !shape) return 0.0;
  double out = shape->m * shape->n * shape->batch * (dtype == DEV_DTYPE_FP8 ? 2 : dev_dtype_bytes(dtype));
  return MIN(out, MAX(bytes, 0.0));
}

double cm_gemm_min_kernel_s(const CmParams *params, const DevKind *device) {
  const GemmFigures *f = params->gemm_by_device ? gemm_figures(device) : NULL;
  return f ? f->min_kernel_s : 0.0;
}
