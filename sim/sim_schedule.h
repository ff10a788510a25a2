/* sim/schedule — pipeline schedules as data: the program order of every pipeline rank.
 *
 * A schedule is, per pipeline rank, a list of units (phase, model chunk, microbatch): F runs
 * the chunk's ops forward, B their backward (without weight delay the whole backward; with it
 * only the activation gradients dX, what the previous chunk waits for) and W the weight
 * gradients dW. sim_build chains every device's compute tasks in this order; the engine then
 * times them. (SimSchedule in sim.h is something else: the engine's timeline.)
 *
 * The orders, for P ranks, M microbatches, V chunks per rank, rank r (0-based):
 *  - GPipe (Huang et al. 2019): F0..F(M-1), then B0..B(M-1).
 *  - 1F1B (PipeDream-Flush, Narayanan et al. 2021, Fig. 4): w = min(P - r - 1, M) warm-up
 *    forwards, then (F, B) pairs, then the w remaining backwards.
 *  - eager-1F1B (cross-mesh resharding paper, section 4): as 1F1B with w = min(2(P - r - 1), M):
 *    "stage i runs 2 x (#stages - i) + 1 forward computations and then enters the steady
 *    phase" (i 1-based: 2(P - r - 1) + 1 forwards before the first backward, against
 *    P - r in 1F1B), so a forward's output has a whole (F, B) step to travel.
 *  - interleaved 1F1B (Narayanan et al. 2021, section 2.2; Megatron-LM's
 *    forward_backward_pipelining_with_interleaving): M * V chunk-microbatch units; the k-th
 *    forward unit runs local chunk (k / P) % V (global chunk that * P + r) on microbatch
 *    (k / (P V)) P + k % P, the k-th backward unit the same with local chunk V - 1 - (k / P) % V;
 *    warm-up w = min(M V, 2(P - r - 1) + (V - 1) P) forward units (all M V when M == P, as
 *    Megatron does), then (forward k + w, backward k) pairs, then the remaining backwards.
 *  - weight delay (cross-mesh resharding paper, section 4, "backward weight delaying"; the
 *    B/W split of Qi et al. 2024, "Zero Bubble Pipeline Parallelism"): each B is followed by its
 *    W, except that rank r moves the W of its first r backward units to the end of its
 *    program. The paper delays W so that the cross-mesh send of dX (which only needs B)
 *    overlaps it, choosing how far with a cost model it does not give; we use the ZB-H1
 *    placement (Qi et al. 2024, section 3.1), which fills the drain bubble with the delayed
 *    W's: on equal stages with free communication the 1F1B bubble (P - 1)(tF + tB + tW)
 *    becomes (P - 1)(tF + tB - tW) (when tW <= min(tF, tB), e.g. the paper's tF = tB = tW).
 */
#ifndef STRATSIM_SIM_SCHEDULE_H
#define STRATSIM_SIM_SCHEDULE_H

#include <glib.h>
#include <stdint.h>
#include "model/mdl_strategy.h"

G_BEGIN_DECLS

typedef enum {
  SIM_UNIT_FORWARD,
  SIM_UNIT_BACKWARD,   /* dX (with weight delay) or the whole backward */
  SIM_UNIT_WEIGHT,     /* dW, only with weight delay */
} SimUnitPhase;

typedef struct {
  uint8_t phase;       /* SimUnitPhase */
  int chunk;           /* model chunk: MdlOpConfig.stage, 0 .. num_stages - 1 */
  int microbatch;
} SimUnit;

/* The program order of pipeline rank @rank (0 .. mdl_strategy_num_ranks - 1) under @strategy's
 * schedule, virtual stages and weight delay. Returns a new array of *@n_units units (each
 * (phase, chunk, microbatch) of the rank exactly once); free with g_free. */
SimUnit *sim_pipeline_units(const MdlStrategy *strategy, int rank, int *n_units);

/* The units as text, e.g. "F0 F1 B0 W0" ("F0.c5": chunk 5, when the strategy has virtual
 * stages); caller frees with g_free. */
char *sim_pipeline_format(const MdlStrategy *strategy, const SimUnit *units, int n_units);

/* Most (chunk, microbatch) activation sets the program holds at once: a forward unit saves
 * them, the last backward part (W with weight delay, else B) frees them. */
int sim_pipeline_peak_in_flight(const SimUnit *units, int n_units);

G_END_DECLS

#endif
