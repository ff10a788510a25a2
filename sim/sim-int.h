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

#endif
