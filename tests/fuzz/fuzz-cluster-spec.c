/* Fuzzes dev_cluster_parse_spec: "PRESET[:key=value,...]" (a relative path finds no file). */
#include "devices/dev_cluster.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  if (fuzz_spec_escapes(text)) return;
  GError *error = NULL;
  DevCluster *cluster = dev_cluster_parse_spec(text, &error);
  FUZZ_CHECK_ERROR(cluster != NULL, error);
  dev_cluster_free(cluster);
  g_clear_error(&error);
}
