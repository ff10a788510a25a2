/* validate/pipeline — the rest of an analytical breakdown of a published Megatron run beside
 * val_components.h's GEMM compute and tensor-parallel communication: the pipeline's sends and
 * receives as Megatron-LM ran them (blocking, scatter-gather), its bubble, and the iteration
 * they add up to on GPU 0. `stratsim bench --suite megatron` prints it per Korthikanti et al.
 * 2022 Table 5 row; tests/test-components.c checks it. Formulas and sources: val_pipeline.c. */
#ifndef STRATSIM_VAL_PIPELINE_H
#define STRATSIM_VAL_PIPELINE_H

#include <glib.h>
#include "validate/val_components.h"

G_BEGIN_DECLS

typedef struct {
  double bubble_fraction;   /* (p - 1) / (v m) */
  double p2p_ref_s;         /* GPU 0's pipeline exchanges, all exposed */
  double hidden_ref_s;      /* of val_components' comm_ref, the part the backward's GEMMs hide */
  double other_s;           /* memory-bound kernels and the optimizer step: the simulator's
                               (no independent reference; the same on both sides) */
  double busy_ref_s;        /* gemm_ref + comm_ref - hidden_ref + p2p_ref + other */
  double bubble_ref_s;      /* bubble_fraction x busy_ref */
  double e2e_ref_s;         /* busy_ref + bubble_ref: the analytical iteration */
} ValPipelineRef;

/* The analytical pipeline terms and iteration of @row from its GEMM and tensor-parallel
 * references and the simulator's other compute in @components (val_megatron_components),
 * collectives timed on @curve (val_allreduce_curve_load). */
void val_megatron_pipeline_reference(const ValMegatronRow *row, const GArray *curve,
                                     const ValComponents *components, ValPipelineRef *out);

G_END_DECLS

#endif
