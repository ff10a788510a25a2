/* costmodel/calibrate — collective costs calibrated from measured collectives.
 *
 * Measurements come from nccl-tests output (all_reduce_perf, all_gather_perf,
 * reduce_scatter_perf, alltoall_perf, sendrecv_perf, broadcast_perf, reduce_perf, as the tools
 * print it) or from the runner's measurements JSON (costmodel/CALIBRATION.md). A calibration
 * keeps, per collective and link class, alpha and beta fitted by least squares weighted by
 * 1/t^2 (AutoDDL Sec. 3.2 with relative-error weights), and, per (collective, ranks, hosts),
 * the measured bus bandwidth against size. It predicts by a line (time against size) through
 * the two nearest measured sizes inside them, along its bandwidth asymptote above them and its latency regime
 * below them, and by the fitted alpha-beta for rank counts without a table (FIELD-NOTES,
 * "Collective calibration": one alpha + n beta line misses held-out sizes by 15-70%, the
 * weighted fit by 7-14%, the interpolated table by 4-8%). Fitting and storing are
 * cm_calibrate.c, predicting cm_calibrate_lookup.c. Stored as JSON (results/ keeps it in
 * SQLite, table `calibrations`). */
#ifndef STRATSIM_CM_CALIBRATE_H
#define STRATSIM_CM_CALIBRATE_H

#include <glib.h>
#include "costmodel/cm_collective.h"

G_BEGIN_DECLS

typedef struct CmCalibration CmCalibration;

#define CM_ERROR (cm_error_quark())
GQuark cm_error_quark(void);
typedef enum {
  CM_ERROR_PARSE,        /* malformed nccl-tests output or JSON, an empty file */
  CM_ERROR_INVALID,      /* a value out of range; too little data to fit */
  CM_ERROR_UNKNOWN_KIND, /* a collective stratsim does not know */
} CmError;

/* One timed collective. */
typedef struct {
  CmCollective kind;
  int ranks;
  int nodes;      /* hosts the ranks were on */
  double bytes;   /* the size convention of cm_collective.h (nccl-tests' size column) */
  double time_s;
} CmMeasurement;

/* What an nccl-tests output said besides its rows. */
typedef struct {
  char *program;         /* "all_reduce_perf", or NULL when the output does not name it */
  int ranks;             /* distinct "#  Rank N" lines */
  int nodes;             /* distinct hosts on those lines */
  int rows;              /* table rows read */
  int skipped;           /* timed columns left out because their #wrong was not 0 */
  double avg_busbw_GBps; /* the "# Avg bus bandwidth" trailer; NAN when absent */
} CmNcclTestsInfo;

void cm_nccl_tests_info_clear(CmNcclTestsInfo *info);

/* The collective an nccl-tests program measures: the first of all_reduce, all_gather,
 * reduce_scatter, alltoall, sendrecv, broadcast, reduce that @text contains ("all_reduce_perf",
 * "out/all_gather_perf.16.log"). FALSE when none does. */
gboolean cm_collective_from_nccl_program(const char *text, CmCollective *out);

/* Parses the text nccl-tests prints: the header ("# Collective test starting: NAME", the
 * "#  Rank N ... on HOST device D" lines under "# Using devices", which give ranks and hosts),
 * the table rows "size count type redop root time algbw busbw #wrong time algbw busbw #wrong"
 * (older releases without root, or redop, are read too; size in bytes, time in microseconds;
 * out-of-place then in-place) and the "# Avg bus bandwidth" trailer. Lines with an
 * "[r,c]<stdout>:" (mpirun) or "N:" (srun -l) prefix are read without it; other lines (NCCL
 * INFO logs) are skipped. Appends one CmMeasurement per timed column whose #wrong is 0 or N/A
 * to @out (GArray of CmMeasurement). The collective is the one the header names, else
 * @kind_hint (a CmCollective, or -1 for none). @origin names the input in errors. Fills
 * @info when given (clear it with cm_nccl_tests_info_clear). Errors (CM_ERROR): an empty
 * input, a malformed row (with its line number), no rows, no rank lines, an unknown or
 * contradicting collective. On error @out is unchanged. */
gboolean cm_nccl_tests_parse(const char *text, const char *origin, int kind_hint, GArray *out,
                             CmNcclTestsInfo *info, GError **error);

/* Parses the measurements JSON of costmodel/CALIBRATION.md:
 *   {"device": "h100-sxm", "collectives": [{"kind": "all_reduce", "ranks": 16, "nodes": 2,
 *    "bytes": 1048576, "time_s": 0.000123}, ...]}
 * appending to @out; @device (nullable) receives a copy of "device" (g_free). Errors as above;
 * an unknown "kind" is CM_ERROR_UNKNOWN_KIND. */
gboolean cm_measurements_parse_json(const char *text, const char *origin, GArray *out,
                                    char **device, GError **error);

/* Reads @path: measurements JSON when its first non-blank character is '{', else nccl-tests
 * output whose collective is named by its header, else by @kind_hint (-1: none), else by the
 * file name. Unreadable files fail with the GFileError. */
gboolean cm_measurements_load_file(const char *path, int kind_hint, GArray *out, GError **error);

/* Fitted latency and bandwidth of one collective on one link class: t = base + steps(p) alpha
 * + factor(p) n beta, with steps = cm_collective_ring_steps and factor =
 * cm_collective_busbw_factor, so 1 / beta is the bus bandwidth the link class reaches, alpha
 * the latency per step and base the latency paid once (NCCL's form: baseLat + nsteps x hwLat,
 * src/graph/tuning.cc), which a latency per step alone charges small groups too little of. */
typedef struct {
  CmCollective kind;
  DevLinkClass link;
  double base;           /* seconds per collective (0 where the data do not separate it) */
  double alpha;          /* seconds per step */
  double beta;           /* seconds per byte of bus traffic */
  int points;            /* measurements fitted */
  double mean_rel_error; /* |fit - measured| / measured over those points */
  double max_rel_error;
} CmCalibrationFit;

/* Measured bus bandwidth against size for one (collective, ranks, hosts). */
typedef struct {
  CmCollective kind;
  int ranks;
  int nodes;
  int npoints;
  double *bytes;  /* ascending, distinct */
  double *busbw;  /* bytes/s: bytes x factor / mean measured time at that size */
} CmCalibrationTable;

/* Fits a calibration to @n measurements (at least two sizes per collective and link class).
 * @name and @cluster are copied. Returns a new calibration (cm_calibration_free) or NULL with
 * CM_ERROR_INVALID. */
CmCalibration *cm_calibration_fit(const char *name, const char *cluster,
                                  const CmMeasurement *measurements, guint n, GError **error);
void cm_calibration_free(CmCalibration *calibration);

const char *cm_calibration_name(const CmCalibration *calibration);
const char *cm_calibration_cluster(const CmCalibration *calibration);
guint cm_calibration_n_fits(const CmCalibration *calibration);
const CmCalibrationFit *cm_calibration_fit_at(const CmCalibration *calibration, guint i);
guint cm_calibration_n_tables(const CmCalibration *calibration);
const CmCalibrationTable *cm_calibration_table_at(const CmCalibration *calibration, guint i);

/* Serialises (caller g_frees) and reads back a calibration; the JSON is documented in
 * costmodel/CALIBRATION.md. cm_calibration_from_json fails with CM_ERROR_PARSE. */
char *cm_calibration_to_json(const CmCalibration *calibration);
CmCalibration *cm_calibration_from_json(const char *json, const char *origin, GError **error);

typedef struct {
  double time_s;
  CmTimeSource source; /* one of the CM_TIME_CALIBRATION_ sources */
  double alpha;        /* the fit's alpha and beta of the link class (NAN: none fitted) */
  double beta;
} CmCalibratedTime;

/* The calibrated time of @kind over @ranks ranks on @nodes hosts, @bytes bytes, from the
 * table of that (collective, ranks, hosts) when there is one: on the line through the measured
 * sizes either side inside them (CM_TIME_CALIBRATION_TABLE), along its bandwidth asymptote above
 * them (CM_TIME_CALIBRATION_ASYMPTOTE: never a lower bus bandwidth than the largest measured
 * size's), in its latency regime below them (CM_TIME_CALIBRATION_LATENCY); else steps alpha +
 * factor n beta from the fit of the collective and its link class (INTER when @nodes > 1,
 * CM_TIME_CALIBRATION_FIT). FALSE when the calibration has neither
 * (costmodel/cm_calibrate_lookup.c). */
gboolean cm_calibration_time(const CmCalibration *calibration, CmCollective kind, int ranks,
                             int nodes, double bytes, CmCalibratedTime *out);
/* The same, with the model's cost per byte at its peak bandwidth, @floor seconds per byte, as
 * the asymptote's marginal cost (0: the slope of the table's largest sizes instead);
 * cm_collective_estimate passes its model's. */
gboolean cm_calibration_time_bounded(const CmCalibration *calibration, CmCollective kind,
                                     int ranks, int nodes, double bytes, double floor,
                                     CmCalibratedTime *out);
/* The model's time of the collective being looked up over @ranks ranks on @hosts hosts (of the
 * caller's cluster, ranks spread evenly) at @bytes; NAN where it has none. */
typedef double (*CmModelTimeFn)(int ranks, int hosts, double bytes, gpointer data);
/* The same, with the model itself:
 *   - above a table the extra bytes cost what the model's time grows by from the largest
 *     measured size to @bytes, at least its peak cost per byte (its time at 2^50 bytes over
 *     2^50) and at most the largest size's average;
 *   - without a table for (@ranks, @nodes), the time the nearest table of the collective on the
 *     same link class gives (nearest in log ranks, then log hosts) scaled by the model's ratio
 *     of the two shapes (CM_TIME_CALIBRATION_SCALED), before the fit; never across link
 *     classes (cm_calibrate_lookup.c says why).
 * cm_collective_estimate passes its model. */
gboolean cm_calibration_time_model(const CmCalibration *calibration, CmCollective kind, int ranks,
                                   int nodes, double bytes, CmModelTimeFn model, gpointer data,
                                   CmCalibratedTime *out);

/* Why @calibration may not apply to @cluster: NULL when the cluster it was measured on (its
 * stored spec, parsed again) has the same GPU, GPUs per host, intra-host link and inter-host
 * network (host counts may differ: a calibration of 2 hosts serves 128 of the same); else a
 * one-line message naming what differs (caller g_frees). */
char *cm_calibration_cluster_mismatch(const CmCalibration *calibration, const DevCluster *cluster);

/* The fitted alpha (per step) and beta (per byte of bus traffic) of @kind on @link as a
 * CmLinkCost, for the simulator's per-task formulas. FALSE when none was fitted. */
gboolean cm_calibration_link_cost(const CmCalibration *calibration, CmCollective kind,
                                  DevLinkClass link, CmLinkCost *out);

G_END_DECLS

#endif
