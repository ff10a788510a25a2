/* Fuzzes mdl_graph_from_json: JSON operator graphs (model/README.md). */
#include "model/mdl_graph.h"
#include "fuzz-common.h"

static void fuzz_setup(void) {}

static void fuzz_one(const char *text, size_t len) {
  GError *error = NULL;
  MdlGraph *graph = mdl_graph_from_json(text, "fuzz.json", &error);
  FUZZ_CHECK_ERROR(graph != NULL, error);
  if (graph) g_free(mdl_graph_to_json(graph));
  mdl_graph_free(graph);
  g_clear_error(&error);
}
