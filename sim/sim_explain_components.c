/* sim/explain_components — where an iteration's time goes (issue 14, item 6): the breakdown of
 * SimPrediction (compute, exposed communication, host-bound time, bubble) with the compute cut
 * per transformer layer and the communication the compute stream hid (overlapped), as
 * `stratsim explain` prints them. Means per GPU over the devices the strategy uses, like the
 * breakdown, so the layers' compute plus the other ops' adds up to compute_s. */
#include "sim/sim-int.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel/cm_framework.h"

typedef struct {
  int nlayers;
  double *layer_s;        /* compute per layer (ops named "layerN.*"), mean per GPU */
  double other_s;         /* compute of the other ops and the optimizer step */
  double gemm_s;          /* contractions (GEMMs, batched GEMMs, convolutions), every op */
  double optimizer_s;     /* the optimizer step */
  double comm_busy_s;     /* communication streams busy (their union), mean per GPU */
} Components;

static void components_init(Components *c, const SimRun *run) {
  const SimTaskGraph *g = run->tasks;
  const MdlGraph *graph = run->graph;
  int nops = mdl_graph_num_ops(graph);
  g_autofree int *layer = g_new(int, nops ? nops : 1);
  c->nlayers = 0;
  for (int o = 0; o < nops; o++) {
    layer[o] = mdl_op_layer(mdl_graph_op(graph, o)->name);
    c->nlayers = MAX(c->nlayers, layer[o] + 1);
  }
  g_autofree SimTime *per_layer = g_new0(SimTime, c->nlayers ? c->nlayers : 1);
  SimTime other = 0, gemm = 0, optimizer = 0;
  for (uint32_t i = 0; i < g->tasks->len; i++) {
    const SimTask *t = sim_task_graph_task(g, i);
    switch ((SimTaskKind)t->kind) {
    case SIM_TASK_FORWARD:
    case SIM_TASK_BACKWARD:
    case SIM_TASK_BACKWARD_WEIGHT:
    case SIM_TASK_RECOMPUTE:
      if (layer[t->op] >= 0) per_layer[layer[t->op]] += t->duration;
      else other += t->duration;
      if (cm_gemm_kind(mdl_graph_op(graph, t->op)->kind)) gemm += t->duration;
      break;
    case SIM_TASK_OPTIMIZER:
      other += t->duration;
      optimizer += t->duration;
      break;
    default: break;
    }
  }
  double used = MAX(run->prediction.simulated_gpus, 1);
  c->layer_s = g_new(double, c->nlayers ? c->nlayers : 1);
  for (int l = 0; l < c->nlayers; l++) c->layer_s[l] = sim_time_seconds(per_layer[l]) / used;
  c->other_s = sim_time_seconds(other) / used;
  c->gemm_s = sim_time_seconds(gemm) / used;
  c->optimizer_s = sim_time_seconds(optimizer) / used;
  c->comm_busy_s = run->prediction.comm_busy_s;
}

/* What the host launches for one microbatch of the first layer (ops named "layer0.*") under
 * the run's framework: kernels and host seconds, forward and backward; beside them the
 * simulated time of those kernels, microbatch 0 on the first GPU that runs layer 0 (its
 * forward tasks; its backward and weight-gradient tasks), so that explain shows which side is
 * longer. FALSE without a host stream or a layer. */
typedef struct {
  int forward, backward;
  double forward_s, backward_s;
  double forward_kernel_s, backward_kernel_s;
} LayerLaunches;

static void layer_kernels(const SimRun *run, LayerLaunches *out) {
  SimTimeline it;
  SimTaskInfo t;
  SimTime fwd = 0, bwd = 0;
  int device = -1;
  sim_timeline_init(&it, run);
  while (sim_timeline_next(&it, &t)) {
    gboolean backward = t.kind == SIM_TASK_BACKWARD || t.kind == SIM_TASK_BACKWARD_WEIGHT;
    if ((t.kind != SIM_TASK_FORWARD && !backward) || t.op < 0 || t.microbatch != 0 ||
        t.nres < 1 || t.resources[0] >= sim_stream_resources(run->tasks->num_devices) ||
        mdl_op_layer(mdl_graph_op(run->graph, t.op)->name) != 0)
      continue;
    if (device < 0) device = t.device;
    if (t.device != device) continue;
    if (backward) bwd += t.duration;
    else fwd += t.duration;
  }
  out->forward_kernel_s = sim_time_seconds(fwd);
  out->backward_kernel_s = sim_time_seconds(bwd);
}

static gboolean layer_launches(const SimRun *run, LayerLaunches *out) {
  const CmFramework *f = cm_framework_get(run->strategy->framework);
  memset(out, 0, sizeof *out);
  gboolean any = FALSE;
  for (int o = 0; f && o < mdl_graph_num_ops(run->graph); o++) {
    const MdlOp *op = mdl_graph_op(run->graph, o);
    if (mdl_op_layer(op->name) != 0) continue;
    any = TRUE;
    out->forward += cm_framework_kernels(f, op, CM_HOST_FORWARD);
    out->backward += cm_framework_kernels(f, op, CM_HOST_BACKWARD);
    out->forward_s += cm_framework_host_time(f, op, CM_HOST_FORWARD);
    out->backward_s += cm_framework_host_time(f, op, CM_HOST_BACKWARD);
  }
  if (any) layer_kernels(run, out);
  return any;
}

/* The host's part of the breakdown beyond the launches: the synchronizations inside the
 * optimizer step (cm_framework_step_syncs, sb_add_optimizer_step) and the host time after each
 * (the scalar's copy and the next launch); and the pipeline's ideal bubble, (p - 1) / (v m) of
 * the busy time (Narayanan et al. 2021, section 2.2), beside the simulated one, whose excess is
 * stage imbalance and waiting on pipeline transfers. */
typedef struct {
  int step_syncs;
  double sync_s;            /* host seconds after each */
  double ideal_bubble_fraction; /* 0 without a pipeline */
  double ideal_bubble_s;    /* of (iteration - bubble) */
} HostAndBubble;

static void host_and_bubble(const SimRun *run, HostAndBubble *out) {
  const CmFramework *f = cm_framework_get(run->strategy->framework);
  double before[CM_MAX_STEP_SYNCS];
  out->step_syncs = cm_framework_step_syncs(f, run->strategy->dtype, before);
  out->sync_s = f && out->step_syncs ? cm_framework_sync_s(f) : 0;
  const MdlStrategy *s = run->strategy;
  int v = MAX(s->virtual_stages, 1), p = s->num_stages / v, m = MAX(s->num_microbatches, 1);
  out->ideal_bubble_fraction = p > 1 ? (double)(p - 1) / ((double)v * m) : 0;
  const SimPrediction *pr = &run->prediction;
  out->ideal_bubble_s = out->ideal_bubble_fraction * (pr->iteration_time_s - pr->bubble_s);
}

/* Per layer (ops named "layerN.*"), the time its kernels' streams sat idle waiting for their
 * launches (sim_host_task_waits: communication meanwhile not subtracted, unlike the
 * breakdown's host-bound time), mean per GPU; NULL without a host stream, a layer or a schedule
 * (a prediction-only run). Caller frees. */
static double *layer_host_waits(const SimRun *run, int nlayers) {
  const SimTaskGraph *g = run->tasks;
  if (nlayers == 0 || !run->schedule || g->host_base == UINT32_MAX) return NULL;
  g_autofree SimTime *wait = sim_host_task_waits(g, run->schedule);
  g_autofree SimTime *per_layer = g_new0(SimTime, nlayers);
  for (uint32_t c = 0; c < g->num_compute; c++) {
    int l = mdl_op_layer(mdl_graph_op(run->graph, sim_task_graph_task(g, c)->op)->name);
    if (l >= 0 && l < nlayers) per_layer[l] += wait[c];
  }
  double used = MAX(run->prediction.simulated_gpus, 1);
  double *out = g_new(double, nlayers);
  for (int l = 0; l < nlayers; l++) out[l] = sim_time_seconds(per_layer[l]) / used;
  return out;
}

cJSON *sim_components_json(const SimRun *run) {
  Components c;
  components_init(&c, run);
  const SimPrediction *p = &run->prediction;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "iteration_s", p->iteration_time_s);
  cJSON_AddNumberToObject(o, "compute_s", p->compute_s);
  cJSON_AddNumberToObject(o, "comm_exposed_s", p->comm_exposed_s);
  cJSON_AddNumberToObject(o, "comm_overlapped_s", MAX(0, c.comm_busy_s - p->comm_exposed_s));
  cJSON_AddNumberToObject(o, "host_bound_s", p->host_bound_s);
  cJSON_AddNumberToObject(o, "bubble_s", p->bubble_s);
  cJSON_AddStringToObject(o, "framework", mdl_framework_name(run->strategy->framework));
  cJSON *layers = cJSON_AddArrayToObject(o, "layer_compute_s");
  for (int l = 0; l < c.nlayers; l++) cJSON_AddItemToArray(layers, cJSON_CreateNumber(c.layer_s[l]));
  g_autofree double *waits = layer_host_waits(run, c.nlayers);
  if (waits) {
    cJSON *w = cJSON_AddArrayToObject(o, "layer_host_wait_s");
    for (int l = 0; l < c.nlayers; l++) cJSON_AddItemToArray(w, cJSON_CreateNumber(waits[l]));
  }
  cJSON_AddNumberToObject(o, "other_compute_s", c.other_s);
  cJSON_AddNumberToObject(o, "gemm_compute_s", c.gemm_s);
  cJSON_AddNumberToObject(o, "memory_bound_compute_s", p->compute_s - c.gemm_s - c.optimizer_s);
  cJSON_AddNumberToObject(o, "optimizer_s", c.optimizer_s);
  HostAndBubble hb;
  host_and_bubble(run, &hb);
  cJSON_AddNumberToObject(o, "optimizer_host_syncs", hb.step_syncs);
  cJSON_AddNumberToObject(o, "optimizer_host_sync_s", hb.sync_s);
  cJSON_AddNumberToObject(o, "ideal_bubble_fraction", hb.ideal_bubble_fraction);
  cJSON_AddNumberToObject(o, "ideal_bubble_s", hb.ideal_bubble_s);
  LayerLaunches k;
  if (layer_launches(run, &k)) {
    cJSON *l = cJSON_AddObjectToObject(o, "layer0_launches");
    cJSON_AddNumberToObject(l, "forward_kernels", k.forward);
    cJSON_AddNumberToObject(l, "backward_kernels", k.backward);
    cJSON_AddNumberToObject(l, "forward_host_s", k.forward_s);
    cJSON_AddNumberToObject(l, "backward_host_s", k.backward_s);
    cJSON_AddNumberToObject(l, "forward_kernel_s", k.forward_kernel_s);
    cJSON_AddNumberToObject(l, "backward_kernel_s", k.backward_kernel_s);
  }
  g_free(c.layer_s);
  return o;
}

void sim_components_print(const SimRun *run, FILE *out, int max_rows) {
  Components c;
  components_init(&c, run);
  const SimPrediction *p = &run->prediction;
  double t = p->iteration_time_s > 0 ? p->iteration_time_s : 1;
  fprintf(out, "\ncomponents (mean per GPU, framework %s): compute %.6g s (%.1f%%), exposed "
               "communication %.6g s (%.1f%%), host-bound %.6g s (%.1f%%), bubble %.6g s (%.1f%%)",
          mdl_framework_name(run->strategy->framework), p->compute_s, 100 * p->compute_s / t,
          p->comm_exposed_s, 100 * p->comm_exposed_s / t, p->host_bound_s,
          100 * p->host_bound_s / t, p->bubble_s, 100 * p->bubble_s / t);
  fprintf(out, "; communication hidden under compute or host waits %.6g s",
          MAX(0, c.comm_busy_s - p->comm_exposed_s));
  fputc('\n', out);
  fprintf(out, "  compute by kind: GEMMs %.6g s, memory-bound kernels %.6g s, optimizer step %.6g s\n",
          c.gemm_s, p->compute_s - c.gemm_s - c.optimizer_s, c.optimizer_s);
  if (c.nlayers > 0) {
    double lo = c.layer_s[0], hi = c.layer_s[0], sum = 0;
    for (int l = 0; l < c.nlayers; l++) {
      lo = MIN(lo, c.layer_s[l]);
      hi = MAX(hi, c.layer_s[l]);
      sum += c.layer_s[l];
    }
    fprintf(out, "  compute per layer: %d layers, min %.6g s, mean %.6g s, max %.6g s; other ops "
                 "and the optimizer %.6g s\n", c.nlayers, lo, sum / c.nlayers, hi, c.other_s);
    for (int l = 0; l < c.nlayers && l < max_rows; l++)
      fprintf(out, "    layer%-4d %.6g s\n", l, c.layer_s[l]);
    if (c.nlayers > max_rows) fprintf(out, "    ... %d more (--json lists all)\n", c.nlayers - max_rows);
  }
  g_autofree double *waits = layer_host_waits(run, c.nlayers);
  if (waits) {
    double lo = waits[0], hi = waits[0], sum = 0;
    for (int l = 0; l < c.nlayers; l++) {
      lo = MIN(lo, waits[l]);
      hi = MAX(hi, waits[l]);
      sum += waits[l];
    }
    fprintf(out, "  waiting on the host before each layer's kernels: min %.6g s, mean %.6g s, max "
                 "%.6g s (--json: layer_host_wait_s)\n", lo, sum / c.nlayers, hi);
  }
  HostAndBubble hb;
  host_and_bubble(run, &hb);
  if (hb.step_syncs > 0)
    fprintf(out, "  host synchronizations in the optimizer step: %d (%s), each then %.4g us of "
                 "host time before the step's next kernel (costmodel/FRAMEWORKS.md)\n",
            hb.step_syncs, hb.step_syncs > 1 ? "fp16 found-inf .item(), grad-norm .item()"
                                             : "grad-norm .item()", 1e6 * hb.sync_s);
  if (hb.ideal_bubble_fraction > 0)
    fprintf(out, "  bubble %.6g s; the schedule's ideal (p-1)/(v m) = %.2f%% of the busy time "
                 "would be %.6g s (the rest: stage imbalance, waiting on pipeline transfers)\n",
            p->bubble_s, 100 * hb.ideal_bubble_fraction, hb.ideal_bubble_s);
  LayerLaunches k;
  if (layer_launches(run, &k))
    fprintf(out, "  host per microbatch of layer0 (%s, costmodel/FRAMEWORKS.md): %d kernels forward, "
                 "%d backward; %.4g us + %.4g us of host time, against %.4g us + %.4g us of "
                 "their kernels (microbatch 0 on its first GPU)\n",
            mdl_framework_name(run->strategy->framework), k.forward, k.backward,
            1e6 * k.forward_s, 1e6 * k.backward_s, 1e6 * k.forward_kernel_s,
            1e6 * k.backward_kernel_s);
  g_free(c.layer_s);
}
