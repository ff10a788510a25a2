/* sim/bound — the compute-stream lower bound of sim_bound.h. */
#include "sim/sim_bound.h"

#include "sim/sim_build-int.h"

SimTime sim_compute_bound(const MdlGraph *graph, const MdlStrategy *strategy,
                          const DevCluster *cluster, const CmParams *params) {
  Builder b;
  memset(&b, 0, sizeof b);
  b.g = graph;
  b.s = strategy;
  b.c = cluster;
  b.p = params;
  b.nops = mdl_graph_num_ops(graph);
  b.M = strategy->num_microbatches;
  b.dtype_bytes = dev_dtype_bytes(strategy->dtype);
  b.sample_tdim = mdl_tensor_sample_dims(graph);
  int *group = mdl_strategy_recompute_groups(strategy, graph);
  int nmeshes = (int)strategy->meshes->len, ndev = dev_cluster_num_devices(cluster);
  SimTime *per_mesh = g_new0(SimTime, nmeshes);
  for (int o = 0; o < b.nops; o++) {
    SimTime f, bw, w;
    sb_op_durations(&b, o, &f, &bw, &w);
    SimTime one = f + bw + (sb_has_weight_task(&b, o) ? w : 0) + (group[o] >= 0 ? f : 0);
    per_mesh[strategy->configs[o].mesh] += one * (SimTime)b.M;
  }
  SimTime *per_device = g_new0(SimTime, ndev), bound = 0;
  for (int m = 0; m < nmeshes; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(strategy, m);
    for (int i = 0; i < mesh->ndevices; i++) {
      SimTime *d = &per_device[mesh->devices[i]];
      *d += per_mesh[m];
      bound = MAX(bound, *d);
    }
  }
  g_free(per_device);
  g_free(per_mesh);
  g_free(group);
  g_free(b.sample_tdim);
  return bound;
}
