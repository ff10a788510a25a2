/* sim/explain — why a strategy is slow or does not fit (`stratsim explain`).
 *
 * Everything here is read off the task graph the engine simulated, so what explain lists is
 * exactly what the engine charged: for every op its mesh, split dims, the SBP layout of each
 * operand and its kernel times; for every tensor the layout its producer leaves; for one
 * representative device per mesh every collective on its communication streams (SimStream:
 * TP/CP/EP collectives, pipeline p2p, data-parallel sync), grouped by (pass, kind, tensor,
 * group size, bytes, link, time) with the number of times it runs per iteration — their sum
 * per stream is that stream's busy time in the simulation; and per
 * device memory by category. Communication buffers are not modelled yet (issue 3 adds them). */
/* Reads the run through sim.h's read API only (SimTaskInfo, spans, schedule accessors). */
#include "sim/sim.h"
#include "sim/sim-int.h" /* sim_components_json / _print */

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const phase_names[] = {"forward", "backward", "iteration"};
static const char *const link_names[DEV_LINK_COUNT] = {"intra", "inter"};

/* The hash table's key is the entry itself (its key and stream: the fields the functions
 * below compare). */
typedef struct {
  SimTaskInfo key;     /* first instance; step mode: duration 0 (spans vary with contention) */
  SimTime total;       /* summed time of all instances */
  guint count;
  guint tensors;       /* distinct tensors folded into the entry (text view) */
  int32_t last_tensor;
  SimStream stream;    /* the device's stream it runs on */
} CollectiveEntry;
G_STATIC_ASSERT(G_STRUCT_OFFSET(CollectiveEntry, key) == 0); /* an entry is read as its key */

static guint entry_hash(gconstpointer key) {
  const SimTaskInfo *t = key;
  guint h = (guint)t->phase * 31u + t->collective;
  h = h * 31u + (guint)t->tensor;
  h = h * 31u + t->group_size;
  h = h * 31u + (guint)(t->duration ^ (t->duration >> 32));
  return h;
}

static gboolean entry_equal_shape(gconstpointer a, gconstpointer b) {
  const SimTaskInfo *x = a, *y = b;
  return ((const CollectiveEntry *)a)->stream == ((const CollectiveEntry *)b)->stream &&
         x->kind == y->kind && x->phase == y->phase && x->collective == y->collective &&
         x->group_size == y->group_size && x->bytes == y->bytes && x->link == y->link &&
         x->duration == y->duration;
}

static gboolean entry_equal(gconstpointer a, gconstpointer b) {
  return ((const SimTaskInfo *)a)->tensor == ((const SimTaskInfo *)b)->tensor &&
         entry_equal_shape(a, b);
}

static guint entry_hash_shape(gconstpointer key) {
  const SimTaskInfo *t = key;
  return ((guint)t->phase * 31u + t->collective) * 31u + t->group_size +
         (guint)(t->duration ^ (t->duration >> 32));
}

/* First simulated device of each mesh (a representative: replicas run the same tasks). */
static GArray *representative_devices(const SimRun *run) {
  GArray *devs = g_array_new(FALSE, FALSE, sizeof(int));
  const SimTaskGraph *g = sim_run_task_graph(run);
  const MdlStrategy *strategy = sim_run_strategy(run);
  int ndev = sim_task_graph_num_devices(g);
  g_autofree gboolean *has_task = g_new0(gboolean, ndev);
  SimTaskInfo t;
  for (uint32_t i = 0; i < sim_task_graph_size(g); i++) {
    sim_task_graph_get(g, i, &t);
    for (int r = 0; r < t.nres; r++) {
      uint32_t id = t.resources[r];
      /* Streams only: link resources (ports, NICs: sim_network.h) are numbered after them. */
      if (id < sim_stream_resources(ndev)) has_task[sim_resource_device(id)] = TRUE;
    }
  }
  for (guint m = 0; m < strategy->meshes->len; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(strategy, (int)m);
    for (int i = 0; i < mesh->ndevices; i++) {
      int d = mesh->devices[i];
      if (!has_task[d]) continue;
      gboolean dup = FALSE;
      for (guint k = 0; k < devs->len && !dup; k++) dup = g_array_index(devs, int, k) == d;
      if (!dup) g_array_append_val(devs, d);
      break;
    }
  }
  return devs;
}

/* Collectives on @device's communication streams (all three: SimStream), grouped by everything
 * (@by_tensor) or by all but the tensor they move; @busy gets their summed time, which counts
 * concurrent collectives of two streams twice. */
static GPtrArray *device_collectives(const SimRun *run, int device, gboolean by_tensor,
                                     SimTime busy[SIM_STREAMS]) {
  const SimTaskGraph *g = sim_run_task_graph(run);
  GHashTable *index = by_tensor ? g_hash_table_new(entry_hash, entry_equal)
                                : g_hash_table_new(entry_hash_shape, entry_equal_shape);
  GPtrArray *entries = g_ptr_array_new_with_free_func(g_free);
  /* Step mode: a collective's time is its gate-to-join span in the timeline. */
  g_autoptr(GHashTable) join_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (uint32_t k = 0; k < sim_task_graph_num_spans(g); k++) {
    uint32_t gate, join;
    sim_task_graph_span(g, k, &gate, &join);
    g_hash_table_insert(join_of, GUINT_TO_POINTER(gate + 1), GUINT_TO_POINTER(join + 1));
  }
  SimTaskInfo info;
  const SimTaskInfo *t = &info;
  memset(busy, 0, sizeof(SimTime) * SIM_STREAMS);
  uint32_t first = sim_resource_compute(device);
  for (uint32_t i = 0; i < sim_task_graph_size(g); i++) {
    sim_run_task(run, i, &info);
    if (t->kind != SIM_TASK_COMM && t->kind != SIM_TASK_GRAD_SYNC) continue;
    if (t->role == SIM_ROLE_TRANSFER || t->role == SIM_ROLE_JOIN) continue;
    SimStream stream = SIM_STREAM_COMPUTE; /* none yet */
    for (int r = 0; r < t->nres && stream == SIM_STREAM_COMPUTE; r++)
      if (t->resources[r] > first && t->resources[r] < first + SIM_STREAMS)
        stream = sim_resource_stream_of(t->resources[r]);
    if (stream == SIM_STREAM_COMPUTE) continue; /* not on a communication stream of @device */
    SimTime time = t->duration;
    if (t->role == SIM_ROLE_GATE) {
      uint32_t join = GPOINTER_TO_UINT(g_hash_table_lookup(join_of, GUINT_TO_POINTER(i + 1))) - 1;
      time = sim_schedule_start(sim_run_schedule(run), join) - t->start;
    }
    busy[stream] += time;
    CollectiveEntry probe = {.key = *t, .stream = stream};
    if (t->role == SIM_ROLE_GATE) probe.key.duration = 0;
    CollectiveEntry *e = g_hash_table_lookup(index, &probe);
    if (!e) {
      e = g_new0(CollectiveEntry, 1);
      e->key = *t;
      if (t->role == SIM_ROLE_GATE) e->key.duration = 0;
      e->last_tensor = -1;
      e->stream = stream;
      g_hash_table_insert(index, e, e);
      g_ptr_array_add(entries, e);
    }
    e->count++;
    e->total += time;
    if (t->tensor != e->last_tensor) e->tensors++, e->last_tensor = t->tensor;
  }
  g_hash_table_unref(index);
  return entries;
}

static cJSON *layout_json(const MdlLayout *layout, int naxes) {
  char text[96];
  mdl_layout_format(layout, naxes, text, sizeof text);
  return cJSON_CreateString(text);
}

static cJSON *ops_json(const SimRun *run) {
  const MdlGraph *g = sim_run_graph(run);
  const MdlStrategy *s = sim_run_strategy(run);
  cJSON *ops = cJSON_CreateArray();
  for (int o = 0; o < mdl_graph_num_ops(g); o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    const MdlOpConfig *c = &s->configs[o];
    const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
    cJSON *oj = cJSON_CreateObject();
    cJSON_AddStringToObject(oj, "name", op->name);
    cJSON_AddStringToObject(oj, "kind", mdl_op_kind_name(op->kind));
    cJSON_AddNumberToObject(oj, "mesh", c->mesh);
    cJSON_AddNumberToObject(oj, "stage", c->stage);
    cJSON *split = cJSON_AddArrayToObject(oj, "split");
    for (int a = 0; a < mesh->ndims; a++)
      cJSON_AddItemToArray(split, c->split[a] >= 0 ? cJSON_CreateString(op->dims[c->split[a]].name)
                                                   : cJSON_CreateNull());
    cJSON *inputs = cJSON_AddArrayToObject(oj, "inputs");
    for (int k = 0; k < op->ninputs; k++) {
      MdlLayout l = mdl_layout_of_operand(op, &op->inputs[k], FALSE, c, mesh);
      cJSON *ij = cJSON_CreateObject();
      cJSON_AddStringToObject(ij, "tensor", mdl_graph_tensor(g, op->inputs[k].tensor)->name);
      cJSON_AddItemToObject(ij, "layout", layout_json(&l, mesh->ndims));
      cJSON_AddItemToArray(inputs, ij);
    }
    MdlLayout out = mdl_layout_of_operand(op, &op->output, TRUE, c, mesh);
    cJSON *oo = cJSON_AddObjectToObject(oj, "output");
    cJSON_AddStringToObject(oo, "tensor", mdl_graph_tensor(g, op->output.tensor)->name);
    cJSON_AddItemToObject(oo, "layout", layout_json(&out, mesh->ndims));
    cJSON_AddItemToArray(ops, oj);
  }
  return ops;
}

/* Kernel times per op into @fwd and @bwd (n ops each), read off the simulated tasks (first
 * microbatch, first device); a backward split into B and W (weight delay, Megatron's overlap)
 * counts both. */
static void op_times(const SimRun *run, double *fwd, double *bwd) {
  int n = mdl_graph_num_ops(sim_run_graph(run));
  g_autofree guint8 *seen = g_new0(guint8, n); /* bits: forward, B, W */
  SimTaskInfo info;
  const SimTaskInfo *t = &info;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    sim_run_task(run, i, &info);
    if (t->op < 0 || t->op >= n) continue;
    int bit = t->kind == SIM_TASK_FORWARD ? 1 : t->kind == SIM_TASK_BACKWARD ? 2
              : t->kind == SIM_TASK_BACKWARD_WEIGHT ? 4 : 0;
    if (!bit || (seen[t->op] & bit)) continue;
    seen[t->op] |= (guint8)bit;
    *(bit == 1 ? &fwd[t->op] : &bwd[t->op]) += sim_time_seconds(t->duration);
  }
}

static void add_op_times(const SimRun *run, cJSON *ops) {
  int n = mdl_graph_num_ops(sim_run_graph(run));
  g_autofree double *fwd = g_new0(double, n), *bwd = g_new0(double, n);
  op_times(run, fwd, bwd);
  for (int o = 0; o < n; o++) {
    cJSON *oj = cJSON_GetArrayItem(ops, o);
    cJSON_AddNumberToObject(oj, "forward_time_s", fwd[o]);
    cJSON_AddNumberToObject(oj, "backward_time_s", bwd[o]);
  }
}

static cJSON *collectives_json(const SimRun *run, const GArray *devs) {
  cJSON *arr = cJSON_CreateArray();
  for (guint k = 0; k < devs->len; k++) {
    int d = g_array_index(devs, int, k);
    SimTime busy[SIM_STREAMS];
    g_autoptr(GPtrArray) entries = device_collectives(run, d, TRUE, busy);
    cJSON *dj = cJSON_CreateObject();
    cJSON_AddNumberToObject(dj, "device", d);
    SimTime all = busy[SIM_STREAM_COMM] + busy[SIM_STREAM_P2P] + busy[SIM_STREAM_DP];
    cJSON_AddNumberToObject(dj, "comm_time_s", sim_time_seconds(all));
    cJSON *per = cJSON_AddObjectToObject(dj, "stream_time_s");
    for (int st = SIM_STREAM_COMM; st < SIM_STREAMS; st++)
      cJSON_AddNumberToObject(per, sim_stream_name((SimStream)st), sim_time_seconds(busy[st]));
    cJSON *list = cJSON_AddArrayToObject(dj, "collectives");
    for (guint i = 0; i < entries->len; i++) {
      const CollectiveEntry *e = g_ptr_array_index(entries, i);
      const SimTaskInfo *t = &e->key;
      cJSON *cj = cJSON_CreateObject();
      cJSON_AddStringToObject(cj, "phase", t->kind == SIM_TASK_GRAD_SYNC ? "gradient_sync" : phase_names[t->phase]);
      cJSON_AddStringToObject(cj, "kind", cm_collective_name((CmCollective)t->collective));
      cJSON_AddStringToObject(cj, "tensor", mdl_graph_tensor(sim_run_graph(run), t->tensor)->name);
      cJSON_AddStringToObject(cj, "op", t->op >= 0 ? mdl_graph_op(sim_run_graph(run), t->op)->name : "");
      cJSON_AddNumberToObject(cj, "group_size", t->group_size);
      cJSON_AddNumberToObject(cj, "bytes_per_device", (double)t->bytes);
      cJSON_AddStringToObject(cj, "link", link_names[t->link]);
      cJSON_AddStringToObject(cj, "stream", sim_stream_name(e->stream));
      /* Task mode: every instance takes the same time. Step mode: the mean span. */
      cJSON_AddNumberToObject(cj, "time_s", sim_time_seconds(e->total) / e->count);
      cJSON_AddNumberToObject(cj, "count", e->count);
      cJSON_AddNumberToObject(cj, "total_time_s", sim_time_seconds(e->total));
      cJSON_AddItemToArray(list, cj);
    }
    cJSON_AddItemToArray(arr, dj);
  }
  return arr;
}

static cJSON *memory_json(const SimRun *run) {
  int n = dev_cluster_num_devices(sim_run_cluster(run));
  g_autofree CmMemory *mem = cm_memory_per_device(sim_run_graph(run), sim_run_strategy(run), sim_run_cluster(run));
  cJSON *arr = cJSON_CreateArray();
  double cap = sim_run_cluster(run)->device.memory_bytes;
  for (int d = 0; d < n; d++) {
    if (mem[d].total <= 0) continue;
    cJSON *mj = cJSON_CreateObject();
    cJSON_AddNumberToObject(mj, "device", d);
    cJSON_AddNumberToObject(mj, "weights_bytes", mem[d].weights);
    cJSON_AddNumberToObject(mj, "gradients_bytes", mem[d].gradients);
    cJSON_AddNumberToObject(mj, "optimizer_bytes", mem[d].optimizer);
    cJSON_AddNumberToObject(mj, "activations_bytes", mem[d].activations);
    cJSON_AddNumberToObject(mj, "buffers_bytes", mem[d].buffers);
    cJSON_AddNumberToObject(mj, "total_bytes", mem[d].total);
    cJSON_AddNumberToObject(mj, "capacity_bytes", cap);
    cJSON_AddBoolToObject(mj, "fits", mem[d].total <= cap);
    cJSON_AddItemToArray(arr, mj);
  }
  return arr;
}

char *sim_explain_json(const SimRun *run) {
  cJSON *root = cJSON_CreateObject();
  g_autofree char *summary = sim_prediction_to_json(run, FALSE);
  cJSON_AddItemToObject(root, "prediction", cJSON_Parse(summary));
  cJSON *meshes = cJSON_AddArrayToObject(root, "meshes");
  for (guint m = 0; m < sim_run_strategy(run)->meshes->len; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(sim_run_strategy(run), (int)m);
    cJSON *mj = cJSON_CreateObject();
    cJSON_AddItemToObject(mj, "shape", cJSON_CreateIntArray(mesh->shape, mesh->ndims));
    cJSON_AddItemToObject(mj, "devices", cJSON_CreateIntArray(mesh->devices, mesh->ndevices));
    cJSON_AddItemToArray(meshes, mj);
  }
  cJSON *ops = ops_json(run);
  add_op_times(run, ops);
  cJSON_AddItemToObject(root, "ops", ops);
  g_autoptr(GArray) devs = representative_devices(run);
  cJSON_AddItemToObject(root, "communication", collectives_json(run, devs));
  cJSON_AddItemToObject(root, "memory", memory_json(run));
  cJSON_AddItemToObject(root, "components", sim_components_json(run));
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  char *out = g_strdup(text);
  cJSON_free(text);
  return out;
}

static int compare_total(gconstpointer a, gconstpointer b) {
  const CollectiveEntry *x = *(CollectiveEntry *const *)a, *y = *(CollectiveEntry *const *)b;
  SimTime tx = x->total, ty = y->total;
  return tx < ty ? 1 : tx > ty ? -1 : 0;
}

/* One op's layouts in text, per operand its layout on each mesh axis:
 * "mesh 0 (2x8) split [b, n]: [S(0),B] [B,S(1)] -> [S(0),S(2)]". */
static char *op_layout_text(const SimRun *run, int o) {
  const MdlGraph *g = sim_run_graph(run);
  const MdlStrategy *s = sim_run_strategy(run);
  const MdlOp *op = mdl_graph_op(g, o);
  const MdlOpConfig *c = &s->configs[o];
  const MdlMesh *mesh = mdl_strategy_mesh(s, c->mesh);
  GString *t = g_string_new(NULL);
  g_string_append_printf(t, "mesh %d (", c->mesh);
  for (int a = 0; a < mesh->ndims; a++) g_string_append_printf(t, "%s%d", a ? "x" : "", mesh->shape[a]);
  g_string_append(t, ") split [");
  for (int a = 0; a < mesh->ndims; a++)
    g_string_append_printf(t, "%s%s", a ? ", " : "", c->split[a] >= 0 ? op->dims[c->split[a]].name : "-");
  g_string_append(t, "]:");
  char text[96];
  for (int k = 0; k < op->ninputs; k++) {
    MdlLayout l = mdl_layout_of_operand(op, &op->inputs[k], FALSE, c, mesh);
    mdl_layout_format(&l, mesh->ndims, text, sizeof text);
    g_string_append_printf(t, " [%s]", text);
  }
  MdlLayout l = mdl_layout_of_operand(op, &op->output, TRUE, c, mesh);
  mdl_layout_format(&l, mesh->ndims, text, sizeof text);
  g_string_append_printf(t, " -> [%s]", text);
  return g_string_free(t, FALSE);
}

/* The ops with their layouts (README: "layouts of every op"), in graph order; consecutive runs
 * of ops alike (kind, stage, layouts, kernel times: the layers of a transformer) are folded
 * into one row with their count. At most @max_rows rows. */
static void print_ops(const SimRun *run, FILE *out, int max_rows) {
  const MdlGraph *g = sim_run_graph(run);
  const MdlStrategy *s = sim_run_strategy(run);
  int n = mdl_graph_num_ops(g);
  g_autofree double *fwd = g_new0(double, n), *bwd = g_new0(double, n);
  op_times(run, fwd, bwd);
  g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func(g_free);
  for (int o = 0; o < n; o++) g_ptr_array_add(texts, op_layout_text(run, o));
  fprintf(out, "\nops: layouts per mesh axis (S(d) split on tensor dim d, B replicated, P partial "
               "sums), inputs -> output; kernel times of one microbatch\n");
  fprintf(out, "  %-26s %-14s %5s %10s %10s  %s\n", "op (first) +alike", "kind", "stage",
          "fwd us", "bwd us", "layout");
  /* Ops alike (kind, stage, kernel times and layouts agree: the same op of every layer) fold
   * into the row of the first, found by a hash of that signature: linear in the ops. */
  g_autoptr(GHashTable) row_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GArray) first = g_array_new(FALSE, FALSE, sizeof(int));
  g_autoptr(GArray) count = g_array_new(FALSE, TRUE, sizeof(int));
  for (int o = 0; o < n; o++) {
    char *key = g_strdup_printf("%d|%d|%.17g|%.17g|%s", mdl_graph_op(g, o)->kind,
                                s->configs[o].stage, fwd[o], bwd[o],
                                (char *)g_ptr_array_index(texts, o));
    gpointer row;
    if (g_hash_table_lookup_extended(row_of, key, NULL, &row)) {
      g_array_index(count, int, GPOINTER_TO_INT(row))++;
      g_free(key);
      continue;
    }
    g_hash_table_insert(row_of, key, GINT_TO_POINTER((int)first->len));
    g_array_append_val(first, o);
    int one = 1;
    g_array_append_val(count, one);
  }
  for (guint r = 0; r < first->len && (int)r < max_rows; r++) {
    int o = g_array_index(first, int, r), alike = g_array_index(count, int, r) - 1;
    const MdlOp *op = mdl_graph_op(g, o);
    g_autofree char *name = alike ? g_strdup_printf("%s +%d", op->name, alike) : g_strdup(op->name);
    fprintf(out, "  %-26.26s %-14s %5d %10.3f %10.3f  %s\n", name, mdl_op_kind_name(op->kind),
            s->configs[o].stage, fwd[o] * 1e6, bwd[o] * 1e6, (char *)g_ptr_array_index(texts, o));
  }
  if ((int)first->len > max_rows)
    fprintf(out, "  ... %d more rows of ops (--rows N, or --json lists all)\n",
            (int)first->len - max_rows);
}

void sim_explain_print(const SimRun *run, FILE *out, int max_rows) {
  const SimPrediction *p = sim_run_prediction(run);
  fprintf(out, "explain: %s on %s, strategy %s: iteration %.6g s, compute %.6g s, exposed "
               "communication %.6g s, host-bound %.6g s, bubble %.6g s\n",
          sim_run_graph(run)->name, sim_run_cluster(run)->name, sim_run_strategy(run)->name, p->iteration_time_s,
          p->compute_s, p->comm_exposed_s, p->host_bound_s, p->bubble_s);
  sim_components_print(run, out, max_rows);
  print_ops(run, out, max_rows);
  g_autoptr(GArray) devs = representative_devices(run);
  for (guint k = 0; k < devs->len; k++) {
    int d = g_array_index(devs, int, k);
    SimTime busy[SIM_STREAMS];
    g_autoptr(GPtrArray) entries = device_collectives(run, d, FALSE, busy);
    g_ptr_array_sort(entries, compare_total);
    fprintf(out, "\nGPU %d: communication streams busy: comm (TP/CP/EP) %.6g s, p2p %.6g s, dp "
                 "%.6g s; %u kinds of collective\n", d, sim_time_seconds(busy[SIM_STREAM_COMM]),
            sim_time_seconds(busy[SIM_STREAM_P2P]), sim_time_seconds(busy[SIM_STREAM_DP]),
            entries->len);
    fprintf(out, "  %-9s %-14s %-24s %5s %12s %5s %6s %11s %7s %10s\n", "pass", "collective",
            "tensor (first)", "group", "bytes/dev", "link", "stream", "time", "count", "total");
    for (guint i = 0; i < entries->len && (int)i < max_rows; i++) {
      const CollectiveEntry *e = g_ptr_array_index(entries, i);
      const SimTaskInfo *t = &e->key;
      g_autofree char *tensor = e->tensors > 1
          ? g_strdup_printf("%s +%u", mdl_graph_tensor(sim_run_graph(run), t->tensor)->name, e->tensors - 1)
          : g_strdup(mdl_graph_tensor(sim_run_graph(run), t->tensor)->name);
      fprintf(out, "  %-9s %-14s %-24.24s %5u %12.0f %5s %6s %9.3f us %7u %8.4f s\n",
              t->kind == SIM_TASK_GRAD_SYNC ? "grad-sync" : phase_names[t->phase],
              cm_collective_name((CmCollective)t->collective), tensor, t->group_size, (double)t->bytes,
              link_names[t->link], sim_stream_name(e->stream), sim_time_seconds(e->total) / e->count * 1e6, e->count,
              sim_time_seconds(e->total));
    }
    if ((int)entries->len > max_rows) fprintf(out, "  ... %u more (--json lists all)\n", entries->len - max_rows);
  }
  g_autofree CmMemory *mem = cm_memory_per_device(sim_run_graph(run), sim_run_strategy(run), sim_run_cluster(run));
  fprintf(out, "\nmemory per device (GiB): weights gradients optimizer activations buffers total / "
               "capacity\n");
  int n = dev_cluster_num_devices(sim_run_cluster(run)), shown = 0;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  for (int d = 0; d < n; d++) {
    if (mem[d].total <= 0) continue;
    /* Print a device when its figures differ from the previous one shown. */
    if (shown > 0 && d > 0 && mem[d].total == mem[d - 1].total) continue;
    fprintf(out, "  GPU %-5d %8.3f %9.3f %9.3f %11.3f %7.3f %8.3f / %.3g %s\n", d,
            mem[d].weights / gib, mem[d].gradients / gib, mem[d].optimizer / gib,
            mem[d].activations / gib, mem[d].buffers / gib, mem[d].total / gib, sim_run_cluster(run)->device.memory_bytes / gib,
            mem[d].total <= sim_run_cluster(run)->device.memory_bytes ? "" : "DOES NOT FIT");
    shown++;
  }
  fprintf(out, "  (devices with the same figures as the one above are not repeated)\n");
}
