/* model/strategy/axes — the mesh of one Megatron pipeline rank under context and expert
 * parallelism, and the dim every op splits on each of its axes.
 *
 * Rank layout: Megatron-Core's RankGenerator with its default order "tp-cp-ep-dp-pp"
 * (megatron/core/parallel_state.py, initialize_model_parallel): tensor parallelism innermost,
 * then context parallelism, then data parallelism, then pipeline; the dense layers' generator
 * has ep = 1 (tp-cp-dp-pp) and the expert layers' generator (expert_decoder_rank_generator)
 * lays out etp-ep-edp-pp over the same ranks, tp = the expert tensor parallelism etp
 * (--expert-tensor-parallel-size, default tp) and cp = 1, so an expert-parallel group is the
 * innermost ep ranks above the innermost etp: with etp = tp the innermost ep ranks of the
 * (dp x cp) block, cp inner (EP folded over DP x CP); with etp < tp (etp | tp) the tp/etp outer
 * tensor-parallel ranks first, then the (dp x cp) block. Within one pipeline rank the devices
 * are stage*dp*cp*tp + ((d*cp + c)*tp + t).
 * Mesh: with E = ep / (tp/etp), the ep ranks over the (dp*cp) block, that block is cut into axes
 * at the boundaries of the cp group and of the E group (one must divide the other), outermost
 * first, then the tensor-parallel axes:
 *   ep = cp = 1:        (dp, tp)                      (the builder's mesh before cp and ep)
 *   E <= cp (E | cp):   (dp, cp/E, E, tp)             (axes of size 1 other than dp dropped)
 *   E > cp (cp | E):    (dp*cp/E, E/cp, cp, tp)
 *   etp < tp:           tp becomes (tp/etp, etp), the first inside the ep group (etp = 1:
 *                       (tp) alone, inside the ep group). ep must be a multiple of tp/etp.
 * Dense ops split their tp_dim (or, under sequence parallelism, s) on the tensor-parallel axes;
 * expert ops split e on the tp/etp axis and their tp_dim on the etp axis.
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

static const char *const dispatcher_names[MDL_DISPATCHER_COUNT] = {"alltoall", "allgather"};

const char *mdl_dispatcher_name(MdlDispatcher dispatcher) {
  return (unsigned)dispatcher < MDL_DISPATCHER_COUNT ? dispatcher_names[dispatcher] : "?";
}

gboolean mdl_dispatcher_parse(const char *text, MdlDispatcher *out) {
  for (int i = 0; text && i < MDL_DISPATCHER_COUNT; i++)
    if (strcmp(text, dispatcher_names[i]) == 0) {
      *out = (MdlDispatcher)i;
      return TRUE;
    }
  return FALSE;
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

static void add_axis(MdlRankAxes *ax, int size, unsigned flags, gboolean keep) {
  if (size == 1 && !keep) return;
  int a = ax->ndims++;
  if (a >= MDL_MAX_MESH_AXES) return; /* counted: mdl_megatron_axes refuses it */
  ax->shape[a] = size;
  ax->in_cp[a] = (uint8_t)((flags & AXIS_CP) != 0);
  ax->in_ep[a] = (uint8_t)((flags & AXIS_EP) != 0);
  ax->in_tp[a] = (uint8_t)((flags & AXIS_TP) != 0);
  ax->in_etp[a] = (uint8_t)((flags & AXIS_ETP) != 0);
}

gboolean mdl_megatron_axes(const MdlMegatronConfig *cfg, MdlRankAxes *ax, GError **error) {
  memset(ax, 0, sizeof *ax);
  int dp = cfg->dp, cp = MAX(cfg->cp, 1), ep = MAX(cfg->ep, 1), tp = cfg->tp;
  int etp = cfg->etp > 0 ? cfg->etp : tp;
  if (tp % etp != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: etp=%d must divide tp=%d (expert tensor parallelism wider than tp is "
                "not modeled)", etp, tp);
    return FALSE;
  }
  int outer = tp / etp; /* tensor-parallel ranks the experts do not split: inside the ep group */
  if (ep % outer != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: etp=%d needs ep to be a multiple of tp/etp = %d (got ep=%d): "
                "Megatron-Core puts the tensor-parallel ranks an expert does not split into its "
                "expert-parallel group", etp, outer, ep);
    return FALSE;
  }
  int rest = ep / outer; /* the ep ranks over the dp x cp block */
  if ((gint64)dp * cp % rest != 0) {
    if (outer > 1)
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "megatron: ep/(tp/etp) = %d/%d must divide dp*cp = %d*%d (Megatron-Core folds "
                  "expert parallelism over data and context parallelism)", ep, outer, dp, cp);
    else
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "megatron: ep=%d must divide dp*cp = %d*%d (Megatron-Core folds expert "
                  "parallelism over data and context parallelism)", ep, dp, cp);
    return FALSE;
  }
  if (rest <= cp && cp % rest != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: ep=%d must divide cp=%d or be a multiple of it", rest, cp);
    return FALSE;
  }
  if (rest > cp && rest % cp != 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: ep=%d must be a multiple of cp=%d or divide it", rest, cp);
    return FALSE;
  }
  if (rest <= cp) {
    add_axis(ax, dp, 0, TRUE);
    add_axis(ax, cp / rest, AXIS_CP, FALSE);
    add_axis(ax, rest, AXIS_CP | AXIS_EP, FALSE);
  } else {
    add_axis(ax, dp * cp / rest, 0, TRUE);
    add_axis(ax, rest / cp, AXIS_EP, FALSE);
    add_axis(ax, cp, AXIS_CP | AXIS_EP, FALSE);
  }
  ax->tp_axis = ax->ndims;
  add_axis(ax, outer, AXIS_TP | AXIS_EP, FALSE);
  add_axis(ax, etp, AXIS_TP | AXIS_ETP, outer == 1); /* with etp = tp: the tp axis, kept */
  if (ax->ndims > MDL_MAX_MESH_AXES) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                "megatron: cp=%d, ep=%d and etp=%d (tp=%d) need %d mesh axes; at most %d are "
                "modeled", cp, ep, etp, tp, ax->ndims, MDL_MAX_MESH_AXES);
    return FALSE;
  }
  return TRUE;
}

gboolean mdl_megatron_op_splits(const MdlOp *op, const MdlRankAxes *ax,
                                const MdlMegatronConfig *cfg, int8_t *split, GError **error) {
  int expert = mdl_op_expert_dim(op), token = mdl_op_token_dim(op);
  /* The token dispatch and combine split the experts only under the all-gather dispatcher. */
  if (op->gather && cfg->dispatcher != MDL_DISPATCHER_ALLGATHER) expert = -1;
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++) split[a] = -1;
  for (int a = 0; a < ax->ndims; a++) {
    if (ax->shape[a] == 1) continue;
    int d = mdl_op_sample_dim(op);
    if (expert >= 0 && ax->in_ep[a]) d = expert;
    else if (ax->in_tp[a]) d = op->tp_dim; /* dense ops on every tp axis, experts on etp */
    else if (ax->in_cp[a]) d = token;
    if (d < 0 && ax->in_tp[a] && cfg->sequence_parallel) {
      int seq = mdl_op_find_dim(op, "s");
      if (seq >= 0 && op->dims[seq].role == MDL_ROLE_ATTRIBUTE && op->dims[seq].splittable)
        d = seq;
      /* The token dispatch keeps the sequence split: each tensor-parallel rank routes its own
       * S/TP tokens (Megatron-Core requires sequence parallelism for MoE with tp > 1; its
       * dispatchers start from [S/TP*B, H], token_dispatcher.py). */
      else if (op->gather) d = token;
    }
    if (d < 0 && ax->in_cp[a]) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_STRATEGY,
                  "megatron: cp=%d needs a sequence dim (s, sq or c) in every op; op %s has none",
                  cfg->cp, op->name);
      return FALSE;
    }
    split[a] = (int8_t)d;
  }
  return TRUE;
}
