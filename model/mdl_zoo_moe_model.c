/* model/zoo/moe_model — the moe family: a Llama-style decoder (mdl_zoo_llama.c) whose MLP is a
 * mixture of experts (mdl_zoo_moe.c) from layer dense_layers on, with grouped-query attention or
 * DeepSeek's multi-head latent attention (MLA, approximated as stated below).
 *
 * Layer: ln1 (RMSNorm), attention (llama's qkv, rope and attention core; or MLA), attn_proj,
 * residual1, ln2, then the dense SwiGLU MLP of width ffn (layers < dense_layers) or the MoE
 * block over ln2 with residual1 added in its combine.
 * MLA (DeepSeek-V2, Liu et al. 2024, section 2.1.2; DeepSeek-V3 config.json): queries through a
 * low-rank pair q_down [h, q_rank] and q_up [q_rank, a (dn + dr)], keys and values through
 * kv_down [h, kv_rank] and kv_up [kv_rank, a (dn + dv)] plus the decoupled RoPE key k_rope
 * [h, dr] shared by the heads; attention over dn + dr query/key dims and dv value dims. Modeled:
 * every projection as its GEMM (q_down, kv_down and k_rope replicated on the tensor-parallel
 * axis, the up-projections column parallel, as Megatron-Core's MLASelfAttention splits them);
 * the attention core as one fused op (FlashAttention-style, causal half) of
 * 2 b a s^2 (dn + dr + dv) FLOPs reading Q from q_up and K, V from kv_up. Approximated: the
 * shared RoPE key is not concatenated into each head's key (its 2 b s dr bytes are not moved
 * and its product is folded into the core's FLOPs), the RoPE rotations and the two low-rank
 * RMSNorms (q_rank + kv_rank = 2048 parameters a layer, 2e-7 of DeepSeek-V3's) are left out.
 */
#include "model/mdl_zoo_moe.h"

#include <string.h>

/* Named sizes from each model's published Hugging Face config.json:
 *  - mixtral-8x7b (mistralai/Mixtral-8x7B-v0.1): hidden_size 4096, num_hidden_layers 32,
 *    num_attention_heads 32, num_key_value_heads 8, intermediate_size 14336 (each expert),
 *    num_local_experts 8, num_experts_per_tok 2, vocab_size 32000, untied; 46.7 B parameters
 *    (Jiang et al. 2024, "Mixtral of Experts", section 2: 47B). Sequence 4096 as NeMo's
 *    Mixtral-8x7B pre-training recipe (Megatron-Bridge performance summary), batch 256.
 *  - qwen2-57b-a14b (Qwen/Qwen2-57B-A14B): 3584, 28 layers, 28 heads, 4 KV heads,
 *    moe_intermediate_size 2560, shared_expert_intermediate_size 20480, 64 experts, top 8,
 *    vocab 151936, untied; 57.4 B (model card). Sequence 4096.
 *  - qwen1.5-moe-a2.7b (Qwen/Qwen1.5-MoE-A2.7B): 2048, 24 layers, 16 heads (16 KV),
 *    moe_intermediate_size 1408, shared 5632, 60 experts, top 4, vocab 151936, untied; 14.3 B
 *    (model card). Sequence 4096.
 *  - deepseek-v3 (deepseek-ai/DeepSeek-V3): 7168, 61 layers (first_k_dense_replace 3 dense with
 *    intermediate_size 18432), 128 heads, MLA q_lora_rank 1536, kv_lora_rank 512,
 *    qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, moe_intermediate_size 2048,
 *    n_routed_experts 256, n_shared_experts 1 (2048 wide), num_experts_per_tok 8, vocab 129280,
 *    untied; 671 B main-model parameters (DeepSeek-V3 technical report, section 1; the 14 B
 *    multi-token-prediction module is not modeled). Sequence 4096 (report, section 4.2).
 * Batches are simulation defaults (override with batch=N). Shared-expert gates (Qwen's
 * shared_expert_gate, h parameters a layer) and biases are not modeled (< 1e-5). */
static const struct {
  const char *name;
  MdlMoeModelConfig cfg;
} named[] = {
    {"mixtral-8x7b",
     {.base = {32, 4096, 32, 8, 14336, 4096, 32000, 256, 0, 0, 1},
      .moe = {.experts = 8, .top_k = 2, .expert_ffn = 14336}}},
    {"qwen2-57b-a14b",
     {.base = {28, 3584, 28, 4, 18944, 4096, 151936, 256, 0, 0, 1},
      .moe = {.experts = 64, .top_k = 8, .expert_ffn = 2560, .shared_ffn = 20480}}},
    {"qwen1.5-moe-a2.7b",
     {.base = {24, 2048, 16, 16, 5632, 4096, 151936, 256, 0, 0, 1},
      .moe = {.experts = 60, .top_k = 4, .expert_ffn = 1408, .shared_ffn = 5632}}},
    {"deepseek-v3",
     {.base = {61, 7168, 128, 128, 18432, 4096, 129280, 1024, 128, 0, 1},
      .moe = {.experts = 256, .top_k = 8, .expert_ffn = 2048, .shared_ffn = 2048},
      .dense_layers = 3, .q_rank = 1536, .kv_rank = 512, .rope_dim = 64, .v_head_dim = 128}},
};

const MdlMoeModelConfig *mdl_zoo_moe_named(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(named); i++)
    if (strcmp(named[i].name, name) == 0) return &named[i].cfg;
  return NULL;
}

static int64_t head_dim_of(const MdlLlamaConfig *c) {
  return c->head_dim > 0 ? c->head_dim : c->hidden / c->heads;
}

/* Parameters of one layer's attention with its output projection. */
static double attention_params(const MdlMoeModelConfig *c) {
  const MdlLlamaConfig *b = &c->base;
  double h = (double)b->hidden, a = (double)b->heads, dn = (double)head_dim_of(b);
  if (c->kv_rank > 0) {
    double dr = (double)c->rope_dim, dv = (double)c->v_head_dim;
    return h * (double)c->q_rank + (double)c->q_rank * a * (dn + dr) + h * (double)c->kv_rank +
           h * dr + (double)c->kv_rank * a * (dn + dv) + a * dv * h;
  }
  double g = (double)b->kv_heads;
  return h * (a + 2 * g) * dn + a * dn * h;
}

double mdl_zoo_moe_model_params(const MdlMoeModelConfig *c) {
  const MdlLlamaConfig *b = &c->base;
  double h = (double)b->hidden;
  double dense = 3.0 * h * (double)b->ffn, moe = mdl_moe_block_params(&c->moe, b->hidden);
  double layers = (double)b->layers, first = (double)MIN(c->dense_layers, b->layers);
  return layers * (attention_params(c) + 2 * h) + first * dense + (layers - first) * moe +
         (double)b->vocab * h * (b->tied ? 1 : 2) + h;
}

/* MLA's projections and fused attention core over @x; returns the context [b, s, a dv]. */
static int mla_attention(MdlZooSeq *B, int x, const MdlMoeModelConfig *c) {
  const MdlLlamaConfig *b = &c->base;
  int64_t h = B->h, a = b->heads, dn = head_dim_of(b), dr = c->rope_dim, dv = c->v_head_dim;
  int q_down = mdl_zoo_seq_linear(B, "q_down", x, h, c->q_rank, FALSE);
  int kv_down = mdl_zoo_seq_linear(B, "kv_down", x, h, c->kv_rank, FALSE);
  int k_rope = mdl_zoo_seq_linear(B, "k_rope", x, h, dr, FALSE);
  /* The down-projections are replicated on the tensor-parallel axis. */
  for (int o = mdl_graph_num_ops(B->g) - 3; o < mdl_graph_num_ops(B->g); o++)
    mdl_graph_op(B->g, o)->tp_dim = -1;
  (void)k_rope; /* its product with the queries is folded into the core's FLOPs */
  int q = mdl_zoo_seq_linear(B, "q_up", q_down, c->q_rank, a * (dn + dr), FALSE);
  int kv = mdl_zoo_seq_linear(B, "kv_up", kv_down, c->kv_rank, a * (dn + dv), FALSE);

  char name[96];
  g_snprintf(name, sizeof name, "%sattn_mla", B->prefix);
  int context = mdl_zoo_activation(B->g, name, 3, B->b, B->s, a * dv);
  MdlOp op;
  mdl_zoo_op_init(&op, name, MDL_OP_BATCH_MATMUL, B->layer);
  op.attention_core = TRUE;
  mdl_zoo_dim(&op, "b", B->b, MDL_ROLE_SAMPLE, TRUE);
  op.tp_dim = mdl_zoo_dim(&op, "heads", a, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "sq", B->s, MDL_ROLE_ATTRIBUTE, TRUE);
  mdl_zoo_dim(&op, "dh", dv, MDL_ROLE_ATTRIBUTE, FALSE);
  mdl_zoo_dim(&op, "sk", B->s, MDL_ROLE_REDUCTION, TRUE);
  mdl_zoo_input(&op, q, "b,sq,heads");
  mdl_zoo_input(&op, kv, "b,sk,heads"); /* K */
  mdl_zoo_input(&op, kv, "b,sk,heads"); /* V */
  mdl_zoo_output(&op, context, "b,sq,heads");
  /* Q K^T over dn + dr dims and P V over dv, causal half (as the fused llama core). */
  op.flops = 0.5 * 2.0 * (double)B->b * (double)a * (double)B->s * (double)B->s *
             (double)(dn + dr + dv);
  mdl_graph_add_op(B->g, &op);
  return context;
}

static int moe_layer(MdlZooSeq *B, int x, gconstpointer data) {
  const MdlMoeModelConfig *c = data;
  const MdlLlamaConfig *b = &c->base;
  int64_t h = B->h, f = b->ffn;
  int ln1 = mdl_zoo_seq_norm(B, "ln1", x, 1);
  int64_t width = c->kv_rank > 0 ? b->heads * c->v_head_dim : b->heads * head_dim_of(b);
  int context = c->kv_rank > 0 ? mla_attention(B, ln1, c) : mdl_zoo_llama_attention(B, ln1, b);
  int proj = mdl_zoo_seq_linear(B, "attn_proj", context, width, h, TRUE);
  int res1 = mdl_zoo_seq_pointwise(B, "residual1", proj, x, "h", h, 1.0, MDL_ZOO_UNSAVED);
  int ln2 = mdl_zoo_seq_norm(B, "ln2", res1, 1);
  if (B->layer < c->dense_layers) return mdl_zoo_llama_mlp(B, ln2, res1, f);
  return mdl_zoo_moe_mlp(B, &c->moe, ln2, res1);
}

static gboolean check_sizes(const char *name, const MdlMoeModelConfig *c, GError **error) {
  if (!mdl_moe_check(name, &c->moe, error)) return FALSE;
  const MdlLlamaConfig *b = &c->base;
  int64_t s = b->seq, bt = b->batch, h = b->hidden, cap = mdl_moe_capacity(&c->moe, s);
  if (c->kv_rank > 0 && (c->q_rank <= 0 || c->v_head_dim <= 0 || c->rope_dim <= 0)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: MLA (kv_rank > 0) needs q_rank, rope_dim and v_head_dim", name);
    return FALSE;
  }
  return mdl_zoo_check_size(name, "the expert buffers [batch, experts, capacity, hidden]", error,
                            4, bt, c->moe.experts, cap, h) &&
         mdl_zoo_check_size(name, "the expert GEMMs", error, 5, bt, c->moe.experts, cap, h,
                            (int64_t)2 * c->moe.expert_ffn) &&
         mdl_zoo_check_size(name, "the attention [batch, heads, seq, seq] x head_dim", error, 5,
                            bt, b->heads, s, s, head_dim_of(b) + c->rope_dim + c->v_head_dim);
}

MdlGraph *mdl_zoo_moe_model(const char *name, const MdlMoeModelConfig *c, GError **error) {
  if (!check_sizes(name, c, error)) return NULL;
  /* The llama builder checks and builds everything but the layers' attention and MLP. */
  return mdl_zoo_llama_with_layers(name, &c->base, "moe", moe_layer, c, error);
}
