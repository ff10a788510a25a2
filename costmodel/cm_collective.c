/* costmodel/collective — alpha-beta collective times (AutoDDL Table 2) and the link class and
 * effective bandwidth of a device group. */
#include "costmodel/costmodel.h"

static const char *const collective_names[CM_COLLECTIVE_COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"};

const char *cm_collective_name(CmCollective kind) {
  g_return_val_if_fail(kind < CM_COLLECTIVE_COUNT, "?");
  return collective_names[kind];
}

CmLinkCost cm_group_link(const DevCluster *cluster, const int *devices, int n) {
  CmLinkCost cost;
  const DevLink *intra = &cluster->link[DEV_LINK_INTRA];
  const DevLink *inter = &cluster->link[DEV_LINK_INTER];
  int first_node = dev_cluster_node_of(cluster, devices[0]);
  int on_first = 0;
  gboolean spans = FALSE;
  for (int i = 0; i < n; i++) {
    int node = dev_cluster_node_of(cluster, devices[i]);
    if (node != first_node) spans = TRUE;
    else on_first++;
  }
  if (!spans) {
    cost.alpha = intra->latency;
    cost.beta = 1.0 / intra->bandwidth;
    cost.link = DEV_LINK_INTRA;
    return cost;
  }
  /* Members per host: groups of a symmetric strategy have the same count on every host. */
  double share = cluster->nics_per_node * inter->bandwidth * on_first / cluster->gpus_per_node;
  double bw = share < intra->bandwidth ? share : intra->bandwidth;
  cost.alpha = inter->latency;
  cost.beta = 1.0 / bw;
  cost.link = DEV_LINK_INTER;
  return cost;
}

double cm_collective_time(CmCollective kind, int p, double bytes, const CmLinkCost *link) {
  if (kind != CM_SEND_RECV && p <= 1) return 0.0;
  double a = link->alpha, b = link->beta;
  switch (kind) {
  case CM_ALL_REDUCE:
    return (2.0 * p - 1.0) * a + 2.0 * (p - 1.0) / p * bytes * b;
  case CM_ALL_GATHER:
  case CM_REDUCE_SCATTER:
    return (p - 1.0) * a + (p - 1.0) / p * bytes * b;
  case CM_ALL_TO_ALL:
    return (p - 1.0) * a + bytes * b;
  case CM_SEND_RECV:
    return a + bytes * b;
  default:
    g_return_val_if_reached(0.0);
  }
}
