/* model/zoo/hf — a Hugging Face transformers config.json read into the llama family.
 *
 * Architectures (the first entry of "architectures", else "model_type"):
 *  - LlamaForCausalLM / llama, MistralForCausalLM / mistral, Qwen2ForCausalLM / qwen2: the
 *    llama family (mdl_zoo_llama.c). Fields read, with the defaults of transformers'
 *    LlamaConfig, MistralConfig and Qwen2Config where a field may be absent:
 *    hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, vocab_size
 *    (required); num_key_value_heads (default num_attention_heads), head_dim (default
 *    hidden_size / num_attention_heads), tie_word_embeddings (default false in all three),
 *    hidden_act (must be "silu": the SwiGLU MLP).
 *  - MixtralForCausalLM / mixtral, Qwen2MoeForCausalLM / qwen2_moe, DeepseekV3ForCausalLM /
 *    deepseek_v3: the moe family (mdl_zoo_moe_model.c), the fields above plus: Mixtral's
 *    num_local_experts, num_experts_per_tok and intermediate_size (each expert's width);
 *    Qwen2-MoE's num_experts, num_experts_per_tok, moe_intermediate_size and
 *    shared_expert_intermediate_size (optional); DeepSeek-V3's n_routed_experts,
 *    num_experts_per_tok, moe_intermediate_size, n_shared_experts (optional, each
 *    moe_intermediate_size wide), first_k_dense_replace (optional: dense layers first, of
 *    intermediate_size), and its multi-head latent attention: q_lora_rank, kv_lora_rank,
 *    qk_nope_head_dim (the head_dim), qk_rope_head_dim, v_head_dim. Routing is dropless and
 *    uniform (capacity and skew keys of the moe family are not read from the file); DeepSeek's
 *    group-limited routing (n_group, topk_group) and Qwen's shared-expert gate are not modeled.
 * Training shape: "batch" and "seq" (stratsim's keys, not transformers') in the file or
 * after the path (path.json:batch=B,seq=S, which win); neither has a default:
 * max_position_embeddings is the longest context, not the training sequence.
 * Attention is FlashAttention-style unless the spec says attn=unfused.
 * Ignored (not modeled): sliding_window (attention is costed as full causal attention, exact
 * when seq <= the window), Qwen2's Q/K/V biases, rope_scaling and other numerics.
 * Errors are MDL_ERROR_INVALID or MDL_ERROR_PARSE naming the file and the field.
 */
#include "model/mdl_zoo_moe.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static const char *const dense_archs[][2] = {
    {"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}, {"Qwen2ForCausalLM", "qwen2"}};
static const char *const moe_archs[][2] = {{"MixtralForCausalLM", "mixtral"},
                                           {"Qwen2MoeForCausalLM", "qwen2_moe"},
                                           {"DeepseekV3ForCausalLM", "deepseek_v3"}};

gboolean mdl_zoo_hf_detect(const char *text) {
  if (!strstr(text, "\"architectures\"") && !strstr(text, "\"model_type\"")) return FALSE;
  cJSON *root = cJSON_Parse(text);
  gboolean hf = cJSON_IsObject(root) && !cJSON_GetObjectItemCaseSensitive(root, "ops") &&
                (cJSON_GetObjectItemCaseSensitive(root, "architectures") ||
                 cJSON_GetObjectItemCaseSensitive(root, "model_type"));
  cJSON_Delete(root);
  return hf;
}

/* Reads integer field @key: FALSE with an error when it is present and not a positive integer
 * or absent and @required; @out keeps its value when absent (or null, as transformers writes
 * an unset optional field) and not required. */
static gboolean int_field(const cJSON *root, const char *path, const char *key, gboolean required,
                          int64_t *out, GError **error) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v || (cJSON_IsNull(v) && !required)) {
    if (!required) return TRUE;
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s: field '%s' is missing", path, key);
    return FALSE;
  }
  double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
  if (!cJSON_IsNumber(v) || !(d >= 1) || d > 4e18 || floor(d) != d) {
    g_autofree char *text = cJSON_PrintUnformatted(v);
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "%s: field '%s' is %s, not a positive integer", path, key, text);
    return FALSE;
  }
  *out = (int64_t)d;
  return TRUE;
}

/* The architecture name: architectures[0], else model_type; NULL with an error if neither is
 * a string. @is_type says which one it came from. */
static const char *architecture(const cJSON *root, const char *path, gboolean *is_type,
                                GError **error) {
  const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
  const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
  *is_type = FALSE;
  if (cJSON_IsString(first)) return first->valuestring;
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
  *is_type = TRUE;
  if (cJSON_IsString(type)) return type->valuestring;
  g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
              "%s: field 'architectures' (a list of class names) or 'model_type' is needed", path);
  return NULL;
}

static int arch_index(const char *const table[][2], int n, const char *name, gboolean is_type) {
  for (int i = 0; i < n; i++)
    if (strcmp(table[i][is_type ? 1 : 0], name) == 0) return i;
  return -1;
}

/* The MoE fields of architecture @moe (an index into moe_archs) into @cfg. */
static gboolean moe_fields(const cJSON *root, const char *path, int moe, MdlMoeModelConfig *cfg,
                           GError **error) {
  MdlMoeConfig *m = &cfg->moe;
  static const char *const experts_key[] = {"num_local_experts", "num_experts", "n_routed_experts"};
  if (!int_field(root, path, experts_key[moe], TRUE, &m->experts, error) ||
      !int_field(root, path, "num_experts_per_tok", TRUE, &m->top_k, error))
    return FALSE;
  if (moe == 0) {
    m->expert_ffn = cfg->base.ffn;
    return TRUE;
  }
  if (!int_field(root, path, "moe_intermediate_size", TRUE, &m->expert_ffn, error)) return FALSE;
  if (moe == 1) return int_field(root, path, "shared_expert_intermediate_size", FALSE, &m->shared_ffn, error);
  int64_t shared = 0;
  if (!int_field(root, path, "n_shared_experts", FALSE, &shared, error) ||
      !int_field(root, path, "first_k_dense_replace", FALSE, &cfg->dense_layers, error) ||
      !int_field(root, path, "q_lora_rank", TRUE, &cfg->q_rank, error) ||
      !int_field(root, path, "kv_lora_rank", TRUE, &cfg->kv_rank, error) ||
      !int_field(root, path, "qk_nope_head_dim", TRUE, &cfg->base.head_dim, error) ||
      !int_field(root, path, "qk_rope_head_dim", TRUE, &cfg->rope_dim, error) ||
      !int_field(root, path, "v_head_dim", TRUE, &cfg->v_head_dim, error))
    return FALSE;
  m->shared_ffn = shared * m->expert_ffn;
  return TRUE;
}

gboolean mdl_zoo_hf_config(const char *text, const char *path, MdlMoeModelConfig *cfg,
                           gboolean *has_batch, gboolean *has_seq, GError **error) {
  cJSON *root = cJSON_Parse(text);
  gboolean ok = FALSE, is_type;
  *has_batch = *has_seq = FALSE;
  if (!cJSON_IsObject(root)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "%s: not a JSON object", path);
    goto out;
  }
  const char *arch = architecture(root, path, &is_type, error);
  if (!arch) goto out;
  const char *field = is_type ? "model_type" : "architectures";
  int moe = arch_index(moe_archs, G_N_ELEMENTS(moe_archs), arch, is_type);
  if (moe < 0 && arch_index(dense_archs, G_N_ELEMENTS(dense_archs), arch, is_type) < 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "%s: field '%s' is \"%s\", not a supported architecture (LlamaForCausalLM, "
                "MistralForCausalLM, Qwen2ForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM, "
                "DeepseekV3ForCausalLM)",
                path, field, arch);
    goto out;
  }
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
  if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0)) {
    g_autofree char *shown = cJSON_PrintUnformatted(act);
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "%s: field 'hidden_act' is %s; the llama family's SwiGLU MLP needs \"silu\"", path,
                shown);
    goto out;
  }
  MdlLlamaConfig c = {.flash = 1};
  if (!int_field(root, path, "hidden_size", TRUE, &c.hidden, error) ||
      !int_field(root, path, "num_hidden_layers", TRUE, &c.layers, error) ||
      !int_field(root, path, "num_attention_heads", TRUE, &c.heads, error) ||
      !int_field(root, path, "intermediate_size", TRUE, &c.ffn, error) ||
      !int_field(root, path, "vocab_size", TRUE, &c.vocab, error))
    goto out;
  c.kv_heads = c.heads;
  if (!int_field(root, path, "num_key_value_heads", FALSE, &c.kv_heads, error) ||
      !int_field(root, path, "head_dim", FALSE, &c.head_dim, error))
    goto out;
  const cJSON *tied = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
  if (tied && !cJSON_IsBool(tied)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "%s: field 'tie_word_embeddings' must be true or false", path);
    goto out;
  }
  c.tied = cJSON_IsTrue(tied);
  *has_batch = cJSON_GetObjectItemCaseSensitive(root, "batch") != NULL;
  *has_seq = cJSON_GetObjectItemCaseSensitive(root, "seq") != NULL;
  if (!int_field(root, path, "batch", FALSE, &c.batch, error) ||
      !int_field(root, path, "seq", FALSE, &c.seq, error))
    goto out;
  *cfg = (MdlMoeModelConfig){.base = c};
  ok = moe < 0 || moe_fields(root, path, moe, cfg, error);
out:
  cJSON_Delete(root);
  return ok;
}
