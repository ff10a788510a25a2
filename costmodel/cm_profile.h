/* costmodel/profile — measured kernel times that override the roofline (issue 3).
 *
 * A profile point is one kernel measured on one device kind in one dtype: a contraction by its
 * GEMM shape (m, n, k, batch; cm_gemm_shape), any other op kind by its element count. Lookup:
 *  - contractions (matmul, batched matmul and convolution share the GEMM kernels): an exact
 *    shape match gives its time; otherwise the achieved FLOP rate is interpolated by inverse
 *    squared distance in log-shape space over the 4 nearest measured shapes (a GEMM's rate
 *    varies smoothly with log m, log n, log k away from quantization steps) and the time is
 *    flops / rate;
 *  - other kinds: time against elements, piecewise linear in log-log space between the two
 *    measured neighbours; beyond the measured range, proportional to elements from the nearest
 *    end (memory-bound kernels scale with the bytes they move).
 * Points come from the validate runner's measurements (issue 7) or a profile JSON file
 * (costmodel/PROFILES.md); every file names its source. */
#ifndef STRATSIM_CM_PROFILE_H
#define STRATSIM_CM_PROFILE_H

#include <glib.h>
#include "costmodel/costmodel.h"

G_BEGIN_DECLS

typedef struct {
  char *device;        /* device kind name, e.g. "a100-80gb" */
  MdlOpKind kind;
  DevDtype dtype;
  CmGemmShape shape;   /* contractions */
  double elements;     /* other kinds: output elements */
  gboolean backward;   /* other kinds: the backward kernel (a GEMM's shape already says which) */
  double time_s;
} CmProfilePoint;

typedef struct CmProfiles CmProfiles;

CmProfiles *cm_profiles_new(void);
void cm_profiles_free(CmProfiles *profiles);
/* Adds a point (copied). */
void cm_profiles_add(CmProfiles *profiles, const CmProfilePoint *point);
guint cm_profiles_size(const CmProfiles *profiles);
/* Where the points were measured (the file's "source"), or NULL. */
const char *cm_profiles_source(const CmProfiles *profiles);
const CmProfilePoint *cm_profiles_at(const CmProfiles *profiles, guint i);

/* Parses a profile JSON file: {"device": KIND, "source": TEXT, "kernels": [{"op": KIND,
 * "dtype": ..., "m", "n", "k", "batch" | "elements" [, "phase": "forward"|"backward"],
 * "time_s"}]}; errors name the entry. */
CmProfiles *cm_profiles_from_json(const char *text, const char *origin, GError **error);

/* The measured or interpolated time of a kernel, FALSE when @profiles has no point for the
 * device kind, dtype and kernel class. @shape is required for contractions (flops = 2 m n k
 * batch), @elements for the others. */
gboolean cm_profiles_lookup(const CmProfiles *profiles, const char *device, MdlOpKind kind,
                            DevDtype dtype, const CmGemmShape *shape, double elements,
                            gboolean backward, double *time_s);

G_END_DECLS

#endif
