/* model/strategy/axes — the mesh of one Megatron pipeline rank under context and expert
 * parallelism, and the dim every op splits on each of its axes.
 *
 * Rank layout: Megatron-Core's RankGenerator with its default order "tp-cp-ep-dp-pp"
 * (megatron/core/parallel_state.py, initialize_model_parallel): tensor parallelism innermost,
 * then context parallelism, then data parallelism, then pipeline; the dense layers' generator
 * has ep = 1 (tp-cp-dp-pp) and the expert layers' generator lays out tp-ep-dp-pp over the same
 * ranks (expert tensor parallelism = tp here), so an expert-parallel group is the innermost ep
 * ranks of the (dp x cp) block, cp inner: EP is folded over DP x CP. Within one pipeline rank
 * the devices are stage*dp*cp*tp + ((d*cp + c)*tp + t).
 * Mesh: that (dp*cp) block is cut into axes at the boundaries of the cp group and of the ep
 * group (one must divide the other), outermost first, then the tp axis:
 *   ep = cp = 1:        (dp, tp)                      (the builder's mesh before cp and ep)
 *   ep <= cp (ep | cp): (dp, cp/ep, ep, tp)           (axes of size 1 other than dp dropped)
 *   ep > cp (cp | ep):  (dp*cp/ep, ep/cp, cp, tp)
 * Splits on a data axis: an expert op (one with a splittable dim "e": the grouped expert GEMMs
 * and the activation between them; the token dispatch's e is not splittable) splits e on the axes inside the ep group; other ops split their token dim (the first
 * splittable ATTRIBUTE dim named s, sq or c) on the axes inside the cp group; every other axis
 * splits the sample dim. SBP resharding then yields the collectives: the token-side layout
 * S(b) or S(token) meets the expert layout S(e) on the ep axes (an all-to-all each way, the
 * dispatch and the combine), and attention, which reads keys and values over the whole
 * sequence (sk), all-gathers them from the cp group in the forward and reduce-scatters their
 * gradients in the backward (the all-gather flavour of context parallelism that Llama 3 used,
 * Dubey et al. 2024, section 3.3.2; its ring transfers are the p2p flavour's). */
#include "model/mdl_strategy-int.h"

#include <string.h>

static const char *const token_dims[] = {"s", "sq", "c"};

int mdl_op_token_dim(const MdlOp *op) {
  for (guint i = 0; i < G_N_ELEMENTS(token_dims); i++) {
    int d = mdl_op_find_dim(op, token_dims[i]);
    if (d >= 0 && op->dims[d].role == MDL_ROLE_ATTRIBUTE && op->dims[d].splittable) return d;
  }
  return -1;
}

int mdl_op_expert_dim(const MdlOp *op) {
  int d = mdl_op_find_dim(op, "e");
  return d >= 0 && op->dims[d].splittable ? d : -1;
}

gboolean mdl_graph_num_experts(const MdlGraph *graph, int64_t *experts) {
  for (int o = 0; o < mdl_graph_num_ops(graph); o++) {
    const MdlOp *op = mdl_graph_op(graph, o);
    int e = mdl_op_expert_dim(op);
    if (e >= 0 && op->dims[e].role == MDL_ROLE_PARAMETER) {
      *experts = op->dims[e].size;
      return TRUE;
    }
  }
  *experts = 0;
  return FALSE;
}

static void add_axis(MdlRankAxes *ax, int size, gboolean in_cp, gboolean in_ep, gboolean keep) {
  if (size == 1 && !keep) return;
  int a = ax->ndims++;
  ax->shape[a] = size;
  ax->in_cp[a] = (uint8_t)in_cp;
  ax->in_ep[a] = (uint8_t)in_ep;
}

gboolean mdl_megatron_axes(const MdlMegatronConfig *cfg, MdlRankAxes *ax, GError **error) {
  memset(ax, 0, sizeof *ax);
  int dp = cfg->dp, cp = MAX(cfg->cp, 1), ep = MAX(cfg->ep, 1);
  if ((gint64)dp * cp % ep != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: ep=%d must divide dp*cp = %d*%d (Megatron-Core folds expert "
                "parallelism over data and context parallelism)", ep, dp, cp);
    return FALSE;
  }
  if (ep <= cp && cp % ep != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: ep=%d must divide cp=%d or be a multiple of it", ep, cp);
    return FALSE;
  }
  if (ep > cp && ep % cp != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: ep=%d must be a multiple of cp=%d or divide it", ep, cp);
    return FALSE;
  }
  if (ep <= cp) {
    add_axis(ax, dp, FALSE, FALSE, TRUE);
    add_axis(ax, cp / ep, TRUE, FALSE, FALSE);
    add_axis(ax, ep, TRUE, TRUE, FALSE);
  } else {
    add_axis(ax, dp * cp / ep, FALSE, FALSE, TRUE);
    add_axis(ax, ep / cp, FALSE, TRUE, FALSE);
    add_axis(ax, cp, TRUE, TRUE, FALSE);
  }
  ax->tp_axis = ax->ndims;
  add_axis(ax, cfg->tp, FALSE, FALSE, TRUE);
  return TRUE;
}

gboolean mdl_megatron_op_splits(const MdlOp *op, const MdlRankAxes *ax,
                                const MdlMegatronConfig *cfg, int8_t *split, GError **error) {
  int expert = mdl_op_expert_dim(op), token = mdl_op_token_dim(op);
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++) split[a] = -1;
  for (int a = 0; a < ax->tp_axis; a++) {
    if (ax->shape[a] == 1) continue;
    int d = mdl_op_sample_dim(op);
    if (expert >= 0 && ax->in_ep[a]) d = expert;
    else if (ax->in_cp[a]) d = token;
    if (d < 0) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "megatron: cp=%d needs a sequence dim (s, sq or c) in every op; op %s has none",
                  cfg->cp, op->name);
      return FALSE;
    }
    split[a] = (int8_t)d;
  }
  int t = ax->tp_axis;
  split[t] = (int8_t)(cfg->tp > 1 ? op->tp_dim : -1);
  if (cfg->sequence_parallel && op->tp_dim < 0) {
    int seq = mdl_op_find_dim(op, "s");
    if (seq >= 0 && op->dims[seq].role == MDL_ROLE_ATTRIBUTE && op->dims[seq].splittable)
      split[t] = (int8_t)seq;
  }
  return TRUE;
}
