/* validate/host — the host stream per layer against a Megatron-LM layer stack run by PyTorch on
 * a GPU (tests/data/gpu/h100-sxm-2026-11-24/torch_layers.csv, validate/torch_layer_bench.py:
 * costmodel/dispatch_bench.py's MegatronBlock at tp=1 on one H100, bf16): per configuration
 * and phase, the host time, the wall time and the GPU time per layer, measured and simulated.
 * Issue 14, items 4 and 5. `stratsim bench --suite host` prints it; tests/test-host.c checks
 * it. The profile being checked was measured apart (per-op dispatch on the same node,
 * costmodel/cm_framework.c), never fitted to these rows. Definitions: val_host.c. */
#ifndef STRATSIM_VAL_HOST_H
#define STRATSIM_VAL_HOST_H

#include <glib.h>
#include "model/mdl_strategy.h"

G_BEGIN_DECLS

/* One row of torch_layers.csv, per layer (the file's figures divided by its layers). */
typedef struct {
  int layers, hidden, heads, seq, micro_batch;
  gboolean backward;            /* the row's phase: forward or backward */
  double host_s;                /* host time to return from the phase (no synchronization) */
  double wall_s;                /* the phase with a synchronization at its end */
  double gpu_s;                 /* the phase's kernels (profiler) */
  double kernels;               /* kernels the profiler counted */
} ValHostRow;

/* The rows of @path (a torch_layers.csv: '#' lines are comments; columns layers (>= 3), hidden,
 * heads, seq, micro_batch, phase, host_ms, wall_ms, gpu_ms, kernels_per_layer), GPtrArray of
 * ValHostRow (owned: unref frees), or NULL with @error naming the file, row and field. */
GPtrArray *val_host_rows_load(const char *path, GError **error);

typedef struct {
  double host_s;                /* the framework's host time for one layer's launches */
  double wall_s;                /* the simulated steady-state period of one layer */
  double gpu_s;                 /* one layer's compute tasks */
  int kernels;                  /* the kernels the framework launches for one layer */
} ValHostTimes;

/* Simulates @row's layer stack (a GPT of the row's shape with a 1024-token vocabulary, so that
 * the embedding and the output layer the measurement did not run stay small; one microbatch on
 * one H100 SXM: tp = pp = dp = 1) under @framework and measures the middle layer k =
 * layers / 2 on the compute stream: host, the framework's time for the kernels of k's ops in
 * the row's phase (cm_framework_host_time; 0 and 0 kernels for framework none); gpu, the sum
 * of k's compute tasks of that phase; wall, the period from the first start of layer k's
 * tasks of the phase to layer k+1's (forward) or k-1's (backward). FALSE with @error when the
 * model or strategy is refused. */
gboolean val_host_times(const ValHostRow *row, MdlFramework framework, ValHostTimes *out,
                        GError **error);

/* Kendall's tau-a of @predicted (per row of @rows, a wall time per layer) against the rows'
 * measured wall times, per unit of work, over the pairs of rows of the same layer shape
 * (layers, hidden) and phase: @per_token FALSE, rows of the same sequence, time per sample
 * (the micro-batch sizes one would choose between); TRUE, any two (sequence, micro-batch), time
 * per token. (concordant - discordant) / pairs, a tie on either side counting as neither;
 * @pairs gets the pair count (0: returns 0). */
double val_host_ranking_tau(const GPtrArray *rows, const double *predicted, gboolean per_token,
                            int *pairs);

G_END_DECLS

#endif
