/* Shared fixtures of the mixture-of-experts tests (test-moe.c, test-expert.c): a one-block MoE
 * graph, an H100 cluster, and the check that a run's collectives are the cost model's formula.
 * Header-only. */
#ifndef STRATSIM_TEST_MOE_UTIL_H
#define STRATSIM_TEST_MOE_UTIL_H

#include <cjson/cJSON.h>
#include <glib.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "model/mdl_zoo_moe.h"
#include "sim/sim.h"

/* A graph holding one MoE MLP block over a data input x [b,s,h] (its own residual), or with
 * @after_op over an elementwise op of x (so that the block's input has a producer, as the norm
 * before a real MoE MLP is). */
static inline MdlGraph *moe_graph_after_op(int64_t b, int64_t s, int64_t h, const MdlMoeConfig *moe,
                                           gboolean after_op) {
  MdlGraph *g = mdl_graph_new("moe-block", "moe", b);
  g->default_dtype = DEV_DTYPE_BF16;
  g->num_layers = 1;
  g->seq = s;
  int x = mdl_zoo_activation(g, "x", 3, b, s, h);
  mdl_graph_tensor(g, x)->is_input = TRUE;
  MdlZooSeq site = {.g = g, .b = b, .s = s, .h = h, .layer = 0, .prefix = "layer0."};
  if (after_op) x = mdl_zoo_seq_pointwise(&site, "pre", x, -1, "h", h, 1.0, 0);
  mdl_zoo_moe_mlp(&site, moe, x, x);
  GError *error = NULL;
  g_assert_true(mdl_graph_validate(g, &error));
  g_assert_no_error(error);
  return g;
}

static inline MdlGraph *moe_graph(int64_t b, int64_t s, int64_t h, const MdlMoeConfig *moe) {
  return moe_graph_after_op(b, s, h, moe, FALSE);
}

static const MdlMoeConfig small_moe G_GNUC_UNUSED = {.experts = 8, .top_k = 2, .expert_ffn = 512,
                                       .shared_ffn = 256};

static inline DevCluster *h100(int nodes) {
  GError *error = NULL;
  g_autofree char *spec = g_strdup_printf("dgx-h100:nodes=%d", nodes);
  DevCluster *c = dev_cluster_parse_spec(spec, &error);
  g_assert_no_error(error);
  return c;
}

/* Every collective of @kind on device 0 in @run's explain JSON: its bytes are @bytes and its
 * time the cost model's formula for them on devices 0..@p-1; returns their count. */
static inline int check_collectives(const SimRun *run, const DevCluster *c, const char *kind, int p,
                             double bytes, double *total) {
  g_autofree char *text = sim_explain_json(run);
  cJSON *root = cJSON_Parse(text);
  cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "communication"), 0), *e;
  g_assert_cmpint((int)cJSON_GetObjectItem(dev, "device")->valuedouble, ==, 0);
  CmParams params;
  cm_params_default(&params);
  int devices[64];
  for (int i = 0; i < p; i++) devices[i] = i;
  CmCollective k;
  g_assert_true(cm_collective_parse(kind, &k));
  double formula = cm_group_collective_time(&params, c, k, devices, p, bytes);
  int count = 0;
  *total = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(dev, "collectives")) {
    if (strcmp(cJSON_GetObjectItem(e, "kind")->valuestring, kind) != 0) continue;
    g_assert_cmpint((int)cJSON_GetObjectItem(e, "group_size")->valuedouble, ==, p);
    g_assert_cmpfloat(cJSON_GetObjectItem(e, "bytes_per_device")->valuedouble, ==, bytes);
    double t = cJSON_GetObjectItem(e, "time_s")->valuedouble;
    g_assert_cmpfloat_with_epsilon(t, formula, 1e-12 + 1e-6 * formula);
    int n = (int)cJSON_GetObjectItem(e, "count")->valuedouble;
    count += n;
    *total += t * n;
  }
  cJSON_Delete(root);
  return count;
}

#endif
