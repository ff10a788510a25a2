/* sim — private to the sim/ module: what sim_run.c and sim_delta.c share. */
#ifndef STRATSIM_SIM_INT_H
#define STRATSIM_SIM_INT_H

#include "sim/sim.h"

/* A run over a finished task graph (@tasks: owned, freed on error): runs the engine unless
 * @schedule (owned) is given, then the prediction's statistics and memory. @t0 and @t1 are the
 * wall-clock times (g_get_monotonic_time) the build started and ended. */
SimRun *sim_run_from_graph(const MdlGraph *graph, const MdlStrategy *strategy,
                           const DevCluster *cluster, const CmParams *params,
                           const SimOptions *options, SimTaskGraph *tasks,
                           SimSchedule *schedule, gint64 t0, gint64 t1, GError **error);

/* Re-times @graph from the run @old of a graph that differs from it only in tasks the old run
 * popped at or after @from and in tasks of @graph that cannot become ready before @from
 * (sim_delta.c establishes both): the old pops before @from are kept (@new_of_old maps old
 * task ids to @graph's; every kept task must map), the rest simulated. The result is
 * sim_engine_run's, bit for bit. @kept: the pops kept. */
SimSchedule *sim_engine_resume(const SimTaskGraph *graph, const SimSchedule *old,
                               const uint32_t *new_of_old, SimTime from, uint32_t *kept,
                               GError **error);

/* Per device (CSR: @offsets_out gets num_devices + 1 entries, caller frees), the intervals in
 * which its compute stream was idle because the host had not yet launched its next compute
 * task: from the stream's previous task's end to min(the launch's end, the task's start), as
 * (start, end) pairs of picoseconds, sorted and disjoint per device. Empty without a host
 * stream. Caller frees the array (sim_host.c). */
SimTime *sim_host_wait_intervals(const SimTaskGraph *graph, const SimSchedule *schedule,
                                 guint **offsets_out);

#endif
