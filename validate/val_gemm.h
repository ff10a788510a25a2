/* validate/gemm — the GEMM model against GEMMs measured on a GPU by stratsim-gpubench
 * (validate/runner_gpu/README.md) or published (tests/data/validation/gemm_public.csv,
 * gemm_a100_public.csv): per measured shape, the measured and the predicted kernel time
 * (cm_kernel_time with the shape). Read by `stratsim bench --suite gemm` and
 * tests/test-costmodel.c. */
#ifndef STRATSIM_VAL_GEMM_H
#define STRATSIM_VAL_GEMM_H

#include <glib.h>

#include "costmodel/costmodel.h"

G_BEGIN_DECLS

typedef struct {
  char *shape;          /* gpubench's label, e.g. "fc1-dgrad h=4096 tp=2 tokens=4096" */
  char *group;          /* the label's first word: "fc1-dgrad", "attn-scores", "square";
                           public tables: the device kind */
  char *device;         /* the device kind it is predicted on */
  DevDtype dtype;
  CmGemmShape dims;
  double flops;
  double measured_s, predicted_s;
} ValGemmRow;

/* Reads @dir/@file (gemm.csv: back-to-back launches from the host; gemm_graph.csv: replayed
 * from a CUDA graph, the kernels' own time; columns shape, dtype, batch, m, n, k, time_us) and
 * @dir/env.csv (key device_kind: the stratsim device kind the GPU is) and predicts each row on
 * that kind with @params. NULL with @error (naming file, row, value) for a missing or malformed file, an
 * unknown dtype or device kind. Free with g_ptr_array_unref. */
GPtrArray *val_gemm_rows_load(const char *dir, const char *file, const CmParams *params,
                              char **device_kind, GError **error);

/* Reads a published table at @path (columns device, dtype, batch, m, n, k, measured_tflops;
 * others, such as the citation columns, ignored) and predicts each row on its device kind:
 * measured_s is the row's FLOPs at its TFLOP/s; shape "MxNxK bB", group the device kind. NULL
 * with @error (file, row, value) as val_gemm_rows_load. */
GPtrArray *val_gemm_public_load(const char *path, const CmParams *params, GError **error);

G_END_DECLS

#endif
