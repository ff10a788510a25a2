/* sim/run — one simulated iteration end to end: build, engine, breakdown, memory, JSON.
 *
 * Breakdown per device over [0, makespan]: compute = busy time of its compute stream;
 * exposed communication = time some communication stream of it (the union of its
 * SIM_STREAM_COMM, P2P and DP streams' busy intervals) is busy while its compute stream is
 * idle; host-bound = time its compute stream waits for the host to launch the next kernel and
 * no communication runs (sim_host_wait_intervals); bubble = the rest (pipeline fill and drain,
 * waiting on other devices). Reported figures are means over the devices the strategy uses,
 * so compute + exposed communication + host-bound + bubble = iteration time.
 *
 * (Tried, tmpl-engine 2026-12-02: sim_breakdown_sums reading per-stream lists the folded engine
 * kept instead of its log: the breakdown 22.6 -> 11.6 M instructions a prediction, the engine
 * 37.8 -> 46.2 M; -1.0% in all, not kept: sim_engine_folds.c's header has the figures.) */
#include "sim/sim.h"
#include "sim/sim-int.h"
#include "sim/sim_progress.h"
#include "sim/sim_crossmesh.h"

#include <cjson/cJSON.h>

#include "costmodel/cm_calibrate.h"
#include "costmodel/cm_profile.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
  SimTime start, end;
} Interval;
G_STATIC_ASSERT(sizeof(Interval) == 2 * sizeof(SimTime)); /* sim_host_wait_intervals' pairs */

/* Measure of @comm (sorted, disjoint) minus @compute (sorted, disjoint). */
static SimTime exposed_time(const Interval *comm, guint ncomm, const Interval *compute,
                            guint ncompute) {
  SimTime exposed = 0;
  guint j = 0;
  for (guint i = 0; i < ncomm; i++) {
    SimTime s = comm[i].start, e = comm[i].end;
    while (j < ncompute && compute[j].end <= s) j++;
    SimTime cursor = s;
    for (guint k = j; k < ncompute && compute[k].start < e; k++) {
      if (compute[k].start > cursor) exposed += compute[k].start - cursor;
      if (compute[k].end > cursor) cursor = compute[k].end;
      if (cursor >= e) break;
    }
    if (cursor < e) exposed += e - cursor;
  }
  return exposed;
}

static int compare_interval(const void *a, const void *b) {
  const Interval *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Sorts and merges @n intervals in place; returns how many remain (disjoint, sorted). */
static guint merge_intervals(Interval *iv, guint n) {
  if (n == 0) return 0;
  qsort(iv, n, sizeof(Interval), compare_interval);
  guint out = 0;
  for (guint i = 1; i < n; i++) {
    if (iv[i].start <= iv[out].end) {
      if (iv[i].end > iv[out].end) iv[out].end = iv[i].end;
    } else {
      iv[++out] = iv[i];
    }
  }
  return out + 1;
}

/* The union of two lists of intervals sorted by start into @out (room for both): a merge
 * by start, coalescing as it goes (an interval that starts no later than the last one ends
 * extends it). Returns its length (disjoint, sorted). The union as a set, and so its
 * coalesced list, does not depend on the order in which equal starts are taken. (A few
 * intervals against a long list, by bisection and the long list's runs copied whole where
 * each interval starts after the one before ends, was tried (engine9, 2026-12-01): checking
 * that separation costs what the copy saves, cachegrind -0.1 M instructions a prediction on
 * the 175B point; not kept.) */
static guint union_two(const Interval *a, guint na, const Interval *b, guint nb, Interval *out) {
  guint i = 0, j = 0, n = 0;
  while (i < na || j < nb) {
    Interval x = j == nb || (i < na && a[i].start <= b[j].start) ? a[i++] : b[j++];
    if (n > 0 && x.start <= out[n - 1].end) {
      if (x.end > out[n - 1].end) out[n - 1].end = x.end;
    } else {
      out[n++] = x;
    }
  }
  return n;
}

/* The union of @nlists (at most SIM_STREAMS) lists of intervals, each sorted by start (a
 * stream's tasks in the engine's start order, step mode's merged spans), into @out (room for
 * all of them), two at a time (@scratch: room for all of them too, when more than two),
 * shortest first: each step passes over the union so far, and a device's streams differ
 * much in length (175B bench point: 5.2k, 1.1-1.5k and 2 intervals; longest first, the
 * third step copied the 6.4k union again to add two). Returns its length (disjoint,
 * sorted: the same set in whatever order, so the same list). */
static guint union_sorted(const Interval *const *lists, const guint *lengths, int nlists,
                          Interval *out, Interval *scratch) {
  if (nlists <= 2)
    return union_two(lists[0], nlists > 0 ? lengths[0] : 0, nlists > 1 ? lists[1] : NULL,
                     nlists > 1 ? lengths[1] : 0, out);
  int by[SIM_STREAMS]; /* the lists by length (insertion) */
  for (int k = 0; k < nlists; k++) {
    int j = k;
    for (; j > 0 && lengths[by[j - 1]] > lengths[k]; j--) by[j] = by[j - 1];
    by[j] = k;
  }
  /* each next list with the union of the shorter ones, built in whichever buffer leaves the
   * last step writing @out */
  Interval *buf[2] = {out, scratch};
  int w = (nlists - 2) & 1; /* the buffer the first of the nlists - 1 steps writes */
  guint n = union_two(lists[by[0]], lengths[by[0]], lists[by[1]], lengths[by[1]], buf[w]);
  for (int k = 2; k < nlists; k++, w ^= 1)
    n = union_two(buf[w], n, lists[by[k]], lengths[by[k]], buf[w ^ 1]);
  g_assert(buf[w] == out);
  return n;
}

/* Communication intervals of every device in step-expanded mode: a collective occupies its
 * members from its gate's start to its join's start; concurrent ones overlap and merge.
 * Returns per device a sorted disjoint list (CSR: @offsets has devices + 1 entries). */
static Interval *span_intervals(const SimTaskGraph *g, const SimSchedule *s, guint **offsets_out) {
  const uint32_t *res = (const uint32_t *)g->task_resources->data;
  const uint32_t *spans = (const uint32_t *)g->spans->data;
  guint nspans = g->spans->len / 2, n = (guint)g->num_devices;
  guint *offsets = g_new0(guint, n + 1);
  for (guint k = 0; k < nspans; k++) {
    const SimTask *gate = sim_task_graph_task(g, spans[2 * k]);
    for (uint16_t r = 0; r < gate->nres; r++)
      offsets[sim_resource_device(res[gate->res_begin + r]) + 1]++;
  }
  for (guint d = 0; d < n; d++) offsets[d + 1] += offsets[d];
  Interval *iv = g_new(Interval, offsets[n] ? offsets[n] : 1);
  g_autofree guint *fill = g_memdup2(offsets, sizeof(guint) * (n + 1));
  for (guint k = 0; k < nspans; k++) {
    const SimTask *gate = sim_task_graph_task(g, spans[2 * k]);
    Interval span = {s->start[spans[2 * k]], s->start[spans[2 * k + 1]]};
    for (uint16_t r = 0; r < gate->nres; r++)
      iv[fill[sim_resource_device(res[gate->res_begin + r])]++] = span;
  }
  /* Merge each device's list, then pack. */
  guint out = 0;
  for (guint d = 0; d < n; d++) {
    guint begin = offsets[d], m = merge_intervals(iv + begin, offsets[d + 1] - begin);
    memmove(iv + out, iv + begin, m * sizeof(Interval));
    offsets[d] = out;
    out += m;
  }
  offsets[n] = out;
  *offsets_out = offsets;
  return iv;
}

static SimTime measure(const Interval *iv, guint n) {
  SimTime sum = 0;
  for (guint i = 0; i < n; i++) sum += iv[i].end - iv[i].start;
  return sum;
}

/* A host wait inside a device's optimizer step (sim_host_step_wait). */
typedef struct {
  guint device;
  Interval wait;
} StepWait;

/* @iv/@off (sim_host_wait_intervals' layout) with each device's @steps (in engine order)
 * after its own; a new array and its offsets (*@off_out), caller frees both. */
static SimTime *with_step_waits(int ndev, const SimTime *iv, const guint *off, const GArray *steps,
                                guint **off_out) {
  guint n = (guint)ndev, *offsets = g_new0(guint, n + 1);
  const StepWait *w = (const StepWait *)steps->data;
  for (guint k = 0; k < steps->len; k++) offsets[w[k].device + 1]++;
  for (guint d = 0; d < n; d++) offsets[d + 1] += offsets[d] + (off[d + 1] - off[d]);
  Interval *out = g_new(Interval, (gsize)offsets[n] + 1);
  g_autofree guint *fill = g_new(guint, n + 1);
  for (guint d = 0; d < n; d++) { /* the compute-launch waits first */
    memcpy(out + offsets[d], iv + 2 * off[d], sizeof(Interval) * (off[d + 1] - off[d]));
    fill[d] = offsets[d] + (off[d + 1] - off[d]);
  }
  for (guint k = 0; k < steps->len; k++) out[fill[w[k].device]++] = w[k].wait;
  *off_out = offsets;
  return (SimTime *)out;
}

/* Appends @x to a resource's list iv[@begin, *@fill): one that starts where the last ends
 * extends it (a chain's stretches run back to back; the union and the measure are the same),
 * and one that starts before the last marks the list for sorting (@unsorted). */
static inline void append_interval(Interval *iv, guint begin, guint *fill, Interval x,
                                   guint8 *unsorted) {
  if (*fill > begin) {
    Interval *last = &iv[*fill - 1];
    if (x.start == last->end) {
      last->end = x.end;
      return;
    }
    if (x.start < last->start) *unsorted = 1;
  }
  iv[(*fill)++] = x;
}

/* Pop @k of a schedule the engine did not log (an engine without folds: sim_engine_folds.c
 * always logs), as the log would hold it, from its order. Made one at a time: a log for the
 * whole schedule was 48 bytes a task at the peak of an expanded run (2026-12-02, 175B
 * interleaved point at batch 256 with --trace: 1.43 GB max RSS against 0.88 GB before the
 * breakdown). */
static inline SimPop pop_of(const SimTaskGraph *g, const SimSchedule *s, const uint32_t *res,
                            uint32_t k) {
  uint32_t id = s->order[k];
  if (k + 16 < s->num_tasks) { /* the order is scattered in ids: fetch ahead */
    __builtin_prefetch(sim_task_graph_task(g, s->order[k + 16]));
    __builtin_prefetch(&s->start[s->order[k + 16]]);
  }
  const SimTask *t = sim_task_graph_task(g, id);
  return (SimPop){s->start[id], t->duration, 0, id, t->res_begin,
                  t->nres ? res[t->res_begin] : UINT32_MAX, t->nres, t->kind, FALSE, 0, 0};
}

/* @iv[0 .. @n) (sorted, disjoint) clipped to [@lo, @hi), into @out; returns how many. */
static guint clip_intervals(const Interval *iv, guint n, SimTime lo, SimTime hi, Interval *out) {
  guint k = 0;
  for (guint i = 0; i < n; i++) {
    SimTime s = MAX(iv[i].start, lo), e = MIN(iv[i].end, hi);
    if (s < e) out[k++] = (Interval){s, e};
  }
  return k;
}

/* The sums of one device's lists (compute @cv, communication @mv, host waits @hv: each sorted
 * and disjoint) into @out; @covered: room for @nc + @nh. */
static void device_sums(const Interval *cv, guint nc, const Interval *mv, guint nm,
                        const Interval *hv, guint nh, Interval *covered, SimBreakdownSums *out) {
  out->compute += measure(cv, nc);
  out->comm += measure(mv, nm);
  out->host += measure(hv, nh);
  if (nh == 0) {
    out->exposed += exposed_time(mv, nm, cv, nc);
  } else {
    const Interval *lists[2] = {cv, hv};
    const guint lengths[2] = {nc, nh};
    out->exposed += exposed_time(mv, nm, covered, union_sorted(lists, lengths, 2, covered, NULL));
  }
}

void sim_breakdown_sums(const SimTaskGraph *g, const SimSchedule *s, const SimTime *host_iv,
                        const guint *host_off, const SimFolds *folds, SimBreakdownSums *out) {
  sim_breakdown_sums_window(g, s, host_iv, host_off, folds, 0, 0, out, NULL);
}

void sim_breakdown_sums_window(const SimTaskGraph *g, const SimSchedule *s, const SimTime *host_iv,
                               const guint *host_off, const SimFolds *folds, SimTime from,
                               SimTime to, SimBreakdownSums *out, SimBreakdownSums *window) {
  double cpu0 = sim_thread_cpu_s();
  int nres = g->num_resources;
  /* Intervals per resource in start order: the engine's start order is per-resource order. */
  const uint32_t *res = (const uint32_t *)g->task_resources->data;
  g_assert(s->log || !folds);
  g_assert(!folds || (s->count && s->stretch));
  g_autofree guint *count = NULL;
  if (s->count) { /* the engine counted its log (SimSchedule.count) */
    count = g_memdup2(s->count, sizeof(guint) * ((gsize)nres + 1));
  } else { /* counts: any order */
    count = g_new0(guint, (gsize)nres + 1);
    for (uint32_t id = 0; id < s->num_tasks; id++) {
      const SimTask *t = sim_task_graph_task(g, id);
      for (uint16_t r = 0; r < t->nres; r++) count[res[t->res_begin + r] + 1]++;
    }
  }
  for (int r = 0; r < nres; r++) count[r + 1] += count[r];
  g_autofree guint8 *unsorted = g_new0(guint8, (gsize)nres + 1);
  g_autofree Interval *iv = g_new(Interval, count[nres] ? count[nres] : 1);
  g_autofree guint *fill = g_memdup2(count, sizeof(guint) * ((gsize)nres + 1));
  uint32_t streams = sim_stream_resources(g->num_devices);
  /* In the same pass, the host waits inside the optimizer steps (sim_host_step_wait), from
   * each compute stream's last end so far: (device, interval) in engine order. */
  g_autofree SimTime *prev_end = g_new0(SimTime, (gsize)g->num_devices + 1);
  g_autoptr(GArray) steps = g_array_new(FALSE, FALSE, sizeof(StepWait));
  uint32_t nlog = s->log ? s->nlog : s->num_tasks;
  for (uint32_t k = 0; k < nlog; k++) { /* in order, read in order */
    SimPop made;
    const SimPop *e = s->log ? &s->log[k] : (made = pop_of(g, s, res, k), &made);
    uint32_t id = e->id;
    if (id == UINT32_MAX) continue; /* a withdrawn reservation (SimSchedule.log) */
    SimTime start = e->start, end = start + e->duration;
    /* A collective folded into a compute chain (SimFolds): its steps' compute stretches run
     * from its fork's end, each after the collective it joins, on the device's compute stream
     * (after the chain's earlier stretches: the stream's list stays in start order); the
     * chain task itself is its first stretch. The engine logged them as it timed them. */
    if (e->nstretches) {
      guint d = (guint)sim_resource_device(e->res0);
      uint32_t c = sim_resource_compute((int)d);
      const SimTime *st = s->stretch + 2 * (gsize)e->stretch;
      for (uint32_t i = 0; i < e->nstretches; i++, st += 2) {
        append_interval(iv, count[c], &fill[c], (Interval){st[0], st[1]}, &unsorted[c]);
        prev_end[d] = MAX(prev_end[d], st[1]);
      }
    }
    gboolean is_comm = e->kind == SIM_TASK_COMM || e->kind == SIM_TASK_GRAD_SYNC;
    for (uint16_t r = 0; r < e->nres; r++) {
      uint32_t resource = r == 0 ? e->res0 : res[e->res_begin + r];
      if (resource < streams && sim_resource_stream_of(resource) == SIM_STREAM_COMPUTE) {
        guint d = (guint)sim_resource_device(resource);
        StepWait w = {d, {0, 0}};
        if (e->kind == SIM_TASK_OPTIMIZER &&
            sim_host_step_wait(g, s, id, prev_end[d], &w.wait.start, &w.wait.end))
          g_array_append_val(steps, w);
        if (end > prev_end[d]) prev_end[d] = end;
        /* Without overlap collectives also hold compute streams: they are not compute. */
        if (is_comm) continue;
      }
      if (e->duration)
        append_interval(iv, count[resource], &fill[resource], (Interval){start, end}, &unsorted[resource]);
    }
  }
  /* With folds a task can come after a reserved collective on its stream that starts later
   * (sim_engine_folds.c): such lists are put in start order (nearly sorted: insertion). */
  for (int r = 0; r < nres; r++)
    for (guint i = count[r] + 1; unsorted[r] && i < fill[r]; i++) {
      Interval x = iv[i];
      guint j = i;
      for (; j > count[r] && iv[j - 1].start > x.start; j--) iv[j] = iv[j - 1];
      iv[j] = x;
    }
  g_autofree guint *all_off = NULL;
  g_autofree SimTime *all_iv = with_step_waits(g->num_devices, host_iv, host_off, steps, &all_off);
  /* Sums in integer picoseconds, divided once: identical replicas give exactly their own value
   * (n*v/n == v in IEEE arithmetic), so symmetric and expanded runs agree bit for bit. */
  SimBreakdownSums all = {0}, part = {0};
  int used = 0;
  g_autofree Interval *clipped = NULL; /* the window's: compute, communication, host waits */
  guint clipped_cap = 0;
  g_autofree guint *span_off = NULL;
  g_autofree Interval *span_iv = g->spans->len ? span_intervals(g, s, &span_off) : NULL;
  /* The union of a device's communication streams (and step mode's spans), when more than
   * one of them is busy: one scratch list, as long as the longest device's. */
  g_autofree Interval *both = NULL;
  guint most_comm = 0;
  g_autofree Interval *covered = NULL; /* a device's compute and launch-wait intervals */
  guint covered_cap = 0;
  for (int d = 0; d < g->num_devices; d++) {
    uint32_t c = sim_resource_compute(d);
    if (count[c] == count[c + SIM_STREAMS]) continue; /* no task on any of its streams */
    used++;
    const Interval *cv = iv + count[c];
    guint nc = fill[c] - count[c];
    guint ns = span_iv ? span_off[d + 1] - span_off[d] : 0, busy = ns > 0;
    uint32_t only = c;
    for (uint32_t r = c + 1; r < c + SIM_STREAMS; r++)
      if (fill[r] > count[r]) busy++, only = r;
    /* Communication intervals of one stream are disjoint and in start order already. */
    const Interval *mv = iv + count[only];
    guint nm = busy == 1 && ns == 0 ? fill[only] - count[only] : 0;
    if (busy > 1 || ns > 0) {
      if (!both) {
        guint most = 0;
        for (int e = 0; e < g->num_devices; e++) {
          uint32_t ce = sim_resource_compute(e);
          guint n = (fill[ce + SIM_STREAMS - 1] - count[ce + 1]) + (span_iv ? span_off[e + 1] - span_off[e] : 0);
          most = MAX(most, n);
        }
        most_comm = most + 1;
        both = g_new(Interval, 2 * (gsize)most_comm); /* and the scratch of union_sorted */
      }
      const Interval *lists[SIM_STREAMS];
      guint lengths[SIM_STREAMS], nlists = 0;
      for (uint32_t r = c + 1; r < c + SIM_STREAMS; r++) /* the busy ones */
        if (fill[r] > count[r]) {
          lists[nlists] = iv + count[r];
          lengths[nlists++] = fill[r] - count[r];
        }
      if (ns) {
        lists[nlists] = span_iv + span_off[d];
        lengths[nlists++] = ns;
      }
      mv = both;
      nm = union_sorted(lists, lengths, (int)nlists, both, both + most_comm);
    }
    /* Waits for a launch first: the compute stream is idle until its next kernel is launched,
     * whatever communication runs meanwhile (a gradient all-reduce during a host-bound
     * backward is hidden behind the host, not exposed); communication is exposed where
     * neither compute nor a launch wait covers it. Both lists are sorted and disjoint (a wait
     * ends no later than its kernel starts, sim_host.c). */
    const Interval *hv = (const Interval *)all_iv + all_off[d];
    guint nh = all_off[d + 1] - all_off[d];
    if (nh && nc + nh > covered_cap) { /* (read only where a device has host waits) */
      covered_cap = nc + nh;
      covered = g_renew(Interval, covered, covered_cap);
    }
    device_sums(cv, nc, mv, nm, hv, nh, covered, &all);
    if (window) { /* the same lists clipped to [from, to) (measures add over time) */
      if (nc + nm + nh > clipped_cap) {
        clipped_cap = nc + nm + nh;
        clipped = g_renew(Interval, clipped, clipped_cap);
      }
      Interval *wc = clipped, *wm, *wh;
      guint wnc = clip_intervals(cv, nc, from, to, wc);
      wm = wc + wnc;
      guint wnm = clip_intervals(mv, nm, from, to, wm);
      wh = wm + wnm;
      guint wnh = clip_intervals(hv, nh, from, to, wh);
      device_sums(wc, wnc, wm, wnm, wh, wnh, covered, &part);
    }
  }
  *out = (SimBreakdownSums){all.compute, all.exposed, all.host, all.comm, used, s->cpu_s, 0};
  if (window)
    *window = (SimBreakdownSums){part.compute, part.exposed, part.host, part.comm, used, 0, 0};
  out->breakdown_cpu_s = sim_thread_cpu_s() - cpu0;
}

/* The prediction's breakdown from the sums (means over the devices used). */
static void set_breakdown(SimRun *run, const SimBreakdownSums *sums) {
  SimTime compute = sums->compute, exposed = sums->exposed, host = sums->host;
  int used = sums->used;
  SimPrediction *p = &run->prediction;
  p->simulated_gpus = used;
  p->comm_busy_s = used ? (double)sums->comm / used / SIM_PS_PER_SECOND : 0;
  p->compute_s = used ? (double)compute / used / SIM_PS_PER_SECOND : 0;
  p->comm_exposed_s = used ? (double)exposed / used / SIM_PS_PER_SECOND : 0;
  p->host_bound_s = used ? (double)host / used / SIM_PS_PER_SECOND : 0;
  p->bubble_s = p->iteration_time_s - p->compute_s - p->comm_exposed_s - p->host_bound_s;
  /* The three means are exact to the picosecond; what remains below that is rounding. */
  if (p->bubble_s < 1e-12 * p->iteration_time_s) p->bubble_s = 0;
}

static void compute_memory(SimRun *run) {
  SimPrediction *p = &run->prediction;
  int ndev = dev_cluster_num_devices(run->cluster);
  g_autofree CmMemory *mem = cm_memory_per_device(run->graph, run->strategy, run->cluster);
  p->peak_memory_device = 0;
  for (int d = 0; d < ndev; d++)
    if (mem[d].total > mem[p->peak_memory_device].total) p->peak_memory_device = d;
  p->peak_memory = mem[p->peak_memory_device];
  p->peak_memory_bytes = p->peak_memory.total;
  p->memory_capacity_bytes = run->cluster->device.memory_bytes;
  p->fits_memory = p->peak_memory_bytes <= p->memory_capacity_bytes;
}

/* Devices in any mesh of the strategy. */
static int strategy_devices(const MdlStrategy *s, const DevCluster *c) {
  int n = dev_cluster_num_devices(c), count = 0;
  g_autofree gboolean *seen = g_new0(gboolean, n);
  for (guint m = 0; m < s->meshes->len; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(s, (int)m);
    for (int i = 0; i < mesh->ndevices; i++)
      if (!seen[mesh->devices[i]]) seen[mesh->devices[i]] = TRUE, count++;
  }
  return count;
}

SimRun *sim_run_new(const MdlGraph *graph, const MdlStrategy *strategy, const DevCluster *cluster,
                    const CmParams *params, GError **error) {
  SimOptions options = {0};
  return sim_run_new_with_options(graph, strategy, cluster, params, &options, error);
}

/* The run from its figures: @merged (no schedule: @makespan, @sums and @reduced from chain
 * merging) or @schedule's; @tasks: the full graph's count with its host stream; @steady
 * (or NULL): the steady-state route's proof. */
static SimRun *make_run(const MdlGraph *graph, const MdlStrategy *strategy,
                        const DevCluster *cluster, const CmParams *params,
                        const SimOptions *options, SimTaskGraph *tasks, SimSchedule *schedule,
                        gboolean merged, SimTime makespan, const SimBreakdownSums *merged_sums,
                        uint32_t reduced, guint64 ntasks, const SimSteady *steady, gint64 t0,
                        gint64 t1) {
  SimBreakdownSums sums = *merged_sums;
  SimRun *run = g_new0(SimRun, 1);
  run->graph = graph;
  run->strategy = strategy;
  run->cluster = cluster;
  run->tasks = tasks;
  run->schedule = schedule;
  run->calibration = params->calibration ? g_strdup(cm_calibration_name(params->calibration)) : NULL;
  run->profiled_kernels = params->profiles ? (int)cm_profiles_size(params->profiles) : 0;
  SimPrediction *p = &run->prediction;
  p->iteration_time_s = sim_time_seconds(merged ? makespan : schedule->makespan);
  /* the full graph's tasks (with its host stream); the full engine pops every task once */
  p->tasks = ntasks;
  p->events = merged ? p->tasks : schedule->events;
  p->merged_tasks = reduced;
  if (steady) {
    p->steady_microbatches = steady->built;
    p->steady_period_s = sim_time_seconds(steady->cut_b - steady->cut_a);
  }
  p->symmetric = tasks->symmetric;
  p->step_collectives = options->step_collectives;
  p->crossmesh = options->crossmesh;
  p->crossmesh_method = options->crossmesh_method;
  p->crossmesh_order = options->crossmesh_order;
  p->num_gpus = strategy_devices(strategy, cluster);
  if (!merged) {
    g_autofree guint *host_off = NULL;
    g_autofree SimTime *host_iv = sim_host_wait_intervals(tasks, schedule, &host_off);
    sim_breakdown_sums(tasks, schedule, host_iv, host_off, NULL, &sums);
  }
  set_breakdown(run, &sums);
  p->engine_cpu_s = sums.engine_cpu_s;
  p->breakdown_cpu_s = sums.breakdown_cpu_s;
  compute_memory(run);
  if (p->iteration_time_s > 0) {
    p->samples_per_s = (double)graph->batch / p->iteration_time_s;
    p->tflops_per_gpu = mdl_graph_train_flops(graph) / p->iteration_time_s / MAX(p->num_gpus, 1) / 1e12;
    p->hardware_tflops_per_gpu = mdl_strategy_hardware_flops(strategy, graph) / p->iteration_time_s /
                                 MAX(p->num_gpus, 1) / 1e12;
  }
  double peak = cluster->device.peak_flops[strategy->dtype];
  p->mfu = peak > 0 ? p->tflops_per_gpu * 1e12 / peak : 0;
  gint64 t2 = g_get_monotonic_time();
  p->build_wall_s = (double)(t1 - t0) / 1e6;
  p->sim_wall_s = (double)(t2 - t0) / 1e6;
  return run;
}


/* The microbatches the steady-state route builds for @s (0: not worth trying): whole periods
 * (a group of P microbatches under interleaving), enough for the pipeline to fill, settle and
 * drain around two cuts one period apart (the fewest that proved, by sim/sim_period.c over
 * full runs, 2026-12-02: 1F1B at P = 16, 20; interleaved at P = 16, 48; P = 8 vp = 4, 24;
 * P = 4 vp = 2, 20), and at most half the strategy's. */
static int steady_microbatches(const MdlStrategy *s) {
  int P = mdl_strategy_num_ranks(s), N = s->num_microbatches;
  if (P < 2 || s->weight_delay || s->schedule == MDL_SCHEDULE_GPIPE) return 0;
  gboolean interleaved = s->schedule == MDL_SCHEDULE_INTERLEAVED && s->virtual_stages > 1;
  int p = interleaved ? P : 1;
  int k = interleaved ? MAX(3 * P, P + 16) : MAX(2 * P, P + 16);
  k = (k + p - 1) / p * p;
  k += (N - k) % p; /* N - k whole periods (N is a multiple of p under interleaving) */
  return 2 * k <= N ? k : 0;
}

/* The run of @strategy's N microbatches from @tasks, a graph of its first @steady->built (for
 * merging), where sim_merge_period.c proves the steady state; NULL (and @tasks freed) where
 * not: the caller builds the whole graph. */
static SimRun *steady_run(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params,
                          const SimOptions *options, SimTaskGraph *tasks, SimSteady *steady,
                          gint64 t0, gint64 t1) {
  int k = steady->built, N = strategy->num_microbatches;
  /* the N-microbatch graph's tasks: every microbatch has as many (each label's images) */
  guint64 labelled = tasks->num_compute;
  for (uint32_t t = tasks->num_compute; t < sim_task_graph_size(tasks); t++)
    labelled += sim_task_graph_task(tasks, t)->microbatch >= 0;
  SimTime makespan = 0;
  SimBreakdownSums sums = {0};
  uint32_t reduced = 0;
  if (tasks->succ_offsets || labelled % (guint64)k || tasks->num_compute % (uint32_t)k ||
      !sim_merge_predict_steady(tasks, steady, &makespan, &sums, &reduced) || !steady->proven) {
    sim_task_graph_free(tasks);
    return NULL;
  }
  guint64 extra = labelled / (guint64)k * (guint64)(N - k);
  guint64 compute = (guint64)tasks->num_compute / (guint64)k * (guint64)N;
  return make_run(graph, strategy, cluster, params, options, tasks, NULL, TRUE, makespan, &sums,
                  reduced, sim_task_graph_size(tasks) + extra + (tasks->block_host ? compute : 0),
                  steady, t0, t1);
}

SimRun *sim_run_new_with_options(const MdlGraph *graph, const MdlStrategy *strategy,
                                 const DevCluster *cluster, const CmParams *params,
                                 const SimOptions *options, GError **error) {
  gint64 t0 = g_get_monotonic_time();
  sim_progress_set(options->progress, "building the task graph of %s on %d GPUs", graph->name,
                   dev_cluster_num_devices(cluster));
  int k = options->prediction_only && !options->no_steady_state && !options->build_microbatches
              ? steady_microbatches(strategy)
              : 0;
  if (k) { /* the first k microbatches timed, the rest proven to repeat a period of them */
    SimOptions first = *options;
    first.build_microbatches = k;
    SimTaskGraph *tk = sim_build_unfinished(graph, strategy, cluster, params, &first, TRUE, NULL);
    SimSteady steady = {.strategy = strategy, .built = k};
    SimRun *run = tk ? steady_run(graph, strategy, cluster, params, options, tk, &steady, t0,
                                  g_get_monotonic_time())
                     : NULL;
    if (run) return run;
  }
  SimTaskGraph *tasks = sim_build_unfinished(graph, strategy, cluster, params, options,
                                             options->prediction_only, error);
  if (!tasks) return NULL;
  sim_progress_set(options->progress, "running the engine over %u tasks",
                   sim_task_graph_size(tasks));
  return sim_run_from_graph(graph, strategy, cluster, params, options, tasks, NULL, t0,
                            g_get_monotonic_time(), error);
}

SimRun *sim_run_from_graph(const MdlGraph *graph, const MdlStrategy *strategy,
                           const DevCluster *cluster, const CmParams *params,
                           const SimOptions *options, SimTaskGraph *tasks,
                           SimSchedule *schedule, gint64 t0, gint64 t1, GError **error) {
  /* Prediction only: chain merging (sim_merge.c) where it applies, else the full engine. */
  SimTime makespan = 0;
  SimBreakdownSums sums = {0};
  uint32_t reduced = 0;
  gboolean merged = !schedule && options->prediction_only && !tasks->succ_offsets &&
                    sim_merge_predict(tasks, &makespan, &sums, &reduced);
  /* Not merged: a graph built for merging (unfinished, without its host stream and program
   * order edges) is rebuilt in full. */
  if (!schedule && !merged && !tasks->succ_offsets) {
    SimTaskGraph *full = sim_build_with_options(graph, strategy, cluster, params, options, error);
    sim_task_graph_free(tasks);
    if (!full) return NULL;
    tasks = full;
  }
  if (!schedule && !merged) schedule = sim_engine_run(tasks, error);
  if (!schedule && !merged) {
    sim_task_graph_free(tasks);
    return NULL;
  }
  return make_run(graph, strategy, cluster, params, options, tasks, schedule, merged, makespan,
                  &sums, reduced,
                  sim_task_graph_size(tasks) + (tasks->block_host ? tasks->num_compute : 0), NULL,
                  t0, t1);
}

void sim_run_free(SimRun *run) {
  if (!run) return;
  sim_task_graph_free(run->tasks);
  sim_schedule_free(run->schedule);
  g_free(run->calibration);
  g_free(run);
}

char *sim_prediction_to_json(const SimRun *run, gboolean with_wall) {
  const SimPrediction *p = &run->prediction;
  const MdlStrategy *s = run->strategy;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "model", run->graph->name);
  cJSON_AddStringToObject(root, "cluster", run->cluster->name);
  cJSON *st = cJSON_AddObjectToObject(root, "strategy");
  cJSON_AddStringToObject(st, "name", s->name ? s->name : "");
  if (s->dp > 0) { /* degrees a builder used */
    cJSON_AddNumberToObject(st, "dp", s->dp);
    cJSON_AddNumberToObject(st, "tp", s->tp);
    cJSON_AddNumberToObject(st, "pp", s->pp);
    cJSON_AddNumberToObject(st, "vp", s->vp);
    cJSON_AddNumberToObject(st, "microbatch_size", s->microbatch_size);
  } else { /* from JSON: no degrees, what it holds (issue 17, item 5) */
    cJSON *meshes = cJSON_AddArrayToObject(st, "meshes");
    for (guint m = 0; m < s->meshes->len; m++) {
      const MdlMesh *mesh = mdl_strategy_mesh(s, (int)m);
      cJSON_AddItemToArray(meshes, cJSON_CreateIntArray(mesh->shape, mesh->ndims));
    }
    cJSON_AddNumberToObject(st, "stages", s->num_stages);
    cJSON_AddNumberToObject(st, "samples_per_microbatch",
                            (double)(run->graph->batch / MAX(s->num_microbatches, 1)));
  }
  cJSON_AddNumberToObject(st, "num_microbatches", s->num_microbatches);
  cJSON_AddStringToObject(st, "schedule", mdl_schedule_name(s->schedule));
  cJSON_AddBoolToObject(st, "weight_delay", s->weight_delay);
  cJSON_AddNumberToObject(st, "zero", s->zero_stage);
  cJSON_AddStringToObject(st, "recompute", mdl_recompute_name(s->recompute));
  cJSON_AddBoolToObject(st, "sequence_parallel", s->sequence_parallel);
  cJSON_AddStringToObject(st, "dtype", dev_dtype_name(s->dtype));
  cJSON_AddStringToObject(st, "framework", mdl_framework_name(s->framework));
  if (!s->fsdp_prefetch) cJSON_AddFalseToObject(st, "fsdp_prefetch"); /* only when off */
  if (!s->overlap_grad_reduce) cJSON_AddFalseToObject(st, "overlap_grad_reduce"); /* likewise */
  cJSON_AddNumberToObject(root, "num_gpus", p->num_gpus);
  cJSON_AddNumberToObject(root, "iteration_time_s", p->iteration_time_s);
  cJSON_AddNumberToObject(root, "samples_per_s", p->samples_per_s);
  cJSON_AddNumberToObject(root, "tflops_per_gpu", p->tflops_per_gpu);
  cJSON_AddNumberToObject(root, "mfu", p->mfu);
  cJSON_AddNumberToObject(root, "hardware_tflops_per_gpu", p->hardware_tflops_per_gpu);
  cJSON *br = cJSON_AddObjectToObject(root, "breakdown");
  cJSON_AddNumberToObject(br, "compute_s", p->compute_s);
  cJSON_AddNumberToObject(br, "comm_exposed_s", p->comm_exposed_s);
  cJSON_AddNumberToObject(br, "host_bound_s", p->host_bound_s);
  cJSON_AddNumberToObject(br, "bubble_s", p->bubble_s);
  cJSON_AddNumberToObject(root, "peak_memory_bytes", p->peak_memory_bytes);
  cJSON_AddNumberToObject(root, "peak_memory_device", p->peak_memory_device);
  cJSON *mem = cJSON_AddObjectToObject(root, "memory");
  cJSON_AddNumberToObject(mem, "weights_bytes", p->peak_memory.weights);
  cJSON_AddNumberToObject(mem, "gradients_bytes", p->peak_memory.gradients);
  cJSON_AddNumberToObject(mem, "optimizer_bytes", p->peak_memory.optimizer);
  cJSON_AddNumberToObject(mem, "activations_bytes", p->peak_memory.activations);
  cJSON_AddNumberToObject(mem, "buffers_bytes", p->peak_memory.buffers);
  cJSON_AddNumberToObject(mem, "capacity_bytes", p->memory_capacity_bytes);
  cJSON_AddBoolToObject(root, "fits_memory", p->fits_memory);
  cJSON_AddStringToObject(root, "collective_mode",
                          p->step_collectives ? "step-expanded" : "one-task-per-collective");
  /* Only when asked for, so that the default run's JSON stays as it was. */
  if (p->crossmesh) {
    cJSON *cm = cJSON_AddObjectToObject(root, "crossmesh");
    cJSON_AddStringToObject(cm, "method", sim_crossmesh_method_name(p->crossmesh_method));
    cJSON_AddStringToObject(cm, "order", sim_crossmesh_order_name(p->crossmesh_order));
  }
  cJSON_AddBoolToObject(root, "symmetry", p->symmetric);
  cJSON_AddNumberToObject(root, "profiled_kernels", run->profiled_kernels);
  if (run->calibration) cJSON_AddStringToObject(root, "calibration", run->calibration);
  else cJSON_AddNullToObject(root, "calibration");
  cJSON_AddNumberToObject(root, "simulated_gpus", p->simulated_gpus);
  cJSON_AddNumberToObject(root, "tasks", (double)p->tasks);
  cJSON_AddNumberToObject(root, "events", (double)p->events);
  if (with_wall) cJSON_AddNumberToObject(root, "sim_wall_s", p->sim_wall_s);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  char *out = g_strdup(text);
  cJSON_free(text);
  return out;
}

const SimPrediction *sim_run_prediction(const SimRun *run) { return &run->prediction; }
const MdlGraph *sim_run_graph(const SimRun *run) { return run->graph; }
const MdlStrategy *sim_run_strategy(const SimRun *run) { return run->strategy; }
const DevCluster *sim_run_cluster(const SimRun *run) { return run->cluster; }
const char *sim_run_calibration(const SimRun *run) { return run->calibration; }
int sim_run_profiled_kernels(const SimRun *run) { return run->profiled_kernels; }
const SimTaskGraph *sim_run_task_graph(const SimRun *run) { return run->tasks; }
const SimSchedule *sim_run_schedule(const SimRun *run) { return run->schedule; }
uint32_t sim_run_num_tasks(const SimRun *run) { return sim_task_graph_size(run->tasks); }

void sim_run_task(const SimRun *run, uint32_t id, SimTaskInfo *out) {
  g_return_if_fail(run->schedule != NULL); /* a prediction-only run has no schedule */
  sim_task_graph_get(run->tasks, id, out);
  out->start = run->schedule->start[id];
  out->end = out->start + out->duration;
}

void sim_timeline_init(SimTimeline *it, const SimRun *run) {
  it->run = run;
  it->next = 0;
}

gboolean sim_timeline_next(SimTimeline *it, SimTaskInfo *out) {
  if (!it->run->schedule || it->next >= it->run->schedule->num_tasks) return FALSE;
  sim_run_task(it->run, it->run->schedule->order[it->next++], out);
  return TRUE;
}
