/* sim/bound — a lower bound on the simulated iteration time that needs no task graph.
 *
 * Work. The engine (sim_engine.c) starts a task at the max of its ready time and the time each
 * of its resources frees up, so the tasks on one device's compute stream
 * (sim_resource_compute) run one after another. Every op has, per microbatch and device of
 * its mesh, a forward and a backward task (under weight delay a W task for ops with a weight gradient; under recomputation an R
 * task of the forward's duration: sim_build.c assign_compute_ids), of the durations
 * sb_op_durations gives, the function the builder calls. All of a device's compute tasks are
 * chained in program order (sim_build.c chain_compute), so from the start of its first one to
 * the end of its last one at least W_d = sum_{ops o on d} M (F_o + B_o + W_o + R_o) passes.
 *
 * Fill and drain (pipelines, not under weight delay). Let chunk c's ops be in index order
 * (the builder chains a forward unit in that order, a backward unit in reverse) and q_c its
 * first op. Where q_c reads the output of an op of chunk c - 1, let p_c be the highest such
 * op (the link c-1 -> c). Rank r's program is read from sim_pipeline_units:
 *  - if ranks r - 1 and r both start with the forward of their first chunk (r - 1, r) on
 *    microbatch 0, rank r's first task F(q_r, 0) waits for F(p_r, 0), which rank r - 1 runs
 *    after the forwards of chunk r - 1's ops up to p_r, all chained behind its own first task:
 *    fill(r) = fill(r - 1) + sum_{o in chunk r-1, o <= p_r} F_o bounds rank r's first start;
 *  - if rank r ends with the backward of chunk r on microbatch m, its last task is B(q_r, m),
 *    which the backward of p_r on m waits for (its output's gradient), and rank r - 1 chains
 *    the backwards of chunk r - 1's ops up to p_r behind B(p_r, m) (reverse order), the last
 *    being B(q_{r-1}, m); so on down the links: drain(r) = sum_{c = r..1 while linked}
 *    sum_{o in chunk c-1, o <= p_c} B_o passes after rank r's last task. Under Megatron's
 *    backward overlap (sb_overlap_split: W_o chained right after B_o in the same unit) B_o
 *    counts W_o too, except for a chunk's first op q (the stage below waits for B(q) only),
 *    and W(q_r), which may end rank r's chain after B(q_r), is taken off drain(r) (floor 0).
 * Communication and waits only add, so for every device d of rank r's first chunk's mesh
 *     makespan >= fill(r) + W_d + drain(r),
 * and the bound is the max of these and of W_d over all devices: integer picosecond sums
 * of the builder's own durations, compared exactly. Symmetry does not change it (replicas
 * carry their representatives' durations). Chunks whose ops straddle meshes, or pipelines
 * whose programs start or end otherwise, get W_d alone.
 *
 * Gaps (sim_iteration_bound). Within one unit the chain holds consecutive tasks a -> b whose
 * data path runs through collectives: F(p) -> F(o) where o, the op after p in the chunk,
 * reads p's output in another layout on the same mesh (sb_forward_segment: the conversion's
 * collectives per axis, each waiting for the previous one of the device's groups, the first
 * for F(p) on every member, the device included; F(o) waits for the last); R(p) -> R(o) in a
 * recomputation group (the same conversion of the recomputed value, sb_recompute_segment);
 * B(o) -> B(p) when no recomputed forwards sit between them (o's gradient for p's output,
 * resharded by o, the lowest reader in the stage, sb_backward_segment). A collective starts
 * after its inputs end, so b starts at least the durations of the device's collectives on
 * that path after a ends: the gap. Under Megatron's backward overlap W(o) sits between B(o)
 * and B(p) on the chain while the collective runs: the gap is what the collectives take
 * beyond W(o) (floor 0). Every microbatch has one forward and one backward unit of
 * each chunk, so from its first task's start to its last task's end device d spends at least
 * W_d + M * sum over its chunks of the per-unit gaps, and the bound takes, for the first
 * device of each rank's first chunk, fill + that + drain. Durations are
 * cm_group_collective_time of the same collective, group and bytes as sb_convert_on_mesh, in
 * integer picoseconds. Overlapped conversions (tp_overlap, ring attention) and step-expanded
 * collectives (timed by their transfers) count no gap.
 *
 * Host (a framework with host costs, sim_build_host.c): every compute task has a launch on its
 * device's host resource, which runs them one at a time, and the task waits for its launch; so
 * the last compute task starts after the sum of the device's launch times (forward, recomputed
 * forward, backward; B and W under weight delay, per microbatch).
 *
 * Communication streams. Every collective holds its class's stream (sim.h's SimStream) of
 * each member, one collective at a time, so the collectives of one stream of a device take at
 * least their summed durations; streams run at once, so the bound takes the largest stream,
 * never the sum over streams. The gaps' collectives are on SIM_STREAM_COMM (already in the
 * chain's term); on SIM_STREAM_DP the gradient synchronization
 * (sb_add_gradient_sync_and_optimizer):
 * per DDP bucket an all-reduce (ZeRO 0), a reduce-scatter once (1) or per microbatch (2) and a
 * parameter all-gather (1, 2); under ZeRO-3 (FSDP) a reduce-scatter per FSDP unit and
 * microbatch and the unit's parameter all-gathers before its forward and its backward, per
 * microbatch (sb_unit_gathers). ZeRO 1/2 without overlap_param_gather: those all-gathers wait
 * for the optimizer step, which waits for the device's last compute task, so fill + work + gaps
 * + the all-gathers bounds the iteration too. overlap_grad_reduce=0 only gates the gradient
 * syncs later (after the device's last backward task): every argument here still holds, the
 * bound is not tightened for it (tests/test-gradsync.c). tests/test-search-grid.c checks the
 * bound against the simulation on every schedule, recomputation, sp, ZeRO stage and weight
 * delay. */
#ifndef STRATSIM_SIM_BOUND_H
#define STRATSIM_SIM_BOUND_H

#include "sim/sim.h"

G_BEGIN_DECLS

/* The bound above without communication (work, fill and drain, the host) for @strategy
 * (validated by the caller: mdl_strategy_megatron's output or mdl_strategy_validate's), in
 * picoseconds. Costs a few passes over the ops, one over the meshes' devices and one schedule
 * per pipeline rank. */
SimTime sim_compute_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params);

/* The bound above plus the gaps (header comment, "Gaps") for a run with @options (NULL: the
 * defaults): the communication between consecutive compute tasks of a device that the
 * second must wait for. Never below sim_compute_bound. Step-expanded collectives
 * (options->step_collectives) time collectives otherwise: no gaps then. */
SimTime sim_iteration_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                            const DevCluster *cluster, const CmParams *params,
                            const SimOptions *options);

/* The bound in parts, for a search that varies the recomputation, the ZeRO stage and
 * overlap_param_gather of one strategy in place: sim_bounder_new computes what those leave
 * alone (kernel durations, fill and drain, the gaps' collectives); sim_bounder_chain gives the
 * compute chain's bound and sim_bounder_bound the whole bound for the strategy's fields as
 * they are at the call (each equal to sim_iteration_bound's for them; recomputed only when
 * they changed). @strategy and the rest are borrowed: they must outlive the bounder, and
 * nothing but those three fields may change in between. */
typedef struct SimBounder SimBounder;
SimBounder *sim_bounder_new(const MdlGraph *graph, const MdlStrategy *strategy,
                            const DevCluster *cluster, const CmParams *params,
                            const SimOptions *options);
/* Points @bounder at another @strategy over the same graph, cluster, parameters and options,
 * as sim_bounder_new(..., @strategy, ...) would, keeping what depends on the graph alone (the
 * readers of each tensor, the sample dims) and, from then on, a memo of collective times and
 * NCCL channel counts keyed by collective, devices and bytes (sim_build_memo.c):
 * /search-grid/bounder-set-strategy checks that it gives every point of a space the bound a
 * fresh bounder gives. @strategy is borrowed as in sim_bounder_new; the previous one is no
 * longer read. */
void sim_bounder_set_strategy(SimBounder *bounder, const MdlStrategy *strategy);
SimTime sim_bounder_chain(SimBounder *bounder);
/* Per op of the graph into @out: one device's compute for one microbatch, forward, backward,
 * weight-gradient and recomputed forward (the durations W_d sums, header comment; every
 * device of the op's mesh has the same). */
void sim_bounder_op_compute(SimBounder *bounder, SimTime *out);
/* The host term of the bound (header comment, "Host"): the most any device's host resource
 * spends launching its compute tasks, all microbatches (0 without host costs). */
SimTime sim_bounder_launches(SimBounder *bounder);
/* Per op of the graph, one device and one microbatch: its forward's duration (@fwd), its
 * backward's (@bwd: B, the input gradient, or the whole backward where it has no W task) and
 * its weight gradient's (@wgt: 0 where it has no W task), as fill and drain read them (header
 * comment). */
void sim_bounder_op_passes(SimBounder *bounder, SimTime *fwd, SimTime *bwd, SimTime *wgt);
/* The gaps (header comment, "Gaps") of the first rank's device, per microbatch, each on the
 * later op of its pair: @prev[o] the op before o in the pair (-1: o has none) and @gap[o] what
 * the pair adds to the device's chain for one microbatch (device_gaps' sum is M times the sum
 * of @gap). */
void sim_bounder_op_gaps(SimBounder *bounder, int *prev, SimTime *gap);
SimTime sim_bounder_bound(SimBounder *bounder);
void sim_bounder_free(SimBounder *bounder);

G_END_DECLS

#endif
