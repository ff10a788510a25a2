/* sim/crossmesh — cross-mesh resharding: moving a tensor from one device mesh and SBP layout to
 * another mesh and layout (Zhuang et al., "On Optimizing the Communication of Model
 * Parallelism", MLSys 2023; model in sim/CROSSMESH.md).
 *
 * A plan decomposes the resharding into unit tasks (paper §2.2, App. B.2): one per unique slice
 * of the tensor — the cells of the product of the source and destination tilings — each held by
 * one or more source devices (replicas give a choice of sender) and needed by a set of
 * destination devices. Each unit is carried by one communication method (paper §3.1): send/recv,
 * send + local all-gather, send + global all-gather, or the pipelined broadcast chain. The plan
 * picks each unit's sender host and a global order of the units with one load-balancing
 * algorithm (paper §3.2): naive, greedy load balance, DFS with pruning, randomized greedy, or
 * the ensemble of the last two that the paper's AlpaComm runs (§5.3.1).
 *
 * Time: every transfer is costed with costmodel's alpha-beta (cm_group_link,
 * cm_collective_time). Tasks run on the devices' communication streams and hold the link
 * resources of sim_network.h they use: GPU ports for hops inside a host, the NICs of both hosts
 * for hops between hosts (egress and ingress sides: full duplex, paper §3 "Communication
 * bottleneck at hosts"), so concurrent sends from one host serialise and cross-mesh traffic
 * contends with step-expanded collectives. A transfer between hosts is striped over all of a
 * host's NICs at their summed bandwidth (cm_group_link of two whole hosts; over the cluster's
 * oversubscription).
 *
 * Invariants of a plan: every destination device receives every element of its tile exactly once
 * (from a unit, or locally where it already holds the slice as a source device); each unit's
 * sender holds its slice; the order is a permutation of the units.
 * A plan owns all its memory and borrows nothing: it may outlive the cluster and meshes it was
 * built from. Plans are read-only after sim_crossmesh_plan_new; safe to share across threads.
 */
#ifndef STRATSIM_SIM_CROSSMESH_H
#define STRATSIM_SIM_CROSSMESH_H

#include <glib.h>
#include <stdint.h>
#include "sim/sim.h"

G_BEGIN_DECLS

#define SIM_CROSSMESH_NO_TASK UINT32_MAX

/* How one unit task moves its slice (paper §3.1, Fig. 3). */
typedef enum {
  SIM_CROSSMESH_SEND_RECV,        /* the sender sends the whole slice to every receiver */
  SIM_CROSSMESH_LOCAL_ALLGATHER,  /* per receiver host: slice/B to each of its B receivers,
                                     then an all-gather among them (inside the host) */
  SIM_CROSSMESH_GLOBAL_ALLGATHER, /* slice/|M| to each of the |M| receivers, then one
                                     all-gather across all of them (Alpa's resharding) */
  SIM_CROSSMESH_BROADCAST,        /* pipelined chain sender -> receivers, K chunks (AlpaComm) */
  SIM_CROSSMESH_METHOD_COUNT
} SimCrossMeshMethod;

/* How senders are chosen and units ordered (paper §3.2, §5.3.1). */
typedef enum {
  SIM_CROSSMESH_NAIVE,             /* lowest-indexed holder, units in slice order */
  SIM_CROSSMESH_GREEDY,            /* "load balance only": LPT over sender hosts (Eq. 4) */
  SIM_CROSSMESH_DFS,               /* depth-first search over senders and order, pruned */
  SIM_CROSSMESH_RANDOMIZED_GREEDY, /* rounds of random maximal non-overlapping sets */
  SIM_CROSSMESH_ENSEMBLE,          /* DFS and randomized greedy, the better (AlpaComm) */
  SIM_CROSSMESH_ORDER_COUNT
} SimCrossMeshOrder;

/* "send_recv", "local_allgather", "global_allgather", "broadcast". */
const char *sim_crossmesh_method_name(SimCrossMeshMethod method);
gboolean sim_crossmesh_method_parse(const char *text, SimCrossMeshMethod *out);
/* "naive", "greedy", "dfs", "randomized_greedy", "ensemble". */
const char *sim_crossmesh_order_name(SimCrossMeshOrder order);
gboolean sim_crossmesh_order_parse(const char *text, SimCrossMeshOrder *out);

/* Parses a layout in the paper's notation (Table 2): one token per tensor dim, `R` (replicated)
 * or `S` and the mesh axes the dim is split over, `S0`, `S01` (also written `S^0`, `S^{01}`),
 * e.g. "RS01R". @mesh_ndims: the mesh's axes. Sets *@layout per mesh axis (Split(tensor dim) or
 * Broadcast) and *@ndims to the tokens read (the tensor's dims). FALSE with @error
 * (MDL_ERROR_PARSE) for another character, an axis outside the mesh or used twice, or more
 * than MDL_MAX_DIMS tokens. */
gboolean sim_crossmesh_layout_parse(const char *text, int mesh_ndims, MdlLayout *layout,
                                    int *ndims, GError **error);

typedef struct {
  SimCrossMeshMethod method;
  SimCrossMeshOrder order;
  guint64 seed;               /* randomized greedy's GRand seed: same seed, same plan */
  int broadcast_chunks;       /* most chunks K of the broadcast pipeline; the plan takes the K
                                 in 1..this that minimises the chain's time (paper §3.1:
                                 K ~ 100 in its experiments) */
  int randomized_trials;      /* random orderings tried per round of randomized greedy */
  guint64 dfs_node_budget;    /* search-tree children DFS may cost before it returns its best */
} SimCrossMeshOptions;

/* Defaults: broadcast, ensemble, seed 1, 100 chunks, 32 trials, 200000 DFS nodes. */
void sim_crossmesh_options_init(SimCrossMeshOptions *options);

/* One unit task (paper §2.2): a unique slice, its holders and the devices that need it. */
typedef struct {
  int64_t lo[MDL_MAX_DIMS];   /* the slice: [lo, hi) per tensor dim */
  int64_t hi[MDL_MAX_DIMS];
  double bytes;               /* elements * elem_bytes */
  const int *holders;         /* source devices (cluster ids, ascending) holding the slice */
  int nholders;               /* > 1: replicas, a choice of sender */
  const int *receivers;       /* destination devices (cluster ids, ascending) needing it, less
                                 any that hold it already as source devices */
  int nreceivers;
  int sender;                 /* the holder the plan chose */
  double duration;            /* T_i: seconds the unit takes alone from its sender (§3.2) */
} SimCrossMeshUnit;

typedef struct SimCrossMeshPlan SimCrossMeshPlan;

/* Plans moving a tensor of shape @tensor_shape (@ndims dims, @elem_bytes per element) from
 * @src_mesh under @src_layout to @dst_mesh under @dst_layout on @cluster. Layouts are per mesh
 * axis (MdlLayout): Split(tensor dim) or Broadcast; a tensor dim split on several axes is
 * tiled row-major over them (the first axis major, like GSPMD's S^{01}). A dim of length l split
 * k ways is cut into tiles of ceil(l / k), the last one short (the paper pads, §5.1.2 case 6; we
 * send no padding). The meshes may share devices: a destination device that holds part of its
 * tile as a source device copies it locally at no cost. @options NULL takes the defaults.
 * Returns a new plan (free with sim_crossmesh_plan_free) or NULL with @error set
 * (MDL_ERROR_INVALID): a Partial layout (reduce before moving), a split of a dim the tensor
 * lacks, a bad shape or element size, a mesh device outside the cluster. */
SimCrossMeshPlan *sim_crossmesh_plan_new(const DevCluster *cluster, const MdlMesh *src_mesh,
                                         MdlLayout src_layout, const MdlMesh *dst_mesh,
                                         MdlLayout dst_layout, const int64_t *tensor_shape,
                                         int ndims, double elem_bytes,
                                         const SimCrossMeshOptions *options, GError **error);
void sim_crossmesh_plan_free(SimCrossMeshPlan *plan);

/* The plan's options (as given, defaults filled in). */
const SimCrossMeshOptions *sim_crossmesh_plan_options(const SimCrossMeshPlan *plan);
/* Unit tasks, in slice order (row-major over the slices' tensor coordinates). The returned
 * pointers belong to the plan. */
int sim_crossmesh_plan_num_units(const SimCrossMeshPlan *plan);
const SimCrossMeshUnit *sim_crossmesh_plan_unit(const SimCrossMeshPlan *plan, int i);
/* The units' execution order chosen by the load balancer: a permutation of 0..n-1 (the
 * plan's). */
const uint32_t *sim_crossmesh_plan_order(const SimCrossMeshPlan *plan);
/* The load balancer's objective for the chosen senders and order, paper §3.2 Eq. 1: the
 * completion time of the last unit when each unit i takes T_i on its sender host and its
 * receiver hosts, and starts once every earlier unit on those hosts has ended (Eq. 3: units with
 * the same sender host or a common receiver host do not overlap). Seconds. */
double sim_crossmesh_plan_cost(const SimCrossMeshPlan *plan);

typedef struct {
  int units;
  int transfer_tasks;         /* tasks sim_crossmesh_emit adds, not counting joins */
  int join_tasks;             /* zero-time joins for destinations fed by several tasks (a
                                 local copy counts as one when its source has a ready task) */
  double inter_host_bytes;    /* bytes crossing host NICs (once per hop) */
  double intra_host_bytes;    /* bytes over intra-host links */
} SimCrossMeshStats;

SimCrossMeshStats sim_crossmesh_plan_stats(const SimCrossMeshPlan *plan);

/* Resources: the task graph's sim_stream_resources(num_devices) device streams, then
 * sim_network.h's link resources (GPU ports, NICs). A graph that receives cross-mesh tasks
 * must have num_resources >= sim_network_num_resources(cluster) =
 * sim_stream_resources(num_devices) + sim_crossmesh_extra_resources(cluster): enlarge
 * graph->num_resources after
 * sim_task_graph_new (step-expanded graphs already have them). */
int sim_crossmesh_extra_resources(const DevCluster *cluster);
/* NIC @nic (0..nics_per_node-1) of @host, its egress side or (@ingress) its ingress side. */
uint32_t sim_crossmesh_resource_nic(const DevCluster *cluster, int host, int nic,
                                    gboolean ingress);

/* Adds the plan's tasks to @graph (not yet finished; built for the plan's cluster, resources
 * enlarged as above): per unit, in the plan's order, its transfers and collectives on the
 * pipeline streams (SIM_STREAM_P2P) of the devices involved and the link resources
 * (GPU ports, NICs) they use. Edges: every task that reads the sender's data waits for
 * @src_ready[source mesh index of the sender] (NULL, or SIM_CROSSMESH_NO_TASK entries: ready at
 * once); a unit's all-gather waits for its scatter; tasks on the same NIC follow the plan's
 * order (paper §3.2: one execution order per host). New tasks copy @tag (kind, op, tensor,
 * microbatch, phase, ...; NULL: SIM_TASK_COMM with op, tensor, microbatch -1) and set
 * duration, collective (CM_SEND_RECV, CM_ALL_GATHER, or CM_BROADCAST for a chain), bytes,
 * group_size, link (inter-host if it holds a NIC) and role (SIM_ROLE_WHOLE; joins
 * SIM_ROLE_JOIN).
 * On return @dst_ready[destination mesh index] is the task after which that device holds its
 * whole tile: the one task that delivered it, or a zero-time join on its communication stream
 * that waits for all of them (and for the device's own @src_ready where it copied slices
 * locally); SIM_CROSSMESH_NO_TASK when it needs nothing. Returns the number of tasks added. */
uint32_t sim_crossmesh_emit(const SimCrossMeshPlan *plan, SimTaskGraph *graph, const SimTask *tag,
                            const uint32_t *src_ready, uint32_t *dst_ready);

/* The plan's makespan in seconds when simulated alone: builds a task graph with
 * sim_crossmesh_emit (all sources ready at time 0) and runs sim_engine_run on it. Device-level
 * timing: with the meshes on disjoint hosts, at most the Eq. 1 cost (less where a unit's
 * intra-host all-gather overlaps the next unit's network transfer); where they share hosts or
 * devices it may exceed it (a stream, port or NIC busy on both sides, which Eq. 3 ignores). */
double sim_crossmesh_estimate(const SimCrossMeshPlan *plan);

G_END_DECLS

#endif
