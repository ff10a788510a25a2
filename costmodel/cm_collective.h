/* costmodel/collective — the collective library: the time of each algorithm a collective
 * library runs (ring, NCCL's double binary tree, pipelined chain, pairwise exchange, direct
 * send/recv, hierarchical intra/inter/intra decompositions, and MPI's binomial-tree and
 * recursive algorithms) from first principles in the alpha-beta model, on the link classes a
 * device group uses, and the choice of the fastest, as NCCL's tuner does.
 *
 * Sizes follow cm_collective_time and nccl-tests' "size" column: the buffer of an all-reduce,
 * the gathered output of an all-gather, the input of a reduce-scatter, each rank's send buffer
 * of an all-to-all, the message of a broadcast, reduce or send/recv. Times in seconds,
 * bandwidths in bytes/s. Computation of reductions is left out (AutoDDL Sec. 3.1).
 *
 * Sources: Thakur, Rabenseifner & Gropp, "Optimization of collective communication operations
 * in MPICH", IJHPCA 19(1), 2005 (ring, binomial tree, recursive doubling and halving,
 * Rabenseifner's all-reduce, pairwise exchange); NCCL src/graph/tuning.cc (per-step latency
 * on intra- and inter-host steps, the tree's 0.9 bandwidth factor, time = latency + size /
 * algorithm bandwidth, the fastest (algorithm, protocol) chosen per call); Sanders, Speck &
 * Traeff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan", Parallel
 * Computing 35(12), 2009 (the double binary tree); nccl-tests docs/PERFORMANCE.md (bus
 * bandwidth factors). */
#ifndef STRATSIM_CM_COLLECTIVE_H
#define STRATSIM_CM_COLLECTIVE_H

#include <glib.h>
#include "costmodel/costmodel.h"

G_BEGIN_DECLS

typedef enum {
  CM_ALGO_NONE,               /* a group of one: nothing to move */
  CM_ALGO_RING,               /* ring all-gather / reduce-scatter; all-reduce = RS + AG */
  CM_ALGO_TREE,               /* NCCL all-reduce: chain in a host, double binary tree across */
  CM_ALGO_HIERARCHICAL,       /* intra-host phase, inter-host phase, intra-host phase */
  CM_ALGO_PIPELINE,           /* pipelined chain: broadcast, reduce (NCCL's ring broadcast) */
  CM_ALGO_PAIRWISE,           /* pairwise exchange: all-to-all */
  CM_ALGO_DIRECT,             /* one message per pair: send/recv */
  CM_ALGO_BINOMIAL_TREE,      /* MPI: broadcast, reduce (short messages) */
  CM_ALGO_RECURSIVE_DOUBLING, /* MPI: all-gather; all-reduce (short messages) */
  CM_ALGO_RECURSIVE_HALVING,  /* MPI: reduce-scatter; all-reduce = Rabenseifner (RS + AG) */
  CM_ALGO_NVLS,               /* NCCL NVLink SHARP: the NVSwitch reduces (one host) */
  CM_ALGO_NVLS_TREE,          /* NCCL NVLS inside hosts, tree across them */
  CM_ALGO_COUNT
} CmAlgorithm;

const char *cm_algorithm_name(CmAlgorithm algorithm);

/* Whether NCCL runs @algorithm for @kind: the candidates cm_collective_estimate chooses from
 * (all-reduce: ring, tree, NVLS, NVLS-tree; all-gather, reduce-scatter: ring, NVLS; broadcast,
 * reduce: ring; all-to-all: pairwise; send/recv: direct), as NCCL's tuner does (cm_nccl.h).
 * Hierarchical, pipeline and the MPI algorithms are there for callers modelling other
 * libraries (cm_algorithm_time). */
gboolean cm_algorithm_is_candidate(CmCollective kind, CmAlgorithm algorithm);

/* How a device group lies on the cluster. */
typedef struct {
  int ranks;        /* p */
  int hosts;        /* m: distinct hosts the members are on */
  int min_per_host; /* fewest members on one of those hosts */
  int max_per_host; /* most members on one host */
} CmGroupShape;

/* Fills @shape for @devices (n entries, distinct, each < dev_cluster_num_devices). */
void cm_group_shape(const DevCluster *cluster, const int *devices, int n, CmGroupShape *shape);

/* The link figures the formulas use. A member reaches other hosts through its share of its
 * host's NICs, nics_per_node x NIC bandwidth / gpus_per_node (one rail per GPU on DGX/HGX);
 * a group with k members on a host gets k such shares. The same share results when every GPU
 * of a host runs a group of the same shape at once (symmetric strategies), which is why groups
 * strided across hosts (one member per host: data-parallel groups) share the NICs. */
typedef struct {
  double alpha[DEV_LINK_COUNT]; /* seconds per step on each link class */
  double intra_bw;              /* bytes/s per GPU per direction, intra-host */
  double nic_bw_per_gpu;        /* bytes/s: one GPU's share of its host's NICs, divided by
                                   the fabric's oversubscription */
} CmLinkFigures;

void cm_link_figures(const DevCluster *cluster, CmLinkFigures *figures);

/* The bus bandwidth factor of nccl-tests (docs/PERFORMANCE.md): busbw = algbw x factor, with
 * algbw = size / time. All-reduce 2(p-1)/p; all-gather, reduce-scatter, all-to-all (p-1)/p;
 * broadcast, reduce, send/recv 1. */
double cm_collective_busbw_factor(CmCollective kind, int p);

/* Latency-bearing steps of the ring (chain for broadcast/reduce) form of @kind over p ranks,
 * as NCCL counts them (tuning.cc nsteps): all-reduce 2(p-1), all-gather, reduce-scatter,
 * all-to-all, broadcast, reduce p-1, send/recv 1. Calibration fits alpha per such step. */
int cm_collective_ring_steps(CmCollective kind, int p);

#define CM_MAX_PHASES 3

typedef struct {
  CmCollective kind;      /* what the phase runs */
  CmAlgorithm algorithm;
  DevLinkClass link;      /* INTER for a phase that crosses hosts at all */
  int ranks;              /* members of each of its groups (several run at once) */
  double bytes;           /* per member, in the size convention above */
  double time_s;
} CmCollectivePhase;

typedef enum {
  CM_TIME_MODEL,             /* the chosen algorithm under the link figures */
  CM_TIME_CALIBRATION_TABLE, /* between two measured sizes: the line through them */
  CM_TIME_CALIBRATION_FIT,   /* fitted alpha-beta of the collective and link class (no table
                                for the rank and host count, and none of that link class to
                                scale, or no model to scale it with) */
  CM_TIME_CALIBRATION_ASYMPTOTE, /* above the table's sizes: its bandwidth asymptote */
  CM_TIME_CALIBRATION_LATENCY,   /* below the table's sizes: its latency regime */
  CM_TIME_CALIBRATION_SCALED,    /* another rank/host count's table on the same link class,
                                    scaled by the model's ratio of the two shapes */
} CmTimeSource;

const char *cm_time_source_name(CmTimeSource source);

typedef struct {
  CmCollective kind;
  CmGroupShape shape;
  double bytes;
  CmAlgorithm algorithm;        /* the fastest candidate (NCCL's tuner, cm_nccl.h) */
  int protocol;                 /* its CmProtocol (cm_nccl.h); -1 for alpha-beta forms */
  int channels;                 /* channels NCCL's model spreads it over; 0 for alpha-beta */
  double time_s;                /* calibrated time where the calibration covers the case */
  double model_time_s;          /* the chosen algorithm's time under NCCL's model */
  CmTimeSource source;
  double algbw;                 /* bytes / time_s */
  double busbw;                 /* algbw x cm_collective_busbw_factor */
  int steps[DEV_LINK_COUNT];    /* latency-bearing steps of the chosen algorithm per class */
  int nphases;
  CmCollectivePhase phases[CM_MAX_PHASES]; /* in order; one for flat algorithms */
  double candidates[CM_ALGO_COUNT];        /* each candidate's time (its best protocol); NAN
                                              where not one */
} CmCollectiveEstimate;

/* The time of @algorithm for @kind over a group of @shape, or NAN where the algorithm does not
 * apply (tree for anything but all-reduce, hierarchical inside one host or with unequal
 * members per host, recursive doubling/halving for p not a power of two, ...). When @detail is
 * given its steps, phases, algorithm and model_time_s are filled. */
double cm_algorithm_time(CmCollective kind, CmAlgorithm algorithm, const CmGroupShape *shape,
                         const CmLinkFigures *figures, double bytes, CmCollectiveEstimate *detail);

G_END_DECLS

#endif
