/* costmodel/framework — the host side of a training framework: how many kernels each op
 * launches, forward and backward, and how long the host spends on each launch (its Python,
 * dispatcher, autograd and cudaLaunchKernel time). The simulator's host stream (sim/sim.h,
 * SIM_TASK_HOST) charges these before each compute task may start. Figures and their sources:
 * costmodel/cm_framework.c and costmodel/FRAMEWORKS.md. Pure data: no state. */
#ifndef STRATSIM_CM_FRAMEWORK_H
#define STRATSIM_CM_FRAMEWORK_H

#include <glib.h>
#include "model/mdl_graph.h"
#include "devices/dev_cluster.h"
#include "model/mdl_strategy.h"

G_BEGIN_DECLS

typedef struct {
  guint8 forward;    /* kernels of the op's forward (and of its recomputation) */
  guint8 backward;   /* kernels of its whole backward */
  guint8 weight;     /* of which weight-gradient kernels (the W task under weight delay) */
} CmOpKernels;

/* The memory-bound ops whose kernels a framework splits or fuses in its own way. */
typedef enum {
  CM_TRAFFIC_LAYERNORM,
  CM_TRAFFIC_SOFTMAX,          /* softmax with its attention dropout (op->dropout) */
  CM_TRAFFIC_DROPOUT_ADD,      /* elementwise, dropout on a residual add (op->dropout) */
  CM_TRAFFIC_ACTIVATION,       /* elementwise, one input, no dropout (bias + GeLU) */
  CM_TRAFFIC_LOSS,             /* the cross-entropy loss, per logit (input) element */
  CM_TRAFFIC_COUNT
} CmTrafficClass;

/* What the kernels of one memory-bound op move, per output element (per input element for the
 * loss: the logits): passes over activations of that size (each a read or a write of one
 * element), passes over fp32 copies, and the dropout keep mask's byte. All zero: not listed
 * (the roofline's operand bytes apply). */
typedef struct {
  guint8 forward;    /* activation passes of its forward kernels */
  guint8 backward;   /* of its whole backward */
  guint8 mask;       /* 1: a keep mask written forward and read backward */
  guint8 forward_fp32, backward_fp32; /* passes over fp32 copies (4 bytes an element) */
} CmOpTraffic;

typedef struct {
  MdlFramework kind;
  double forward_launch_s;   /* host time per forward kernel */
  double backward_launch_s;  /* host time per backward kernel (autograd engine) */
  int queue_depth;           /* kernels the host may enqueue ahead of the GPU */
  gboolean grad_norm_sync;   /* the optimizer step reads the gradient norm on the host (a
                                .item(): Megatron's clip_grad_norm_fp32) */
  CmOpKernels kernels[MDL_OP_KIND_COUNT];
  CmOpKernels class_kernels[CM_TRAFFIC_COUNT]; /* a memory-bound class's own counts, where
                                                  listed (else its op kind's) */
  CmOpTraffic traffic[CM_TRAFFIC_COUNT];
} CmFramework;

/* The profile of @kind, or NULL for MDL_FRAMEWORK_NONE (no host stream). Static data. */
const CmFramework *cm_framework_get(MdlFramework kind);

/* Which of an op's compute tasks is launched. */
typedef enum {
  CM_HOST_FORWARD,          /* its forward, or its recomputed forward */
  CM_HOST_BACKWARD,         /* its whole backward (no weight delay) */
  CM_HOST_BACKWARD_INPUT,   /* under weight delay: the B task (backward less its W kernels) */
  CM_HOST_BACKWARD_WEIGHT,  /* under weight delay: the W task */
} CmHostPhase;
/* The kernels @op launches in @phase. */
int cm_framework_kernels(const CmFramework *framework, const MdlOp *op, CmHostPhase phase);
/* Their host time in seconds. */
double cm_framework_host_time(const CmFramework *framework, const MdlOp *op, CmHostPhase phase);

/* Bytes the kernels of @op move under @framework when @op is a memory-bound op the profile
 * lists (a layernorm, a softmax with dropout, a dropout-add, a one-input activation as wide as
 * its output: @in_elems, its inputs' elements, equal to @out_elems): @forward and @backward
 * (its whole backward) for @out_elems output elements (@in_elems for a loss) of @elem_bytes
 * each. FALSE, leaving both
 * untouched, for any other op (a gated activation reading 2f to write f, ...) or a NULL
 * @framework: the caller keeps the roofline's operand bytes. Figures and sources:
 * cm_framework.c. */
gboolean cm_framework_traffic(const CmFramework *framework, const MdlOp *op, double in_elems,
                              double out_elems, double elem_bytes, double *forward,
                              double *backward);

/* The host synchronizations inside @framework's optimizer step for a model of @dtype, in
 * order (at most CM_MAX_STEP_SYNCS): for each, the HBM bytes per parameter the step's kernels
 * move before it (since the previous one) are stored in @bytes_before; the step's remaining
 * bytes (of cm_adam_bytes_per_param) run after the last. At each, a scalar the GPU computed
 * (fp16: the found-inf flag; then the gradient norm) is all-reduced over the model-parallel
 * ranks and copied to the host, which waits for it before it launches the step's next kernels.
 * Returns their count: 0 for a NULL @framework. Sources: cm_framework.c. */
#define CM_MAX_STEP_SYNCS 2
int cm_framework_step_syncs(const CmFramework *framework, DevDtype dtype, double *bytes_before);
/* Host seconds from the GPU finishing the work a synchronization waits for to the host's
 * next launch (a measured launch + cudaStreamSynchronize round trip). Source: cm_framework.c. */
double cm_framework_sync_s(const CmFramework *framework);

/* Bytes per parameter of the gradient buffer @framework keeps for weights of @dtype: Megatron-LM
 * (and its CUDA-graph replay) accumulates bf16 models' gradients in an fp32 main_grad buffer,
 * 4 bytes; every other case keeps gradients in the weights' dtype. Source: cm_framework.c. */
double cm_framework_grad_bytes(MdlFramework kind, DevDtype dtype);

G_END_DECLS

#endif
