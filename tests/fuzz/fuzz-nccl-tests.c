/* Fuzzes cm_nccl_tests_parse: nccl-tests output (tests/data/nccl-tests); on error nothing is
 * appended. The collective comes from the header, else a hint: none for even-length inputs,
 * all_reduce for odd ones, so both paths are reached. */
#include "costmodel/cm_calibrate.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  GError *error = NULL;
  GArray *out = g_array_new(FALSE, TRUE, sizeof(CmMeasurement));
  CmNcclTestsInfo info;
  memset(&info, 0, sizeof info);
  int hint = len % 2 ? (int)CM_ALL_REDUCE : -1;
  gboolean ok = cm_nccl_tests_parse(text, "fuzz.txt", hint, out, &info, &error);
  FUZZ_CHECK_ERROR(ok, error);
  if (!ok && out->len != 0) {
    fprintf(stderr, "error contract violated: %u measurements appended on error\n", out->len);
    abort();
  }
  cm_nccl_tests_info_clear(&info);
  g_array_unref(out);
  g_clear_error(&error);
}
