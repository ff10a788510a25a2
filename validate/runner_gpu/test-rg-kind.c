/* Tests for rg_device_kind (validate/runner_gpu/rg_kind.c): CUDA device names as drivers
 * report them map to stratsim's device kinds, or to none. Needs no GPU. */
#include "validate/runner_gpu/rg_kind.h"

#include "devices/dev_cluster.h"

typedef struct {
  const char *name;
  double gib;
  const char *kind; /* NULL: no preset fits */
} KindCase;

static const KindCase cases[] = {
    {"NVIDIA H100 80GB HBM3", 79.6, "h100-sxm"},
    {"NVIDIA H100 PCIe", 79.6, NULL},
    {"NVIDIA H100 NVL", 93.6, NULL},
    {"NVIDIA H200", 139.8, "h200"},
    {"NVIDIA A100-SXM4-80GB", 79.2, "a100-80gb"},
    {"NVIDIA A100-SXM4-40GB", 39.4, "a100-40gb"},
    {"NVIDIA A100 80GB PCIe", 79.2, NULL},
    {"Tesla V100-SXM2-16GB", 15.8, "v100"},
    {"Tesla P100-PCIE-16GB", 15.9, "p100-pcie"},
    {"Tesla P100-SXM2-16GB", 15.9, "p100"},
    {"Tesla K80", 11.2, "k80"},
    {"NVIDIA GeForce RTX 4090", 23.6, NULL},
};

static void test_kind(gconstpointer data) {
  const KindCase *c = data;
  const char *kind = rg_device_kind(c->name, (size_t)(c->gib * 1024 * 1024 * 1024));
  g_assert_cmpstr(kind, ==, c->kind);
  /* a kind the runner records must be one stratsim knows (devices/presets/devices.json) */
  if (kind) g_assert_true(g_strv_contains(dev_kind_names(), kind));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *path = g_strdup_printf("/runner-gpu/kind/%u", i);
    g_test_add_data_func(path, &cases[i], test_kind);
    g_free(path);
  }
  return g_test_run();
}
