/* model/strategy_describe — a strategy in one line, from what it holds (mdl_strategy.h).
 *
 * A builder (megatron, dp, summa, ...) records the degrees it used; a strategy read from JSON
 * (model/STRATEGY.md) has none (dp = tp = pp = 0), and printing those fields gave
 * "dp=0 tp=0 pp=0, 1 microbatches of 0" (issue 17, item 5). Such a strategy is described by its
 * meshes, pipeline stages and microbatches instead. And the hardware FLOPs (recomputation
 * counted) that `simulate` prints next to the model FLOPs. */
#include "model/mdl_strategy.h"

/* "2x4" */
static void append_shape(GString *s, const MdlMesh *mesh) {
  for (int a = 0; a < mesh->ndims; a++) g_string_append_printf(s, "%s%d", a ? "x" : "", mesh->shape[a]);
}

char *mdl_strategy_describe(const MdlStrategy *s, const MdlGraph *graph) {
  g_return_val_if_fail(s != NULL && graph != NULL, NULL);
  GString *d = g_string_new(NULL);
  /* FSDP without prefetch changes the timeline; say so (the default, prefetch, is not named). */
  const char *fsdp = s->zero_stage == 3 && !s->fsdp_prefetch ? ", FSDP without prefetch"
                     : !s->overlap_grad_reduce ? ", gradients reduced after the backward"
                                               : "";
  if (s->dp > 0) {
    g_string_append_printf(d, "dp=%d tp=%d pp=%d", s->dp, s->tp, s->pp);
    /* Expert tensor parallelism apart from tp (the default, etp = tp, is not named). */
    if (s->etp > 0 && s->etp != s->tp) g_string_append_printf(d, " etp=%d", s->etp);
    if (s->first_layers > 0) g_string_append_printf(d, " first_layers=%d", s->first_layers);
    if (s->last_layers > 0) g_string_append_printf(d, " last_layers=%d", s->last_layers);
    if (s->account_embedding) g_string_append(d, " account_embedding");
    if (s->account_loss) g_string_append(d, " account_loss");
    if (s->dispatcher != MDL_DISPATCHER_ALLTOALL) /* the default is not named */
      g_string_append_printf(d, " dispatcher=%s", mdl_dispatcher_name(s->dispatcher));
    g_string_append_printf(d, ", %d microbatch%s of %d%s", s->num_microbatches,
                           s->num_microbatches == 1 ? "" : "es", s->microbatch_size, fsdp);
    return g_string_free(d, FALSE);
  }
  guint n = s->meshes->len;
  g_string_append_printf(d, "%u mesh%s (", n, n == 1 ? "" : "es");
  /* Meshes of one shape are listed once with a count: a pipeline of 64 stages is one item. */
  for (guint m = 0; m < n;) {
    const MdlMesh *mesh = mdl_strategy_mesh(s, (int)m);
    guint same = 1;
    while (m + same < n) {
      const MdlMesh *next = mdl_strategy_mesh(s, (int)(m + same));
      gboolean equal = next->ndims == mesh->ndims;
      for (int a = 0; equal && a < mesh->ndims; a++) equal = next->shape[a] == mesh->shape[a];
      if (!equal) break;
      same++;
    }
    if (m) g_string_append(d, ", ");
    if (same > 1) g_string_append_printf(d, "%u x ", same);
    append_shape(d, mesh);
    m += same;
  }
  gint64 samples = s->num_microbatches > 0 ? graph->batch / s->num_microbatches : graph->batch;
  g_string_append_printf(d, "), %d pipeline stage%s, %d microbatch%s of %" G_GINT64_FORMAT
                         " samples%s", s->num_stages, s->num_stages == 1 ? "" : "s",
                         s->num_microbatches, s->num_microbatches == 1 ? "" : "es", samples, fsdp);
  return g_string_free(d, FALSE);
}

double mdl_strategy_hardware_flops(const MdlStrategy *s, const MdlGraph *graph) {
  g_return_val_if_fail(s != NULL && graph != NULL, 0.0);
  double flops = mdl_graph_train_flops(graph);
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    if (mdl_strategy_recomputes(s, op)) flops += op->flops; /* its forward, once more */
  }
  return flops;
}
