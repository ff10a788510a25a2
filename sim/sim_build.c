/* sim/build — the task graph of one training iteration.
 *
 * Tasks: for every op, microbatch and device of the op's mesh a forward and a backward compute
 * task; communication wherever a consumer needs a tensor in another layout than its producer
 * left it (SBP resharding per mesh axis, DESIGN.md: P->B all-reduce, P->S reduce-scatter,
 * S->B all-gather, S(i)->S(j) all-to-all, B->S a free local slice), in the backward pass the
 * reverse flow (an input Broadcast on an axis the op splits yields a Partial-sum gradient);
 * gradient all-reduce over the axes a weight is replicated on, after the last backward (or
 * W) of its ops in program order; one optimizer step per device.
 * Compute streams follow program order: each pipeline rank's schedule units (phase, chunk,
 * microbatch; sim/sim_schedule.h), the chunk's ops in topological order (forward) or reverse
 * (backward), chained by edges. Under weight delay an op's backward is two tasks, B (dX, which
 * the producers wait for) and W (dW, which the gradient sync waits for), in separate units;
 * under Megatron's overlap of a tensor-parallel linear layer's input-gradient collective with
 * its weight-gradient GEMM (sb_overlap_split) B and W follow each other in one unit, and the
 * collective waits for B only (sb_backward_segment), so it runs beside W.
 * Memory options (issue 3): under recomputation a recomputed op's forward runs again (R) right
 * before its group's backward, its resharding collectives too; under sequence parallelism an
 * input kept as its shard is all-gathered again for the backward; ZeRO turns the gradient
 * all-reduce into reduce-scatters and parameter all-gathers (add_gradient_sync_and_optimizer,
 * add_parameter_gathers).
 * Between different meshes (pipeline stages) a tensor moves by send/recv to the device with
 * the same mesh index (after the source mesh reshapes it into the destination's layout when
 * the shapes agree); issue 4 replaces this with the cross-mesh resharding paper's unit tasks.
 * Task ids are assigned in a fixed order, so the graph, and the timeline, are deterministic.
 * A graph for merging is stamped per template where it can be: a one-device unit's program
 * entries from its template (stamp_unit), and a data-edge loop whose every edge would repeat
 * the chain is skipped whole, proven per compute block from the templates (block_prev,
 * sb_chain_repeats_block); SimOptions.build_each_microbatch builds both entry by entry and
 * tests/test-replay.c compares the graphs. (175B interleaved point, 2026-12-02, callgrind, 3
 * predictions: 770.4 M instructions before, 723.5 M after these two.) A stamped unit writes
 * its program entries and its first task's predecessor; the positions and the other
 * predecessors are written per template entry across all M microbatches at the end
 * (stamp_columns: a block's tasks are consecutive, so each is one vector-add run; 673.5 M ->
 * 663.6 M for 3 predictions, -1.5%).
 * sb_op_durations keeps each cm_kernel_time_profiled result under a key of its arguments and
 * the two op fields it reads (kind, dropout; kernel_time): the layers repeat them (175B
 * interleaved point, 3 predictions: 663.6 M -> 657.8 M instructions, sb_op_durations 18.8 M ->
 * 12.9 M; tests/test-replay.c /build/replay/kernel-memo compares every compute task's duration
 * with build_each_microbatch, which computes each, over the model zoo). What is left there is
 * the arguments themselves (layouts, shapes, bytes: ~2.8 M a prediction) and the GEMM beside a
 * collective (sb_gemm_beside_collective, ~1.5 M, 65 misses a prediction: its key holds the
 * mesh, and 16 stage meshes give 16 keys where one would do only if a collective's time were
 * shown not to depend on which devices form the group).
 * Tried, not kept or not done: memoizing all of sb_op_durations across the layers' identical
 * ops (5.8 M instructions a build, 1,157 ops): the key would have to cover everything the cost
 * model reads of an op, its tensors and their graph context (fp8 cast fusion, profiles,
 * overlap), which no checked property gives. Measured 2026-12-03 (b3eb382, per prediction):
 * sb_builder_init 4.0 M and sb_builder_clear 2.0 M instructions, of which the three containers
 * per tensor (conversions, rec_conversions, users: 1,738 tensors) took ~3.7 M to make, fill
 * and free. Since then the users are one block (SbUsers, sb_users_init, which
 * sim_bound.c shares) and a conversion list is made on its first use: sb_builder_init 4.03 ->
 * 2.06 M, sb_builder_clear 1.97 -> 0.81 M, the whole prediction 189.1 -> 186.0 M (callgrind,
 * `bench --suite predict --repeat 3` / 3, 175B interleaved point), page faults unchanged
 * (14,381 in the first prediction). sb_choose_representatives 1.1 M;
 * sb_estimate_tasks 3.7 M, of which sb_sync_items 0.8 M is computed again by the gradient
 * sync (handing it over is under 0.4% of a prediction). */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

#include "costmodel/cm_framework.h"

static double operand_bytes(const Builder *b, const MdlOp *op, const MdlOperand *opd,
                            gboolean is_output, const MdlOpConfig *c, const MdlMesh *mesh) {
  MdlLayout layout = mdl_layout_of_operand(op, opd, is_output, c, mesh);
  return mdl_layout_local_elements(b->g, opd->tensor, b->sample_tdim[opd->tensor], &layout, mesh,
                                   b->Msize) * b->dtype_bytes;
}

/* The key of cm_kernel_time_profiled(@b->p, device, @op, ...): its arguments and what it reads
 * of @op (kind and dropout only: cm_compute.c), each as one 64-bit word (a double's bits). */
static void kernel_key(const Builder *b, const MdlOp *op, DevDtype dtype, double flops,
                       double bytes, const CmGemmShape *shape, double elements, gboolean backward,
                       double fraction, uint64_t *key) {
  const CmGemmShape none = {0};
  const double words[8] = {flops, bytes, elements, fraction, (shape ? shape : &none)->m,
                           (shape ? shape : &none)->n, (shape ? shape : &none)->k,
                           (shape ? shape : &none)->batch};
  memcpy(key, words, sizeof words);
  key[8] = (uint64_t)op->kind | (uint64_t)dtype << 16 | (uint64_t)!!op->dropout << 32 |
           (uint64_t)!!backward << 33 | (uint64_t)(shape != NULL) << 34;
  key[9] = (uint64_t)(guintptr)b->p;
  key[10] = (uint64_t)(guintptr)&b->c->device;
  G_STATIC_ASSERT(SB_KERNEL_KEY_WORDS == 11);
}

/* cm_kernel_time_profiled for @b's device, from b->kernels where the same key was met (a pure
 * function of it), else computed and kept while the table is at most half full. */
static double kernel_time(const Builder *b, const MdlOp *op, DevDtype dtype, double flops,
                          double bytes, const CmGemmShape *shape, double elements,
                          gboolean backward, double fraction) {
  if (b->no_replay)
    return cm_kernel_time_profiled(b->p, &b->c->device, op, dtype, flops, bytes, shape, elements,
                                   backward, fraction);
  uint64_t key[SB_KERNEL_KEY_WORDS], h = 0;
  kernel_key(b, op, dtype, flops, bytes, shape, elements, backward, fraction, key);
  for (int i = 0; i < SB_KERNEL_KEY_WORDS; i++) h = (h ^ key[i]) * 0x9E3779B97F4A7C15u;
  SbKernelMemo *memo = ((Builder *)b)->kernels; /* a cache: results do not depend on it */
  guint at = (guint)(h >> 32) & (SB_KERNEL_MEMO - 1);
  while (memo[at].used) {
    if (memcmp(memo[at].key, key, sizeof key) == 0) return memo[at].time_s;
    at = (at + 1) & (SB_KERNEL_MEMO - 1);
  }
  double t = cm_kernel_time_profiled(b->p, &b->c->device, op, dtype, flops, bytes, shape,
                                     elements, backward, fraction);
  if (2 * b->nkernels < SB_KERNEL_MEMO) {
    memcpy(memo[at].key, key, sizeof key);
    memo[at].time_s = t;
    memo[at].used = TRUE;
    ((Builder *)b)->nkernels++;
  }
  return t;
}

/* Forward and backward kernel times of one shard of @o for one microbatch; under weight delay
 * or Megatron's overlap (sb_overlap_split) the backward splits into @bwd (B) and @wgt (W) by
 * cm_weight_grad_share, FLOPs and traffic alike; otherwise @wgt is 0. */
void sb_op_durations(const Builder *b, int o, SimTime *fwd, SimTime *bwd, SimTime *wgt) {
  const MdlOp *op = mdl_graph_op(b->g, o);
  const MdlOpConfig *c = cfg(b, o);
  const MdlMesh *mesh = mesh_of(b, o);
  double scale = 1.0, local[MDL_MAX_DIMS];
  for (int d = 0; d < op->ndims; d++) {
    local[d] = mdl_config_local_dim(op, d, c, mesh, b->Msize);
    scale *= local[d] / (double)op->dims[d].size;
  }
  double bytes = operand_bytes(b, op, &op->output, TRUE, c, mesh);
  double out_elems = bytes / b->dtype_bytes;
  for (int k = 0; k < op->ninputs; k++) bytes += operand_bytes(b, op, &op->inputs[k], FALSE, c, mesh);
  const DevKind *dev = &b->c->device;
  DevDtype dt = cm_op_dtype(op, b->s->dtype);
  /* Contractions run as GEMMs whose shape sets their tile and wave quantization: forward
   * (m, n, k); the input gradient dX = dY W^T as (m, k, n); the weight gradient dW = X^T dY as
   * (k, n, m). */
  CmGemmShape fs, xs, ws;
  gboolean gemm = cm_gemm_shape(op, local, &fs);
  if (gemm) {
    xs = (CmGemmShape){fs.m, fs.k, fs.n, fs.batch};
    ws = (CmGemmShape){fs.k, fs.n, fs.m, fs.batch};
  }
  /* The framework's own kernels for memory-bound ops (an unfused attention dropout, a fused
   * bias-dropout-add, ...) move their own traffic (cm_framework_traffic). */
  double traffic_fwd, traffic_bwd;
  gboolean traffic = cm_framework_traffic(cm_framework_get(b->s->framework), op,
                                          bytes / b->dtype_bytes - out_elems, out_elems,
                                          b->dtype_bytes, &traffic_fwd, &traffic_bwd);
  double fwd_s = kernel_time(b, op, dt, op->flops * scale, traffic ? traffic_fwd : bytes,
                             gemm ? &fs : NULL, out_elems, FALSE, 1.0);
  /* Backward reads dY and the saved inputs and writes dX/dW: twice the forward traffic, split
   * between the dX and dW kernels by their share of the work. */
  double bflops = mdl_op_backward_flops(b->g, op) * scale, bbytes = 2 * bytes;
  if (traffic) bbytes = traffic_bwd;
  double share = cm_weight_grad_share(b->g, op);
  double dx = share < 1 ? kernel_time(b, op, dt, bflops * (1 - share), bbytes * (1 - share),
                                      gemm ? &xs : NULL, out_elems, TRUE, 1 - share)
                        : 0;
  double dw = share > 0 ? kernel_time(b, op, dt, bflops * share, bbytes * share,
                                      gemm ? &ws : NULL, out_elems, TRUE, share)
                        : 0;
  gboolean overlapped = sb_overlap_split(b, o);
  if (overlapped) { /* beside NCCL kernels, on the SMs they leave (sim_build_overlap.c) */
    dx = sb_gemm_beside_collective(b, o, TRUE, dt, bflops * (1 - share), bbytes * (1 - share),
                                   gemm ? &xs : NULL, dx);
    dw = sb_gemm_beside_collective(b, o, FALSE, dt, bflops * share, bbytes * share,
                                   gemm ? &ws : NULL, dw);
  }
  if (cm_fp8_gemm(op, b->s->dtype)) { /* casts of X (forward) and dY (backward) to fp8 */
    double x = 0;
    for (int k = 0; k < op->ninputs; k++)
      if (!cm_fp8_cast_fused(b->g, op->inputs[k].tensor))
        x += operand_bytes(b, op, &op->inputs[k], FALSE, c, mesh) / b->dtype_bytes;
    fwd_s += cm_fp8_cast_time(b->p, dev, x);
    dx += cm_fp8_cast_time(b->p, dev, out_elems);
  }
  *fwd = sim_time_from_seconds(fwd_s);
  if (b->s->weight_delay || overlapped) {
    *bwd = sim_time_from_seconds(dx);
    *wgt = sim_time_from_seconds(dw);
  } else {
    *bwd = sim_time_from_seconds(dx + dw);
    *wgt = 0;
  }
}

void sb_set_compute_durations(Builder *b, int o) {
  SimTime durations[3];
  sb_op_durations(b, o, &durations[0], &durations[1], &durations[2]);
  const uint32_t bases[4] = {b->fwd_base[o], b->bwd_base[o], b->wgt_base[o], b->rec_base[o]};
  int m = cfg(b, o)->mesh;
  uint32_t count = (uint32_t)b->M * (uint32_t)b->nrep[m];
  for (int phase = 0; phase < 4; phase++) {
    if (bases[phase] == NO_TASK) continue;
    SimTime d = durations[phase == 3 ? 0 : phase];
    for (uint32_t i = 0; i < count; i++) sim_task_graph_task(b->tg, bases[phase] + i)->duration = d;
  }
}

static const SimTaskKind compute_kinds[4] = {SIM_TASK_FORWARD, SIM_TASK_BACKWARD,
                                             SIM_TASK_BACKWARD_WEIGHT, SIM_TASK_RECOMPUTE};

/* The compute tasks' ids: forward, backward, (weight delay) weight-gradient and
 * (recomputation) recomputed-forward blocks, in that order, each op's M x nrep tasks from its
 * base (microbatch after microbatch, representatives in order); the graph's task array grows
 * by them, written or not (write_compute_tasks). The ops' durations once. */
static void assign_compute_ids(Builder *b) {
  uint32_t *bases[4] = {b->fwd_base, b->bwd_base, b->wgt_base, b->rec_base};
  b->op_durations = g_new(SimTime, 3 * (gsize)b->nops);
  for (int o = 0; o < b->nops; o++)
    sb_op_durations(b, o, &b->op_durations[3 * o], &b->op_durations[3 * o + 1],
                    &b->op_durations[3 * o + 2]);
  for (int phase = 0; phase < 4; phase++)
    for (int o = 0; o < b->nops; o++) {
      bases[phase][o] = NO_TASK;
      if (phase == 2 && !sb_has_weight_task(b, o)) continue; /* its dW, if any, is in B */
      if (phase == 3 && b->group[o] < 0) continue;
      bases[phase][o] = sim_task_graph_size(b->tg);
      g_array_set_size(b->tg->tasks, bases[phase][o] + (guint)(b->M * b->nrep[cfg(b, o)->mesh]));
    }
}

/* A block's tasks' duration (a recomputation re-runs the forward). */
static SimTime block_duration(const Builder *b, int phase, int o) {
  return b->op_durations[3 * o + (phase == 3 ? 0 : phase)];
}

/* The compute tasks' entries, one resource each, written in place block by block. */
static void write_compute_tasks(Builder *b) {
  const uint32_t *bases[4] = {b->fwd_base, b->bwd_base, b->wgt_base, b->rec_base};
  SimTask t = {0};
  t.tensor = -1;
  t.nres = 1;
  for (int phase = 0; phase < 4; phase++) {
    for (int o = 0; o < b->nops; o++) {
      if (bases[phase][o] == NO_TASK) continue;
      const MdlMesh *mesh = mesh_of(b, o);
      t.kind = (uint8_t)compute_kinds[phase];
      t.duration = block_duration(b, phase, o);
      t.op = o;
      int m = cfg(b, o)->mesh, nrep = b->nrep[m];
      guint r0 = b->tg->task_resources->len, count = (guint)(b->M * nrep);
      g_array_set_size(b->tg->task_resources, r0 + count);
      SimTask *tasks = (SimTask *)b->tg->tasks->data + bases[phase][o];
      uint32_t *res = (uint32_t *)b->tg->task_resources->data + r0;
      for (int mb = 0; mb < b->M; mb++) {
        t.microbatch = mb;
        for (int r = 0; r < nrep; r++) {
          guint k = (guint)(mb * nrep + r);
          t.res_begin = r0 + k;
          tasks[k] = t;
          res[k] = sim_resource_compute(mesh->devices[b->rep_idx[m][r]]);
        }
      }
    }
  }
}

/* One entry of a unit's chain template (chain_compute): the block (kind, op) whose task for
 * microbatch mb and the @nrep representatives r of its mesh is base + mb * nrep + r, on device
 * devices[rep_idx[r]]. */
typedef struct {
  uint32_t base, block; /* block: kind * nops + op (SimTaskGraph.program_block) */
  int nrep;
  const int *rep_idx, *devices;
} ChainEntry;

static ChainEntry chain_entry(const Builder *b, int o, int phase) {
  const uint32_t *bases[4] = {b->fwd_base, b->bwd_base, b->wgt_base, b->rec_base};
  int m = cfg(b, o)->mesh;
  return (ChainEntry){bases[phase][o], (uint32_t)(phase * b->nops + o), b->nrep[m], b->rep_idx[m],
                      mesh_of(b, o)->devices};
}

/* Appends entry @e's tasks for microbatch @mb to its simulated devices' programs (@prev: each
 * device's last task so far). */
static inline void chain_op(Builder *b, uint32_t *prev, const ChainEntry *e, int mb) {
  /* the builder's arrays in locals: the stores below cannot then be taken to change them */
  uint32_t *restrict program = b->tg->program, *restrict block = b->tg->program_block;
  uint32_t *restrict fill = b->program_fill, *restrict chain_prev = b->chain_prev;
  uint32_t *restrict pos = b->tg->program_pos;
  uint32_t *chain_next = b->chain_next;
  gboolean edges = !b->for_merge;
  for (int r = 0; r < e->nrep; r++) {
    uint32_t t = e->base + (uint32_t)(mb * e->nrep + r);
    int d = e->devices[e->rep_idx[r]];
    uint32_t at = fill[d]++, p = prev[d];
    chain_prev[t] = p;
    if (block) block[at] = e->block, pos[t] = at;
    program[at] = t;
    if (p != NO_TASK) {
      if (chain_next) chain_next[p] = t;
      if (edges) sim_task_graph_edge(b->tg, p, t);
    }
    prev[d] = t;
  }
}

/* chain_op for every entry of a template @e (@n of them) whose entries all have one
 * representative on one device @d: the unit of microbatch @mb in one loop, the device's
 * fill and last task in registers (the same stores as chain_op's, in the same order). */
static void chain_unit_one_device(Builder *b, uint32_t *prev, const ChainEntry *e, int n, int d,
                                  int mb) {
  uint32_t *restrict program = b->tg->program, *restrict block = b->tg->program_block;
  uint32_t *restrict chain_prev = b->chain_prev, *restrict pos = b->tg->program_pos;
  uint32_t *chain_next = b->chain_next;
  uint32_t at = b->program_fill[d], p = prev[d];
  for (int k = 0; k < n; k++, at++) {
    uint32_t t = e[k].base + (uint32_t)mb; /* base + mb * nrep + r, nrep 1 */
    chain_prev[t] = p;
    if (block) block[at] = e[k].block, pos[t] = at;
    program[at] = t;
    if (p != NO_TASK) {
      if (chain_next) chain_next[p] = t;
      if (!b->for_merge) sim_task_graph_edge(b->tg, p, t);
    }
    p = t;
  }
  b->program_fill[d] = at;
  prev[d] = p;
}

/* A one-device template's bases and blocks side by side (stamp_unit), made with it, and
 * where each microbatch's unit starts in its device's program (stamp_columns). */
typedef struct {
  uint32_t *base, *block, *start;
  int units; /* stamped so far */
} Stamp;

static Stamp stamp_new(const ChainEntry *e, int n, int M) {
  Stamp s = {g_new(uint32_t, (gsize)n + 1), g_new(uint32_t, (gsize)n + 1),
             g_new(uint32_t, (gsize)M + 1), 0};
  for (int k = 0; k < n; k++) s.base[k] = e[k].base, s.block[k] = e[k].block;
  return s;
}

/* to[i] = from[i] + add for i < n, eight at a time (straight-line code the compiler turns
 * into vector adds). */
static void add_to_each(uint32_t *restrict to, const uint32_t *restrict from, uint32_t add,
                        gsize n) {
  gsize i = 0;
  for (; i + 8 <= n; i += 8) {
    to[i] = from[i] + add, to[i + 1] = from[i + 1] + add;
    to[i + 2] = from[i + 2] + add, to[i + 3] = from[i + 3] + add;
    to[i + 4] = from[i + 4] + add, to[i + 5] = from[i + 5] + add;
    to[i + 6] = from[i + 6] + add, to[i + 7] = from[i + 7] + add;
  }
  for (; i < n; i++) to[i] = from[i] + add;
}

/* chain_unit_one_device in a graph for merging where nothing runs ahead (no edges, no
 * chain_next), by the unit's template: its blocks copied from the template, its tasks (base +
 * mb) written to the program, its first task's predecessor (the device's last), and where it
 * starts noted; the other entries' positions and predecessors are written per entry across
 * every microbatch once every unit is (stamp_columns). */
static void stamp_unit(Builder *b, uint32_t *prev, Stamp *s, int n, int d, int mb) {
  uint32_t at = b->program_fill[d];
  g_assert(s->units < b->M);
  s->start[mb] = at;
  s->units++;
  memcpy(b->tg->program_block + at, s->block, sizeof(uint32_t) * (gsize)n);
  add_to_each(b->tg->program + at, s->base, (uint32_t)mb, (gsize)n);
  b->chain_prev[s->base[0] + (uint32_t)mb] = prev[d];
  b->program_fill[d] = at + (uint32_t)n;
  prev[d] = s->base[n - 1] + (uint32_t)mb;
}

/* The rest of stamp_unit for template @s (@n entries) once its M units are stamped, the same
 * values chain_unit_one_device writes: entry k's task for microbatch mb (base[k] + mb) is at
 * start[mb] + k and, for k > 0, follows entry k - 1's (base[k - 1] + mb); a block's M tasks are
 * consecutive, so each entry's are written in one run (@microbatches: 0, 1, ..., M - 1). */
static void stamp_columns(Builder *b, const Stamp *s, int n, const uint32_t *microbatches) {
  g_assert(s->units == b->M); /* each microbatch's unit once: every start written */
  for (int k = 0; k < n; k++) {
    add_to_each(b->tg->program_pos + s->base[k], s->start, (uint32_t)k, (gsize)b->M);
    if (k > 0) add_to_each(b->chain_prev + s->base[k], microbatches, s->base[k - 1], (gsize)b->M);
  }
}

/* The one device of template @e (@n entries) where each entry has one representative there;
 * -1 otherwise. */
static int template_device(const ChainEntry *e, int n) {
  int d = n ? e[0].devices[e[0].rep_idx[0]] : -1;
  for (int k = 0; k < n; k++)
    if (e[k].nrep != 1 || e[k].devices[e[k].rep_idx[0]] != d) return -1;
  return d;
}

/* The chain template of a unit of phase @phase on a chunk whose ops are @ops (@count, in
 * order): per pipeline phase the ops forward (F) or in reverse (B, W); before the backward of
 * the last op of a recomputation group (met first in reverse), the group's recomputed forwards
 * R in forward order (Megatron's checkpointing: a layer's, or the attention core's, forward
 * re-runs right before its backward; Korthikanti et al. 2022, section 4.1). Every microbatch's
 * unit chains the same blocks. Returns the entries (@n of them); caller frees. */
static ChainEntry *chain_template(const Builder *b, const int *ops, int count, int phase, int *n) {
  ChainEntry *out = g_new(ChainEntry, 3 * (gsize)count + 1); /* R, B and W at most */
  *n = 0;
  for (int k = 0; k < count; k++) {
    int idx = phase == SIM_UNIT_FORWARD ? k : count - 1 - k, o = ops[idx];
    if (phase == SIM_UNIT_WEIGHT && b->wgt_base[o] == NO_TASK) continue;
    int g = b->group[o];
    gboolean group_ends = idx == count - 1 || b->group[ops[idx + 1]] != g;
    if (phase == SIM_UNIT_BACKWARD && g >= 0 && group_ends) {
      int begin = idx;
      while (begin > 0 && b->group[ops[begin - 1]] == g) begin--;
      for (int j = begin; j <= idx; j++) out[(*n)++] = chain_entry(b, ops[j], 3);
    }
    out[(*n)++] = chain_entry(b, o, phase == SIM_UNIT_FORWARD ? 0 : phase == SIM_UNIT_BACKWARD ? 1 : 2);
    /* Megatron's overlap: dW right after dX, in the same unit (sb_overlap_split) */
    if (phase == SIM_UNIT_BACKWARD && !b->s->weight_delay && b->wgt_base[o] != NO_TASK)
      out[(*n)++] = chain_entry(b, o, 2);
  }
  return out;
}

/* Whether entry @e's representatives are on distinct devices (@stamp: per device, the last
 * value of *@clock written there). */
static gboolean distinct_devices(const ChainEntry *e, uint32_t *stamp, uint32_t *clock) {
  ++*clock;
  for (int r = 0; r < e->nrep; r++) {
    int d = e->devices[e->rep_idx[r]];
    if (stamp[d] == *clock) return FALSE;
    stamp[d] = *clock;
  }
  return TRUE;
}

/* b->block_prev from template @e (@n entries): chain_op and chain_unit_one_device make task j
 * of entry k (k > 0) follow task j of entry k - 1 where both are on one mesh whose
 * representatives sit on distinct devices (each device's last task is then the previous
 * entry's task of the same microbatch and representative). A block met in a second entry
 * (@seen) gets NO_TASK: only a block chained by one entry alone has one predecessor block. */
static void note_block_prev(Builder *b, const ChainEntry *e, int n, guint8 *seen, uint32_t *stamp,
                            uint32_t *clock) {
  for (int k = 0; k < n; k++) {
    uint32_t block = e[k].block, prev = NO_TASK;
    if (k > 0 && e[k - 1].rep_idx == e[k].rep_idx && e[k - 1].devices == e[k].devices &&
        e[k - 1].nrep == e[k].nrep && distinct_devices(&e[k], stamp, clock))
      prev = e[k - 1].block;
    b->block_prev[block] = seen[block] ? NO_TASK : prev;
    seen[block] = 1;
  }
}

/* Chains every device's compute tasks in program order: per pipeline rank its schedule units
 * (sim_pipeline_units), each the template of its chunk and phase (chain_template) stamped for
 * its microbatch. Records per stage the microbatch of its last B and W units and every compute
 * task's predecessor (chain_prev). Returns the last task per device. */
static uint32_t *chain_compute(Builder *b) {
  uint32_t *prev = g_new(uint32_t, b->c->nodes * b->c->gpus_per_node);
  for (int d = 0; d < b->tg->num_devices; d++) prev[d] = NO_TASK;
  int nstages = b->s->num_stages;
  g_autofree int *stage_ops = g_new(int, b->nops);       /* ops grouped by stage, in order */
  g_autofree int *stage_begin = g_new0(int, nstages + 1);
  for (int o = 0; o < b->nops; o++) stage_begin[cfg(b, o)->stage + 1]++;
  for (int st = 0; st < nstages; st++) stage_begin[st + 1] += stage_begin[st];
  g_autofree int *fill = g_memdup2(stage_begin, sizeof(int) * (gsize)nstages);
  for (int o = 0; o < b->nops; o++) stage_ops[fill[cfg(b, o)->stage]++] = o;
  /* per stage and unit phase its template, made when first met */
  g_autofree ChainEntry **templates = g_new0(ChainEntry *, 3 * (gsize)nstages);
  g_autofree int *sizes = g_new0(int, 3 * (gsize)nstages);
  g_autofree int *device = g_new0(int, 3 * (gsize)nstages); /* template_device */
  g_autofree Stamp *stamps = g_new0(Stamp, 3 * (gsize)nstages); /* where stamp_unit applies */
  gboolean stamping = b->tg->program_block && !b->chain_next && b->for_merge && !b->no_replay;
  g_autofree guint8 *seen = g_new0(guint8, 4 * (gsize)b->nops); /* note_block_prev */
  g_autofree uint32_t *stamp = g_new0(uint32_t, (gsize)b->tg->num_devices);
  uint32_t clock = 0;
  b->block_prev = g_new(uint32_t, 4 * (gsize)b->nops);
  for (int i = 0; i < 4 * b->nops; i++) b->block_prev[i] = NO_TASK;
  for (int rank = 0; rank < mdl_strategy_num_ranks(b->s); rank++) {
    int nunits = 0;
    g_autofree SimUnit *units = sim_pipeline_units(&b->units_s, rank, &nunits);
    for (int u = 0; u < nunits; u++) {
      int st = units[u].chunk, mb = units[u].microbatch, phase = units[u].phase;
      if (phase == SIM_UNIT_BACKWARD) b->grads_done_b[st] = mb;
      if (phase == SIM_UNIT_WEIGHT) b->grads_done_w[st] = mb;
      int at = 3 * st + phase;
      if (!templates[at]) {
        templates[at] = chain_template(b, stage_ops + stage_begin[st],
                                       stage_begin[st + 1] - stage_begin[st], phase, &sizes[at]);
        device[at] = template_device(templates[at], sizes[at]);
        note_block_prev(b, templates[at], sizes[at], seen, stamp, &clock);
        if (stamping && device[at] >= 0 && sizes[at] > 0)
          stamps[at] = stamp_new(templates[at], sizes[at], b->M);
      }
      if (stamps[at].base)
        stamp_unit(b, prev, &stamps[at], sizes[at], device[at], mb);
      else if (device[at] >= 0)
        chain_unit_one_device(b, prev, templates[at], sizes[at], device[at], mb);
      else
        for (int k = 0; k < sizes[at]; k++) chain_op(b, prev, &templates[at][k], mb);
    }
  }
  g_autofree uint32_t *microbatches = g_new(uint32_t, (gsize)b->M + 1);
  for (int mb = 0; mb < b->M; mb++) microbatches[mb] = (uint32_t)mb;
  for (int i = 0; i < 3 * nstages; i++) {
    if (stamps[i].base) stamp_columns(b, &stamps[i], sizes[i], microbatches);
    g_free(templates[i]);
    g_free(stamps[i].base);
    g_free(stamps[i].block);
    g_free(stamps[i].start);
  }
  return prev;
}

/* Recomputation: each recomputed op's R waits for the recomputed values of the inputs its
 * group produces, resharded again as in the forward; inputs from outside the group are the
 * kept ones (the layer input, Q/K/V), ready since the op's forward ran on the same devices.
 * The segment of tensor @t: its recomputed readers in op order. */
void sb_recompute_segment(Builder *b, int t) {
  int p = mdl_graph_tensor(b->g, t)->producer;
  if (p < 0 || b->group[p] < 0) return;
  const SbUsers *users = &b->users[t];
  for (guint u = 0; u < users->len; u++) {
    int o = users->op[u];
    if ((u > 0 && users->op[u - 1] == o) || b->group[o] != b->group[p]) continue;
    const MdlOp *op = mdl_graph_op(b->g, o);
    const MdlMesh *mesh = mesh_of(b, o);
    int m = cfg(b, o)->mesh;
    for (int k = 0; k < op->ninputs; k++) {
      if (op->inputs[k].tensor != t) continue;
      MdlLayout need = mdl_layout_of_operand(op, &op->inputs[k], FALSE, cfg(b, o), mesh);
      const Conversion *cv = sb_forward_conversion(b, t, o, need, TRUE);
      if (sb_chain_repeats_block(b, cv->block, 3 * (uint32_t)b->nops + (uint32_t)o))
        continue; /* every edge below would repeat the chain */
      const uint32_t *ready = cv->ready;
      const int n = b->M * b->nrep[m];
      const uint32_t base = b->rec_base[o]; /* o's R at [mb * nrep + r] (task_rec) */
      uint32_t *e = sb_edges_begin(b, (guint)n);
      for (int j = 0; j < n; j++) {
        if (ready[j] == NO_TASK || sb_repeats_chain(b, ready[j], base + (uint32_t)j)) continue;
        *e++ = ready[j]; /* (sb_data_edge) */
        *e++ = base + (uint32_t)j;
      }
      sb_edges_end(b, e);
    }
  }
}

void sb_conversion_free(gpointer data) {
  Conversion *cv = data;
  g_free(cv->ready);
  g_free(cv);
}

/* Room for the devices' programs (SimTaskGraph.program), which chain_op fills in order: per
 * device as many tasks as the compute blocks put on it (every compute task is chained once:
 * M per block and representative). */
static void program_room(Builder *b) {
  SimTaskGraph *tg = b->tg;
  uint32_t nd = (uint32_t)tg->num_devices;
  const uint32_t *bases[4] = {b->fwd_base, b->bwd_base, b->wgt_base, b->rec_base};
  g_free(tg->program);
  g_free(tg->program_begin);
  tg->program = g_new(uint32_t, (gsize)sim_task_graph_size(tg) + 1);
  tg->program_begin = g_new0(uint32_t, nd + 1);
  for (int phase = 0; phase < 4; phase++)
    for (int o = 0; o < b->nops; o++) {
      if (bases[phase][o] == NO_TASK) continue;
      int m = cfg(b, o)->mesh;
      const MdlMesh *mesh = mesh_of(b, o);
      for (int r = 0; r < b->nrep[m]; r++) tg->program_begin[mesh->devices[b->rep_idx[m][r]] + 1] += (uint32_t)b->M;
    }
  for (uint32_t d = 0; d < nd; d++) tg->program_begin[d + 1] += tg->program_begin[d];
  b->program_fill = g_memdup2(tg->program_begin, sizeof(uint32_t) * (nd + 1));
  g_clear_pointer(&tg->program_block, g_free);
  g_clear_pointer(&tg->program_pos, g_free);
  g_clear_pointer(&tg->block_duration, g_free);
  if (!b->for_merge) return;
  tg->program_block = g_new(uint32_t, (gsize)sim_task_graph_size(tg) + 1);
  tg->program_pos = g_new(uint32_t, (gsize)sim_task_graph_size(tg) + 1);
  tg->block_duration = g_new0(SimTime, 4 * (gsize)b->nops);
  for (int phase = 0; phase < 4; phase++)
    for (int o = 0; o < b->nops; o++) tg->block_duration[phase * b->nops + o] = block_duration(b, phase, o);
}

void sb_build_compute(Builder *b) {
  assign_compute_ids(b);
  /* a graph for merging only where merging is likely to hold (sim_build_unfinished) */
  if (b->for_merge && sb_host_bound(b)) b->for_merge = FALSE;
  /* whose compute tasks are not written unless ZeRO-3's gathers read them (same_block) */
  b->virtual_compute = b->for_merge && b->s->zero_stage < 3;
  if (!b->virtual_compute) write_compute_tasks(b);
  gsize bytes = sizeof(uint32_t) * ((gsize)sim_task_graph_size(b->tg) + 1);
  b->chain_prev = g_malloc(bytes); /* every entry written by chain_compute (each compute task
                                      is chained once), but the one past the last */
  b->chain_prev[sim_task_graph_size(b->tg)] = NO_TASK;
  G_STATIC_ASSERT(NO_TASK == 0xFFFFFFFFu); /* every byte 0xFF */
  if (b->s->tp_overlap || b->s->cp > 1) { /* only what runs ahead reads it (sim_build_comm.c) */
    b->chain_next = g_malloc(bytes);
    memset(b->chain_next, 0xFF, bytes);
  }
  program_room(b);
  b->last_compute = chain_compute(b);
  for (int d = 0; d < b->tg->num_devices; d++) /* each device's program filled exactly */
    g_assert(b->program_fill[d] == b->tg->program_begin[d + 1]);
  g_clear_pointer(&b->program_fill, g_free);
  sb_add_host_tasks(b);
}

/* The program order, for chain merging (sim_merge.c): the builder's chain_prev, handed over
 * to the graph (compute tasks have the lowest ids: it has num_compute + 1 entries). */
static void hand_over_chains(Builder *b) {
  g_free(b->tg->chain_prev);
  b->tg->chain_prev = b->chain_prev;
  b->chain_prev = NULL;
}

gboolean sb_pass_per_tensor(SbPass pass) {
  return pass == SB_PASS_FORWARD || pass == SB_PASS_BACKWARD || pass == SB_PASS_RECOMPUTE;
}

int sb_pass_segments(const Builder *b, SbPass pass) {
  gboolean zero3 = b->s->zero_stage >= 3;
  switch (pass) {
  case SB_PASS_FORWARD:
  case SB_PASS_BACKWARD:
  case SB_PASS_RECOMPUTE: return mdl_graph_num_tensors(b->g);
  case SB_PASS_REGATHER: return b->nops;
  case SB_PASS_PARAM_FORWARD:
  case SB_PASS_PARAM_BACKWARD: return zero3 ? b->nops : 0;
  case SB_PASS_SYNC: return 1;
  default: g_assert_not_reached();
  }
}

void sb_run_segment(Builder *b, SbPass pass, int index) {
  b->phase = pass == SB_PASS_SYNC                                      ? SIM_PHASE_ITERATION
             : pass == SB_PASS_FORWARD || pass == SB_PASS_PARAM_FORWARD ? SIM_PHASE_FORWARD
                                                                        : SIM_PHASE_BACKWARD;
  switch (pass) {
  case SB_PASS_FORWARD: sb_forward_segment(b, index); break;
  case SB_PASS_PARAM_FORWARD: sb_parameter_gathers_segment(b, FALSE, index); break;
  case SB_PASS_BACKWARD: sb_backward_segment(b, index); break;
  case SB_PASS_RECOMPUTE: sb_recompute_segment(b, index); break;
  case SB_PASS_REGATHER: sb_regathers_segment(b, index); break;
  case SB_PASS_PARAM_BACKWARD: sb_parameter_gathers_segment(b, TRUE, index); break;
  case SB_PASS_SYNC: sb_add_gradient_sync_and_optimizer(b, b->last_compute); break;
  default: g_assert_not_reached();
  }
}

SbMark sb_mark(const Builder *b) {
  return (SbMark){b->tg->tasks->len, b->tg->task_resources->len, b->tg->edges->len,
                  b->tg->spans->len};
}

/* Every segment in order (recording the marks when b->marks is set). */
void sb_build_segments(Builder *b) {
  for (int pass = 0; pass < SB_PASS_COUNT; pass++) {
    int n = sb_pass_segments(b, (SbPass)pass);
    for (int i = 0; i < n; i++) {
      if (b->marks) {
        SbMark mark = sb_mark(b);
        g_array_append_val(b->marks, mark);
      }
      sb_run_segment(b, (SbPass)pass, i);
    }
  }
  if (b->marks) {
    SbMark mark = sb_mark(b);
    g_array_append_val(b->marks, mark);
  }
}

SimTaskGraph *sim_build(const MdlGraph *graph, const MdlStrategy *strategy,
                        const DevCluster *cluster, const CmParams *params, GError **error) {
  SimOptions options = {0};
  return sim_build_with_options(graph, strategy, cluster, params, &options, error);
}

/* Everything the graph's size depends on, up to the representatives: validates the strategy
 * and (@enforce) refuses one over SIM_MAX_DEVICE_SLOTS before the rest, which allocates per
 * mesh index. */
gboolean sb_builder_init(Builder *b, const MdlGraph *graph, const MdlStrategy *strategy,
                             const DevCluster *cluster, const CmParams *params,
                             const SimOptions *options, gboolean enforce, SimEstimate *estimate,
                             GError **error) {
  memset(b, 0, sizeof *b);
  memset(estimate, 0, sizeof *estimate);
  g_return_val_if_fail(!options->crossmesh ||
                           ((unsigned)options->crossmesh_method < SIM_CROSSMESH_METHOD_COUNT &&
                            (unsigned)options->crossmesh_order < SIM_CROSSMESH_ORDER_COUNT),
                       FALSE);
  if (!mdl_strategy_validate(strategy, graph, cluster, error)) return FALSE;
  estimate->device_slots = sb_device_slots(graph, strategy);
  if (enforce && !sim_estimate_check(estimate, error)) return FALSE;
  b->g = graph;
  b->s = strategy;
  b->c = cluster;
  b->p = params;
  b->nops = mdl_graph_num_ops(graph);
  b->Msize = strategy->num_microbatches;
  b->M = options->build_microbatches > 0 ? MIN(options->build_microbatches, b->Msize) : b->Msize;
  b->units_s = *strategy;
  b->units_s.num_microbatches = b->M;
  b->dtype_bytes = dev_dtype_bytes(strategy->dtype);
  b->tg = sim_task_graph_new(dev_cluster_num_devices(cluster));
  int nt = mdl_graph_num_tensors(graph);
  b->fwd_base = g_new(uint32_t, b->nops);
  b->bwd_base = g_new(uint32_t, b->nops);
  b->wgt_base = g_new(uint32_t, b->nops);
  b->rec_base = g_new(uint32_t, b->nops);
  b->group = mdl_strategy_recompute_groups(strategy, graph);
  b->fsdp_unit = mdl_strategy_fsdp_units(strategy, graph);
  b->grads_done_b = g_new0(int, strategy->num_stages);
  b->grads_done_w = g_new0(int, strategy->num_stages);
  b->sample_tdim = g_new(int, nt);
  /* per tensor its forward conversions (sb_forward_conversion makes a list on first use) */
  b->conversions = g_new0(GPtrArray *, nt);
  b->rec_conversions = g_new0(GPtrArray *, nt);
  for (int t = 0; t < nt; t++) b->sample_tdim[t] = -1;
  sb_users_init(b);
  /* Sample dims in one pass over the operands. */
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    int sd = mdl_op_sample_dim(op);
    for (int k = -1; sd >= 0 && k < op->ninputs; k++) {
      const MdlOperand *opd = k < 0 ? &op->output : &op->inputs[k];
      for (int i = 0; i < MDL_MAX_DIMS; i++)
        if (opd->dim_map[i] == sd && b->sample_tdim[opd->tensor] < 0) b->sample_tdim[opd->tensor] = i;
    }
  }
  b->step = options->step_collectives;
  b->no_replay = options->build_each_microbatch;
  sim_crossmesh_options_init(&b->crossmesh);
  b->crossmesh_all = options->crossmesh;
  if (options->crossmesh) {
    b->crossmesh.method = (SimCrossMeshMethod)options->crossmesh_method;
    b->crossmesh.order = (SimCrossMeshOrder)options->crossmesh_order;
  }
  b->plans = g_hash_table_new_full(sb_crossmesh_cache_hash, sb_crossmesh_cache_equal,
                                   sb_crossmesh_cache_free, NULL);
  /* Cross-mesh resharding runs on link resources and plans every device's slices, so the
   * graph is expanded (symmetry would need per-unit orbits). */
  gboolean crossmesh = sb_needs_crossmesh(b);
  if (b->step || crossmesh) b->tg->num_resources = sim_network_num_resources(cluster);
  sb_choose_representatives(b, !options->no_symmetry && !crossmesh);
  b->tg->symmetric = b->symmetric;
  for (guint m = 0; m < strategy->meshes->len; m++) b->tg->simulated_devices += b->nrep[m];
  return TRUE;
}

void sb_users_init(Builder *b) {
  int nt = mdl_graph_num_tensors(b->g);
  /* one block: the entries, then per tensor its users' slice */
  guint reads = 0;
  for (int o = 0; o < b->nops; o++) reads += (guint)mdl_graph_op(b->g, o)->ninputs;
  b->users = g_malloc0(sizeof(SbUsers) * (gsize)nt + sizeof(int) * ((gsize)reads + 1));
  int *ops = (int *)(b->users + nt);
  for (int o = 0; o < b->nops; o++) { /* counts */
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int k = 0; k < op->ninputs; k++) b->users[op->inputs[k].tensor].len++;
  }
  guint at = 0;
  for (int t = 0; t < nt; t++) {
    b->users[t].op = ops + at;
    at += b->users[t].len;
    b->users[t].len = 0;
  }
  for (int o = 0; o < b->nops; o++) { /* in op order, once per read */
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int k = 0; k < op->ninputs; k++) {
      SbUsers *u = &b->users[op->inputs[k].tensor];
      ops[(u->op - ops) + u->len++] = o;
    }
  }
}

void sb_users_free(Builder *b) {
  g_free(b->users);
  b->users = NULL;
}

/* Frees what builder_init allocated (not the task graph). */
void sb_builder_clear(Builder *b) {
  if (!b->g) return; /* builder_init failed before allocating */
  int nt = mdl_graph_num_tensors(b->g);
  for (int t = 0; t < nt; t++) {
    if (b->conversions[t]) g_ptr_array_unref(b->conversions[t]);
    if (b->rec_conversions[t]) g_ptr_array_unref(b->rec_conversions[t]);
  }
  sb_users_free(b);
  g_free(b->conversions);
  g_free(b->rec_conversions);
  g_free(b->chain_prev);
  g_free(b->chain_next);
  g_free(b->block_prev);
  g_free(b->rec_base);
  g_free(b->group);
  g_free(b->fsdp_unit);
  sb_free_representatives(b);
  g_hash_table_unref(b->plans);
  g_free(b->sample_tdim);
  g_free(b->op_durations);
  g_free(b->fwd_base);
  g_free(b->bwd_base);
  g_free(b->wgt_base);
  g_free(b->grads_done_b);
  g_free(b->grads_done_w);
  g_free(b->last_compute);
  if (b->marks) g_array_unref(b->marks);
  for (guint i = 0; b->sim_groups && i < b->s->meshes->len * MDL_MAX_MESH_AXES; i++)
    if (b->sim_groups[i]) g_array_unref(b->sim_groups[i]);
  g_free(b->sim_groups);
}

gboolean sim_build_estimate(const MdlGraph *graph, const MdlStrategy *strategy,
                            const DevCluster *cluster, const SimOptions *options,
                            SimEstimate *estimate, GError **error) {
  g_return_val_if_fail(graph && strategy && cluster && options && estimate, FALSE);
  Builder b;
  gboolean ok = sb_builder_init(&b, graph, strategy, cluster, NULL, options, FALSE, estimate, error) &&
                sb_estimate_tasks(&b, estimate, error);
  if (b.tg) sim_task_graph_free(b.tg);
  sb_builder_clear(&b);
  return ok;
}

/* Allocates room for @n elements in @array (empty) without touching it. */
static void reserve(GArray *array, guint64 n) {
  if (n > G_MAXUINT / 2) return; /* over the limits: grows as it goes */
  g_array_set_size(array, (guint)n);
  g_array_set_size(array, 0);
}

SimTaskGraph *sim_build_unfinished(const MdlGraph *graph, const MdlStrategy *strategy,
                                   const DevCluster *cluster, const CmParams *params,
                                   const SimOptions *options, gboolean for_merge, GError **error) {
  Builder b;
  SimEstimate estimate;
  /* The size first: a graph over the limits is refused before it takes the memory. */
  if (!sb_builder_init(&b, graph, strategy, cluster, params, options, TRUE, &estimate, error) ||
      !sb_estimate_tasks(&b, &estimate, error) || !sim_estimate_check(&estimate, error)) {
    if (b.tg) sim_task_graph_free(b.tg);
    sb_builder_clear(&b);
    return NULL;
  }
  /* The arrays at their final size at once (the estimate bounds the tasks; a task has about
   * 2.3 edges in the transformer graphs measured): no copy on growth. Pages are touched only
   * as they fill. */
  b.for_merge = for_merge;
  guint64 ntasks = MAX(estimate.tasks, 1) +
                   (cm_framework_get(strategy->framework) && !for_merge ? estimate.compute_tasks : 0);
  reserve(b.tg->tasks, ntasks);
  reserve(b.tg->task_resources, ntasks);
  reserve(b.tg->edges, 5 * ntasks);
  sb_build_compute(&b);
  sb_build_segments(&b);
  hand_over_chains(&b);
  if (!b.for_merge) sim_task_graph_finish(b.tg); /* a full graph (sb_build_compute) */
  SimTaskGraph *tg = b.tg;
  sb_builder_clear(&b);
  return tg;
}

SimTaskGraph *sim_build_with_options(const MdlGraph *graph, const MdlStrategy *strategy,
                                     const DevCluster *cluster, const CmParams *params,
                                     const SimOptions *options, GError **error) {
  return sim_build_unfinished(graph, strategy, cluster, params, options, FALSE, error);
}
