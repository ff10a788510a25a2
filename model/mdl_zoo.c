/* model/zoo — the model spec the CLI takes, the table of built-in models, and the op-building
 * helpers the zoo builders share.
 *
 * Spec grammar: NAME | NAME:key=value[,key=value...] | FAMILY:key=value,... | PATH |
 * PATH.json:key=value,...
 * A spec containing '/' or ending in ".json" is a path to a JSON graph (model/README.md) or to
 * a Hugging Face config.json (mdl_zoo_hf.c), which may take batch, seq, layers and attn after
 * a ':'.
 * Values are positive decimal integers; every graph is validated before it is returned.
 */
#include "model/mdl_zoo.h"
#include "model/mdl_json_count.h"
#include "model/mdl_zoo_moe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Caps that reject absurd specs before anything is allocated (a graph holds ~12 ops a layer). */
#define MAX_LAYERS 100000

typedef enum { FAMILY_GPT, FAMILY_LLAMA, FAMILY_MOE, FAMILY_MLP, FAMILY_CNN, FAMILY_RESNET, FAMILY_INCEPTION, FAMILY_RNN, FAMILY_UNET } Family;

typedef struct {
  const char *name;
  Family family;
  const char *description;
} ZooEntry;

/* Parameter counts in the descriptions are what the built graph holds (tests/test-model.c
 * checks them); biases are not modeled (see the builders). */
static const ZooEntry zoo[] = {
    {"gpt3-125m", FAMILY_GPT, "GPT-3 Small (Brown et al. 2020, Table 2.1): 12 layers, d_model 768, "
                              "12 heads, seq 2048, batch 256; 1.252e+08 params"},
    {"gpt3-350m", FAMILY_GPT, "GPT-3 Medium (Brown et al. 2020, Table 2.1): 24 layers, d_model 1024, "
                              "16 heads, seq 2048, batch 256; 3.557e+08 params"},
    {"gpt3-760m", FAMILY_GPT, "GPT-3 Large (Brown et al. 2020, Table 2.1): 24 layers, d_model 1536, "
                              "16 heads, seq 2048, batch 256; 7.600e+08 params"},
    {"gpt3-1.3b", FAMILY_GPT, "GPT-3 XL (Brown et al. 2020, Table 2.1): 24 layers, d_model 2048, "
                              "16 heads, seq 2048, batch 512; 1.315e+09 params"},
    {"gpt3-2.7b", FAMILY_GPT, "GPT-3 2.7B (Brown et al. 2020, Table 2.1): 32 layers, d_model 2560, "
                              "32 heads, seq 2048, batch 512; 2.651e+09 params"},
    {"gpt3-6.7b", FAMILY_GPT, "GPT-3 6.7B (Brown et al. 2020, Table 2.1): 32 layers, d_model 4096, "
                              "32 heads, seq 2048, batch 1024; 6.657e+09 params"},
    {"gpt3-13b", FAMILY_GPT, "GPT-3 13B (Brown et al. 2020, Table 2.1): 40 layers, d_model 5120, "
                             "40 heads, seq 2048, batch 1024; 1.285e+10 params"},
    {"gpt3-175b", FAMILY_GPT, "GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, d_model 12288, "
                              "96 heads, seq 2048, batch 1536; 1.746e+11 params"},
    {"llama3-8b", FAMILY_LLAMA, "Llama 3 8B (Meta-Llama-3-8B config.json): 32 layers, hidden 4096, "
                                "32 heads, 8 KV heads, SwiGLU 14336, vocab 128256 untied, seq 8192, "
                                "batch 128, flash attention; 8.030e+09 params"},
    {"llama3-70b", FAMILY_LLAMA, "Llama 3 70B (Meta-Llama-3-70B config.json): 80 layers, hidden "
                                 "8192, 64 heads, 8 KV heads, SwiGLU 28672, vocab 128256 untied, "
                                 "seq 8192, batch 128, flash attention; 7.055e+10 params"},
    {"llama3.1-405b", FAMILY_LLAMA, "Llama 3.1 405B (Llama-3.1-405B config.json): 126 layers, hidden "
                                    "16384, 128 heads, 8 KV heads, SwiGLU 53248, vocab 128256 "
                                    "untied, seq 8192, batch 128, flash attention; 4.059e+11 params"},
    {"qwen2.5-72b", FAMILY_LLAMA, "Qwen2.5 72B (Qwen2.5-72B config.json): 80 layers, hidden 8192, "
                                  "64 heads, 8 KV heads, SwiGLU 29568, vocab 152064 untied, seq "
                                  "4096, batch 128, flash attention; 7.271e+10 params"},
    {"mixtral-8x7b", FAMILY_MOE, "Mixtral 8x7B (Mixtral-8x7B-v0.1 config.json): 32 layers, hidden "
                                 "4096, 32 heads, 8 KV heads, 8 experts of SwiGLU 14336, top 2, "
                                 "vocab 32000 untied, seq 4096, batch 256; @mixtral-8x7b"},
    {"qwen2-57b-a14b", FAMILY_MOE, "Qwen2 57B-A14B (Qwen2-57B-A14B config.json): 28 layers, hidden "
                                   "3584, 28 heads, 4 KV heads, 64 experts of 2560, top 8, a "
                                   "shared expert of 20480, vocab 151936 untied, seq 4096, batch "
                                   "256; @qwen2-57b-a14b"},
    {"qwen1.5-moe-a2.7b", FAMILY_MOE, "Qwen1.5-MoE-A2.7B (config.json): 24 layers, hidden 2048, 16 "
                                      "heads, 60 experts of 1408, top 4, a shared expert of 5632, "
                                      "vocab 151936 untied, seq 4096, batch 256; @qwen1.5-moe-a2.7b"},
    {"deepseek-v3", FAMILY_MOE, "DeepSeek-V3 (config.json): 61 layers (3 dense, SwiGLU 18432), hidden "
                                "7168, 128 heads of multi-head latent attention (approximated: "
                                "model/mdl_zoo_moe_model.c), 256 experts of 2048, top 8, a shared "
                                "expert, vocab 129280 untied, seq 4096, batch 1024; @deepseek-v3"},
    {"mistral-7b", FAMILY_LLAMA, "Mistral 7B v0.1 (Mistral-7B-v0.1 config.json): 32 layers, hidden "
                                 "4096, 32 heads, 8 KV heads, SwiGLU 14336, vocab 32000 untied, seq "
                                 "4096, batch 128, flash attention; 7.242e+09 params"},
    {"mlp", FAMILY_MLP, "MLP: 4 dense 1024x1024 layers (ReLU folded), softmax cross-entropy over "
                        "1024 classes, batch 64; 4.194e+06 params"},
    {"alexnet", FAMILY_CNN, "AlexNet (Krizhevsky et al. 2012), torchvision single-tower variant, "
                            "224x224x3, batch 256; 6.109e+07 params"},
    {"vgg13", FAMILY_CNN, "VGG13 (Simonyan & Zisserman 2015, config B), 224x224x3, batch 64; "
                          "1.330e+08 params"},
    {"vgg16", FAMILY_CNN, "VGG16 (Simonyan & Zisserman 2015, config D), 224x224x3, batch 64; "
                          "1.383e+08 params"},
    {"inception-v3", FAMILY_INCEPTION, "Inception-v3 (Szegedy et al. 2016), torchvision layout "
                                       "without the auxiliary head, 299x299x3, batch 64; "
                                       "2.383e+07 params"},
    {"resnet-101", FAMILY_RESNET, "ResNet-101 (He et al. 2016), bottleneck blocks [3,4,23,3], "
                                  "224x224x3, batch 64; 4.455e+07 params"},
    {"rnntc", FAMILY_RNN, "RNNTC (FlexFlow, Jia et al. 2019, Table 3): text classification, 4 LSTM "
                          "layers of 2048 unrolled 40 steps, vocab 18765, 2 classes, batch 64; "
                          "1.727e+08 params"},
    {"rnnlm", FAMILY_RNN, "RNNLM (FlexFlow, Jia et al. 2019, Table 3): language model, 2 LSTM layers "
                          "of 2048 unrolled 40 steps, vocab 10000, batch 64; 1.081e+08 params"},
    {"u-transformer", FAMILY_UNET, "U-Transformer (cross-mesh resharding paper, Zhuang et al. 2023, "
                                   "Table 3, U-Trans case1): Alpa's UNet with attention, 32x32 "
                                   "inputs, channels 480/960/1920/1920, skip connections, fp16, "
                                   "batch 2048; 1.279e+09 params"},
    {"nmt", FAMILY_RNN, "NMT (FlexFlow, Jia et al. 2019, Table 3): 2+2 LSTM layers of 2048 unrolled "
                        "40 steps, attention, vocab 20480, batch 64; 2.684e+08 params"},
};

const char *const *mdl_zoo_names(void) {
  /* Filled once (g_once: callers on several threads are safe), read-only afterwards. */
  static const char *names[G_N_ELEMENTS(zoo) + 1];
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    for (guint i = 0; i < G_N_ELEMENTS(zoo); i++) names[i] = zoo[i].name;
    g_once_init_leave(&done, 1);
  }
  return names;
}

/* MoE descriptions end in "@NAME": the parameter count, computed once from the closed form
 * (mdl_zoo_moe_model_params, which tests/test-moe.c checks against the built graphs). */
const char *mdl_zoo_describe(const char *name) {
  static char *moe[G_N_ELEMENTS(zoo)];
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    for (guint i = 0; i < G_N_ELEMENTS(zoo); i++) {
      const char *at = strrchr(zoo[i].description, '@');
      if (zoo[i].family != FAMILY_MOE || !at) continue;
      double params = mdl_zoo_moe_model_params(mdl_zoo_moe_named(at + 1));
      moe[i] = g_strdup_printf("%.*s%.3e params", (int)(at - zoo[i].description),
                               zoo[i].description, params);
    }
    g_once_init_leave(&done, 1);
  }
  for (guint i = 0; name && i < G_N_ELEMENTS(zoo); i++)
    if (strcmp(zoo[i].name, name) == 0) return moe[i] ? moe[i] : zoo[i].description;
  return NULL;
}

/* --- spec parsing --- */

typedef struct {
  const char *key;
  int64_t *value;
  gboolean seen;
  const char *const *choices; /* NULL: a positive integer; else the value's index in this
                                 NULL-terminated list */
} SpecKey;

static const char *const tied_choices[] = {"0", "1", NULL};
static const char *const attn_choices[] = {"unfused", "flash", NULL};

/* The llama family's keys over @cfg into keys[0..LLAMA_KEYS) (shared with the moe family). */
#define LLAMA_KEYS 11
static void llama_keys(MdlLlamaConfig *cfg, SpecKey *keys) {
  const SpecKey k[LLAMA_KEYS] = {
      {"layers", &cfg->layers, FALSE, NULL},     {"hidden", &cfg->hidden, FALSE, NULL},
      {"heads", &cfg->heads, FALSE, NULL},       {"kv_heads", &cfg->kv_heads, FALSE, NULL},
      {"ffn", &cfg->ffn, FALSE, NULL},           {"seq", &cfg->seq, FALSE, NULL},
      {"vocab", &cfg->vocab, FALSE, NULL},       {"batch", &cfg->batch, FALSE, NULL},
      {"head_dim", &cfg->head_dim, FALSE, NULL}, {"tied", &cfg->tied, FALSE, tied_choices},
      {"attn", &cfg->flash, FALSE, attn_choices}};
  memcpy(keys, k, sizeof k);
}

static char *key_list(const SpecKey *keys, int nkeys) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < nkeys; i++) g_string_append_printf(s, "%s%s", i ? ", " : "", keys[i].key);
  return g_string_free(s, FALSE);
}

static gboolean parse_value(const char *model, const char *key, const char *text, int64_t *out,
                            GError **error) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (!*text || *end || text[0] == '+' || text[0] == ' ') {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model %s: %s=%s is not a positive integer", model, key, text);
    return FALSE;
  }
  if (errno == ERANGE) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model %s: %s=%s is %s", model, key, text,
                text[0] == '-' ? "not a positive integer" : "too large");
    return FALSE;
  }
  if (v <= 0) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model %s: %s=%s must be positive", model, key, text);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

static gboolean parse_choice(const char *model, const char *key, const char *text,
                             const char *const *choices, int64_t *out, GError **error) {
  for (int i = 0; choices[i]; i++) {
    if (strcmp(choices[i], text) == 0) {
      *out = i;
      return TRUE;
    }
  }
  g_autofree char *known = g_strjoinv("|", (char **)choices);
  g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model %s: %s=%s must be %s", model, key, text,
              known);
  return FALSE;
}

/* Applies "key=value,..." in @args to @keys; @model names the spec in errors. */
static gboolean parse_overrides(const char *model, const char *args, SpecKey *keys, int nkeys,
                                GError **error) {
  gboolean ok = FALSE;
  char **items = g_strsplit(args, ",", -1);
  for (char **it = items; *it; it++) {
    char *eq = strchr(*it, '=');
    if (!eq || eq == *it) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model %s: expected key=value, got \"%s\"", model, *it);
      goto out;
    }
    *eq = '\0';
    SpecKey *k = NULL;
    for (int i = 0; i < nkeys && !k; i++)
      if (strcmp(keys[i].key, *it) == 0) k = &keys[i];
    if (!k) {
      g_autofree char *valid = key_list(keys, nkeys);
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model %s: unknown key \"%s\" (valid keys: %s)",
                  model, *it, valid);
      goto out;
    }
    if (k->seen) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model %s: key \"%s\" given twice", model, *it);
      goto out;
    }
    k->seen = TRUE;
    if (k->choices) {
      if (!parse_choice(model, *it, eq + 1, k->choices, k->value, error)) goto out;
    } else if (!parse_value(model, *it, eq + 1, k->value, error)) {
      goto out;
    }
  }
  ok = TRUE;
out:
  g_strfreev(items);
  return ok;
}

static MdlGraph *unknown_model(const char *name, GError **error) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < G_N_ELEMENTS(zoo); i++) g_string_append_printf(s, "%s%s", i ? ", " : "", zoo[i].name);
  g_set_error(error, MDL_ERROR, MDL_ERROR_UNKNOWN_MODEL,
              "unknown model \"%s\"; known models: %s (or gpt:key=value,..., llama:key=value,..., "
              "moe:key=value,..., "
              "a .json graph path or a Hugging Face config.json)",
              name, s->str);
  g_string_free(s, TRUE);
  return NULL;
}

static gboolean check_layers(const char *name, int64_t layers, GError **error);

/* A Hugging Face config.json with the spec's overrides @args (may be NULL). */
static MdlGraph *from_hf(const char *spec, const char *path, const char *text, const char *args,
                         GError **error) {
  MdlMoeModelConfig moe;
  MdlLlamaConfig *cfg = &moe.base;
  gboolean has_batch, has_seq;
  if (!mdl_zoo_hf_config(text, path, &moe, &has_batch, &has_seq, error)) return NULL;
  SpecKey keys[] = {{"batch", &cfg->batch, FALSE, NULL},
                    {"seq", &cfg->seq, FALSE, NULL},
                    {"layers", &cfg->layers, FALSE, NULL},
                    {"attn", &cfg->flash, FALSE, attn_choices}};
  if (args && !parse_overrides(path, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
  if (!(has_batch || keys[0].seen) || !(has_seq || keys[1].seen)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                "%s: no %s: give it after the path (%s:batch=B,seq=S) or as a key in the file",
                path, !(has_batch || keys[0].seen) ? "batch" : "seq", path);
    return NULL;
  }
  if (!check_layers(path, cfg->layers, error)) return NULL;
  return moe.moe.experts > 0 ? mdl_zoo_moe_model(spec, &moe, error) : mdl_zoo_llama(spec, cfg, error);
}

/* @spec is PATH or PATH.json:key=value,... (overrides: Hugging Face configs only). */
static MdlGraph *from_file(const char *spec, GError **error) {
  const char *sep = strstr(spec, ".json:");
  g_autofree char *path = sep ? g_strndup(spec, (gsize)(sep - spec) + 5) : g_strdup(spec);
  const char *args = sep ? sep + 6 : NULL;
  if (args && !*args) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model %s: expected key=value after ':'", spec);
    return NULL;
  }
  char *text = NULL;
  if (!mdl_read_model_json_file(path, &text, error)) return NULL;
  MdlGraph *g = NULL;
  if (mdl_zoo_hf_detect(text))
    g = from_hf(spec, path, text, args, error);
  else if (args)
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                "model %s: key=value overrides apply to Hugging Face config.json files, not to "
                "operator graphs", spec);
  else
    g = mdl_graph_from_json(text, path, error);
  g_free(text);
  return g;
}

static gboolean check_layers(const char *name, int64_t layers, GError **error) {
  if (layers <= MAX_LAYERS) return TRUE;
  g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model %s: layers=%" G_GINT64_FORMAT
              " exceeds %d", name, (gint64)layers, MAX_LAYERS);
  return FALSE;
}

static MdlGraph *build(const char *spec, const char *name, const char *args, GError **error) {
  const ZooEntry *entry = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(zoo) && !entry; i++)
    if (strcmp(zoo[i].name, name) == 0) entry = &zoo[i];
  gboolean gpt = strcmp(name, "gpt") == 0 || (entry && entry->family == FAMILY_GPT);
  gboolean llama = strcmp(name, "llama") == 0 || (entry && entry->family == FAMILY_LLAMA);
  gboolean moe = strcmp(name, "moe") == 0 || (entry && entry->family == FAMILY_MOE);
  if (!entry && !gpt && !llama && !moe) return unknown_model(name, error);
  if (gpt) {
    MdlGptConfig cfg = *mdl_zoo_gpt_named(entry ? name : "gpt3-125m");
    SpecKey keys[] = {{"layers", &cfg.layers, FALSE, NULL}, {"hidden", &cfg.hidden, FALSE, NULL},
                      {"heads", &cfg.heads, FALSE, NULL},   {"seq", &cfg.seq, FALSE, NULL},
                      {"vocab", &cfg.vocab, FALSE, NULL},   {"batch", &cfg.batch, FALSE, NULL},
                      {"ffn", &cfg.ffn, FALSE, NULL}};
    if (args && !parse_overrides(name, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
    if (!check_layers(name, cfg.layers, error)) return NULL;
    return mdl_zoo_gpt(spec, &cfg, error);
  }
  if (llama) {
    MdlLlamaConfig cfg = *mdl_zoo_llama_named(entry ? name : "llama3-8b");
    SpecKey keys[LLAMA_KEYS];
    llama_keys(&cfg, keys);
    if (args && !parse_overrides(name, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
    if (!check_layers(name, cfg.layers, error)) return NULL;
    return mdl_zoo_llama(spec, &cfg, error);
  }
  if (moe) {
    MdlMoeModelConfig cfg = *mdl_zoo_moe_named(entry ? name : "mixtral-8x7b");
    MdlMoeConfig *m = &cfg.moe;
    SpecKey keys[LLAMA_KEYS + 11] = {
        [LLAMA_KEYS] = {"experts", &m->experts, FALSE, NULL},
        {"top_k", &m->top_k, FALSE, NULL},
        {"moe_ffn", &m->expert_ffn, FALSE, NULL},
        {"shared_ffn", &m->shared_ffn, FALSE, NULL},
        {"capacity", &m->capacity_pct, FALSE, NULL},
        {"skew", &m->skew_pct, FALSE, NULL},
        {"dense_layers", &cfg.dense_layers, FALSE, NULL},
        {"q_rank", &cfg.q_rank, FALSE, NULL},
        {"kv_rank", &cfg.kv_rank, FALSE, NULL},
        {"rope_dim", &cfg.rope_dim, FALSE, NULL},
        {"v_head_dim", &cfg.v_head_dim, FALSE, NULL}};
    llama_keys(&cfg.base, keys);
    if (args && !parse_overrides(name, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
    if (!check_layers(name, cfg.base.layers, error)) return NULL;
    return mdl_zoo_moe_model(spec, &cfg, error);
  }
  if (entry->family == FAMILY_MLP) {
    int64_t layers = 4, hidden = 1024, batch = 64;
    SpecKey keys[] = {{"layers", &layers, FALSE, NULL}, {"hidden", &hidden, FALSE, NULL}, {"batch", &batch, FALSE, NULL}};
    if (args && !parse_overrides(name, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
    if (!check_layers(name, layers, error)) return NULL;
    return mdl_zoo_mlp(spec, layers, hidden, batch, error);
  }
  if (entry->family == FAMILY_UNET) {
    /* Alpa's "1B" UNet (mdl_zoo_unet.c); the paper's batch (Table 3). */
    int64_t channels = 480, image = 32, batch = 2048;
    SpecKey keys[] = {{"channels", &channels, FALSE, NULL}, {"image", &image, FALSE, NULL}, {"batch", &batch, FALSE, NULL}};
    if (args && !parse_overrides(name, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
    return mdl_zoo_unet(spec, channels, image, batch, error);
  }
  if (entry->family == FAMILY_RNN) {
    /* Defaults and their sources: mdl_zoo_rnn.c. */
    MdlRnnConfig cfg = {.layers = 2, .hidden = 2048, .seq = 40, .batch = 64, .classes = 2};
    if (strcmp(name, "rnntc") == 0) cfg.kind = MDL_RNN_TC, cfg.layers = 4, cfg.vocab = 18765;
    else if (strcmp(name, "rnnlm") == 0) cfg.kind = MDL_RNN_LM, cfg.vocab = 10000;
    else cfg.kind = MDL_RNN_NMT, cfg.vocab = 20480;
    SpecKey keys[] = {{"layers", &cfg.layers, FALSE, NULL}, {"hidden", &cfg.hidden, FALSE, NULL},
                      {"seq", &cfg.seq, FALSE, NULL},       {"vocab", &cfg.vocab, FALSE, NULL},
                      {"batch", &cfg.batch, FALSE, NULL}};
    if (args && !parse_overrides(name, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
    if (cfg.layers > MAX_LAYERS || cfg.seq > MAX_LAYERS) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model %s: layers and seq must not exceed %d",
                  name, MAX_LAYERS);
      return NULL;
    }
    return mdl_zoo_rnn(spec, &cfg, error);
  }
  /* FlexFlow's batch (Jia et al. 2019, section 8.1): 64, AlexNet 256; VGG 64. */
  int64_t batch = strcmp(name, "alexnet") == 0 ? 256 : 64;
  SpecKey keys[] = {{"batch", &batch, FALSE, NULL}};
  if (args && !parse_overrides(name, args, keys, G_N_ELEMENTS(keys), error)) return NULL;
  if (entry->family == FAMILY_RESNET) return mdl_zoo_resnet(spec, batch, error);
  if (entry->family == FAMILY_INCEPTION) return mdl_zoo_inception(spec, batch, error);
  return mdl_zoo_cnn(spec, name, batch, error);
}

MdlGraph *mdl_graph_parse_spec(const char *spec, GError **error) {
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  if (!spec || !*spec) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "empty model spec");
    return NULL;
  }
  if (strchr(spec, '/') || g_str_has_suffix(spec, ".json")) return from_file(spec, error);
  const char *colon = strchr(spec, ':');
  char *name = colon ? g_strndup(spec, (gsize)(colon - spec)) : g_strdup(spec);
  MdlGraph *g = NULL;
  if (colon && !colon[1]) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model %s: expected key=value after ':'", spec);
  } else {
    g = build(spec, name, colon ? colon + 1 : NULL, error);
  }
  g_free(name);
  if (g && !mdl_graph_validate(g, error)) {
    mdl_graph_free(g);
    g = NULL;
  }
  return g;
}

/* --- op building --- */

void mdl_zoo_op_init(MdlOp *op, const char *name, MdlOpKind kind, int layer) {
  memset(op, 0, sizeof *op);
  memset(op->inputs, -1, sizeof op->inputs);
  memset(&op->output, -1, sizeof op->output);
  op->name = (char *)name;
  op->kind = kind;
  op->layer = layer;
  op->tp_dim = -1;
}

int mdl_zoo_dim(MdlOp *op, const char *name, int64_t size, MdlDimRole role, gboolean splittable) {
  g_assert(op->ndims < MDL_MAX_DIMS && strlen(name) < MDL_NAME_LEN);
  MdlDim *d = &op->dims[op->ndims];
  g_strlcpy(d->name, name, MDL_NAME_LEN);
  d->size = size;
  d->role = role;
  d->splittable = splittable;
  return op->ndims++;
}

/* @dims: the op's dim names per tensor dim, comma-separated, "-" for one the op does not
 * index. Read in place (a 175B model has 3,279 operands: splitting each into allocated strings
 * was 7 M of the 12 M instructions building it). */
static void set_operand(MdlOp *op, MdlOperand *opd, int tensor, const char *dims) {
  opd->tensor = tensor;
  memset(opd->dim_map, -1, sizeof opd->dim_map);
  if (!*dims) return; /* no dims */
  int i = 0;
  for (const char *p = dims;; i++) {
    const char *comma = strchr(p, ',');
    gsize len = comma ? (gsize)(comma - p) : strlen(p);
    char name[64];
    g_assert(i < MDL_MAX_DIMS && len < sizeof name);
    memcpy(name, p, len);
    name[len] = '\0';
    if (strcmp(name, "-") != 0) {
      int d = mdl_op_find_dim(op, name);
      if (d < 0) g_error("zoo op %s has no dim %s", op->name, name);
      opd->dim_map[i] = (int8_t)d;
    }
    if (!comma) break;
    p = comma + 1;
  }
}

void mdl_zoo_input(MdlOp *op, int tensor, const char *dims) {
  g_assert(op->ninputs < MDL_MAX_INPUTS);
  set_operand(op, &op->inputs[op->ninputs++], tensor, dims);
}

void mdl_zoo_output(MdlOp *op, int tensor, const char *dims) {
  set_operand(op, &op->output, tensor, dims);
}

static int add_tensor_va(MdlGraph *g, const char *name, gboolean weight, int ndims, va_list ap) {
  int64_t shape[MDL_MAX_DIMS];
  g_assert(ndims <= MDL_MAX_DIMS);
  for (int i = 0; i < ndims; i++) shape[i] = va_arg(ap, int64_t);
  return mdl_graph_add_tensor(g, name, ndims, shape, weight, FALSE);
}

int mdl_zoo_weight(MdlGraph *g, const char *name, int ndims, ...) {
  va_list ap;
  va_start(ap, ndims);
  int t = add_tensor_va(g, name, TRUE, ndims, ap);
  va_end(ap);
  return t;
}

int mdl_zoo_activation(MdlGraph *g, const char *name, int ndims, ...) {
  va_list ap;
  va_start(ap, ndims);
  int t = add_tensor_va(g, name, FALSE, ndims, ap);
  va_end(ap);
  return t;
}

gboolean mdl_zoo_check_size(const char *model, const char *what, GError **error, int n, ...) {
  int64_t sizes[16], product;
  g_assert(n <= 16);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) sizes[i] = va_arg(ap, int64_t);
  va_end(ap);
  if (mdl_size_product(n, sizes, &product)) return TRUE;
  g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model %s: %s would exceed 2^62 elements", model, what);
  return FALSE;
}
