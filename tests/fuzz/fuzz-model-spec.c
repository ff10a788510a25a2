/* Fuzzes mdl_graph_parse_spec: zoo names, NAME:key=value overrides, families (gpt:, mlp:, ...). */
#include "model/mdl_graph.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  if (fuzz_spec_escapes(text)) return;
  GError *error = NULL;
  MdlGraph *graph = mdl_graph_parse_spec(text, &error);
  FUZZ_CHECK_ERROR(graph != NULL, error);
  mdl_graph_free(graph);
  g_clear_error(&error);
}
