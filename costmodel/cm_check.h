/* costmodel/check — the collective model and calibration checked against published curves
 * (tests/data/validation/nccl_public.csv: nccl-tests and PyTorch all-reduce sweeps, each row
 * citing its source). Three figures per curve, as issue 14 states its acceptance:
 *   - the model alone (cm_collective_estimate, or the candidate of the algorithm a row was
 *     measured with, "algo=Ring"/"algo=NVLS"/"algo=Tree"/"algo=NVLSTree"), plus what the
 *     curve's timing harness adds to each call (cm_curve_harness): relative error of time at
 *     sizes >= a floor;
 *   - a calibration fitted to every other size (from the floor up), checked on the sizes
 *     left out ("held out", inside the fitted range);
 *   - a calibration fitted to the sizes up to L, checked at 4L (extrapolation), for every L
 *     from the floor up whose 4L was measured.
 * Used by `stratsim bench --suite collectives` and tests/test-nccl.c. */
#ifndef STRATSIM_CM_CHECK_H
#define STRATSIM_CM_CHECK_H

#include <glib.h>
#include "costmodel/cm_tuner.h"

G_BEGIN_DECLS

/* One measured curve: the rows of one (system, collective, ranks, hosts, algorithm). */
typedef struct {
  char *system;      /* the gpu_system column */
  char *source;      /* the source column of its first row */
  CmCollective kind;
  int ranks;
  int nodes;
  int gpus_per_node;
  int algorithm;     /* CmAlgorithm the rows were measured with, or -1: NCCL's own choice */
  double harness_s;  /* what the timing harness adds to each measured call beyond the
                        collective's kernels (cm_curve_harness), added to the model's time */
  GArray *bytes;     /* double, ascending */
  GArray *time_s;    /* double; from time_us, else from busbw and the bus bandwidth factor */
} CmCurve;

void cm_curve_free(CmCurve *curve);

/* Reads the CSV (header collective,size_bytes,ranks,nodes,gpus_per_node,gpu_system,
 * algbw_GBps,busbw_GBps,time_us,source; quoted fields may hold commas). Returns the curves in
 * file order (g_ptr_array_unref frees them) or NULL with CM_ERROR_PARSE naming the line. */
GPtrArray *cm_curves_load(const char *path, GError **error);

/* The time the harness that measured a curve described by @system (its gpu_system column)
 * adds to every call: 0 for nccl-tests and for PyTorch's all_reduce_bench.py with its
 * queued calls (the host runs ahead of the GPU, as in training), PyTorch's per-call host
 * path where the system says the script timed one dist.all_reduce per trial between CUDA
 * events on an idle GPU (cm_check.c gives the figure and its source). */
double cm_curve_harness(const char *system);

/* The stratsim cluster spec the curve's system corresponds to ("dgx-a100", "dgx-b200:nodes=4"
 * for a curve over 4 hosts, ...), or NULL when stratsim has no preset for it. Free with
 * g_free. */
char *cm_curve_cluster_spec(const CmCurve *curve);

typedef struct {
  int points;
  double mean; /* mean |predicted - measured| / measured; NAN without points */
  double max;
} CmErrorStats;

/* The model's relative errors on @curve over @cluster at sizes >= @min_bytes. */
void cm_check_model(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                    CmErrorStats *out);

/* The model's signed relative error (predicted - measured) / measured at each size of @curve
 * into @errors (curve->bytes->len entries): NAN below @min_bytes or where the model has no
 * time for the curve's algorithm. */
void cm_check_model_errors(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                           double *errors);

/* Held-out error of a calibration fitted to every other size >= @min_bytes (FALSE when the
 * curve has fewer than four such sizes). With @cluster (nullable) the prediction is
 * cm_collective_estimate's, as `stratsim collective --calibration` gives it; without, the
 * calibration's alone. */
gboolean cm_check_heldout(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                          CmErrorStats *out);

/* The held-out calibration's signed relative error (predicted - measured) / measured at each
 * size left out, into @errors (curve->bytes->len entries; NAN at the other sizes); FALSE as
 * cm_check_heldout. */
gboolean cm_check_heldout_errors(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                                 double *errors);
/* The same for the extrapolations: at each measured size 4L, the error of the calibration
 * fitted to the sizes <= L (NAN at sizes no extrapolation reaches); FALSE when none. */
gboolean cm_check_extrapolation_errors(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                                       double *errors);
/* Errors at 4L of calibrations fitted to the sizes <= L, for each L >= @min_bytes with 4L
 * measured (FALSE when none); @cluster as above. */
gboolean cm_check_extrapolation(const CmCurve *curve, const DevCluster *cluster, double min_bytes,
                                CmErrorStats *out);

G_END_DECLS

#endif
