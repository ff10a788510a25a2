/* scenarios/scenario — a scenario file and its expansion into points.
 *
 * A scenario (JSON, scenarios/README.md) lists spec templates — models, clusters, strategies —
 * and sweep axes whose values are substituted into the templates' {placeholders}. Expanding it
 * gives the points: every model x cluster x strategy x combination of axis values, in a fixed
 * order (models outermost, then clusters, strategies, and the axes in file order, the first
 * axis slowest). A point whose templates do not mention an axis is the same point for every
 * value of that axis: points are identified by their key, a SHA-256 of the canonical text of
 * the substituted specs and the run options, and a repeated key is dropped (the first stays).
 * The key is what makes a sweep resumable: it does not depend on the point's position, the
 * thread count or the file's formatting. Expansion is a pure function of the JSON text, so
 * `report` and `plot` re-expand the stored copy to order and label the stored points.
 *
 * Placeholders (scn_template.h): {name} is an axis variable's value as text; anything else
 * inside braces is an arithmetic expression over numeric variables (+ - * / %, parentheses:
 * {8*nodes}); {{ and }} are literal braces.
 */
#ifndef STRATSIM_SCN_SCENARIO_H
#define STRATSIM_SCN_SCENARIO_H

#include <glib.h>
#include "scenarios/scn_template.h"
#include "util/util_gnuplot.h"

G_BEGIN_DECLS

#define SCN_ERROR (scn_error_quark())
GQuark scn_error_quark(void);
typedef enum {
  SCN_ERROR_PARSE,        /* malformed JSON, a wrong field type, an unknown field */
  SCN_ERROR_INVALID,      /* a placeholder without a value, an empty axis, a bad expression */
  SCN_ERROR_NOT_FOUND,    /* no scenario of that name in the database */
} ScnError;

/* One entry of models / clusters / strategies. */
typedef struct {
  char *spec;        /* template, with {placeholders} */
  char *label;       /* for tables and legends (a template too); the spec when not given */
} ScnTemplate;

/* One sweep axis: a list of settings, each assigning one or more variables (a plain axis
 * "nodes": [1, 2] assigns one; a zipped axis "scale": [{"nodes": 16, "batch": 128}, ...] several
 * at once). */
typedef struct {
  char *name;
  GPtrArray *settings;   /* of ScnSetting */
} ScnAxis;

enum {
  SCN_CHART_THROUGHPUT = 1 << 0,  /* throughput vs GPU count, a line per strategy */
  SCN_CHART_BREAKDOWN = 1 << 1,   /* compute / exposed communication / bubble per point */
  SCN_CHART_MEMORY = 1 << 2,      /* peak memory per device by category vs capacity */
  SCN_CHART_TIMELINE = 1 << 3,    /* Gantt of one simulated iteration of selected points */
};
enum { SCN_Y_SAMPLES_PER_S, SCN_Y_TFLOPS_PER_GPU, SCN_Y_ITERATION_TIME_S, SCN_Y_SAMPLES_PER_S_PER_GPU };
enum { SCN_TABLE_TEXT = 1 << 0, SCN_TABLE_CSV = 1 << 1, SCN_TABLE_JSON = 1 << 2 };
enum { SCN_FORMAT_PNG = UTIL_GNUPLOT_PNG, SCN_FORMAT_SVG = UTIL_GNUPLOT_SVG };

typedef struct {
  char *name;
  char *description;
  char *file;                 /* where it was read from, or NULL */
  char *dir;                  /* relative model/cluster/strategy files resolve here first */
  char *json;                 /* the text it was parsed from (stored in the database) */
  GPtrArray *models;          /* ScnTemplate */
  GPtrArray *clusters;
  GPtrArray *strategies;
  GPtrArray *axes;            /* ScnAxis */
  /* options: how every point is simulated (part of each point's key) */
  gboolean step_collectives;  /* "collectives": "step" */
  gboolean no_symmetry;       /* "symmetry": false */
  gboolean no_profiles;       /* "profiles": false: roofline only */
  char *calibration;          /* "calibration": NAME stored by `stratsim calibrate`, or NULL */
  gboolean crossmesh;         /* "crossmesh" and/or "crossmesh_order" given: SimOptions.crossmesh */
  int crossmesh_method;       /* SimCrossMeshMethod ("crossmesh": "broadcast", ...) */
  int crossmesh_order;        /* SimCrossMeshOrder ("crossmesh_order": "greedy", ...) */
  gboolean has_framework;     /* "framework" given: every point's strategy runs under it */
  int framework;              /* MdlFramework ("framework": "pytorch-eager", ...) */
  /* outputs */
  unsigned charts;            /* SCN_CHART_* */
  unsigned tables;            /* SCN_TABLE_* */
  unsigned formats;           /* SCN_FORMAT_* */
  char *throughput_x;         /* x axis of the throughput chart: NULL (GPU count) or a variable */
  gboolean throughput_best;   /* also a line through the best point of each strategy entry */
  gboolean throughput_free_y; /* the y axis fits the data instead of starting at 0 */
  int throughput_y;           /* SCN_Y_*: what the throughput chart plots */
  ScnSetting *timeline_where; /* timeline points must match these values (NULL: any) */
  int timeline_max;           /* at most this many timelines (one per strategy entry) */
} ScnScenario;

typedef struct {
  guint index;                /* position in the expansion */
  char *key;                  /* hex SHA-256 of the canonical text */
  char *model, *cluster, *strategy;           /* substituted specs, as in the file */
  char *model_label, *cluster_label, *strategy_label;
  guint model_entry, cluster_entry, strategy_entry; /* template indices */
  char *axes_json;            /* {"var": value, ...}: the variables this point's templates use */
  ScnSetting *values;         /* the same, in axis order; owned */
} ScnPoint;

/* Parses a scenario from JSON text; @file (nullable) is where it came from: relative spec
 * files resolve against its directory. NULL with SCN_ERROR_PARSE / _INVALID / _UNSUPPORTED
 * naming the field. Free with scn_scenario_free. */
ScnScenario *scn_scenario_from_json(const char *json_text, const char *file, GError **error);
/* Reads and parses @path (G_FILE_ERROR when unreadable); the scenario's file is @path made
 * absolute. */
ScnScenario *scn_scenario_load(const char *path, GError **error);
void scn_scenario_free(ScnScenario *scenario);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ScnScenario, scn_scenario_free)

/* Most points one scenario may expand to (models x clusters x strategies x axis values): each
 * is a simulation and a row; more is a typo in an axis, not a sweep (README, "Limits"). */
#define SCN_MAX_POINTS 100000

/* Expands @scenario into its points (GPtrArray of ScnPoint, owning them), in the order the
 * header describes, repeated keys dropped. NULL with SCN_ERROR_INVALID when a template uses a
 * variable no axis sets or an expression fails (the message names template and point), or the
 * product of the lists and axes exceeds SCN_MAX_POINTS (checked before expanding). */
GPtrArray *scn_scenario_expand(const ScnScenario *scenario, GError **error);

/* The canonical text a point's key hashes (caller g_frees). */
char *scn_point_canonical(const ScnScenario *scenario, const char *model, const char *cluster,
                          const char *strategy);
/* The value of variable @var at @point, or NULL when its templates do not use it. */
const char *scn_point_value(const ScnPoint *point, const char *var);
/* A spec with its file part resolved: a relative path that exists under the scenario's
 * directory is prefixed with it (caller g_frees). */
char *scn_scenario_resolve(const ScnScenario *scenario, const char *spec);

G_END_DECLS

#endif
