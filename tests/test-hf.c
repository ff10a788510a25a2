/* Tests of Hugging Face config.json models (model/mdl_zoo_hf.c): the published configs under
 * tests/data/hf/ build the llama family with the right sizes and parameter counts, batch and
 * seq come from the spec or the file, mixtures of experts build the moe family as the named
 * sizes do, unknown architectures are refused naming the field, bad fields are named, and the
 * CLI maps those errors to exit 2. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "model/mdl_graph.h"
#include "model/mdl_zoo.h"
#include "model/mdl_zoo_moe.h"
#include "test-cli-util.h"
#include "test-util.h"

#define HF STRATSIM_SOURCE_DIR "/tests/data/hf/"

/* Meta-Llama-3-8B's config.json is llama3-8b: the same parameters to the last one (8.03e9, the
 * model card's count), the same graph size. */
static void test_llama3_8b(void) {
  MdlGraph *hf = test_parse_model(HF "llama3-8b.json:batch=2,seq=128");
  MdlGraph *named = test_parse_model("llama3-8b:batch=2,seq=128");
  g_assert_cmpstr(hf->family, ==, "llama");
  g_assert_cmpint(hf->batch, ==, 2);
  g_assert_cmpint(hf->seq, ==, 128);
  g_assert_cmpint(hf->num_layers, ==, 32);
  g_assert_cmpint(hf->heads, ==, 32);
  g_assert_cmpfloat(mdl_graph_num_params(hf), ==, mdl_graph_num_params(named));
  g_assert_cmpint(mdl_graph_num_ops(hf), ==, mdl_graph_num_ops(named));
  g_assert_cmpfloat(fabs(mdl_graph_num_params(hf) / 8.03e9 - 1), <, 0.01);
  mdl_graph_free(hf);
  mdl_graph_free(named);
}

/* Mistral's file carries batch and seq as keys; the spec overrides win. */
static void test_keys_in_file(void) {
  MdlGraph *g = test_parse_model(HF "mistral-7b.json");
  g_assert_cmpint(g->batch, ==, 64);
  g_assert_cmpint(g->seq, ==, 4096);
  g_assert_cmpfloat(fabs(mdl_graph_num_params(g) / 7.24e9 - 1), <, 0.01);
  mdl_graph_free(g);
  g = test_parse_model(HF "mistral-7b.json:seq=1024,layers=2,attn=unfused");
  g_assert_cmpint(g->batch, ==, 64);
  g_assert_cmpint(g->seq, ==, 1024);
  g_assert_cmpint(g->num_layers, ==, 2);
  gboolean unfused = FALSE;
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    unfused |= strcmp(mdl_graph_op(g, o)->name, "layer0.attn_scores") == 0;
  g_assert_true(unfused);
  mdl_graph_free(g);
}

/* Qwen2.5-0.5B: tied embeddings, 14 heads over 2 KV groups; 0.49e9 parameters (its model card:
 * "Number of Parameters: 0.49B"). */
static void test_qwen_tied(void) {
  MdlGraph *g = test_parse_model(HF "qwen2.5-0.5b.json:batch=4,seq=256");
  g_assert_cmpfloat(fabs(mdl_graph_num_params(g) / 0.49e9 - 1), <, 0.01);
  for (int t = 0; t < mdl_graph_num_tensors(g); t++)
    g_assert_cmpstr(mdl_graph_tensor(g, t)->name, !=, "lm_head.weight");
  mdl_graph_free(g);
}

/* transformers writes unset optional fields as null: head_dim and num_key_value_heads take
 * their defaults (hidden / heads, heads). */
static void test_null_optional(void) {
  MdlGraph *g = test_parse_model(HF "null-head-dim.json:batch=2,seq=64");
  double h = 1024, f = 2816, layer = h * 3 * h + h * h + 3 * h * f + 2 * h;
  g_assert_cmpfloat(mdl_graph_num_params(g), ==, 2 * layer + 1000 * h + h);
  mdl_graph_free(g);
}

/* Mixtral's and DeepSeek-V3's config.json build the moe family with the named sizes'
 * parameters to the last one (46.7e9 and 671e9 published). */
static void test_moe(void) {
  static const char *const pairs[][2] = {{HF "mixtral-8x7b.json:batch=2,seq=256", "mixtral-8x7b:batch=2,seq=256"},
                                         {HF "deepseek-v3.json:batch=2,seq=256", "deepseek-v3:batch=2,seq=256"}};
  for (guint i = 0; i < G_N_ELEMENTS(pairs); i++) {
    MdlGraph *hf = test_parse_model(pairs[i][0]);
    MdlGraph *named = test_parse_model(pairs[i][1]);
    g_assert_cmpstr(hf->family, ==, "moe");
    g_assert_cmpfloat(mdl_graph_num_params(hf), ==, mdl_graph_num_params(named));
    g_assert_cmpint(mdl_graph_num_ops(hf), ==, mdl_graph_num_ops(named));
    mdl_graph_free(hf);
    mdl_graph_free(named);
  }
}

typedef struct {
  const char *spec;
  int code;
  const char *needle, *needle2;
} ErrorCase;

static const ErrorCase error_cases[] = {
    {HF "moe-no-top-k.json:batch=8,seq=512", MDL_ERROR_PARSE, "field 'num_experts_per_tok' is missing",
     NULL},
    {HF "gpt2.json:batch=8,seq=512", MDL_ERROR_INVALID, "field 'architectures'", "GPT2LMHeadModel"},
    {HF "bad-heads.json:batch=8,seq=512", MDL_ERROR_INVALID, "num_attention_heads", "\"32\""},
    {HF "no-hidden.json:batch=8,seq=512", MDL_ERROR_PARSE, "field 'hidden_size' is missing", NULL},
    {HF "llama3-8b.json", MDL_ERROR_PARSE, "no batch", "batch=B,seq=S"},
    {HF "llama3-8b.json:batch=8", MDL_ERROR_PARSE, "no seq", NULL},
    {HF "llama3-8b.json:batch=8,seq=512,experts=4", MDL_ERROR_PARSE, "unknown key", "experts"},
    {HF "llama3-8b.json:batch=0,seq=512", MDL_ERROR_INVALID, "batch=0", NULL},
    {HF "llama3-8b.json:", MDL_ERROR_PARSE, "key=value", NULL},
    {HF "nosuch.json:batch=1,seq=1", MDL_ERROR_PARSE, "nosuch.json", NULL},
    {STRATSIM_SOURCE_DIR "/model/examples/mlp2.json:batch=4", MDL_ERROR_PARSE,
     "Hugging Face", NULL},
};

static void test_error(gconstpointer data) {
  const ErrorCase *e = data;
  test_assert_model_error(e->spec, e->code, e->needle, e->needle2);
}

/* End to end: a config simulates, a MoE config too (with expert parallelism); a MoE config
 * without its routing field is bad input (exit 2, one line). */
static void test_cli(void) {
  TestCliResult r = test_cli_run(NULL, "simulate --model " HF "qwen2.5-0.5b.json:batch=8,seq=512 "
                                       "--cluster dgx-h100 --strategy megatron:tp=2,dp=4 "
                                       "--db :memory:");
  if (r.status != 0) g_error("exit %d: %s", r.status, r.err);
  g_assert_nonnull(strstr(r.out, "qwen2.5-0.5b.json"));
  test_cli_result_clear(&r);
  r = test_cli_run(NULL, "simulate --model " HF "mixtral-8x7b.json:batch=8,seq=512,layers=2 "
                         "--cluster dgx-h100 --strategy megatron:dp=8,ep=8 --db :memory:");
  if (r.status != 0) g_error("exit %d: %s", r.status, r.err);
  g_assert_nonnull(strstr(r.out, "expert parallel ep=8"));
  test_cli_result_clear(&r);
  r = test_cli_run(NULL, "simulate --model " HF "moe-no-top-k.json:batch=8,seq=512 "
                         "--cluster dgx-h100 --strategy dp --db :memory:");
  g_assert_cmpint(r.status, ==, 2);
  g_assert_nonnull(strstr(r.err, "num_experts_per_tok"));
  g_assert_null(strchr(g_strstrip(r.err), '\n'));
  test_cli_result_clear(&r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model/hf/llama3-8b", test_llama3_8b);
  g_test_add_func("/model/hf/keys-in-file", test_keys_in_file);
  g_test_add_func("/model/hf/qwen-tied", test_qwen_tied);
  g_test_add_func("/model/hf/null-optional", test_null_optional);
  g_test_add_func("/model/hf/moe", test_moe);
  for (guint i = 0; i < G_N_ELEMENTS(error_cases); i++) {
    g_autofree char *path = g_strdup_printf("/model/hf/error/%u", i);
    g_test_add_data_func(path, &error_cases[i], test_error);
  }
  g_test_add_func("/model/hf/cli", test_cli);
  return g_test_run();
}
