/* costmodel/nccl — NCCL's tuner model (cm_nccl.h). Constants from NVIDIA/nccl
 * src/graph/tuning.cc at commit b6475625 (the reference release, NCCL 2.20.3 by its
 * makefiles/version.mk: its tables are those of NCCL 2.18.3 too, sochinpub/nccl at 30d2ab9,
 * version.mk 2.18.3) unless said otherwise; latencies there are in us and bandwidths in GB/s,
 * kept in those units in the tables and converted at the end.
 *
 * Releases from 2.26.2 (DevCluster.nccl_version >= 22602) take the tables of NCCL 2.26.2's
 * tuning.cc (NVIDIA/nccl at f44ac759, version.mk 2.26.2) where they differ and this model has
 * the term: the ring's LL bandwidth (busBw x 1/2 for every collective instead of x 1/4 for
 * all-reduce, capped at llMaxBws, whose one-host Hopper entry is 141.0 GB/s instead of 87.7 and
 * which gains a Blackwell row, twice Hopper's), Blackwell rows of perChMaxRingLL128Bws,
 * perChMaxTreeLL128Bws and perChMaxTreeBws (twice Hopper's; b6475625 has none and Hopper's are
 * used there), the NVLink and PCI latencies of tree/Simple (4.0 us a hop instead of 28) with
 * its base latency (8.4 us instead of 0), and NVLS / NVLS-tree's NVLink latency (25 us instead
 * of 23). Releases from 2.28.3 (>= 22803) take 2.28.3's (zhanglin496/nccl-2.28.3-1 at 850a18f,
 * a copy of release 2.28.3-1: ncclTunerConstantsDefaults and ncclTopoTuneModel), which are
 * 2.26.2's but for Blackwell's own per-channel rows (ring LL128 73.4, tree LL128 {55.6, 31.67,
 * 20.0}, tree {70.0, 42.8, 24.0}). Releases 2.20.4 - 2.26.1 were not read and take the
 * reference tables; 2.26.3 - 2.28.2 take 2.26.2's. From 2.28.3 NVLS-tree across hosts takes
 * that release's form on the NVLS graph NCCL's topology search finds (cm_nccl_nvls_graph,
 * nvls_tree_per_ch below; 2.26.2's tuning.cc does not have it, 2.27.x was not read). Not taken:
 * the same form for NVLS inside one host (bwIntra x nvlsEfficiency x (nChannels - 1) /
 * nChannels, doubled for all-reduce, over nRanks / nsteps; NVLS keeps the reference's form
 * below, which 2.26.2 still has, and its kernels' pipeline, cm_nccl_exec.c), their network
 * terms (ppn = 1 rings taking the tree's network latency, NET tree/Simple 14 us,
 * LL128's 0.7 factor at ppn < 2 dropped; the network model's), PAT. */
#include "costmodel/cm_nccl.h"
#include "costmodel/cm_aws_tuner.h"

#include <math.h>
#include <string.h>

enum { HW_NVLINK, HW_PCI, HW_NET, HW_COUNT };
enum { ARCH_VOLTA, ARCH_AMPERE, ARCH_HOPPER, ARCH_BLACKWELL, ARCH_COUNT };
/* The tables' releases: the reference (b6475625, and every release before 2.26.2 here),
 * 2.26.2 to 2.28.2, and 2.28.3 on. */
enum { ERA_REFERENCE, ERA_2_26, ERA_2_28, ERA_COUNT };
#define NCCL_2_26_2 22602
#define NCCL_2_28_3 22803
#define NCCL_2_21_0 22100

static int era_of(int nccl_version) {
  return nccl_version >= NCCL_2_28_3 ? ERA_2_28 : nccl_version >= NCCL_2_26_2 ? ERA_2_26 : ERA_REFERENCE;
}

/* Index of the algorithm rows of the tables below. */
static int row_of(CmAlgorithm a) {
  switch (a) {
  case CM_ALGO_TREE: return 0;
  case CM_ALGO_RING: return 1;
  case CM_ALGO_NVLS: return 2;
  case CM_ALGO_NVLS_TREE: return 3;
  default: return -1;
  }
}

/* tuning.cc baseLat[algorithm][protocol] (us): Tree {6.8, 14.0, 0}, Ring {6.6, 14.0, 8.4},
 * NVLS and NVLS-tree 0; 2.26.2 and 2.28.3: Tree/Simple 8.4. */
static const double base_lat_us[ERA_COUNT][4][CM_PROTO_COUNT] = {
    {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}},
    {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}},
    {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}}};

/* tuning.cc hwLat[hw][algorithm][protocol] (us), per step or hop: NVLink, PCI, network.
 * 2.26.2 and 2.28.3: Tree/Simple 4.0 on NVLink and PCI, NVLS and NVLS-tree 25 on NVLink (their
 * NET row's Tree/Simple 14 is a network term: not taken, see the header). */
static const double hw_lat_us[ERA_COUNT][HW_COUNT][4][CM_PROTO_COUNT] = {
    {/* NVLink */ {{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 23}, {0, 0, 23}},
     /* PCI */ {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}},
     /* NET */ {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}}},
    {/* NVLink */ {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}},
     /* PCI */ {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}},
     /* NET */ {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}}},
    {/* NVLink */ {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}},
     /* PCI */ {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}},
     /* NET */ {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}}}};

/* tuning.cc llMaxBws[arch or CPU][nodes 1, 2, >2] (GB/s): one host indexes by GPU generation,
 * several hosts by CPU vendor (row 0: Intel; the cluster does not say, Intel is assumed).
 * The reference has no Blackwell row (Hopper's is used); 2.26.2 and 2.28.3: Hopper {141.0,
 * 45.0, 35.0}, Blackwell twice that. */
static const double ll_max_bw[ERA_COUNT][ARCH_COUNT][3] = {
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}},
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}},
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
/* tuning.cc perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws [arch][nodes] (GB/s
 * per channel); Blackwell's rows: Hopper's in the reference, twice Hopper's in 2.26.2, its
 * own from 2.28.3 (2 x 36.7; {55.6, 31.67, 20.0}; {70.0, 42.8, 24.0}). */
static const double ring_ll128_per_ch[ERA_COUNT][ARCH_COUNT][3] = {
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {36.7, 36.7, 36.7}},
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}},
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}}};
static const double tree_ll128_per_ch[ERA_COUNT][ARCH_COUNT][3] = {
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {36.7, 36.7, 29.0}},
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {73.4, 73.4, 58.0}},
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
static const double tree_per_ch[ERA_COUNT][ARCH_COUNT][3] = {
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {38.7, 41.4, 36.0}},
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {77.4, 82.8, 72.0}},
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};

/* tuning.cc treeCorrectionFactor[protocol][log2(bytes / 64)], for sizes 64 B to 256 MiB:
 * "Trees are not perfectly sticking to the model for medium sizes". */
static const double tree_correction[CM_PROTO_COUNT][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

/* NVLS efficiency of later NCCL releases (2.2x, tuning: nvlsEfficiency {Volta 0, Ampere 0,
 * Hopper 0.85, Blackwell 0.74}; the commit b6475625 above predates it and charges NVLS at the
 * full NVLink figure, 12% above the 8xH200 NVLS measurement at 8 GiB, and so does 2.26.2's
 * tuning.cc; 2.28.3's has it inside its NVLS form, taken for NVLS-tree across hosts). Read
 * first from public descriptions of that table; it multiplies the NVLS and NVLS-tree bus
 * bandwidth in every release here (from 2.28.3 NVLS-tree's NVLink term only). */
static double nvls_efficiency(int sm) { return sm >= 100 ? 0.74 : sm >= 90 ? 0.85 : 0.0; }

/* NCCL 2.28.3's NVLS-tree bandwidth (tuning.cc ncclTopoTuneModel, zhanglin496/nccl-2.28.3-1 at
 * 850a18f): per channel min(2 x bwIntra x nvlsEfficiency x (nChannels - 1) / nChannels, bwInter
 * (x 2 on two hosts), perChMaxNVLSTreeBws[arch][nodes 1, 2, >2]), times nChannels, times
 * nRanks / nsteps; bwIntra, bwInter and nChannels are the NVLS graph's (cm_nccl_nvls_graph).
 * perChMaxNVLSTreeBws: Hopper {0, 57.7, 45.5}, Blackwell {0, 96.0, 43.1} (later trees give
 * Blackwell's last entry as 80.0, NVIDIA/nccl src/tuning/cost_model.cc at 1fc949c, or 43.8:
 * not taken). No tree correction in that release's ncclTopoGetAlgoTime (Tree only); NVIDIA/nccl
 * src/tuning/nvls.cc (1fc949c, 12df1a1 = 2.32.3) adds one for NVLS-tree on Blackwell x86. */
static const double nvls_tree_per_ch[ARCH_COUNT][3] = {
    {0, 0, 0}, {0, 0, 0}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.1}};

/* NCCL's topology search speeds with a network (src/graph/search.cc at 850a18f,
 * sm90SpeedArrayInter, sm100SpeedArrayInter; with NICs the search takes the inter array for
 * bwIntra and bwInter alike), GB/s. */
static const double sm90_speed_inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                          15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
static const double sm100_speed_inter[] = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                           17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
#define NCCL_MAX_NVLS_ARITY 32 /* src/include/device.h, NCCL_VERSION_CODE > 22000 */

/* Channels of an NVLS graph at (bwIntra, bwInter) (search.cc ncclTopoSearchRecNet and
 * ncclTopoSearchTryNvls): channel k takes a new head GPU with its own NIC, bwInter on that NIC's
 * path both ways, and bwIntra on every GPU's NVLink to the NVSwitch both ways, twice on the head's;
 * after k channels a head's link carries (k + 1) x bwIntra, so channel k fits while that is within
 * the link (the GPU's NVLinks at NCCL's per-link figure, topo.cc). */
static int nvls_channels_at(double bw_intra, double bw_inter, double path_GBps, double nvlink_GBps,
                            int heads) {
  if (bw_inter > path_GBps || bw_intra <= 0) return 0;
  int fit = (int)floor(nvlink_GBps / bw_intra + 1e-6) - 1;
  return CLAMP(fit, 0, heads);
}

/* ncclTopoCompareGraphs for the NVLS pattern: more channels (up to the GPUs), or more channels x
 * bwInter. */
static gboolean nvls_better(int channels, double bw_inter, int min_channels, int gpus,
                            const CmNcclGraph *ref) {
  if (channels < min_channels || channels == 0) return FALSE;
  return (channels > ref->channels && channels <= gpus) || channels * bw_inter > ref->channels * ref->bw_inter;
}

gboolean cm_nccl_nvls_graph(const CmNcclHardware *hw, int gpus_per_host, CmNcclGraph *graph) {
  g_return_val_if_fail(hw != NULL && graph != NULL, FALSE);
  memset(graph, 0, sizeof *graph);
  if (!hw->nvls || hw->sm < 90 || hw->nics_per_host < 1 || gpus_per_host < 1) return FALSE;
  const double *speeds = hw->sm >= 100 ? sm100_speed_inter : sm90_speed_inter;
  int n_speeds = hw->sm >= 100 ? (int)G_N_ELEMENTS(sm100_speed_inter) : (int)G_N_ELEMENTS(sm90_speed_inter);
  /* The GPU-NIC path's bandwidth is the NIC's speed (the plugin's, /8000 GB/s): the PCIe links on
   * it (NCCL: width x GT/s-per-lane x 10 / 80, 48 GB/s at Gen5 x16; read from sysfs or the
   * plugin's topology file) are not in a stratsim cluster and are taken not to bind, as for the
   * ring and tree graphs (cm_nccl.c header). Heads: one per NIC, each NIC with a GPU of its own
   * (ncclTopoSearchRecNet skips a NIC whose local GPU already heads a channel). */
  double path = hw->nic_line_bw / 1e9, nvlink = hw->intra_bw / 1e9;
  int max_channels = MIN(NCCL_MAX_NVLS_ARITY, gpus_per_host);
  int heads = MIN(max_channels, hw->nics_per_host);
  double total = nvlink; /* system->totalBw: the GPU's NVLinks */

  /* Pass 1: from the first speed within the path (and the NVLinks, x ngpus / (ngpus - 1) for
   * non-ring patterns), down while nothing perfect is found and the next speed is above .49 of
   * the best graph's bwInter. */
  int i = 0;
  double total_scaled = gpus_per_host > 1 ? total * gpus_per_host / (gpus_per_host - 1) : total;
  while ((speeds[i] > path || speeds[i] > total_scaled) && i < n_speeds - 1) i++;
  for (;;) {
    int n = nvls_channels_at(speeds[i], speeds[i], path, nvlink, heads);
    if (nvls_better(n, speeds[i], 1, gpus_per_host, graph))
      *graph = (CmNcclGraph){n, speeds[i], speeds[i]};
    if (graph->channels == max_channels) break;               /* time = -1: optimal */
    if (graph->channels * graph->bw_inter >= total) break;     /* enough for the GPU */
    if (i < n_speeds - 1 && (graph->channels == 0 || speeds[i + 1] / graph->bw_inter > .49)) {
      i++;
      continue;
    }
    break;
  }
  if (graph->channels == 0) return FALSE;

  /* Pass 2: from that speed, raise bwInter for NVLS while it stays below twice bwIntra (the
   * channel count held), else bwIntra while below twice bwInter. */
  i = 0;
  while (speeds[i] > graph->bw_inter && i < n_speeds - 1) i++;
  double tmp_intra = speeds[i], tmp_inter = speeds[i];
  int min_channels = graph->channels, tmp_max = max_channels;
  while (i > 0) {
    if (tmp_inter == graph->bw_inter && tmp_inter < tmp_intra * 2) {
      tmp_max = graph->channels;
      tmp_inter = speeds[--i];
    } else if (tmp_intra == graph->bw_intra && tmp_intra < tmp_inter * 2) {
      tmp_intra = speeds[--i];
    } else {
      break;
    }
    int n = nvls_channels_at(tmp_intra, tmp_inter, path, nvlink, MIN(heads, tmp_max));
    if (nvls_better(n, tmp_inter, min_channels, gpus_per_host, graph))
      *graph = (CmNcclGraph){n, tmp_intra, tmp_inter};
  }
  return TRUE;
}

/* NCCL 2.7.5's A100 bus bandwidth cap (GB/s), applied to the kernels' time (cm_nccl_time). */
#define A100_NVLINK_BUS_GBPS 235.0

/* tuning.cc getNetOverhead: 1 us per network post on Intel x86 (2 on AMD); the ring's intra
 * steps cost at least that across hosts, three times it with Simple. Intel assumed. */
#define NET_OVERHEAD_US 1.0

static const char *const protocol_names[CM_PROTO_COUNT] = {"LL", "LL128", "Simple"};

const char *cm_protocol_name(CmProtocol protocol) {
  g_return_val_if_fail(protocol < CM_PROTO_COUNT, "?");
  return protocol_names[protocol];
}

/* GPU generations by device name (the device table has no compute capability). NCCL's
 * per-link NVLink bandwidth, src/graph/topo.h: SM60_NVLINK_BW 18.0, SM70 and SM80 20.0, SM90
 * 20.6, SM100 40.1 GB/s; line rate per link and direction: NVLink 1 20 GB/s, NVLink 2-4
 * 25 GB/s, NVLink 5 50 GB/s (NVIDIA P100, V100, A100, H100, B200 datasheets). */
typedef struct {
  const char *prefix;
  int sm;
  double nccl_link_GBps;
  double line_link_GBps;
} Generation;

static const Generation generations[] = {
    {"p100", 60, 18.0, 20.0}, {"v100", 70, 20.0, 25.0}, {"a100", 80, 20.0, 25.0},
    {"h100", 90, 20.6, 25.0}, {"h200", 90, 20.6, 25.0}, {"gh200", 90, 20.6, 25.0},
    {"b200", 100, 40.1, 50.0}, {"gb200", 100, 40.1, 50.0}, {"b100", 100, 40.1, 50.0},
};

/* PCIe: NCCL's PCI_BW 12.0 GB/s (topo.h, "PCI Gen3 x16") of a 15.75 GB/s Gen3 x16 line rate
 * (PCI-SIG: 8 GT/s x 16 lanes x 128b/130b). */
#define PCI_NCCL_PER_LINE (12.0 / 15.75)

/* NCCL's names of the algorithms it runs (src/include/device.h), for NCCL_ALGO lists. */
static const char *const algo_nccl[CM_ALGO_COUNT] = {[CM_ALGO_RING] = "Ring", [CM_ALGO_TREE] = "Tree",
                                                     [CM_ALGO_NVLS] = "NVLS", [CM_ALGO_NVLS_TREE] = "NVLSTree"};

void cm_nccl_hardware(const DevCluster *cluster, CmNcclHardware *hw) {
  g_return_if_fail(cluster != NULL && hw != NULL);
  memset(hw, 0, sizeof *hw);
  const Generation *gen = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(generations) && cluster->device.name; i++)
    if (g_str_has_prefix(cluster->device.name, generations[i].prefix)) gen = &generations[i];
  hw->sm = gen ? gen->sm : 0;
  hw->arch = hw->sm >= 100 ? ARCH_BLACKWELL : hw->sm >= 90 ? ARCH_HOPPER : hw->sm >= 80 ? ARCH_AMPERE : ARCH_VOLTA;
  hw->nccl_version = cluster->nccl_version;
  const DevLink *intra = &cluster->link[DEV_LINK_INTRA];
  const char *kind = intra->kind ? intra->kind : "";
  hw->nvlink = g_str_equal(kind, "nvlink") || g_str_equal(kind, "nvswitch");
  hw->nvls = g_str_equal(kind, "nvswitch") && hw->sm >= 90;
  /* LL128 by default over NVLink: tuning.cc at b6475625 enables it for sm 70, 80 and 90 only;
   * the releases B200s run with enable it from sm 70 up ("Enable LL128 by default only on
   * Hopper/Blackwell for all connections up to P2C and PXN", NCCL 2.26.2's tuning.cc), and NCCL
   * 2.30.7 logged Tree LL128 (512 KiB - 16 MiB) and Ring LL128 (32-64 MiB) all-reduces on
   * 4 x 8 B200 (stas00/ml-engineering network/README.md at 0cc3de5, "Inter-node speed depends
   * on intra-node speed", from NCCL_DEBUG_SUBSYS=TUNING). Blackwell keeps Hopper's per-channel
   * LL128 caps in the reference tables, twice them from 2.26.2 (tables above). */
  hw->ll128 = hw->nvlink && (hw->sm == 70 || hw->sm == 80 || hw->sm == 90 || hw->sm == 100);
  if (hw->nvlink && gen) {
    /* NCCL's graph search spreads channels over the GPU's NVLinks at its per-link figure. */
    double links = MAX(1.0, round(intra->bandwidth / (gen->line_link_GBps * 1e9)));
    hw->intra_channel_bw = gen->nccl_link_GBps * 1e9;
    hw->intra_bw = links * hw->intra_channel_bw;
  } else {
    /* PCIe: NCCL's figure per line rate; NVLink of a GPU topo.h has no figure for, or another
     * fabric: its line rate. One channel. */
    hw->intra_bw = intra->bandwidth * (g_str_equal(kind, "pcie") ? PCI_NCCL_PER_LINE : 1.0);
    hw->intra_channel_bw = hw->intra_bw;
  }
  CmLinkFigures f;
  cm_link_figures(cluster, &f);
  hw->nic_bw_per_gpu = f.nic_bw_per_gpu;
  double oversubscription = cluster->oversubscription >= 1.0 ? cluster->oversubscription : 1.0;
  hw->nic_bw = cluster->link[DEV_LINK_INTER].bandwidth / oversubscription;
  hw->nic_line_bw = cluster->link[DEV_LINK_INTER].bandwidth;
  hw->nics_per_host = cluster->nics_per_node;
  hw->net_latency_us = cluster->net_latency * 1e6;
  hw->net_step_us = cluster->net_step_latency * 1e6;
  hw->net_simple_extra_us = cluster->net_simple_extra * 1e6;
  /* The network's job profile (NCCL_ALGO, NCCL_PROTO) is what its provider prescribes for jobs
   * that use the network: Google's GPUDirect-TCPXO profile (nccl-env-profile.sh, sourced by
   * its multi-host launch scripts; devices/presets/gcp-a3-mega.json) restricts A3 Mega jobs to
   * Ring and Tree, with Simple and LL128 (Simple alone before May 2025). A one-host cluster does not use the network (a job on one VM
   * runs without the profile: the 8 x H100 A3 Mega sweep of one VM ran NVLS), so it keeps
   * NCCL's defaults; on several hosts every group of the job, inside a host or not, runs
   * under the profile, as the environment is the job's. */
  const char *algos = cluster->nodes > 1 ? cluster->nccl_algo : NULL;
  const char *protos = cluster->nodes > 1 ? cluster->nccl_proto : NULL;
  for (int a = 0; a < CM_ALGO_COUNT; a++)
    hw->algo_allowed[a] = !algo_nccl[a] || dev_nccl_list_allows(algos, algo_nccl[a]);
  for (int p = 0; p < CM_PROTO_COUNT; p++) hw->proto_allowed[p] = dev_nccl_list_allows(protos, protocol_names[p]);
  /* A tuner plugin in the network plugin is loaded by NCCL 2.21 and later when
   * NCCL_TUNER_PLUGIN is unset (aws/aws-ofi-nccl #922); a cluster that states no release is
   * taken to run one that loads it. */
  if (g_strcmp0(cluster->nccl_tuner, DEV_NCCL_TUNER_AWS_OFI_P6) == 0 &&
      (cluster->nccl_version == 0 || cluster->nccl_version >= NCCL_2_21_0))
    hw->tuner_plugin = CM_TUNER_PLUGIN_AWS_OFI_P6;
}

/* One network step's latency (us) for algorithm row @r and protocol @p: NCCL's hwLat[NET] in
 * the tuner's view; in the kernels' view (cm_nccl_exec_time) the figure the network's provider
 * measured where the cluster has one (aws-ofi-nccl's EFA model: net_lat per inter-node step,
 * plus its completion overhead with Simple; devices/presets/aws-*.json), which replaces
 * hwLat[NET], NCCL's figure for its own InfiniBand transport. */
static double net_step_us(const CmNcclHardware *hw, int r, CmProtocol p) {
  if (hw->kernel_view && hw->net_step_us > 0)
    return hw->net_step_us + (p == CM_PROTO_SIMPLE ? hw->net_simple_extra_us : 0.0);
  return hw_lat_us[era_of(hw->nccl_version)][HW_NET][r][p];
}

gboolean cm_nccl_covers(CmCollective kind) {
  return kind == CM_ALL_REDUCE || kind == CM_ALL_GATHER || kind == CM_REDUCE_SCATTER ||
         kind == CM_BROADCAST || kind == CM_REDUCE;
}

static int log2i(long long x) {
  int l = 0;
  while (x > 1) x >>= 1, l++;
  return l;
}

/* Whether NCCL's tuner considers @a for @kind on @nodes hosts (tuning.cc: broadcast and reduce
 * only ring; all-gather and reduce-scatter ring and NVLS; NVLS-tree off on one host, NVLS off
 * across hosts without CollNet) and @p there (NVLS and NVLS-tree only Simple). */
static gboolean enabled(CmCollective kind, CmAlgorithm a, CmProtocol p, int nodes,
                        const CmNcclHardware *hw) {
  if (!cm_nccl_covers(kind) || row_of(a) < 0) return FALSE;
  if ((kind == CM_BROADCAST || kind == CM_REDUCE) && a != CM_ALGO_RING) return FALSE;
  if ((kind == CM_ALL_GATHER || kind == CM_REDUCE_SCATTER) && a != CM_ALGO_RING && a != CM_ALGO_NVLS)
    return FALSE;
  if ((a == CM_ALGO_NVLS || a == CM_ALGO_NVLS_TREE) && (p != CM_PROTO_SIMPLE || !hw->nvls)) return FALSE;
  if (a == CM_ALGO_NVLS && nodes > 1) return FALSE;
  if (a == CM_ALGO_NVLS_TREE && nodes == 1) return FALSE;
  if (p == CM_PROTO_LL128 && !hw->ll128) return FALSE;
  return hw->algo_allowed[a] && hw->proto_allowed[p];
}

double cm_nccl_time(CmCollective kind, CmAlgorithm a, CmProtocol p, const CmGroupShape *g,
                    const CmNcclHardware *hw, double bytes, CmNcclCost *cost) {
  g_return_val_if_fail(g != NULL && hw != NULL && p < CM_PROTO_COUNT, NAN);
  int ranks = g->ranks, nodes = g->hosts;
  if (ranks <= 1 || nodes < 1 || !enabled(kind, a, p, nodes, hw) || !(bytes >= 0)) return NAN;
  int r = row_of(a), arch = hw->arch, index2 = nodes <= 2 ? nodes - 1 : 2, era = era_of(hw->nccl_version);
  double ppn = (double)ranks / nodes;
  double ll_max = ll_max_bw[era][nodes == 1 ? arch : 0][index2];

  /* The graph's bandwidth: inside a host NCCL's NVLink figure; across hosts the ring, chain or
   * tree enters and leaves each host once per channel, over the group's share of the host's
   * NICs (cm_collective.c, span_beta), and never faster than the NVLinks. NVLS-tree: NCCL
   * halves bwInter beyond two hosts. Channels: the links that bandwidth is spread over. */
  double bw, channel_bw;
  if (nodes == 1) {
    bw = hw->intra_bw;
    channel_bw = hw->intra_channel_bw;
  } else {
    double nics = g->min_per_host * hw->nic_bw_per_gpu;
    bw = MIN(hw->intra_bw, nics);
    channel_bw = MIN(hw->nic_bw, bw);
    /* Two hosts: tuning.cc prices every algorithm at the graph's bwIntra (nNodes <= 2), and
     * the topology search (src/graph/search.cc, ncclTopoCompute pass 2, "increase bwIntra for
     * trees (2 nodes or collnet)") raises a tree's bwIntra while it is below twice bwInter: a
     * tree between two hosts puts half its traffic on the network (sjeaugey, NVIDIA/nccl
     * #946: "up to ~2x the network speed"). */
    if (a == CM_ALGO_TREE && nodes == 2) bw = MIN(hw->intra_bw, 2 * nics);
    if (a == CM_ALGO_NVLS_TREE && nodes > 2) bw = MIN(hw->intra_bw, nics / 2);
  }
  int channels = channel_bw > 0 && bw > channel_bw ? (int)floor(bw / channel_bw + 0.5) : 1;
  double bus = bw / 1e9; /* GB/s from here on, as tuning.cc */
  /* What the kernels reach over an A100's NVLinks: NCCL 2.7.5's tuner (tuning.cc at 01afd20,
   * version.mk 2.7.5) capped Ampere's bus bandwidth at 235 GB/s ("if (compCap80) busBw =
   * std::min(busBw, 235.0f)"), NVIDIA's own figure, below the 12 x 20 GB/s of its per-link
   * tables. Later tuners dropped the cap (b6475625 has none), so it does not steer the choice
   * here; it times the kernels: every 8 x A100 NVSwitch sweep in nccl_public.csv tops out at
   * 230-235 GB/s from 2 GiB up, in NCCL 2.16.2, 2.19.3 and a 2024 release alike. */
  if (hw->kernel_view && nodes == 1 && hw->nvlink && hw->sm == 80) bus = MIN(bus, A100_NVLINK_BUS_GBPS);
  gboolean ring = a == CM_ALGO_RING, tree = a == CM_ALGO_TREE;
  if (ring && p == CM_PROTO_LL) {
    double share = era != ERA_REFERENCE ? 0.5
                   : (nodes > 1 || kind == CM_ALL_REDUCE || kind == CM_REDUCE) ? 1.0 / 4.0
                                                                             : 1.0 / 3.0;
    bus = MIN(ll_max, bus * share);
  }
  if (ring && p == CM_PROTO_LL128)
    bus = MIN(bus * (ppn < 2 ? 0.7 : 0.92), channels * ring_ll128_per_ch[era][arch][index2]);
  if (tree) bus = MIN(bus * .92, channels * tree_per_ch[era][arch][index2]);
  if (tree && p == CM_PROTO_LL) bus = MIN(bus * 1.0 / 3.8, ll_max);
  if (tree && p == CM_PROTO_LL128)
    bus = MIN(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * tree_ll128_per_ch[era][arch][index2]);
  int nsteps = kind == CM_ALL_REDUCE ? 2 * (ranks - 1)
               : (kind == CM_ALL_GATHER || kind == CM_REDUCE_SCATTER) ? ranks - 1
                                                                        : ranks;
  /* From 2.28.3 NVLS-tree takes the NVLS graph's figures (nvls_tree_per_ch above); it runs
   * all-reduce only (enabled()), and needs two channels ("NVLS/NVLStree needs at least 2
   * channels"). Before, the reference's form: the graph's bandwidth x NVLS efficiency x 5/6. */
  gboolean nvls_tree_graph = a == CM_ALGO_NVLS_TREE && nodes > 1 && era == ERA_2_28;
  if (nvls_tree_graph) {
    CmNcclGraph graph;
    if (!cm_nccl_nvls_graph(hw, g->min_per_host, &graph) || graph.channels < 2) return NAN;
    double intra = 2.0 * graph.bw_intra * nvls_efficiency(hw->sm) * (graph.channels - 1) / graph.channels;
    double inter = graph.bw_inter * (nodes <= 2 ? 2.0 : 1.0);
    double per_channel = MIN(intra, inter);
    if (nvls_tree_per_ch[arch][index2] > 0) per_channel = MIN(per_channel, nvls_tree_per_ch[arch][index2]);
    channels = graph.channels;
    bus = channels * per_channel;
  } else if (a == CM_ALGO_NVLS || a == CM_ALGO_NVLS_TREE) {
    bus *= nvls_efficiency(hw->sm);
  }

  /* Bus to algorithm bandwidth: ring ranks / steps (and NVLS-tree from 2.28.3), NVLS 5/6, tree
   * 1/2. */
  int inter_steps = kind == CM_ALL_REDUCE ? (nodes > 1 ? 2 * nodes : 0)
                    : (kind == CM_ALL_GATHER || kind == CM_REDUCE_SCATTER) ? nodes - 1
                                                                             : nodes;
  double ratio = ring || nvls_tree_graph                         ? (double)ranks / nsteps
                 : (a == CM_ALGO_NVLS || a == CM_ALGO_NVLS_TREE) ? 5.0 / 6.0
                                                                 : 0.5;
  double algbw = bus * ratio;

  /* Latency (us). tuning.cc: interLat = hwLat[NET] + graphs[a]->latencyInter, the latency the
   * network plugin reports (search.cc copies it from the NET node the graph leaves by), and
   * once more for Simple ("the flush extra latency"). 0 on clusters that do not set it. */
  int intra_hw = hw->nvlink ? HW_NVLINK : HW_PCI;
  double lat = base_lat_us[era][r][p];
  double intra_lat = hw_lat_us[era][intra_hw][r][p];
  double inter_lat = net_step_us(hw, r, p) + hw->net_latency_us * (p == CM_PROTO_SIMPLE ? 2 : 1);
  if (ring && (kind == CM_BROADCAST || kind == CM_REDUCE)) {
    /* graphs[a]->sameChannels assumed: one hop's latency (NCCL's pipelined ring). */
    lat += nodes == 1 ? hw_lat_us[era][intra_hw][r][p] : net_step_us(hw, r, p);
  } else if (ring) {
    if (nodes > 1) intra_lat = MAX(intra_lat, NET_OVERHEAD_US * (p == CM_PROTO_SIMPLE ? 3 : 1));
    /* NCCL counts 2 x nodes inter-host steps for an all-reduce; with one rank per host that
     * exceeds the steps, and its intra-host count goes negative: kept at zero here. */
    lat += MAX(0, nsteps - inter_steps) * intra_lat + MIN(nsteps, inter_steps) * inter_lat;
  } else if (tree) {
    lat += 2 * ((ranks / nodes - 1) * intra_lat + log2i(nodes) * inter_lat);
  } else if (a == CM_ALGO_NVLS) {
    lat = intra_lat;
  } else { /* NVLS-tree */
    lat += intra_lat + 2 * log2i(nodes) * inter_lat;
  }

  /* ncclTopoGetAlgoTime: the tree's correction by size; the ring plateau (Simple all-reduce
   * across hosts, 1.4 on sm80 and later, 1.9 before). */
  long long log_size = log2i((long long)(bytes / 64));
  if (tree && log_size < 23) algbw *= tree_correction[p][log_size];
  if (ring && p == CM_PROTO_SIMPLE && nodes > 1 && kind == CM_ALL_REDUCE &&
      bytes / ((double)channels * ranks) >= 64)
    lat *= hw->sm >= 80 ? 1.4 : 1.9;
  double time = lat * 1e-6 + bytes / (algbw * 1e9);
  if (cost) {
    cost->latency_s = lat * 1e-6;
    cost->busbw = bus * 1e9;
    cost->algbw = algbw * 1e9;
    cost->channels = channels;
    cost->time_s = time;
  }
  return time;
}

typedef struct {
  CmCollective kind;
  const CmGroupShape *shape;
  const CmNcclHardware *hw;
  double bytes;
} PluginCall;

/* NCCL's cost table marks the pairs it does not run NCCL_ALGO_PROTO_IGNORE; the plugin skips
 * their regions (region_get_coll_info_internal_v3). */
static gboolean nccl_runs(CmAlgorithm a, CmProtocol p, gpointer data) {
  const PluginCall *c = data;
  return !isnan(cm_nccl_time(c->kind, a, p, c->shape, c->hw, c->bytes, NULL));
}

gboolean cm_nccl_plugin_choice(CmCollective kind, const CmGroupShape *shape, const CmNcclHardware *hw,
                               double bytes, CmAlgorithm *algorithm, CmProtocol *protocol) {
  g_return_val_if_fail(shape != NULL && hw != NULL && algorithm != NULL && protocol != NULL, FALSE);
  if (hw->tuner_plugin != CM_TUNER_PLUGIN_AWS_OFI_P6) return FALSE;
  PluginCall call = {kind, shape, hw, bytes};
  return cm_aws_tuner_p6_choice(kind, shape->ranks, shape->hosts, bytes, nccl_runs, &call, algorithm,
                                protocol);
}

double cm_nccl_tune(CmCollective kind, const CmGroupShape *shape, const CmNcclHardware *hw,
                    double bytes, CmAlgorithm *algorithm, CmProtocol *protocol, CmNcclCost *cost) {
  CmAlgorithm plugin_algorithm;
  CmProtocol plugin_protocol;
  if (cm_nccl_plugin_choice(kind, shape, hw, bytes, &plugin_algorithm, &plugin_protocol)) {
    if (algorithm) *algorithm = plugin_algorithm;
    if (protocol) *protocol = plugin_protocol;
    return cm_nccl_time(kind, plugin_algorithm, plugin_protocol, shape, hw, bytes, cost);
  }
  static const CmAlgorithm order[] = {CM_ALGO_RING, CM_ALGO_TREE, CM_ALGO_NVLS, CM_ALGO_NVLS_TREE};
  double best = INFINITY;
  for (gsize i = 0; i < G_N_ELEMENTS(order); i++)
    for (int p = 0; p < CM_PROTO_COUNT; p++) {
      CmNcclCost c;
      double t = cm_nccl_time(kind, order[i], (CmProtocol)p, shape, hw, bytes, &c);
      if (isnan(t) || !(t < best)) continue;
      best = t;
      if (algorithm) *algorithm = order[i];
      if (protocol) *protocol = (CmProtocol)p;
      if (cost) *cost = c;
    }
  return isinf(best) ? NAN : best;
}

gboolean cm_nccl_ring_steps(CmCollective kind, const CmGroupShape *shape,
                            const DevCluster *cluster, double bytes, CmNcclRingSteps *out) {
  g_return_val_if_fail(shape != NULL && cluster != NULL && out != NULL, FALSE);
  if (kind != CM_ALL_REDUCE && kind != CM_ALL_GATHER && kind != CM_REDUCE_SCATTER) return FALSE;
  CmNcclHardware hw;
  cm_nccl_hardware(cluster, &hw);
  double best = INFINITY;
  for (int p = 0; p < CM_PROTO_COUNT; p++) {
    double t = cm_nccl_time(kind, CM_ALGO_RING, (CmProtocol)p, shape, &hw, bytes, NULL);
    if (isnan(t) || !(t < best)) continue;
    best = t;
    out->protocol = (CmProtocol)p;
  }
  if (isinf(best)) return FALSE;
  /* The steps take what the kernels take: the plugin's latency steers the choice only
   * (cm_nccl_exec_time). */
  CmNcclCost chosen = {0};
  hw.net_latency_us = 0.0;
  hw.kernel_view = TRUE;
  cm_nccl_time(kind, CM_ALGO_RING, out->protocol, shape, &hw, bytes, &chosen);
  int r = row_of(CM_ALGO_RING), intra_hw = hw.nvlink ? HW_NVLINK : HW_PCI, era = era_of(hw.nccl_version);
  out->base_latency_s = base_lat_us[era][r][out->protocol] * 1e-6;
  out->step_latency_s[DEV_LINK_INTRA] = hw_lat_us[era][intra_hw][r][out->protocol] * 1e-6;
  out->step_latency_s[DEV_LINK_INTER] = net_step_us(&hw, r, out->protocol) * 1e-6;
  /* A step moves bytes/ranks at the ring's bus bandwidth: its fraction of the intra-host line
   * rate; across hosts the protocol's fraction of the NIC figures the ring was given. */
  double line = cluster->link[DEV_LINK_INTRA].bandwidth;
  double raw = shape->hosts == 1 ? line : MIN(hw.intra_bw, shape->min_per_host * hw.nic_bw_per_gpu);
  out->efficiency[DEV_LINK_INTRA] = MIN(1.0, chosen.busbw / line);
  out->efficiency[DEV_LINK_INTER] = MIN(1.0, chosen.busbw / raw);
  return TRUE;
}
