/* sim/network — link resources and step-expanded collectives; see sim_network.h. */
#include "sim/sim-int.h"
#include "sim/sim_network.h"

int sim_network_num_resources(const DevCluster *c) {
  int n = dev_cluster_num_devices(c);
  return (int)sim_network_nic_base(n) + 2 * c->nodes * c->nics_per_node;
}

static inline uint32_t port_out(int n, int d) { return sim_network_port_base(n) + (uint32_t)(2 * d); }

static inline uint32_t nic_out(const DevCluster *c, int n, int d) {
  int node = d / c->gpus_per_node;
  int k = (d % c->gpus_per_node) * c->nics_per_node / c->gpus_per_node;
  return sim_network_nic_base(n) + (uint32_t)(2 * (node * c->nics_per_node + k));
}

gboolean sim_network_supports(CmCollective kind) {
  return kind == CM_ALL_REDUCE || kind == CM_ALL_GATHER || kind == CM_REDUCE_SCATTER ||
         kind == CM_ALL_TO_ALL || kind == CM_SEND_RECV;
}

gboolean sim_network_foldable(const DevCluster *c, gboolean overlap) {
  return overlap && c->nics_per_node >= c->gpus_per_node;
}

gboolean sim_network_group_foldable(const DevCluster *c, const int *devices, int p) {
  int hosts = 1;
  for (int i = 1; i < p; i++) {
    int node = dev_cluster_node_of(c, devices[i]), seen = 0;
    for (int j = 0; j < i; j++) seen += dev_cluster_node_of(c, devices[j]) == node;
    hosts += seen == 0;
  }
  return hosts == 1 || hosts == p;
}

gboolean sim_network_groups_alike(const DevCluster *c, const int *a, const int *b, int p) {
  for (int i = 0; i < p; i++)
    for (int j = i + 1; j < p; j++)
      if ((dev_cluster_node_of(c, a[i]) == dev_cluster_node_of(c, a[j])) !=
          (dev_cluster_node_of(c, b[i]) == dev_cluster_node_of(c, b[j])))
        return FALSE;
  return TRUE;
}

typedef struct {
  SimTaskGraph *g;
  const DevCluster *c;
  const SimTask *proto;
  int n;
  gboolean block_compute;
  SimStream stream;            /* the members' stream the gate and join occupy */
  const CmNcclRingSteps *ring; /* NCCL's ring figures, or NULL: the links' own */
} Expander;

/* One transfer of @bytes from device @src to @dst after the tasks in @deps, timed by the link
 * between them; its receiving side (ingress port or NIC, compute stream) is @dst's, or under
 * symmetry @sink's: the representative whose replica @dst is (sim_network_expand). */
static uint32_t transfer(const Expander *x, int src, int dst, int sink, double bytes,
                         const uint32_t *deps, int ndeps) {
  const DevCluster *c = x->c;
  gboolean same_host = dev_cluster_node_of(c, src) == dev_cluster_node_of(c, dst);
  const DevLink *link = &c->link[same_host ? DEV_LINK_INTRA : DEV_LINK_INTER];
  double bw = same_host ? link->bandwidth : link->bandwidth / c->oversubscription;
  uint32_t res[4] = {0, 0, sim_resource_compute(src), sim_resource_compute(sink)};
  if (same_host) {
    res[0] = port_out(x->n, src);
    res[1] = port_out(x->n, sink) + 1;
  } else {
    res[0] = nic_out(c, x->n, src);
    res[1] = nic_out(c, x->n, sink) + 1;
  }
  SimTask t = *x->proto;
  t.role = SIM_ROLE_TRANSFER;
  t.link = (uint8_t)(same_host ? DEV_LINK_INTRA : DEV_LINK_INTER);
  t.bytes = (float)bytes;
  double latency = link->latency;
  if (x->ring) {
    latency = x->ring->step_latency_s[t.link];
    bw *= x->ring->efficiency[t.link];
  }
  t.duration = sim_time_from_seconds(latency + bytes / bw);
  uint32_t id = sim_task_graph_add(x->g, &t, res, x->block_compute ? (sink == src ? 3 : 4) : 2);
  for (int i = 0; i < ndeps; i++)
    if (i == 0 || deps[i] != deps[i - 1]) sim_task_graph_edge(x->g, deps[i], id);
  return id;
}

static uint32_t marker(const Expander *x, SimTaskRole role, const int *devices, int p,
                       const gboolean *simulated, double seconds) {
  uint32_t stack[64] = {0};
  uint32_t *res = p <= 64 ? stack : g_new(uint32_t, p);
  int nres = 0;
  for (int i = 0; i < p; i++)
    if (simulated[i]) res[nres++] = sim_resource_stream(devices[i], x->stream);
  SimTask t = *x->proto;
  t.role = (uint8_t)role;
  t.duration = sim_time_from_seconds(seconds);
  uint32_t id = sim_task_graph_add(x->g, &t, res, nres);
  if (res != stack) g_free(res);
  return id;
}

SimCollectiveSpan sim_network_expand(SimTaskGraph *g, const DevCluster *c, const SimTask *proto,
                                     CmCollective kind, const int *devices, int p,
                                     const gboolean *simulated, double bytes,
                                     gboolean block_compute, SimStream stream,
                                     const CmNcclRingSteps *ring) {
  Expander x = {g, c, proto, dev_cluster_num_devices(c), block_compute, stream, ring};
  SimCollectiveSpan span;
  /* NCCL's base latency, paid once per collective, on the gate. */
  span.gate = marker(&x, SIM_ROLE_GATE, devices, p, simulated, ring ? ring->base_latency_s : 0.0);
  int nsim = 0, rep = 0;
  for (int i = 0; i < p; i++)
    if (simulated[i]) nsim++, rep = i;
  g_return_val_if_fail(nsim == p || nsim == 1, span);
  int steps;
  double chunk = bytes / p;
  switch (kind) {
  case CM_ALL_REDUCE: steps = 2 * (p - 1); break;
  case CM_ALL_GATHER:
  case CM_REDUCE_SCATTER:
  case CM_ALL_TO_ALL: steps = p - 1; break;
  default: steps = 1, chunk = bytes; break; /* send/recv: member 0 to member 1 */
  }
  g_autofree uint32_t *last_send = g_new(uint32_t, p), *last_recv = g_new(uint32_t, p);
  for (int i = 0; i < p; i++) last_send[i] = last_recv[i] = span.gate;
  if (kind == CM_SEND_RECV) {
    uint32_t t = transfer(&x, devices[0], devices[1], devices[1], chunk, &span.gate, 1);
    last_send[0] = last_recv[1] = t;
  } else if (nsim == 1 && p > 1) {
    /* Symmetric: every member sends and receives as the representative does, each step after
     * the previous one (the chunk it forwards arrived at the same time as its own step ended).
     * The member a transfer reaches is a replica of the representative: the representative's
     * ingress receives it, in place of the transfer its predecessor sends it, which is not
     * built (sim_network_group_foldable). */
    for (int s = 0; s < steps; s++) {
      int dst = kind == CM_ALL_TO_ALL ? (rep + s + 1) % p : (rep + 1) % p;
      last_send[rep] =
          transfer(&x, devices[rep], devices[dst], devices[rep], chunk, &last_send[rep], 1);
    }
    last_recv[rep] = last_send[rep];
  } else {
    g_autofree uint32_t *sent = g_new(uint32_t, p);
    for (int s = 0; s < steps; s++) {
      for (int i = 0; i < p; i++) {
        int dst = kind == CM_ALL_TO_ALL ? (i + s + 1) % p : (i + 1) % p;
        /* A ring step forwards the chunk received at the previous step; all-to-all rounds
         * only follow the sender's previous round. */
        uint32_t deps[2] = {last_send[i], kind == CM_ALL_TO_ALL ? last_send[i] : last_recv[i]};
        sent[i] = transfer(&x, devices[i], devices[dst], devices[dst], chunk, deps, 2);
      }
      for (int i = 0; i < p; i++) {
        int dst = kind == CM_ALL_TO_ALL ? (i + s + 1) % p : (i + 1) % p;
        last_send[i] = sent[i];
        last_recv[dst] = sent[i];
      }
    }
  }
  span.join = marker(&x, SIM_ROLE_JOIN, devices, p, simulated, 0.0);
  for (int i = 0; i < p; i++) {
    if (last_send[i] != span.gate) sim_task_graph_edge(g, last_send[i], span.join);
    if (last_recv[i] != span.gate && last_recv[i] != last_send[i])
      sim_task_graph_edge(g, last_recv[i], span.join);
  }
  if (steps == 0 || p <= 1) sim_task_graph_edge(g, span.gate, span.join);
  uint32_t pair[2] = {span.gate, span.join};
  g_array_append_vals(g->spans, pair, 2);
  return span;
}

char *sim_network_resource_name(const DevCluster *c, uint32_t r) {
  int n = dev_cluster_num_devices(c);
  if (r < sim_network_port_base(n))
    return g_strdup_printf("GPU %d %s", sim_resource_device(r), sim_stream_name(sim_resource_stream_of(r)));
  if (r < sim_network_nic_base(n)) {
    uint32_t k = r - sim_network_port_base(n);
    return g_strdup_printf("GPU %u port %s", k / 2, k % 2 ? "in" : "out");
  }
  uint32_t k = r - sim_network_nic_base(n), nic = k / 2;
  return g_strdup_printf("node %u NIC %u %s", nic / (uint32_t)c->nics_per_node,
                         nic % (uint32_t)c->nics_per_node, k % 2 ? "in" : "out");
}

SimTaskGraph *sim_network_collective_graph(const DevCluster *c, CmCollective kind,
                                           const int *devices, int p, const gboolean *simulated,
                                           double bytes) {
  SimTaskGraph *g = sim_task_graph_new(dev_cluster_num_devices(c));
  g->num_resources = sim_network_num_resources(c);
  SimTask proto = {0};
  proto.kind = SIM_TASK_COMM;
  proto.collective = (uint8_t)kind;
  proto.op = proto.tensor = proto.microbatch = -1;
  proto.group_size = (uint32_t)p;
  CmGroupShape shape;
  CmNcclRingSteps ring;
  cm_group_shape(c, devices, p, &shape);
  gboolean nccl = cm_nccl_ring_steps(kind, &shape, c, bytes, &ring);
  sim_network_expand(g, c, &proto, kind, devices, p, simulated, bytes, FALSE,
                     kind == CM_SEND_RECV ? SIM_STREAM_P2P : SIM_STREAM_COMM, nccl ? &ring : NULL);
  sim_task_graph_finish(g);
  return g;
}
