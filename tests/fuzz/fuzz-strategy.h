/* tests/fuzz/fuzz-strategy — the graph and cluster the strategy targets parse against: a
 * two-layer GPT (op names layer0.ln1 ... as in model/STRATEGY.md) on two DGX A100 hosts, small
 * enough that building and validating a strategy takes well under a millisecond. */
#ifndef STRATSIM_FUZZ_STRATEGY_H
#define STRATSIM_FUZZ_STRATEGY_H

#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"

#define FUZZ_STRATEGY_MODEL "gpt:layers=2,hidden=64,heads=4,seq=32,vocab=128,batch=16"
#define FUZZ_STRATEGY_CLUSTER "dgx-a100:nodes=2"

static MdlGraph *fuzz_graph;
static DevCluster *fuzz_cluster;

static void fuzz_strategy_setup(void) {
  GError *error = NULL;
  fuzz_graph = mdl_graph_parse_spec(FUZZ_STRATEGY_MODEL, &error);
  if (fuzz_graph) fuzz_cluster = dev_cluster_parse_spec(FUZZ_STRATEGY_CLUSTER, &error);
  if (!fuzz_graph || !fuzz_cluster) {
    fprintf(stderr, "fuzz: %s\n", error->message);
    abort();
  }
}

#endif
