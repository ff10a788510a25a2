/* validate/components — each cost component of a published Megatron run against an analytical
 * breakdown that does not use the simulator (issue 14, item 5): GEMM compute from Korthikanti
 * et al. 2022's FLOP counts at the measured maximum GEMM rate, tensor-parallel communication
 * from the collectives their section 4 counts, timed on a measured nccl-tests all-reduce curve;
 * and the simulator's end-to-end time against the measured iteration. `stratsim bench --suite
 * megatron` prints it per row; tests/test-components.c checks it. Formulas and sources:
 * val_components.c. */
#ifndef STRATSIM_VAL_COMPONENTS_H
#define STRATSIM_VAL_COMPONENTS_H

#include <glib.h>
#include "model/mdl_strategy.h"
#include "session/ses_session.h"
#include "sim/sim.h"

G_BEGIN_DECLS

/* The GEMM reference's rate (val_components.c): a typical large A100 GEMM, 0.775 of the 312
 * TFLOP/s peak, the median of the published by-shape measurements in
 * tests/data/validation/gemm_a100_public.csv (the same figure as costmodel/cm_gemm.c). */
#define VAL_GEMM_A100_FLOPS (0.775 * 312e12)

/* One published run (a row of tests/data/validation/megatron_public.csv): a GPT trained with
 * Megatron-LM. Korthikanti et al. 2022 Table 5 rows measure the iteration (data parallelism
 * 1); Narayanan et al. 2021 Table 1 rows the achieved TFLOP/s per GPU. */
typedef struct {
  char *model;              /* "Megatron 22B" */
  int layers, hidden, heads, seq, vocab, global_batch, micro_batch, tp, pp, dp, gpus, interleaved;
  MdlRecompute recompute;
  gboolean sequence_parallel;
  gboolean fp16;            /* the run trained in fp16 (Narayanan's rows, per their source
                               column); else bf16 */
  gboolean grad_reduce_after_backward; /* the run's code all-reduced the gradients after the
                                          whole backward (Narayanan's rows: Megatron-LM commit
                                          6985e58, per their source column): simulated with
                                          overlap_grad_reduce=0 */
  double measured_s;        /* iteration seconds (iteration_seconds rows; 0 else) */
  double measured_tflops;   /* TFLOP/s per GPU (tflops_per_gpu rows; 0 else) */
} ValMegatronRow;

/* The rows of @path whose measured_metric is @metric ("iteration_seconds" or
 * "tflops_per_gpu"; a missing vocab is 51200, the vocabulary Narayanan et al. and Calculon
 * use). GPtrArray of ValMegatronRow (owned: unref frees); NULL with @error naming the file and
 * the field. */
GPtrArray *val_megatron_rows_load(const char *path, const char *metric, GError **error);

/* Model FLOPs of one iteration of @row as Narayanan et al. 2021 count them to report TFLOP/s
 * (their Eq. 3, with activation recomputation: 96 B s l h^2 (1 + s/(6h) + V/(16 l h))). */
double val_megatron_flops(const ValMegatronRow *row);

/* The spec strings of a GPT of @layers x @hidden (@heads heads, sequence @seq, vocabulary
 * @vocab, global batch @batch) and of the DGX A100 nodes holding @gpus GPUs. Caller frees. */
char *val_gpt_spec(int layers, int hidden, int heads, int seq, int vocab, int batch);
char *val_dgx_a100_spec(int gpus);

/* Simulates @model on @cluster under @strategy (spec strings) in a session of their own; the
 * run, its session in @session (free the run, then the session), or NULL with @error. */
SimRun *val_simulate_specs(const char *model, const char *cluster, const char *strategy,
                           SesSession **session, GError **error);

/* A measured all-reduce curve: the rows of an nccl_public.csv-format file for @ranks ranks whose
 * gpu_system contains @system ("A100"), as (size_bytes, time_s) pairs sorted by size; where
 * several such curves measure one size, the median of their times there (the reference rule
 * of validate/KORTHIKANTI.md). */
GArray *val_allreduce_curve_load(const char *path, const char *system, int ranks, GError **error);
/* Time of an all-reduce of @bytes on @curve: log-log interpolation between the two measured
 * neighbours, proportional to size beyond either end. */
double val_curve_time(const GArray *curve, double bytes);

typedef struct {
  double measured_s, predicted_s;     /* iteration: the paper's (0 for a TFLOP/s row), the
                                         simulator's */
  double measured_tflops, predicted_tflops; /* per GPU: val_megatron_flops over the iteration
                                               and the GPUs */
  double gemm_ref_s, gemm_sim_s;      /* GPU 0's GEMM compute per iteration */
  double other_sim_s;                 /* GPU 0's other compute (memory-bound kernels) */
  double comm_ref_s, comm_sim_s;      /* GPU 0's tensor-parallel collectives per iteration */
  double comm_model_s;                /* the analytical count timed with the simulator's own
                                         collective cost (checks counting and sizes) */
  double host_bound_s;                /* the simulator's host-bound time */
  double bubble_sim_s;                /* the simulator's bubble (mean per GPU) */
  double exposed_sim_s;               /* the simulator's exposed communication (mean per GPU) */
  double p2p_sim_s;                   /* GPU 0's pipeline sends and receives, busy time */
  double optimizer_sim_s;             /* GPU 0's optimizer step */
} ValComponents;

/* Simulates @row on DGX A100 nodes (dgx-a100 preset) and fills @out (references for GPU 0 of
 * its first data-parallel replica); FALSE with @error when the strategy is invalid. */
gboolean val_megatron_components(const ValMegatronRow *row, const GArray *curve,
                                 ValComponents *out, GError **error);

G_END_DECLS

#endif
