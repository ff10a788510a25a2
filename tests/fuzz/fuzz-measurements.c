/* Fuzzes cm_measurements_parse_json (costmodel/CALIBRATION.md); on error nothing is appended. */
#include "costmodel/cm_calibrate.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  GError *error = NULL;
  GArray *out = g_array_new(FALSE, TRUE, sizeof(CmMeasurement));
  char *device = NULL;
  gboolean ok = cm_measurements_parse_json(text, "fuzz.json", out, &device, &error);
  FUZZ_CHECK_ERROR(ok, error);
  if (!ok && out->len != 0) {
    fprintf(stderr, "error contract violated: %u measurements appended on error\n", out->len);
    abort();
  }
  g_free(device);
  g_array_unref(out);
  g_clear_error(&error);
}
