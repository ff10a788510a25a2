/* devices — private to the devices/ sources: reading typed JSON fields with errors that name
 * the field, range checks on user-supplied figures, unit conversions, and the device-kind
 * parser that both the kinds table and inline cluster devices use.
 * A `where` argument names the place in messages ("cluster 'dgx-a100'"); a `what` argument
 * names the checked value ("cluster 'x': field 'nodes'"). All errors are in DEV_ERROR. */
#ifndef STRATSIM_DEV_CLUSTER_INT_H
#define STRATSIM_DEV_CLUSTER_INT_H

#include <cjson/cJSON.h>

#include "devices/dev_cluster.h"

/* Preset units to SI. */
#define DEV_GBPS_TO_BPS 1e9        /* GB/s -> bytes/s */
#define DEV_GBITPS_TO_BPS (1e9 / 8) /* Gb/s -> bytes/s */
#define DEV_US_TO_S 1e-6
#define DEV_TFLOPS_TO_FLOPS 1e12
#define DEV_GIB_TO_BYTES 1073741824.0

/* Upper bounds beyond which a figure is a typo, not hardware. */
#define DEV_MAX_BANDWIDTH 1e15 /* bytes/s: 1 PB/s */
#define DEV_MAX_LATENCY 1.0    /* s */
#define DEV_MAX_FLOPS 1e18     /* FLOP/s: 1 EFLOP/s per device */
#define DEV_MAX_MEMORY 1125899906842624.0 /* bytes: 1 PiB */

/* Parses @text; an error says where (line, column) it stopped. Caller frees with cJSON_Delete. */
cJSON *dev_json_parse(const char *text, const char *where, GError **error);

/* Required members of @obj by type. @prefix ("inter", or NULL) is prepended to @field in
 * messages ("field 'inter.latency_us' is missing"). Numbers must be finite. */
gboolean dev_json_number(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, double *out, GError **error);
gboolean dev_json_string(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, const char **out, GError **error);
gboolean dev_json_object(const cJSON *obj, const char *prefix, const char *field,
                         const char *where, const cJSON **out, GError **error);
/* An optional string member: @fallback when absent, an error when present but not a string. */
gboolean dev_json_optional_string(const cJSON *obj, const char *field, const char *where,
                                  const char *fallback, const char **out, GError **error);

/* Range checks; @raw is the value as the user wrote it (for the message), @si in SI units. */
gboolean dev_check_count(const char *what, double raw, int *out, GError **error);
gboolean dev_check_bandwidth(const char *what, double raw, double si, GError **error);
gboolean dev_check_latency(const char *what, double raw, double si, GError **error);
/* A positive (or, with @allow_zero, non-negative) finite figure no larger than @max_si. */
gboolean dev_check_figure(const char *what, double raw, double si, gboolean allow_zero,
                          double max_si, GError **error);
/* An oversubscription ratio: finite, 1..1000. */
gboolean dev_check_oversubscription(const char *what, double raw, double *out, GError **error);
/* NCCL_ALGO (@protocols FALSE) or NCCL_PROTO text in NCCL's syntax naming only algorithms or
 * protocols NCCL knows (devices/dev_nccl_env.c). */
gboolean dev_check_nccl_list(const char *what, const char *text, gboolean protocols, GError **error);
/* A tuner plugin name this model knows (DEV_NCCL_TUNER_*). */
gboolean dev_check_nccl_tuner(const char *what, const char *text, GError **error);
/* An NCCL release as dev_nccl_version_parse reads it; the error names @what and the text. */
gboolean dev_check_nccl_version(const char *what, const char *text, int *out, GError **error);
/* nodes * gpus_per_node within DEV_MAX_DEVICES. */
gboolean dev_check_devices(const char *where, int nodes, int gpus_per_node, GError **error);

/* Parses one device kind in the devices.json entry format into @out (owned; clear with
 * dev_kind_clear). On failure @out is left cleared. */
gboolean dev_kind_from_cjson(const cJSON *obj, const char *where, DevKind *out, GError **error);

#endif
