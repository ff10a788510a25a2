/* model/zoo/moe — private to model/mdl_zoo*.c: the mixture-of-experts MLP block (router, token
 * dispatch, grouped expert GEMMs, combine, optional shared experts) that replaces a transformer
 * layer's dense MLP. */
#ifndef STRATSIM_MDL_ZOO_MOE_H
#define STRATSIM_MDL_ZOO_MOE_H

#include "model/mdl_zoo.h"

/* Percent of the average expert load each expert's token buffer holds when neither capacity
 * nor skew is given: uniform routing, dropless. */
#define MDL_MOE_UNIFORM_PCT 100

typedef struct {
  int64_t experts;      /* routed experts per MoE layer; 0: a dense model */
  int64_t top_k;        /* experts each token is routed to */
  int64_t expert_ffn;   /* intermediate width of one expert's SwiGLU MLP */
  int64_t shared_ffn;   /* intermediate width of the always-active shared experts; 0: none */
  int64_t capacity_pct; /* capacity factor x 100: every expert's buffer holds this share of the
                           average load, tokens past it dropped (GShard / Switch); 0: dropless */
  int64_t skew_pct;     /* dropless routing: the busiest expert's load in percent of the
                           average (100: uniform); 0 under a capacity factor */
} MdlMoeConfig;

/* Tokens per sample each expert's buffer holds: ceil(s * top_k * pct / (100 * experts)), pct
 * the capacity factor or the skew (MDL_MOE_UNIFORM_PCT when neither is set). */
int64_t mdl_moe_capacity(const MdlMoeConfig *moe, int64_t seq);

/* FALSE with MDL_ERROR_INVALID naming @model and the key when the sizes do not make an MoE
 * layer: top_k > experts, both capacity and skew given, a skew below 100. */
gboolean mdl_moe_check(const char *model, const MdlMoeConfig *moe, GError **error);

/* Appends the MoE MLP over @x [b,s,h] (the normalised layer input); @residual [b,s,h] is added
 * in the combine; returns the layer output [b,s,h]. Ops: router, moe_dispatch, expert_fc1,
 * expert_act, expert_fc2, moe_combine (and shared_fc1, shared_act, shared_fc2). */
int mdl_zoo_moe_mlp(MdlZooSeq *site, const MdlMoeConfig *moe, int x, int residual);

/* Parameters of one MoE MLP block (router, routed and shared experts). */
double mdl_moe_block_params(const MdlMoeConfig *moe, int64_t hidden);

/* The moe family (mdl_zoo_moe_model.c): a Llama-style decoder with MoE MLPs. */
typedef struct {
  MdlLlamaConfig base;  /* sizes, attention, vocabulary; base.ffn: the dense layers' MLP */
  MdlMoeConfig moe;
  int64_t dense_layers; /* the first layers keep a dense MLP (DeepSeek-V3's first_k_dense) */
  /* Multi-head latent attention when kv_rank > 0 (base.head_dim is then qk_nope_head_dim). */
  int64_t q_rank, kv_rank, rope_dim, v_head_dim;
} MdlMoeModelConfig;

/* mixtral-8x7b, qwen2-57b-a14b, qwen1.5-moe-a2.7b, deepseek-v3; NULL for another @name. */
const MdlMoeModelConfig *mdl_zoo_moe_named(const char *name);
/* NULL and MDL_ERROR_INVALID for sizes mdl_moe_check or the llama builder refuse, or a tensor
 * past MDL_MAX_ELEMENTS. */
MdlGraph *mdl_zoo_moe_model(const char *name, const MdlMoeModelConfig *cfg, GError **error);
/* Parameters of that model, from the closed form (no graph built). */
double mdl_zoo_moe_model_params(const MdlMoeModelConfig *cfg);

/* Fills @cfg from the Hugging Face config.json @text (@path names it in errors; mdl_zoo_hf.c):
 * a dense architecture leaves cfg->moe.experts 0 (the llama family), a mixture of experts
 * fills the MoE fields. @has_batch / @has_seq say whether the file gave stratsim's "batch" /
 * "seq" keys (else those stay 0). FALSE with an error naming the field for a missing or bad
 * field or an unsupported architecture. */
gboolean mdl_zoo_hf_config(const char *text, const char *path, MdlMoeModelConfig *cfg,
                           gboolean *has_batch, gboolean *has_seq, GError **error);

#endif
