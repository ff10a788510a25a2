/* costmodel/calibrate (private) — what the fitting (cm_calibrate.c) and lookup
 * (cm_calibrate_lookup.c) halves of the calibration module share. */
#ifndef STRATSIM_CM_CALIBRATE_INT_H
#define STRATSIM_CM_CALIBRATE_INT_H

#include "costmodel/cm_calibrate.h"

struct CmCalibration {
  char *name;
  char *cluster;
  GArray *fits;   /* CmCalibrationFit */
  GArray *tables; /* CmCalibrationTable, owning bytes and busbw */
};

static inline DevLinkClass cm_calibration_link_of(int nodes) {
  return nodes > 1 ? DEV_LINK_INTER : DEV_LINK_INTRA;
}

/* The fitted model's coefficients of alpha and beta for one measurement: the latency-bearing
 * steps of the ring form, and the bus traffic (nccl-tests' factor x size). */
static inline double cm_calibration_alpha_coefficient(CmCollective kind, int ranks) {
  return cm_collective_ring_steps(kind, ranks);
}
static inline double cm_calibration_beta_coefficient(CmCollective kind, int ranks, double bytes) {
  return cm_collective_busbw_factor(kind, ranks) * bytes;
}

/* The fit's time of @kind over @ranks ranks of @bytes. */
static inline double cm_calibration_fit_time(const CmCalibrationFit *f, CmCollective kind,
                                             int ranks, double bytes) {
  return f->base + cm_calibration_alpha_coefficient(kind, ranks) * f->alpha +
         cm_calibration_beta_coefficient(kind, ranks, bytes) * f->beta;
}

#endif
