/* sim/crossmesh steps — how one unit task moves its slice (paper §3.1), and the task graph.
 *
 * A unit expands to steps: point-to-point transfers, all-gathers, or one pipelined broadcast
 * chain; transfers, broadcast hops and all-gathers across hosts timed by costmodel's alpha-beta
 * on the intra-host link (both ends on one host) or the host's NICs (cm_group_link of two whole
 * hosts), all-gathers inside a host by NCCL's tuner model (costmodel/cm_nccl.h) as every
 * collective. Steps become tasks on the devices'
 * communication streams plus the link resources of sim_network.h that they use, so that they
 * contend with step-expanded collectives: a hop inside a host holds the sender's outgoing and
 * the receiver's incoming GPU port; a hop between hosts holds the egress side of every NIC of
 * the sending host and the ingress side of every NIC of the receiving one (the transfer is
 * striped over the host's NICs at their summed bandwidth; with one NIC per host, the paper's
 * setting, that is simply the NIC). */
#include "sim/sim-int.h"
#include "sim/sim_crossmesh-int.h"
#include "sim/sim_network.h"

#include <math.h>
#include <string.h>

static inline const CmLinkCost *hop_link(const SimCrossMeshPlan *p, int a, int b) {
  return cmx_host(p, a) == cmx_host(p, b) ? &p->intra : &p->nic;
}

static void push_step(GArray *steps, GArray *members, CmxStepKind kind, const int *devices, int n,
                      int dep_begin, int ndeps, gboolean delivers, double bytes, double seconds) {
  CmxStep s = {kind, (int)members->len, n, dep_begin, ndeps, delivers, bytes, seconds};
  g_array_append_vals(members, devices, (guint)n);
  g_array_append_val(steps, s);
}

static void push_p2p(const SimCrossMeshPlan *p, GArray *steps, GArray *members, int from, int to,
                     double bytes, gboolean delivers) {
  int pair[2] = {from, to};
  double t = cm_collective_time(CM_SEND_RECV, 2, bytes, hop_link(p, from, to));
  push_step(steps, members, CMX_STEP_P2P, pair, 2, 0, 0, delivers, bytes, t);
}

/* All-gather of @bytes (output per device) over @group (ascending ids, so the ring visits each
 * host once and leaves it over one NIC flow). Inside one host: NCCL's tuner model
 * (cm_nccl_tune), as every collective of a run is priced. Across hosts: the whole NIC, capped
 * by the intra-host link (AutoDDL Table 2 via cm_collective_time), since this step holds every
 * NIC of its hosts as a resource and contention is theirs to model, where NCCL's model would
 * give the group only its members' share of the NICs. */
static void push_all_gather(const SimCrossMeshPlan *p, GArray *steps, GArray *members,
                            const int *group, int n, int dep_begin, int ndeps, double bytes) {
  gboolean one_host = cmx_host(p, group[0]) == cmx_host(p, group[n - 1]);
  CmGroupShape shape = {n, 1, n, n};
  double t = !one_host ? cm_collective_time(CM_ALL_GATHER, n, bytes, &p->nic)
             : n > 1   ? cm_nccl_tune(CM_ALL_GATHER, &shape, &p->nccl, bytes, NULL, NULL, NULL)
                       : 0.0;
  push_step(steps, members, CMX_STEP_ALL_GATHER, group, n, dep_begin, ndeps, TRUE, bytes, t);
}

/* Pipelined broadcast along @chain (sender first), paper §3.1 "Broadcast based resharding": the
 * slice is cut into K chunks and every device forwards a chunk once it has it. With per-hop
 * chunk time c_h = alpha_h + (bytes / K) beta_h the last chunk arrives after
 * sum_h c_h + (K - 1) max_h c_h (the paper's t/K (K + A) when only its A inter-host hops count,
 * less the one chunk it rounds up). K is the value in 1..broadcast_chunks that minimises it:
 * the paper's K ~ 100 for large slices, fewer where latency would dominate. */
static double broadcast_seconds(const SimCrossMeshPlan *p, const int *chain, int n, double bytes) {
  double best = INFINITY;
  for (int k = 1; k <= p->options.broadcast_chunks; k++) {
    double chunk = bytes / k, sum = 0, slowest = 0;
    for (int h = 0; h + 1 < n; h++) {
      double c = cm_collective_time(CM_SEND_RECV, 2, chunk, hop_link(p, chain[h], chain[h + 1]));
      sum += c;
      slowest = MAX(slowest, c);
    }
    best = MIN(best, sum + (k - 1) * slowest);
  }
  return best;
}

void cmx_unit_steps(const SimCrossMeshPlan *p, const CmxUnit *u, int sender, GArray *steps,
                    GArray *members) {
  const int *recv = u->receivers;
  int nr = u->pub.nreceivers;
  double bytes = u->pub.bytes;
  switch (p->options.method) {
  case SIM_CROSSMESH_SEND_RECV:
    /* §3.1 "Send/recv": T^st(A, B) = A B t. */
    for (int i = 0; i < nr; i++) push_p2p(p, steps, members, sender, recv[i], bytes, TRUE);
    break;
  case SIM_CROSSMESH_LOCAL_ALLGATHER:
    /* §3.1 "Send/recv with local allgather": split into B parts, one to each of a host's B
     * receivers, then an all-gather inside the host: T^srla(A, B) = A t. */
    for (int i = 0; i < nr;) {
      int j = i;
      while (j < nr && cmx_host(p, recv[j]) == cmx_host(p, recv[i])) j++;
      int b = j - i;
      if (b == 1) {
        push_p2p(p, steps, members, sender, recv[i], bytes, TRUE);
      } else {
        int first = (int)steps->len;
        for (int k = i; k < j; k++) push_p2p(p, steps, members, sender, recv[k], bytes / b, FALSE);
        push_all_gather(p, steps, members, recv + i, b, first, b, bytes);
      }
      i = j;
    }
    break;
  case SIM_CROSSMESH_GLOBAL_ALLGATHER:
    /* §3.1 "Send/recv with global allgather": split over all |M| receivers, then one
     * all-gather across them: T^srga = 2t (ring: (p-1)/p t). */
    if (nr == 1) {
      push_p2p(p, steps, members, sender, recv[0], bytes, TRUE);
    } else {
      int first = (int)steps->len;
      for (int k = 0; k < nr; k++) push_p2p(p, steps, members, sender, recv[k], bytes / nr, FALSE);
      push_all_gather(p, steps, members, recv, nr, first, nr, bytes);
    }
    break;
  case SIM_CROSSMESH_BROADCAST: {
    /* The chain: the sender, the receivers on its own host, then the other hosts in order, so
     * it crosses into each receiver host once. */
    g_autofree int *chain = g_new(int, nr + 1);
    int n = 0, sh = cmx_host(p, sender);
    chain[n++] = sender;
    for (int i = 0; i < nr; i++)
      if (cmx_host(p, recv[i]) == sh) chain[n++] = recv[i];
    for (int i = 0; i < nr; i++)
      if (cmx_host(p, recv[i]) != sh) chain[n++] = recv[i];
    push_step(steps, members, CMX_STEP_BROADCAST, chain, n, 0, 0, TRUE, bytes,
              broadcast_seconds(p, chain, n, bytes));
    break;
  }
  default:
    g_assert_not_reached();
  }
}

static void add_resource(GArray *out, uint32_t r) {
  for (guint i = 0; i < out->len; i++)
    if (g_array_index(out, uint32_t, i) == r) return;
  g_array_append_val(out, r);
}

/* Link resources, in sim_network.h's layout (N devices): ports from sim_network_port_base
 * (+ 2d out, +1 in), NICs from sim_network_nic_base (+ 2 (host * nics + k) egress, +1
 * ingress). */
static inline uint32_t port(const SimCrossMeshPlan *p, int device, gboolean in) {
  return sim_network_port_base(p->num_devices) + (uint32_t)(2 * device + (in ? 1 : 0));
}

static void add_host_nics(const SimCrossMeshPlan *p, GArray *out, int host, gboolean ingress) {
  for (int k = 0; k < p->nics_per_node; k++)
    add_resource(out, sim_network_nic_base(p->num_devices) +
                          (uint32_t)(2 * (host * p->nics_per_node + k) + (ingress ? 1 : 0)));
}

static void add_hop(const SimCrossMeshPlan *p, GArray *out, int from, int to) {
  int a = cmx_host(p, from), b = cmx_host(p, to);
  if (a == b) {
    add_resource(out, port(p, from, FALSE));
    add_resource(out, port(p, to, TRUE));
  } else {
    add_host_nics(p, out, a, FALSE);
    add_host_nics(p, out, b, TRUE);
  }
}

gboolean cmx_resource_is_nic(const SimCrossMeshPlan *p, uint32_t resource) {
  return resource >= sim_network_nic_base(p->num_devices);
}

void cmx_step_resources(const SimCrossMeshPlan *p, const CmxStep *s, const int *members,
                        GArray *out) {
  const int *m = members + s->member_begin;
  for (int i = 0; i < s->nmembers; i++) add_resource(out, sim_resource_stream(m[i], SIM_STREAM_P2P));
  if (s->kind == CMX_STEP_ALL_GATHER) {
    /* The ring, members in order and back to the first. */
    for (int i = 0; i < s->nmembers; i++) add_hop(p, out, m[i], m[(i + 1) % s->nmembers]);
    return;
  }
  /* P2P and the broadcast chain: every hop. */
  for (int i = 0; i + 1 < s->nmembers; i++) add_hop(p, out, m[i], m[i + 1]);
}

double cmx_unit_seconds(const SimCrossMeshPlan *p, const CmxUnit *u, int sender) {
  g_autoptr(GArray) steps = g_array_new(FALSE, FALSE, sizeof(CmxStep));
  g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(int));
  g_autoptr(GArray) res = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g_autoptr(GArray) busy = g_array_new(FALSE, FALSE, sizeof(uint32_t));   /* resource ids */
  g_autoptr(GArray) free_at = g_array_new(FALSE, FALSE, sizeof(double));  /* parallel */
  cmx_unit_steps(p, u, sender, steps, members);
  g_autofree double *end = g_new(double, steps->len);
  double makespan = 0;
  /* List schedule in step order, as the engine does for a lone unit (all ready at 0). */
  for (guint j = 0; j < steps->len; j++) {
    const CmxStep *s = &g_array_index(steps, CmxStep, j);
    double start = 0;
    for (int k = 0; k < s->ndeps; k++) start = MAX(start, end[s->dep_begin + k]);
    g_array_set_size(res, 0);
    cmx_step_resources(p, s, (const int *)members->data, res);
    for (guint r = 0; r < res->len; r++)
      for (guint b = 0; b < busy->len; b++)
        if (g_array_index(busy, uint32_t, b) == g_array_index(res, uint32_t, r))
          start = MAX(start, g_array_index(free_at, double, b));
    end[j] = start + s->seconds;
    for (guint r = 0; r < res->len; r++) {
      guint b = 0;
      while (b < busy->len && g_array_index(busy, uint32_t, b) != g_array_index(res, uint32_t, r)) b++;
      if (b == busy->len) {
        g_array_append_val(busy, g_array_index(res, uint32_t, r));
        g_array_append_val(free_at, end[j]);
      } else {
        g_array_index(free_at, double, b) = end[j];
      }
    }
    makespan = MAX(makespan, end[j]);
  }
  return makespan;
}

/* Destination mesh index of receiver @device of @u. */
static int receiver_index(const CmxUnit *u, int device) {
  int lo = 0, hi = u->pub.nreceivers;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (u->receivers[mid] < device) lo = mid + 1;
    else hi = mid;
  }
  return lo < u->pub.nreceivers && u->receivers[lo] == device ? u->receiver_index[lo] : -1;
}

/* Calls @deliver(dst index) for each receiving member of a delivering step. */
static int step_deliveries(const CmxUnit *u, const CmxStep *s, const int *members, int *out) {
  int n = 0;
  if (!s->delivers) return 0;
  const int *m = members + s->member_begin;
  int first = s->kind == CMX_STEP_ALL_GATHER ? 0 : 1;  /* P2P and chain: skip the sender */
  for (int i = first; i < s->nmembers; i++) {
    int idx = receiver_index(u, m[i]);
    if (idx >= 0) out[n++] = idx;
  }
  return n;
}

static void add_edge_once(SimTaskGraph *g, GArray *preds, uint32_t from, uint32_t to) {
  if (from == SIM_CROSSMESH_NO_TASK) return;
  for (guint i = 0; i < preds->len; i++)
    if (g_array_index(preds, uint32_t, i) == from) return;
  g_array_append_val(preds, from);
  sim_task_graph_edge(g, from, to);
}

uint32_t sim_crossmesh_emit(const SimCrossMeshPlan *p, SimTaskGraph *graph, const SimTask *tag,
                            const uint32_t *src_ready, uint32_t *dst_ready) {
  g_return_val_if_fail(p && graph && dst_ready && graph->edges, 0);
  g_return_val_if_fail(graph->num_devices == p->num_devices, 0);
  int nics = 2 * p->nodes * p->nics_per_node;
  g_return_val_if_fail(graph->num_resources >= (int)sim_network_nic_base(p->num_devices) + nics, 0);
  uint32_t first_task = sim_task_graph_size(graph);
  SimTask proto;
  if (tag) {
    proto = *tag;
  } else {
    memset(&proto, 0, sizeof proto);
    proto.kind = SIM_TASK_COMM;
    proto.op = proto.tensor = proto.microbatch = -1;
  }
  g_autofree uint32_t *nic_last = g_new(uint32_t, nics);
  for (int i = 0; i < nics; i++) nic_last[i] = SIM_CROSSMESH_NO_TASK;
  /* Tasks each destination waits for, as (dst index, task) pairs in emission order. */
  g_autoptr(GArray) delivered = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g_autoptr(GArray) steps = g_array_new(FALSE, FALSE, sizeof(CmxStep));
  g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(int));
  g_autoptr(GArray) res = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g_autoptr(GArray) preds = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g_autofree int *to = g_new(int, p->dst_ndevices);

  for (int o = 0; o < p->nunits; o++) {
    const CmxUnit *u = &p->units[p->order[o]];
    int sender_index = -1;
    for (int j = 0; j < u->pub.nholders; j++)
      if (u->holders[j] == u->pub.sender) sender_index = u->holder_index[j];
    uint32_t ready = src_ready ? src_ready[sender_index] : SIM_CROSSMESH_NO_TASK;
    g_array_set_size(steps, 0);
    g_array_set_size(members, 0);
    g_array_set_size(ids, 0);
    cmx_unit_steps(p, u, u->pub.sender, steps, members);
    for (guint j = 0; j < steps->len; j++) {
      const CmxStep *s = &g_array_index(steps, CmxStep, j);
      g_array_set_size(res, 0);
      cmx_step_resources(p, s, (const int *)members->data, res);
      SimTask t = proto;
      t.duration = sim_time_from_seconds(s->seconds);
      t.collective = s->kind == CMX_STEP_ALL_GATHER ? CM_ALL_GATHER
                     : s->kind == CMX_STEP_BROADCAST ? CM_BROADCAST : CM_SEND_RECV;
      t.bytes = (float)s->bytes;
      t.group_size = (uint32_t)s->nmembers;
      t.link = DEV_LINK_INTRA;
      for (guint r = 0; r < res->len; r++)
        if (cmx_resource_is_nic(p, g_array_index(res, uint32_t, r))) t.link = DEV_LINK_INTER;
      t.role = SIM_ROLE_WHOLE;
      uint32_t id = sim_task_graph_add(graph, &t, (const uint32_t *)res->data, (int)res->len);
      g_array_append_val(ids, id);
      g_array_set_size(preds, 0);
      if (s->ndeps == 0) add_edge_once(graph, preds, ready, id);
      for (int k = 0; k < s->ndeps; k++)
        add_edge_once(graph, preds, g_array_index(ids, uint32_t, s->dep_begin + k), id);
      /* One execution order per host NIC: the plan's (paper §3.2). */
      for (guint r = 0; r < res->len; r++) {
        uint32_t rid = g_array_index(res, uint32_t, r);
        if (!cmx_resource_is_nic(p, rid)) continue;
        uint32_t *last = &nic_last[rid - sim_network_nic_base(p->num_devices)];
        add_edge_once(graph, preds, *last, id);
        *last = id;
      }
      int n = step_deliveries(u, s, (const int *)members->data, to);
      for (int k = 0; k < n; k++) {
        uint32_t pair[2] = {(uint32_t)to[k], id};
        g_array_append_vals(delivered, pair, 2);
      }
    }
  }

  /* Per destination: its deliveries, plus its own source readiness where it copied locally. */
  g_autofree uint32_t *count = g_new0(uint32_t, p->dst_ndevices);
  g_autofree uint32_t *last = g_new(uint32_t, p->dst_ndevices);
  for (int i = 0; i < p->dst_ndevices; i++) {
    last[i] = SIM_CROSSMESH_NO_TASK;
    if (p->dst_local[i] >= 0 && src_ready && src_ready[p->dst_local[i]] != SIM_CROSSMESH_NO_TASK) {
      count[i]++;
      last[i] = src_ready[p->dst_local[i]];
    }
  }
  for (guint k = 0; k < delivered->len; k += 2) {
    uint32_t idx = g_array_index(delivered, uint32_t, k);
    count[idx]++;
    last[idx] = g_array_index(delivered, uint32_t, k + 1);
  }
  for (int i = 0; i < p->dst_ndevices; i++) {
    dst_ready[i] = last[i];
    if (count[i] <= 1) continue;
    SimTask t = proto;
    t.duration = 0;
    t.collective = CM_SEND_RECV;
    t.bytes = 0;
    t.group_size = 1;
    t.role = SIM_ROLE_JOIN;  /* a zero-time marker: traces and explain skip it */
    uint32_t comm = sim_resource_stream(p->dst_devices[i], SIM_STREAM_P2P);
    uint32_t join = sim_task_graph_add(graph, &t, &comm, 1);
    g_array_set_size(preds, 0);
    if (p->dst_local[i] >= 0 && src_ready)
      add_edge_once(graph, preds, src_ready[p->dst_local[i]], join);
    for (guint k = 0; k < delivered->len; k += 2)
      if (g_array_index(delivered, uint32_t, k) == (uint32_t)i)
        add_edge_once(graph, preds, g_array_index(delivered, uint32_t, k + 1), join);
    dst_ready[i] = join;
  }
  return sim_task_graph_size(graph) - first_task;
}

SimCrossMeshStats sim_crossmesh_plan_stats(const SimCrossMeshPlan *p) {
  SimCrossMeshStats st = {0};
  st.units = p->nunits;
  g_autoptr(GArray) steps = g_array_new(FALSE, FALSE, sizeof(CmxStep));
  g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(int));
  g_autofree int *count = g_new0(int, p->dst_ndevices);
  g_autofree int *to = g_new(int, p->dst_ndevices);
  for (int i = 0; i < p->dst_ndevices; i++) count[i] = p->dst_local[i] >= 0;
  for (int o = 0; o < p->nunits; o++) {
    const CmxUnit *u = &p->units[p->order[o]];
    g_array_set_size(steps, 0);
    g_array_set_size(members, 0);
    cmx_unit_steps(p, u, u->pub.sender, steps, members);
    st.transfer_tasks += (int)steps->len;
    for (guint j = 0; j < steps->len; j++) {
      const CmxStep *s = &g_array_index(steps, CmxStep, j);
      const int *m = (const int *)members->data + s->member_begin;
      if (s->kind == CMX_STEP_ALL_GATHER) {
        /* Ring: every member sends (p-1)/p of the output; one flow leaves each host. */
        int hosts = 1;
        for (int i = 1; i < s->nmembers; i++) hosts += cmx_host(p, m[i]) != cmx_host(p, m[i - 1]);
        double per_edge = (s->nmembers - 1.0) / s->nmembers * s->bytes;
        int crossing = hosts > 1 ? hosts : 0;
        st.inter_host_bytes += crossing * per_edge;
        st.intra_host_bytes += (s->nmembers - crossing) * per_edge;
      } else {
        for (int i = 0; i + 1 < s->nmembers; i++) {
          if (cmx_host(p, m[i]) != cmx_host(p, m[i + 1])) st.inter_host_bytes += s->bytes;
          else st.intra_host_bytes += s->bytes;
        }
      }
      int n = step_deliveries(u, s, (const int *)members->data, to);
      for (int k = 0; k < n; k++) count[to[k]]++;
    }
  }
  for (int i = 0; i < p->dst_ndevices; i++) st.join_tasks += count[i] > 1;
  return st;
}

double sim_crossmesh_estimate(const SimCrossMeshPlan *p) {
  SimTaskGraph *g = sim_task_graph_new(p->num_devices);
  g->num_resources = (int)sim_network_nic_base(p->num_devices) + 2 * p->nodes * p->nics_per_node;
  g_autofree uint32_t *dst_ready = g_new(uint32_t, p->dst_ndevices);
  sim_crossmesh_emit(p, g, NULL, NULL, dst_ready);
  sim_task_graph_finish(g);
  SimSchedule *s = sim_engine_run(g, NULL);
  g_assert(s);  /* emit adds edges forward only: no cycle */
  double makespan = sim_time_seconds(s->makespan);
  sim_schedule_free(s);
  sim_task_graph_free(g);
  return makespan;
}
