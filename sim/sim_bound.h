/* sim/bound — a lower bound on the simulated iteration time that needs no task graph.
 *
 * Work. The engine (sim_engine.c) starts a task at the max of its ready time and the time each
 * of its resources frees up, so the tasks on one device's compute stream (resource 2d) run one
 * after another. Every op has, per microbatch and device of its mesh, a forward and a backward
 * task (under weight delay a W task for ops with a weight gradient; under recomputation an R
 * task of the forward's duration: sim_build.c add_compute_tasks), of the durations
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
 *    sum_{o in chunk c-1, o <= p_c} B_o passes after rank r's last task.
 * Communication and waits only add, so for every device d of rank r's first chunk's mesh
 *     makespan >= fill(r) + W_d + drain(r),
 * and the bound is the max of these and of W_d over all devices: integer picosecond sums
 * of the builder's own durations, compared exactly. Symmetry does not change it (replicas
 * carry their representatives' durations). Chunks whose ops straddle meshes, or pipelines
 * whose programs start or end otherwise, get W_d alone. tests/test-search-grid.c checks the
 * bound against the simulation on every schedule, recomputation, sp, ZeRO stage and weight
 * delay. */
#ifndef STRATSIM_SIM_BOUND_H
#define STRATSIM_SIM_BOUND_H

#include "sim/sim.h"

G_BEGIN_DECLS

/* The bound above for @strategy (validated by the caller: mdl_strategy_megatron's output or
 * mdl_strategy_validate's), in picoseconds. Costs a few passes over the ops, one over the
 * meshes' devices and one schedule per pipeline rank. */
SimTime sim_compute_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params);

G_END_DECLS

#endif
