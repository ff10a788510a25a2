/* sim/stages — a run seen per pipeline rank: the layers its model chunks hold, how long its
 * compute and communication streams are busy, how long neither is (the pipeline bubble and host
 * waits), and its peak memory. What an uneven pipeline (first_layers / last_layers, model/
 * STRATEGY.md) changes from rank to rank; `explain` prints it for pipelines. */
#ifndef STRATSIM_SIM_STAGES_H
#define STRATSIM_SIM_STAGES_H

#include <stdio.h>

#include "sim/sim.h"

G_BEGIN_DECLS

typedef struct {
  int rank;               /* pipeline rank */
  int device;             /* the rank's first device with tasks (the simulated one) */
  int layers;             /* distinct layers of the rank's chunks */
  double compute_s;       /* its compute stream busy */
  double comm_s;          /* its communication streams busy while the compute stream is not */
  double idle_s;          /* neither busy: the iteration's rest (pipeline bubble, host waits) */
  double memory_bytes;    /* its peak memory (cm_memory_per_device) */
} SimStage;

/* One entry per pipeline rank of @run's strategy, in rank order; *@n gets the count. Caller
 * g_free()s. compute_s + comm_s + idle_s is the iteration time. */
SimStage *sim_run_stages(const SimRun *run, int *n);

/* The table of sim_run_stages, one line per rank. */
void sim_stages_print(const SimRun *run, FILE *out);

G_END_DECLS

#endif
