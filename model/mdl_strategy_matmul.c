/* model/strategy — 2D (SUMMA/Optimus), 2.5D (Tesseract) and 3D matmul strategies, built as
 * per-op SBP configs (AutoDDL section 4.2; the survey's Table I partitions).
 *
 * Meshes, outermost axis first (devices row-major, so the last axis holds adjacent devices):
 *   summa:q=Q[,dp=D]     (dp, row, col)              dp * Q * Q devices
 *   2.5d:q=Q,d=Dp[,dp=D] (dp, depth, row, col)       dp * Dp * Q * Q devices
 *   3d:q=Q[,dp=D]        (dp, i, j, l)               dp * Q * Q * Q devices
 * (the dp axis is left out when dp = 1). A matmul Y[m,n] = X[m,k] W[k,n] (m: the sample dim and
 * the attribute dims, e.g. b and s; n: the PARAMETER dim indexing Y; k: the REDUCTION dim) gets:
 *
 * SUMMA (van de Geijn & Watts 1997; Optimus, Xu et al. 2021; survey Table I "2D-TP"):
 *   b on dp and row, n on col, k unsplit.  Y = [S(b), S(b), S(n)]: the 2D block (b/q, w_out/q).
 *   The op reads X as [S(b), S(b), B] (the row panel of A) and W as [B, B, S(n)] (the column
 *   panel of B). Whatever stores X in the 2D block [S(b), S(b), S(k)] (or any split on col) reaches
 *   the panel by an all-gather on col: SUMMA's q row broadcasts, aggregated; the backward
 *   reduce-scatters dX on col. The weight is kept as its column panel (B on row): its
 *   gradient all-reduce over row carries exactly the bytes of SUMMA's weight broadcasts along
 *   columns plus the reduce of dW (all-gather + reduce-scatter = all-reduce), but the panel
 *   holds q times the weight memory of Table I's (w_in/q, w_out/q) block.
 * 2.5D as the survey's Table I row "2.5D-TP" (Tesseract, Wang et al. 2021, its reference [41]):
 *   SUMMA on each of the d depth layers, the batch split across layers: b on dp, depth and
 *   row, n on col. X (b/(dq), w_in/q), W (w_in/q, w_out/q) replicated d times, Y (b/(dq),
 *   w_out/q), as Table I lists them; the dW all-reduce runs over depth and row at once, whose
 *   bytes equal SUMMA's dW reduce on row plus Tesseract's all-reduce over depth. The survey
 *   itself calls 2.5D "a 2D-TP that replicates d times". Solomonik and Demmel's 2.5D (operands
 *   stored on the front face, broadcast to the c layers, C reduced back) is NOT built: "held by
 *   one layer only" is not an SBP state (SBP layouts are uniform along an axis). Its iteration
 *   space split (k over the c layers, m and n over the q x q face) is the 3D SBP matmul on a
 *   c x q x q cuboid, which AutoDDL section 4.2 covers and a strategy JSON can state.
 * 3D (Agarwal et al. 1995; Bian et al. 2021, the survey's [17]; AutoDDL's SBP matmul with
 *   p0 = p1 = p2 = q):
 *   b on dp and i; "column" matmuls (tp_dim != k: qkv, fc1, lm_head) n on j and k on l, X read
 *   as [S(b) i, B j, S(k) l], W as [B i, S(n) j, S(k) l], Y = [S(b) i, S(n) j, P l]: input split
 *   on two axes, weight on two, output partial on the third. "Row" matmuls (Megatron's
 *   row-parallel ones, tp_dim == k: attn_proj, fc2) swap j and l (k on j, n on l), as
 *   Colossal-AI's 3D layers swap their input and output groups after each linear
 *   (swap_in_out_group): they consume in place the activation the previous column matmul left
 *   split on j (attention heads, the 4h of the MLP).
 *
 * The other ops are not matmuls; on each model axis (col; j and l), in order, an op splits:
 *   1. if it reads a weight that a matmul also reads (the tied embedding table): the dims that
 *      put the weight in the matmul's layout (a weight has one layout; the IR moves none);
 *   2. the dim its first input's producer left split on that axis (attention after qkv, GELU
 *      after fc1, residual adds after a projection, the loss after the logits): no resharding;
 *   3. where that producer left a partial sum (3D outputs on l or j, the vocab-parallel
 *      embedding): the sample dim (else an attribute), so the sum arrives by reduce-scatter
 *      over tokens; this is the 3D row's stored T_out (b/q^2, w_out/q) of Table I;
 *   4. its tp_dim (the vocabulary of a lone embedding);
 *   5. what Table I splits there for a stored input: an ATTRIBUTE dim indexing the output
 *      (features, or the sequence) on col and l, the sample dim on j (T_in (b/q^2, w_in/q)),
 *      each falling back to the other; else it is replicated on that axis.
 * Layernorms cannot split the hidden dim (mdl_graph.h; Optimus and Colossal-AI reduce its
 * statistics across the hidden split instead): they take the sequence by rule 5, an all-to-all
 * from the residual stream, the one resharding these builders add to the papers' matmul
 * algorithms; the next matmul gathers its input from the sequence split with the same bytes as
 * from a 2D block (SUMMA), or by an all-gather on j plus an all-to-all on l (3D).
 * Every choice checks that the split degree divides the dim (sample dims per microbatch).
 * Ops have no pipeline stages here (pp = 1). */
#include "model/mdl_strategy-int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { AXIS_DATA, AXIS_COL, AXIS_J, AXIS_L }; /* what a mesh axis splits */

typedef struct {
  const MdlGraph *g;
  MdlStrategy *s;
  const MdlMesh *mesh;
  int role[MDL_MAX_MESH_AXES];
  int M;                     /* microbatches */
} Builder;

/* A contraction with a weight: the n (PARAMETER dim indexing the output) and k (REDUCTION) dims;
 * FALSE for anything else. */
static gboolean matmul_dims(const MdlOp *op, int *n, int *k) {
  if (op->kind != MDL_OP_MATMUL) return FALSE;
  *n = *k = -1;
  for (int d = 0; d < op->ndims; d++) {
    gboolean in_output = FALSE;
    for (int i = 0; i < MDL_MAX_DIMS; i++) in_output |= op->output.dim_map[i] == d;
    if (op->dims[d].role == MDL_ROLE_PARAMETER && in_output && *n < 0) *n = d;
    if (op->dims[d].role == MDL_ROLE_REDUCTION && (*k < 0 || d == op->tp_dim)) *k = d;
  }
  return *n >= 0 && *k >= 0;
}

/* Whether splitting @d once more on axis @a keeps every degree dividing its dim. */
static gboolean can_split(const Builder *b, const MdlOp *op, const MdlOpConfig *c, int a, int d) {
  if (d < 0 || d >= op->ndims || !op->dims[d].splittable) return FALSE;
  int64_t size = op->dims[d].size;
  if (op->dims[d].role == MDL_ROLE_SAMPLE) size /= b->M;
  int64_t degree = (int64_t)mdl_config_dim_degree(c, b->mesh, d) * b->mesh->shape[a];
  return size % degree == 0;
}

static gboolean operand_indexes(const MdlOperand *opd, int d) {
  for (int i = 0; i < MDL_MAX_DIMS; i++)
    if (opd->dim_map[i] == d) return TRUE;
  return FALSE;
}

/* Rule 5: a splittable ATTRIBUTE dim indexing the output and the sample dim, in the order
 * @sample_first says; -1 if neither divides. */
static int attribute_or_sample(const Builder *b, const MdlOp *op, const MdlOpConfig *c, int a,
                               gboolean sample_first) {
  int sd = mdl_op_sample_dim(op), attribute = -1;
  for (int d = 0; d < op->ndims && attribute < 0; d++)
    if (op->dims[d].role == MDL_ROLE_ATTRIBUTE && operand_indexes(&op->output, d) &&
        can_split(b, op, c, a, d))
      attribute = d;
  gboolean sample_ok = can_split(b, op, c, a, sd);
  if (sample_first && sample_ok) return sd;
  if (attribute >= 0) return attribute;
  return sample_ok ? sd : -1;
}

/* Rule 2: the layout on axis @a of a weight @op reads that a matmul also reads; -1 if none. */
static int tied_weight_dim(const Builder *b, const MdlOp *op, const MdlOpConfig *c, int a,
                           gboolean *tied) {
  *tied = FALSE;
  for (int k = 0; k < op->ninputs; k++) {
    int w = op->inputs[k].tensor;
    if (!mdl_graph_tensor(b->g, w)->is_weight) continue;
    for (int o = 0; o < mdl_graph_num_ops(b->g); o++) {
      const MdlOp *other = mdl_graph_op(b->g, o);
      int n, kk;
      if (other == op || !matmul_dims(other, &n, &kk)) continue;
      for (int j = 0; j < other->ninputs; j++) {
        if (other->inputs[j].tensor != w) continue;
        *tied = TRUE;
        MdlLayout l = mdl_layout_of_operand(other, &other->inputs[j], FALSE, &b->s->configs[o],
                                            b->mesh);
        int tdim = l.axis[a];
        if (tdim < 0) return -1;
        int d = op->inputs[k].dim_map[tdim];
        return can_split(b, op, c, a, d) ? d : -1;
      }
    }
  }
  return -1;
}

/* Rules 2 and 3: on axis @a the producer of input 0 left its output Split on a tensor dim: the
 * op dim indexing it; Partial: *@partial is set (the caller splits tokens, a reduce-scatter). */
static int follow_producer(const Builder *b, const MdlOp *op, const MdlOpConfig *c, int a,
                           gboolean *partial) {
  *partial = FALSE;
  if (op->ninputs < 1) return -1;
  int p = mdl_graph_tensor(b->g, op->inputs[0].tensor)->producer;
  if (p < 0) return -1;
  const MdlOp *pop = mdl_graph_op(b->g, p);
  MdlLayout l = mdl_layout_of_operand(pop, &pop->output, TRUE, &b->s->configs[p], b->mesh);
  int tdim = l.axis[a];
  *partial = tdim == MDL_LAYOUT_PARTIAL;
  if (tdim < 0) return -1;
  int d = op->inputs[0].dim_map[tdim];
  return can_split(b, op, c, a, d) ? d : -1;
}

/* The split of a non-matmul op on model axis @a (rules 1-5 of the file comment). */
static int other_op_split(const Builder *b, const MdlOp *op, const MdlOpConfig *c, int a) {
  gboolean tied, partial;
  int d = tied_weight_dim(b, op, c, a, &tied);
  if (tied) return d;
  if ((d = follow_producer(b, op, c, a, &partial)) >= 0) return d;
  if (partial && (d = attribute_or_sample(b, op, c, a, TRUE)) >= 0) return d;
  if (can_split(b, op, c, a, op->tp_dim)) return op->tp_dim;
  return attribute_or_sample(b, op, c, a, b->role[a] == AXIS_J);
}

static gboolean configure_matmul(const Builder *b, const MdlOp *op, MdlOpConfig *c, int n, int k,
                                 GError **error) {
  gboolean row_type = op->tp_dim == k;
  for (int a = 0; a < b->mesh->ndims; a++) {
    int d;
    switch (b->role[a]) {
    case AXIS_COL: d = n; break;
    case AXIS_J: d = row_type ? k : n; break;
    case AXIS_L: d = row_type ? n : k; break;
    default: continue;
    }
    if (!can_split(b, op, c, a, d)) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "%s: mesh axis %d (size %d) does not divide dim %s (size %" G_GINT64_FORMAT
                  ") of matmul %s", b->s->name, a, b->mesh->shape[a], op->dims[d].name,
                  (gint64)op->dims[d].size, op->name);
      return FALSE;
    }
    c->split[a] = (int8_t)d;
  }
  return TRUE;
}

static const char *scheme_name(MdlMatmulScheme scheme) {
  switch (scheme) {
  case MDL_MATMUL_SUMMA: return "summa";
  case MDL_MATMUL_2_5D: return "2.5d";
  case MDL_MATMUL_3D: return "3d";
  }
  return "?";
}

MdlStrategy *mdl_strategy_matmul(const MdlGraph *graph, const DevCluster *cluster,
                                 const MdlMatmulConfig *cfg, GError **error) {
  g_return_val_if_fail(graph && cluster && cfg, NULL);
  const char *family = scheme_name(cfg->scheme);
  int depth = cfg->scheme == MDL_MATMUL_2_5D ? cfg->depth : 1;
  if (cfg->q < 1 || cfg->dp < 1 || depth < 1 || cfg->microbatch_size < 1) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "%s: q, d, dp and mb must be >= 1 (got q=%d d=%d dp=%d mb=%d)", family, cfg->q,
                depth, cfg->dp, cfg->microbatch_size);
    return NULL;
  }
  /* Axes: dp (if > 1), then the scheme's. */
  int shape[MDL_MAX_MESH_AXES], role[MDL_MAX_MESH_AXES], naxes = 0;
  if (cfg->dp > 1) shape[naxes] = cfg->dp, role[naxes++] = AXIS_DATA;
  if (cfg->scheme == MDL_MATMUL_2_5D) shape[naxes] = depth, role[naxes++] = AXIS_DATA;
  shape[naxes] = cfg->q, role[naxes++] = AXIS_DATA; /* row, or i */
  if (cfg->scheme == MDL_MATMUL_3D) {
    shape[naxes] = cfg->q, role[naxes++] = AXIS_J;
    shape[naxes] = cfg->q, role[naxes++] = AXIS_L;
  } else {
    shape[naxes] = cfg->q, role[naxes++] = AXIS_COL;
  }
  /* In double: q, d and dp are at most 1e9 each, and four of them overflow int64. */
  double need = 1;
  for (int a = 0; a < naxes; a++) need *= shape[a];
  if (need > dev_cluster_num_devices(cluster)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "%s: the mesh needs %.15g devices but cluster %s has %d", family, need,
                cluster->name, dev_cluster_num_devices(cluster));
    return NULL;
  }
  gint64 ndev = (gint64)need;
  /* Samples per microbatch per replica are split over the data axes after dp. */
  int data_split = (int)(ndev / cfg->dp) / (cfg->scheme == MDL_MATMUL_3D ? cfg->q * cfg->q
                                                                          : cfg->q);
  gint64 per_step = (gint64)cfg->dp * cfg->microbatch_size;
  if (graph->batch % per_step != 0 || cfg->microbatch_size % data_split != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "%s: mb=%d samples per microbatch must be a multiple of %d (the batch split of "
                "one replica) and dp*mb = %" G_GINT64_FORMAT " must divide the global batch %"
                G_GINT64_FORMAT, family, cfg->microbatch_size, data_split, per_step,
                (gint64)graph->batch);
    return NULL;
  }

  if (graph->batch / per_step > MDL_MAX_MICROBATCHES) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "%s: %" G_GINT64_FORMAT " microbatches (batch / (dp*mb)) exceed the limit of %d: "
                "use larger microbatches (mb)", family, graph->batch / per_step,
                MDL_MAX_MICROBATCHES);
    return NULL;
  }
  int nops = mdl_graph_num_ops(graph);
  MdlStrategy *s = mdl_strategy_new_empty(nops);
  s->name = g_strdup(family);
  s->dtype = cfg->dtype;
  s->num_microbatches = (int)(graph->batch / per_step);
  s->dp = cfg->dp;
  s->tp = (int)(ndev / cfg->dp);
  s->pp = 1;
  s->vp = 1;
  s->microbatch_size = cfg->microbatch_size;
  g_autofree int *devices = g_new(int, ndev);
  for (int i = 0; i < ndev; i++) devices[i] = i;
  mdl_strategy_add_mesh(s, naxes, shape, devices);

  Builder b = {.g = graph, .s = s, .mesh = mdl_strategy_mesh(s, 0), .M = s->num_microbatches};
  memcpy(b.role, role, sizeof role);
  /* Matmuls first (rule 2 reads their weight layouts), then the other ops in graph order
   * (rule 3 reads their producers' layouts). */
  for (int pass = 0; pass < 2; pass++)
    for (int o = 0; o < nops; o++) {
      const MdlOp *op = mdl_graph_op(graph, o);
      MdlOpConfig *c = &s->configs[o];
      int n, k;
      gboolean matmul = matmul_dims(op, &n, &k);
      if (matmul != (pass == 0)) continue;
      int sample = mdl_op_sample_dim(op);
      for (int a = 0; a < naxes; a++)
        if (role[a] == AXIS_DATA) c->split[a] = (int8_t)sample;
      if (matmul) {
        if (!configure_matmul(&b, op, c, n, k, error)) goto err;
        continue;
      }
      for (int a = 0; a < naxes; a++)
        if (role[a] != AXIS_DATA) c->split[a] = (int8_t)other_op_split(&b, op, c, a);
    }
  if (!mdl_strategy_validate(s, graph, cluster, error)) goto err;
  return s;
err:
  mdl_strategy_free(s);
  return NULL;
}

gboolean mdl_strategy_matmul_family(const char *family) {
  return g_strcmp0(family, "summa") == 0 || g_strcmp0(family, "2.5d") == 0 ||
         g_strcmp0(family, "3d") == 0;
}



MdlStrategy *mdl_strategy_matmul_parse_spec(const char *spec, const MdlGraph *graph,
                                            const DevCluster *cluster, GError **error) {
  g_return_val_if_fail(spec && graph && cluster, NULL);
  const char *colon = strchr(spec, ':');
  g_autofree char *family = colon ? g_strndup(spec, (gsize)(colon - spec)) : g_strdup(spec);
  MdlMatmulConfig cfg = {.q = 0, .depth = 0, .dp = 0, .microbatch_size = 0,
                         .dtype = mdl_strategy_default_dtype(graph, cluster)};
  if (strcmp(family, "summa") == 0) cfg.scheme = MDL_MATMUL_SUMMA;
  else if (strcmp(family, "2.5d") == 0) cfg.scheme = MDL_MATMUL_2_5D;
  else if (strcmp(family, "3d") == 0) cfg.scheme = MDL_MATMUL_3D;
  else {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "unknown strategy '%s' (known: summa, 2.5d, 3d)",
                family);
    return NULL;
  }
  g_auto(GStrv) pairs = g_strsplit(colon ? colon + 1 : "", ",", -1);
  for (int i = 0; pairs[i]; i++) {
    if (pairs[i][0] == '\0') continue;
    char *eq = strchr(pairs[i], '=');
    if (!eq) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: '%s' is not key=value", family,
                  pairs[i]);
      return NULL;
    }
    *eq = '\0';
    const char *key = pairs[i], *value = eq + 1;
    gboolean ok;
    if (strcmp(key, "q") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg.q, error);
    else if (strcmp(key, "d") == 0 && cfg.scheme == MDL_MATMUL_2_5D)
      ok = mdl_strategy_parse_count(family, key, value, &cfg.depth, error);
    else if (strcmp(key, "dp") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg.dp, error);
    else if (strcmp(key, "mb") == 0) ok = mdl_strategy_parse_count(family, key, value, &cfg.microbatch_size, error);
    else if (strcmp(key, "dtype") == 0) {
      ok = dev_dtype_parse(value, &cfg.dtype);
      if (!ok)
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                    "strategy %s: unknown dtype '%s' (known: fp32, tf32, fp16, bf16, fp8)", family, value);
    } else {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: unknown key '%s' (known: q, %sdp, "
                  "mb, dtype)", family, key, cfg.scheme == MDL_MATMUL_2_5D ? "d, " : "");
      return NULL;
    }
    if (!ok) return NULL;
  }
  if (cfg.q == 0 || (cfg.scheme == MDL_MATMUL_2_5D && cfg.depth == 0)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "strategy %s: needs %s", family,
                cfg.scheme == MDL_MATMUL_2_5D ? "q=Q and d=D" : "q=Q");
    return NULL;
  }
  /* In double: q and d are at most 1e9 each, so q*q*q overflows even int64 (the fuzzer's
   * "summa:q=33333333"); a group larger than the cluster leaves dp=1 for mdl_strategy_matmul
   * to refuse. */
  double group = (double)cfg.q * cfg.q * (cfg.scheme == MDL_MATMUL_3D ? cfg.q
                                          : cfg.scheme == MDL_MATMUL_2_5D ? cfg.depth : 1);
  if (cfg.dp == 0) cfg.dp = (int)MAX(1.0, floor(dev_cluster_num_devices(cluster) / group));
  if (cfg.microbatch_size == 0) /* one microbatch per replica: no gradient accumulation */
    cfg.microbatch_size = (int)MAX(1, graph->batch / cfg.dp);
  MdlStrategy *s = mdl_strategy_matmul(graph, cluster, &cfg, error);
  if (s) {
    g_free(s->name);
    s->name = g_strdup(spec);
  }
  return s;
}
