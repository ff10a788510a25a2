/* sim/build_host — the host stream: who launches the kernels, and when.
 *
 * Every compute task c (forward, backward, weight-gradient, recomputed forward) gets a host
 * task h(c) on its device's host resource, lasting the framework's host time for the kernels
 * c stands for (costmodel/cm_framework.h). Edges:
 *  - h(c) -> c: a kernel cannot start before it is launched;
 *  - h(prev) -> h(c), prev = c's predecessor in the device's program (chain_prev): the host
 *    issues the program in order, one thing at a time (the host resource serializes too);
 *  - c_q -> h(c): the launch queue. The host may run ahead of the GPU until queue_depth
 *    kernels are pending; launching c's k kernels needs the compute tasks up to q done, q the
 *    first position in the program with (kernels launched before c) - (kernels of tasks up to
 *    q) + k <= queue_depth. Only edges where q advances are added (later ones are implied by
 *    the host chain).
 * Iteration boundaries are synchronization points: the simulated iteration starts with host and
 * GPU idle at 0. In Megatron-LM the first microbatch's get_batch -> tensor_parallel.broadcast_data
 * reads the broadcast sizes back with sizes_cuda.cpu() (megatron/core/tensor_parallel/data.py
 * _build_key_size_numel_dictionaries), which waits for the previous step's kernels; the loss is
 * read (.item()) only every --log-interval iterations (training.py training_log). The optimizer
 * step's own synchronizations are sb_add_optimizer_step's (below). Collective launches (NCCL
 * kernels) and the optimizer's later multi-tensor launches are not charged to the host, nor
 * are the later microbatches' get_batch synchronizations on the first and last stages.
 * Host tasks take ids right after the compute tasks (graph->host_base + c) and depend only on
 * the compute tasks' program and op kinds (and which backwards are split into B and W, which
 * delta simulation checks is unchanged, sim_delta.c), never on splits' durations: delta
 * simulation copies them with the compute block (sim_build-int.h), and under symmetry they exist for representatives only,
 * like their compute tasks. */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

#include "costmodel/cm_framework.h"

static CmHostPhase host_phase(const Builder *b, const SimTask *t) {
  switch ((SimTaskKind)t->kind) {
  case SIM_TASK_BACKWARD: /* B of a split backward (weight delay, Megatron's overlap) */
    return b->s->weight_delay || b->wgt_base[t->op] != NO_TASK ? CM_HOST_BACKWARD_INPUT : CM_HOST_BACKWARD;
  case SIM_TASK_BACKWARD_WEIGHT: return CM_HOST_BACKWARD_WEIGHT;
  default: return CM_HOST_FORWARD; /* forward and recomputed forward */
  }
}

/* Queue-depth edges for one device's program @prog (@n compute tasks in order, @kernels per
 * task by id). A graph for merging has none: sim_merge runs the same queue
 * (sim_merge_time_host). */
static void add_queue_edges(Builder *b, const CmFramework *f, const uint32_t *prog, uint32_t n,
                            const int *kernels) {
  guint64 launched = 0, done = 0; /* kernels before position p; of tasks before position q */
  const guint64 depth = (guint64)f->queue_depth;
  uint32_t q = 0;
  for (uint32_t p = 0; p < n; p++) {
    guint64 k = (guint64)kernels[prog[p]];
    uint32_t q0 = q;
    while (q < p && launched - done + k > depth) done += (guint64)kernels[prog[q++]];
    if (q != q0) sim_task_graph_edge(b->tg, prog[q - 1], b->tg->host_base + prog[p]);
    launched += k;
  }
}

/* Kernels and host time per op and phase (index op * PHASES + phase), once: every microbatch
 * and device launches the same. */
enum { PHASES = CM_HOST_BACKWARD_WEIGHT + 1 };
static void host_tables(const Builder *b, const CmFramework *f, int *op_kernels, SimTime *op_time) {
  for (int o = 0; o < b->nops; o++)
    for (int ph = 0; ph < PHASES; ph++) {
      const MdlOp *op = mdl_graph_op(b->g, o);
      if (op_kernels) op_kernels[o * PHASES + ph] = cm_framework_kernels(f, op, (CmHostPhase)ph);
      op_time[o * PHASES + ph] = sim_time_from_seconds(cm_framework_host_time(f, op, (CmHostPhase)ph));
    }
}

/* The compute tasks by block, as sb_build_compute lays them out: per kind (forward, backward,
 * weight gradient, recomputed forward) and op, the M x nrep tasks from its base (microbatch
 * after microbatch, representatives in order), one kind, op and duration each (from the
 * builder's tables: the tasks themselves may not be written). Returns how many (at most 4 per
 * op) in @out. */
typedef struct {
  uint32_t base, count;
  int op, mesh, phase; /* phase: the kind's index (0 forward .. 3 recomputed forward) */
  SimTask task; /* the block's kind, op and duration */
} ComputeBlock;
static int compute_blocks(const Builder *b, ComputeBlock *out) {
  const uint32_t *bases[4] = {b->fwd_base, b->bwd_base, b->wgt_base, b->rec_base};
  static const SimTaskKind kinds[4] = {SIM_TASK_FORWARD, SIM_TASK_BACKWARD,
                                       SIM_TASK_BACKWARD_WEIGHT, SIM_TASK_RECOMPUTE};
  int n = 0;
  for (int phase = 0; phase < 4; phase++)
    for (int o = 0; o < b->nops; o++) {
      if (bases[phase][o] == NO_TASK) continue;
      int m = cfg(b, o)->mesh;
      out[n] = (ComputeBlock){bases[phase][o], (uint32_t)(b->M * b->nrep[m]), o, m, phase, {0}};
      out[n].task.kind = (uint8_t)kinds[phase];
      out[n].task.op = o;
      out[n++].task.duration = b->op_durations[3 * o + (phase == 3 ? 0 : phase)];
    }
  return n;
}

gboolean sb_host_bound(const Builder *b) {
  const CmFramework *f = cm_framework_get(b->s->framework);
  if (!f) return FALSE;
  g_autofree SimTime *op_time = g_new(SimTime, (gsize)b->nops * PHASES);
  host_tables(b, f, NULL, op_time);
  const SimTaskGraph *tg = b->tg;
  g_autofree SimTime *busy = g_new0(SimTime, 2 * (gsize)tg->num_devices); /* kernels, launches */
  g_autofree ComputeBlock *blocks = g_new(ComputeBlock, 4 * (gsize)b->nops + 1);
  int nblocks = compute_blocks(b, blocks);
  for (int i = 0; i < nblocks; i++) { /* every task of a block the same, M of them per device */
    const ComputeBlock *k = &blocks[i];
    const MdlMesh *mesh = mdl_strategy_mesh(b->s, k->mesh);
    SimTime launch = op_time[k->op * PHASES + (int)host_phase(b, &k->task)];
    for (int r = 0; r < b->nrep[k->mesh]; r++) {
      uint32_t d = (uint32_t)mesh->devices[b->rep_idx[k->mesh][r]];
      busy[2 * d] += (SimTime)b->M * k->task.duration;
      busy[2 * d + 1] += (SimTime)b->M * launch;
    }
  }
  for (int d = 0; d < tg->num_devices; d++)
    if (busy[2 * d + 1] > busy[2 * d]) return TRUE; /* the host cannot keep up */
  return FALSE;
}

void sb_add_host_tasks(Builder *b) {
  const CmFramework *f = cm_framework_get(b->s->framework);
  SimTaskGraph *tg = b->tg;
  uint32_t n = sim_task_graph_size(tg);
  tg->num_compute = n;
  if (!f) return;
  tg->host_base = n;
  tg->host_resource_base = (uint32_t)tg->num_resources;
  tg->num_resources += tg->num_devices;
  g_autofree int *op_kernels = g_new(int, (gsize)b->nops * PHASES);
  g_autofree SimTime *op_time = g_new(SimTime, (gsize)b->nops * PHASES);
  host_tables(b, f, op_kernels, op_time);
  SimTask *tasks = (SimTask *)tg->tasks->data;
  if (b->for_merge) { /* launch durations and kernels per block; the queue is sim_merge's */
    tg->host_base = UINT32_MAX;
    tg->num_resources -= tg->num_devices;
    tg->block_host = g_new0(SimTime, 4 * (gsize)b->nops);
    tg->block_kernels = g_new0(int, 4 * (gsize)b->nops);
    g_autofree ComputeBlock *blocks = g_new(ComputeBlock, 4 * (gsize)b->nops + 1);
    int nblocks = compute_blocks(b, blocks), least = G_MAXINT;
    for (int i = 0; i < nblocks; i++) {
      int k = blocks[i].op * PHASES + (int)host_phase(b, &blocks[i].task);
      int at = blocks[i].phase * b->nops + blocks[i].op; /* SimTaskGraph.program_block */
      tg->block_kernels[at] = op_kernels[k];
      tg->block_host[at] = op_time[k];
      least = MIN(least, op_kernels[k]);
    }
    /* A launch waits for the task before the first of the tasks whose kernels, its own
     * included, fit in the queue: with at least one kernel a task, at most queue_depth
     * positions back (one with no queue: the task before it); else anywhere in its
     * device's program. */
    tg->host_queue_depth = (uint32_t)MAX(f->queue_depth, 0);
    tg->host_queue_reach = least >= 1 ? MAX(tg->host_queue_depth, 1u) : n;
    return;
  }
  /* The host tasks in one block (ids host_base + c, one resource each), then their edges. */
  g_autofree int *kernels = g_new(int, n ? n : 1); /* per compute task */
  guint res0 = tg->task_resources->len;
  g_array_set_size(tg->tasks, 2 * n);
  g_array_set_size(tg->task_resources, res0 + n);
  tasks = (SimTask *)tg->tasks->data;
  uint32_t *res = (uint32_t *)tg->task_resources->data;
  for (uint32_t c = 0; c < n; c++) {
    SimTask t = tasks[c];
    int k = t.op * PHASES + (int)host_phase(b, &t);
    kernels[c] = op_kernels[k];
    t.kind = SIM_TASK_HOST;
    t.duration = op_time[k];
    t.res_begin = res0 + c;
    t.nres = 1;
    res[res0 + c] = tg->host_resource_base + (uint32_t)sim_resource_device(res[tasks[c].res_begin]);
    tasks[n + c] = t;
  }
  for (uint32_t c = 0; c < n; c++) {
    uint32_t h = tg->host_base + c;
    sim_task_graph_edge(tg, h, c);
    if (b->chain_prev[c] != NO_TASK) sim_task_graph_edge(tg, tg->host_base + b->chain_prev[c], h);
  }
  /* Each device's program (recorded in order by sb_build_compute: SimTaskGraph.program). */
  for (int d = 0; d < tg->num_devices; d++)
    add_queue_edges(b, f, tg->program + tg->program_begin[d],
                    tg->program_begin[d + 1] - tg->program_begin[d], kernels);
}

/* The optimizer step and the host synchronizations inside it (sim_build-int.h). The step's
 * GPU time (cm_optimizer_time) is cut into phases in proportion to the bytes its kernels move
 * before each synchronization (cm_framework_step_syncs: of cm_adam_bytes_per_param); every
 * phase runs on the device's compute stream after its last compute task. At a
 * synchronization, the scalar the phase computed (found-inf flag, gradient norm) is
 * all-reduced over the model-parallel ranks; transitively (their gradients were all-reduced
 * over their data-parallel peers first) that waits for every rank, so each simulated device's
 * phase joins one zero-time task (the all-reduce's own few microseconds of latency are not
 * charged). Then the host, blocked in .item() until that point, waits for the scalar's copy
 * and launches the next kernel (cm_framework_sync_s): a host task on no resource (the host
 * stream has nothing else left to launch this iteration; its launches all precede the
 * synchronization in program order), immediately before the phase it gates (id order is what
 * sim_host_step_wait reads). The later launches of a phase are taken to keep ahead of its
 * kernels: a multi-tensor launch covers up to 320 chunks of 65536 elements (apex
 * csrc/multi_tensor_apply.cuh depth_to_max_blocks, apex/multi_tensor_apply chunk 2048 * 32),
 * hundreds of microseconds of HBM traffic against one launch's tens. */
void sb_add_optimizer_step(Builder *b, const uint32_t *last_compute, const double *local_params,
                           uint32_t *first, uint32_t *last) {
  int ndev = b->tg->num_devices;
  const CmFramework *f = cm_framework_get(b->s->framework);
  double before[CM_MAX_STEP_SYNCS];
  int nsync = cm_framework_step_syncs(f, b->s->dtype, before);
  double step_bytes = cm_adam_bytes_per_param(b->s->dtype);
  SimTime sync = nsync ? sim_time_from_seconds(cm_framework_sync_s(f)) : 0;
  g_autofree SimTime *full = g_new(SimTime, ndev); /* per device: the step's GPU time */
  g_autofree SimTime *left = g_new(SimTime, ndev); /* of which not yet placed */
  SimTask t = {.kind = SIM_TASK_OPTIMIZER, .op = -1, .tensor = -1, .microbatch = -1};
  SimTask wait = t;
  wait.kind = SIM_TASK_HOST;
  for (int d = 0; d < ndev; d++) {
    first[d] = last[d] = NO_TASK;
    full[d] = local_params[d] > 0 ? sim_time_from_seconds(cm_optimizer_time(
                                        b->p, &b->c->device, b->s->dtype, local_params[d]))
                                  : 0;
    left[d] = full[d];
  }
  for (int k = 0; k <= nsync; k++) {
    uint32_t join = NO_TASK;
    if (k > 0) {
      wait.duration = 0;
      join = sim_task_graph_add(b->tg, &wait, NULL, 0);
      for (int d = 0; d < ndev; d++)
        if (last[d] != NO_TASK) sim_task_graph_edge(b->tg, last[d], join);
    }
    for (int d = 0; d < ndev; d++) {
      if (local_params[d] <= 0) continue;
      uint32_t host = NO_TASK;
      if (k > 0) {
        wait.duration = sync;
        host = sim_task_graph_add(b->tg, &wait, NULL, 0);
        sim_task_graph_edge(b->tg, join, host);
      }
      t.duration = k < nsync ? (SimTime)((double)full[d] * before[k] / step_bytes) : left[d];
      left[d] -= t.duration;
      uint32_t r = sim_resource_compute(d);
      uint32_t phase = sim_task_graph_add(b->tg, &t, &r, 1);
      if (host != NO_TASK) sim_task_graph_edge(b->tg, host, phase);
      /* after the last compute task (chain merging wants that edge on every task sharing the
       * compute stream) and the previous phase */
      if (last_compute[d] != NO_TASK) sim_task_graph_edge(b->tg, last_compute[d], phase);
      if (last[d] != NO_TASK) sim_task_graph_edge(b->tg, last[d], phase);
      if (first[d] == NO_TASK) first[d] = phase;
      last[d] = phase;
    }
  }
}
