/* costmodel/membound — the fraction of HBM bandwidth memory-bound kernels reach, by kind of
 * kernel: streaming elementwise kernels (adds, activations, bias) move their bytes near the
 * copy rate, a dropout also draws its random numbers and writes its mask, and row reductions
 * (layer norm, softmax) pass over each row more than once and leave SMs idle between rows.
 *
 * Sources: tests/data/gpu/h100-sxm-2026-11-24/kernels.csv, PyTorch 2.x bf16 kernels timed back
 * to back with CUDA events on an H100 80GB HBM3 SXM (validate/torch_kernels_bench.py --repeats
 * 7; README.md there), achieved GB/s on each kernel's nominal bytes (inputs read once, output
 * written once, dropout's 1-byte mask) over the preset's 3350 GB/s. Each figure is the median
 * of that kind's rows of at least 64 MiB (smaller ones carry the launch gap):
 *  - stream (add, GELU-tanh): 2625.0, 2754.0, 2922.5, 2989.1, 2992.6, 2995.2, 3010.1 GB/s,
 *    median 2989.1: 0.892 (a 1 GiB device-to-device copy: 3010 GB/s, membw.csv).
 *  - dropout: 2242.2, 2431.3, 2432.6, median 2431.3: 0.726.
 *  - layer norm: 1820.9, 1878.6, 2267.4, median 1878.6: 0.561.
 *  - softmax: 1690.8, 2064.2, median 1877.5: 0.560.
 * H200 has the H100's die (only its HBM differs) and takes the same fractions. For A100 no
 * by-kind measurement set was found (OneFlow's softmax and layer-norm articles on
 * A100-PCIE-40GB give their figures only as plots); A100 takes the H100 fractions, an
 * assumption: the same PyTorch/Apex kernels on HBM, where a fraction of the datasheet rate is
 * what carries over. Single published points agree with the norm figure, used for nothing:
 * PyTorch's LayerNorm of a 2048x2048 tensor on an A100 at about 715 GB/s of its ~1.6 TB/s, 0.46
 * at that small size (ecmwf/WeatherGenerator#1546); FlashInfer's fused RMSNorm + FP8 quantize
 * on H100, 16384 x 4096 bf16 in 94.1 us, 2.14 TB/s on its nominal 201 MB, 0.64
 * (sgl-project/sglang#32994).
 * B200 and GB200 (Blackwell) take the H100 fractions too, the same assumption: no by-kind
 * Blackwell measurement was found. What was found only bounds the stream figure: a B200's
 * device-to-device cudaMemcpy (CUDA samples bandwidthTest, which counts the bytes read and
 * written) at "over 6,000 GB/s" (newmind.ai, "Unlocking Next-Generation AI Performance: Inside
 * NVIDIA's Blackwell B200 Architecture", 2025, 8 x HGX B200 on TogetherAI, CUDA 12.8): at least
 * 0.78 of the preset's 7,700 GB/s, where the H100's 1 GiB copy reached 0.899 (membw.csv).
 * Megatron's fused kernels (scaled masked softmax, bias-GELU, bias-dropout-add, Apex's fused
 * layer norm) were not measured; they are charged as the kind they belong to. The loss
 * (vocab-parallel cross entropy: row max, sum of exponentials, gather) takes the softmax
 * figure. Other kinds (gathers of an embedding, pooling) and devices without measurements keep
 * CmParams.memory_efficiency, as does the optimizer step (measured at 0.78-0.79 of HBM on the
 * same H100, cm_compute.c). */
#include "costmodel/costmodel.h"

typedef struct {
  const char *prefix; /* device kind names it covers */
  double fraction[CM_MEMORY_OTHER];
} MemoryFigures;

#define H100_KERNELS {0.892, 0.726, 0.561, 0.560}

static const MemoryFigures memory_table[] = {
  {"h100", H100_KERNELS},
  {"h200", H100_KERNELS}, /* same GH100 die as H100 */
  {"a100", H100_KERNELS}, /* assumed from H100: no by-kind A100 measurement found */
  {"b200", H100_KERNELS}, /* assumed from H100: no by-kind Blackwell measurement found */
  {"gb200", H100_KERNELS},
};

CmMemoryKind cm_memory_kind(MdlOpKind kind, gboolean dropout) {
  switch (kind) {
  case MDL_OP_ELEMENTWISE: return dropout ? CM_MEMORY_DROPOUT : CM_MEMORY_STREAM;
  case MDL_OP_LAYERNORM: return CM_MEMORY_NORM;
  case MDL_OP_SOFTMAX:
  case MDL_OP_LOSS: return CM_MEMORY_SOFTMAX;
  default: return CM_MEMORY_OTHER;
  }
}

double cm_memory_efficiency(const CmParams *params, const DevKind *device, CmMemoryKind kind) {
  if (!params->memory_by_kind || kind < 0 || kind >= CM_MEMORY_OTHER || !device->name)
    return params->memory_efficiency;
  for (guint i = 0; i < G_N_ELEMENTS(memory_table); i++)
    if (g_str_has_prefix(device->name, memory_table[i].prefix)) return memory_table[i].fraction[kind];
  return params->memory_efficiency;
}
