/* sim/graph — the task graph container: tasks as compact structs, resources as runs in one
 * array, successors in CSR form built once from an edge list (counting sort, O(V + E)).
 *
 * Huge pages: removed (2026-12-02). The per-task arrays of the graph, the builder, merging and
 * both engines up to 64 MiB each asked for them (madvise MADV_HUGEPAGE; added 2026-11-24 for
 * the engine's TLB misses). On this VM (transparent huge pages enabled=madvise,
 * defrag=madvise: the kernel compacts memory at the fault of a hinted page) that made a
 * process's first prediction erratic: `stratsim simulate` of the 175B interleaved point
 * (tp=8, pp=16, dp=8, vp=2), 12 one-shot runs each, alternated: 0.134 s mean wall with the hints
 * (0.089 s system, worst 0.34 s), 0.057 s without (0.026 s system, worst 0.08 s); a second
 * set of 15: 0.062 s (worst 0.20) against 0.053 s (worst 0.06). `bench --suite predict`, 4
 * alternated runs: the first prediction of the recompute and zero=1 points 48-308 ms CPU
 * with the hints, 23-84 ms without; the medians over 5 more alternated runs (21 predictions
 * each) the same within the VM's noise (175B interleaved 29.1 against 33.4 ms mean, 1F1B 23.4
 * against 25.9, selective recompute 49.5 against 48.0, vp=4 zero=1 14.0 against 14.1: without
 * against with). No benefit measured in steady state, and the hint's cost depends on how
 * fragmented the machine's memory is: the arrays stay on small pages. The heap as a whole
 * asking for them was measured later the same day (util/util_memory.c): faster back to back,
 * ~3x slower one-shot after an idle pause on this VM (page reporting to the host), so it is
 * only an opt-in there (STRATSIM_HUGE_PAGES=1). */
#include "sim/sim-int.h"
#include "sim/sim.h"

#include <math.h>
#include <time.h>

double sim_thread_cpu_s(void) {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
#endif
  return 0;
}

SimTime sim_time_from_seconds(double seconds) {
  if (!(seconds > 0)) return 0;
  double ps = nearbyint(seconds * SIM_PS_PER_SECOND);
  return ps >= 1.8e19 ? UINT64_MAX / 2 : (SimTime)ps;
}

G_DEFINE_QUARK(stratsim-sim-error-quark, sim_error)

static const char *const kind_names[SIM_TASK_KIND_COUNT] = {
    "forward", "backward", "comm", "grad_sync", "optimizer", "backward_weight", "recompute",
    "host"};

static const char *const stream_names[SIM_STREAMS] = {"compute", "comm", "p2p", "dp"};

const char *sim_stream_name(SimStream stream) {
  g_return_val_if_fail(stream < SIM_STREAMS, "?");
  return stream_names[stream];
}

const char *sim_task_kind_name(SimTaskKind kind) {
  g_return_val_if_fail(kind < SIM_TASK_KIND_COUNT, "?");
  return kind_names[kind];
}

SimTaskGraph *sim_task_graph_new(int num_devices) {
  SimTaskGraph *g = g_new0(SimTaskGraph, 1);
  g->tasks = g_array_new(FALSE, FALSE, sizeof(SimTask));
  g->task_resources = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g->edges = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g->spans = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g->num_devices = num_devices;
  g->num_resources = (int)sim_stream_resources(num_devices);
  g->host_base = UINT32_MAX;
  return g;
}

void sim_task_graph_free(SimTaskGraph *g) {
  if (!g) return;
  g_array_unref(g->tasks);
  g_array_unref(g->task_resources);
  if (g->edges) g_array_unref(g->edges);
  g_array_unref(g->spans);
  g_free(g->succ_offsets);
  g_free(g->succ);
  g_free(g->indegree);
  g_free(g->chain_prev);
  g_free(g->program);
  g_free(g->program_begin);
  g_free(g->program_block);
  g_free(g->program_pos);
  g_free(g->block_duration);
  g_free(g->block_host);
  g_free(g->block_kernels);
  g_free(g);
}

uint32_t sim_task_graph_add(SimTaskGraph *g, const SimTask *task, const uint32_t *resources,
                            int nres) {
  g_return_val_if_fail(nres >= 0 && nres <= UINT16_MAX && (resources || !nres), UINT32_MAX);
  SimTask t = *task;
  t.res_begin = g->task_resources->len;
  t.nres = (uint16_t)nres;
  if (nres) g_array_append_vals(g->task_resources, resources, (guint)nres);
  g_array_append_val(g->tasks, t);
  return g->tasks->len - 1;
}

void sim_task_graph_finish(SimTaskGraph *g) {
  uint32_t n = g->tasks->len;
  uint32_t m = g->edges->len / 2;
  const uint32_t *e = (const uint32_t *)g->edges->data;
  g->succ_offsets = g_new0(uint32_t, (gsize)n + 1);
  g->indegree = g_new0(uint32_t, n ? n : 1);
  g->succ = g_new(uint32_t, m ? m : 1);
  for (uint32_t i = 0; i < m; i++) {
    g->succ_offsets[e[2 * i] + 1]++;
    g->indegree[e[2 * i + 1]]++;
  }
  for (uint32_t i = 0; i < n; i++) g->succ_offsets[i + 1] += g->succ_offsets[i];
  g_autofree uint32_t *fill = g_memdup2(g->succ_offsets, sizeof(uint32_t) * (gsize)n + 1);
  for (uint32_t i = 0; i < m; i++) g->succ[fill[e[2 * i]]++] = e[2 * i + 1];
  g_array_unref(g->edges);
  g->edges = NULL;
}

void sim_task_graph_op_compute(const SimTaskGraph *g, int nops, guint64 *sum, guint64 *forwards) {
  memset(sum, 0, sizeof(guint64) * (gsize)nops);
  memset(forwards, 0, sizeof(guint64) * (gsize)nops);
  for (uint32_t t = 0; t < sim_task_graph_size(g); t++) {
    const SimTask *task = sim_task_graph_task(g, t);
    if (task->op < 0) continue;
    switch (task->kind) {
    case SIM_TASK_FORWARD:
      forwards[task->op]++;
      /* fall through */
    case SIM_TASK_BACKWARD:
    case SIM_TASK_BACKWARD_WEIGHT:
    case SIM_TASK_RECOMPUTE:
      sum[task->op] += task->duration;
      break;
    default:
      break;
    }
  }
}

uint32_t sim_task_graph_size(const SimTaskGraph *g) { return g->tasks->len; }

void sim_task_graph_get(const SimTaskGraph *g, uint32_t id, SimTaskInfo *out) {
  g_return_if_fail(id < g->tasks->len);
  const SimTask *t = sim_task_graph_task(g, id);
  *out = (SimTaskInfo){.id = id, .kind = (SimTaskKind)t->kind, .role = (SimTaskRole)t->role,
                       .phase = (SimPhase)t->phase, .collective = (CmCollective)t->collective,
                       .link = (DevLinkClass)t->link, .op = t->op, .tensor = t->tensor,
                       .microbatch = t->microbatch, .bytes = t->bytes,
                       .group_size = t->group_size, .duration = t->duration,
                       .resources = (const uint32_t *)g->task_resources->data + t->res_begin,
                       .nres = t->nres, .device = -1};
  for (int r = 0; r < out->nres && out->device < 0; r++)
    if (out->resources[r] < sim_stream_resources(g->num_devices))
      out->device = sim_resource_device(out->resources[r]);
    else sim_task_graph_host_device(g, out->resources[r], &out->device); /* a host launch */
}

const uint32_t *sim_task_graph_successors(const SimTaskGraph *g, uint32_t id, uint32_t *count) {
  g_return_val_if_fail(g->succ_offsets && id < g->tasks->len, (*count = 0, NULL));
  *count = g->succ_offsets[id + 1] - g->succ_offsets[id];
  return g->succ + g->succ_offsets[id];
}

uint32_t sim_task_graph_num_edges(const SimTaskGraph *g) {
  return g->succ_offsets ? g->succ_offsets[g->tasks->len] : (g->edges ? g->edges->len / 2 : 0);
}

int sim_task_graph_num_devices(const SimTaskGraph *g) { return g->num_devices; }
int sim_task_graph_num_resources(const SimTaskGraph *g) { return g->num_resources; }
gboolean sim_task_graph_host_device(const SimTaskGraph *g, uint32_t r, int *device) {
  if (g->host_base == UINT32_MAX || r < g->host_resource_base ||
      r >= g->host_resource_base + (uint32_t)g->num_devices)
    return FALSE;
  *device = (int)(r - g->host_resource_base);
  return TRUE;
}
gboolean sim_task_graph_symmetric(const SimTaskGraph *g) { return g->symmetric; }
int sim_task_graph_simulated_devices(const SimTaskGraph *g) { return g->simulated_devices; }
uint32_t sim_task_graph_num_spans(const SimTaskGraph *g) { return g->spans->len / 2; }

void sim_task_graph_span(const SimTaskGraph *g, uint32_t k, uint32_t *gate, uint32_t *join) {
  g_return_if_fail(k < g->spans->len / 2);
  *gate = g_array_index(g->spans, uint32_t, 2 * k);
  *join = g_array_index(g->spans, uint32_t, 2 * k + 1);
}
