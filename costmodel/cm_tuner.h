/* costmodel/tuner — the one collective model every part of stratsim uses: `simulate`'s
 * collective tasks (cm_group_collective_time, costmodel.h), `explain`, `search` and
 * `stratsim collective` (cm_collective_estimate). NCCL's collectives are costed by NCCL's own
 * tuner model (cm_nccl.h), its point-to-point ones (all-to-all, send/recv) by the alpha-beta
 * forms of cm_collective.h; a calibration (cm_calibrate.h), where it covers the case, replaces
 * the time while the model still names the algorithm. Depends on collective, nccl and
 * calibrate; none of them depends on it. */
#ifndef STRATSIM_CM_TUNER_H
#define STRATSIM_CM_TUNER_H

#include <glib.h>
#include "costmodel/cm_calibrate.h"
#include "costmodel/cm_nccl.h"

G_BEGIN_DECLS

/* One collective over @devices (n entries, distinct) of @cluster: every candidate's time
 * (its best protocol), the fastest chosen as NCCL's tuner does. With @calibration (NULL: the
 * model only), the time comes from its measured table or fit where it covers this collective,
 * rank count and host count (source says which); algorithm stays the model's choice. A group
 * of one costs nothing (CM_ALGO_NONE). */
CmCollectiveEstimate cm_collective_estimate(const DevCluster *cluster, CmCollective kind,
                                            const int *devices, int n, double bytes,
                                            const CmCalibration *calibration);

G_END_DECLS

#endif
