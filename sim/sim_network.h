/* sim/network — link resources and step-expanded collectives (contention).
 *
 * Resources beyond the per-device streams (sim.h): every GPU has an outgoing and an incoming
 * link port (NVLink/NVSwitch/PCIe, full duplex), every host nics_per_node NICs with an egress
 * and an ingress side; GPU d uses NIC (d mod gpus_per_node) * nics / gpus_per_node of its host
 * (GPU-NIC affinity as in DGX systems). Layout, N = devices, S = SIM_STREAMS: [0, SN) streams,
 * [SN, SN + 2N) ports (SN + 2d out, +1 in), [SN + 2N, SN + 2N + 2 * nodes * nics) NICs.
 * Every stream's transfers queue on the same ports and NICs: concurrent collectives of
 * different streams (a gradient bucket and a pipeline send) share a link transfer by transfer.
 *
 * Step-expanded mode turns a collective into its algorithm's transfers: ring all-reduce
 * 2(p-1) steps, ring all-gather and reduce-scatter p-1 steps, of n/p bytes from each member to
 * its successor; pairwise all-to-all p-1 steps, member i to i+k at step k; send/recv one
 * transfer. A transfer takes alpha + bytes / bandwidth of its link (inter-host bandwidth
 * divided by the cluster's oversubscription) and occupies the sender's out side and the
 * receiver's in side, so concurrent collectives and transfers on shared ports and NICs queue
 * (FIFO, FlexFlow A2-A3 at transfer granularity). A ring step waits for the chunk received at
 * the previous step. Ring all-reduce, all-gather and reduce-scatter take NCCL's ring figures
 * (cm_nccl_ring_steps: the protocol NCCL's tuner gives the ring at that size, its base latency
 * on the gate, its per-step latency and the fraction of line rate it reaches), so an
 * uncontended ring inside one host takes cm_nccl_time of the ring, up to the rounding of each
 * step to picoseconds; across hosts the step mode sees each NIC on its own (and leaves out
 * NCCL's ring plateau factor), so it differs from the task mode there.
 * Collectives are bracketed by zero-duration gate and join tasks on the members'
 * communication streams (their class's SimStream): the gate waits for the inputs, the join is
 * the completion. */
#ifndef STRATSIM_SIM_NETWORK_H
#define STRATSIM_SIM_NETWORK_H

#include "costmodel/cm_nccl.h"
#include "sim/sim.h"

G_BEGIN_DECLS

/* Resources a task graph needs in step-expanded mode. */
int sim_network_num_resources(const DevCluster *cluster);
/* Where the link resources of a cluster of @devices start: GPU ports, then NICs. */
static inline uint32_t sim_network_port_base(int devices) { return sim_stream_resources(devices); }
static inline uint32_t sim_network_nic_base(int devices) {
  return sim_stream_resources(devices) + 2 * (uint32_t)devices;
}

/* Whether @kind has a step-expanded algorithm (else it stays one task). */
gboolean sim_network_supports(CmCollective kind);

/* Symmetry in step mode (sim_build_symmetry.c folds a mesh's replicas only when these hold).
 * Folding simulates one member of each group, the representative: its transfers are built and
 * the transfers that reach it are not; they are mirrored by the representative's own, whose
 * receiving side is booked on the representative (the member they reach is its replica, and a
 * replica's ingress serves at the times the representative's egress does). That is exact when
 * permuting replicas maps resources to resources and every transfer to one of the same length:
 * - sim_network_foldable: every GPU has a NIC of its own (@c's nics_per_node >=
 *   gpus_per_node; a shared NIC would queue replicas' transfers together, which are not all
 *   built), and collectives overlap computation (@overlap: without it a ring's transfers hold
 *   the sender's and the receiver's compute streams, so the members' steps queue one behind the
 *   other and the members' timelines differ);
 * - sim_network_group_foldable: the group of @p @devices sits on one host or on @p hosts, so
 *   each member's transfers cross the same kind of link (a ring of 2 hosts x 2 GPUs alternates
 *   NVLink and NIC steps, and its members differ). A mesh axis whose groups fail this stays
 *   expanded while the others fold, when no gradient sync group spans both kinds of axes,
 *   every mesh folds the same axes (sim_build_symmetry.c) and its groups are alike
 *   (sim_network_groups_alike: member i and member j share a host in one group exactly when
 *   they do in the other, so the permutation of replicas maps every transfer to one over the
 *   same kind of link).
 * Gates, joins and whole-collective tasks follow the task mode's symmetry (sim_build_symmetry.c).
 * Ties: the engine serves equal ready times by task id. A collective's transfers occupy an ids'
 * range of their own, and the transfers a replica's ingress receives belong to the same
 * collective as the representative's transfer that mirrors them, so against any other task
 * they compare as it does; within a collective a port serves one transfer per step, each after
 * the previous. The queue at every port is the same folded or expanded. Tests
 * /sim/network/fold-exact and /sim/network/fold-random check folded against expanded runs bit
 * for bit. */
gboolean sim_network_foldable(const DevCluster *cluster, gboolean overlap);
gboolean sim_network_group_foldable(const DevCluster *cluster, const int *devices, int p);
gboolean sim_network_groups_alike(const DevCluster *cluster, const int *a, const int *b, int p);

typedef struct {
  uint32_t gate;   /* add edges from the inputs to this task */
  uint32_t join;   /* the collective is done when this task is */
} SimCollectiveSpan;

/* Expands one collective over the @p @devices of a group (ring order = array order), @bytes as
 * in cm_collective_time. @simulated marks the members that are simulated: all of them, or
 * exactly one (symmetry: every member then runs the same timeline, so only its transfers are
 * built, each step after its previous one, received on the representative's own ingress; exact
 * under the conditions above). @proto gives the metadata
 * copied to every task.
 * @block_compute: transfers also hold the sender's and receiver's compute streams (no overlap
 * of communication with computation). @stream: the members' stream the gate and join hold.
 * @ring (nullable): NCCL's ring figures for the
 * collective; NULL times transfers by the links' own latency and bandwidth (all-to-all,
 * send/recv). */
SimCollectiveSpan sim_network_expand(SimTaskGraph *graph, const DevCluster *cluster,
                                     const SimTask *proto, CmCollective kind, const int *devices,
                                     int p, const gboolean *simulated, double bytes,
                                     gboolean block_compute, SimStream stream,
                                     const CmNcclRingSteps *ring);

/* The task graph of one collective alone, step-expanded over the @p @devices (ring order) on
 * @cluster's link resources, @simulated as sim_network_expand (all, or one representative),
 * finished and ready for sim_engine_run (the engine benchmark: `stratsim bench --suite
 * allreduce`). Free with sim_task_graph_free. */
SimTaskGraph *sim_network_collective_graph(const DevCluster *cluster, CmCollective kind,
                                           const int *devices, int p, const gboolean *simulated,
                                           double bytes);

/* Names a resource (a device stream or a link resource) for traces: "GPU 3 port out", "node 1 NIC 0 in". */
char *sim_network_resource_name(const DevCluster *cluster, uint32_t resource);

G_END_DECLS

#endif
