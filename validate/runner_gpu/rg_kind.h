/* validate/runner_gpu/kind — CUDA device name -> stratsim device kind; no CUDA needed, so
 * test-rg-kind runs anywhere. */
#ifndef STRATSIM_RG_KIND_H
#define STRATSIM_RG_KIND_H

#include <glib.h>

G_BEGIN_DECLS

/* The stratsim device kind (devices/presets/devices.json) of a CUDA device named @name with
 * @total_bytes of memory ("NVIDIA H100 80GB HBM3" -> "h100-sxm"), NULL when none fits. The
 * string is static. */
const char *rg_device_kind(const char *name, size_t total_bytes);

G_END_DECLS

#endif
