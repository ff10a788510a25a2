/* validate/host — see val_host.h. */
#include "validate/val_host.h"

#include <string.h>

#include "costmodel/cm_framework.h"
#include "session/ses_session.h"
#include "sim/sim.h"
#include "util/util_csv.h"
#include "validate/val_components.h"

static gboolean field(const UtilCsv *csv, guint row, const char *name, const char *path,
                      double *out, GError **error) {
  int c = util_csv_column(csv, name);
  const char *text = c >= 0 ? util_csv_field(csv, row, c) : "";
  char *end = NULL;
  *out = g_ascii_strtod(text, &end);
  if (c < 0 || end == text || *end || !(*out >= 0)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s: row %u: field %s: '%s' is not a "
                "number >= 0", path, row + 1, name, text);
    return FALSE;
  }
  return TRUE;
}

static gboolean parse_row(const UtilCsv *csv, guint i, ValHostRow *r, const char *path,
                          GError **error) {
  double layers, hidden, heads, seq, mb, host_ms, wall_ms, gpu_ms;
  if (!field(csv, i, "layers", path, &layers, error) ||
      !field(csv, i, "hidden", path, &hidden, error) ||
      !field(csv, i, "heads", path, &heads, error) || !field(csv, i, "seq", path, &seq, error) ||
      !field(csv, i, "micro_batch", path, &mb, error) ||
      !field(csv, i, "host_ms", path, &host_ms, error) ||
      !field(csv, i, "wall_ms", path, &wall_ms, error) ||
      !field(csv, i, "gpu_ms", path, &gpu_ms, error) ||
      !field(csv, i, "kernels_per_layer", path, &r->kernels, error))
    return FALSE;
  int c = util_csv_column(csv, "phase");
  const char *phase = c >= 0 ? util_csv_field(csv, i, c) : "";
  if (strcmp(phase, "forward") != 0 && strcmp(phase, "backward") != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s: row %u: field phase: '%s' is not forward "
                "or backward", path, i + 1, phase);
    return FALSE;
  }
  if (layers < 3 || hidden < 1 || heads < 1 || seq < 1 || mb < 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s: row %u: layers %g (at least 3: the middle "
                "layer and its neighbours are timed), hidden, heads, seq and micro_batch at least 1",
                path, i + 1, layers);
    return FALSE;
  }
  r->layers = (int)layers;
  r->hidden = (int)hidden;
  r->heads = (int)heads;
  r->seq = (int)seq;
  r->micro_batch = (int)mb;
  r->backward = strcmp(phase, "backward") == 0;
  r->host_s = host_ms * 1e-3 / layers;
  r->wall_s = wall_ms * 1e-3 / layers;
  r->gpu_s = gpu_ms * 1e-3 / layers;
  return TRUE;
}

GPtrArray *val_host_rows_load(const char *path, GError **error) {
  UtilCsv *csv = util_csv_read(path, error);
  if (!csv) return NULL;
  GPtrArray *rows = g_ptr_array_new_with_free_func(g_free);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < csv->rows->len; i++) {
    ValHostRow *r = g_new0(ValHostRow, 1);
    g_ptr_array_add(rows, r);
    ok = parse_row(csv, i, r, path, error);
  }
  util_csv_free(csv);
  if (!ok) g_clear_pointer(&rows, g_ptr_array_unref);
  return rows;
}

gboolean val_host_times(const ValHostRow *r, MdlFramework framework, ValHostTimes *out,
                        GError **error) {
  g_autofree char *model = val_gpt_spec(r->layers, r->hidden, r->heads, r->seq, 1024,
                                        r->micro_batch);
  g_autofree char *strategy = g_strdup_printf("megatron:tp=1,pp=1,dp=1,mb=%d,framework=%s",
                                              r->micro_batch, mdl_framework_name(framework));
  SesSession *session = NULL;
  SimRun *run = val_simulate_specs(model, "dgx-h100:gpus_per_node=1", strategy, &session, error);
  if (!run) return FALSE;
  memset(out, 0, sizeof *out);
  const MdlGraph *g = sim_run_graph(run);
  const CmFramework *f = cm_framework_get(framework);
  int k = r->layers / 2;
  CmHostPhase phase = r->backward ? CM_HOST_BACKWARD : CM_HOST_FORWARD;
  for (int o = 0; f && o < mdl_graph_num_ops(g); o++) {
    const MdlOp *op = mdl_graph_op(g, o);
    if (mdl_op_layer(op->name) != k) continue;
    out->host_s += cm_framework_host_time(f, op, phase);
    out->kernels += cm_framework_kernels(f, op, phase);
  }
  /* First start per layer k-1, k, k+1 of the phase's tasks on the compute stream. */
  SimTime first[3] = {G_MAXUINT64, G_MAXUINT64, G_MAXUINT64}, busy = 0;
  SimTimeline it;
  SimTaskInfo t;
  sim_timeline_init(&it, run);
  while (sim_timeline_next(&it, &t)) {
    gboolean in_phase = r->backward ? t.kind == SIM_TASK_BACKWARD || t.kind == SIM_TASK_BACKWARD_WEIGHT
                                    : t.kind == SIM_TASK_FORWARD;
    if (!in_phase || t.op < 0 || t.nres < 1 || t.resources[0] != sim_resource_compute(0)) continue;
    int l = mdl_op_layer(mdl_graph_op(g, t.op)->name) - (k - 1);
    if (l < 0 || l > 2) continue;
    first[l] = MIN(first[l], t.start);
    if (l == 1) busy += t.duration;
  }
  out->gpu_s = sim_time_seconds(busy);
  out->wall_s = sim_time_seconds(r->backward ? first[0] - first[1] : first[2] - first[1]);
  sim_run_free(run);
  ses_session_free(session);
  return TRUE;
}

double val_host_ranking_tau(const GPtrArray *rows, const double *predicted, gboolean per_token,
                            int *pairs) {
  int concordant = 0, discordant = 0;
  *pairs = 0;
  for (guint i = 0; i < rows->len; i++)
    for (guint j = i + 1; j < rows->len; j++) {
      const ValHostRow *a = g_ptr_array_index(rows, i), *b = g_ptr_array_index(rows, j);
      if (a->layers != b->layers || a->hidden != b->hidden || a->backward != b->backward ||
          (!per_token && (a->seq != b->seq || a->micro_batch == b->micro_batch)))
        continue;
      double wa = (double)a->micro_batch * (per_token ? a->seq : 1);
      double wb = (double)b->micro_batch * (per_token ? b->seq : 1);
      double m = a->wall_s / wa - b->wall_s / wb, p = predicted[i] / wa - predicted[j] / wb;
      (*pairs)++;
      if (m * p > 0) concordant++;
      else if (m * p < 0) discordant++;
    }
  return *pairs ? (double)(concordant - discordant) / *pairs : 0;
}
