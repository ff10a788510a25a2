/* validate/plan_build — the plan of one iteration, one program per rank (val_plan_build.h).
 *
 * Invariants of the output: step ids are 0..n-1 per rank in list order; deps name earlier steps
 * of the same rank (a dependency through a task of no step, a join marker, is followed to its
 * own dependencies; one on another rank's task is left to the collectives and transfers);
 * groups are numbered in order of first use and listed once per distinct member list and
 * stream. */
#include "validate/val_plan_build.h"
#include "validate/val_plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "costmodel/cm_backward.h"
#include "session/ses_session.h"
#include "sim/sim.h"

G_DEFINE_QUARK(val-build-error-quark, val_build_error)

#define NO_STEP UINT32_MAX

G_STATIC_ASSERT((int)VAL_STREAM_COMM == (int)SIM_STREAM_COMM && (int)VAL_STREAM_P2P == (int)SIM_STREAM_P2P &&
                (int)VAL_STREAM_DP == (int)SIM_STREAM_DP && (int)VAL_STREAMS == (int)SIM_STREAMS);

/* Per op: its local GEMM shape or element count and the bytes the cost model charges. */
typedef struct {
  gboolean gemm;
  CmGemmShape shape;
  double out_elements;
  double bytes;       /* forward: output and inputs, local, one microbatch */
  int grad_inputs[MDL_MAX_INPUTS]; /* inputs that need a gradient, in input order */
  int ngrad;
  gboolean split;     /* its backward is B (dX) and W (dW) tasks in the simulator's graph
                         (weight delay, or Megatron's overlap: sim_build_comm.c sb_overlap_split) */
} OpShape;

typedef struct {
  const MdlGraph *g;
  const MdlStrategy *s;
  const DevCluster *c;
  const CmParams *p;
  const SimTaskGraph *tg;
  int ndev;
  OpShape *ops;
  uint32_t *pred_offsets, *pred;     /* predecessors, CSR */
  GHashTable *step_of;               /* (task * ndev + device) -> last step id + 1 */
  GHashTable *groups;                /* "a,b,c" -> group id + 1 */
  cJSON *groups_json;
  cJSON **steps;                     /* per device: its steps array */
  uint32_t *next_id;                 /* per device */
  GHashTable *bench_ops, *bench_colls; /* canonical key -> TRUE */
  cJSON *bench_ops_json, *bench_colls_json;
  ValPlanSummary sum;
  double dtype_bytes;
  const char *dtype;
} Plan;

static double op_shape_bytes(const Plan *pl, const MdlOp *op, const MdlOperand *opd,
                             gboolean out, const MdlOpConfig *c, const MdlMesh *mesh,
                             const int *sample_tdims) {
  MdlLayout layout = mdl_layout_of_operand(op, opd, out, c, mesh);
  return mdl_layout_local_elements(pl->g, opd->tensor, sample_tdims[opd->tensor], &layout, mesh,
                                   pl->s->num_microbatches) * pl->dtype_bytes;
}

/* The same local sizes sim_build.c's op_durations prices. */
static void compute_op_shapes(Plan *pl) {
  int nops = mdl_graph_num_ops(pl->g);
  g_autofree int *sample_tdims = mdl_tensor_sample_dims(pl->g);
  pl->ops = g_new0(OpShape, nops);
  for (int o = 0; o < nops; o++) {
    const MdlOp *op = mdl_graph_op(pl->g, o);
    const MdlOpConfig *c = &pl->s->configs[o];
    const MdlMesh *mesh = mdl_strategy_mesh(pl->s, c->mesh);
    double local[MDL_MAX_DIMS];
    for (int d = 0; d < op->ndims; d++)
      local[d] = mdl_config_local_dim(op, d, c, mesh, pl->s->num_microbatches);
    OpShape *os = &pl->ops[o];
    os->gemm = cm_gemm_shape(op, local, &os->shape);
    double bytes = op_shape_bytes(pl, op, &op->output, TRUE, c, mesh, sample_tdims);
    os->out_elements = bytes / pl->dtype_bytes;
    for (int k = 0; k < op->ninputs; k++) {
      bytes += op_shape_bytes(pl, op, &op->inputs[k], FALSE, c, mesh, sample_tdims);
      if (mdl_tensor_needs_grad(pl->g, op->inputs[k].tensor)) os->grad_inputs[os->ngrad++] = k;
    }
    os->bytes = bytes;
  }
}

static void build_predecessors(Plan *pl) {
  uint32_t n = sim_task_graph_size(pl->tg), count;
  pl->pred_offsets = g_new0(uint32_t, n + 1);
  for (uint32_t t = 0; t < n; t++) {
    const uint32_t *succ = sim_task_graph_successors(pl->tg, t, &count);
    for (uint32_t e = 0; e < count; e++) pl->pred_offsets[succ[e] + 1]++;
  }
  for (uint32_t t = 0; t < n; t++) pl->pred_offsets[t + 1] += pl->pred_offsets[t];
  pl->pred = g_new(uint32_t, pl->pred_offsets[n] ? pl->pred_offsets[n] : 1);
  g_autofree uint32_t *fill = g_memdup2(pl->pred_offsets, sizeof(uint32_t) * n);
  for (uint32_t t = 0; t < n; t++) {
    const uint32_t *succ = sim_task_graph_successors(pl->tg, t, &count);
    for (uint32_t e = 0; e < count; e++) pl->pred[fill[succ[e]]++] = t;
  }
}

/* Devices whose communication streams task @t occupies, in its resource order, and (@stream,
 * nullable) the stream: the simulator's three communication streams per device (sim.h's
 * SimStream: TP/CP/EP collectives, pipeline p2p, data-parallel sync) are the plan's comm, p2p
 * and dp streams (ValStream follows SimStream's order), so a runner overlaps what the
 * simulator overlaps. A task occupies one class of stream on every member (sim_build_comm.c). */
static int comm_members(const Plan *pl, const SimTaskInfo *t, int *out, ValStream *stream) {
  const uint32_t *res = t->resources;
  int n = 0;
  for (int r = 0; r < t->nres; r++)
    if (res[r] < sim_stream_resources(pl->ndev) && sim_resource_stream_of(res[r]) != SIM_STREAM_COMPUTE) {
      if (stream) *stream = (ValStream)sim_resource_stream_of(res[r]);
      out[n++] = sim_resource_device(res[r]);
    }
  return n;
}

static gboolean is_comm(const SimTaskInfo *t) {
  return t->kind == SIM_TASK_COMM || t->kind == SIM_TASK_GRAD_SYNC;
}

/* Whether task @t becomes steps at all (markers and one-member collectives do not). */
static gboolean has_steps(const Plan *pl, const SimTaskInfo *t) {
  if (t->role != SIM_ROLE_WHOLE || t->kind == SIM_TASK_HOST) return FALSE;
  if (!is_comm(t)) return TRUE;
  g_autofree int *members = g_new(int, t->nres);
  return comm_members(pl, t, members, NULL) >= 2;
}

static guint64 key_of(const Plan *pl, uint32_t task, int device) {
  return (guint64)task * (guint64)pl->ndev + (guint64)device;
}

static uint32_t step_of(const Plan *pl, uint32_t task, int device) {
  guint64 key = key_of(pl, task, device);
  gpointer v = g_hash_table_lookup(pl->step_of, &key);
  return v ? (uint32_t)GPOINTER_TO_UINT(v) - 1 : NO_STEP;
}

/* Adds to @deps the steps on @device that task @t's predecessors ended with, following tasks of
 * no step to their own predecessors. */
static void collect_deps(const Plan *pl, uint32_t t, int device, GArray *deps, int depth) {
  for (uint32_t e = pl->pred_offsets[t]; e < pl->pred_offsets[t + 1]; e++) {
    uint32_t p = pl->pred[e];
    uint32_t s = step_of(pl, p, device);
    if (s != NO_STEP) {
      g_array_append_val(deps, s);
      continue;
    }
    SimTaskInfo pt;
    sim_task_graph_get(pl->tg, p, &pt);
    /* A host launch orders nothing the compute stream's program does not (sim_build_host.c). */
    if (pt.kind == SIM_TASK_HOST) continue;
    if (!has_steps(pl, &pt) && depth < 64) collect_deps(pl, p, device, deps, depth + 1);
  }
}

static int compare_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static cJSON *deps_json(GArray *deps) {
  g_array_sort(deps, compare_u32);
  cJSON *arr = cJSON_CreateArray();
  for (guint i = 0; i < deps->len; i++) {
    uint32_t d = g_array_index(deps, uint32_t, i);
    if (i > 0 && d == g_array_index(deps, uint32_t, i - 1)) continue;
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(d));
  }
  return arr;
}

static const char *phase_name(const SimTaskInfo *t) {
  switch ((SimTaskKind)t->kind) {
  case SIM_TASK_FORWARD:
  case SIM_TASK_RECOMPUTE: return "forward";
  case SIM_TASK_BACKWARD:
  case SIM_TASK_BACKWARD_WEIGHT: return "backward";
  case SIM_TASK_OPTIMIZER: return "iteration";
  default:
    return t->phase == SIM_PHASE_FORWARD ? "forward" : t->phase == SIM_PHASE_BACKWARD ? "backward"
                                                                                     : "iteration";
  }
}

/* Starts a step object on @device for task @t; returns it (added to the device's steps). */
static cJSON *new_step(Plan *pl, uint32_t t, int device, const char *stream, const char *kind,
                       const char *name) {
  SimTaskInfo info;
  sim_task_graph_get(pl->tg, t, &info);
  const SimTaskInfo *task = &info;
  cJSON *step = cJSON_CreateObject();
  uint32_t id = pl->next_id[device]++;
  cJSON_AddNumberToObject(step, "id", id);
  cJSON_AddStringToObject(step, "stream", stream);
  cJSON_AddStringToObject(step, "kind", kind);
  cJSON_AddStringToObject(step, "name", name);
  if (task->op >= 0) cJSON_AddStringToObject(step, "op", mdl_graph_op(pl->g, task->op)->name);
  cJSON_AddStringToObject(step, "phase", phase_name(task));
  cJSON_AddNumberToObject(step, "microbatch", task->microbatch);
  cJSON_AddItemToArray(pl->steps[device], step);
  guint64 *key = g_new(guint64, 1);
  *key = key_of(pl, t, device);
  g_hash_table_insert(pl->step_of, key, GUINT_TO_POINTER(id + 1));
  pl->sum.steps++;
  return step;
}

/* A count as the plan's whole numbers: rounded to nearest, at least 1. */
static double whole(double x) {
  double r = round(x);
  return r < 1 ? 1 : r;
}

static void finish_step(cJSON *step, const char *dtype, GArray *deps, double predicted_s) {
  cJSON_AddStringToObject(step, "dtype", dtype);
  cJSON_AddItemToObject(step, "deps", deps_json(deps));
  cJSON_AddNumberToObject(step, "predicted_s", predicted_s);
}

static void bench_op(Plan *pl, const MdlOp *op, gboolean gemm, const CmGemmShape *s,
                     double elements, gboolean backward) {
  g_autofree char *key =
      gemm ? g_strdup_printf("%s %s %.17g %.17g %.17g %.17g", mdl_op_kind_name(op->kind), pl->dtype,
                             s->m, s->n, s->k, s->batch)
           : g_strdup_printf("%s %s %.17g %d", mdl_op_kind_name(op->kind), pl->dtype, elements,
                             backward);
  if (g_hash_table_contains(pl->bench_ops, key)) return;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "op", mdl_op_kind_name(op->kind));
  cJSON_AddStringToObject(e, "dtype", pl->dtype);
  if (gemm) {
    cJSON_AddNumberToObject(e, "m", s->m);
    cJSON_AddNumberToObject(e, "n", s->n);
    cJSON_AddNumberToObject(e, "k", s->k);
    cJSON_AddNumberToObject(e, "batch", s->batch);
  } else {
    cJSON_AddNumberToObject(e, "elements", whole(elements));
    cJSON_AddStringToObject(e, "phase", backward ? "backward" : "forward");
  }
  cJSON_AddItemToArray(pl->bench_ops_json, e);
  g_hash_table_add(pl->bench_ops, g_steal_pointer(&key));
  pl->sum.microbench_ops++;
}

static void bench_collective(Plan *pl, const char *kind, int ranks, int nodes, double bytes) {
  g_autofree char *key = g_strdup_printf("%s %d %d %.17g", kind, ranks, nodes, bytes);
  if (g_hash_table_contains(pl->bench_colls, key)) return;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "kind", kind);
  cJSON_AddNumberToObject(e, "ranks", ranks);
  cJSON_AddNumberToObject(e, "nodes", nodes);
  cJSON_AddNumberToObject(e, "bytes", whole(bytes));
  cJSON_AddItemToArray(pl->bench_colls_json, e);
  g_hash_table_add(pl->bench_colls, g_steal_pointer(&key));
  pl->sum.microbench_collectives++;
}

static void gemm_fields(cJSON *step, const CmGemmShape *s) {
  cJSON_AddNumberToObject(step, "m", s->m);
  cJSON_AddNumberToObject(step, "n", s->n);
  cJSON_AddNumberToObject(step, "k", s->k);
  cJSON_AddNumberToObject(step, "batch", s->batch);
}

/* The steps of compute task @t on @device. */
static void add_compute_steps(Plan *pl, uint32_t t, int device) {
  SimTaskInfo info;
  sim_task_graph_get(pl->tg, t, &info);
  const SimTaskInfo *task = &info;
  double seconds = sim_time_seconds(task->duration);
  g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  collect_deps(pl, t, device, deps, 0);
  if (task->kind == SIM_TASK_OPTIMIZER || task->op < 0) {
    /* Memory bound (cm_optimizer_time): the bytes its time stands for. */
    double bytes = seconds * pl->c->device.hbm_bandwidth * pl->p->memory_efficiency;
    cJSON *step = new_step(pl, t, device, "compute", "elementwise", "optimizer step");
    cJSON_AddNumberToObject(step, "elements", whole(bytes / cm_optimizer_bytes(pl->p, pl->s->dtype)));
    cJSON_AddNumberToObject(step, "bytes", whole(bytes));
    finish_step(step, pl->dtype, deps, seconds);
    pl->sum.elementwise++;
    return;
  }
  const MdlOp *op = mdl_graph_op(pl->g, task->op);
  const OpShape *os = &pl->ops[task->op];
  gboolean forward = task->kind == SIM_TASK_FORWARD || task->kind == SIM_TASK_RECOMPUTE;
  const char *what = task->kind == SIM_TASK_FORWARD ? "fwd"
                     : task->kind == SIM_TASK_RECOMPUTE ? "recompute"
                     : task->kind == SIM_TASK_BACKWARD_WEIGHT ? "bwd W" : "bwd";
  if (!os->gemm || (!forward && os->ngrad == 0)) {
    double bytes = forward ? os->bytes : 2 * os->bytes;
    g_autofree char *name = g_strdup_printf("%s %s mb%d", op->name, what, task->microbatch);
    cJSON *step = new_step(pl, t, device, "compute", "elementwise", name);
    cJSON_AddNumberToObject(step, "elements", whole(os->out_elements));
    cJSON_AddNumberToObject(step, "bytes", whole(bytes));
    finish_step(step, pl->dtype, deps, seconds);
    bench_op(pl, op, FALSE, NULL, os->out_elements, !forward);
    pl->sum.elementwise++;
    return;
  }
  /* GEMMs: the forward, or the gradients this task computes. */
  CmGemmShape shapes[MDL_MAX_INPUTS];
  const char *labels[MDL_MAX_INPUTS];
  int n = 0;
  const CmGemmShape *fs = &os->shape;
  if (forward) {
    shapes[n] = *fs;
    labels[n++] = "";
  } else {
    gboolean split = os->split;
    for (int i = 0; i < os->ngrad; i++) {
      int k = os->grad_inputs[i];
      gboolean weight = mdl_graph_tensor(pl->g, op->inputs[k].tensor)->is_weight;
      if (split && task->kind == SIM_TASK_BACKWARD && weight) continue;       /* in W */
      if (task->kind == SIM_TASK_BACKWARD_WEIGHT && !weight) continue;        /* in B */
      /* dY W^T for the first operand, X^T dY for the second (sim_build.c's xs and ws). */
      shapes[n] = k == 0 ? (CmGemmShape){fs->m, fs->k, fs->n, fs->batch}
                         : (CmGemmShape){fs->k, fs->n, fs->m, fs->batch};
      labels[n++] = weight ? " dW" : " dX";
    }
  }
  if (n == 0) { /* nothing of this part: keep the task as a (tiny) pass */
    g_autofree char *name = g_strdup_printf("%s %s mb%d", op->name, what, task->microbatch);
    cJSON *step = new_step(pl, t, device, "compute", "elementwise", name);
    cJSON_AddNumberToObject(step, "elements", whole(os->out_elements));
    cJSON_AddNumberToObject(step, "bytes", whole(os->bytes));
    finish_step(step, pl->dtype, deps, seconds);
    pl->sum.elementwise++;
    return;
  }
  for (int i = 0; i < n; i++) {
    g_autofree char *name = g_strdup_printf("%s %s%s mb%d", op->name, what, labels[i], task->microbatch);
    g_autoptr(GArray) own = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    if (i == 0) g_array_append_vals(own, deps->data, deps->len);
    else {
      uint32_t prev = pl->next_id[device] - 1;
      g_array_append_val(own, prev);
    }
    cJSON *step = new_step(pl, t, device, "compute", "gemm", name);
    gemm_fields(step, &shapes[i]);
    finish_step(step, pl->dtype, own, seconds / n);
    bench_op(pl, op, TRUE, &shapes[i], 0, !forward);
    pl->sum.gemms++;
  }
}

/* The plan group of @members whose collectives run on @stream: one per member list and
 * stream, so that a runner's communicator of a group is used on one stream only (NCCL
 * serializes a communicator's operations; two streams sharing one could deadlock). */
static int group_id(Plan *pl, const int *members, int n, ValStream stream) {
  GString *key = g_string_new(val_stream_name(stream));
  for (int i = 0; i < n; i++) g_string_append_printf(key, "%s%d", i ? "," : ":", members[i]);
  gpointer v = g_hash_table_lookup(pl->groups, key->str);
  if (v) {
    g_string_free(key, TRUE);
    return GPOINTER_TO_INT(v) - 1;
  }
  int id = pl->sum.groups++;
  g_hash_table_insert(pl->groups, g_string_free(key, FALSE), GINT_TO_POINTER(id + 1));
  cJSON *g = cJSON_CreateObject();
  cJSON_AddNumberToObject(g, "id", id);
  cJSON *ranks = cJSON_AddArrayToObject(g, "ranks");
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(ranks, cJSON_CreateNumber(members[i]));
  cJSON_AddItemToArray(pl->groups_json, g);
  return id;
}

static int nodes_of(const Plan *pl, const int *members, int n) {
  int count = 0;
  for (int i = 0; i < n; i++) {
    gboolean seen = FALSE;
    int node = dev_cluster_node_of(pl->c, members[i]);
    for (int j = 0; j < i && !seen; j++) seen = dev_cluster_node_of(pl->c, members[j]) == node;
    count += !seen;
  }
  return count;
}

static char *comm_name(const Plan *pl, const SimTaskInfo *t, const char *what) {
  const char *tensor = t->tensor >= 0 ? mdl_graph_tensor(pl->g, t->tensor)->name
                       : t->op >= 0   ? mdl_graph_op(pl->g, t->op)->name
                                      : "gradients";
  if (t->microbatch >= 0) return g_strdup_printf("%s%s %s mb%d", t->kind == SIM_TASK_GRAD_SYNC ? "grad " : "", what, tensor, t->microbatch);
  return g_strdup_printf("%s%s %s", t->kind == SIM_TASK_GRAD_SYNC ? "grad " : "", what, tensor);
}

static void add_comm_steps(Plan *pl, uint32_t t) {
  SimTaskInfo info;
  sim_task_graph_get(pl->tg, t, &info);
  const SimTaskInfo *task = &info;
  g_autofree int *members = g_new(int, task->nres);
  ValStream stream = VAL_STREAM_COMM;
  int n = comm_members(pl, task, members, &stream);
  if (n < 2) return;
  double seconds = sim_time_seconds(task->duration);
  CmCollective kind = (CmCollective)task->collective;
  int nodes = nodes_of(pl, members, n);
  if (kind == CM_SEND_RECV) {
    /* A transfer: first member sends, second receives (sim_build_comm.c, sim_crossmesh). */
    for (int side = 0; side < 2; side++) {
      int device = members[side], peer = members[1 - side];
      g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
      collect_deps(pl, t, device, deps, 0);
      g_autofree char *name = comm_name(pl, task, side == 0 ? "send" : "recv");
      cJSON *step = new_step(pl, t, device, val_stream_name(stream), side == 0 ? "send" : "recv", name);
      cJSON_AddNumberToObject(step, "peer", peer);
      cJSON_AddNumberToObject(step, "bytes", whole(task->bytes));
      finish_step(step, pl->dtype, deps, seconds);
    }
    bench_collective(pl, "send_recv", 2, nodes, task->bytes);
    pl->sum.transfers++;
    return;
  }
  int group = group_id(pl, members, n, stream);
  const char *cname = cm_collective_name(kind);
  for (int i = 0; i < n; i++) {
    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    collect_deps(pl, t, members[i], deps, 0);
    g_autofree char *name = comm_name(pl, task, cname);
    cJSON *step = new_step(pl, t, members[i], val_stream_name(stream), "collective", name);
    cJSON_AddStringToObject(step, "collective", cname);
    cJSON_AddNumberToObject(step, "group", group);
    cJSON_AddNumberToObject(step, "bytes", whole(task->bytes));
    finish_step(step, pl->dtype, deps, seconds);
  }
  bench_collective(pl, cname, n, nodes, task->bytes);
  pl->sum.collectives++;
}

char *val_plan_build(const MdlGraph *graph, const MdlStrategy *strategy, const DevCluster *cluster,
                     const CmParams *params, const ValPlanRequest *request,
                     ValPlanSummary *summary, GError **error) {
  g_return_val_if_fail(graph && strategy && cluster && params && request, NULL);
  int warmup = request->warmup, iterations = request->iterations;
  if (warmup == 0 && iterations == 0) {
    warmup = VAL_PLAN_DEFAULT_WARMUP;
    iterations = VAL_PLAN_DEFAULT_ITERATIONS;
  }
  if (warmup < 0 || warmup > VAL_PLAN_MAX_ITERATIONS || iterations < 1 ||
      iterations > VAL_PLAN_MAX_ITERATIONS) {
    g_set_error(error, VAL_BUILD_ERROR, VAL_BUILD_ERROR_INPUT,
                "warm-up iterations must be 0..%d and timed iterations 1..%d (got %d and %d)",
                VAL_PLAN_MAX_ITERATIONS, VAL_PLAN_MAX_ITERATIONS, warmup, iterations);
    return NULL;
  }
  SimOptions options = {.no_symmetry = TRUE, .step_collectives = FALSE};
  SimRun *run = sim_run_new_with_options(graph, strategy, cluster, params, &options, error);
  if (!run) return NULL;
  if (sim_run_num_tasks(run) > VAL_PLAN_MAX_STEPS) {
    g_set_error(error, VAL_BUILD_ERROR, VAL_BUILD_ERROR_INPUT,
                "the iteration has %u tasks, more than a plan holds (%d): plan a smaller model "
                "or fewer microbatches", sim_run_num_tasks(run), VAL_PLAN_MAX_STEPS);
    sim_run_free(run);
    return NULL;
  }
  Plan pl = {0};
  pl.g = graph;
  pl.s = strategy;
  pl.c = cluster;
  pl.p = params;
  pl.tg = sim_run_task_graph(run);
  pl.ndev = dev_cluster_num_devices(cluster);
  pl.dtype_bytes = dev_dtype_bytes(strategy->dtype);
  pl.dtype = dev_dtype_name(strategy->dtype);
  pl.step_of = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  pl.groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  pl.bench_ops = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  pl.bench_colls = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  pl.groups_json = cJSON_CreateArray();
  pl.bench_ops_json = cJSON_CreateArray();
  pl.bench_colls_json = cJSON_CreateArray();
  pl.steps = g_new0(cJSON *, pl.ndev);
  pl.next_id = g_new0(uint32_t, pl.ndev);
  for (int d = 0; d < pl.ndev; d++) pl.steps[d] = cJSON_CreateArray();
  compute_op_shapes(&pl);
  for (uint32_t i = 0; i < sim_task_graph_size(pl.tg); i++) { /* which backwards are split */
    SimTaskInfo t;
    sim_task_graph_get(pl.tg, i, &t);
    if (t.kind == SIM_TASK_BACKWARD_WEIGHT) pl.ops[t.op].split = TRUE;
  }
  build_predecessors(&pl);

  /* In the engine's start order. */
  SimTimeline it;
  SimTaskInfo info;
  sim_timeline_init(&it, run);
  while (sim_timeline_next(&it, &info)) {
    const SimTaskInfo *task = &info;
    uint32_t t = task->id;
    if (task->role != SIM_ROLE_WHOLE || task->kind == SIM_TASK_HOST) continue; /* no GPU work */
    if (is_comm(task)) {
      add_comm_steps(&pl, t);
    } else {
      uint32_t r = task->resources[0];
      g_assert(r < sim_stream_resources(pl.ndev) && sim_resource_stream_of(r) == SIM_STREAM_COMPUTE);
      add_compute_steps(&pl, t, sim_resource_device(r));
    }
  }
  /* Ranks: every device up to the last one with steps. */
  int ranks = 0;
  for (int d = 0; d < pl.ndev; d++)
    if (pl.next_id[d] > 0) ranks = d + 1;
  pl.sum.ranks = ranks;
  pl.sum.iteration_time_s = sim_run_prediction(run)->iteration_time_s;
  pl.sum.profiled_kernels = sim_run_profiled_kernels(run);

  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "stratsim-plan");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "model", request->model_spec ? request->model_spec : graph->name);
  cJSON_AddStringToObject(root, "cluster", request->cluster_spec ? request->cluster_spec : cluster->name);
  cJSON_AddStringToObject(root, "strategy", request->strategy_spec ? request->strategy_spec : strategy->name);
  cJSON_AddStringToObject(root, "dtype", pl.dtype);
  cJSON_AddNumberToObject(root, "ranks", ranks);
  cJSON_AddNumberToObject(root, "warmup", warmup);
  cJSON_AddNumberToObject(root, "iterations", iterations);
  cJSON *pred = cJSON_AddObjectToObject(root, "predicted");
  cJSON_AddNumberToObject(pred, "iteration_time_s", sim_run_prediction(run)->iteration_time_s);
  cJSON_AddStringToObject(pred, "device", cluster->device.name);
  cJSON_AddNumberToObject(pred, "compute_s", sim_run_prediction(run)->compute_s);
  cJSON_AddNumberToObject(pred, "comm_exposed_s", sim_run_prediction(run)->comm_exposed_s);
  cJSON_AddNumberToObject(pred, "bubble_s", sim_run_prediction(run)->bubble_s);
  cJSON_AddNumberToObject(pred, "profiled_kernels", sim_run_profiled_kernels(run));
  if (sim_run_calibration(run)) cJSON_AddStringToObject(pred, "calibration", sim_run_calibration(run));
  cJSON_AddItemToObject(root, "groups", pl.groups_json);
  cJSON *programs = cJSON_AddArrayToObject(root, "programs");
  for (int d = 0; d < ranks; d++) {
    cJSON *prog = cJSON_CreateObject();
    cJSON_AddNumberToObject(prog, "rank", d);
    cJSON_AddNumberToObject(prog, "host", dev_cluster_node_of(cluster, d));
    cJSON_AddNumberToObject(prog, "local_device", d % cluster->gpus_per_node);
    cJSON_AddItemToObject(prog, "steps", pl.steps[d]);
    pl.steps[d] = NULL;
    cJSON_AddItemToArray(programs, prog);
  }
  cJSON *bench = cJSON_AddObjectToObject(root, "microbenchmarks");
  cJSON_AddItemToObject(bench, "ops", pl.bench_ops_json);
  cJSON_AddItemToObject(bench, "collectives", pl.bench_colls_json);
  char *printed = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  g_assert(printed != NULL);
  char *text = g_strdup(printed);
  cJSON_free(printed);

  for (int d = 0; d < pl.ndev; d++) cJSON_Delete(pl.steps[d]);
  g_free(pl.steps);
  g_free(pl.next_id);
  g_free(pl.ops);
  g_free(pl.pred_offsets);
  g_free(pl.pred);
  g_hash_table_destroy(pl.step_of);
  g_hash_table_destroy(pl.groups);
  g_hash_table_destroy(pl.bench_ops);
  g_hash_table_destroy(pl.bench_colls);
  if (summary) *summary = pl.sum;
  sim_run_free(run);
  return text;
}

char *val_plan_make(const ValPlanRequest *request, ValPlanSummary *summary, GError **error) {
  g_return_val_if_fail(request && request->model_spec && request->cluster_spec, NULL);
  const char *strategy_spec = request->strategy_spec ? request->strategy_spec : "dp";
  if (request->calibration && !request->db_path) {
    g_set_error(error, VAL_BUILD_ERROR, VAL_BUILD_ERROR_INPUT,
                "a calibration is read from a database: give one");
    return NULL;
  }
  /* Read only: a plan writes nothing to the database it reads kernel times from. */
  SesSpecs specs = {.model = request->model_spec, .cluster = request->cluster_spec,
                    .strategy = strategy_spec, .db_path = request->db_path, .read_only = TRUE,
                    .calibration = request->calibration, .no_profiles = request->no_profiles};
  SesSession *session = ses_session_new_from_specs(&specs, error);
  if (!session) return NULL;
  char *text = NULL;
  if (request->dtype) {
    DevDtype dt;
    if (!dev_dtype_parse(request->dtype, &dt)) {
      g_set_error(error, VAL_BUILD_ERROR, VAL_BUILD_ERROR_INPUT,
                  "unknown dtype '%s' (fp32, tf32, fp16, bf16)", request->dtype);
      goto out;
    }
    MdlStrategy *copy = mdl_strategy_copy(ses_session_strategy(session));
    copy->dtype = dt;
    ses_session_set_strategy(session, copy);
    if (!mdl_strategy_validate(copy, ses_session_graph(session), ses_session_cluster(session),
                               error))
      goto out;
  }
  if (ses_session_strategy(session)->dtype == DEV_DTYPE_FP8) { /* runners: fp32 .. bf16 steps */
    g_set_error(error, VAL_BUILD_ERROR, VAL_BUILD_ERROR_INPUT,
                "dtype fp8 cannot be validated: the runners execute fp32, tf32, fp16 or bf16 steps");
    goto out;
  }
  ValPlanRequest req = *request;
  req.strategy_spec = strategy_spec;
  text = val_plan_build(ses_session_graph(session), ses_session_strategy(session),
                        ses_session_cluster(session), ses_session_params(session), &req,
                        summary, error);
out:
  ses_session_free(session);
  return text;
}
