/* validate/components — see val_components.h.
 *
 * The analytical breakdown, for GPU 0 (first pipeline stage, first tensor-parallel rank, first
 * data-parallel replica) over one iteration of m = global_batch / (micro_batch x dp)
 * microbatches, b = micro_batch, s = seq, h = hidden, t = tp, L/p layers on the stage:
 *  - GEMM compute: a layer's forward does 24 b s h^2 + 4 b s^2 h FLOPs (QKV, projection and
 *    the two MLP GEMMs; the attention scores and context), its backward twice that
 *    (Korthikanti et al. 2022, section 5 / Narayanan et al. 2021, Eq. 3); full recomputation
 *    adds one forward, selective recomputation the attention core's 4 b s^2 h (Korthikanti,
 *    section 5). Divided over the t ranks and run at a typical large A100 GEMM's rate, 241.8
 *    TFLOP/s (0.775 of 312: the median of the published by-shape measurements in
 *    tests/data/validation/gemm_a100_public.csv; the same source as costmodel/cm_gemm.c: the
 *    check is of FLOPs, shapes and quantization, not of the peak; 267.9, Bekman's MAMF, before);
 *    the attention core's batched GEMMs no faster than their b (a/t) s^2 score matrix moves at
 *    the datasheet HBM peak (2039 GB/s, a bound independent of the simulator's 0.8), and on a
 *    single stage the LM head's 6 b s h V / t (Narayanan et al. 2021, Eq. 3's V/(16 l h)
 *    term).
 *  - Tensor-parallel communication (Korthikanti et al. 2022, section 4.2 and Fig. 5): per layer
 *    and microbatch, without sequence parallelism 2 all-reduces forward and 2 backward of the
 *    b s h activations (2 bytes each), 2 more when the forward is recomputed; with sequence
 *    parallelism each all-reduce becomes an all-gather and a reduce-scatter of the same
 *    activations, and the backward all-gathers the two GEMM inputs again (6 all-gathers, 4
 *    reduce-scatters; +2 of each when recomputed). Stage 0 adds its vocab-parallel embedding's
 *    output reduction, one per microbatch. Timed on the measured 8 x A100 NVSwitch nccl-tests
 *    all-reduce curve (tests/data/validation/nccl_a100.csv); an all-gather or a reduce-scatter
 *    of n bytes as half an all-reduce of n (a ring moves (t-1)/t n per rank for them and
 *    2(t-1)/t n for the all-reduce: nccl-tests docs/PERFORMANCE.md).
 * The simulator's side: GPU 0's compute-stream tasks (contractions are GEMM, the rest other
 * compute) and its communication stream's all-reduce / all-gather / reduce-scatter tasks over
 * t ranks; pipeline sends and receives are not counted on either side. */
#include "validate/val_components.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "session/ses_session.h"
#include "sim/sim.h"
#include "util/util_csv.h"

#define HBM_A100_BPS 2039e9 /* A100 SXM4 80GB datasheet (NVIDIA A100 Tensor Core GPU datasheet) */
#define DEFAULT_VOCAB 51200

static void row_free(gpointer data) {
  ValMegatronRow *r = data;
  g_free(r->model);
  g_free(r);
}

/* Field @name of row @i as an integer >= @lo; an empty field is @empty (-1: required). */
static gboolean int_field(const UtilCsv *csv, guint i, const char *name, int lo, int empty,
                          int *out, const char *path, GError **error) {
  int c = util_csv_column(csv, name);
  const char *v = c >= 0 ? util_csv_field(csv, i, c) : NULL;
  if (v && *v == '\0' && empty >= 0) {
    *out = empty;
    return TRUE;
  }
  char *end = NULL;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || !*v || *end || x < lo || x > G_MAXINT) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s data row %u: field %s must be an integer >= %d%s%s%s",
                path, i + 1, name, lo, v ? " (got '" : "", v ? v : "", v ? "')" : " (no such column)");
    return FALSE;
  }
  *out = (int)x;
  return TRUE;
}

GPtrArray *val_megatron_rows_load(const char *path, const char *metric_name, GError **error) {
  UtilCsv *csv = util_csv_read(path, error);
  if (!csv) return NULL;
  GPtrArray *rows = g_ptr_array_new_with_free_func(row_free);
  int metric = util_csv_column(csv, "measured_metric"), value = util_csv_column(csv, "measured_value");
  int model = util_csv_column(csv, "model"), rec = util_csv_column(csv, "recompute");
  int sp = util_csv_column(csv, "sequence_parallel");
  if (metric < 0 || value < 0 || model < 0 || rec < 0 || sp < 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s: missing one of the columns model, "
                "recompute, sequence_parallel, measured_metric, measured_value", path);
    goto err;
  }
  for (guint i = 0; i < csv->rows->len; i++) {
    if (strcmp(util_csv_field(csv, i, metric), metric_name) != 0) continue;
    ValMegatronRow *r = g_new0(ValMegatronRow, 1);
    g_ptr_array_add(rows, r);
    r->model = g_strdup(util_csv_field(csv, i, model));
    if (!int_field(csv, i, "layers", 1, -1, &r->layers, path, error) ||
        !int_field(csv, i, "hidden", 1, -1, &r->hidden, path, error) ||
        !int_field(csv, i, "heads", 1, -1, &r->heads, path, error) ||
        !int_field(csv, i, "seq_len", 1, -1, &r->seq, path, error) ||
        !int_field(csv, i, "vocab", 1, DEFAULT_VOCAB, &r->vocab, path, error) ||
        !int_field(csv, i, "global_batch", 1, -1, &r->global_batch, path, error) ||
        !int_field(csv, i, "micro_batch", 1, -1, &r->micro_batch, path, error) ||
        !int_field(csv, i, "tp", 1, -1, &r->tp, path, error) ||
        !int_field(csv, i, "pp", 1, -1, &r->pp, path, error) ||
        !int_field(csv, i, "dp", 1, -1, &r->dp, path, error) ||
        !int_field(csv, i, "gpus", 1, -1, &r->gpus, path, error) ||
        !int_field(csv, i, "interleaved_stages", 1, 1, &r->interleaved, path, error))
      goto err;
    const char *recompute = util_csv_field(csv, i, rec), *v = util_csv_field(csv, i, value);
    char *end = NULL;
    double measured = g_ascii_strtod(v, &end);
    if (r->gpus != r->tp * r->pp * r->dp || !mdl_recompute_parse(recompute, &r->recompute) ||
        !(*v && !*end && measured > 0) || r->global_batch % (r->micro_batch * r->dp) != 0) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s data row %u: needs gpus = tp x pp x dp, "
                  "a global_batch divisible by micro_batch x dp, recompute none|selective|full "
                  "and a positive measured_value", path, i + 1);
      goto err;
    }
    if (strcmp(metric_name, "tflops_per_gpu") == 0) r->measured_tflops = measured;
    else r->measured_s = measured;
    r->sequence_parallel = strcmp(util_csv_field(csv, i, sp), "y") == 0;
    /* Narayanan et al.'s runs trained in fp16 (their source column: CONFIG.sh's --fp16). */
    int source = util_csv_column(csv, "source");
    r->fp16 = source >= 0 && strstr(util_csv_field(csv, i, source), "fp16") != NULL;
    /* That code (megatron/training.py train_step, DDP_impl 'local' by default) calls each model
     * chunk's allreduce_gradients() after forward_backward_func returns: no bucket starts during
     * the backward. Megatron-Core's --overlap-grad-reduce (DistributedDataParallelConfig
     * overlap_grad_reduce, default False) came later; Korthikanti's rows have dp=1 (no sync). */
    r->grad_reduce_after_backward =
        source >= 0 && strstr(util_csv_field(csv, i, source), "commit 6985e58") != NULL;
  }
  util_csv_free(csv);
  return rows;
err:
  g_ptr_array_unref(rows);
  util_csv_free(csv);
  return NULL;
}

static gint compare_point(gconstpointer a, gconstpointer b) {
  double x = ((const double *)a)[0], y = ((const double *)b)[0];
  return (x > y) - (x < y);
}

/* The reference rule (validate/KORTHIKANTI.md, set before any second curve was at hand): where
 * several curves of the file measure one size, the median of their times at that size. On
 * @curve sorted by size, each run of equal sizes becomes one point. */
static void collapse_to_medians(GArray *curve) {
  double *p = (double *)curve->data;
  guint out = 0;
  for (guint i = 0; i < curve->len;) {
    guint j = i;
    while (j < curve->len && p[2 * j] == p[2 * i]) j++;
    g_autofree double *t = g_new(double, j - i);
    for (guint k = i; k < j; k++) t[k - i] = p[2 * k + 1];
    for (guint a = 1; a < j - i; a++) /* insertion sort: a handful of curves */
      for (guint b = a; b > 0 && t[b - 1] > t[b]; b--) {
        double x = t[b];
        t[b] = t[b - 1], t[b - 1] = x;
      }
    guint n = j - i;
    p[2 * out] = p[2 * i];
    p[2 * out + 1] = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    out++;
    i = j;
  }
  g_array_set_size(curve, out);
}

GArray *val_allreduce_curve_load(const char *path, const char *system, int ranks, GError **error) {
  UtilCsv *csv = util_csv_read(path, error);
  if (!csv) return NULL;
  int coll = util_csv_column(csv, "collective"), size = util_csv_column(csv, "size_bytes");
  int nr = util_csv_column(csv, "ranks"), sys = util_csv_column(csv, "gpu_system");
  int time = util_csv_column(csv, "time_us");
  GArray *curve = g_array_new(FALSE, FALSE, sizeof(double) * 2);
  for (guint i = 0; coll >= 0 && size >= 0 && nr >= 0 && sys >= 0 && time >= 0 && i < csv->rows->len; i++) {
    if (strcmp(util_csv_field(csv, i, coll), "all_reduce") != 0 ||
        atoi(util_csv_field(csv, i, nr)) != ranks || !strstr(util_csv_field(csv, i, sys), system))
      continue;
    double p[2] = {g_ascii_strtod(util_csv_field(csv, i, size), NULL),
                   g_ascii_strtod(util_csv_field(csv, i, time), NULL) * 1e-6};
    if (p[0] > 0 && p[1] > 0) g_array_append_val(curve, p);
  }
  util_csv_free(csv);
  if (curve->len < 2) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s: fewer than 2 all_reduce rows for %d "
                "ranks on a '%s' system", path, ranks, system);
    g_array_unref(curve);
    return NULL;
  }
  g_array_sort(curve, compare_point);
  collapse_to_medians(curve);
  return curve;
}

double val_curve_time(const GArray *curve, double bytes) {
  const double *p = (const double *)curve->data;
  guint n = curve->len;
  if (bytes <= p[0]) return p[1] * bytes / p[0];
  if (bytes >= p[2 * (n - 1)]) return p[2 * (n - 1) + 1] * bytes / p[2 * (n - 1)];
  guint k = 1;
  while (p[2 * k] < bytes) k++;
  double x0 = log(p[2 * (k - 1)]), x1 = log(p[2 * k]), y0 = log(p[2 * (k - 1) + 1]), y1 = log(p[2 * k + 1]);
  return exp(y0 + (y1 - y0) * (log(bytes) - x0) / (x1 - x0));
}

double val_megatron_flops(const ValMegatronRow *r) {
  double B = r->global_batch, s = r->seq, l = r->layers, h = r->hidden, V = r->vocab;
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

/* Collectives per layer and microbatch on a tensor-parallel rank (the header comment). */
static void layer_collectives(const ValMegatronRow *r, int *all_reduce, int *all_gather,
                              int *reduce_scatter) {
  int full = r->recompute == MDL_RECOMPUTE_FULL;
  if (r->sequence_parallel) {
    *all_reduce = 0;
    *all_gather = 6 + 2 * full;
    *reduce_scatter = 4 + 2 * full;
  } else {
    *all_reduce = 4 + 2 * full;
    *all_gather = *reduce_scatter = 0;
  }
}

static void reference(const ValMegatronRow *r, const GArray *curve, const SesSession *session,
                      ValComponents *out) {
  double b = r->micro_batch, s = r->seq, h = r->hidden, t = r->tp;
  double m = (double)r->global_batch / (r->micro_batch * r->dp), layers = (double)r->layers / r->pp;
  /* Per layer and microbatch: the weight GEMMs' 24 b s h^2 FLOPs a forward at the reference GEMM rate;
   * the attention core's two batched GEMMs (QK^T, PV: 2 b s^2 h FLOPs each) each at least
   * the time its b (a/t) s^2 score matrix (2 bytes an element, written by QK^T, read by PV)
   * takes at the HBM peak: with a head dim of 96 or 128 their 2 x dh FLOPs per 2-byte
   * element sit under the A100's ridge point. The backward runs 2 of each kind per forward
   * GEMM (dX, dW / dQ, dK, dS, dV), full recomputation one more forward, selective one more
   * attention core. */
  double dense_fwd = 24 * b * s * h * h / t / VAL_GEMM_A100_FLOPS;
  double core_gemm = MAX(2 * b * s * s * h / t / VAL_GEMM_A100_FLOPS,
                         2 * b * ((double)r->heads / t) * s * s / HBM_A100_BPS);
  double dense_runs = 3 + (r->recompute == MDL_RECOMPUTE_FULL);
  double core_runs = 6 + 2 * (r->recompute != MDL_RECOMPUTE_NONE);
  /* The LM head (tied, vocab-parallel) on the last stage, when GPU 0 holds it (pp = 1):
   * forward, dX and dW, 2 b s h V / t FLOPs each; outside the recomputed layers. */
  double head = r->pp == 1 ? 3 * 2 * b * s * h * r->vocab / t / VAL_GEMM_A100_FLOPS : 0;
  out->gemm_ref_s = m * (layers * (dense_runs * dense_fwd + core_runs * core_gemm) + head);
  int ar, ag, rs;
  layer_collectives(r, &ar, &ag, &rs);
  double n = 2 * b * s * h; /* bf16 activations */
  if (r->tp < 2) {
    out->comm_ref_s = out->comm_model_s = 0;
    return;
  }
  double embed_ar = r->sequence_parallel ? 0 : 1, embed_rs = r->sequence_parallel ? 1 : 0;
  double t_ar = val_curve_time(curve, n);
  out->comm_ref_s = m * (layers * (ar * t_ar + (ag + rs) * t_ar / 2) + embed_ar * t_ar + embed_rs * t_ar / 2);
  g_autofree int *group = g_new(int, r->tp);
  for (int i = 0; i < r->tp; i++) group[i] = i;
  const CmParams *p = ses_session_params(session);
  const DevCluster *c = ses_session_cluster(session);
  double m_ar = cm_group_collective_time(p, c, CM_ALL_REDUCE, group, r->tp, n);
  double m_ag = cm_group_collective_time(p, c, CM_ALL_GATHER, group, r->tp, n);
  double m_rs = cm_group_collective_time(p, c, CM_REDUCE_SCATTER, group, r->tp, n);
  out->comm_model_s = m * (layers * (ar * m_ar + ag * m_ag + rs * m_rs) + embed_ar * m_ar + embed_rs * m_rs);
}

/* GPU 0's compute (GEMM and other) and tensor-parallel collectives in the simulated run. */
static void simulated(const SimRun *run, const ValMegatronRow *r, ValComponents *out) {
  const MdlGraph *g = sim_run_graph(run);
  SimTimeline it;
  SimTaskInfo t;
  sim_timeline_init(&it, run);
  SimTime gemm = 0, other = 0, comm = 0, p2p = 0, optimizer = 0;
  while (sim_timeline_next(&it, &t)) {
    gboolean on0 = FALSE, comm0 = FALSE;
    for (int k = 0; k < t.nres; k++) {
      on0 |= t.resources[k] == sim_resource_compute(0);
      comm0 |= t.resources[k] == sim_resource_comm(0);
    }
    switch (t.kind) {
    case SIM_TASK_FORWARD:
    case SIM_TASK_BACKWARD:
    case SIM_TASK_BACKWARD_WEIGHT:
    case SIM_TASK_RECOMPUTE: {
      if (!on0) break;
      MdlOpKind kind = mdl_graph_op(g, t.op)->kind;
      if (kind == MDL_OP_MATMUL || kind == MDL_OP_BATCH_MATMUL) gemm += t.duration;
      else other += t.duration;
      break;
    }
    case SIM_TASK_OPTIMIZER:
      if (on0) optimizer += t.duration;
      break;
    case SIM_TASK_COMM: {
      /* GPU 0's pipeline transfers, whatever stream they run on */
      if (t.device == 0 && t.collective == CM_SEND_RECV) p2p += t.duration;
      /* Not the receivers' all-gather of a pipeline transfer (Megatron-LM's scatter/gather,
       * sim_build-int.h sb_scatter_gather_axis): its tensor comes from another stage. */
      const MdlStrategy *s = sim_run_strategy(run);
      int producer = t.tensor >= 0 ? mdl_graph_tensor(g, t.tensor)->producer : -1;
      gboolean pipeline = t.collective == CM_ALL_GATHER && producer >= 0 && t.op >= 0 &&
                          s->configs[producer].stage != s->configs[t.op].stage;
      if (comm0 && !pipeline && (int)t.group_size == r->tp &&
          (t.collective == CM_ALL_REDUCE || t.collective == CM_ALL_GATHER ||
           t.collective == CM_REDUCE_SCATTER))
        comm += t.duration;
      break;
    }
    default: break;
    }
  }
  out->gemm_sim_s = sim_time_seconds(gemm);
  out->other_sim_s = sim_time_seconds(other);
  out->comm_sim_s = sim_time_seconds(comm);
  out->p2p_sim_s = sim_time_seconds(p2p);
  out->optimizer_sim_s = sim_time_seconds(optimizer);
}

char *val_gpt_spec(int layers, int hidden, int heads, int seq, int vocab, int batch) {
  return g_strdup_printf("gpt:layers=%d,hidden=%d,heads=%d,seq=%d,vocab=%d,batch=%d", layers,
                         hidden, heads, seq, vocab, batch);
}

char *val_dgx_a100_spec(int gpus) { return g_strdup_printf("dgx-a100:nodes=%d", (gpus + 7) / 8); }

SimRun *val_simulate_specs(const char *model, const char *cluster, const char *strategy,
                           SesSession **session, GError **error) {
  SesSpecs specs = {.model = model, .cluster = cluster, .strategy = strategy};
  *session = ses_session_new_from_specs(&specs, error);
  if (!*session) return NULL;
  SimRun *run = ses_session_simulate(*session, error);
  if (!run) {
    ses_session_free(*session);
    *session = NULL;
  }
  return run;
}

gboolean val_megatron_components(const ValMegatronRow *r, const GArray *curve, ValComponents *out,
                                 GError **error) {
  g_autofree char *model = val_gpt_spec(r->layers, r->hidden, r->heads, r->seq, r->vocab,
                                        r->global_batch);
  g_autofree char *cluster = val_dgx_a100_spec(r->gpus);
  g_autofree char *interleave = r->interleaved > 1
                                    ? g_strdup_printf(",schedule=interleaved,vp=%d", r->interleaved)
                                    : g_strdup("");
  g_autofree char *strategy = g_strdup_printf(
      "megatron:tp=%d,pp=%d,dp=%d,mb=%d,recompute=%s%s%s%s%s", r->tp, r->pp, r->dp,
      r->micro_batch, mdl_recompute_name(r->recompute), r->sequence_parallel ? ",sp=1" : "",
      interleave, r->fp16 ? ",dtype=fp16" : "",
      r->grad_reduce_after_backward ? ",overlap_grad_reduce=0" : "");
  SesSession *session = NULL;
  SimRun *run = val_simulate_specs(model, cluster, strategy, &session, error);
  if (!run) return FALSE;
  memset(out, 0, sizeof *out);
  out->measured_s = r->measured_s;
  out->predicted_s = sim_run_prediction(run)->iteration_time_s;
  out->measured_tflops = r->measured_tflops;
  out->predicted_tflops = val_megatron_flops(r) / (out->predicted_s * r->gpus) / 1e12;
  out->host_bound_s = sim_run_prediction(run)->host_bound_s;
  out->bubble_sim_s = sim_run_prediction(run)->bubble_s;
  out->exposed_sim_s = sim_run_prediction(run)->comm_exposed_s;
  reference(r, curve, session, out);
  simulated(run, r, out);
  sim_run_free(run);
  ses_session_free(session);
  return TRUE;
}
