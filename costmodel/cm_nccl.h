/* costmodel/nccl — NCCL's own cost model of its collectives, as its tuner evaluates it: for
 * every algorithm (ring, tree, NVLS, NVLS-tree; CollNet off, as without a SHARP-capable
 * network plugin) and protocol (LL, LL128, Simple), a latency and an algorithm bandwidth, time
 * = latency + size / bandwidth, and the choice of the fastest pair.
 *
 * Source: NVIDIA/nccl src/graph/tuning.cc at commit b6475625, and releases 2.26.2's and
 * 2.28.3's for clusters that say they run 2.26.2 or later (DevCluster.nccl_version; cm_nccl.c
 * lists the terms that differ) (ncclTopoTuneModel: baseLat,
 * hwLat, llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, the per-protocol
 * bandwidth factors, the bus-to-algorithm bandwidth ratios; ncclTopoGetAlgoTime: the tree
 * correction factors and the ring plateau factor), and src/graph/topo.h (per-link NVLink
 * bandwidth NCCL assumes: SM70/SM80 20.0, SM90 20.6, SM100 40.1 GB/s; PCI_BW 12.0 for PCIe
 * Gen3 x16). Where NCCL reads something from the machine that a stratsim cluster does not
 * say (the topology search's channel count, the CPU vendor), the choice made is written next
 * to it in cm_nccl.c. The NIC's extra latency (latencyInter) is the cluster's net_latency: what
 * the network plugin reports (aws-ofi-nccl on EFA instances; 0 for NCCL's InfiniBand).
 *
 * Sizes follow cm_collective.h (nccl-tests' size column), times in seconds, bandwidths in
 * bytes/s. Pure functions: no globals. */
#ifndef STRATSIM_CM_NCCL_H
#define STRATSIM_CM_NCCL_H

#include <glib.h>
#include "costmodel/cm_collective.h"

G_BEGIN_DECLS

typedef enum { CM_PROTO_LL, CM_PROTO_LL128, CM_PROTO_SIMPLE, CM_PROTO_COUNT } CmProtocol;

/* The tuner plugin that makes NCCL's choice where it covers the case (DevCluster.nccl_tuner). */
typedef enum {
  CM_TUNER_PLUGIN_NONE,        /* NCCL's own formula */
  CM_TUNER_PLUGIN_AWS_OFI_P6,  /* aws-ofi-nccl's p6-b200 region table (cm_aws_tuner.h) */
} CmTunerPlugin;

const char *cm_protocol_name(CmProtocol protocol);

/* What NCCL's tuner knows of the hardware, derived from a cluster (cm_nccl_hardware). */
typedef struct {
  int arch;              /* index of NCCL's per-architecture tables: 0 Volta (and older),
                            1 Ampere, 2 Hopper, 3 Blackwell (the reference release's tables
                            have no Blackwell rows: Hopper's are used there) */
  int nccl_version;      /* DevCluster.nccl_version: 0 (not stated) or NCCL_VERSION_CODE; from
                            2.28.3 on that release's tables are used (cm_nccl.c) */
  int sm;                /* compute capability x10 (70, 80, 90, 100); 0 = unknown */
  gboolean nvlink;       /* GPUs of a host talk over NVLink/NVSwitch (NCCL_HW_NVLINK), else
                            PCIe (NCCL_HW_PCI) */
  gboolean nvls;         /* NVLink SHARP: NVSwitch and Hopper or later */
  gboolean ll128;        /* LL128 enabled by default: NVLink and sm 70-100 */
  double intra_bw;       /* bytes/s NCCL's graph gets from a GPU's intra-host links */
  double intra_channel_bw; /* bytes/s of one channel on them (one NVLink's NCCL figure) */
  double nic_bw;         /* bytes/s of one NIC (after the fabric's oversubscription) */
  double nic_bw_per_gpu; /* a GPU's share of its host's NICs (cm_link_figures) */
  double nic_line_bw;    /* bytes/s of one NIC at its line rate: the speed the network plugin
                            reports, NCCL's NET node bandwidth (DevCluster, before any
                            oversubscription of the fabric) */
  int nics_per_host;     /* DevCluster.nics_per_node */
  double net_latency_us; /* the network plugin's reported latency, NCCL's latencyInter (us;
                            DevCluster.net_latency) */
  double net_step_us;    /* what one network step of the kernels takes, where the network's
                            provider measured it (DevCluster.net_step_latency; 0: none) */
  double net_simple_extra_us; /* added to it with Simple (DevCluster.net_simple_extra) */
  gboolean kernel_view;  /* TRUE in cm_nccl_exec_time's copy: cm_nccl_time then charges
                            net_step_us (+ net_simple_extra_us) per network step where set,
                            instead of NCCL's hwLat[NET], and caps an A100 host's bus
                            bandwidth at 235 GB/s (cm_nccl.c); FALSE for the tuner's choice */
  CmTunerPlugin tuner_plugin; /* DevCluster.nccl_tuner where the release loads it (NCCL 2.21 on,
                                 or no release stated); NONE otherwise */
  gboolean algo_allowed[CM_ALGO_COUNT]; /* by the network's job profile (DevCluster.nccl_algo,
                                           .nccl_proto) on a cluster of several hosts; all
                                           TRUE on one host or without a profile */
  gboolean proto_allowed[CM_PROTO_COUNT];
} CmNcclHardware;

void cm_nccl_hardware(const DevCluster *cluster, CmNcclHardware *hw);

/* The cost NCCL's model gives one (algorithm, protocol). */
typedef struct {
  double latency_s;      /* NCCL's latency term, with the ring plateau factor where it applies */
  double busbw;          /* bus bandwidth before the bus-to-algorithm conversion */
  double algbw;          /* bandwidth the size is divided by (after the tree correction) */
  int channels;          /* channels the bandwidth is spread over */
  double time_s;         /* latency_s + bytes / algbw */
} CmNcclCost;

/* The time of @algorithm (CM_ALGO_RING, CM_ALGO_TREE, CM_ALGO_NVLS, CM_ALGO_NVLS_TREE) with
 * @protocol for @kind (all-reduce, all-gather, reduce-scatter, broadcast, reduce) over a group
 * of @shape; NAN where NCCL does not run that combination (tree for anything but all-reduce,
 * NVLS without NVLink SHARP or across hosts, NVLS-tree inside one host, LL128 where it is off).
 * Fills @cost when given. */
double cm_nccl_time(CmCollective kind, CmAlgorithm algorithm, CmProtocol protocol,
                    const CmGroupShape *shape, const CmNcclHardware *hw, double bytes,
                    CmNcclCost *cost);

/* The NVLS graph NCCL's topology search finds for a communicator of @gpus_per_host GPUs on each
 * of several hosts (src/graph/search.cc ncclTopoCompute, pattern NVLS, NCCL 2.28.3; cm_nccl.c
 * says how and what is assumed): its channels (one per NVLS head, a GPU with its own NIC) and
 * the per-channel bandwidths NCCL's tuner reads, in GB/s as NCCL keeps them. Needs NVLink SHARP
 * (@hw->nvls), NICs and a compute capability with a speed table (sm 90 or 100); FALSE (and a
 * zeroed @graph) otherwise, or where the search finds no channel. */
typedef struct {
  int channels;    /* graph->nChannels */
  double bw_intra; /* graph->bwIntra, GB/s */
  double bw_inter; /* graph->bwInter, GB/s */
} CmNcclGraph;

gboolean cm_nccl_nvls_graph(const CmNcclHardware *hw, int gpus_per_host, CmNcclGraph *graph);

/* Whether NCCL runs @kind as a collective kernel this model covers (all-to-all and send/recv
 * are point-to-point in NCCL: cm_collective.c keeps their alpha-beta forms). */
gboolean cm_nccl_covers(CmCollective kind);

/* The (algorithm, protocol) a tuner plugin (@hw->tuner_plugin) sets for @kind over @shape at
 * @bytes, among the pairs cm_nccl_time runs; FALSE (outputs untouched) where there is none or
 * it leaves the choice to NCCL's formula. */
gboolean cm_nccl_plugin_choice(CmCollective kind, const CmGroupShape *shape, const CmNcclHardware *hw,
                               double bytes, CmAlgorithm *algorithm, CmProtocol *protocol);

/* The (algorithm, protocol) NCCL's tuner picks for @kind over @shape: the tuner plugin's
 * choice where it makes one (cm_nccl_plugin_choice), else the smallest cm_nccl_time over every
 * enabled pair (ties to the earlier algorithm, then protocol). Returns the chosen pair's
 * cm_nccl_time; @algorithm, @protocol and @cost receive the choice. */
double cm_nccl_tune(CmCollective kind, const CmGroupShape *shape, const CmNcclHardware *hw,
                    double bytes, CmAlgorithm *algorithm, CmProtocol *protocol, CmNcclCost *cost);

/* What NCCL's kernels take for (@algorithm, @protocol), chosen by the tuner's formula above:
 * cm_nccl_time without the network plugin's latency (@hw->net_latency_us: a tuning input,
 * cm_nccl_exec.c) plus the fill of the kernel's step pipeline where it has one beyond the tuner's
 * latency (cm_nccl_exec.c says which, with NCCL's source for every constant): a pipeline of
 * `stages` stages over K chunk steps takes K + stages - 1 step times. NAN where cm_nccl_time
 * is. Fills @exec when given. */
typedef struct {
  double tuner_s;     /* cm_nccl_time, net_latency_us left out */
  double fill_s;      /* (stages - 1) step times; 0 where not modelled */
  int stages;         /* pipeline stages (1: no fill) */
  int concurrent_ops; /* chunks in flight per step (channels x heads) */
  double chunk_bytes; /* NCCL's chunk size at this size */
  double time_s;      /* tuner_s + fill_s */
} CmNcclExec;

double cm_nccl_exec_time(CmCollective kind, CmAlgorithm algorithm, CmProtocol protocol,
                         const CmGroupShape *shape, const CmNcclHardware *hw, double bytes,
                         CmNcclExec *exec);

/* The ring of @kind over @shape as steps, for the step-expanded mode (sim/sim_network.c):
 * the protocol the tuner would give the ring at this size, the latency paid once (NCCL's
 * baseLat), each step's latency on each link class, and the fraction of a link's line rate a
 * step moves data at. An uncontended step-expanded ring inside one host then takes exactly
 * cm_nccl_time of the ring. */
typedef struct {
  CmProtocol protocol;
  double base_latency_s;
  double step_latency_s[DEV_LINK_COUNT];
  double efficiency[DEV_LINK_COUNT]; /* in (0, 1]: algorithm bandwidth per line rate */
} CmNcclRingSteps;

gboolean cm_nccl_ring_steps(CmCollective kind, const CmGroupShape *shape,
                            const DevCluster *cluster, double bytes, CmNcclRingSteps *out);

G_END_DECLS

#endif
