/* model/strategy — builders (data parallel, Megatron-LM) and the CLI strategy spec.
 *
 * Megatron-LM (Shoeybi et al. 2019; Narayanan et al. 2021): global rank = pp-major, then dp,
 * then tp, so tensor-parallel peers are adjacent devices (inside a host when tp <= gpus per
 * host). Each stage runs on a (dp, tp) mesh: axis 0 splits every op's sample dim, axis 1 the
 * op's tp_dim (column-parallel output features, row-parallel contraction, attention heads,
 * vocabulary), which yields the two forward all-reduces per layer through SBP resharding.
 * Sequence parallelism (Korthikanti et al. 2022, section 4.2.2, Fig. 5) splits instead, on the
 * tp axis, the sequence of the ops tensor parallelism leaves replicated (layernorms, dropout and
 * residual adds: tp_dim -1); SBP resharding then turns each of those all-reduces into a
 * reduce-scatter (Partial -> Split(s)) before them and an all-gather (Split(s) -> Broadcast)
 * after them, the same bytes on the wire as the all-reduce they replace.
 * With context (cp) or expert (ep) parallelism the per-rank mesh and every op's splits come
 * from model/mdl_strategy_axes.c (Megatron-Core's tp-cp-ep-dp-pp layout); check_cp_ep refuses
 * degrees the model cannot take, in one line. */
#include "model/mdl_strategy-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* How mdl_strategy_megatron's batch refusal begins: mdl_strategy_parse_spec recognises it and
 * words it after the spec the user wrote (batch_splits). */
#define BATCH_SPLIT_PREFIX "megatron: dp*mb = "

/* The chunk of each layer under Megatron-Core's uneven pipeline (--decoder-first-pipeline-
 * num-layers F, --decoder-last-pipeline-num-layers La; TransformerConfig's
 * num_layers_in_first/last_pipeline_stage, used by get_transformer_layer_offset in
 * megatron/core/transformer/transformer_layer.py): pipeline rank 0 holds F layers, the last rank
 * La, and the ranks between split the rest evenly (0: that end is not set apart, its rank is a
 * middle one). With vp virtual stages each rank's layers are split evenly over its vp chunks,
 * and the chunks run in Megatron's order, chunk c = v*pp + r on rank r: each virtual round
 * v holds F/vp layers on rank 0, then the middle ranks', then La/vp on the last rank. */
static gboolean uneven_layer_chunks(const MdlGraph *graph, int ranks, int vp, int first,
                                    int last, int *chunk_of_layer, GError **error) {
  int layers = graph->num_layers;
  if (layers <= 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: first_layers/last_layers need a model with layers; model %s has none",
                graph->name);
    return FALSE;
  }
  if (ranks < 2) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: first_layers/last_layers need pipeline parallelism (pp > 1)");
    return FALSE;
  }
  if (first % vp != 0 || last % vp != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: first_layers=%d and last_layers=%d must be multiples of vp=%d (each "
                "rank's layers are split evenly over its virtual stages)", first, last, vp);
    return FALSE;
  }
  int middle = ranks - (first > 0) - (last > 0), rest = layers - first - last;
  if (rest < middle * vp || (middle == 0 && rest != 0) ||
      (middle > 0 && rest % (middle * vp) != 0)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: the %d layers left of model %s's %d after first_layers=%d and "
                "last_layers=%d do not split evenly over the other %d pipeline chunks",
                rest, graph->name, layers, first, last, middle * vp);
    return FALSE;
  }
  int l = 0;
  for (int c = 0; c < ranks * vp; c++) {
    int r = c % ranks;
    int count = r == 0 && first > 0           ? first / vp
                : r == ranks - 1 && last > 0 ? last / vp
                                             : rest / (middle * vp);
    for (int i = 0; i < count; i++) chunk_of_layer[l++] = c;
  }
  g_assert(l == layers);
  return TRUE;
}

/* The chunk of each layer when the embedding (@embedding) and the output layer with the loss
 * (@loss) each count as one layer (Megatron-Core's account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split, TransformerConfig; get_num_layers_to_build in
 * megatron/core/transformer/transformer_block.py): layers + embedding + loss split evenly over
 * the ranks x vp chunks in Megatron's chunk order, so the first chunk holds one transformer
 * layer fewer with @embedding and the last one fewer with @loss (Megatron-Bridge's Llama 3.1
 * 405B recipe: 126 layers + 2 = 128 over pp 8 x vp 8 = 64 chunks of 2). */
static gboolean accounted_layer_chunks(const MdlGraph *graph, int ranks, int vp, gboolean embedding,
                                       gboolean loss, int *chunk_of_layer, GError **error) {
  int layers = graph->num_layers, chunks = ranks * vp;
  int total = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (layers <= 0 || total % chunks != 0 || total / chunks < 1 + ((embedding || loss) && chunks == 1)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: account_embedding/account_loss: model %s's %d layers%s%s do not split "
                "evenly over pp*vp = %d*%d = %d pipeline chunks", graph->name, MAX(layers, 0),
                embedding ? " + the embedding" : "", loss ? " + the loss" : "", ranks, vp, chunks);
    return FALSE;
  }
  int per = total / chunks, l = 0;
  for (int c = 0; c < chunks; c++) {
    int count = per - (c == 0 && embedding) - (c == chunks - 1 && loss);
    for (int i = 0; i < count; i++) chunk_of_layer[l++] = c;
  }
  g_assert(l == layers);
  return TRUE;
}

/* Stage (model chunk) of each op for pp ranks of vp chunks each: equal numbers of layers per
 * chunk (Megatron requires pp * vp | layers), or with @first / @last (the layers of ranks 0
 * and pp - 1) the uneven split above;
 * ops before the first layer go to chunk 0, after the last to the last chunk. Models without
 * layers are cut where cumulative forward FLOPs cross i/(pp*vp) of the total. */
static gboolean assign_stages(const MdlGraph *graph, int ranks, int vp, int first, int last,
                              gboolean embedding, gboolean loss, int *stage_of, GError **error) {
  int n = mdl_graph_num_ops(graph);
  if ((gint64)ranks * vp > n) { /* checked in 64 bits: vp alone may be up to 1e9 */
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: %" G_GINT64_FORMAT " pipeline chunks (pp=%d, vp=%d) exceed the model's "
                "%d ops", (gint64)ranks * vp, ranks, vp, n);
    return FALSE;
  }
  int pp = ranks * vp; /* chunks */
  if (first > 0 || last > 0 || embedding || loss) {
    g_autofree int *chunk_of_layer = g_new(int, MAX(graph->num_layers, 1));
    if (first > 0 || last > 0 ? !uneven_layer_chunks(graph, ranks, vp, first, last, chunk_of_layer, error)
                              : !accounted_layer_chunks(graph, ranks, vp, embedding, loss, chunk_of_layer, error))
      return FALSE;
    gboolean seen_layer = FALSE;
    for (int o = 0; o < n; o++) {
      int layer = mdl_graph_op(graph, o)->layer;
      seen_layer |= layer >= 0;
      stage_of[o] = layer >= 0 ? chunk_of_layer[layer] : seen_layer ? pp - 1 : 0;
    }
    return TRUE;
  }
  if (pp == 1) {
    memset(stage_of, 0, sizeof(int) * (gsize)n);
    return TRUE;
  }
  if (graph->num_layers > 0) {
    if (graph->num_layers % pp != 0) {
      if (vp > 1)
        g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                    "megatron: pp*vp = %d*%d = %d does not divide the model's %d layers", ranks,
                    vp, pp, graph->num_layers);
      else
        g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                    "megatron: pp=%d does not divide the model's %d layers", pp,
                    graph->num_layers);
      return FALSE;
    }
    int per_stage = graph->num_layers / pp;
    gboolean seen_layer = FALSE;
    for (int o = 0; o < n; o++) {
      int layer = mdl_graph_op(graph, o)->layer;
      if (layer >= 0) {
        seen_layer = TRUE;
        stage_of[o] = layer / per_stage;
      } else {
        stage_of[o] = seen_layer ? pp - 1 : 0;
      }
    }
    return TRUE;
  }
  if (n < pp) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: %d pipeline chunks (pp=%d, vp=%d) exceed the model's %d ops", pp,
                ranks, vp, n);
    return FALSE;
  }
  double total = 0;
  for (int o = 0; o < n; o++) total += mdl_graph_op(graph, o)->flops;
  double before = 0;
  for (int o = 0; o < n; o++) {
    double mid = before + mdl_graph_op(graph, o)->flops / 2;
    int s = total > 0 ? (int)(mid / total * pp) : o * pp / n;
    stage_of[o] = MIN(s, pp - 1);
    before += mdl_graph_op(graph, o)->flops;
  }
  /* Keep stages monotone and non-empty. */
  for (int o = 1; o < n; o++) stage_of[o] = MAX(stage_of[o], stage_of[o - 1]);
  for (int s = pp - 1, o = n - 1; s >= 0 && o >= 0; s--, o--)
    if (stage_of[o] > s) stage_of[o] = s;
  for (int o = 1; o < n; o++) stage_of[o] = MAX(stage_of[o], stage_of[o - 1]);
  return TRUE;
}

/* Context parallelism splits the sequence, expert parallelism the experts: both need a model
 * that has them, and degrees that divide them (one-line errors before anything is built). */
static gboolean check_cp_ep(const MdlGraph *graph, const MdlMegatronConfig *cfg, GError **error) {
  int cp = MAX(cfg->cp, 1), ep = MAX(cfg->ep, 1);
  if (cp > 1 && (graph->seq <= 1 || graph->seq % cp != 0)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: cp=%d must divide the model's sequence length %" G_GINT64_FORMAT, cp,
                (gint64)graph->seq);
    return FALSE;
  }
  if (cfg->etp > 0 && cfg->etp != cfg->tp && ep == 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: etp=%d differs from tp=%d but ep=1: expert tensor parallelism is "
                "set apart from tp only with expert parallelism", cfg->etp, cfg->tp);
    return FALSE;
  }
  if (cfg->dispatcher != MDL_DISPATCHER_ALLTOALL && ep == 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: dispatcher=%s needs expert parallelism (ep > 1)",
                mdl_dispatcher_name(cfg->dispatcher));
    return FALSE;
  }
  if (ep == 1) return TRUE;
  int64_t experts = 0;
  if (!mdl_graph_num_experts(graph, &experts)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: ep=%d needs a model with experts (moe:...); model %s has none", ep,
                graph->name);
    return FALSE;
  }
  if (experts % ep != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: ep=%d does not divide the model's %" G_GINT64_FORMAT " experts", ep,
                (gint64)experts);
    return FALSE;
  }
  return TRUE;
}

MdlStrategy *mdl_strategy_megatron(const MdlGraph *graph, const DevCluster *cluster,
                                   const MdlMegatronConfig *cfg, GError **error) {
  int ndev = dev_cluster_num_devices(cluster);
  if (cfg->tp < 1 || cfg->pp < 1 || cfg->dp < 1 || cfg->microbatch_size < 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: tp, pp, dp and mb must be >= 1 (got tp=%d pp=%d dp=%d mb=%d)", cfg->tp,
                cfg->pp, cfg->dp, cfg->microbatch_size);
    return NULL;
  }
  int cp = MAX(cfg->cp, 1), ep = MAX(cfg->ep, 1);
  /* In double: each degree is at most 1e9, and three of them overflow int64. */
  double need = (double)cfg->tp * cfg->pp * cfg->dp * cp;
  if (need > ndev) {
    if (cp > 1)
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "megatron: tp*cp*pp*dp = %.15g devices but cluster %s has %d", need,
                  cluster->name, ndev);
    else
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "megatron: tp*pp*dp = %.15g devices but cluster %s has %d", need,
                  cluster->name, ndev);
    return NULL;
  }
  if (!check_cp_ep(graph, cfg, error)) return NULL;
  if (graph->heads > 0 && cfg->tp > 1 && graph->heads % cfg->tp != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: tp=%d does not divide the model's %d attention heads", cfg->tp,
                graph->heads);
    return NULL;
  }
  gint64 per_step = (gint64)cfg->dp * cfg->microbatch_size;
  if (graph->batch % per_step != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                BATCH_SPLIT_PREFIX "%" G_GINT64_FORMAT " does not divide the global batch %"
                G_GINT64_FORMAT, per_step, graph->batch);
    return NULL;
  }
  if (graph->batch / per_step > MDL_MAX_MICROBATCHES) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: %" G_GINT64_FORMAT " microbatches (batch / (dp*mb)) exceed the limit of "
                "%d: use larger microbatches (mb)", graph->batch / per_step, MDL_MAX_MICROBATCHES);
    return NULL;
  }
  int vp = cfg->virtual_stages > 1 ? cfg->virtual_stages : 1;
  if (vp > 1 && cfg->schedule != MDL_SCHEDULE_INTERLEAVED) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: vp=%d needs schedule=interleaved (got schedule=%s)", vp,
                mdl_schedule_name(cfg->schedule));
    return NULL;
  }
  if (cfg->schedule == MDL_SCHEDULE_INTERLEAVED && (vp < 2 || cfg->pp < 2)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: schedule=interleaved needs vp >= 2 and pp >= 2 (got vp=%d, pp=%d)", vp,
                cfg->pp);
    return NULL;
  }
  if (cfg->zero_stage < 0 || cfg->zero_stage > 3) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY, "megatron: zero=%d must be 0..3",
                cfg->zero_stage);
    return NULL;
  }
  if (cfg->no_fsdp_prefetch && cfg->zero_stage != 3) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: fsdp_prefetch=0 needs FSDP (zero=3, got zero=%d)", cfg->zero_stage);
    return NULL;
  }
  if (cfg->no_overlap_grad_reduce && cfg->zero_stage > 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: overlap_grad_reduce=0 needs zero=0 or 1 (got zero=%d)", cfg->zero_stage);
    return NULL;
  }
  if (cfg->sequence_parallel && cfg->tp < 2) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: sp=1 needs tensor parallelism (tp > 1, got tp=%d)", cfg->tp);
    return NULL;
  }
  int n = mdl_graph_num_ops(graph);
  g_autofree int *stage_of = g_new(int, n);
  if ((cfg->account_embedding || cfg->account_loss) && (cfg->first_layers > 0 || cfg->last_layers > 0)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: account_embedding/account_loss and first_layers/last_layers are two ways "
                "to split the pipeline unevenly: give one (Megatron-Core refuses both)");
    return NULL;
  }
  if (!assign_stages(graph, cfg->pp, vp, cfg->first_layers, cfg->last_layers,
                     cfg->account_embedding, cfg->account_loss, stage_of, error))
    return NULL;

  MdlStrategy *s = mdl_strategy_new_empty(n);
  s->num_stages = cfg->pp * vp;
  s->virtual_stages = vp;
  s->weight_delay = cfg->weight_delay;
  if (cfg->bucket_mb != 0) s->bucket_bytes = cfg->bucket_mb > 0 ? cfg->bucket_mb * 1024 * 1024 : 0;
  s->overlap = !cfg->no_overlap;
  s->zero_stage = cfg->zero_stage;
  s->recompute = cfg->recompute;
  s->sequence_parallel = cfg->sequence_parallel;
  s->framework = cfg->framework;
  s->overlap_param_gather = cfg->overlap_param_gather;
  s->tp_overlap = cfg->tp_overlap;
  s->fsdp_prefetch = !cfg->no_fsdp_prefetch;
  s->overlap_grad_reduce = !cfg->no_overlap_grad_reduce;
  s->async_tp_allreduce = cfg->async_tp_allreduce;
  s->num_microbatches = (int)(graph->batch / per_step);
  s->schedule = cfg->schedule;
  s->dtype = cfg->dtype;
  s->dp = cfg->dp;
  s->tp = cfg->tp;
  s->pp = cfg->pp;
  s->vp = vp;
  s->microbatch_size = cfg->microbatch_size;
  s->cp = cp;
  s->ep = ep;
  s->etp = cfg->etp > 0 ? cfg->etp : cfg->tp;
  s->dispatcher = cfg->dispatcher;
  s->first_layers = cfg->first_layers;
  s->last_layers = cfg->last_layers;
  s->account_embedding = cfg->account_embedding;
  s->account_loss = cfg->account_loss;
  MdlRankAxes axes;
  if (!mdl_megatron_axes(cfg, &axes, error)) {
    mdl_strategy_free(s);
    return NULL;
  }
  int per_rank = cfg->dp * cp * cfg->tp;
  g_autofree int *devices = g_new(int, per_rank);
  for (int stage = 0; stage < cfg->pp; stage++) {
    for (int i = 0; i < per_rank; i++) devices[i] = stage * per_rank + i;
    mdl_strategy_add_mesh(s, axes.ndims, axes.shape, devices);
  }
  gboolean sequence_split = FALSE;
  for (int o = 0; o < n; o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    MdlOpConfig *c = &s->configs[o];
    c->mesh = stage_of[o] % cfg->pp; /* one mesh per rank, shared by its chunks */
    c->stage = stage_of[o];
    if (!mdl_megatron_op_splits(op, &axes, cfg, c->split, error)) {
      mdl_strategy_free(s);
      return NULL;
    }
    for (int a = axes.tp_axis; a < axes.ndims; a++)
      sequence_split |= cfg->sequence_parallel && op->tp_dim < 0 && c->split[a] >= 0;
  }
  if (cfg->sequence_parallel && !sequence_split) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: sp=1 needs ops with a sequence dim \"s\" and no tp_dim; model %s has "
                "none", graph->name);
    mdl_strategy_free(s);
    return NULL;
  }
  if (!mdl_strategy_validate(s, graph, cluster, error)) {
    mdl_strategy_free(s);
    return NULL;
  }
  return s;
}

MdlStrategy *mdl_strategy_data_parallel(const MdlGraph *graph, const DevCluster *cluster,
                                        int ndevices, DevDtype dtype, GError **error) {
  MdlMegatronConfig cfg = {.tp = 1, .pp = 1, .dp = ndevices, .schedule = MDL_SCHEDULE_1F1B,
                           .dtype = dtype};
  cfg.microbatch_size = ndevices > 0 ? (int)MAX(1, graph->batch / ndevices) : 1;
  return mdl_strategy_megatron(graph, cluster, &cfg, error);
}



static gboolean parse_megatron_kv(const char *family, const char *params,
                                  MdlMegatronConfig *cfg, gboolean *dp_given, GError **error) {
  g_auto(GStrv) pairs = g_strsplit(params, ",", -1);
  for (int i = 0; pairs[i]; i++) {
    if (pairs[i][0] == '\0') continue;
    char *eq = strchr(pairs[i], '=');
    if (!eq) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: '%s' is not key=value", family,
                  pairs[i]);
      return FALSE;
    }
    *eq = '\0';
    const char *key = pairs[i], *value = eq + 1;
    gboolean ok = TRUE;
    if (strcmp(key, "tp") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->tp, error);
    else if (strcmp(key, "pp") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->pp, error);
    else if (strcmp(key, "dp") == 0) {
      ok = mdl_strategy_parse_count(family, key, value, &cfg->dp, error);
      *dp_given = TRUE;
    } else if (strcmp(key, "mb") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->microbatch_size, error);
    else if (strcmp(key, "vp") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->virtual_stages, error);
    else if (strcmp(key, "cp") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->cp, error);
    else if (strcmp(key, "ep") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->ep, error);
    else if (strcmp(key, "etp") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->etp, error);
    else if (strcmp(key, "first_layers") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->first_layers, error);
    else if (strcmp(key, "last_layers") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg->last_layers, error);
    else if (strcmp(key, "bucket_mb") == 0) {
      char *end = NULL;
      double v = g_ascii_strtod(value, &end);
      if (!*value || *end || !(v >= 0 && v <= 1e6)) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: bucket_mb=%s must be a size in MiB from 0 to 1e6", family, value);
        return FALSE;
      }
      cfg->bucket_mb = v > 0 ? v : -1;
    } else if (strcmp(key, "overlap") == 0) {
      if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: overlap=%s must be 0 or 1",
                    family, value);
        return FALSE;
      }
      cfg->no_overlap = value[0] == '0';
    } else if (strcmp(key, "wdelay") == 0) {
      if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: wdelay=%s must be 0 or 1",
                    family, value);
        return FALSE;
      }
      cfg->weight_delay = value[0] == '1';
    } else if (strcmp(key, "schedule") == 0) {
      if (!mdl_schedule_parse(value, &cfg->schedule)) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: unknown schedule '%s' (known: gpipe, 1f1b, interleaved, "
                    "eager1f1b)", family, value);
        return FALSE;
      }
    } else if (strcmp(key, "zero") == 0) {
      if (strlen(value) != 1 || value[0] < '0' || value[0] > '3') {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: zero=%s must be a ZeRO stage 0, 1, 2 or 3", family, value);
        return FALSE;
      }
      cfg->zero_stage = value[0] - '0';
    } else if (strcmp(key, "recompute") == 0) {
      if (!mdl_recompute_parse(value, &cfg->recompute)) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: recompute=%s must be none, selective or full", family, value);
        return FALSE;
      }
    } else if (strcmp(key, "overlap_param_gather") == 0 || strcmp(key, "tp_overlap") == 0 ||
               strcmp(key, "fsdp_prefetch") == 0 || strcmp(key, "overlap_grad_reduce") == 0 ||
               strcmp(key, "async_tensor_model_parallel_allreduce") == 0) {
      if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: %s=%s must be 0 or 1",
                    family, key, value);
        return FALSE;
      }
      if (key[0] == 'a') cfg->async_tp_allreduce = value[0] == '1' ? 1 : -1;
      else if (key[0] == 'f') cfg->no_fsdp_prefetch = value[0] == '0';
      else if (strcmp(key, "overlap_grad_reduce") == 0) cfg->no_overlap_grad_reduce = value[0] == '0';
      else *(key[0] == 't' ? &cfg->tp_overlap : &cfg->overlap_param_gather) = value[0] == '1';
    } else if (strcmp(key, "sp") == 0 || strcmp(key, "account_embedding") == 0 ||
               strcmp(key, "account_loss") == 0) {
      if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: %s=%s must be 0 or 1",
                    family, key, value);
        return FALSE;
      }
      gboolean *flag = strcmp(key, "sp") == 0           ? &cfg->sequence_parallel
                       : strcmp(key, "account_loss") == 0 ? &cfg->account_loss
                                                          : &cfg->account_embedding;
      *flag = value[0] == '1';
    } else if (strcmp(key, "dispatcher") == 0) {
      if (!mdl_dispatcher_parse(value, &cfg->dispatcher)) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: dispatcher=%s must be alltoall or allgather", family, value);
        return FALSE;
      }
    } else if (strcmp(key, "framework") == 0) {
      if (!mdl_framework_parse(value, &cfg->framework)) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: unknown framework '%s' (known: megatron-lm, megatron-deepspeed, "
                    "pytorch-eager, cuda-graphs, none)", family, value);
        return FALSE;
      }
    } else if (strcmp(key, "dtype") == 0) {
      if (!dev_dtype_parse(value, &cfg->dtype)) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: unknown dtype '%s' (known: fp32, tf32, fp16, bf16, fp8)", family, value);
        return FALSE;
      }
    } else {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                  "strategy %s: unknown key '%s' (known: tp, pp, dp, mb, schedule, vp, wdelay, "
                  "bucket_mb, overlap, dtype, zero, recompute, sp, cp, ep, etp, "
                  "dispatcher, first_layers, last_layers, overlap_param_gather, tp_overlap, fsdp_prefetch, "
                  "overlap_grad_reduce, async_tensor_model_parallel_allreduce, framework)",
                  family, key);
      return FALSE;
    }
    if (!ok) return FALSE;
  }
  return TRUE;
}

/* The global batch must split into dp replicas of mb-sample microbatches. Checked here, where
 * it is known which of dp and mb the user wrote in @spec and which were defaults, so that the
 * message names the user's words and suggests a dp that works. */
static gboolean batch_splits(const char *spec, const char *family, const MdlGraph *graph,
                             const DevCluster *cluster, const MdlMegatronConfig *cfg,
                             gboolean dp_given, GError **error) {
  gint64 per_step = (gint64)cfg->dp * cfg->microbatch_size;
  int ndev = dev_cluster_num_devices(cluster);
  /* Degrees that do not fit the cluster are mdl_strategy_megatron's to refuse. */
  if (per_step < 1 || graph->batch % per_step == 0 ||
      (double)cfg->tp * cfg->pp * cfg->dp > ndev)
    return TRUE;
  g_autofree char *dp_from =
      dp_given ? g_strdup_printf("%d data-parallel replicas (dp=%d)", cfg->dp, cfg->dp)
               : g_strdup_printf("%d data-parallel replicas (dp defaults to cluster %s's %d GPUs "
                                 "/ tp*pp = %d)", cfg->dp, cluster->name, ndev, cfg->tp * cfg->pp);
  /* The largest dp that fits the devices and divides the batch into mb-sample microbatches. */
  int suggest = 0;
  for (int d = MIN(cfg->dp, ndev); d >= 1 && !suggest; d--)
    if (graph->batch % ((gint64)d * cfg->microbatch_size) == 0) suggest = d;
  g_autofree char *hint =
      suggest == 0 ? g_strdup("")
      : dp_given   ? g_strdup_printf("; dp=%d would", suggest)
                   : g_strdup_printf("; dp=%d would (%s%sdp=%d)", suggest, spec,
                                     strchr(spec, ':') ? "," : ":", suggest);
  if (cfg->microbatch_size > 1 || strcmp(family, "megatron") == 0)
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "strategy %s: %s of %d-sample microbatches (mb=%d%s) do not divide model %s's "
                "global batch of %" G_GINT64_FORMAT "%s",
                spec, dp_from, cfg->microbatch_size, cfg->microbatch_size,
                strstr(spec, "mb=") ? "" : ", the default", graph->name, graph->batch, hint);
  else
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "strategy %s: %s do not divide model %s's global batch of %" G_GINT64_FORMAT
                " samples evenly%s",
                spec, dp_from, graph->name, graph->batch, hint);
  return FALSE;
}

MdlStrategy *mdl_strategy_parse_spec(const char *spec, const MdlGraph *graph,
                                     const DevCluster *cluster, GError **error) {
  g_return_val_if_fail(spec && graph && cluster, NULL);
  if (strchr(spec, '/') || g_str_has_suffix(spec, ".json")) {
    g_autofree char *text = NULL;
    if (!mdl_read_json_file("strategy file", spec, &text, error)) return NULL;
    return mdl_strategy_from_json(text, spec, graph, cluster, error);
  }
  const char *colon = strchr(spec, ':');
  g_autofree char *family = colon ? g_strndup(spec, (gsize)(colon - spec)) : g_strdup(spec);
  const char *params = colon ? colon + 1 : "";
  if (mdl_strategy_matmul_family(family)) return mdl_strategy_matmul_parse_spec(spec, graph, cluster, error);
  MdlMegatronConfig cfg = {.tp = 1, .pp = 1, .dp = 0, .microbatch_size = 0,
                           .schedule = MDL_SCHEDULE_1F1B, .virtual_stages = 1,
                           .dtype = mdl_strategy_default_dtype(graph, cluster)};
  gboolean dp_given = FALSE;
  if (strcmp(family, "dp") != 0 && strcmp(family, "megatron") != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                "unknown strategy '%s' (known: dp, megatron:tp=T,pp=P,dp=D,mb=M, summa:q=Q, "
                "2.5d:q=Q,d=D, 3d:q=Q, or a JSON file)",
                family);
    return NULL;
  }
  if (!parse_megatron_kv(family, params, &cfg, &dp_given, error)) return NULL;
  if (strcmp(family, "dp") == 0 &&
      (cfg.tp != 1 || cfg.pp != 1 || cfg.cp > 1 || cfg.ep > 1 || cfg.etp > 1)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                "strategy dp: tp, pp, cp, ep and etp must be 1 (use megatron:tp=..,pp=..)");
    return NULL;
  }
  if (!dp_given) { /* 64-bit: tp * pp * cp of a bad spec can exceed an int */
    gint64 model_parallel = (gint64)cfg.tp * cfg.pp * MAX(cfg.cp, 1);
    cfg.dp = (int)MAX(1, dev_cluster_num_devices(cluster) / model_parallel);
  }
  if (cfg.microbatch_size == 0) {
    /* dp without mb: one microbatch per replica (no gradient accumulation); megatron: 1. */
    cfg.microbatch_size = strcmp(family, "dp") == 0 && graph->batch % cfg.dp == 0
                              ? (int)MAX(1, graph->batch / cfg.dp) : 1;
  }
  /* The builder checks in its order (devices, heads, experts, then the batch); when the batch
   * is what it refused, say it in the user's words (batch_splits). */
  GError *refused = NULL;
  MdlStrategy *s = mdl_strategy_megatron(graph, cluster, &cfg, &refused);
  if (!s && g_error_matches(refused, MDL_ERROR, MDL_ERROR_STRATEGY) &&
      g_str_has_prefix(refused->message, BATCH_SPLIT_PREFIX) &&
      !batch_splits(spec, family, graph, cluster, &cfg, dp_given, error)) {
    g_error_free(refused);
    return NULL;
  }
  if (refused) g_propagate_error(error, refused);
  if (s) s->name = g_strdup(spec);
  return s;
}
