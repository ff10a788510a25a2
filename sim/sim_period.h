/* sim/period — the steady state of a pipelined iteration: a run of k microbatches whose engine
 * state repeats after p more, proven from its own timeline, gives the makespan of any
 * N = k + i p microbatches without building or timing them (sim/sim_period.c says why it is
 * exact and what it checks). */
#ifndef STRATSIM_SIM_PERIOD_H
#define STRATSIM_SIM_PERIOD_H

#include "sim/sim-int.h"
#include "sim/sim_schedule.h"

G_BEGIN_DECLS

typedef struct {
  int period;          /* p: microbatches a period */
  int periods;         /* i = (N - k) / p inserted */
  SimTime cut_a, cut_b; /* the two cuts whose states are one period apart */
  SimTime length;      /* cut_b - cut_a: the time one period adds */
  SimTime makespan;    /* the N-microbatch graph's */
  uint32_t segment;    /* tasks that pop between the cuts (one period's) */
  uint32_t tried;      /* cut pairs checked */
} SimPeriodProof;

/* The makespan of @strategy's graph with @target microbatches, from @g: the graph sim_build made
 * for @strategy (its num_microbatches = k <= @target microbatches; a full graph: task labels,
 * programs and host stream) and @s: its plain engine run (sim_engine_run). Returns TRUE with
 * @out filled when two cuts of @s one period apart have the same engine state and the schedules
 * of k and @target microbatches differ by whole periods inserted between them; FALSE (and @out
 * untouched but for tried) when no such cut pair was found: the caller must time the graph of
 * @target microbatches itself. Never an approximation. */
gboolean sim_period_extrapolate(const SimTaskGraph *g, const SimSchedule *s,
                                const MdlStrategy *strategy, int target, SimPeriodProof *out);

/* Per task @ids[i] of @g (each of a microbatch m >= 0, with its SimTask written) into
 * @image[i]: the task of microbatch m + @p that is the same in everything else (kind, op,
 * tensor, collective, bytes, duration, resources; the j-th such of m maps to the j-th of
 * m + p, where both have as many), or UINT32_MAX (always where m + p >= @microbatches). @ids
 * ascending. */
void sim_period_images(const SimTaskGraph *g, const uint32_t *ids, uint32_t n, int p,
                       int microbatches, uint32_t *image);

/* The pieces of the proof sim_merge_period.c shares: */

/* The engine's state after the pops before each of two cuts (0: a, 1: b): per task not popped
 * its dependencies ended and the latest of their ends; per resource its free time. */
typedef struct {
  uint32_t *ended[2];
  SimTime *latest[2], *free_at[2];
} SimPeriodCuts;
void sim_period_cuts_init(SimPeriodCuts *cuts, gsize tasks, gsize resources);
void sim_period_cuts_clear(SimPeriodCuts *cuts);

/* A task touched at a cut (not popped): its dependencies, how many have ended and the latest
 * of their ends, its pop time once all have. */
typedef struct {
  uint32_t indegree, ended;
  SimTime key, latest;
} SimPeriodTouched;

/* Condition (1) for one task of microbatch @mb (-1: the iteration's) of k = @microbatches,
 * popping at @key, its image (if any, mb < k - p) at @image_key: whether it takes its side of
 * the partition (popped before @a exactly when its image pops before @b, the first period's
 * before @b, the last's not before @a, the iteration's not between the cuts). */
static inline gboolean sim_period_label_ok(int32_t mb, SimTime key, SimTime image_key, SimTime a,
                                           SimTime b, int p, int microbatches) {
  if (mb < 0) return key < a || key >= b;
  if (mb < p && key >= b) return FALSE;
  if (mb >= microbatches - p) return key >= a;
  return (key < a) == (image_key < b);
}

/* Whether @x at cut @a and its image @y at cut @b are in the same state relative to their cuts
 * (times at or before a cut count as the cut); @labelled: x is of a microbatch (its image's
 * dependencies are the images of its own: as many left), not the whole iteration's. */
gboolean sim_period_same_touched(const SimPeriodTouched *x, SimTime a, const SimPeriodTouched *y,
                                 SimTime b, gboolean labelled);

/* Whether every resource's free time is the same relative to the cuts (@resources each). */
gboolean sim_period_same_free(const SimTime *free_a, SimTime a, const SimTime *free_b, SimTime b,
                              int resources);

/* Whether @strategy's schedule for pipeline rank @rank with @target microbatches is @units (its
 * k-microbatch one, @nunits) with the units (@ua, @ub] inserted (@target - k) / @p more times,
 * each copy p microbatches on, and the units after @ub shifted past them. */
gboolean sim_period_schedule_inserts(const MdlStrategy *strategy, int rank, const SimUnit *units,
                                     int nunits, int ua, int ub, int p, int target);

G_END_DECLS

#endif
