/* sim/delta — see sim_delta.h. The state is the last run, its graph's edge list (the CSR the
 * engine reads cannot be cut into segments), the segment marks of its build and the builder
 * that made it, kept alive for its per-op task bases, program order and representatives. */
#include "sim/sim_delta.h"

#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

struct SimDelta {
  const MdlGraph *graph;
  const DevCluster *cluster;
  const CmParams *params;
  SimOptions options;
  MdlStrategy *strategy;     /* the current strategy, owned; run and builder borrow it */
  Builder b;                 /* the builder of the current graph (b.tg NULL between builds) */
  gboolean crossmesh;        /* whether the current graph has cross-mesh moves */
  SimRun *run;
  GArray *edges;             /* the current graph's edges (uint32_t pairs), before CSR */
  GArray *marks;             /* SbMark: each segment's start, then the end */
  SbMark compute;            /* the end of the compute tasks and their program-order edges */
  guint8 *tensor_affected;   /* scratch, per tensor */
  guint8 *op_affected;       /* scratch, per op */
  int *changed;              /* scratch: ops whose config changed */
  SimDeltaStats stats;
};

SimDelta *sim_delta_new(const MdlGraph *graph, const DevCluster *cluster, const CmParams *params,
                        const SimOptions *options) {
  g_return_val_if_fail(graph && cluster && params && options, NULL);
  SimDelta *d = g_new0(SimDelta, 1);
  d->graph = graph;
  d->cluster = cluster;
  d->params = params;
  d->options = *options;
  d->tensor_affected = g_new0(guint8, MAX(mdl_graph_num_tensors(graph), 1));
  d->op_affected = g_new0(guint8, MAX(mdl_graph_num_ops(graph), 1));
  d->changed = g_new(int, MAX(mdl_graph_num_ops(graph), 1));
  return d;
}

/* Drops the current state (run, builder, strategy). */
static void clear_state(SimDelta *d) {
  sim_run_free(d->run);
  d->run = NULL;
  sb_builder_clear(&d->b);
  memset(&d->b, 0, sizeof d->b);
  mdl_strategy_free(d->strategy);
  d->strategy = NULL;
  if (d->edges) g_array_unref(d->edges);
  d->edges = NULL;
  if (d->marks) g_array_unref(d->marks);
  d->marks = NULL;
}

void sim_delta_free(SimDelta *d) {
  if (!d) return;
  clear_state(d);
  g_free(d->tensor_affected);
  g_free(d->op_affected);
  g_free(d->changed);
  g_free(d);
}

const SimRun *sim_delta_run(const SimDelta *d) { return d->run; }
const SimDeltaStats *sim_delta_stats(const SimDelta *d) { return &d->stats; }

static GArray *copy_edges(const SimTaskGraph *tg) {
  GArray *e = g_array_sized_new(FALSE, FALSE, sizeof(uint32_t), tg->edges->len);
  g_array_append_vals(e, tg->edges->data, tg->edges->len);
  return e;
}

/* The full simulation, keeping its builder and marks. */
static gboolean simulate_full(SimDelta *d, const MdlStrategy *strategy, GError **error) {
  gint64 t0 = g_get_monotonic_time();
  MdlStrategy *copy = mdl_strategy_copy(strategy);
  Builder b;
  SimEstimate estimate;
  if (!sb_builder_init(&b, d->graph, copy, d->cluster, d->params, &d->options, TRUE, &estimate,
                       error) ||
      !sb_estimate_tasks(&b, &estimate, error) || !sim_estimate_check(&estimate, error)) {
    if (b.tg) sim_task_graph_free(b.tg);
    sb_builder_clear(&b);
    mdl_strategy_free(copy);
    return FALSE;
  }
  gboolean crossmesh = sb_needs_crossmesh(&b);
  b.marks = g_array_new(FALSE, FALSE, sizeof(SbMark));
  sb_build_compute(&b);
  SbMark compute = sb_mark(&b);
  sb_build_segments(&b);
  GArray *edges = copy_edges(b.tg);
  SimTaskGraph *tg = b.tg;
  b.tg = NULL;
  sim_task_graph_finish(tg);
  SimRun *run = sim_run_from_graph(d->graph, copy, d->cluster, d->params, &d->options, tg, NULL,
                                   t0, g_get_monotonic_time(), error);
  if (!run) {
    g_array_unref(edges);
    sb_builder_clear(&b);
    mdl_strategy_free(copy);
    return FALSE;
  }
  clear_state(d);
  d->strategy = copy;
  d->b = b;
  d->marks = d->b.marks;
  d->b.marks = NULL;
  d->crossmesh = crossmesh;
  d->run = run;
  d->edges = edges;
  d->compute = compute;
  d->stats.full++;
  return TRUE;
}

/* Appends @old's range [@from, @to) of one segment to @tg, its task ids shifted to where it
 * lands; ids below @ncompute (compute tasks) stay. */
static void copy_segment(SimTaskGraph *tg, const SimTaskGraph *old, const GArray *old_edges,
                         const SbMark *from, const SbMark *to, uint32_t ncompute) {
  uint32_t base = tg->tasks->len, nt = to->task - from->task;
  uint32_t rbase = tg->task_resources->len, nr = to->res - from->res;
  g_array_set_size(tg->tasks, base + nt);
  SimTask *dst = &g_array_index(tg->tasks, SimTask, base);
  memcpy(dst, &g_array_index(old->tasks, SimTask, from->task), sizeof(SimTask) * nt);
  for (uint32_t i = 0; i < nt; i++) dst[i].res_begin = dst[i].res_begin - from->res + rbase;
  g_array_append_vals(tg->task_resources, &g_array_index(old->task_resources, uint32_t, from->res), nr);
  /* Edges and spans name tasks of this segment or compute tasks (sim_build-int.h). */
  const uint32_t *src[2] = {&g_array_index(old_edges, uint32_t, from->edge),
                            &g_array_index(old->spans, uint32_t, from->span)};
  uint32_t counts[2] = {to->edge - from->edge, to->span - from->span};
  GArray *outs[2] = {tg->edges, tg->spans};
  for (int k = 0; k < 2; k++) {
    guint at = outs[k]->len;
    g_array_set_size(outs[k], at + counts[k]);
    uint32_t *out = &g_array_index(outs[k], uint32_t, at);
    for (uint32_t i = 0; i < counts[k]; i++) {
      uint32_t x = src[k][i];
      if (x >= ncompute) {
        g_assert(x >= from->task && x < to->task);
        x = x - from->task + base;
      }
      out[i] = x;
    }
  }
}

static gboolean same_representatives(const Builder *b, int nm, const int *nrep, int **rep_idx) {
  for (int m = 0; m < nm; m++) {
    if (b->nrep[m] != nrep[m]) return FALSE;
    if (memcmp(b->rep_idx[m], rep_idx[m], sizeof(int) * (gsize)nrep[m]) != 0) return FALSE;
  }
  return TRUE;
}

/* Outcome of a delta attempt. */
typedef enum { DELTA_DONE, DELTA_FULL, DELTA_ERROR } DeltaOutcome;

/* Marks the tensors of the @n changed ops (every operand: a segment of a tensor depends on
 * the configs of its producer and readers), the ops touching those tensors (their per-op
 * segments read the tensors' layouts) and whether a weight is among them (the gradient sync
 * reads every weight's readers). */
static gboolean mark_affected(SimDelta *d, int n) {
  const MdlGraph *g = d->graph;
  gboolean weight = FALSE;
  for (int i = 0; i < n; i++) {
    const MdlOp *op = mdl_graph_op(g, d->changed[i]);
    for (int k = -1; k < op->ninputs; k++) {
      int t = k < 0 ? op->output.tensor : op->inputs[k].tensor;
      if (d->tensor_affected[t]) continue;
      d->tensor_affected[t] = 1;
      weight |= mdl_graph_tensor(g, t)->is_weight;
      int p = mdl_graph_tensor(g, t)->producer;
      if (p >= 0) d->op_affected[p] = 1;
      GArray *users = d->b.users[t];
      for (guint u = 0; u < users->len; u++) d->op_affected[g_array_index(users, int, u)] = 1;
    }
  }
  return weight;
}

static void unmark_affected(SimDelta *d, int n) {
  const MdlGraph *g = d->graph;
  for (int i = 0; i < n; i++) {
    const MdlOp *op = mdl_graph_op(g, d->changed[i]);
    for (int k = -1; k < op->ninputs; k++) {
      int t = k < 0 ? op->output.tensor : op->inputs[k].tensor;
      d->tensor_affected[t] = 0;
      int p = mdl_graph_tensor(g, t)->producer;
      if (p >= 0) d->op_affected[p] = 0;
      GArray *users = d->b.users[t];
      for (guint u = 0; u < users->len; u++) d->op_affected[g_array_index(users, int, u)] = 0;
    }
  }
}

static DeltaOutcome simulate_delta(SimDelta *d, const MdlStrategy *strategy, GError **error) {
  gint64 t0 = g_get_monotonic_time();
  if (!d->run || !mdl_strategy_same_except_splits(d->strategy, strategy)) return DELTA_FULL;
  int nops = strategy->num_ops, n = 0;
  for (int o = 0; o < nops; o++)
    if (memcmp(d->strategy->configs[o].split, strategy->configs[o].split,
               sizeof strategy->configs[o].split) != 0)
      d->changed[n++] = o;
  if (!mdl_strategy_validate(strategy, d->graph, d->cluster, error)) return DELTA_ERROR;
  if (g_strcmp0(d->strategy->name, strategy->name) != 0) {
    g_free(d->strategy->name);
    d->strategy->name = g_strdup(strategy->name);
  }
  if (n == 0) {
    d->stats.unchanged++;
    return DELTA_DONE;
  }
  /* Apply the new splits; undone if the delta cannot go on. */
  g_autofree MdlOpConfig *saved = g_new(MdlOpConfig, n);
  for (int i = 0; i < n; i++) {
    saved[i] = d->strategy->configs[d->changed[i]];
    d->strategy->configs[d->changed[i]] = strategy->configs[d->changed[i]];
  }
  Builder *b = &d->b;
  int nm = (int)d->strategy->meshes->len;
  /* The representatives the full build would choose must be the current ones. */
  int *nrep = b->nrep, **rep_idx = b->rep_idx, **rep_pos = b->rep_pos, **rep_of = b->rep_of;
  gboolean symmetric = b->symmetric;
  const SimTaskGraph *old = d->run->tasks;
  SimTaskGraph *tg = sim_task_graph_new(old->num_devices);
  tg->num_resources = old->num_resources;
  tg->symmetric = old->symmetric;
  tg->simulated_devices = old->simulated_devices;
  b->tg = tg;
  gboolean crossmesh = sb_needs_crossmesh(b);
  gboolean same = crossmesh == d->crossmesh;
  if (same) {
    sb_choose_representatives(b, !d->options.no_symmetry && !crossmesh);
    same = b->symmetric == symmetric && same_representatives(b, nm, nrep, rep_idx);
    sb_free_representatives(b);
    b->nrep = nrep, b->rep_idx = rep_idx, b->rep_pos = rep_pos, b->rep_of = rep_of;
    b->symmetric = symmetric;
  }
  SimEstimate estimate = {0};
  estimate.device_slots = sb_device_slots(d->graph, d->strategy);
  /* Plans the cross-mesh moves (cached) and checks the limits, as the full build does. */
  if (!same || !sb_estimate_tasks(b, &estimate, error) || !sim_estimate_check(&estimate, error)) {
    for (int i = 0; i < n; i++) d->strategy->configs[d->changed[i]] = saved[i];
    sim_task_graph_free(tg);
    b->tg = NULL;
    return same ? DELTA_ERROR : DELTA_FULL;
  }
  /* The compute tasks and their program order, as they were, with new durations. */
  SbMark zero = {0, 0, 0, 0};
  copy_segment(tg, old, d->edges, &zero, &d->compute, d->compute.task);
  for (int i = 0; i < n; i++) sb_set_compute_durations(b, d->changed[i]);
  gboolean weight = mark_affected(d, n);
  GArray *marks = g_array_sized_new(FALSE, FALSE, sizeof(SbMark), d->marks->len);
  const SbMark *old_marks = (const SbMark *)d->marks->data;
  guint seg = 0;
  for (int pass = 0; pass < SB_PASS_COUNT; pass++) {
    int count = sb_pass_segments(b, (SbPass)pass);
    gboolean per_tensor = sb_pass_per_tensor((SbPass)pass);
    for (int i = 0; i < count; i++, seg++) {
      SbMark mark = sb_mark(b);
      g_array_append_val(marks, mark);
      gboolean redo = pass == SB_PASS_SYNC ? weight
                      : per_tensor         ? d->tensor_affected[i]
                                           : d->op_affected[i];
      if (redo) {
        if (pass == SB_PASS_FORWARD) g_ptr_array_set_size(b->conversions[i], 0);
        if (pass == SB_PASS_RECOMPUTE) g_ptr_array_set_size(b->rec_conversions[i], 0);
        sb_run_segment(b, (SbPass)pass, i);
        d->stats.segments_rebuilt++;
        d->stats.tasks_rebuilt += tg->tasks->len - mark.task;
      } else {
        copy_segment(tg, old, d->edges, &old_marks[seg], &old_marks[seg + 1], d->compute.task);
        d->stats.segments_copied++;
        d->stats.tasks_copied += tg->tasks->len - mark.task;
      }
    }
  }
  g_assert(seg + 1 == d->marks->len);
  SbMark end = sb_mark(b);
  g_array_append_val(marks, end);
  unmark_affected(d, n);
  b->tg = NULL;
  GArray *edges = copy_edges(tg);
  sim_task_graph_finish(tg);
  gint64 t1 = g_get_monotonic_time();
  SimRun *run = sim_run_from_graph(d->graph, d->strategy, d->cluster, d->params, &d->options, tg,
                                   NULL, t0, t1, error);
  if (!run) { /* cannot happen for a graph the full build would make; kept for safety */
    for (int i = 0; i < n; i++) d->strategy->configs[d->changed[i]] = saved[i];
    g_array_unref(edges);
    g_array_unref(marks);
    return DELTA_ERROR;
  }
  sim_run_free(d->run);
  d->run = run;
  g_array_unref(d->edges);
  d->edges = edges;
  g_array_unref(d->marks);
  d->marks = marks;
  d->stats.delta++;
  return DELTA_DONE;
}

gboolean sim_delta_simulate(SimDelta *d, const MdlStrategy *strategy, GError **error) {
  g_return_val_if_fail(d && strategy, FALSE);
  g_return_val_if_fail(strategy->num_ops == mdl_graph_num_ops(d->graph), FALSE);
  switch (simulate_delta(d, strategy, error)) {
  case DELTA_DONE: return TRUE;
  case DELTA_ERROR: return FALSE;
  case DELTA_FULL: break;
  }
  return simulate_full(d, strategy, error);
}
