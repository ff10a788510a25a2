/* costmodel/collective — alpha-beta collective times (AutoDDL Table 2) and the link class and
 * effective bandwidth of a device group; the collective library of cm_collective.h: every
 * algorithm's time on the link classes a group uses, and the choice of the fastest. */
#include "costmodel/cm_collective.h"

#include <math.h>
#include <string.h>


static const char *const collective_names[CM_COLLECTIVE_COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast", "reduce"};

/* The same collectives as nccl-tests and NCCL spell them. */
static const char *const collective_aliases[CM_COLLECTIVE_COUNT] = {
    "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv", "bcast", NULL};

const char *cm_collective_name(CmCollective kind) {
  g_return_val_if_fail(kind < CM_COLLECTIVE_COUNT, "?");
  return collective_names[kind];
}

gboolean cm_collective_parse(const char *name, CmCollective *out) {
  g_return_val_if_fail(name != NULL && out != NULL, FALSE);
  for (int k = 0; k < CM_COLLECTIVE_COUNT; k++) {
    if (g_ascii_strcasecmp(name, collective_names[k]) == 0 ||
        (collective_aliases[k] && g_ascii_strcasecmp(name, collective_aliases[k]) == 0)) {
      *out = (CmCollective)k;
      return TRUE;
    }
  }
  return FALSE;
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
  case CM_BROADCAST:
  case CM_REDUCE:
    return (p - 1.0) * a + bytes * b;
  default:
    g_return_val_if_reached(0.0);
  }
}

/* ---- The collective library (costmodel/cm_collective.h) ----
 *
 * Notation in the comments: p ranks on m hosts, k of them per host (k_min..k_max), n bytes in
 * the size convention of cm_collective.h; a_i, a_e the per-step latency of the intra- and
 * inter-host link; B_i a GPU's intra-host bandwidth, B_g a GPU's share of its host's NICs
 * (cm_link_figures); b = the bottleneck seconds per byte of traffic that runs around the
 * group (span_beta). */

/* NCCL src/graph/tuning.cc, ncclTopoTuneModel: "if (a == NCCL_ALGO_TREE) busBw =
 * std::min(busBw*.9, maxTreeBw)": a tree reaches 0.9 of the bus bandwidth of a ring over the
 * same links. (The maxTreeBw caps are per-GPU-generation figures, left out.) */
#define CM_TREE_BW_EFFICIENCY 0.9

static const char *const algorithm_names[CM_ALGO_COUNT] = {
    "none",     "ring",   "tree",          "hierarchical",       "pipeline",
    "pairwise", "direct", "binomial_tree", "recursive_doubling", "recursive_halving",
    "nvls",     "nvls_tree"};

const char *cm_algorithm_name(CmAlgorithm algorithm) {
  g_return_val_if_fail(algorithm < CM_ALGO_COUNT, "?");
  return algorithm_names[algorithm];
}

static const char *const time_source_names[] = {"model", "calibration-table", "calibration-fit",
                                                "calibration-asymptote", "calibration-latency",
                                                "calibration-scaled"};

const char *cm_time_source_name(CmTimeSource source) {
  g_return_val_if_fail(source <= CM_TIME_CALIBRATION_SCALED, "?");
  return time_source_names[source];
}

gboolean cm_algorithm_is_candidate(CmCollective kind, CmAlgorithm algorithm) {
  switch (kind) {
  case CM_ALL_REDUCE:
    return algorithm == CM_ALGO_RING || algorithm == CM_ALGO_TREE ||
           algorithm == CM_ALGO_NVLS || algorithm == CM_ALGO_NVLS_TREE;
  case CM_ALL_GATHER:
  case CM_REDUCE_SCATTER:
    return algorithm == CM_ALGO_RING || algorithm == CM_ALGO_NVLS;
  case CM_ALL_TO_ALL:
    return algorithm == CM_ALGO_PAIRWISE;
  case CM_BROADCAST:
  case CM_REDUCE:
    return algorithm == CM_ALGO_RING;
  case CM_SEND_RECV:
    return algorithm == CM_ALGO_DIRECT;
  default:
    return FALSE;
  }
}

void cm_group_shape(const DevCluster *cluster, const int *devices, int n, CmGroupShape *shape) {
  g_return_if_fail(cluster != NULL && shape != NULL && n >= 0 && (n == 0 || devices != NULL));
  shape->ranks = n;
  shape->hosts = 0;
  shape->min_per_host = shape->max_per_host = 0;
  if (n == 0) return;
  shape->min_per_host = n;
  if (n <= 64) {
    /* Small groups (the hot path): hosts by insertion sort of the members' hosts. */
    int nodes[64];
    for (int i = 0; i < n; i++) {
      g_return_if_fail(devices[i] >= 0 && devices[i] < dev_cluster_num_devices(cluster));
      int node = dev_cluster_node_of(cluster, devices[i]), j = i;
      for (; j > 0 && nodes[j - 1] > node; j--) nodes[j] = nodes[j - 1];
      nodes[j] = node;
    }
    for (int i = 0, run = 1; i < n; i++, run++) {
      if (i + 1 < n && nodes[i + 1] == nodes[i]) continue;
      shape->hosts++;
      shape->min_per_host = MIN(shape->min_per_host, run);
      shape->max_per_host = MAX(shape->max_per_host, run);
      run = 0;
    }
    return;
  }
  /* Large groups (10^6 ranks are costed per task): members per host counted in one pass. */
  g_autofree int *per_node = g_new0(int, cluster->nodes);
  for (int i = 0; i < n; i++) {
    g_return_if_fail(devices[i] >= 0 && devices[i] < dev_cluster_num_devices(cluster));
    per_node[dev_cluster_node_of(cluster, devices[i])]++;
  }
  for (int node = 0; node < cluster->nodes; node++) {
    if (per_node[node] == 0) continue;
    shape->hosts++;
    shape->min_per_host = MIN(shape->min_per_host, per_node[node]);
    shape->max_per_host = MAX(shape->max_per_host, per_node[node]);
  }
}

void cm_link_figures(const DevCluster *cluster, CmLinkFigures *figures) {
  g_return_if_fail(cluster != NULL && figures != NULL);
  figures->alpha[DEV_LINK_INTRA] = cluster->link[DEV_LINK_INTRA].latency;
  figures->alpha[DEV_LINK_INTER] = cluster->link[DEV_LINK_INTER].latency;
  figures->intra_bw = cluster->link[DEV_LINK_INTRA].bandwidth;
  /* An oversubscribed fabric gives each NIC 1/oversubscription of its line rate across the
   * bisection, as sim/sim_network.c applies it to NIC transfers. */
  double oversubscription = cluster->oversubscription >= 1.0 ? cluster->oversubscription : 1.0;
  figures->nic_bw_per_gpu = cluster->nics_per_node * cluster->link[DEV_LINK_INTER].bandwidth /
                            (cluster->gpus_per_node * oversubscription);
}

double cm_collective_busbw_factor(CmCollective kind, int p) {
  if (p <= 1) return 0.0;
  switch (kind) {
  case CM_ALL_REDUCE:
    return 2.0 * (p - 1) / p;
  case CM_ALL_GATHER:
  case CM_REDUCE_SCATTER:
  case CM_ALL_TO_ALL:
    return (p - 1.0) / p;
  default:
    return 1.0;
  }
}

int cm_collective_ring_steps(CmCollective kind, int p) {
  if (p <= 1) return 0;
  switch (kind) {
  case CM_ALL_REDUCE:
    return 2 * (p - 1);
  case CM_SEND_RECV:
    return 1;
  default:
    return p - 1;
  }
}

static int ceil_log2(int x) {
  int l = 0;
  while ((1 << l) < x) l++;
  return l;
}

static gboolean is_power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* Seconds per byte of the slowest link that traffic running around the group crosses: a
 * member's intra-host link when a host holds two or more members, and the group's share of a
 * host's NICs, k_min x B_g, when it spans hosts. A ring (or chain, or tree) enters and leaves
 * each host once per channel; NCCL spreads its channels over the host's NICs, so what one
 * rank sends per step crosses each host boundary once. */
static double span_beta(const CmGroupShape *g, const CmLinkFigures *f) {
  double b = 0.0;
  if (g->max_per_host > 1) b = 1.0 / f->intra_bw;
  if (g->hosts > 1) b = MAX(b, 1.0 / (g->min_per_host * f->nic_bw_per_gpu));
  return b;
}

typedef struct {
  int steps[DEV_LINK_COUNT];
} Steps;

/* Ring all-gather / reduce-scatter (Thakur et al. 2005, Sec. 4.2 ring all-gather; the
 * reduce-scatter is its mirror): p-1 steps, each rank passes n/p bytes to its successor:
 * (p-1)(a + n/p b). Laid out host by host the ring has p-m intra-host and m-1 inter-host
 * latency steps, as NCCL counts them (tuning.cc: (nsteps - nInterSteps) x intraLat +
 * nInterSteps x interLat):  (p-m) a_i + (m-1) a_e + (p-1)/p n b.
 * Ring all-reduce = reduce-scatter + all-gather (Patarasuk & Yuan, JPDC 69(2), 2009; NCCL's
 * ring): twice that, 2(p-m) a_i + 2(m-1) a_e + 2(p-1)/p n b. */
static double ring_time(CmCollective kind, const CmGroupShape *g, const CmLinkFigures *f,
                        double n, Steps *s) {
  if (kind != CM_ALL_REDUCE && kind != CM_ALL_GATHER && kind != CM_REDUCE_SCATTER) return NAN;
  int p = g->ranks, m = g->hosts, passes = kind == CM_ALL_REDUCE ? 2 : 1;
  s->steps[DEV_LINK_INTRA] = passes * (p - m);
  s->steps[DEV_LINK_INTER] = passes * (m - 1);
  return s->steps[DEV_LINK_INTRA] * f->alpha[DEV_LINK_INTRA] +
         s->steps[DEV_LINK_INTER] * f->alpha[DEV_LINK_INTER] +
         passes * (p - 1.0) / p * n * span_beta(g, f);
}

/* NCCL's tree all-reduce (double binary tree across hosts, Sanders, Speck & Traeff 2009; a
 * chain inside each host): a reduce up and a broadcast down, pipelined. Latency, as NCCL's
 * tuning.cc counts it: 2((k-1) a_i + ceil(log2 m) a_e). Bandwidth: in each of the two phases
 * every node sends and receives n in all (interior in one tree, a leaf in the other), at 0.9
 * of the ring's rate (CM_TREE_BW_EFFICIENCY): 2 n b / 0.9. So the tree wins on latency
 * (log m instead of m inter-host steps) and the ring on bandwidth ((p-1)/p instead of 1/0.9). */
static double tree_time(CmCollective kind, const CmGroupShape *g, const CmLinkFigures *f,
                        double n, Steps *s) {
  if (kind != CM_ALL_REDUCE) return NAN;
  s->steps[DEV_LINK_INTRA] = 2 * (g->max_per_host - 1);
  s->steps[DEV_LINK_INTER] = 2 * ceil_log2(g->hosts);
  return s->steps[DEV_LINK_INTRA] * f->alpha[DEV_LINK_INTRA] +
         s->steps[DEV_LINK_INTER] * f->alpha[DEV_LINK_INTER] +
         2.0 * n * span_beta(g, f) / CM_TREE_BW_EFFICIENCY;
}

/* All-to-all by pairwise exchange (Thakur et al. 2005, Sec. 4.6, long messages): p-1 steps,
 * in step j rank i sends its n/p-byte piece to i+j and receives from i-j: (p-1)(a + n/p b).
 * Of a rank's p-1 partners k-1 share its host (NVLink) and p-k do not (its NIC share B_g);
 * the two links work at once, so the bandwidth term is the larger of the two:
 * (k_max-1) a_i + (p-k_min) a_e + max((k_max-1)/p n / B_i, (p-k_min)/p n / B_g). */
static double pairwise_time(CmCollective kind, const CmGroupShape *g, const CmLinkFigures *f,
                            double n, Steps *s) {
  if (kind != CM_ALL_TO_ALL) return NAN;
  int p = g->ranks;
  int intra = g->max_per_host - 1, inter = g->hosts > 1 ? p - g->min_per_host : 0;
  s->steps[DEV_LINK_INTRA] = intra;
  s->steps[DEV_LINK_INTER] = inter;
  double bw_intra = intra * n / p / f->intra_bw;
  double bw_inter = inter * n / p / f->nic_bw_per_gpu;
  return intra * f->alpha[DEV_LINK_INTRA] + inter * f->alpha[DEV_LINK_INTER] +
         MAX(bw_intra, bw_inter);
}

/* Pipelined chain broadcast / reduce (NCCL runs broadcast and reduce on its ring, cut into
 * chunks): H = p-1 hops, p-m inside hosts and m-1 across. With the message in c chunks the
 * last chunk arrives after H + c - 1 chunk steps; the first chunk pays every hop's latency,
 * each further chunk the slowest hop's a_b:
 *   T(c) = sum of hop latencies + (c-1) a_b + (H + c - 1) (n/c) b.
 * dT/dc = 0 at c* = sqrt((H-1) n b / a_b) (the classic optimum of a pipelined chain; for
 * equal latencies T* = (sqrt((H-1) a) + sqrt(n b))^2); c is an integer >= 1, so the better of
 * floor and ceil. For large n, T -> n b: busbw = B, nccl-tests' factor 1. */
static double pipeline_eval(double lat_sum, double a_b, int hops, double n, double b, double c) {
  return lat_sum + (c - 1.0) * a_b + (hops + c - 1.0) * (n / c) * b;
}

static double pipeline_time(CmCollective kind, const CmGroupShape *g, const CmLinkFigures *f,
                            double n, Steps *s) {
  if (kind != CM_BROADCAST && kind != CM_REDUCE) return NAN;
  int p = g->ranks, m = g->hosts, hops = p - 1;
  s->steps[DEV_LINK_INTRA] = p - m;
  s->steps[DEV_LINK_INTER] = m - 1;
  double lat_sum = (p - m) * f->alpha[DEV_LINK_INTRA] + (m - 1) * f->alpha[DEV_LINK_INTER];
  double a_b = MAX(p - m > 0 ? f->alpha[DEV_LINK_INTRA] : 0.0, m > 1 ? f->alpha[DEV_LINK_INTER] : 0.0);
  double b = span_beta(g, f);
  if (hops <= 1 || n <= 0) return lat_sum + n * b;
  if (a_b <= 0) return lat_sum + n * b; /* latency-free links: infinitely many chunks */
  double c_opt = sqrt((hops - 1.0) * n * b / a_b);
  double lo = MAX(1.0, floor(c_opt)), hi = MAX(1.0, ceil(c_opt));
  return MIN(pipeline_eval(lat_sum, a_b, hops, n, b, lo), pipeline_eval(lat_sum, a_b, hops, n, b, hi));
}

/* Send/recv: every member sends n bytes to the next one and receives n from the previous (a
 * pairwise exchange for two members, a shift for more, as nccl-tests' sendrecv_perf does).
 * Messages inside a host take a_i + n / B_i, across hosts a_e + n / B_g (one GPU's NIC
 * share); they run at once, so the slower one counts. */
static double direct_time(CmCollective kind, const CmGroupShape *g, const CmLinkFigures *f,
                          double n, Steps *s) {
  if (kind != CM_SEND_RECV) return NAN;
  gboolean intra = g->max_per_host > 1, inter = g->hosts > 1;
  s->steps[DEV_LINK_INTRA] = intra;
  s->steps[DEV_LINK_INTER] = inter;
  double t_intra = intra ? f->alpha[DEV_LINK_INTRA] + n / f->intra_bw : 0.0;
  double t_inter = inter ? f->alpha[DEV_LINK_INTER] + n / f->nic_bw_per_gpu : 0.0;
  return MAX(t_intra, t_inter);
}

/* MPI's algorithms (Thakur et al. 2005), on one flat link: the inter-host latency when the
 * group spans hosts, else the intra-host one, and the bottleneck b. Reduction compute left
 * out. Binomial tree broadcast / reduce (Sec. 4.1 and 4.4, short messages):
 * ceil(log2 p)(a + n b). Recursive doubling all-gather (Sec. 4.2, p a power of two):
 * log2 p a + (p-1)/p n b; all-reduce (Sec. 4.5, short): log2 p (a + n b). Recursive halving
 * reduce-scatter (Sec. 4.3, commutative op, p a power of two): log2 p a + (p-1)/p n b;
 * all-reduce by recursive halving then doubling (Rabenseifner, Sec. 4.5, long):
 * 2 log2 p a + 2(p-1)/p n b. */
static double mpi_time(CmCollective kind, CmAlgorithm algorithm, const CmGroupShape *g,
                       const CmLinkFigures *f, double n, Steps *s) {
  int p = g->ranks, lg = ceil_log2(p), rounds;
  DevLinkClass link = g->hosts > 1 ? DEV_LINK_INTER : DEV_LINK_INTRA;
  double a = f->alpha[link], b = span_beta(g, f), bytes_term;
  if (algorithm == CM_ALGO_BINOMIAL_TREE) {
    if (kind != CM_BROADCAST && kind != CM_REDUCE) return NAN;
    rounds = lg;
    bytes_term = lg * n * b;
  } else if (!is_power_of_two(p)) {
    return NAN;
  } else if (algorithm == CM_ALGO_RECURSIVE_DOUBLING && kind == CM_ALL_GATHER) {
    rounds = lg;
    bytes_term = (p - 1.0) / p * n * b;
  } else if (algorithm == CM_ALGO_RECURSIVE_DOUBLING && kind == CM_ALL_REDUCE) {
    rounds = lg;
    bytes_term = lg * n * b;
  } else if (algorithm == CM_ALGO_RECURSIVE_HALVING && kind == CM_REDUCE_SCATTER) {
    rounds = lg;
    bytes_term = (p - 1.0) / p * n * b;
  } else if (algorithm == CM_ALGO_RECURSIVE_HALVING && kind == CM_ALL_REDUCE) {
    rounds = 2 * lg;
    bytes_term = 2.0 * (p - 1.0) / p * n * b;
  } else {
    return NAN;
  }
  s->steps[link] = rounds;
  return rounds * a + bytes_term;
}

static double flat_time(CmCollective kind, CmAlgorithm algorithm, const CmGroupShape *g,
                        const CmLinkFigures *f, double n, Steps *s) {
  memset(s, 0, sizeof *s);
  switch (algorithm) {
  case CM_ALGO_RING:
    return ring_time(kind, g, f, n, s);
  case CM_ALGO_TREE:
    return tree_time(kind, g, f, n, s);
  case CM_ALGO_PAIRWISE:
    return pairwise_time(kind, g, f, n, s);
  case CM_ALGO_PIPELINE:
    return pipeline_time(kind, g, f, n, s);
  case CM_ALGO_DIRECT:
    return direct_time(kind, g, f, n, s);
  case CM_ALGO_BINOMIAL_TREE:
  case CM_ALGO_RECURSIVE_DOUBLING:
  case CM_ALGO_RECURSIVE_HALVING:
    return mpi_time(kind, algorithm, g, f, n, s);
  default:
    return NAN;
  }
}

static void set_phase(CmCollectivePhase *ph, CmCollective kind, CmAlgorithm algorithm,
                      const CmGroupShape *g, double bytes, double time) {
  ph->kind = kind;
  ph->algorithm = algorithm;
  ph->link = g->hosts > 1 ? DEV_LINK_INTER : DEV_LINK_INTRA;
  ph->ranks = g->ranks;
  ph->bytes = bytes;
  ph->time_s = time;
}

/* The hierarchical decomposition for a group of k members on each of m hosts (m > 1, k > 1),
 * as Horovod's hierarchical all-reduce and NCCL's CollNet/NVLS paths do it:
 *   all-reduce:     intra reduce-scatter (k, n), inter all-reduce (m, n/k), intra all-gather (k, n)
 *   all-gather:     inter all-gather (m, n/k), then intra all-gather (k, n)
 *   reduce-scatter: intra reduce-scatter (k, n), then inter reduce-scatter (m, n/k)
 * The k inter-host groups (one per local rank, one member per host) run at once, each on its
 * member's NIC share B_g; the order keeps the inter-host volume at 1/k of the flat ring's.
 * Intra phases are rings; the inter all-reduce is the faster of ring and tree. The time is the
 * sum of the phases. */
static double hierarchical_time(CmCollective kind, const CmGroupShape *g, const CmLinkFigures *f,
                                double n, CmCollectiveEstimate *detail) {
  if (kind != CM_ALL_REDUCE && kind != CM_ALL_GATHER && kind != CM_REDUCE_SCATTER) return NAN;
  int m = g->hosts, k = g->min_per_host;
  if (m <= 1 || k <= 1 || g->min_per_host != g->max_per_host) return NAN;
  CmGroupShape intra = {k, 1, k, k}, inter = {m, m, 1, 1};
  CmCollective kinds[CM_MAX_PHASES];
  const CmGroupShape *shapes[CM_MAX_PHASES];
  double bytes[CM_MAX_PHASES];
  int nphases;
  if (kind == CM_ALL_REDUCE) {
    kinds[0] = CM_REDUCE_SCATTER, shapes[0] = &intra, bytes[0] = n;
    kinds[1] = CM_ALL_REDUCE, shapes[1] = &inter, bytes[1] = n / k;
    kinds[2] = CM_ALL_GATHER, shapes[2] = &intra, bytes[2] = n;
    nphases = 3;
  } else if (kind == CM_ALL_GATHER) {
    kinds[0] = CM_ALL_GATHER, shapes[0] = &inter, bytes[0] = n / k;
    kinds[1] = CM_ALL_GATHER, shapes[1] = &intra, bytes[1] = n;
    nphases = 2;
  } else {
    kinds[0] = CM_REDUCE_SCATTER, shapes[0] = &intra, bytes[0] = n;
    kinds[1] = CM_REDUCE_SCATTER, shapes[1] = &inter, bytes[1] = n / k;
    nphases = 2;
  }
  double total = 0.0;
  Steps sum = {{0}};
  for (int i = 0; i < nphases; i++) {
    Steps s, s_tree;
    CmAlgorithm algorithm = CM_ALGO_RING;
    double t = flat_time(kinds[i], CM_ALGO_RING, shapes[i], f, bytes[i], &s);
    if (kinds[i] == CM_ALL_REDUCE) {
      double t_tree = flat_time(kinds[i], CM_ALGO_TREE, shapes[i], f, bytes[i], &s_tree);
      if (t_tree < t) t = t_tree, s = s_tree, algorithm = CM_ALGO_TREE;
    }
    total += t;
    for (int l = 0; l < DEV_LINK_COUNT; l++) sum.steps[l] += s.steps[l];
    if (detail) set_phase(&detail->phases[i], kinds[i], algorithm, shapes[i], bytes[i], t);
  }
  if (detail) {
    detail->nphases = nphases;
    memcpy(detail->steps, sum.steps, sizeof sum.steps);
  }
  return total;
}

double cm_algorithm_time(CmCollective kind, CmAlgorithm algorithm, const CmGroupShape *shape,
                         const CmLinkFigures *figures, double bytes, CmCollectiveEstimate *detail) {
  g_return_val_if_fail(kind < CM_COLLECTIVE_COUNT && algorithm < CM_ALGO_COUNT, NAN);
  g_return_val_if_fail(shape != NULL && figures != NULL, NAN);
  if (detail) {
    memset(detail->steps, 0, sizeof detail->steps);
    detail->nphases = 0;
  }
  double t;
  if (shape->ranks <= 1) {
    t = 0.0;
    algorithm = CM_ALGO_NONE;
  } else if (algorithm == CM_ALGO_NONE) {
    return NAN;
  } else if (algorithm == CM_ALGO_HIERARCHICAL) {
    t = hierarchical_time(kind, shape, figures, bytes, detail);
  } else {
    Steps s;
    t = flat_time(kind, algorithm, shape, figures, bytes, &s);
    if (detail && !isnan(t)) {
      memcpy(detail->steps, s.steps, sizeof s.steps);
      detail->nphases = 1;
      set_phase(&detail->phases[0], kind, algorithm, shape, bytes, t);
    }
  }
  if (detail && !isnan(t)) {
    detail->algorithm = algorithm;
    detail->model_time_s = t;
  }
  return t;
}
