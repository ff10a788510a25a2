/* scenarios/reshard — a sweep of single cross-mesh moves: cases (sender mesh and layout,
 * receiver mesh and layout) x methods (a communication method and a load balancer), each move
 * simulated alone with sim_crossmesh_estimate (no training iteration around it: no compute, no
 * gradient going back). This is the cross-mesh resharding paper's Table 2 / Fig. 6 experiment
 * (Zhuang et al., MLSys 2023, Sec. 5.1.2) and its Fig. 8 (load balancers, Sec. 5.3.1).
 *
 * A reshard file (JSON; scenarios/crossmesh-table2/ has the paper's):
 *   {"name": "crossmesh-table2", "kind": "reshard", "description": "...", "paper": "...",
 *    "cluster": "aws-p3.8xlarge", "tensor": [1024, 1024, 512], "element_bytes": 2,
 *    "cases": [{"label": "1", "src_mesh": [2, 4], "dst_mesh": [2, 4],
 *               "src": "S0RR", "dst": "S0RR"}, ...],
 *    "methods": [{"label": "AlpaComm", "method": "broadcast", "order": "ensemble"}, ...]}
 * A mesh [r, c] is r hosts x their first c GPUs; the sender mesh takes the first hosts of the
 * cluster and the receiver mesh the next ones (the cluster gets nodes = the two meshes' rows).
 * Layouts are in the paper's notation (sim_crossmesh_layout_parse). Unknown fields are refused;
 * fields starting with `_` are comments.
 */
#ifndef STRATSIM_SCN_RESHARD_H
#define STRATSIM_SCN_RESHARD_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "model/mdl_graph.h"
#include "scenarios/scn_chart.h"
#include "sim/sim_crossmesh.h"

G_BEGIN_DECLS

typedef struct {
  char *label;
  int src_mesh[2], dst_mesh[2];  /* hosts x GPUs per host */
  char *src, *dst;               /* layouts, the paper's notation */
} ScnReshardCase;

typedef struct {
  char *label;
  SimCrossMeshMethod method;
  SimCrossMeshOrder order;
} ScnReshardMethod;

typedef struct {
  char *name, *description, *paper;
  char *cluster;                 /* a preset spec; nodes= is added per case */
  int64_t tensor[MDL_MAX_DIMS];
  int ndims;
  double element_bytes;
  GPtrArray *cases;              /* ScnReshardCase *, owned */
  GPtrArray *methods;            /* ScnReshardMethod *, owned */
} ScnReshard;

/* Whether @json_text is a reshard file ("kind": "reshard"). */
gboolean scn_reshard_is(const char *json_text);
/* Parses a reshard file ("kind" must be "reshard"); free with scn_reshard_free. NULL with
 * SCN_ERROR_PARSE naming the field. */
ScnReshard *scn_reshard_from_json(const char *json_text, GError **error);
ScnReshard *scn_reshard_load(const char *path, GError **error);
void scn_reshard_free(ScnReshard *reshard);

typedef struct {
  int units;                     /* unit tasks of the case (the same under every method) */
  double *seconds;               /* per method: the move's makespan (sim_crossmesh_estimate) */
  double *cost;                  /* per method: the load balancer's Eq. 1 cost */
} ScnReshardRow;

/* Simulates every case under every method; returns one row per case (free with
 * g_ptr_array_unref), or NULL with @error (a case that cannot be planned: its label, why). */
GPtrArray *scn_reshard_run(const ScnReshard *reshard, GError **error);

/* Prints the table: a row per case, a column per method (seconds). */
void scn_reshard_print(const ScnReshard *reshard, const GPtrArray *rows, FILE *out);

/* Writes the grouped bar chart (a group per case, a bar per method, seconds per move, like the
 * paper's Fig. 6) as @out_dir/@base.dat and .gp and draws it with gnuplot when it is on PATH
 * (scn_chart_draw). FALSE with @error when a file cannot be written or gnuplot fails. */
gboolean scn_reshard_chart(const ScnReshard *reshard, const GPtrArray *rows, const char *out_dir,
                           const char *base, unsigned formats, ScnChartOutcome *outcome,
                           GError **error);

G_END_DECLS

#endif
