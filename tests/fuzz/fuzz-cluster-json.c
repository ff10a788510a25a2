/* Fuzzes dev_cluster_from_json: cluster JSON in the preset format (devices/presets). */
#include "devices/dev_cluster.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  GError *error = NULL;
  DevCluster *cluster = dev_cluster_from_json(text, "fuzz.json", &error);
  FUZZ_CHECK_ERROR(cluster != NULL, error);
  if (cluster) g_free(dev_cluster_to_json(cluster));
  dev_cluster_free(cluster);
  g_clear_error(&error);
}
