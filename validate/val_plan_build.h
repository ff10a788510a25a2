/* validate/plan_build — `stratsim validate plan`: the expanded task graph of one iteration as a
 * plan, one program per rank (validate/PLAN.md, format version 1).
 *
 * The graph is built with every GPU simulated (no symmetry) and collectives as one task each;
 * a rank's program lists the tasks that occupy its compute or communication stream in the
 * engine's start order (SimTimeline, sim.h). A collective starts at one instant on all its
 * members, and a send/recv on both ends, so filtering one global order per rank gives every
 * group's members the same relative order of its collectives and every (sender, receiver)
 * pair the same order of its transfers (PLAN.md's rules): issuing each program in list order
 * cannot deadlock.
 *
 * What becomes a step:
 *  - forward and recomputed forward of a contraction: one gemm C[batch,m,n] = A[m,k] B[k,n] of
 *    the op's local GEMM shape (cm_gemm_shape); its backward: per input that needs a gradient,
 *    dX = dY W^T as (m, k, n) for the first input and dW = X^T dY as (k, n, m) for the second
 *    (costmodel/cm_backward.h), the B and W tasks of weight delay only their own part;
 *  - any other compute task: an elementwise pass over the op's local output elements and the
 *    bytes the cost model charges (output and inputs; twice that backward);
 *  - the optimizer step: an elementwise pass over the bytes its memory-bound time implies
 *    (params x optimizer_bytes_per_param);
 *  - collectives: their group (members in the task's order; a broadcast's root is its first
 *    member), bytes per rank; a transfer: a send on its first member, a recv on its second.
 * Predicted durations are the tasks' own; a task split into several gemms shares its time
 * among them. Zero-duration markers (joins of cross-mesh deliveries) are not steps: their
 * dependencies pass through them. */
#ifndef STRATSIM_VAL_PLAN_BUILD_H
#define STRATSIM_VAL_PLAN_BUILD_H

#include <glib.h>
#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"

G_BEGIN_DECLS

#define VAL_BUILD_ERROR (val_build_error_quark())
GQuark val_build_error_quark(void);
typedef enum {
  VAL_BUILD_ERROR_INPUT,    /* bad input: specs, options, a strategy that cannot be planned */
  VAL_BUILD_ERROR_FAILED,   /* a file could not be written */
} ValBuildError;

/* Warm-up and timed iterations a plan asks for, and their limits. */
#define VAL_PLAN_DEFAULT_WARMUP 3
#define VAL_PLAN_DEFAULT_ITERATIONS 10
#define VAL_PLAN_MAX_ITERATIONS 100000
/* Most steps in one plan: a plan is for real runs of small graphs, not GPT-3 on 1024 GPUs. */
#define VAL_PLAN_MAX_STEPS 2000000

typedef struct {
  const char *model_spec;    /* the specs as typed: recorded in the plan */
  const char *cluster_spec;
  const char *strategy_spec;
  const char *dtype;         /* nullable: the strategy's own; else overrides it */
  int warmup, iterations;    /* 0/0: the defaults above */
  const char *db_path;       /* nullable: measured kernel times of the cluster's device kind
                                and none of calibration are read from it */
  const char *calibration;   /* nullable: collective calibration name in @db_path */
  gboolean no_profiles;      /* do not read kernel profiles from @db_path (roofline only) */
} ValPlanRequest;

/* What a plan holds, for printing. */
typedef struct {
  int ranks;
  int groups;
  guint64 steps;
  guint64 gemms, elementwise, collectives, transfers;
  double iteration_time_s;   /* the prediction */
  int profiled_kernels;      /* measured kernel times used */
  guint microbench_ops, microbench_collectives;
} ValPlanSummary;

/* Builds the plan of @graph under @strategy on @cluster with @params (borrowed); @request
 * supplies the specs recorded and the iterations. Returns the plan JSON text (caller
 * g_frees), or NULL with @error: VAL_BUILD_ERROR_INPUT for a strategy the simulator refuses,
 * step-expanded collectives, a graph over VAL_PLAN_MAX_STEPS. @summary may be NULL. */
char *val_plan_build(const MdlGraph *graph, const MdlStrategy *strategy, const DevCluster *cluster,
                     const CmParams *params, const ValPlanRequest *request,
                     ValPlanSummary *summary, GError **error);

/* The whole of `stratsim validate plan`: parses the specs (errors in their own domains:
 * DEV_ERROR, MDL_ERROR), reads kernel profiles and the calibration from request->db_path when
 * given (a session, session/ses_session.h, read-only), overrides the dtype and builds the plan.
 * Caller g_frees the text. */
char *val_plan_make(const ValPlanRequest *request, ValPlanSummary *summary, GError **error);

G_END_DECLS

#endif
