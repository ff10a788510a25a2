/* tests/nccl — NCCL's tuner model (costmodel/cm_nccl.h), the one collective model of
 * costmodel/cm_tuner.h that simulate and `stratsim collective` share, and its checks against
 * published curves (costmodel/cm_check.h, tests/data/validation/nccl_public.csv). */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/cm_aws_tuner.h"
#include "costmodel/cm_check.h"
#include "costmodel/cm_nccl.h"
#include "costmodel/cm_tuner.h"
#include "sim/sim.h"
#include "test-util.h"

#define MIB (1024.0 * 1024.0)
#define CLOSE(a, b) g_assert_cmpfloat_with_epsilon((a) / (b), 1.0, 1e-9)

static DevCluster *preset(const char *spec) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(spec, &error);
  g_assert_no_error(error);
  return c;
}

static CmCollectiveEstimate first_ranks(const DevCluster *c, CmCollective kind, int n, double bytes) {
  g_autofree int *devices = g_new(int, n);
  for (int i = 0; i < n; i++) devices[i] = i;
  return cm_collective_estimate(c, kind, devices, n, bytes, NULL);
}

/* 1 GiB all-reduce over a DGX A100's 8 GPUs: ring, Simple; NCCL's figures: 12 NVLinks at
 * SM80_NVLINK_BW 20 GB/s = 240 GB/s bus bandwidth for the choice; the kernels at NCCL 2.7.5's
 * A100 cap of 235 GB/s, algorithm bandwidth 235 x 8 / 14; latency baseLat 8.4 us + 14 steps
 * x hwLat[NVLink][ring][Simple] 3.4 us. */
static void test_a100_ring_simple(void) {
  DevCluster *c = preset("dgx-a100");
  CmCollectiveEstimate e = first_ranks(c, CM_ALL_REDUCE, 8, 1024 * MIB);
  g_assert_cmpint(e.algorithm, ==, CM_ALGO_RING);
  g_assert_cmpint(e.protocol, ==, CM_PROTO_SIMPLE);
  g_assert_cmpint(e.channels, ==, 12);
  CLOSE(e.time_s, (8.4 + 14 * 3.4) * 1e-6 + 1024 * MIB / (235e9 * 8 / 14));
  /* Bus bandwidth below the 300 GB/s line rate, from NCCL's figures alone. */
  g_assert_cmpfloat(e.busbw, <, 235e9);
  g_assert_cmpfloat(e.busbw, >, 233e9);
  /* The cap times the kernels; the choice is the tuner's at 240 (a 4 MiB all-reduce picks
   * LL128 either way). */
  CmNcclHardware hw;
  cm_nccl_hardware(c, &hw);
  CmNcclCost tuner, kernels;
  cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw, 1024 * MIB, &tuner);
  hw.kernel_view = TRUE;
  cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw, 1024 * MIB, &kernels);
  CLOSE(tuner.busbw, 240e9);
  CLOSE(kernels.busbw, 235e9);
  dev_cluster_free(c);
}

/* The tuner's protocol follows size: LL for tiny messages, LL128 in the middle, Simple for
 * the largest (A100: LL128 on by default with NVLink). */
static void test_protocol_by_size(void) {
  DevCluster *c = preset("dgx-a100");
  g_assert_cmpint(first_ranks(c, CM_ALL_REDUCE, 8, 4096).protocol, ==, CM_PROTO_LL);
  g_assert_cmpint(first_ranks(c, CM_ALL_REDUCE, 8, 4 * MIB).protocol, ==, CM_PROTO_LL128);
  g_assert_cmpint(first_ranks(c, CM_ALL_REDUCE, 8, 4096 * MIB).protocol, ==, CM_PROTO_SIMPLE);
  /* Each protocol's time is NCCL's latency + size / bandwidth, the pick the minimum; the
   * kernels' time of the pick no shorter (on an A100 the 235 GB/s cap, cm_nccl.c). */
  CmCollectiveEstimate e = first_ranks(c, CM_ALL_REDUCE, 8, 4 * MIB);
  CmNcclHardware hw;
  cm_nccl_hardware(c, &hw);
  double picked = cm_nccl_time(CM_ALL_REDUCE, e.algorithm, e.protocol, &e.shape, &hw, 4 * MIB, NULL);
  g_assert_cmpfloat(e.time_s, >=, picked);
  for (int p = 0; p < CM_PROTO_COUNT; p++)
    for (int a = CM_ALGO_RING; a <= CM_ALGO_TREE; a++) {
      double t = cm_nccl_time(CM_ALL_REDUCE, (CmAlgorithm)a, (CmProtocol)p, &e.shape, &hw, 4 * MIB, NULL);
      g_assert_cmpfloat(t, >=, picked);
    }
  dev_cluster_free(c);
}

/* NVLink SHARP only on Hopper NVSwitch and only inside one host; NVLS-tree only across hosts. */
static void test_nvls(void) {
  DevCluster *a100 = preset("dgx-a100"), *h100 = preset("dgx-h100"), *two = preset("dgx-h100:nodes=2");
  g_assert_true(isnan(first_ranks(a100, CM_ALL_REDUCE, 8, 1024 * MIB).candidates[CM_ALGO_NVLS]));
  CmCollectiveEstimate e = first_ranks(h100, CM_ALL_REDUCE, 8, 1024 * MIB);
  g_assert_cmpint(e.algorithm, ==, CM_ALGO_NVLS);
  g_assert_true(isnan(e.candidates[CM_ALGO_NVLS_TREE]));
  CmCollectiveEstimate f = first_ranks(two, CM_ALL_REDUCE, 16, 1024 * MIB);
  g_assert_true(isnan(f.candidates[CM_ALGO_NVLS]));
  g_assert_false(isnan(f.candidates[CM_ALGO_NVLS_TREE]));
  /* All-gather has NVLS too, broadcast only the ring. */
  g_assert_false(isnan(first_ranks(h100, CM_ALL_GATHER, 8, MIB).candidates[CM_ALGO_NVLS]));
  g_assert_cmpint(first_ranks(h100, CM_BROADCAST, 8, MIB).algorithm, ==, CM_ALGO_RING);
  dev_cluster_free(a100);
  dev_cluster_free(h100);
  dev_cluster_free(two);
}

/* NVLS all-reduce inside one host runs as a three-stage pipeline (scatter, multicast reduce,
 * gather: NCCL's all_reduce.h) over chunk steps of nvlsChannels x nHeads chunks (enqueue.cc
 * calcCollChunking), so it takes two step times more than the tuner's latency + size /
 * bandwidth. 8xH200 at 4 MiB: 16 channels x 8 heads, chunks of 16 KiB (4 MiB < 2 x 128 x
 * 32 KiB), a step of 2 MiB; the tuner still picks NVLS and prices it without the fill. */
static void test_nvls_pipeline_fill(void) {
  DevCluster *c = preset("dgx-h200");
  CmCollectiveEstimate e = first_ranks(c, CM_ALL_REDUCE, 8, 4 * MIB);
  g_assert_cmpint(e.algorithm, ==, CM_ALGO_NVLS);
  CmNcclHardware hw;
  cm_nccl_hardware(c, &hw);
  CmNcclCost cost;
  double tuner = cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_NVLS, CM_PROTO_SIMPLE, &e.shape, &hw, 4 * MIB, &cost);
  CmNcclExec x;
  cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_NVLS, CM_PROTO_SIMPLE, &e.shape, &hw, 4 * MIB, &x);
  g_assert_cmpint(x.stages, ==, 3);
  g_assert_cmpint(x.concurrent_ops, ==, 128);
  g_assert_cmpfloat(x.chunk_bytes, ==, 16384);
  CLOSE(e.time_s, tuner + 2 * (2 * MIB) / cost.algbw);
  CLOSE(e.candidates[CM_ALGO_NVLS], e.time_s);
  /* Chunks grow with size (32, 64, 128 KiB): the fill is a vanishing share of large sizes. */
  cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_NVLS, CM_PROTO_SIMPLE, &e.shape, &hw, 32 * MIB, &x);
  g_assert_cmpfloat(x.chunk_bytes, ==, 32768);
  cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_NVLS, CM_PROTO_SIMPLE, &e.shape, &hw, 256 * MIB, &x);
  g_assert_cmpfloat(x.chunk_bytes, ==, 65536);
  cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_NVLS, CM_PROTO_SIMPLE, &e.shape, &hw, 16384 * MIB, &x);
  g_assert_cmpfloat(x.chunk_bytes, ==, 131072);
  g_assert_cmpfloat(x.fill_s / x.time_s, <, 0.003);
  /* The ring has no fill: its ranks advance in lock-step from step 0. */
  CmCollectiveEstimate a = first_ranks(c, CM_ALL_REDUCE, 8, 4 * MIB);
  double ring = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &a.shape, &hw, 4 * MIB, &x);
  g_assert_cmpfloat(x.fill_s, ==, 0);
  CLOSE(ring, cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &a.shape, &hw, 4 * MIB, NULL));
  dev_cluster_free(c);
}

/* The network plugin's reported latency (aws-ofi-nccl: 75 us on p5) enters NCCL's choice as
 * its tuner does (interLat = hwLat[NET] + latencyInter, twice for Simple), not the time the
 * kernels take: the same group and size on aws-p5 and on the same hosts without it
 * (inter_nccl_latency_us=0) pick by different latencies and time the pick alike. */
static void test_net_latency_choice(void) {
  DevCluster *efa = preset("aws-p5:nodes=4"), *bare = preset("aws-p5:nodes=4,inter_nccl_latency_us=0");
  CmNcclHardware hw, hw0;
  cm_nccl_hardware(efa, &hw);
  cm_nccl_hardware(bare, &hw0);
  g_assert_cmpfloat(hw.net_latency_us, ==, 75.0);
  CmCollectiveEstimate e = first_ranks(efa, CM_ALL_REDUCE, 32, MIB);
  double with = cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw, MIB, NULL);
  double without = cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw0, MIB, NULL);
  /* 8 inter-host steps of the ring, 2 x 75 us each with Simple, times the ring plateau 1.4. */
  CLOSE(with - without, 8 * 150e-6 * 1.4);
  double exec = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw, MIB, NULL);
  CLOSE(exec, cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw0, MIB, NULL));
  /* Every candidate is timed without it; the pick is the tuner's with it. */
  CmCollectiveEstimate f = first_ranks(bare, CM_ALL_REDUCE, 32, MIB);
  for (int a = 0; a < CM_ALGO_COUNT; a++)
    if (!isnan(e.candidates[a])) CLOSE(e.candidates[a], f.candidates[a]);
  CmAlgorithm algorithm;
  CmProtocol protocol;
  cm_nccl_tune(CM_ALL_REDUCE, &e.shape, &hw, MIB, &algorithm, &protocol, NULL);
  g_assert_cmpint(e.algorithm, ==, algorithm);
  g_assert_cmpint(e.protocol, ==, protocol);
  dev_cluster_free(efa);
  dev_cluster_free(bare);
}

/* What a network step takes in the kernels' time: on EFA the figure of AWS's own tuner model
 * (aws-ofi-nccl nccl_ofi_model.cpp: net_lat 20 us per inter-node step, + 3 us completion
 * overhead with Simple) replaces NCCL's hwLat[NET] (14 us Ring/Simple, 4 us Ring/LL128); the
 * choice stays NCCL's (hwLat[NET] + the plugin's latency); clusters without the figure
 * (InfiniBand: NCCL's own transport) keep hwLat[NET]. */
static void test_net_step_latency(void) {
  DevCluster *efa = preset("aws-p5:nodes=4"), *bare = preset("aws-p5:nodes=4,inter_net_step_latency_us=0");
  CmNcclHardware hw, hw0;
  cm_nccl_hardware(efa, &hw);
  cm_nccl_hardware(bare, &hw0);
  g_assert_cmpfloat(hw.net_step_us, ==, 20.0);
  g_assert_cmpfloat(hw.net_simple_extra_us, ==, 3.0);
  g_assert_false(hw.kernel_view);
  CmCollectiveEstimate e = first_ranks(efa, CM_ALL_REDUCE, 32, MIB);
  /* Ring Simple: 8 inter-host steps, (20 + 3) - 14 us each, times the ring plateau 1.4. */
  double ring = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw, MIB, NULL);
  double ring0 = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &e.shape, &hw0, MIB, NULL);
  CLOSE(ring - ring0, 8 * 9e-6 * 1.4);
  /* Ring LL128: 20 - 4 us on each of the 8. */
  double ll128 = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_LL128, &e.shape, &hw, MIB, NULL);
  double ll128_0 = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_LL128, &e.shape, &hw0, MIB, NULL);
  CLOSE(ll128 - ll128_0, 8 * 16e-6);
  /* Tree LL128 across 4 hosts: 2 x log2(4) network hops, 20 - 8.5 us each. */
  double tree = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_TREE, CM_PROTO_LL128, &e.shape, &hw, MIB, NULL);
  double tree0 = cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_TREE, CM_PROTO_LL128, &e.shape, &hw0, MIB, NULL);
  CLOSE(tree - tree0, 4 * 11.5e-6);
  /* The tuner's formula does not see it: the same pick at every size. */
  for (double bytes = 64 * 1024; bytes <= 16384 * MIB; bytes *= 4) {
    CmAlgorithm a, a0;
    CmProtocol p, p0;
    CLOSE(cm_nccl_tune(CM_ALL_REDUCE, &e.shape, &hw, bytes, &a, &p, NULL),
          cm_nccl_tune(CM_ALL_REDUCE, &e.shape, &hw0, bytes, &a0, &p0, NULL));
    g_assert_cmpint(a, ==, a0);
    g_assert_cmpint(p, ==, p0);
  }
  /* Inside one host nothing changes. */
  CmCollectiveEstimate one = first_ranks(efa, CM_ALL_REDUCE, 8, MIB);
  CLOSE(cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &one.shape, &hw, MIB, NULL),
        cm_nccl_exec_time(CM_ALL_REDUCE, CM_ALGO_RING, CM_PROTO_SIMPLE, &one.shape, &hw0, MIB, NULL));
  /* InfiniBand presets carry no figure. */
  DevCluster *ib = preset("dgx-h100:nodes=4");
  CmNcclHardware hib;
  cm_nccl_hardware(ib, &hib);
  g_assert_cmpfloat(hib.net_step_us, ==, 0.0);
  dev_cluster_free(ib);
  dev_cluster_free(efa);
  dev_cluster_free(bare);
}

/* LL128 on Blackwell: NCCL 2.30.7 logged the (algorithm, protocol) of every all-reduce of a
 * 4 x 8 B200 sweep over EFA (stas00/ml-engineering network/README.md at 0cc3de5): Tree LL to
 * 256 KiB, Tree LL128 512 KiB - 16 MiB, Ring LL128 32-64 MiB, NVLS-tree 128-256 MiB, Ring
 * Simple from 512 MiB. With LL128 off on sm 100 (b6475625) the model picked NVLS-tree from
 * 1 MiB to 128 MiB; now the tuner's pick (reference tables: no release stated) matches the log
 * at 15 of the 20 sizes: these 11 (and LL at 32-128 KiB), not at 256 KiB (LL128), 32-64 MiB
 * (Tree LL128) and 128-256 MiB (Ring LL128). With 2.28.3's tables (nccl_version=2.30.7, the
 * logged release) the pick is Ring LL128 from 32 MiB up. The chooser of that run was AWS's
 * tuner plugin (NCCL_TUNER_PLUGIN=ofi), which the preset now carries (/nccl/aws-tuner/p6):
 * NCCL's own formula is checked here with the plugin off. */
static void test_blackwell_ll128(void) {
  DevCluster *c = preset("aws-p6-b200:nodes=4,inter_nccl_tuner=default");
  static const struct {
    double mib;
    CmAlgorithm algorithm;
    CmProtocol protocol;
  } logged[] = {{0.03125, CM_ALGO_TREE, CM_PROTO_LL},     {0.0625, CM_ALGO_TREE, CM_PROTO_LL},
                {0.125, CM_ALGO_TREE, CM_PROTO_LL},       {0.5, CM_ALGO_TREE, CM_PROTO_LL128},
                {1, CM_ALGO_TREE, CM_PROTO_LL128},        {2, CM_ALGO_TREE, CM_PROTO_LL128},
                {4, CM_ALGO_TREE, CM_PROTO_LL128},        {8, CM_ALGO_TREE, CM_PROTO_LL128},
                {16, CM_ALGO_TREE, CM_PROTO_LL128},       {512, CM_ALGO_RING, CM_PROTO_SIMPLE},
                {1024, CM_ALGO_RING, CM_PROTO_SIMPLE},    {2048, CM_ALGO_RING, CM_PROTO_SIMPLE},
                {4096, CM_ALGO_RING, CM_PROTO_SIMPLE},    {8192, CM_ALGO_RING, CM_PROTO_SIMPLE},
                {16384, CM_ALGO_RING, CM_PROTO_SIMPLE}};
  for (gsize i = 0; i < G_N_ELEMENTS(logged); i++) {
    CmCollectiveEstimate e = first_ranks(c, CM_ALL_REDUCE, 32, logged[i].mib * MIB);
    g_assert_cmpint(e.algorithm, ==, logged[i].algorithm);
    g_assert_cmpint(e.protocol, ==, logged[i].protocol);
  }
  /* One B200 node keeps NVLS (NVLink SHARP) in the middle sizes. */
  DevCluster *one = preset("aws-p6-b200");
  g_assert_cmpint(first_ranks(one, CM_ALL_REDUCE, 8, 16 * MIB).algorithm, ==, CM_ALGO_NVLS);
  dev_cluster_free(one);
  dev_cluster_free(c);
}

static CmNcclGraph nvls_graph_of(const char *spec) {
  DevCluster *c = preset(spec);
  CmNcclHardware hw;
  cm_nccl_hardware(c, &hw);
  CmNcclGraph graph;
  g_assert_true(cm_nccl_nvls_graph(&hw, c->gpus_per_node, &graph));
  dev_cluster_free(c);
  return graph;
}

/* NCCL's NVLS graph across hosts (search.cc ncclTopoCompute, pattern NVLS, NCCL 2.28.3) and
 * 2.28.3's NVLS-tree bandwidth on it (tuning.cc ncclTopoTuneModel). p6-b200: 8 B200 (18
 * NVLinks at SM100's 40.1 GB/s = 721.8 GB/s to the NVSwitch), 8 NICs of 400 Gb/s (50 GB/s):
 * sm100's inter speeds {96, 48, ...} start at 48, eight heads fit (9 x 48 <= 721.8), pass 2's
 * bwInter 96 exceeds the NIC: 8 channels at 48/48. An H100 host (18 x 20.6 = 370.8 GB/s): 48
 * fits six heads, 45 seven, 40 eight; pass 2 then raises bwInter back to 48: 8 channels at
 * 40/48. Four NICs: four heads. 200 Gb/s NICs: 24/24. */
static void test_nvls_tree_graph(void) {
  CmNcclGraph g = nvls_graph_of("aws-p6-b200:nodes=4,nccl_version=2.30.7");
  g_assert_cmpint(g.channels, ==, 8);
  g_assert_cmpfloat(g.bw_intra, ==, 48.0);
  g_assert_cmpfloat(g.bw_inter, ==, 48.0);
  g = nvls_graph_of("dgx-h100:nodes=4");
  g_assert_cmpint(g.channels, ==, 8);
  g_assert_cmpfloat(g.bw_intra, ==, 40.0);
  g_assert_cmpfloat(g.bw_inter, ==, 48.0);
  g = nvls_graph_of("aws-p6-b200:nodes=4,nics_per_node=4");
  g_assert_cmpint(g.channels, ==, 4);
  g_assert_cmpfloat(g.bw_inter, ==, 48.0);
  g = nvls_graph_of("aws-p6-b200:nodes=4,inter_bw_Gbps=200");
  g_assert_cmpint(g.channels, ==, 8);
  g_assert_cmpfloat(g.bw_intra, ==, 24.0);
  g_assert_cmpfloat(g.bw_inter, ==, 24.0);

  /* The bandwidth: per channel min(2 x 48 x 0.74 x 7/8 = 62.16, 48, perChMaxNVLSTreeBws 43.1)
   * = 43.1 on 4 hosts; 8 channels; x 32 / 62 for the algorithm bandwidth. Two hosts: bwInter
   * x 2 and the cap 96.0, the NVLink term 62.16 binds. Hopper on 4 hosts: min(2 x 40 x 0.85 x
   * 7/8 = 59.5, 48, 45.5). */
  static const struct {
    const char *spec;
    int ranks;
    double busbw_GBps;
  } cases[] = {{"aws-p6-b200:nodes=4,nccl_version=2.30.7", 32, 8 * 43.1},
               {"aws-p6-b200:nodes=2,nccl_version=2.28.3", 16, 8 * 2 * 48 * 0.74 * 7 / 8},
               {"dgx-h100:nodes=4,nccl_version=2.28.3", 32, 8 * 45.5}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    DevCluster *c = preset(cases[i].spec);
    CmNcclHardware hw;
    cm_nccl_hardware(c, &hw);
    CmGroupShape shape = {cases[i].ranks, cases[i].ranks / 8, 8, 8};
    CmNcclCost cost;
    double t = cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_NVLS_TREE, CM_PROTO_SIMPLE, &shape, &hw, 256 * MIB, &cost);
    g_assert_false(isnan(t));
    g_assert_cmpint(cost.channels, ==, 8);
    g_assert_cmpfloat_with_epsilon(cost.busbw / 1e9, cases[i].busbw_GBps, 1e-3);
    CLOSE(cost.algbw, cost.busbw * cases[i].ranks / (2.0 * (cases[i].ranks - 1)));
    dev_cluster_free(c);
  }
  /* Before 2.28.3 the reference's form stays: min(NVLink, NICs / 2) x 0.74 x 5/6. */
  DevCluster *old = preset("aws-p6-b200:nodes=4,nccl_version=2.27.7");
  CmNcclHardware hw;
  cm_nccl_hardware(old, &hw);
  CmGroupShape shape = {32, 4, 8, 8};
  CmNcclCost cost;
  cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_NVLS_TREE, CM_PROTO_SIMPLE, &shape, &hw, 256 * MIB, &cost);
  g_assert_cmpfloat_with_epsilon(cost.algbw / 1e9, 400.0 / 2 * 0.74 * 5 / 6, 1e-6);
  dev_cluster_free(old);
}

static gboolean runs_all(CmAlgorithm a, CmProtocol p, gpointer data) {
  (void)a, (void)p, (void)data;
  return TRUE;
}

static gboolean runs_no_nvls_tree(CmAlgorithm a, CmProtocol p, gpointer data) {
  (void)p, (void)data;
  return a != CM_ALGO_NVLS_TREE;
}

/* aws-ofi-nccl's p6-b200 region table (src/tuner/nccl_ofi_regions.cpp at 228fa0e,
 * region_init_internal_p6) at 32 ranks on 4 hosts gives the pick NCCL 2.30.7 logged at every
 * size of the 4 x 8 B200 sweep (stas00/ml-engineering network/README.md at 0cc3de5): Tree LL
 * to 256 KiB, Tree LL128 512 KiB - 16 MiB, Ring LL128 32-64 MiB, NVLS-tree 128-256 MiB, Ring
 * Simple from 512 MiB. Its boundaries at 32 ranks are vertices or edges of the regions:
 * Tree LL up to 393,216 bytes, Tree LL128 to 18,350,080, Ring LL128 (the bottom edge of its
 * region) to 133,693,440, NVLS-tree to 435,159,040, Ring Simple to 100 GiB. */
static void test_aws_tuner_p6(void) {
  static const struct {
    double bytes;
    CmAlgorithm algorithm;
    CmProtocol protocol;
  } logged[] = {
      {32768, CM_ALGO_TREE, CM_PROTO_LL},           {65536, CM_ALGO_TREE, CM_PROTO_LL},
      {131072, CM_ALGO_TREE, CM_PROTO_LL},          {262144, CM_ALGO_TREE, CM_PROTO_LL},
      {0.5 * MIB, CM_ALGO_TREE, CM_PROTO_LL128},    {1 * MIB, CM_ALGO_TREE, CM_PROTO_LL128},
      {2 * MIB, CM_ALGO_TREE, CM_PROTO_LL128},      {4 * MIB, CM_ALGO_TREE, CM_PROTO_LL128},
      {8 * MIB, CM_ALGO_TREE, CM_PROTO_LL128},      {16 * MIB, CM_ALGO_TREE, CM_PROTO_LL128},
      {32 * MIB, CM_ALGO_RING, CM_PROTO_LL128},     {64 * MIB, CM_ALGO_RING, CM_PROTO_LL128},
      {128 * MIB, CM_ALGO_NVLS_TREE, CM_PROTO_SIMPLE}, {256 * MIB, CM_ALGO_NVLS_TREE, CM_PROTO_SIMPLE},
      {512 * MIB, CM_ALGO_RING, CM_PROTO_SIMPLE},   {1024 * MIB, CM_ALGO_RING, CM_PROTO_SIMPLE},
      {2048 * MIB, CM_ALGO_RING, CM_PROTO_SIMPLE},  {4096 * MIB, CM_ALGO_RING, CM_PROTO_SIMPLE},
      {8192 * MIB, CM_ALGO_RING, CM_PROTO_SIMPLE},  {16384 * MIB, CM_ALGO_RING, CM_PROTO_SIMPLE},
      /* The boundaries, each side. */
      {393216, CM_ALGO_TREE, CM_PROTO_LL},          {393217, CM_ALGO_TREE, CM_PROTO_LL128},
      {18350080, CM_ALGO_TREE, CM_PROTO_LL128},     {18350081, CM_ALGO_RING, CM_PROTO_LL128},
      {133693440, CM_ALGO_RING, CM_PROTO_LL128},    {133693441, CM_ALGO_NVLS_TREE, CM_PROTO_SIMPLE},
      {435159040, CM_ALGO_NVLS_TREE, CM_PROTO_SIMPLE}, {435159041, CM_ALGO_RING, CM_PROTO_SIMPLE}};
  for (gsize i = 0; i < G_N_ELEMENTS(logged); i++) {
    CmAlgorithm a = CM_ALGO_NONE;
    CmProtocol p = CM_PROTO_COUNT;
    g_assert_true(cm_aws_tuner_p6_choice(CM_ALL_REDUCE, 32, 4, logged[i].bytes, runs_all, NULL, &a, &p));
    g_assert_cmpint(a, ==, logged[i].algorithm);
    g_assert_cmpint(p, ==, logged[i].protocol);
  }
  CmAlgorithm a = CM_ALGO_NONE;
  CmProtocol p = CM_PROTO_COUNT;
  /* Beyond 100 GiB, at two hosts or fewer, at 4 ranks a host, for broadcast: NCCL chooses. */
  g_assert_false(cm_aws_tuner_p6_choice(CM_ALL_REDUCE, 32, 4, 200.0 * 1024 * MIB, runs_all, NULL, &a, &p));
  g_assert_false(cm_aws_tuner_p6_choice(CM_ALL_REDUCE, 16, 2, 1 * MIB, runs_all, NULL, &a, &p));
  g_assert_false(cm_aws_tuner_p6_choice(CM_ALL_REDUCE, 16, 4, 1 * MIB, runs_all, NULL, &a, &p));
  g_assert_false(cm_aws_tuner_p6_choice(CM_BROADCAST, 32, 4, 1 * MIB, runs_all, NULL, &a, &p));
  /* A pair NCCL does not run is skipped: without NVLS-tree no region covers 256 MiB. */
  g_assert_false(cm_aws_tuner_p6_choice(CM_ALL_REDUCE, 32, 4, 256 * MIB, runs_no_nvls_tree, NULL, &a, &p));
  g_assert_cmpint(a, ==, CM_ALGO_NONE);
  /* Ring regions for all-gather and reduce-scatter at 8 ranks a host; PAT at one rank a host
   * (all-gather of 1 MiB over 8 hosts), which this model lacks: NCCL's formula then. At 64
   * ranks the all-gather's LL region ends at 2,621,440 bytes (a vertex). */
  g_assert_true(cm_aws_tuner_p6_choice(CM_ALL_GATHER, 64, 8, 2621440, runs_all, NULL, &a, &p));
  g_assert_cmpint(a, ==, CM_ALGO_RING);
  g_assert_cmpint(p, ==, CM_PROTO_LL);
  g_assert_true(cm_aws_tuner_p6_choice(CM_ALL_GATHER, 64, 8, 8 * MIB, runs_all, NULL, &a, &p));
  g_assert_cmpint(a, ==, CM_ALGO_RING);
  g_assert_cmpint(p, ==, CM_PROTO_LL128);
  g_assert_true(cm_aws_tuner_p6_choice(CM_REDUCE_SCATTER, 32, 4, 8192 * MIB, runs_all, NULL, &a, &p));
  g_assert_cmpint(p, ==, CM_PROTO_SIMPLE);
  g_assert_false(cm_aws_tuner_p6_choice(CM_ALL_GATHER, 8, 8, 1 * MIB, runs_all, NULL, &a, &p));
  /* One rank a host, all-reduce over 8 hosts: Tree LL128 at 256 KiB, Ring LL128 at 1 MiB (the
   * edge {131072, 2} - {8388608, 128} crosses 8 ranks at 512 KiB). */
  g_assert_true(cm_aws_tuner_p6_choice(CM_ALL_REDUCE, 8, 8, 0.25 * MIB, runs_all, NULL, &a, &p));
  g_assert_cmpint(a, ==, CM_ALGO_TREE);
  g_assert_cmpint(p, ==, CM_PROTO_LL128);
  g_assert_true(cm_aws_tuner_p6_choice(CM_ALL_REDUCE, 8, 8, 1 * MIB, runs_all, NULL, &a, &p));
  g_assert_cmpint(a, ==, CM_ALGO_RING);
  g_assert_cmpint(p, ==, CM_PROTO_LL128);

  /* Through the preset: the estimate's pick is the plugin's at every logged size (NCCL's
   * formula misses 5 of them, /nccl/blackwell-ll128); a release before 2.21 does not load
   * it, nor does `inter_nccl_tuner=default`. */
  DevCluster *c = preset("aws-p6-b200:nodes=4");
  for (gsize i = 0; i < 20; i++) {
    CmCollectiveEstimate e = first_ranks(c, CM_ALL_REDUCE, 32, logged[i].bytes);
    g_assert_cmpint(e.algorithm, ==, logged[i].algorithm);
    g_assert_cmpint(e.protocol, ==, logged[i].protocol);
    CmNcclHardware hw;
    cm_nccl_hardware(c, &hw);
    CmAlgorithm ta;
    CmProtocol tp;
    cm_nccl_tune(CM_ALL_REDUCE, &e.shape, &hw, logged[i].bytes, &ta, &tp, NULL);
    g_assert_cmpint(ta, ==, logged[i].algorithm);
    g_assert_cmpint(tp, ==, logged[i].protocol);
  }
  DevCluster *old = preset("aws-p6-b200:nodes=4,nccl_version=2.20.3");
  DevCluster *off = preset("aws-p6-b200:nodes=4,inter_nccl_tuner=default");
  CmNcclHardware hw;
  cm_nccl_hardware(old, &hw);
  g_assert_cmpint(hw.tuner_plugin, ==, CM_TUNER_PLUGIN_NONE);
  cm_nccl_hardware(c, &hw);
  g_assert_cmpint(hw.tuner_plugin, ==, CM_TUNER_PLUGIN_AWS_OFI_P6);
  g_assert_cmpint(first_ranks(off, CM_ALL_REDUCE, 32, 32 * MIB).algorithm, ==, CM_ALGO_TREE);
  g_assert_cmpint(first_ranks(old, CM_ALL_REDUCE, 32, 32 * MIB).algorithm, ==, CM_ALGO_TREE);
  g_assert_cmpint(first_ranks(c, CM_ALL_REDUCE, 32, 32 * MIB).algorithm, ==, CM_ALGO_RING);
  /* One host: the plugin leaves NCCL its NVLS. */
  DevCluster *one = preset("aws-p6-b200");
  g_assert_cmpint(first_ranks(one, CM_ALL_REDUCE, 8, 16 * MIB).algorithm, ==, CM_ALGO_NVLS);
  dev_cluster_free(one);
  dev_cluster_free(off);
  dev_cluster_free(old);
  dev_cluster_free(c);
}

/* The bus bandwidth and latency of one (algorithm, protocol) over 8 GPUs of one host. */
static CmNcclCost one_host(const char *spec, CmAlgorithm a, CmProtocol p) {
  DevCluster *c = preset(spec);
  CmNcclHardware hw;
  cm_nccl_hardware(c, &hw);
  int devices[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  CmGroupShape shape;
  cm_group_shape(c, devices, 8, &shape);
  CmNcclCost cost;
  g_assert_false(isnan(cm_nccl_time(CM_ALL_REDUCE, a, p, &shape, &hw, MIB, &cost)));
  dev_cluster_free(c);
  return cost;
}

/* NCCL's tables by release (DevCluster.nccl_version): the reference (tuning.cc at b6475625,
 * and any release before 2.26.2) prices the ring's LL all-reduce at 1/4 of the graph's
 * bandwidth, capped at llMaxBws (Ampere and Hopper 87.7 GB/s on one host); 2.26.2's and
 * 2.28.3's tuning.cc at 1/2, capped at 87.7 (Ampere), 141 (Hopper), 282 (Blackwell), and give
 * tree/Simple an NVLink latency of 4 us a hop on 8.4 base (28 and 0 before). Blackwell's ring
 * LL128 cap per channel: Hopper's 36.7 GB/s in the reference, 2 x 36.7 from 2.26.2; its tree
 * LL128 cap on one host 2 x 36.7 in 2.26.2, 55.6 from 2.28.3. */
static void test_release_tables(void) {
  CLOSE(one_host("dgx-a100", CM_ALGO_RING, CM_PROTO_LL).busbw, 60e9);      /* 12 x 20 / 4 */
  CLOSE(one_host("dgx-a100:nccl_version=2.28.3", CM_ALGO_RING, CM_PROTO_LL).busbw, 87.7e9);
  CLOSE(one_host("dgx-h200", CM_ALGO_RING, CM_PROTO_LL).busbw, 87.7e9);
  CLOSE(one_host("dgx-h200:nccl_version=2.26.1", CM_ALGO_RING, CM_PROTO_LL).busbw, 87.7e9);
  CLOSE(one_host("dgx-h200:nccl_version=2.26.2", CM_ALGO_RING, CM_PROTO_LL).busbw, 141e9);
  CLOSE(one_host("dgx-h200:nccl_version=2.30.7", CM_ALGO_RING, CM_PROTO_LL).busbw, 141e9);
  CLOSE(one_host("dgx-b200:nccl_version=2.28.3", CM_ALGO_RING, CM_PROTO_LL).busbw, 282e9);
  CmNcclCost ref = one_host("dgx-b200", CM_ALGO_RING, CM_PROTO_LL128);
  CmNcclCost later = one_host("dgx-b200:nccl_version=2.27.7", CM_ALGO_RING, CM_PROTO_LL128);
  CLOSE(ref.busbw, MIN(0.92 * 18 * 40.1e9, ref.channels * 36.7e9));
  CLOSE(later.busbw, MIN(0.92 * 18 * 40.1e9, later.channels * 73.4e9));
  CmNcclCost tree26 = one_host("dgx-b200:nccl_version=2.26.2", CM_ALGO_TREE, CM_PROTO_LL128);
  CmNcclCost tree28 = one_host("dgx-b200:nccl_version=2.28.3", CM_ALGO_TREE, CM_PROTO_LL128);
  double tree_bus = 0.92 * 18 * 40.1e9;
  CLOSE(tree26.busbw, MIN(7.0 / 9.0 * MIN(tree_bus, tree26.channels * 77.4e9), tree26.channels * 73.4e9));
  CLOSE(tree28.busbw, MIN(7.0 / 9.0 * MIN(tree_bus, tree28.channels * 70.0e9), tree28.channels * 55.6e9));
  CLOSE(one_host("dgx-h100", CM_ALGO_TREE, CM_PROTO_SIMPLE).latency_s, 2 * 7 * 28e-6);
  CLOSE(one_host("dgx-h100:nccl_version=2.26.2", CM_ALGO_TREE, CM_PROTO_SIMPLE).latency_s,
        8.4e-6 + 2 * 7 * 4e-6);
  /* The default, a stated older release and an unread one between price alike. */
  CLOSE(one_host("dgx-h200:nccl_version=2.19.3", CM_ALGO_NVLS, CM_PROTO_SIMPLE).latency_s, 23e-6);
  CLOSE(one_host("dgx-h200:nccl_version=2.26.1", CM_ALGO_NVLS, CM_PROTO_SIMPLE).latency_s, 23e-6);
  CLOSE(one_host("dgx-h200:nccl_version=2.28.3", CM_ALGO_NVLS, CM_PROTO_SIMPLE).latency_s, 25e-6);
}

/* Simulate's collective tasks and `stratsim collective` give the same time for the same
 * collective (issue 14: 20 ms against 0.56 ms at 1024 ranks), at 16, 1024 and 10^6 ranks;
 * at scale the tuner picks the tree, whose latency grows with log2 of the hosts. */
static void test_same_time(gconstpointer data) {
  int ranks = GPOINTER_TO_INT(data);
  g_autofree char *spec = g_strdup_printf("dgx-a100:nodes=%d", ranks / 8);
  DevCluster *c = preset(spec);
  CmParams params;
  cm_params_default(&params);
  g_autofree int *devices = g_new(int, ranks);
  for (int i = 0; i < ranks; i++) devices[i] = i;
  CmCollectiveEstimate e = cm_collective_estimate(c, CM_ALL_REDUCE, devices, ranks, 32 * MIB, NULL);
  double sim = cm_group_collective_time(&params, c, CM_ALL_REDUCE, devices, ranks, 32 * MIB);
  g_assert_cmpmem(&sim, sizeof sim, &e.time_s, sizeof e.time_s);
  if (ranks >= 1024) {
    g_assert_cmpint(e.algorithm, ==, CM_ALGO_TREE);
    g_assert_cmpfloat(e.time_s, <, 2e-3); /* a 32 MiB gradient, not seconds */
  }
  /* Data-parallel groups (one GPU per host, strided) too. */
  int hosts = ranks / 8;
  for (int i = 0; i < hosts; i++) devices[i] = 8 * i;
  e = cm_collective_estimate(c, CM_ALL_REDUCE, devices, hosts, 32 * MIB, NULL);
  sim = cm_group_collective_time(&params, c, CM_ALL_REDUCE, devices, hosts, 32 * MIB);
  g_assert_cmpmem(&sim, sizeof sim, &e.time_s, sizeof e.time_s);
  dev_cluster_free(c);
}

/* On a network whose plugin reports a latency (aws-p5: 75 us) simulate and `stratsim
 * collective` still agree, at 16 and 1024 ranks and on data-parallel (one GPU per host)
 * groups, and NCCL's pick is the tuner's with that latency. */
static void test_same_time_efa(void) {
  DevCluster *c = preset("aws-p5:nodes=128");
  CmParams params;
  cm_params_default(&params);
  int sizes[] = {16, 1024};
  g_autofree int *devices = g_new(int, 1024);
  for (gsize k = 0; k < G_N_ELEMENTS(sizes); k++) {
    for (int stride = 1; stride <= 8; stride += 7) {
      int n = stride == 1 ? sizes[k] : sizes[k] / 8;
      for (int i = 0; i < n; i++) devices[i] = i * stride;
      CmCollectiveEstimate e = cm_collective_estimate(c, CM_ALL_REDUCE, devices, n, 32 * MIB, NULL);
      double sim = cm_group_collective_time(&params, c, CM_ALL_REDUCE, devices, n, 32 * MIB);
      g_assert_cmpmem(&sim, sizeof sim, &e.time_s, sizeof e.time_s);
      CmNcclHardware hw;
      cm_nccl_hardware(c, &hw);
      CmAlgorithm algorithm;
      cm_nccl_tune(CM_ALL_REDUCE, &e.shape, &hw, 32 * MIB, &algorithm, NULL, NULL);
      g_assert_cmpint(e.algorithm, ==, algorithm);
    }
  }
  dev_cluster_free(c);
}

/* Simulate's collective tasks carry the NVLS pipeline fill too: an 8xH100 tensor-parallel
 * all-reduce of 32 MiB costs the same in both, above the tuner's own figure. */
static void test_same_time_nvls(void) {
  DevCluster *c = preset("dgx-h100");
  CmParams params;
  cm_params_default(&params);
  int devices[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  CmCollectiveEstimate e = cm_collective_estimate(c, CM_ALL_REDUCE, devices, 8, 32 * MIB, NULL);
  double sim = cm_group_collective_time(&params, c, CM_ALL_REDUCE, devices, 8, 32 * MIB);
  g_assert_cmpmem(&sim, sizeof sim, &e.time_s, sizeof e.time_s);
  g_assert_cmpint(e.algorithm, ==, CM_ALGO_NVLS);
  CmNcclHardware hw;
  cm_nccl_hardware(c, &hw);
  double tuner = cm_nccl_time(CM_ALL_REDUCE, CM_ALGO_NVLS, CM_PROTO_SIMPLE, &e.shape, &hw, 32 * MIB, NULL);
  g_assert_cmpfloat(sim, >, tuner * 1.1);
  dev_cluster_free(c);
  /* The release a cluster states reaches simulate as it reaches `collective`: NCCL 2.30.7 on
   * an H200 node runs a 1 MiB all-reduce as the ring's LL (2.28.3's tables), the same time
   * both ways, shorter than the default's NVLS with its fill. */
  DevCluster *later = preset("dgx-h200:nccl_version=2.30.7"), *plain = preset("dgx-h200");
  CmCollectiveEstimate l = cm_collective_estimate(later, CM_ALL_REDUCE, devices, 8, MIB, NULL);
  double lsim = cm_group_collective_time(&params, later, CM_ALL_REDUCE, devices, 8, MIB);
  g_assert_cmpmem(&lsim, sizeof lsim, &l.time_s, sizeof l.time_s);
  g_assert_cmpint(l.algorithm, ==, CM_ALGO_RING);
  g_assert_cmpint(l.protocol, ==, CM_PROTO_LL);
  CmCollectiveEstimate p = cm_collective_estimate(plain, CM_ALL_REDUCE, devices, 8, MIB, NULL);
  g_assert_cmpint(p.algorithm, ==, CM_ALGO_NVLS);
  g_assert_cmpfloat(l.time_s, <, p.time_s);
  dev_cluster_free(later);
  dev_cluster_free(plain);
}

/* End to end: a data-parallel run's gradient all-reduce task over @data ranks lasts what the
 * estimate says (the 10^6-rank case is /nccl/same-time: building a run that size is minutes). */
static void test_simulate_task(gconstpointer data) {
  int ranks = GPOINTER_TO_INT(data);
  DevCluster *c = test_cluster(ranks / 8, 8, 300, 3.4, 200, 9.6);
  MdlGraph *g = test_chain_graph(1, 4096, ranks);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_data_parallel(g, c, ranks, DEV_DTYPE_FP16, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {0};
  SimRun *run = sim_run_new_with_options(g, s, c, &params, &options, &error);
  g_assert_no_error(error);
  g_autofree int *all = g_new(int, ranks);
  for (int i = 0; i < ranks; i++) all[i] = i;
  CmCollectiveEstimate e = cm_collective_estimate(c, CM_ALL_REDUCE, all, ranks, 4096.0 * 4096 * 2, NULL);
  int syncs = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.kind != SIM_TASK_GRAD_SYNC) continue;
    syncs++;
    g_assert_cmpuint(t.duration, ==, sim_time_from_seconds(e.time_s));
  }
  g_assert_cmpint(syncs, >, 0);
  if (ranks >= 1024) g_assert_cmpint(e.algorithm, ==, CM_ALGO_TREE);
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* ---- published curves ---- */

static GPtrArray *curves;

static const CmCurve *curve_with(const char *needle, int algorithm) {
  for (guint i = 0; i < curves->len; i++) {
    const CmCurve *c = g_ptr_array_index(curves, i);
    if (strstr(c->system, needle) && c->algorithm == algorithm) return c;
  }
  g_error("no curve '%s'", needle);
  return NULL;
}

typedef struct {
  const char *needle; /* a substring of the gpu_system column */
  int algorithm;      /* -1: NCCL's own choice */
  double model_mean;  /* bounds on what the model and calibration achieve (see below) */
  double heldout_mean, heldout_max;
  double extrapolation_mean;
} CurveBounds;

/* The bounds are the errors measured when this was written, rounded up by a point or two so a
 * change that makes the model worse fails here. The A100 sweep (ring) is missed at 1-256 MiB
 * by 17-55%: it is flat at 101 us from 1 to 4 MiB, an nccl-tests -g 8 launch floor, and ramps
 * far more slowly than NCCL's latency + size / bandwidth. On the NVLS sweeps (H200, B200;
 * PyTorch's all_reduce_bench.py) the pipeline fill of NVLS (/nccl/nvls/pipeline-fill) brought
 * the mean from 18.8% to 8.3% (H200) and 29.6% to 20.8% (B200); B200 stays 30-50% too fast
 * at 4-64 MiB. At the largest sizes, and with the algorithm forced, the model is within 1-9%
 * (B200's NVLS: NCCL's 0.74 efficiency is a little pessimistic there). Calibrated: a line per
 * interval between measured sizes and the model's extra time above them (cm_calibrate_lookup.c)
 * took held-out errors over the first six curves from 4.0% mean / 25.5% max (log-log bus
 * bandwidth) to 4.0% / 19.8%, and 4x extrapolation from 8.6% / 39.6% (the model's peak cost
 * per byte) to 7.8% / 33.6%. The held-out A100 maximum is its 8 MiB point, measured faster
 * per byte than 16 MiB. Three sweeps were timed by all_reduce_bench.py one call at a time on
 * an idle GPU, which adds PyTorch's per-call host path to every call (cm_curve_harness,
 * /nccl/public/harness): compared with the model plus that harness, the old 8 x H200 sweep
 * went from 8.3% to 5.8% mean, 8 x B200 from 20.8% to 12.1% (1-2 MiB: -41/-36% -> -8/-8%;
 * 4-8 MiB stay 34-37% too fast), and the 4 x H100 one, whose paired nccl-tests sweep the
 * harness figure comes from (so not an independent check), from 11.4% to 7.3%. */
static const CurveBounds bounds[] = {
    /* A100: the kernels at NCCL 2.7.5's 235 GB/s cap (cm_nccl.c) took every 8 x A100 sweep's
     * 1-16 GiB points from -2..-4% to -1..+0% (this one 19.4% -> 17.9% mean). */
    {"8x A100 single node", -1, 0.19, 0.05, 0.21, 0.10},
    {"8x H200 single node", -1, 0.07, 0.03, 0.07, 0.05},
    {"8x H200 node NVLink4 (nccl-tests); algo=Ring", CM_ALGO_RING, 0.02, -1, -1, -1},
    {"8x H200 node NVLink4 (nccl-tests); algo=NVLS", CM_ALGO_NVLS, 0.04, -1, -1, -1},
    {"NCCL_NVLS_ENABLE=0; algo=Ring", CM_ALGO_RING, 0.02, -1, -1, -1},
    {"NCCL_NVLS_ENABLE=1; algo=NVLS", CM_ALGO_NVLS, 0.06, -1, -1, -1},
    /* NCCL 2.27.7 takes 2.26.2's tables (cm_nccl.c): ring LL at 282 GB/s wins 1-2 MiB, 12.1% ->
     * 13.7% mean (1-2 MiB -8/-8% -> -25/-23%), 4x extrapolation 11.5% -> 10.0%. */
    {"AWS p6-b200.48xlarge: 8x B200", -1, 0.15, 0.06, 0.14, 0.11},
    {"NVLink5 (nccl-tests, NCCL 2.27.7); algo=Ring", CM_ALGO_RING, 0.06, -1, -1, -1},
    {"NVLink5 (nccl-tests, NCCL 2.27.7); algo=NVLS", CM_ALGO_NVLS, 0.09, -1, -1, -1},
    /* Added after the NVLS pipeline was written (network/benchmarks/README.md, 0cc3de5). */
    /* On aws-p6-b200 (EFA): aws-ofi-nccl's 35 us plugin latency moves NCCL's 128 MiB pick
     * from the ring to NVLS-tree (+7.8% -> +16.9%): model 22.0% -> 22.7%, 4x 12.7% -> 13.4%. */
    /* With AWS's region tuner choosing (aws-ofi-nccl on p6-b200: /nccl/aws-tuner/p6), the
     * model runs the logged pick at every size; timed with the reference tables (this curve
     * states no release) its Ring LL128 at 32-64 MiB is +9/+9% (the formula's Tree LL128 there
     * was -5/+15%) and NVLS-tree at 128-256 MiB +21/+25% (+16/+12%): 16.0% -> 17.2% mean,
     * 4x extrapolation 14.0% -> 15.7%. */
    {"4 nodes x 8 B200", -1, 0.18, 0.05, 0.15, 0.16},
    /* Checked with NCCL 2.28.3's tables since these state 2.30.7 (cm_nccl.c): the ring's LL
     * at 1 MiB now wins over NVLS (+42% -> +14%, +38% -> +11%), 2 MiB +23 -> +28% and
     * +17 -> +22% (NVLS still picked; 2.28.3's NVLS bandwidth is not modelled). */
    {"all_reduce_bench.py default timing", -1, 0.09, 0.04, 0.13, 0.05},
    {"nccl-tests all_reduce_perf built against NCCL 2.30.7", -1, 0.07, 0.05, 0.15, 0.04},
    /* 2 x 8 H100 over GPUDirect-TCPXO (gcp-a3-mega): within 7% from 1 GiB up, 46-83% too
     * fast below 256 MiB, where the measured times sit on a 120-200 us floor (123 us at 8
     * bytes); the plugin reports no latency to NCCL. With TCPXO's network step measured on the
     * all-gather at 64 KiB (/nccl/public/tcpxo-step): 44.1% -> 29.2% mean, 1 MiB -71% -> -11%,
     * 2-256 MiB still -22..-71% (the tuner plugin's picks and the 1-16 MiB growth of about
     * 20 GB/s are not modelled); the two TCPXO all-gathers 16.8% -> 5.9% and 21.6% -> 8.6%. */
    {"Google Cloud A3 Mega", -1, 0.30, 0.01, 0.02, 0.19},
    /* Added after the network presets, unseen by any change to the model: 4 H100 of an HGX
     * board in one VM, NCCL 2.26.2 (dudeperf3ct.github.io). The model picks NVLS; the measured
     * peak (367 GB/s bus bandwidth at 16 GiB) is the ring's (18 NVLinks x 20.6 GB/s), so NVLS
     * was likely unavailable in that VM: 7-9% too fast at 128 MiB-16 GiB; nccl-tests 22-25% too
     * slow at 1-4 MiB, all_reduce_bench 13-25% too fast there. With 2.26.2's tables (ring LL
     * at 141 GB/s; cm_nccl.c) the model picks ring LL at 1 MiB: nccl-tests 11.0% -> 9.6% mean
     * (1 MiB +25% -> -24%, 2 MiB +22% -> +1%), all_reduce_bench 7.3% -> 7.8% (1 MiB +13% ->
     * -17%); 4x extrapolation 5.9% -> 10.8% and 5.1% -> 7.8% (4 MiB +7% -> +41%, +4% -> +29%). */
    {"4x H100 80GB HBM3 (one VM", -1, 0.11, 0.02, 0.06, 0.12},
    {"4x H100 80GB HBM3, torch 2.7.0", -1, 0.08, 0.01, 0.01, 0.09},
    /* Also added after the presets, unseen: an all-gather over the same A3 Mega network
     * (dstack's example run), 48% too fast at 8 MiB, 6-14% from 64 MiB up. */
    {"nccl-tests all_gather_perf -g 1, 16 ranks", -1, 0.06, 0.01, 0.03, 0.05},
    /* Added after the harness (cm_curve_harness), unseen: 8 x B200 with NCCL 2.30.7 timed
     * with queued calls (no harness): 10.1% mean; 1-2 MiB within 6% (where the one-call sweep
     * of NCCL 2.27.7 was 36-41% above the model alone), 4-64 MiB 11-28% too fast. */
    /* With NCCL 2.28.3's tables (the curve states 2.30.7): Blackwell's ring LL at 282 GB/s
     * makes 1-2 MiB 31% / 20% too fast (were -4% / +6%): 10.1% -> 12.2% mean. */
    {"8x B200 NVLink5 (1 node); torch 2.14.0", -1, 0.13, 0.05, 0.14, 0.07},
    /* Added after the harness, unseen: 4 x 8 B200 (NCCL 2.30.7, the mean of 2 sweeps) split by
     * the algorithm NCCL logged, each checked against the model's time for that algorithm.
     * With LL128 on Blackwell (/nccl/blackwell-ll128): Tree LL128 at 1-16 MiB 50-57% too fast
     * (was 49-142% too slow with LL/Simple), Ring LL128 at 32-64 MiB -19/-10% (was +29/+14%),
     * NVLS-tree at 128-256 MiB +17/+23%, Ring Simple from 512 MiB -1 to -10%; the default
     * sweep above went 22.7% -> 21.5%. With AWS's per-network-step latency in the kernels'
     * time (/nccl/net-step-latency): Tree LL128 -22..-41%, Ring LL128 +9/+10%, NVLS-tree
     * +20/+25%, Ring Simple -7..+1%; the default sweep 21.5% -> 16.0%. With the tables of the
     * release these state (2.30.7: 2.28.3's Blackwell per-channel rows, cm_check.c): Tree
     * LL128 -18..-31%, Ring LL128 -1/-4%, Ring Simple 4.7%; the default sweep states none and
     * keeps the reference tables (16.0%). */
    {"(protocols by size: Tree LL128 here)", CM_ALGO_TREE, 0.25, 0.02, 0.02, 0.15},
    {"(protocols by size: Ring LL128 here)", CM_ALGO_RING, 0.05, -1, -1, -1},
    {"algo=NVLSTree as NCCL logged it", CM_ALGO_NVLS_TREE, 0.23, -1, -1, -1},
    {"(protocols by size: Ring Simple here)", CM_ALGO_RING, 0.05, 0.03, 0.06, 0.05},
    /* Added last, unseen (MG-Cafe's A3 Mega report, NCCL 2.28.7): 8 H100 of one A3 Mega VM,
     * nccl-tests -g 8, 4.8% mean (1 MiB -10%, 16 MiB -6%, 128 MiB - 2 GiB within 5%); and a
     * second TCPXO all-gather over 2 x 8, 21.7% mean: 40-67% too fast at 1-16 MiB, 5-14% from
     * 64 MiB, as dstack's; 8.6% with TCPXO's network step measured on its 64 KiB point
     * (/nccl/public/tcpxo-step). */
    /* With NCCL 2.28.3's tables (the curve states 2.28.7): 1 MiB -10% -> -28% (ring LL at
     * Hopper's 141 GB/s, where the 8 x H200 sweeps of 2.30.7 measure 25 us and this VM 39). */
    {"8x H100 Mega 80GB HBM3 in one Google Cloud A3 Mega VM", -1, 0.08, 0.12, 0.18, 0.04},
    {"GPUDirect-TCPXO FasTrak v1.0.8", -1, 0.09, 0.02, 0.04, 0.05},
    /* Added 2026-11-25, unseen: seven more 8 x A100 NVSwitch sweeps (nccl_a100.csv, the
     * Korthikanti reference's curves; validate/KORTHIKANTI.md). Every one is missed the way
     * the first is: the model is 0-49% too fast at 4-128 MiB and within 2-5% from 1 GiB (2%
     * with the A100 kernels' 235 GB/s cap since), in NCCL 2.16.2 and 2.19.3 and a 2024 pip
     * NCCL as in the older runs; the runs with one process per GPU (mpirun) are the closest
     * (thanos 10.8% -> 9.6%, gcm 6.1% -> 4.2% from 32 MiB). */
    {"sb-validation-scus-000001", -1, 0.16, 0.06, 0.08, 0.04},
    {"inst-ks8ls-comp", -1, 0.19, 0.08, 0.15, 0.05},
    {"(thanos; nvidia-smi: 12 NVLinks x 25 GB/s); nccl-tests all_reduce_perf -g 8", -1, 0.17, 0.07, 0.18, 0.13},
    {"mpirun -np 8, one process per GPU", -1, 0.11, 0.04, 0.09, 0.08},
    {"(dkh)", -1, 0.29, 0.03, 0.06, 0.14},
    {"DGX A100 PCI bus ids", -1, 0.28, 0.05, 0.12, 0.09},
    {"NCCL 2.16.2+cuda11.6", -1, 0.05, 0.07, 0.11, 0.01},
};

/* Each public curve runs on a preset of the hardware it was measured on: the multi-host
 * ones on their networks' presets (EFA, TCPXO), hosts as measured; a one-host curve that
 * states its NCCL release runs with it, on one host or several (nccl_version, cm_check.c). */
static void test_curve_clusters(void) {
  const struct {
    const char *needle, *spec;
  } want[] = {{"8x A100 single node", "dgx-a100"},
              {"AWS p6-b200.48xlarge: 8x B200", "aws-p6-b200:nccl_version=2.27.7"},
              {"4 nodes x 8 B200", "aws-p6-b200:nodes=4"},
              {"GPUDirect-TCPXO: 1,600 Gb/s", "gcp-a3-mega:nodes=2"},
              {"4x H100 80GB HBM3 (one VM", "dgx-h100:nccl_version=2.26.2"},
              {"nccl-tests all_reduce_perf built against NCCL 2.30.7", "dgx-h200:nccl_version=2.30.7"},
              {"NCCL 2.16.2+cuda11.6", "dgx-a100:nccl_version=2.16.2"},
              /* Across hosts too, the release a curve states picks its tables. */
              {"2 nodes x 8 H100 Mega 80GB HBM3, Google Cloud A3 Mega", "gcp-a3-mega:nodes=2,nccl_version=2.28.7"}};
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
    g_autofree char *spec = cm_curve_cluster_spec(curve_with(want[i].needle, -1));
    g_assert_cmpstr(spec, ==, want[i].spec);
  }
}

static void test_public_curve(gconstpointer data) {
  const CurveBounds *b = data;
  const CmCurve *curve = curve_with(b->needle, b->algorithm);
  g_autofree char *spec = cm_curve_cluster_spec(curve);
  g_assert_nonnull(spec);
  DevCluster *c = preset(spec);
  CmErrorStats m, h, x;
  cm_check_model(curve, c, MIB, &m);
  g_test_message("%s: model %.1f%% mean, %.1f%% max over %d sizes >= 1 MiB", curve->system,
                 100 * m.mean, 100 * m.max, m.points);
  g_assert_cmpint(m.points, >, 0);
  g_assert_cmpfloat(m.mean, <=, b->model_mean);
  if (b->heldout_mean > 0) {
    g_assert_true(cm_check_heldout(curve, c, MIB, &h));
    g_assert_true(cm_check_extrapolation(curve, c, MIB, &x));
    g_test_message("  held out %.1f%% mean %.1f%% max; 4x extrapolation %.1f%% mean %.1f%% max",
                   100 * h.mean, 100 * h.max, 100 * x.mean, 100 * x.max);
    g_assert_cmpfloat(h.mean, <=, b->heldout_mean);
    g_assert_cmpfloat(h.max, <=, b->heldout_max);
    g_assert_cmpfloat(x.mean, <=, b->extrapolation_mean);
  }
  dev_cluster_free(c);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median over their common sizes of (@slow - @fast) (seconds). */
static double median_difference(const CmCurve *slow, const CmCurve *fast) {
  g_autoptr(GArray) d = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < slow->bytes->len; i++)
    for (guint j = 0; j < fast->bytes->len; j++)
      if (g_array_index(slow->bytes, double, i) == g_array_index(fast->bytes, double, j)) {
        double x = g_array_index(slow->time_s, double, i) - g_array_index(fast->time_s, double, j);
        g_array_append_val(d, x);
      }
  g_assert_cmpuint(d->len, >=, 10);
  g_array_sort(d, cmp_double);
  return d->len % 2 ? g_array_index(d, double, d->len / 2)
                    : (g_array_index(d, double, d->len / 2 - 1) + g_array_index(d, double, d->len / 2)) / 2;
}

/* The timing harness (cm_curve_harness): all_reduce_bench.py's one-call timing carries
 * PyTorch's per-call host path; its figure is the median difference of the two sweeps of one
 * 4 x H100 VM (same NCCL), one timed by that script, one by nccl-tests. The same author's
 * 8 x H200 sweeps, one call per trial against queued calls, differ by about as much; queued
 * calls and nccl-tests carry none. */
static void test_public_harness(void) {
  const CmCurve *bench = curve_with("4x H100 80GB HBM3, torch 2.7.0", -1);
  const CmCurve *tests = curve_with("4x H100 80GB HBM3 (one VM", -1);
  g_assert_cmpfloat(bench->harness_s, >, 0);
  g_assert_cmpfloat(tests->harness_s, ==, 0);
  g_assert_cmpfloat(fabs(median_difference(bench, tests) - bench->harness_s), <, 0.1e-6);
  const CmCurve *once = curve_with("8x H200 single node, NVLink4/NVSwitch, NCCL default", -1);
  const CmCurve *queued = curve_with("all_reduce_bench.py default timing", -1);
  g_assert_cmpfloat(queued->harness_s, ==, 0);
  g_assert_cmpfloat(once->harness_s, ==, bench->harness_s);
  double h200 = median_difference(once, queued);
  g_assert_cmpfloat(h200, >, 0.8 * bench->harness_s);
  g_assert_cmpfloat(h200, <, 1.5 * bench->harness_s);
  g_assert_cmpfloat(curve_with("AWS p6-b200.48xlarge: 8x B200", -1)->harness_s, ==, bench->harness_s);
  g_assert_cmpfloat(curve_with("4 nodes x 8 B200", -1)->harness_s, ==, 0);
  g_assert_cmpfloat(curve_with("8x A100 single node", -1)->harness_s, ==, 0);
  /* The model is compared with the harness's time: model + harness. */
  DevCluster *c = preset("dgx-h100");
  g_autofree double *with = g_new(double, bench->bytes->len);
  cm_check_model_errors(bench, c, MIB, with);
  g_autofree int *devices = g_new(int, 4);
  for (int i = 0; i < 4; i++) devices[i] = i;
  guint last = bench->bytes->len - 1;
  double bytes = g_array_index(bench->bytes, double, last), measured = g_array_index(bench->time_s, double, last);
  double model = cm_collective_estimate(c, CM_ALL_REDUCE, devices, 4, bytes, NULL).time_s;
  CLOSE(measured * (1 + with[last]), model + bench->harness_s);
  dev_cluster_free(c);
}

/* TCPXO's network step (devices/presets/gcp-a3-mega.json, net_step_latency_us): nothing is
 * published, so it is the smallest TCPXO measurement at hand, where the time is latency: the
 * MG-Cafe 2 x 8 all-gather at 64 KiB (below the sizes the bench scores). The model's Ring LL128
 * all-gather there has one network step at NCCL's hwLat[NET] (4.0 us) without the figure; the
 * figure is that step plus what the measurement has beyond the model. With it, the model
 * meets the measurement; the tuner's choice does not see it. */
static void test_public_tcpxo_step(void) {
  const CmCurve *ag = curve_with("GPUDirect-TCPXO FasTrak v1.0.8", -1);
  g_assert_cmpint(ag->kind, ==, CM_ALL_GATHER);
  g_assert_cmpfloat(g_array_index(ag->bytes, double, 0), ==, 65536);
  double measured = g_array_index(ag->time_s, double, 0);
  DevCluster *c = preset("gcp-a3-mega:nodes=2"), *bare = preset("gcp-a3-mega:nodes=2,inter_net_step_latency_us=0");
  g_autofree int *devices = g_new(int, 16);
  for (int i = 0; i < 16; i++) devices[i] = i;
  CmCollectiveEstimate e0 = cm_collective_estimate(bare, CM_ALL_GATHER, devices, 16, 65536, NULL);
  g_assert_cmpint(e0.algorithm, ==, CM_ALGO_RING);
  g_assert_cmpint(e0.protocol, ==, CM_PROTO_LL128);
  double step = 4.0e-6 + measured - e0.time_s;
  g_assert_cmpfloat(fabs(step - c->net_step_latency), <, 0.05e-6);
  CmCollectiveEstimate e = cm_collective_estimate(c, CM_ALL_GATHER, devices, 16, 65536, NULL);
  g_assert_cmpfloat(fabs(e.time_s - measured), <, 0.1e-6);
  g_assert_cmpint(e.algorithm, ==, e0.algorithm);
  g_assert_cmpint(e.protocol, ==, e0.protocol);
  dev_cluster_free(c);
  dev_cluster_free(bare);
}

/* Models of the collective for the asymptote: peak 1e-11 s/byte (their cost per byte at 2^50
 * bytes); ramp_model is 5e-12 s/byte dearer below 128 MiB, dip_model that much cheaper,
 * steep_model 1e-9 s/byte throughout. */
static double ramp_model(int ranks, int hosts, double bytes, gpointer data) {
  (void)ranks, (void)hosts, (void)data;
  return 10e-6 + bytes * 1e-11 + MIN(bytes, 128 * MIB) * 5e-12;
}

static double dip_model(int ranks, int hosts, double bytes, gpointer data) {
  (void)ranks, (void)hosts, (void)data;
  return 10e-6 + bytes * 1e-11 - MIN(bytes, 128 * MIB) * 5e-12;
}

static double steep_model(int ranks, int hosts, double bytes, gpointer data) {
  (void)ranks, (void)hosts, (void)data;
  return bytes * 1e-9;
}

/* The asymptote never predicts a lower bus bandwidth above the measured sizes than at the
 * largest of them, even where the top two measured points slope the wrong way. */
static void test_asymptote_never_below(void) {
  CmMeasurement m[3] = {{CM_ALL_REDUCE, 8, 1, 16 * MIB, 200e-6},
                        {CM_ALL_REDUCE, 8, 1, 32 * MIB, 900e-6}, /* a slow outlier */
                        {CM_ALL_REDUCE, 8, 1, 64 * MIB, 1000e-6}};
  CmCalibration *cal = cm_calibration_fit("x", "test", m, 3, NULL);
  g_assert_nonnull(cal);
  CmCalibratedTime t;
  g_assert_true(cm_calibration_time(cal, CM_ALL_REDUCE, 8, 1, 256 * MIB, &t));
  g_assert_cmpint(t.source, ==, CM_TIME_CALIBRATION_ASYMPTOTE);
  g_assert_cmpfloat(256 * MIB / t.time_s, >=, 64 * MIB / 1000e-6 * (1 - 1e-12));
  /* With the model's floor, the extra bytes move at that cost. */
  g_assert_true(cm_calibration_time_bounded(cal, CM_ALL_REDUCE, 8, 1, 256 * MIB, 1e-11, &t));
  CLOSE(t.time_s, 1000e-6 + 192 * MIB * 1e-11);
  /* With the model itself: the extra bytes cost what the model's time grows by ... */
  g_assert_true(cm_calibration_time_model(cal, CM_ALL_REDUCE, 8, 1, 256 * MIB, ramp_model, NULL, &t));
  g_assert_cmpint(t.source, ==, CM_TIME_CALIBRATION_ASYMPTOTE);
  CLOSE(t.time_s, 1000e-6 + ramp_model(8, 1, 256 * MIB, NULL) - ramp_model(8, 1, 64 * MIB, NULL));
  /* ... never less per byte than the model's peak, never more than the largest measured
   * size's average (1000 us / 64 MiB). */
  g_assert_true(cm_calibration_time_model(cal, CM_ALL_REDUCE, 8, 1, 128 * MIB, dip_model, NULL, &t));
  g_assert_cmpfloat_with_epsilon(t.time_s / (1000e-6 + 64 * MIB * 1e-11), 1.0, 1e-6);
  g_assert_true(cm_calibration_time_model(cal, CM_ALL_REDUCE, 8, 1, 128 * MIB, steep_model, NULL, &t));
  CLOSE(t.time_s, 2 * 1000e-6);
  /* Below the table: between the smallest time scaled by size and the smallest time. */
  g_assert_true(cm_calibration_time(cal, CM_ALL_REDUCE, 8, 1, 4 * MIB, &t));
  g_assert_cmpint(t.source, ==, CM_TIME_CALIBRATION_LATENCY);
  g_assert_cmpfloat(t.time_s, <=, 200e-6);
  g_assert_cmpfloat(t.time_s, >=, 200e-6 / 4 * (1 - 1e-12));
  cm_calibration_free(cal);
}

/* The network's job profile (DevCluster.nccl_algo, .nccl_proto; devices/dev_nccl_env.c):
 * NCCL's list syntax, and on gcp-a3-mega Google's TCPXO profile (NCCL_ALGO=Ring,Tree,
 * NCCL_PROTO=Simple,LL128) for a job of two hosts, none for a job of one VM. */
static void test_network_profile(void) {
  g_assert_true(dev_nccl_list_allows(NULL, "NVLS"));
  g_assert_true(dev_nccl_list_allows("Ring,Tree", "tree"));
  g_assert_false(dev_nccl_list_allows("Ring,Tree", "NVLSTree"));
  g_assert_true(dev_nccl_list_allows("^NVLS,NVLSTree", "Ring"));
  g_assert_false(dev_nccl_list_allows("^NVLS,NVLSTree", "nvls"));
  DevCluster *one = preset("gcp-a3-mega");
  DevCluster *two = preset("gcp-a3-mega:nodes=2");
  DevCluster *simple = preset("gcp-a3-mega:nodes=2,inter_nccl_proto=Simple");
  DevCluster *open = preset("gcp-a3-mega:nodes=2,inter_nccl_algo=default,inter_nccl_proto=default");
  g_assert_cmpstr(two->nccl_algo, ==, "Ring,Tree");
  g_assert_cmpstr(simple->nccl_proto, ==, "Simple");
  g_assert_null(open->nccl_algo);
  g_autofree char *json = dev_cluster_to_json(two);
  g_assert_nonnull(strstr(json, "\"nccl_proto\":\t\"Simple,LL128\""));
  gboolean nvls_without = FALSE;
  for (double bytes = MIB; bytes <= 1024 * MIB; bytes *= 4) {
    CmCollectiveEstimate e = first_ranks(two, CM_ALL_REDUCE, 16, bytes);
    g_assert_true(e.algorithm == CM_ALGO_RING || e.algorithm == CM_ALGO_TREE);
    g_assert_true(isnan(e.candidates[CM_ALGO_NVLS_TREE]));
    g_assert_cmpint(e.protocol, !=, CM_PROTO_LL);
    CmCollectiveEstimate s1 = first_ranks(simple, CM_ALL_REDUCE, 16, bytes);
    g_assert_cmpint(s1.protocol, ==, CM_PROTO_SIMPLE);
    g_assert_cmpfloat(s1.time_s, >=, e.time_s);
    /* Inside one host of the two-host job the profile holds too: no NVLS. */
    CmCollectiveEstimate tp = first_ranks(two, CM_ALL_REDUCE, 8, bytes);
    g_assert_true(tp.algorithm == CM_ALGO_RING || tp.algorithm == CM_ALGO_TREE);
    nvls_without |= first_ranks(open, CM_ALL_REDUCE, 16, bytes).algorithm == CM_ALGO_NVLS_TREE;
  }
  g_assert_true(nvls_without); /* the restriction changes something */
  g_assert_cmpint(first_ranks(one, CM_ALL_REDUCE, 8, 1024 * MIB).algorithm, ==, CM_ALGO_NVLS);
  dev_cluster_free(one);
  dev_cluster_free(two);
  dev_cluster_free(simple);
  dev_cluster_free(open);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  GError *error = NULL;
  curves = cm_curves_load(STRATSIM_SOURCE_DIR "/tests/data/validation/nccl_public.csv", &error);
  g_assert_no_error(error);
  g_test_add_func("/nccl/a100/ring-simple", test_a100_ring_simple);
  g_test_add_func("/nccl/protocol-by-size", test_protocol_by_size);
  g_test_add_func("/nccl/nvls", test_nvls);
  g_test_add_func("/nccl/nvls/pipeline-fill", test_nvls_pipeline_fill);
  g_test_add_func("/nccl/net-latency/choice", test_net_latency_choice);
  g_test_add_func("/nccl/net-step-latency", test_net_step_latency);
  g_test_add_func("/nccl/public/tcpxo-step", test_public_tcpxo_step);
  g_test_add_func("/nccl/blackwell-ll128", test_blackwell_ll128);
  g_test_add_func("/nccl/aws-tuner/p6", test_aws_tuner_p6);
  g_test_add_func("/nccl/nvls-tree/graph", test_nvls_tree_graph);
  g_test_add_func("/nccl/release-tables", test_release_tables);
  g_test_add_func("/nccl/network-profile", test_network_profile);
  g_test_add_data_func("/nccl/same-time/16", GINT_TO_POINTER(16), test_same_time);
  g_test_add_data_func("/nccl/same-time/1024", GINT_TO_POINTER(1024), test_same_time);
  g_test_add_data_func("/nccl/same-time/1000000", GINT_TO_POINTER(1000000), test_same_time);
  g_test_add_func("/nccl/same-time/nvls", test_same_time_nvls);
  g_test_add_func("/nccl/same-time/efa", test_same_time_efa);
  g_test_add_data_func("/nccl/simulate-task/16", GINT_TO_POINTER(16), test_simulate_task);
  g_test_add_data_func("/nccl/simulate-task/1024", GINT_TO_POINTER(1024), test_simulate_task);
  g_test_add_func("/nccl/calibration/asymptote", test_asymptote_never_below);
  g_test_add_func("/nccl/public/clusters", test_curve_clusters);
  g_test_add_func("/nccl/public/harness", test_public_harness);
  for (gsize i = 0; i < G_N_ELEMENTS(bounds); i++) {
    g_autofree char *path = g_strdup_printf("/nccl/public/%zu", i);
    g_test_add_data_func(path, &bounds[i], test_public_curve);
  }
  int status = g_test_run();
  g_ptr_array_unref(curves);
  return status;
}
