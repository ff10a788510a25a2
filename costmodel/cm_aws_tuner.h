/* costmodel/aws_tuner — the choice AWS's tuner plugin makes for NCCL on p6-b200.48xlarge:
 * aws-ofi-nccl's region tuner. For a communicator of nRanks ranks on nNodes hosts it holds,
 * per collective, an ordered list of regions, each a polygon in the plane (log2 bytes, log2
 * ranks) with the (algorithm, protocol) to run there; the first region (in order) that
 * contains the point (bytes, nRanks), its edges included, and whose pair NCCL runs, is the
 * choice: the plugin sets that pair's cost to 0 in NCCL's cost table (tuner API v3), so NCCL
 * runs it. Where no region contains the point the plugin leaves NCCL's table alone and NCCL's
 * own formula chooses (cm_nccl.h).
 *
 * Source: aws/aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp at 228fa0e (region_init_internal_p6:
 * the regions; extend_region: a vertex on the line through two vertices, extended to the
 * plane's corner at TUNER_MAX_SIZE bytes, TUNER_MAX_RANKS ranks; is_inside_region: inside or
 * on an edge; region_get_coll_info_internal_v3: the order, NCCL's IGNORE pairs skipped, no
 * regions at two hosts or fewer) and include/tuner/nccl_ofi_tuner_region.h at 2198d1d
 * (TUNER_MAX_SIZE 100 GiB, TUNER_MAX_RANKS 2^20; both coordinates taken as log2, a 0 as
 * 1e-6 first). Which table: src/tuner/nccl_ofi_tuner.cpp at 0e2a0f4 (nccl_ofi_tuner_init:
 * instance type "p6-b200.48xlarge" -> NCCL_OFI_TUNER_P6; the region tuner is chosen over the
 * model tuner where both are supported). On by default on AWS platforms from aws-ofi-nccl
 * v1.16.0 (RELEASENOTES.md: "On AWS platforms, enable collective algorithm tuner by default";
 * aws/aws-ofi-nccl #922: the tuner is in the net plugin, which NCCL 2.21 and later searches
 * for a tuner when NCCL_TUNER_PLUGIN is not set); p6-b200 regions from v1.15.0.
 *
 * The p6 table has regions for all-reduce, all-gather and reduce-scatter, at 8 ranks per host
 * (nRanks == 8 x nNodes) and at one rank per host (nRanks == nNodes); any other group, and
 * broadcast and reduce, falls back to NCCL. The point-in-polygon test here is this module's
 * own (crossing number with a horizontal ray after an on-edge test at the plugin's 1e-10),
 * which agrees with the plugin's ray casting wherever the point is not on an edge.
 *
 * Not taken from the same file: the plugin's channel count for Tree LL128 all-reduces of 4-32
 * MiB (calculateBestNChannelTree: 16, 24 or 32 channels) and its chunk sizes at one rank per
 * host (region_get_chunk_size_internal); the p5/p5e/p5en/p6-b300 tables (no preset or sweep
 * here runs them). Pure functions. */
#ifndef STRATSIM_CM_AWS_TUNER_H
#define STRATSIM_CM_AWS_TUNER_H

#include <glib.h>
#include "costmodel/cm_nccl.h"

G_BEGIN_DECLS

/* Whether NCCL runs (@algorithm, @protocol) for the call being tuned (not NCCL_ALGO_PROTO_IGNORE
 * in its cost table). */
typedef gboolean (*CmNcclRunsFunc)(CmAlgorithm algorithm, CmProtocol protocol, gpointer data);

/* The (algorithm, protocol) aws-ofi-nccl's p6-b200 region table gives @kind for a communicator
 * of @ranks ranks on @hosts hosts at @bytes (cm_collective.h's sizes: nccl-tests' size column,
 * which is NCCL's nBytes for these collectives), skipping regions whose pair @runs rejects.
 * TRUE with @algorithm and @protocol set where a region chooses; FALSE (both untouched) where
 * the plugin leaves the choice to NCCL: 2 hosts or fewer, neither 8 nor 1 rank per host, a
 * collective without regions, a point in no region, and also where the region found runs PAT
 * (all-gather and reduce-scatter at one rank per host), which this model does not have. */
gboolean cm_aws_tuner_p6_choice(CmCollective kind, int ranks, int hosts, double bytes,
                                CmNcclRunsFunc runs, gpointer data, CmAlgorithm *algorithm,
                                CmProtocol *protocol);

G_END_DECLS

#endif
