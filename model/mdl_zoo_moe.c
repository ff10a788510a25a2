/* model/zoo/moe — the mixture-of-experts MLP of a transformer layer (Shazeer et al. 2017;
 * GShard, Lepikhin et al. 2020; Mixtral, Jiang et al. 2024; DeepSeekMoE's shared experts, Dai
 * et al. 2024), as Megatron-Core's MoELayer runs it: router, token dispatch, the experts' GEMMs
 * grouped, token combine.
 *
 * Ops, in order (b batch, s seq, h hidden, E experts, k top_k, f expert ffn, c the tokens per
 * sample one expert's buffer holds, mdl_moe_capacity):
 *   router       logits [b,s,E] = x [b,s,h] . W [h,E]; softmax and top-k folded in (E values a
 *                token); replicated on the tensor-parallel axis, as Megatron-Core's router is.
 *   moe_dispatch the permutation of the tokens (and their routing weights) into per-expert
 *                buffers [b,E,c,h]: 1 FLOP (a copy) per buffer element. Under the all-to-all
 *                dispatcher a rank fills every expert's buffer from its own tokens (e not
 *                split); under the all-gather dispatcher it fills its own experts' buffers from
 *                the tokens of the whole ep group (e split, model/mdl_strategy_axes.c); its c dim
 *                reads the sequence in proportion (c tokens of an expert's buffer come from the
 *                matching share of the s tokens), so context parallelism splits it like s.
 *   expert_fc1   grouped GEMM: [b,E,c,h] . W [E,h,2f] (SwiGLU gate and up projections of every
 *                expert), column parallel (tp splits 2f); the expert dim e indexes both operands:
 *                a GEMM per expert (the cost model's batch dim), split by expert parallelism.
 *   expert_act   SwiGLU, silu(gate) * up: [b,E,c,2f] -> [b,E,c,f].
 *   expert_fc2   grouped GEMM [b,E,c,f] . W [E,f,h], row parallel.
 *   moe_combine  the un-permutation and the routing-weighted sum of each token's k expert
 *                outputs: [b,s,h], 2k FLOPs an element (over the e x s buffer elements, 2k/E
 *                each); e is a reduction dim: split (all-gather dispatcher) its output holds
 *                partial sums over the rank's experts, reduce-scattered to the tokens' ranks.
 *   moe_residual dropout and the residual add (and the shared experts' output): [b,s,h], 2
 *                FLOPs an element, as Megatron-Core adds them after the MoE layer.
 *   shared_fc1, shared_act, shared_fc2: the shared experts, one dense SwiGLU MLP of width
 *                shared_ffn (DeepSeek-V2/V3, Qwen-MoE), column then row parallel.
 * Under expert parallelism (model/mdl_strategy_axes.c) the dispatch output, split by sample or
 * sequence on the expert-parallel axes, meets expert_fc1's split of e: SBP resharding turns it
 * into an all-to-all, and the combine's read of expert_fc2's output the second; the backward
 * runs both in reverse. Expert weights are not replicated on those axes: their gradients are
 * all-reduced over the expert-data-parallel axes only.
 * Load imbalance: synchronous training waits at the combine's all-to-all for the busiest
 * expert, so every buffer is sized at the busiest expert's load (skew) or at the capacity
 * factor (capacity); that charges every expert rank the critical path's GEMM time and bytes. It
 * over-counts the total FLOPs of a skewed dropless run (an upper bound on its all-to-all bytes).
 */
#include "model/mdl_zoo_moe.h"

int64_t mdl_moe_capacity(const MdlMoeConfig *moe, int64_t seq) {
  int64_t pct = moe->capacity_pct > 0 ? moe->capacity_pct
                : moe->skew_pct > 0   ? moe->skew_pct
                                      : MDL_MOE_UNIFORM_PCT;
  /* In double: s * k * pct may pass int64 for absurd inputs, which the caller's size checks
   * then refuse. */
  double c = (double)seq * (double)moe->top_k * (double)pct / (100.0 * (double)moe->experts);
  if (!(c < (double)MDL_MAX_ELEMENTS)) return MDL_MAX_ELEMENTS; /* the size checks refuse it */
  double whole = (double)(int64_t)c;
  return (int64_t)(whole < c ? whole + 1 : whole);
}

gboolean mdl_moe_check(const char *model, const MdlMoeConfig *moe, GError **error) {
  if (moe->top_k > moe->experts) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: top_k=%" G_GINT64_FORMAT " exceeds experts=%" G_GINT64_FORMAT, model,
                (gint64)moe->top_k, (gint64)moe->experts);
    return FALSE;
  }
  if (moe->capacity_pct > 0 && moe->skew_pct > 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: capacity (a capacity factor, tokens dropped) and skew (dropless "
                "routing) exclude each other", model);
    return FALSE;
  }
  if (moe->skew_pct > 0 && moe->skew_pct < 100) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: skew=%" G_GINT64_FORMAT " must be at least 100 (the busiest expert's "
                "load in percent of the average)", model, (gint64)moe->skew_pct);
    return FALSE;
  }
  return TRUE;
}

double mdl_moe_block_params(const MdlMoeConfig *moe, int64_t hidden) {
  double h = (double)hidden;
  return h * (double)moe->experts                                       /* router */
         + (double)moe->experts * 3.0 * h * (double)moe->expert_ffn     /* routed experts */
         + 3.0 * h * (double)moe->shared_ffn;                           /* shared experts */
}

static const char *op_name(const MdlZooSeq *site, const char *leaf, const char *suffix,
                           char *buf) {
  g_snprintf(buf, 96, "%s%s%s", site->prefix, leaf, suffix);
  return buf;
}

/* An op over the expert layout [b,E,c,width]: a grouped GEMM (@k > 0, weight [E,k,width]) or,
 * @k == 0, the SwiGLU of [b,E,c,2 width]. */
static int expert_op(MdlZooSeq *site, const char *leaf, int x, int64_t experts,
                     int64_t capacity, int64_t k, int64_t width, gboolean row) {
  char name[96];
  MdlOp op;
  int w = -1;
  if (k > 0)
    w = mdl_zoo_weight(site->g, op_name(site, leaf, ".weight", name), 3, experts, k, width);
  int y = mdl_zoo_activation(site->g, op_name(site, leaf, "", name), 4, site->b, experts,
                             capacity, width);
  mdl_zoo_op_init(&op, name, k > 0 ? MDL_OP_MATMUL : MDL_OP_ELEMENTWISE, site->layer);
  mdl_zoo_dim(&op, "b", site->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "e", experts, k > 0 ? MDL_ROLE_PARAMETER : MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "c", capacity, MDL_ROLE_ATTRIBUTE, TRUE);
  if (k > 0) {
    mdl_zoo_linear_dims(&op, k, width, row);
    mdl_zoo_input(&op, x, "b,e,c,k");
    mdl_zoo_input(&op, w, "e,k,n");
    mdl_zoo_output(&op, y, "b,e,c,n");
  } else {
    op.tp_dim = mdl_zoo_dim(&op, "f", width, MDL_ROLE_ATTRIBUTE, TRUE);
    op.flops_per_element = 5.0; /* silu(gate) x up, as llama's swiglu */
    mdl_zoo_input(&op, x, "b,e,c,f");
    mdl_zoo_output(&op, y, "b,e,c,f");
  }
  mdl_graph_add_op(site->g, &op);
  return y;
}

int mdl_zoo_moe_mlp(MdlZooSeq *site, const MdlMoeConfig *moe, int x, int residual) {
  char name[96];
  MdlOp op;
  int64_t E = moe->experts, c = mdl_moe_capacity(moe, site->s), f = moe->expert_ffn;
  int logits = mdl_zoo_seq_linear(site, "router", x, site->h, E, FALSE);
  /* The router is replicated on the tensor-parallel axis: no tp_dim. */
  mdl_graph_op(site->g, mdl_graph_num_ops(site->g) - 1)->tp_dim = -1;

  int dispatched = mdl_zoo_activation(site->g, op_name(site, "moe_dispatch", "", name), 4,
                                      site->b, E, c, site->h);
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, site->layer);
  mdl_zoo_dim(&op, "b", site->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "e", E, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "c", c, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", site->h, MDL_ROLE_ATTRIBUTE, TRUE);
  op.unsaved_inputs = 0x3; /* a permutation: its backward un-permutes dY */
  op.gather = TRUE;
  mdl_zoo_input(&op, x, "b,c,h");
  mdl_zoo_input(&op, logits, "b,c,e");
  mdl_zoo_output(&op, dispatched, "b,e,c,h");
  mdl_graph_add_op(site->g, &op);

  int up = expert_op(site, "expert_fc1", dispatched, E, c, site->h, 2 * f, FALSE);
  int act = expert_op(site, "expert_act", up, E, c, 0, f, FALSE);
  int down = expert_op(site, "expert_fc2", act, E, c, f, site->h, TRUE);

  int shared = -1;
  if (moe->shared_ffn > 0) {
    int64_t fs = moe->shared_ffn;
    int s_up = mdl_zoo_seq_linear(site, "shared_fc1", x, site->h, 2 * fs, FALSE);
    int s_act = mdl_zoo_seq_pointwise(site, "shared_act", s_up, -1, "f", fs, 5.0, MDL_ZOO_TP);
    shared = mdl_zoo_seq_linear(site, "shared_fc2", s_act, fs, site->h, TRUE);
  }

  int combined = mdl_zoo_activation(site->g, op_name(site, "moe_combine", "", name), 3,
                                    site->b, site->s, site->h);
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, site->layer);
  mdl_zoo_dim(&op, "b", site->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "e", E, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_dim(&op, "s", site->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", site->h, MDL_ROLE_ATTRIBUTE, TRUE);
  /* 2k FLOPs a token element (the weighted sum), over the b x E x s x h points. */
  op.flops_per_element = 2.0 * (double)moe->top_k / (double)E;
  op.gather = TRUE;
  /* It keeps the experts' outputs (the routing weights' gradient reads them). */
  mdl_zoo_input(&op, down, "b,e,s,h");
  mdl_zoo_output(&op, combined, "b,s,h");
  mdl_graph_add_op(site->g, &op);

  int y = mdl_zoo_activation(site->g, op_name(site, "moe_residual", "", name), 3, site->b,
                             site->s, site->h);
  mdl_zoo_op_init(&op, name, MDL_OP_ELEMENTWISE, site->layer);
  mdl_zoo_dim(&op, "b", site->b, MDL_ROLE_SAMPLE, TRUE);
  mdl_zoo_dim(&op, "s", site->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "h", site->h, MDL_ROLE_ATTRIBUTE, TRUE);
  op.flops_per_element = 2.0; /* dropout, add */
  op.dropout = TRUE;
  mdl_zoo_input(&op, combined, "b,s,h");
  mdl_zoo_input(&op, residual, "b,s,h");
  op.unsaved_inputs = 0x3; /* additions */
  if (shared >= 0) {
    mdl_zoo_input(&op, shared, "b,s,h");
    op.unsaved_inputs |= 0x4;
  }
  mdl_zoo_output(&op, y, "b,s,h");
  mdl_graph_add_op(site->g, &op);
  return y;
}
