/* validate/runner_gpu/kind — which stratsim device kind (devices/presets/devices.json) a CUDA
 * device is, from the name the driver reports and its memory. No CUDA here, so it is tested
 * on machines without a GPU (test-rg-kind.c). */
#include "validate/runner_gpu/rg_kind.h"

#include <string.h>

/* Checked in order: the first rule whose words all appear in the name (case-insensitive) and
 * whose memory bound holds gives the kind. Names as nvidia-smi and cudaGetDeviceProperties
 * print them: "NVIDIA H100 80GB HBM3" is the SXM part ("NVIDIA H100 PCIe" and "NVIDIA H100
 * NVL" are not h100-sxm and have no preset, nor do PCIe A100s), "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB",
 * "Tesla P100-PCIE-16GB", "Tesla K80". */
typedef struct {
  const char *words[3];
  double min_gib, max_gib; /* total memory bounds, GiB (0: none) */
  const char *kind;
} KindRule;

static const KindRule rules[] = {
    {{"h200", NULL, NULL}, 0, 0, "h200"},
    {{"h100", "pcie", NULL}, 0, 0, NULL},
    {{"h100", "nvl", NULL}, 0, 0, NULL},
    {{"h100", NULL, NULL}, 0, 0, "h100-sxm"},
    {{"a100", "pcie", NULL}, 0, 0, NULL}, /* the a100 presets are the SXM parts */
    {{"a100", NULL, NULL}, 60, 0, "a100-80gb"},
    {{"a100", NULL, NULL}, 0, 60, "a100-40gb"},
    {{"v100", NULL, NULL}, 0, 0, "v100"},
    {{"p100", "pcie", NULL}, 0, 0, "p100-pcie"},
    {{"p100", NULL, NULL}, 0, 0, "p100"},
    {{"k80", NULL, NULL}, 0, 0, "k80"},
};

const char *rg_device_kind(const char *name, size_t total_bytes) {
  g_return_val_if_fail(name != NULL, NULL);
  char *lower = g_ascii_strdown(name, -1);
  double gib = (double)total_bytes / (1024.0 * 1024.0 * 1024.0);
  const char *kind = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(rules); i++) {
    const KindRule *r = &rules[i];
    gboolean match = TRUE;
    for (int w = 0; w < 3 && r->words[w] && match; w++) match = strstr(lower, r->words[w]) != NULL;
    if (match && r->min_gib > 0) match = gib >= r->min_gib;
    if (match && r->max_gib > 0) match = gib < r->max_gib;
    if (match) {
      kind = r->kind;
      break;
    }
  }
  g_free(lower);
  return kind;
}
