/* sim/bound — a lower bound on the simulated iteration time that needs no task graph.
 *
 * The engine (sim_engine.c) starts a task at the max of its ready time and the time each of
 * its resources frees up, so the tasks on one device's compute stream (resource 2d) run one
 * after another and the makespan is at least the sum of their durations. Every op has, per
 * microbatch and device of its mesh, a forward and a backward task (under weight delay a W
 * task for ops with a weight gradient; under recomputation an R task of the forward's
 * duration: sim_build.c add_compute_tasks), each of the duration sb_op_durations gives, the
 * same function the builder calls. So
 *     makespan >= max_d  sum_{ops o on device d} M (F_o + B_o + W_o + R_o)
 * with integer picosecond durations: the bound is the builder's own sums, compared exactly.
 * Symmetry does not change it (replicas carry the representatives' durations). Other tasks
 * (communication, optimizer) and waits only add, so the bound is never above the time the
 * simulator predicts (tests/test-sim.c checks it on strategies of every schedule). */
#ifndef STRATSIM_SIM_BOUND_H
#define STRATSIM_SIM_BOUND_H

#include "sim/sim.h"

G_BEGIN_DECLS

/* The bound above for @strategy (validated by the caller: mdl_strategy_megatron's output or
 * mdl_strategy_validate's), in picoseconds. Costs one pass over the ops and one over the
 * meshes' devices. */
SimTime sim_compute_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params);

G_END_DECLS

#endif
