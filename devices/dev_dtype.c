/* devices/dtype — the element types a device computes in: names and storage sizes. TF32 is a
 * tensor-core math mode on fp32 data, so it is stored as 4 bytes. FP8 is likewise a GEMM mode
 * on bf16 data: Transformer Engine's FP8 recipe (docs, "Using FP8 with Transformer Engine":
 * fp8 GEMM inputs with higher-precision accumulation and output, every other op in the
 * higher precision) keeps weights, activations and gradients in bf16 and casts the GEMM
 * operands to E4M3/E5M2 around each GEMM, so it is stored as 2 bytes. */
#include "devices/dev_cluster.h"

static const struct {
  const char *name;
  guint bytes;
} dtypes[DEV_DTYPE_COUNT] = {
    [DEV_DTYPE_FP32] = {"fp32", 4},
    [DEV_DTYPE_TF32] = {"tf32", 4},
    [DEV_DTYPE_FP16] = {"fp16", 2},
    [DEV_DTYPE_BF16] = {"bf16", 2},
    [DEV_DTYPE_FP8] = {"fp8", 2},
};

const char *dev_dtype_name(DevDtype dtype) {
  g_return_val_if_fail((guint)dtype < DEV_DTYPE_COUNT, "?");
  return dtypes[dtype].name;
}

gboolean dev_dtype_parse(const char *text, DevDtype *out) {
  g_return_val_if_fail(out != NULL, FALSE);
  if (!text) return FALSE;
  for (int d = 0; d < DEV_DTYPE_COUNT; d++) {
    if (g_ascii_strcasecmp(text, dtypes[d].name) == 0) {
      *out = (DevDtype)d;
      return TRUE;
    }
  }
  return FALSE;
}

guint dev_dtype_bytes(DevDtype dtype) {
  g_return_val_if_fail((guint)dtype < DEV_DTYPE_COUNT, 0);
  return dtypes[dtype].bytes;
}
