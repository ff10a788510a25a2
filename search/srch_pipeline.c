/* search/pipeline — stage cuts by dynamic programming; the contract and the objective are in
 * srch_pipeline.h. Invariants: costs are SimTime (integer picoseconds), so the DP's sums and
 * srch_pipeline_objective's agree to the picosecond and the brute-force test can compare them
 * exactly; a cut is always nstages + 1 increasing unit indices from 0 to nunits. */
#include "search/srch_pipeline.h"
#include "sim/sim_bound.h"

#include <stdlib.h>
#include <string.h>

#define NO_COST G_MAXUINT64

SrchPipeline *srch_pipeline_new(const MdlGraph *graph) {
  g_return_val_if_fail(graph != NULL, NULL);
  int n = mdl_graph_num_ops(graph);
  SrchPipeline *p = g_new0(SrchPipeline, 1);
  p->unit_of_op = g_new(int, MAX(n, 1));
  /* Runs of one layer value. */
  int runs = 0;
  for (int o = 0; o < n; o++) {
    if (o == 0 || mdl_graph_op(graph, o)->layer != mdl_graph_op(graph, o - 1)->layer) runs++;
    p->unit_of_op[o] = runs - 1;
  }
  /* Too many runs: merge them in groups of equal counts. */
  int per = (runs + SRCH_PIPELINE_MAX_UNITS - 1) / SRCH_PIPELINE_MAX_UNITS;
  if (per > 1)
    for (int o = 0; o < n; o++) p->unit_of_op[o] /= per;
  p->nunits = n ? p->unit_of_op[n - 1] + 1 : 0;
  p->first_op = g_new(int, p->nunits + 1);
  for (int o = n - 1; o >= 0; o--) p->first_op[p->unit_of_op[o]] = o;
  p->first_op[p->nunits] = n;
  return p;
}

static void free_costs(SrchPipeline *p) {
  if (p->transfer)
    for (int s = 0; s + 1 < p->nstages; s++) g_free(p->transfer[s]);
  g_clear_pointer(&p->transfer, g_free);
  g_clear_pointer(&p->compute, g_free);
  g_clear_pointer(&p->gap, g_free);
  g_clear_pointer(&p->lead, g_free);
  p->nstages = 0;
}

void srch_pipeline_free(SrchPipeline *p) {
  if (!p) return;
  free_costs(p);
  g_free(p->first_op);
  g_free(p->unit_of_op);
  g_free(p);
}

void srch_pipeline_set_costs(SrchPipeline *p, int stages, int microbatches,
                             const SimTime *compute, const SimTime *const *transfer) {
  g_return_if_fail(p && stages >= 1 && stages <= p->nunits && microbatches >= 1);
  free_costs(p);
  p->nstages = stages;
  p->microbatches = microbatches;
  p->compute = g_memdup2(compute, sizeof(SimTime) * (gsize)p->nunits);
  p->transfer = g_new0(SimTime *, MAX(stages - 1, 1));
  for (int s = 0; s + 1 < stages; s++) {
    p->transfer[s] = g_new0(SimTime, p->nunits + 1);
    if (transfer) memcpy(p->transfer[s], transfer[s], sizeof(SimTime) * (gsize)(p->nunits + 1));
    p->transfer[s][0] = p->transfer[s][p->nunits] = 0;
  }
}

static gboolean measure(SrchPipeline *p, SimBounder **reuse, const MdlGraph *graph,
                        const MdlStrategy *one, int stages, const DevCluster *cluster,
                        const CmParams *params, const SimOptions *options, gboolean transfers,
                        GError **error);

gboolean srch_pipeline_measure(SrchPipeline *p, const MdlGraph *graph, const MdlStrategy *one,
                               int stages, const DevCluster *cluster, const CmParams *params,
                               const SimOptions *options, GError **error) {
  SimBounder *bounder = NULL;
  gboolean ok = srch_pipeline_measure_with(p, &bounder, graph, one, stages, cluster, params, options, error);
  sim_bounder_free(bounder);
  return ok;
}

gboolean srch_pipeline_measure_with(SrchPipeline *p, SimBounder **reuse, const MdlGraph *graph,
                                    const MdlStrategy *one, int stages, const DevCluster *cluster,
                                    const CmParams *params, const SimOptions *options, GError **error) {
  return measure(p, reuse, graph, one, stages, cluster, params, options, TRUE, error);
}

gboolean srch_pipeline_measure_units(SrchPipeline *p, SimBounder **reuse, const MdlGraph *graph,
                                     const MdlStrategy *one, int stages, const DevCluster *cluster,
                                     const CmParams *params, const SimOptions *options, GError **error) {
  return measure(p, reuse, graph, one, stages, cluster, params, options, FALSE, error);
}

/* srch_pipeline_measure_with; without @transfers, every transfer 0. */
static gboolean measure(SrchPipeline *p, SimBounder **reuse, const MdlGraph *graph,
                        const MdlStrategy *one, int stages, const DevCluster *cluster,
                        const CmParams *params, const SimOptions *options, gboolean transfers,
                        GError **error) {
  g_return_val_if_fail(p && reuse && graph && one && cluster && params, FALSE);
  int nops = mdl_graph_num_ops(graph);
  if (one->meshes->len != 1 || one->num_stages != 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "pipeline cuts: the one-stage strategy has %u meshes and %d stages (want 1 and 1)",
                one->meshes->len, one->num_stages);
    return FALSE;
  }
  const MdlMesh *mesh = mdl_strategy_mesh(one, 0);
  int last_device = 0;
  for (int i = 0; i < mesh->ndevices; i++) last_device = MAX(last_device, mesh->devices[i]);
  if (stages < 1 || stages > p->nunits ||
      (gint64)last_device + (gint64)(stages - 1) * mesh->ndevices >= dev_cluster_num_devices(cluster)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "pipeline cuts: %d stages of %d devices do not fit %d units on %d devices", stages,
                mesh->ndevices, p->nunits, dev_cluster_num_devices(cluster));
    return FALSE;
  }
  /* Per op, one device's compute for one microbatch: the durations the builder gives its
   * tasks (sb_op_durations, through the bounder: no task graph; the builder's own sums agree,
   * /search/dp/measure-matches-task-graph). Measured on GPT-3 175B / 1024 A100s (--algo dp,
   * one thread, 2026-12-02): building each one-stage task graph took 63 s of the 122 s. */
  if (!mdl_strategy_validate(one, graph, cluster, error)) return FALSE;
  if (*reuse) sim_bounder_set_strategy(*reuse, one);
  else *reuse = sim_bounder_new(graph, one, cluster, params, options);
  SimBounder *bounder = *reuse;
  g_autofree SimTime *per_op = g_new(SimTime, nops);
  sim_bounder_op_compute(bounder, per_op);
  g_autofree SimTime *compute = g_new0(SimTime, p->nunits);
  for (int o = 0; o < nops; o++) compute[p->unit_of_op[o]] += per_op[o];
  /* Gaps between two ops of one unit stay on one stage whatever the cut. Stage s's mesh is
   * the one-stage mesh's devices shifted by s x its size: where that size and the hosts' are
   * multiples of one another, every stage's groups sit alike on the hosts and the gaps are
   * the same on every stage; otherwise none are counted. */
  SimTime *gap = g_new0(SimTime, p->nunits);
  int gpn = cluster->gpus_per_node;
  if (gpn > 0 && (mesh->ndevices % gpn == 0 || gpn % mesh->ndevices == 0)) {
    g_autofree int *prev = g_new(int, nops);
    sim_bounder_op_gaps(bounder, prev, per_op);
    for (int o = 0; o < nops; o++)
      if (prev[o] >= 0 && p->unit_of_op[prev[o]] == p->unit_of_op[o]) gap[p->unit_of_op[o]] += per_op[o];
  }
  /* The lead of a stage starting at unit u (sim_bound.h, fill and drain, with the link of
   * each cut the previous unit's last op, read by u's first): its first task waits for
   * microbatch 0's forwards through the stages before (each stage's program starts with
   * them, chained in op order up to the link), and after its last task (the backward of its
   * first op; under Megatron's overlap its W may follow, so that W is taken off, floor 0)
   * the backwards of those stages' ops follow, chained in reverse. Summed over the units
   * since the last boundary that is not such a link (none counted across it: a stage
   * boundary there breaks the chain; inside a stage, leaving units out only lowers the
   * lead), forwards and backwards (B) alone: no recomputed forward (it may run before the
   * gradient arrives), no gap, no transfer. Then a later start g >= c has lead(g) - lead(c)
   * <= the forwards, backwards and c's first W of units [c, g), at most their compute: the
   * greedy check of srch_pipeline_least_span is exact. Not under weight delay (W units move
   * behind the last backward): no lead. */
  SimTime *lead = g_new0(SimTime, p->nunits);
  if (!one->weight_delay) {
    g_autofree SimTime *fwd = g_new(SimTime, nops), *bwd = g_new(SimTime, nops), *wgt = g_new(SimTime, nops);
    sim_bounder_op_passes(bounder, fwd, bwd, wgt);
    SimTime f = 0, b = 0;
    for (int u = 0; u < p->nunits; u++) {
      int q = p->first_op[u];
      gboolean linked = FALSE;
      const MdlOp *op = mdl_graph_op(graph, q);
      for (int i = 0; u > 0 && i < op->ninputs; i++) {
        const MdlTensor *t = mdl_graph_tensor(graph, op->inputs[i].tensor);
        linked |= !t->is_weight && t->producer == q - 1;
      }
      if (!linked) f = b = 0;
      lead[u] = f + (b > wgt[q] ? b - wgt[q] : 0);
      for (int o = q; o < p->first_op[u + 1]; o++) {
        f += fwd[o];
        b += bwd[o];
      }
    }
  }

  if (!transfers) {
    srch_pipeline_set_costs(p, stages, one->num_microbatches, compute, NULL);
    p->gap = gap;
    p->lead = lead;
    return TRUE;
  }
  /* Transfers: each tensor crosses the cuts after its producer's unit up to its last reader's. */
  g_autofree int *last_reader = g_new(int, mdl_graph_num_tensors(graph));
  for (int t = 0; t < mdl_graph_num_tensors(graph); t++) last_reader[t] = -1;
  for (int o = 0; o < nops; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    for (int k = 0; k < op->ninputs; k++)
      last_reader[op->inputs[k].tensor] = MAX(last_reader[op->inputs[k].tensor], p->unit_of_op[o]);
  }
  g_autofree int *sample_tdim = mdl_tensor_sample_dims(graph);
  double dtype_bytes = dev_dtype_bytes(one->dtype);
  SimTime **transfer = g_new0(SimTime *, MAX(stages - 1, 1));
  for (int s = 0; s + 1 < stages; s++) transfer[s] = g_new0(SimTime, p->nunits + 1);
  /* Each crossing output's bytes once (its layout does not depend on the stage), then its
   * time per pair of adjacent stages (their link: inside a host or across). */
  g_autofree double *out_bytes = g_new(double, nops);
  for (int o = 0; o < nops; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    int t = op->output.tensor;
    out_bytes[o] = -1;
    if (last_reader[t] <= p->unit_of_op[o]) continue;
    MdlLayout layout = mdl_layout_of_operand(op, &op->output, TRUE, &one->configs[o], mesh);
    out_bytes[o] = mdl_layout_local_elements(graph, t, sample_tdim[t], &layout, mesh,
                                             one->num_microbatches) * dtype_bytes;
  }
  for (int s = 0; s + 1 < stages; s++) {
    int pair[2] = {mesh->devices[0] + s * mesh->ndevices, mesh->devices[0] + (s + 1) * mesh->ndevices};
    for (int o = 0; o < nops; o++) {
      if (out_bytes[o] < 0) continue;
      int t = mdl_graph_op(graph, o)->output.tensor, from = p->unit_of_op[o];
      double seconds = cm_group_collective_time(params, cluster, CM_SEND_RECV, pair, 2, out_bytes[o]);
      if (mdl_tensor_needs_grad(graph, t)) seconds *= 2; /* its gradient comes back */
      SimTime cost = sim_time_from_seconds(seconds);
      for (int u = from + 1; u <= last_reader[t]; u++) transfer[s][u] += cost;
    }
  }
  srch_pipeline_set_costs(p, stages, one->num_microbatches, compute, (const SimTime *const *)transfer);
  p->gap = gap;
  p->lead = lead;
  for (int s = 0; s + 1 < stages; s++) g_free(transfer[s]);
  g_free(transfer);
  return TRUE;
}

SimTime srch_pipeline_stage_cost(const SrchPipeline *p, int stage, int first, int end) {
  SimTime t = 0;
  for (int u = first; u < end; u++) t += p->compute[u];
  if (stage > 0) t += p->transfer[stage - 1][first];
  if (stage + 1 < p->nstages) t += p->transfer[stage][end];
  return t;
}

static SimTime saturating_add(SimTime a, SimTime b) { return a > NO_COST - b ? NO_COST : a + b; }

static SimTime saturating_mul(SimTime a, guint64 k) {
  return k && a > NO_COST / k ? NO_COST : a * k;
}

/* (m - 1) max + sum, saturating. */
static SimTime estimate(const SrchPipeline *p, SimTime max, SimTime sum) {
  return saturating_add(saturating_mul(max, (guint64)(p->microbatches - 1)), sum);
}

SimTime srch_pipeline_objective(const SrchPipeline *p, const int *cuts) {
  SimTime max = 0, sum = 0;
  for (int s = 0; s < p->nstages; s++) {
    SimTime t = srch_pipeline_stage_cost(p, s, cuts[s], cuts[s + 1]);
    max = MAX(max, t);
    sum = saturating_add(sum, t);
  }
  return estimate(p, max, sum);
}

/* The DP's tables: stage costs from prefix sums, and per (stage, end) the best value and the
 * start that achieved it. */
typedef struct {
  const SrchPipeline *p;
  int S, L;
  SimTime cap;       /* every stage's lead + m x loads at most this (NO_COST: no cap) */
  SimTime *load;     /* L + 1: prefix sums of the units' compute and gaps (with a cap) */
  SimTime *prefix;   /* L + 1 */
  SimTime *value;    /* S x (L + 1) */
  int *from;         /* S x (L + 1) */
} Dp;

static inline SimTime cost(const Dp *d, int s, int i, int j) {
  SimTime t = d->prefix[j] - d->prefix[i];
  if (s > 0) t += d->p->transfer[s - 1][i];
  if (s + 1 < d->S) t += d->p->transfer[s][j];
  return t;
}

/* Stage s may end at j in [s + 1, L - (S - 1 - s)] and start at i in [s, j). Fills value/from
 * with the least sum with every stage <= @bound and returns the final value (NO_COST: no cut
 * meets the bound). Ties keep the smallest start. */
static SimTime dp_run(Dp *d, SimTime bound) {
  int S = d->S, L = d->L, W = L + 1;
  for (int s = 0; s < S; s++) {
    for (int j = s + 1; j <= L - (S - 1 - s); j++) {
      SimTime best = NO_COST;
      int arg = -1;
      /* Starts from the latest down, keeping the smallest start among equal values (<=). A
       * stage's compute grows as its start moves down and transfers only add, so the loop
       * stops at the first start whose compute alone exceeds the bound (the 175B dp search,
       * 2026-12-02: most of the DP's time was starts past the bound). */
      for (int i = s == 0 ? 0 : j - 1; i >= (s == 0 ? 0 : s); i--) {
        if (d->prefix[j] - d->prefix[i] > bound) break;
        /* The cap: as the start moves down a stage's lead + m x loads only grows (lead(i) -
         * lead(i') <= the compute of [i', i) for i' < i, srch_pipeline_measure). */
        if (d->cap != NO_COST &&
            saturating_add(d->p->lead ? d->p->lead[i] : 0,
                           saturating_mul(d->load[j] - d->load[i], (guint64)d->p->microbatches)) > d->cap)
          break;
        SimTime before = s == 0 ? 0 : d->value[(s - 1) * W + i];
        if (before == NO_COST) continue;
        SimTime t = cost(d, s, i, j);
        if (t > bound) continue;
        SimTime v = saturating_add(before, t);
        if (v <= best) {
          best = v;
          arg = i;
        }
      }
      d->value[s * W + j] = best;
      d->from[s * W + j] = arg;
    }
  }
  return d->value[(S - 1) * W + L];
}

static void dp_cuts(const Dp *d, int *cuts) {
  int W = d->L + 1;
  cuts[d->S] = d->L;
  for (int s = d->S - 1; s >= 0; s--) cuts[s] = d->from[s * W + cuts[s + 1]];
}

static int compare_time(const void *a, const void *b) {
  SimTime x = *(const SimTime *)a, y = *(const SimTime *)b;
  return x < y ? -1 : x > y;
}

/* Unit @u's load: its compute, plus @add's entry (NULL: none). */
static inline SimTime unit_load(const SrchPipeline *p, const SimTime *add, int u) {
  return p->compute[u] + (add ? add[u] : 0);
}

/* Whether the units split into at most @stages runs of load <= @cap each (greedy: each run
 * takes units while it can; fewer runs can always be split further, one unit a stage at the
 * least, as stages <= nunits). */
static gboolean fits_cap(const SrchPipeline *p, const SimTime *add, int stages, SimTime cap) {
  int runs = 1;
  SimTime run = 0;
  for (int u = 0; u < p->nunits; u++) {
    SimTime x = unit_load(p, add, u);
    if (x > cap) return FALSE;
    if (run + x > cap) {
      if (++runs > stages) return FALSE;
      run = 0;
    }
    run += x;
  }
  return TRUE;
}

/* The least max over cuts of the stages' summed loads (compute, plus @add per unit). */
static SimTime least_max_load(const SrchPipeline *p, const SimTime *add) {
  SimTime lo = 0, hi = 0;
  for (int u = 0; u < p->nunits; u++) {
    lo = MAX(lo, unit_load(p, add, u));
    hi += unit_load(p, add, u);
  }
  while (lo < hi) { /* the least cap that fits: binary search on integers */
    SimTime mid = lo + (hi - lo) / 2;
    if (fits_cap(p, add, p->nstages, mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Whether the units split into at most @stages runs with lead + m L <= @cap each (the lead
 * at the run's first unit, L its loads: compute and gaps); greedy: each run takes units while
 * it can. Exact: a run [c, j) that fits still fits from any later start g < j, as lead(g) -
 * lead(c) <= the compute of [c, g) (srch_pipeline_measure) <= m times it; and so fewer runs
 * can always be split further. */
static gboolean fits_span(const SrchPipeline *p, int stages, SimTime cap) {
  guint64 m = (guint64)p->microbatches;
  int runs = 1;
  SimTime lead = 0, run = 0; /* the current run's lead and loads */
  for (int u = 0; u < p->nunits; u++) {
    SimTime x = unit_load(p, p->gap, u);
    if (saturating_add(lead, saturating_mul(saturating_add(run, x), m)) > cap) {
      if (run == 0 || ++runs > stages) return FALSE;
      lead = p->lead ? p->lead[u] : 0; /* u starts the next run */
      run = 0;
      if (saturating_add(lead, saturating_mul(x, m)) > cap) return FALSE;
    }
    run += x;
  }
  return TRUE;
}

SimTime srch_pipeline_least_span(const SrchPipeline *p) {
  g_return_val_if_fail(p && p->compute && p->nstages >= 1 && p->microbatches >= 1, 0);
  guint64 m = (guint64)p->microbatches;
  SimTime lo = 0, total = 0;
  for (int u = 0; u < p->nunits; u++) {
    lo = MAX(lo, saturating_mul(unit_load(p, p->gap, u), m));
    total = saturating_add(total, unit_load(p, p->gap, u));
  }
  SimTime hi = MAX(lo, saturating_mul(total, m)); /* one run holds every unit, lead 0 */
  while (lo < hi) {
    SimTime mid = lo + (hi - lo) / 2;
    if (fits_span(p, p->nstages, mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

SimTime srch_pipeline_least_bottleneck(const SrchPipeline *p) {
  g_return_val_if_fail(p && p->compute && p->nstages >= 1, 0);
  return least_max_load(p, NULL);
}

SimTime srch_pipeline_least_busy(const SrchPipeline *p) {
  g_return_val_if_fail(p && p->compute && p->nstages >= 1, 0);
  return least_max_load(p, p->gap);
}

SimTime srch_pipeline_dp(const SrchPipeline *p, int *cuts) {
  return srch_pipeline_dp_capped(p, NO_COST, cuts);
}

SimTime srch_pipeline_dp_capped(const SrchPipeline *p, SimTime cap, int *cuts) {
  g_return_val_if_fail(p && p->compute && cuts, NO_COST);
  int S = p->nstages, L = p->nunits, W = L + 1;
  Dp d = {.p = p, .S = S, .L = L, .cap = cap};
  d.prefix = g_new0(SimTime, W);
  for (int u = 0; u < L; u++) d.prefix[u + 1] = d.prefix[u] + p->compute[u];
  if (cap != NO_COST) {
    d.load = g_new0(SimTime, W);
    for (int u = 0; u < L; u++) d.load[u + 1] = d.load[u] + unit_load(p, p->gap, u);
  }
  d.value = g_new(SimTime, (gsize)S * W);
  d.from = g_new(int, (gsize)S * W);
  for (gsize k = 0; k < (gsize)S * W; k++) d.value[k] = NO_COST;

  /* The least sum without a bound bounds every cut's sum from below; the least maximum is the
   * smallest bottleneck worth trying. */
  SimTime least_sum = dp_run(&d, NO_COST), best = NO_COST;
  if (least_sum != NO_COST) { /* else no cut is under the cap */
    dp_cuts(&d, cuts);
    best = srch_pipeline_objective(p, cuts);
  }
  if (p->microbatches > 1 && least_sum != NO_COST) {
    /* The smallest bottleneck worth trying: no cut's maximum is below the least bottleneck of
     * compute alone (transfers only add). Below the least maximum with transfers the first
     * DP finds no cut and the loop stops, so this costs at most that one DP, where the least
     * maximum with transfers took a full DP of its own (a third of the dp search's time on
     * Llama 3.1 405B / 512 H100s, 2026-12-02). */
    SimTime least_max = srch_pipeline_least_bottleneck(p);
    /* Bottlenecks above (best - least_sum) / (m - 1) cannot beat the cut in hand: leaving
     * them out keeps the list short (it could hold S L^2 / 2 entries). */
    SimTime most = (best - least_sum) / (SimTime)(p->microbatches - 1);
    GArray *candidates = g_array_new(FALSE, FALSE, sizeof(SimTime));
    for (int s = 0; s < S; s++)
      for (int j = s + 1; j <= L - (S - 1 - s); j++)
        for (int i = s == 0 ? 0 : j - 1; i >= (s == 0 ? 0 : s); i--) {
          if (d.prefix[j] - d.prefix[i] > most) break; /* and every earlier start */
          SimTime t = cost(&d, s, i, j);
          if (t >= least_max && t <= most) g_array_append_val(candidates, t);
        }
    qsort(candidates->data, candidates->len, sizeof(SimTime), compare_time);
    /* Descending: the least-sum cut under bound B has some maximum A <= B, and is also the
     * least-sum cut under every bound in [A, B]; the next bound worth a DP is the largest
     * candidate below A. So each DP finds a new (maximum, sum) trade-off, and the optimum's
     * maximum M* is never skipped: while the bound is >= M*, the optimum is feasible, the cut
     * found has a sum <= its sum, and either its maximum is <= M* (it is optimal) or the next
     * bound is still >= M* (M* is a candidate below A). */
    g_autofree int *trial = g_new(int, S + 1);
    const SimTime *list = (const SimTime *)candidates->data;
    int k = (int)candidates->len - 1;
    while (k >= 0) {
      SimTime bound = list[k];
      if (dp_run(&d, bound) == NO_COST) break; /* no cut this low: none lower either */
      dp_cuts(&d, trial);
      SimTime t = srch_pipeline_objective(p, trial), max = 0;
      for (int s = 0; s < S; s++) max = MAX(max, srch_pipeline_stage_cost(p, s, trial[s], trial[s + 1]));
      if (t < best) {
        best = t;
        memcpy(cuts, trial, sizeof(int) * (gsize)(S + 1));
        most = (best - least_sum) / (SimTime)(p->microbatches - 1);
      }
      if (max == 0) break;
      SimTime limit = MIN(max - 1, most);
      int lo = 0, hi = k - 1; /* the largest index below k with list[index] <= limit */
      k = -1;
      while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (list[mid] <= limit) {
          k = mid;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
    }
    g_array_free(candidates, TRUE);
  }
  g_free(d.prefix);
  g_free(d.load);
  g_free(d.value);
  g_free(d.from);
  return best;
}

gboolean srch_pipeline_cuts_of(const SrchPipeline *p, const MdlStrategy *s, int *cuts) {
  if (s->virtual_stages > 1 || s->num_stages > p->nunits) return FALSE;
  int stage = 0;
  cuts[0] = 0;
  for (int u = 0; u < p->nunits; u++) {
    int first = s->configs[p->first_op[u]].stage;
    for (int o = p->first_op[u]; o < p->first_op[u + 1]; o++)
      if (s->configs[o].stage != first) return FALSE;
    if (first == stage) continue;
    if (first != stage + 1 || u == 0) return FALSE;
    cuts[++stage] = u;
  }
  if (stage != s->num_stages - 1) return FALSE;
  cuts[s->num_stages] = p->nunits;
  return TRUE;
}

MdlStrategy *srch_pipeline_strategy(const SrchPipeline *p, const MdlGraph *graph,
                                    const MdlStrategy *one, const int *cuts, MdlSchedule schedule,
                                    const DevCluster *cluster, GError **error) {
  g_return_val_if_fail(p && graph && one && cuts && one->meshes->len == 1, NULL);
  if (schedule == MDL_SCHEDULE_INTERLEAVED) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "pipeline cuts: the interleaved schedule keeps Megatron's even chunks");
    return NULL;
  }
  int S = p->nstages;
  MdlStrategy *s = mdl_strategy_copy(one);
  const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
  int ndims = mesh->ndims, size = mesh->ndevices, shape[MDL_MAX_MESH_AXES];
  memcpy(shape, mesh->shape, sizeof shape);
  g_autofree int *base = g_memdup2(mesh->devices, sizeof(int) * (gsize)size);
  g_autofree int *devices = g_new(int, size);
  for (int stage = 1; stage < S; stage++) {
    for (int i = 0; i < size; i++) devices[i] = base[i] + stage * size;
    mdl_strategy_add_mesh(s, ndims, shape, devices);
  }
  for (int stage = 0; stage < S; stage++)
    for (int o = p->first_op[cuts[stage]]; o < p->first_op[cuts[stage + 1]]; o++) {
      s->configs[o].mesh = stage;
      s->configs[o].stage = stage;
    }
  s->num_stages = S;
  s->virtual_stages = 1;
  s->vp = 1;
  s->pp = S;
  s->schedule = schedule;
  g_free(s->name);
  s->name = g_strdup("pipeline-dp");
  if (!mdl_strategy_validate(s, graph, cluster, error)) {
    mdl_strategy_free(s);
    return NULL;
  }
  return s;
}

char *srch_pipeline_describe(const SrchPipeline *p, const MdlGraph *graph, const int *cuts) {
  GString *out = g_string_new(NULL);
  int first_layered = p->nunits;
  for (int u = p->nunits - 1; u >= 0; u--)
    if (mdl_graph_op(graph, p->first_op[u])->layer >= 0) first_layered = u;
  for (int s = 0; s < p->nstages; s++) {
    int layers = 0, before = 0, after = 0;
    for (int u = cuts[s]; u < cuts[s + 1]; u++) {
      if (mdl_graph_op(graph, p->first_op[u])->layer >= 0) layers++;
      else if (u < first_layered) before++;
      else after++;
    }
    if (s > 0) g_string_append_c(out, '/');
    if (graph->num_layers <= 0) {
      g_string_append_printf(out, "%d", cuts[s + 1] - cuts[s]);
      continue;
    }
    if (before) g_string_append(out, "e+");
    g_string_append_printf(out, "%d", layers);
    if (after) g_string_append(out, "+h");
  }
  return g_string_free(out, FALSE);
}
