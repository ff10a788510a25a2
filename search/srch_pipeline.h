/* search/pipeline — pipeline stage cuts by dynamic programming (PipeDream, Narayanan et al.
 * 2019, section 3.1; Alpa, Zheng et al. 2022, section 5.2: the inter-operator pass).
 *
 * The graph is a sequence of units: runs of consecutive ops (graph order, which is
 * topological) with the same `layer` (a transformer layer, a conv block; the embedding before
 * the first layer, the head after the last). A cut of S stages gives each stage a non-empty
 * run of consecutive units; stage s runs on its own device mesh (the s-th block of the
 * cluster's devices, every stage the same mesh shape and the same per-op splits), so data only
 * flows to the same or later stages.
 *
 * Costs, in simulated picoseconds so that sums are exact (CONVENTIONS.md):
 *  - compute[u]: one device's forward plus backward (and recomputed forward) of unit u for one
 *    microbatch, the durations the simulator's builder gives the one-stage strategy's tasks
 *    (sb_op_durations through sim_bounder_op_compute; an op's kernel times depend only on its
 *    own config, the microbatch count and the dtype, not on its stage);
 *  - transfer[s][u]: the send/recv, forward activations and backward gradients, of every
 *    tensor produced before unit u and read at or after it, from stage s's device to stage
 *    s+1's (cm_group_collective_time on that pair's link class: inside a host or across).
 * Stage s over units [i, j) costs t_s = sum compute[i..j) + transfer[s-1][i] (s > 0) +
 * transfer[s][j] (s < S-1), and a cut the 1F1B iteration estimate
 *     T = (m - 1) max_s t_s + sum_s t_s      (m microbatches)
 * (the pipeline fills and drains once, and the slowest stage paces the steady state).
 * srch_pipeline_dp returns a cut of least T (Alpa's enumeration of the bottleneck): for a
 * candidate bottleneck B (a stage cost that can occur, from the least bottleneck of compute
 * alone, srch_pipeline_least_bottleneck, which no cut's maximum is below, up to where
 * (m - 1) B plus the unconstrained least sum reaches the best T in hand) a DP finds
 * the least sum with every t_s <= B (F[s][j] = min_i F[s-1][i] + t_s(i, j)). Candidates are
 * taken in descending order, jumping below the maximum of each cut found (the same cut wins
 * every bound in between), so one DP runs per (maximum, sum) trade-off; the optimum's maximum
 * is never jumped over (the proof is at the loop). The DP only picks; every cut it picks is
 * then simulated in full (search: the dp algorithm). */
#ifndef STRATSIM_SRCH_PIPELINE_H
#define STRATSIM_SRCH_PIPELINE_H

#include <glib.h>
#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"
#include "sim/sim.h"
#include "sim/sim_bound.h"

G_BEGIN_DECLS

/* Units beyond this are merged in runs of equal counts (a graph of thousands of unlayered ops):
 * the DP is O(S units^2) per candidate bottleneck. */
#define SRCH_PIPELINE_MAX_UNITS 512

typedef struct {
  int nunits;
  int *first_op;          /* nunits + 1 entries: unit u is ops first_op[u] .. first_op[u+1]-1 */
  int *unit_of_op;        /* per op */
  int nstages;            /* as measured for (0 before srch_pipeline_measure) */
  int microbatches;
  SimTime *compute;       /* per unit */
  SimTime *gap;           /* per unit (NULL: none known): the collectives between its own ops
                             that its device's chain waits for, one microbatch (sim_bound.h's
                             gaps, from the one-stage strategy's first device; 0 throughout
                             where the stages' meshes do not sit alike on the hosts) */
  SimTime *lead;          /* per unit (NULL: none known): what a stage starting there waits
                             for at least beyond its own units' work, fill and drain
                             (srch_pipeline_least_span; 0 at unit 0) */
  SimTime **transfer;     /* [nstages - 1][nunits + 1]; entries 0 and nunits are 0 */
} SrchPipeline;

/* The units of @graph (borrowed: must outlive the result). Free with srch_pipeline_free. */
SrchPipeline *srch_pipeline_new(const MdlGraph *graph);
void srch_pipeline_free(SrchPipeline *pipeline);

/* Fills the costs for @stages stages of the one-stage strategy @one_stage (one mesh: the
 * shape and splits every stage gets; stage s on devices s * mesh size + its devices):
 * compute from the builder's task durations for @one_stage (no task graph is built; they
 * equal the sums over the task graph sim_build_with_options makes), transfers from its
 * output layouts. Errors: MDL_ERROR_STRATEGY when @one_stage has more than one mesh or the
 * stages exceed the units or the cluster; mdl_strategy_validate's. */
gboolean srch_pipeline_measure(SrchPipeline *pipeline, const MdlGraph *graph,
                               const MdlStrategy *one_stage, int stages,
                               const DevCluster *cluster, const CmParams *params,
                               const SimOptions *options, GError **error);

/* The same through *@reuse: a bounder made with @options for an earlier call (pointed at
 * @one by sim_bounder_set_strategy: its memo of collective times carries over), or, when
 * NULL, one made here and left there; the caller frees it. The costs are the same either way
 * (sim_bound.h). */
gboolean srch_pipeline_measure_with(SrchPipeline *pipeline, SimBounder **reuse, const MdlGraph *graph,
                                    const MdlStrategy *one_stage, int stages, const DevCluster *cluster,
                                    const CmParams *params, const SimOptions *options, GError **error);

/* srch_pipeline_measure_with without the transfers (every one 0): compute, gaps and leads,
 * what srch_pipeline_least_span reads. */
gboolean srch_pipeline_measure_units(SrchPipeline *pipeline, SimBounder **reuse, const MdlGraph *graph,
                                     const MdlStrategy *one_stage, int stages, const DevCluster *cluster,
                                     const CmParams *params, const SimOptions *options, GError **error);

/* Sets costs directly (tests): @compute has nunits entries, @transfer (stages - 1) rows of
 * nunits + 1 entries (copied; NULL: no transfers). */
void srch_pipeline_set_costs(SrchPipeline *pipeline, int stages, int microbatches,
                             const SimTime *compute, const SimTime *const *transfer);

/* Stage s's cost over units [first, end). */
SimTime srch_pipeline_stage_cost(const SrchPipeline *pipeline, int stage, int first, int end);

/* The 1F1B estimate T of the cut @cuts (nstages + 1 entries: cuts[0] = 0 < cuts[1] < ... <
 * cuts[S] = nunits; stage s is units [cuts[s], cuts[s+1])); G_MAXUINT64 when it overflows. */
SimTime srch_pipeline_objective(const SrchPipeline *pipeline, const int *cuts);

/* A cut of least objective into @cuts (nstages + 1 entries), which it returns; on ties the
 * first found (deterministic). Needs srch_pipeline_measure or _set_costs first. */
SimTime srch_pipeline_dp(const SrchPipeline *pipeline, int *cuts);

/* The same over the cuts whose every stage s has lead + m L_s <= @cap (srch_pipeline_least_span's
 * terms): a cut above it cannot take less than @cap, so a search holding a time of @cap picks
 * among the others. G_MAXUINT64 (and @cuts untouched) when no cut is under the cap;
 * srch_pipeline_dp is this with the cap G_MAXUINT64. */
SimTime srch_pipeline_dp_capped(const SrchPipeline *pipeline, SimTime cap, int *cuts);

/* The least bottleneck of compute alone over every cut into nstages stages: min over cuts of
 * max_s sum of compute[u] over stage s's units (transfers left out: they run on other
 * streams). A stage's device runs its units' compute for every microbatch one after another,
 * so microbatches x this bounds every cut's iteration from below. Needs the costs. */
SimTime srch_pipeline_least_bottleneck(const SrchPipeline *pipeline);

/* The same with each unit's gap added to its compute: microbatches x this bounds every cut's
 * iteration from below too (a stage's device chain waits for its units' own gaps, every
 * microbatch, sim_bound.h). */
SimTime srch_pipeline_least_busy(const SrchPipeline *pipeline);

/* The least over every cut into nstages stages of max_s (lead[first unit of s] + m L_s): L_s
 * stage s's units' compute and gaps, m the microbatches. Every cut's iteration under 1F1B,
 * GPipe and eager-1F1B takes at least its max (sim_bound.h's fill + work + gaps + drain of
 * stage s's device: the lead is at most fill + drain, srch_pipeline_measure). Binary search
 * with a greedy check; never below microbatches x srch_pipeline_least_busy (a NULL lead
 * counts 0). Needs the costs. */
SimTime srch_pipeline_least_span(const SrchPipeline *pipeline);

/* The cut Megatron's builder makes for @strategy (each op's stage), if every unit lies in one
 * stage: TRUE and @cuts filled; FALSE otherwise. */
gboolean srch_pipeline_cuts_of(const SrchPipeline *pipeline, const MdlStrategy *strategy, int *cuts);

/* A strategy of nstages stages cut at @cuts: @one_stage (copied) with stage s's ops on mesh s
 * (the same shape, devices shifted by s * mesh size), num_stages = S, @schedule (not
 * interleaved); validated. Caller frees. */
MdlStrategy *srch_pipeline_strategy(const SrchPipeline *pipeline, const MdlGraph *graph,
                                    const MdlStrategy *one_stage, const int *cuts,
                                    MdlSchedule schedule, const DevCluster *cluster,
                                    GError **error);

/* Layers per stage, with "e+" where a stage holds ops before the first layer (embedding) and
 * "+h" after the last (head): "e+7/8/8/7+h"; units per stage ("9/8/8/9") for a graph without
 * layers. Caller g_free()s. */
char *srch_pipeline_describe(const SrchPipeline *pipeline, const MdlGraph *graph, const int *cuts);

G_END_DECLS

#endif
