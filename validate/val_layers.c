/* validate/layers — see val_layers.h. */
#include "validate/val_layers.h"

#include "validate/val_components.h"

#include <stdlib.h>
#include <string.h>

#include "session/ses_session.h"
#include "sim/sim.h"
#include "util/util_csv.h"

static void row_free(gpointer data) {
  ValLayerRow *r = data;
  g_free(r->experiment);
  g_free(r);
}

/* A positive number in column @name of row @i (an integer when @integer). */
static gboolean number_field(const UtilCsv *csv, guint i, const char *name, gboolean integer,
                             double *out, const char *path, GError **error) {
  int col = util_csv_column(csv, name);
  const char *v = col >= 0 ? util_csv_field(csv, i, col) : NULL;
  char *end = NULL;
  double x = v ? g_ascii_strtod(v, &end) : 0;
  if (!v || !*v || *end || !(x > 0) || (integer && (x != (double)(int)x || x > G_MAXINT))) {
    g_autofree char *got = v ? g_strdup_printf("got '%s'", v) : g_strdup("no such column");
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s data row %u: field %s must be a positive %s (%s)",
                path, i + 1, name, integer ? "integer" : "number", got);
    return FALSE;
  }
  *out = x;
  return TRUE;
}

/* Row @i of @csv into @r; FALSE with @error naming the field. */
static gboolean parse_row(const UtilCsv *csv, guint i, ValLayerRow *r, const char *path,
                          GError **error) {
  static const char *ints[] = {"layers", "hidden", "heads", "seq_len", "vocab", "micro_batch", "tp"};
  r->experiment = g_strdup(util_csv_field(csv, i, util_csv_column(csv, "experiment")));
  int *fields[] = {&r->layers, &r->hidden, &r->heads, &r->seq, &r->vocab, &r->micro_batch, &r->tp};
  for (guint k = 0; k < G_N_ELEMENTS(ints); k++) {
    double x;
    if (!number_field(csv, i, ints[k], TRUE, &x, path, error)) return FALSE;
    *fields[k] = (int)x;
  }
  double fwd, bwd;
  if (!number_field(csv, i, "forward_ms", FALSE, &fwd, path, error) ||
      !number_field(csv, i, "backward_ms", FALSE, &bwd, path, error))
    return FALSE;
  r->forward_s = fwd * 1e-3;
  r->backward_s = bwd * 1e-3;
  const char *s = util_csv_field(csv, i, util_csv_column(csv, "sequence_parallel"));
  if (!mdl_recompute_parse(util_csv_field(csv, i, util_csv_column(csv, "recompute")), &r->recompute) ||
      (strcmp(s, "y") != 0 && strcmp(s, "n") != 0) || r->layers < 3) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s data row %u: needs recompute "
                "none|selective|full, sequence_parallel y|n and at least 3 layers", path, i + 1);
    return FALSE;
  }
  r->sequence_parallel = strcmp(s, "y") == 0;
  return TRUE;
}

GPtrArray *val_layer_rows_load(const char *path, GError **error) {
  UtilCsv *csv = util_csv_read(path, error);
  if (!csv) return NULL;
  GPtrArray *rows = g_ptr_array_new_with_free_func(row_free);
  gboolean ok = util_csv_column(csv, "experiment") >= 0 && util_csv_column(csv, "recompute") >= 0 &&
                util_csv_column(csv, "sequence_parallel") >= 0;
  if (!ok)
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                "%s: missing one of the columns experiment, recompute, sequence_parallel", path);
  for (guint i = 0; ok && i < csv->rows->len; i++) {
    ValLayerRow *r = g_new0(ValLayerRow, 1);
    g_ptr_array_add(rows, r);
    ok = parse_row(csv, i, r, path, error);
  }
  util_csv_free(csv);
  if (!ok) g_clear_pointer(&rows, g_ptr_array_unref);
  return rows;
}

/* The tensor-parallel collectives GPU 0 runs with phase forward and a start in [@from, @to):
 * their simulated time, and the same collectives on the measured all-reduce @curve (an
 * all-gather or reduce-scatter as half the all-reduce of its bytes, as val_components.c). */
static void forward_collectives(const SimRun *run, int tp, SimTime from, SimTime to,
                                const GArray *curve, double *sim_s, double *ref_s) {
  SimTimeline it;
  SimTaskInfo t;
  SimTime sum = 0;
  *ref_s = 0;
  sim_timeline_init(&it, run);
  while (sim_timeline_next(&it, &t)) {
    gboolean tp_collective = t.collective == CM_ALL_REDUCE || t.collective == CM_ALL_GATHER ||
                             t.collective == CM_REDUCE_SCATTER;
    if (t.kind != SIM_TASK_COMM || t.phase != SIM_PHASE_FORWARD || t.device != 0 ||
        (int)t.group_size != tp || !tp_collective || t.start < from || t.start >= to)
      continue;
    sum += t.duration;
    *ref_s += val_curve_time(curve, t.bytes) * (t.collective == CM_ALL_REDUCE ? 1 : 0.5);
  }
  *sim_s = sim_time_seconds(sum);
}

gboolean val_layer_times(const ValLayerRow *r, const GArray *curve, ValLayerTimes *out,
                         GError **error) {
  g_autofree char *model = val_gpt_spec(r->layers, r->hidden, r->heads, r->seq, r->vocab,
                                        r->micro_batch);
  g_autofree char *cluster = val_dgx_a100_spec(r->tp);
  g_autofree char *strategy = g_strdup_printf("megatron:tp=%d,pp=1,dp=1,mb=%d,recompute=%s%s",
                                              r->tp, r->micro_batch, mdl_recompute_name(r->recompute),
                                              r->sequence_parallel ? ",sp=1" : "");
  SesSession *session = NULL;
  SimRun *run = val_simulate_specs(model, cluster, strategy, &session, error);
  if (!run) return FALSE;
  /* First start on GPU 0's compute stream per layer k-1, k, k+1: forward, backward pass. */
  int k = r->layers / 2;
  SimTime first_fwd[3], first_bwd[3];
  for (int i = 0; i < 3; i++) first_fwd[i] = first_bwd[i] = G_MAXUINT64;
  const MdlGraph *g = sim_run_graph(run);
  SimTimeline it;
  SimTaskInfo t;
  sim_timeline_init(&it, run);
  while (sim_timeline_next(&it, &t)) {
    if (t.op < 0 || t.nres < 1 || t.resources[0] != sim_resource_compute(0)) continue;
    int l = mdl_op_layer(mdl_graph_op(g, t.op)->name) - (k - 1);
    if (l < 0 || l > 2) continue;
    SimTime *first = t.kind == SIM_TASK_FORWARD ? first_fwd : first_bwd;
    if (t.kind == SIM_TASK_FORWARD || t.kind == SIM_TASK_RECOMPUTE ||
        t.kind == SIM_TASK_BACKWARD || t.kind == SIM_TASK_BACKWARD_WEIGHT)
      first[l] = MIN(first[l], t.start);
  }
  out->forward_s = sim_time_seconds(first_fwd[2] - first_fwd[1]);
  out->backward_s = sim_time_seconds(first_bwd[0] - first_bwd[1]);
  forward_collectives(run, r->tp, first_fwd[1], first_fwd[2], curve, &out->forward_comm_s,
                      &out->forward_comm_ref_s);
  sim_run_free(run);
  ses_session_free(session);
  return TRUE;
}
