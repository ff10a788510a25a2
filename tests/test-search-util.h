/* Shared by the search tests (test-search.c, test-search-grid.c): a model on a cluster with
 * default cost-model parameters, and the small cases of issue 5. */
#ifndef STRATSIM_TEST_SEARCH_UTIL_H
#define STRATSIM_TEST_SEARCH_UTIL_H

#include <glib.h>

#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"

#define MLP "mlp"                                           /* 4 dense 1024 layers, batch 64 */
#define MLP_CLUSTER "aws-p3.8xlarge"                        /* 4 V100 on NVLink */
#define GPT4 "gpt:layers=4,hidden=1024,heads=16,seq=128,vocab=32000,batch=16"
#define GPT4_CLUSTER "dgx-a100"                             /* 8 A100 on NVSwitch */

typedef struct {
  MdlGraph *graph;
  DevCluster *cluster;
  CmParams params;
} Case;

static inline void case_init(Case *c, const char *model, const char *cluster) {
  GError *error = NULL;
  c->graph = mdl_graph_parse_spec(model, &error);
  g_assert_no_error(error);
  c->cluster = dev_cluster_parse_spec(cluster, &error);
  g_assert_no_error(error);
  cm_params_default(&c->params);
}

static inline void case_clear(Case *c) {
  mdl_graph_free(c->graph);
  dev_cluster_free(c->cluster);
}

#endif
