/* errors — the classification table (err_status.h): each domain with the class of each of its
 * codes, in the enum's order. A code a domain adds later is a failure until it gets its class
 * here (tests/test-errors.c checks every code listed). */
#include "errors/err_status.h"

#include "costmodel/cm_calibrate.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "results/res_db.h"
#include "scenarios/scn_scenario.h"
#include "search/srch_space.h"
#include "session/ses_session.h"
#include "sim/sim.h"
#include "util/util_gnuplot.h"
#include "validate/val_ingest.h"
#include "validate/val_plan.h"
#include "validate/val_plan_build.h"
#include "validate/val_report.h"
#include "validate/val_run.h"

#define B ERR_CLASS_BAD_INPUT
#define F ERR_CLASS_FAILURE

typedef struct {
  GQuark (*domain)(void);
  int ncodes;
  ErrClass classes[8]; /* by code */
} DomainRow;

static const DomainRow table[] = {
    /* UNKNOWN_PRESET, UNKNOWN_DEVICE, PARSE, INVALID */
    {dev_error_quark, 4, {B, B, B, B}},
    /* UNKNOWN_MODEL, PARSE, INVALID, STRATEGY */
    {mdl_error_quark, 4, {B, B, B, B}},
    /* PARSE, INVALID, UNKNOWN_KIND: measurements and calibrations the user gave */
    {cm_error_quark, 3, {B, B, B}},
    /* CYCLE: an internal invariant of a built graph */
    {sim_error_quark, 1, {F}},
    /* SPACE (nothing fits), OPTION; FAILED: nothing could be evaluated */
    {srch_error_quark, 3, {B, B, F}},
    /* OPEN (a path that is no database), SCHEMA (a newer one), WRITE, NOT_FOUND */
    {res_error_quark, 4, {B, B, F, B}},
    /* INPUT, READ_ONLY */
    {ses_error_quark, 2, {B, B}},
    /* PARSE, INVALID, NOT_FOUND */
    {scn_error_quark, 3, {B, B, B}},
    /* GNUPLOT: gnuplot ran and failed, or drew an empty image */
    {util_error_quark, 1, {F}},
    /* INPUT, FAILED (a file could not be written) */
    {val_build_error_quark, 2, {B, F}},
    /* INPUT, IO */
    {val_plan_error_quark, 2, {B, F}},
    /* INPUT (malformed or missing), IO (there but unreadable) */
    {val_ingest_error_quark, 2, {B, F}},
    /* EMPTY, FORMAT */
    {val_report_error_quark, 2, {B, B}},
    /* MISSING (no runner or mpirun), INPUT, FAILED */
    {val_run_error_quark, 3, {F, B, F}},
};

ErrClass err_classify(const GError *error) {
  if (!error) return F;
  if (error->domain == G_FILE_ERROR) return error->code == G_FILE_ERROR_NOENT ? B : F;
  if (error->domain == G_OPTION_ERROR) return B;
  for (gsize i = 0; i < G_N_ELEMENTS(table); i++)
    if (error->domain == table[i].domain())
      return error->code >= 0 && error->code < table[i].ncodes ? table[i].classes[error->code] : F;
  return F;
}

ErrExit err_exit_status(const GError *error) {
  return err_classify(error) == ERR_CLASS_BAD_INPUT ? ERR_EXIT_BAD_INPUT : ERR_EXIT_FAILURE;
}
