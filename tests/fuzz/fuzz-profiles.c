/* Fuzzes cm_profiles_from_json: measured kernel times (costmodel/PROFILES.md). */
#include "costmodel/cm_profile.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  GError *error = NULL;
  CmProfiles *profiles = cm_profiles_from_json(text, "fuzz.json", &error);
  FUZZ_CHECK_ERROR(profiles != NULL, error);
  cm_profiles_free(profiles);
  g_clear_error(&error);
}
