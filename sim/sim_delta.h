/* sim/delta — delta simulation (FlexFlow, Jia et al. 2019, section 5.2, Algorithm 2).
 *
 * A search changes one op's config at a time. A SimDelta keeps the last strategy's task graph,
 * with the builder's record of where each segment of it came from (sim_build-int.h: per
 * tensor its resharding, per op its re-gathers and parameter gathers, the gradient sync), and
 * simulates the next strategy by rebuilding only the segments whose ops changed: the compute
 * tasks keep their ids (only the changed ops' durations are recomputed), every other segment
 * is copied with its ids shifted. Then the timeline is re-timed from the first event the
 * change can reach (sim_engine_resume): everything the old run did before that instant is
 * kept.
 *
 * The answer is the full simulation's, bit for bit (the graph is the one the full build
 * makes, task for task, and the engine's tie-break is the task id), which the property test
 * tests/test-delta.c checks over thousands of random changes. A strategy that differs in more
 * than ops' splits (a mesh, a stage, the schedule, microbatches, options), or whose change
 * alters which replicas symmetry folds or whether moves between meshes need cross-mesh
 * resharding, is simulated in full; so is the first one.
 *
 * One SimDelta per thread: it holds no global state and borrows graph, cluster and params. */
#ifndef STRATSIM_SIM_DELTA_H
#define STRATSIM_SIM_DELTA_H

#include "sim/sim.h"

G_BEGIN_DECLS

typedef struct SimDelta SimDelta;

typedef struct {
  guint64 full;              /* simulations built from scratch */
  guint64 delta;             /* simulations by delta */
  guint64 unchanged;         /* strategies equal to the last one (the last answer stands) */
  guint64 segments_rebuilt;
  guint64 segments_copied;
  guint64 tasks_rebuilt;     /* tasks of rebuilt segments (compute tasks not counted) */
  guint64 tasks_copied;
  guint64 events_kept;       /* engine events replayed from the last run's timeline */
  guint64 events_simulated;  /* engine events simulated again */
} SimDeltaStats;

/* A delta simulator for @graph on @cluster (borrowed: they must outlive it). @options: copied. */
SimDelta *sim_delta_new(const MdlGraph *graph, const DevCluster *cluster, const CmParams *params,
                        const SimOptions *options);
void sim_delta_free(SimDelta *delta);

/* Simulates @strategy (copied), by delta from the last strategy where it can (see above).
 * FALSE with @error for a strategy the simulator refuses (as sim_run_new would); the last
 * run then stays current. */
gboolean sim_delta_simulate(SimDelta *delta, const MdlStrategy *strategy, GError **error);

/* The current run (its strategy is the delta's copy), or NULL before the first success. */
const SimRun *sim_delta_run(const SimDelta *delta);
const SimDeltaStats *sim_delta_stats(const SimDelta *delta);

G_END_DECLS

#endif
