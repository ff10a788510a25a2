/* Tests of the FP8 recipe (costmodel/cm_fp8.c, dtype=fp8): devices without FP8 tensor cores
 * refuse it, only the layers' linear GEMMs run in fp8, the cast kernel's cost, and what an FP8
 * strategy changes in a simulation (faster GEMMs, the same activations, the cached fp8 weights
 * in memory). */
#include <glib.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "model/mdl_strategy.h"
#include "sim/sim.h"
#include "test-util.h"

/* Llama-3-8B's layer shapes, two layers: GEMMs large enough for fp8 to pay for its casts (at
 * hidden 1024 the casts' launches and traffic outweigh the faster GEMMs, as on real GPUs). */
#define MODEL "llama:layers=2,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=2048,vocab=4096,batch=8"

static DevCluster *cluster_or_die(const char *spec) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(spec, &error);
  g_assert_no_error(error);
  return c;
}

/* Pre-Hopper devices refuse dtype=fp8 with one line naming the device and the dtype; the
 * Hopper and Blackwell presets accept it. */
static void test_refused(void) {
  static const struct {
    const char *cluster;
    gboolean ok;
  } cases[] = {{"dgx-a100", FALSE}, {"aws-p3.8xlarge", FALSE}, {"dgx-h100", TRUE},
               {"dgx-h200", TRUE},  {"dgx-b200", TRUE},        {"gb200-nvl72:gpus_per_node=8", TRUE}};
  MdlGraph *g = test_parse_model(MODEL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    DevCluster *c = cluster_or_die(cases[i].cluster);
    GError *error = NULL;
    g_autofree char *spec = g_strdup_printf("megatron:tp=%d,dtype=fp8", dev_cluster_num_devices(c));
    MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
    if (cases[i].ok) {
      g_assert_no_error(error);
      g_assert_cmpint(s->dtype, ==, DEV_DTYPE_FP8);
    } else {
      g_assert_null(s);
      g_assert_error(error, MDL_ERROR, MDL_ERROR_STRATEGY);
      g_assert_nonnull(strstr(error->message, "fp8"));
      g_assert_nonnull(strstr(error->message, c->device.name));
      g_assert_nonnull(strstr(error->message, "b200, gb200, h100-sxm, h200")); /* the ones with it */
      g_assert_null(strchr(error->message, '\n'));
      g_clear_error(&error);
    }
    mdl_strategy_free(s);
    dev_cluster_free(c);
  }
  mdl_graph_free(g);
}

/* Transformer Engine's recipe: the layers' linear GEMMs in fp8; attention, norms, pointwise
 * ops and the output layer in bf16; other dtypes unchanged. */
static void test_which_ops(void) {
  MdlGraph *g = test_parse_model(MODEL);
  const char *fp8[] = {"layer0.qkv", "layer0.attn_proj", "layer1.fc1", "layer1.fc2"};
  const char *bf16[] = {"layer0.attn_flash", "layer0.ln1", "layer0.swiglu", "lm_head", "embedding",
                        "loss"};
  for (guint i = 0; i < G_N_ELEMENTS(fp8); i++) {
    const MdlOp *op = test_find_op(g, fp8[i]);
    g_assert_nonnull(op);
    g_assert_true(cm_fp8_gemm(op, DEV_DTYPE_FP8));
    g_assert_cmpint(cm_op_dtype(op, DEV_DTYPE_FP8), ==, DEV_DTYPE_FP8);
    g_assert_false(cm_fp8_gemm(op, DEV_DTYPE_BF16));
  }
  for (guint i = 0; i < G_N_ELEMENTS(bf16); i++) {
    const MdlOp *op = test_find_op(g, bf16[i]);
    g_assert_nonnull(op);
    g_assert_false(cm_fp8_gemm(op, DEV_DTYPE_FP8));
    g_assert_cmpint(cm_op_dtype(op, DEV_DTYPE_FP8), ==, DEV_DTYPE_BF16);
    g_assert_cmpint(cm_op_dtype(op, DEV_DTYPE_FP16), ==, DEV_DTYPE_FP16);
  }
  /* Casts: a norm's output comes out of the norm kernel in fp8, weights are cached; the
   * attention output and the SwiGLU output need a cast kernel of their own. */
  const MdlOp *qkv = test_find_op(g, "layer0.qkv"), *proj = test_find_op(g, "layer0.attn_proj");
  const MdlOp *fc1 = test_find_op(g, "layer0.fc1"), *fc2 = test_find_op(g, "layer0.fc2");
  g_assert_true(cm_fp8_cast_fused(g, qkv->inputs[0].tensor));  /* ln1 */
  g_assert_true(cm_fp8_cast_fused(g, qkv->inputs[1].tensor));  /* weight */
  g_assert_true(cm_fp8_cast_fused(g, fc1->inputs[0].tensor));  /* ln2 */
  g_assert_false(cm_fp8_cast_fused(g, proj->inputs[0].tensor)); /* attention */
  g_assert_false(cm_fp8_cast_fused(g, fc2->inputs[0].tensor));  /* swiglu */
  mdl_graph_free(g);
}

/* The cast reads 2 and writes 2 bytes an element at a streaming kernel's fraction of HBM, plus
 * one launch. */
static void test_cast_time(void) {
  DevCluster *c = cluster_or_die("dgx-h100");
  CmParams p;
  cm_params_default(&p);
  double n = 1 << 24;
  double want = 4 * n / (c->device.hbm_bandwidth * cm_memory_efficiency(&p, &c->device, CM_MEMORY_STREAM)) +
                p.kernel_overhead_s;
  g_assert_cmpfloat(cm_fp8_cast_time(&p, &c->device, n), ==, want);
  g_assert_cmpfloat(cm_fp8_cast_time(&p, &c->device, 0), ==, 0);
  /* The fp8 peak is twice bf16's on H100, but measured fp8 GEMMs reach a smaller share of it
   * (cm_gemm.c: 0.601 against 0.687): a compute-bound GEMM takes 0.687 / (2 x 0.601) of the
   * bf16 time, not half. */
  double f = 1e15;
  double fp8 = cm_compute_time(&p, &c->device, MDL_OP_MATMUL, DEV_DTYPE_FP8, f, 0);
  double bf16 = cm_compute_time(&p, &c->device, MDL_OP_MATMUL, DEV_DTYPE_BF16, f, 0);
  g_assert_cmpfloat_with_epsilon(fp8 / bf16,
                                 cm_gemm_efficiency(&p, &c->device, DEV_DTYPE_BF16) /
                                     (2 * cm_gemm_efficiency(&p, &c->device, DEV_DTYPE_FP8)),
                                 1e-9);
  g_assert_cmpfloat(fp8 / bf16, >, 0.5);
  dev_cluster_free(c);
}

/* On 8 H100s at tp=8: fp8 computes faster than bf16 but not twice as fast (only the linear
 * GEMMs speed up, and the casts are added); the GEMMs' inputs are kept in fp8; weights grow by
 * the cached fp8 copy, 2 bytes per local parameter of the layers' GEMMs. */
static void test_simulation(void) {
  DevCluster *c = cluster_or_die("dgx-h100");
  MdlGraph *g = test_parse_model(MODEL);
  MdlStrategy *sb, *sf;
  SimRun *bf = test_simulate(g, c, "megatron:tp=8,dtype=bf16", &sb);
  SimRun *f8 = test_simulate(g, c, "megatron:tp=8,dtype=fp8", &sf);
  const SimPrediction *pb = sim_run_prediction(bf), *pf = sim_run_prediction(f8);
  g_test_message("compute bf16 %.6g s, fp8 %.6g s", pb->compute_s, pf->compute_s);
  g_assert_cmpfloat(pf->compute_s, <, pb->compute_s);
  g_assert_cmpfloat(pf->compute_s, >, 0.5 * pb->compute_s);
  g_autofree CmMemory *mb = cm_memory_per_device(g, sb, c);
  g_autofree CmMemory *mf = cm_memory_per_device(g, sf, c);
  g_assert_cmpfloat(mf[0].optimizer, ==, mb[0].optimizer);
  double h = 4096, q = (32 + 2 * 8) * 128, f = 14336;
  /* Activations: the inputs only fp8 GEMMs read are kept at 1 byte instead of 2 (per layer
   * and sequence of the microbatch in flight: qkv's and fc1's [s, h], attn_proj's [s, a dh/t],
   * fc2's [s, f/t]); the rest unchanged. */
  double fp8_inputs = 2 * sb->microbatch_size * 2048 * (2 * h + h / 8 + f / 8);
  g_assert_cmpfloat(mb[0].activations - mf[0].activations, ==, fp8_inputs);
  double gemm_params = 2 * (h * q + 32 * 128 * h + 3 * h * f) / 8; /* 2 layers, tp=8 */
  g_assert_cmpfloat(mf[0].weights - mb[0].weights, ==, 2 * gemm_params);
  /* Under ZeRO-3 no fp8 copy of every weight stays: the same weights as bf16. */
  MdlStrategy *z3b = mdl_strategy_parse_spec("megatron:tp=2,dp=4,zero=3,dtype=bf16", g, c, NULL);
  MdlStrategy *z3f = mdl_strategy_parse_spec("megatron:tp=2,dp=4,zero=3,dtype=fp8", g, c, NULL);
  g_assert_nonnull(z3b);
  g_assert_nonnull(z3f);
  g_autofree CmMemory *zb = cm_memory_per_device(g, z3b, c);
  g_autofree CmMemory *zf = cm_memory_per_device(g, z3f, c);
  g_assert_cmpfloat(zf[0].weights, ==, zb[0].weights);
  mdl_strategy_free(z3b);
  mdl_strategy_free(z3f);
  sim_run_free(bf);
  sim_run_free(f8);
  mdl_strategy_free(sb);
  mdl_strategy_free(sf);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/costmodel/fp8/refused-without-fp8-tensor-cores", test_refused);
  g_test_add_func("/costmodel/fp8/which-ops", test_which_ops);
  g_test_add_func("/costmodel/fp8/cast-time", test_cast_time);
  g_test_add_func("/costmodel/fp8/simulation", test_simulation);
  return g_test_run();
}
