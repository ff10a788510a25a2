/* Tests of the limits (README, "Limits"): hostile or absurd input — 10^9 GPUs, 10^7 layers,
 * zero, negative, NaN, infinite and overflowing sizes in every spec and JSON field, deeply
 * nested JSON, cycles, strategies naming devices that do not exist, microbatch counts and mesh
 * sizes past their bounds, valid but enormous simulations — is refused with a one-line error,
 * quickly, before memory or time blows up: at the library level (GError) and at the CLI (exit
 * status 2, one line on stderr). Each case times itself. And the task-count estimate the
 * refusal rests on (sim_build_estimate) is checked against the graphs the builder builds.
 *
 * Over 700 lines on purpose: one GTest binary per module (CONVENTIONS.md, "Tests"), whose cases
 * share this file's fixtures and helpers; splitting it would split one module's test binary.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"
#include "model/mdl_strategy.h"
#include "scenarios/scn_scenario.h"
#include "sim/sim.h"
#include "test-cli-util.h"

static char *tmpdir;

/* Seconds a refusal may take. The cases run in milliseconds; the bound leaves room for
 * sanitized builds on loaded 2-core CI machines (3 s was seen exceeded there by the 4 MB JSON
 * case) and is far below what the refused work would cost (minutes and gigabytes, or an
 * abort). */
#define FAST_S 10.0

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static void assert_one_line(const char *message) {
  g_assert_nonnull(message);
  g_assert_cmpuint(strlen(message), >, 0);
  g_assert_null(strchr(message, '\n'));
  g_assert_cmpuint(strlen(message), <, 600);
}

static void assert_fast(gint64 start_us, const char *what) {
  double s = (g_get_monotonic_time() - start_us) / 1e6;
  if (s > FAST_S) g_error("%s took %.2f s", what, s);
}

/* A library error: set, of the expected domain, one line, containing @needle. */
static void assert_refused(GError *error, GQuark domain, const char *needle) {
  g_assert_nonnull(error);
  g_assert_cmpuint(error->domain, ==, domain);
  assert_one_line(error->message);
  if (needle && !strstr(error->message, needle))
    g_error("message '%s' lacks '%s'", error->message, needle);
  g_test_message("%s", error->message);
}

/* Not inlined: GCC 12 at -O3 then takes the text's pointers for ones to the local `text`
 * (-Wdangling-pointer in replace_once). */
static G_GNUC_NO_INLINE char *read_source(const char *relative) {
  g_autofree char *path = g_build_filename(STRATSIM_SOURCE_DIR, relative, NULL);
  char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  return text;
}

/* @text with the first @old replaced by @new (which must occur). */
static char *replace_once(const char *text, const char *old, const char *new_text) {
  const char *at = strstr(text, old);
  if (!at) g_error("'%s' not in the template", old);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, new_text, at + strlen(old));
}

static char *nested(const char *open, const char *close, int depth) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < depth; i++) g_string_append(s, open);
  for (int i = 0; i < depth; i++) g_string_append(s, close);
  return g_string_free(s, FALSE);
}

/* --- cluster specs and files ---------------------------------------------------------------- */

typedef struct {
  const char *input; /* a spec, or for the JSON cases "old|new" applied to dgx-a100.json */
  const char *needle;
} Case;

static const Case bad_cluster_specs[] = {
    {"dgx-a100:nodes=1000000,gpus_per_node=1000", "exceeds the limit of 16777216 devices"},
    {"dgx-a100:nodes=0", "nodes"},
    {"dgx-a100:nodes=-3", "nodes"},
    {"dgx-a100:nodes=nan", "nodes"},
    {"dgx-a100:nodes=inf", "nodes"},
    {"dgx-a100:nodes=1e300", "nodes"},
    {"dgx-a100:nodes=2.5", "nodes"},
    {"dgx-a100:nodes=99999999999999999999999", "nodes"},
    {"dgx-a100:gpus_per_node=1000001", "gpus_per_node"},
    {"dgx-a100:nics_per_node=0", "nics_per_node"},
    {"dgx-a100:intra_bw_GBps=nan", "intra_bw_GBps"},
    {"dgx-a100:intra_bw_GBps=-1", "intra_bw_GBps"},
    {"dgx-a100:intra_bw_GBps=0", "intra_bw_GBps"},
    {"dgx-a100:inter_bw_Gbps=inf", "inter_bw_Gbps"},
    {"dgx-a100:inter_bw_Gbps=1e300", "inter_bw_Gbps"},
    {"dgx-a100:intra_latency_us=-1", "intra_latency_us"},
    {"dgx-a100:inter_latency_us=nan", "inter_latency_us"},
    {"dgx-a100:oversubscription=0.5", "oversubscription"},
    {"dgx-a100:oversubscription=nan", "oversubscription"},
    {"dgx-a100:device=nosuch", "nosuch"},
};

static void test_cluster_spec(gconstpointer data) {
  const Case *c = data;
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  DevCluster *cluster = dev_cluster_parse_spec(c->input, &error);
  g_assert_null(cluster);
  assert_refused(error, DEV_ERROR, c->needle);
  g_error_free(error);
  assert_fast(t0, c->input);
}

static const Case bad_cluster_json[] = {
    {"\"nodes\": 1|\"nodes\": -1", "nodes"},
    {"\"nodes\": 1|\"nodes\": 1e400", "nodes"},
    {"\"nodes\": 1|\"nodes\": 1000000000", "nodes"},
    {"\"nodes\": 1|\"nodes\": \"1\"", "nodes"},
    {"\"nodes\": 1|\"nodes\": 1000000, \"gpus_per_node\": 1000", "16777216 devices"},
    {"\"gpus_per_node\": 8|\"gpus_per_node\": 0", "gpus_per_node"},
    {"\"bandwidth_GBps\": 300|\"bandwidth_GBps\": -300", "bandwidth"},
    {"\"bandwidth_GBps\": 300|\"bandwidth_GBps\": 1e400", "bandwidth"},
    {"\"bandwidth_GBps\": 300|\"bandwidth_GBps\": 0", "bandwidth"},
    {"\"latency_us\": 3.4|\"latency_us\": -3.4", "latency"},
    {"\"latency_us\": 3.4|\"latency_us\": 1e300", "latency"},
    {"\"nics_per_node\": 8|\"nics_per_node\": 2.5", "nics_per_node"},
    {"\"device\": \"a100-80gb\"|\"device\": {\"name\": \"x\", \"peak_tflops\": {\"fp32\": -1}}", "fp32"},
};

static void test_cluster_json(gconstpointer data) {
  const Case *c = data;
  g_autofree char *base = read_source("devices/presets/dgx-a100.json");
  g_auto(GStrv) pair = g_strsplit(c->input, "|", 2);
  g_autofree char *json = replace_once(base, pair[0], pair[1]);
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  g_assert_null(dev_cluster_from_json(json, "cluster.json", &error));
  assert_refused(error, DEV_ERROR, c->needle);
  g_error_free(error);
  assert_fast(t0, c->input);
}

/* --- model specs and JSON graphs ------------------------------------------------------------ */

static const Case bad_model_specs[] = {
    {"gpt:layers=10000000", "exceeds 100000"},
    {"gpt:layers=0", "layers"},
    {"gpt:layers=-1", "layers"},
    {"gpt:layers=nan", "layers"},
    {"gpt:layers=inf", "layers"},
    {"gpt:hidden=1e999", "hidden"},
    {"gpt:batch=99999999999999999999", "batch"},
    {"gpt3-125m:batch=0", "batch"},
    {"gpt3-125m:seq=-5", "seq"},
    {"gpt3-125m:batch=100000000", "2^62"},
    {"gpt:hidden=4096,heads=3", "heads"},
    {"mlp:layers=10000000", "layers"},
    {"mlp:hidden=nan", "hidden"},
    {"alexnet:batch=-1", "batch"},
    {"vgg16:batch=inf", "batch"},
};

static void test_model_spec(gconstpointer data) {
  const Case *c = data;
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  g_assert_null(mdl_graph_parse_spec(c->input, &error));
  assert_refused(error, MDL_ERROR, c->needle);
  g_error_free(error);
  assert_fast(t0, c->input);
}

/* Edits of model/examples/mlp2.json. */
static const Case bad_model_json[] = {
    {"\"batch\": 32|\"batch\": -32", "batch"},
    {"\"batch\": 32|\"batch\": 0", "batch"},
    {"\"batch\": 32|\"batch\": 1e400", "batch"},
    {"\"batch\": 32|\"batch\": 9.3e18", "batch"},
    {"\"batch\": 32|\"batch\": 32.5", "batch"},
    {"\"batch\": 32|\"batch\": \"32\"", "batch"},
    {"[32, 512], \"input\"|[32, -512], \"input\"", "shape"},
    {"[32, 512], \"input\"|[32, 1e400], \"input\"", "shape"},
    {"[32, 512], \"input\"|[4611686018427387904, 512], \"input\"", "x"},
    {"\"size\": 512, \"role\": \"parameter\"|\"size\": 0, \"role\": \"parameter\"", "size"},
    {"\"size\": 512, \"role\": \"parameter\"|\"size\": 1e300, \"role\": \"parameter\"", "size"},
    {"\"flops_per_element\": 1|\"flops_per_element\": -1", "flops_per_element"},
    {"\"flops_per_element\": 1|\"flops_per_element\": 1e400", "flops_per_element"},
    {"\"num_layers\": 2|\"num_layers\": -2", "num_layers"},
    {"\"num_layers\": 2|\"num_layers\": 1e400", "num_layers"},
    /* cycles: fc0 reads relu0, which reads fc0; relu0 reads fc1, which reads relu0 */
    {"{\"tensor\": \"x\",          \"dims\": [\"b\", \"k\"]}|{\"tensor\": \"relu0\", \"dims\": [\"b\", \"k\"]}",
     "cycles are not allowed"},
    {"{\"tensor\": \"fc0\", \"dims\": [\"b\", \"h\"]}|{\"tensor\": \"fc1\", \"dims\": [\"b\", \"h\"]}",
     "cycles are not allowed"},
};

static void test_model_json(gconstpointer data) {
  const Case *c = data;
  g_autofree char *base = read_source("model/examples/mlp2.json");
  g_auto(GStrv) pair = g_strsplit(c->input, "|", 2);
  g_autofree char *json = replace_once(base, pair[0], pair[1]);
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  g_assert_null(mdl_graph_from_json(json, "mlp2.json", &error));
  assert_refused(error, MDL_ERROR, c->needle);
  g_error_free(error);
  assert_fast(t0, c->input);
}

/* JSON nested far past cJSON's limit (CJSON_NESTING_LIMIT, 1000): the parser stops at the limit
 * instead of recursing 100000 deep, and every reader says "malformed JSON". */
static void test_deep_json(void) {
  g_autofree char *arrays = nested("[", "]", 100000);
  g_autofree char *objects_open = NULL;
  GString *o = g_string_new(NULL);
  for (int i = 0; i < 100000; i++) g_string_append(o, "{\"a\":");
  g_string_append(o, "1");
  for (int i = 0; i < 100000; i++) g_string_append_c(o, '}');
  g_autofree char *objects = g_string_free(o, FALSE);
  g_autofree char *base = read_source("model/examples/mlp2.json");
  g_autofree char *inner = nested("[", "]", 5000);
  g_autofree char *field = g_strdup_printf("\"name\": %s", inner);
  g_autofree char *in_field = replace_once(base, "\"name\": \"mlp2\"", field);
  GError *error = NULL;
  const char *texts[] = {arrays, objects, in_field};
  DevCluster *cluster = dev_cluster_parse_spec("dgx-a100", &error);
  g_assert_no_error(error);
  MdlGraph *graph = mdl_graph_parse_spec("mlp", &error);
  g_assert_no_error(error);
  for (gsize i = 0; i < G_N_ELEMENTS(texts); i++) {
    gint64 t0 = g_get_monotonic_time();
    g_assert_null(mdl_graph_from_json(texts[i], "deep.json", &error));
    assert_refused(error, MDL_ERROR, "malformed JSON");
    g_clear_error(&error);
    g_assert_null(dev_cluster_from_json(texts[i], "deep.json", &error));
    assert_refused(error, DEV_ERROR, "malformed JSON");
    g_clear_error(&error);
    g_assert_null(mdl_strategy_from_json(texts[i], "deep.json", graph, cluster, &error));
    assert_refused(error, MDL_ERROR, "malformed JSON");
    g_clear_error(&error);
    g_assert_null(scn_scenario_from_json(texts[i], NULL, &error));
    g_assert_nonnull(error);
    assert_one_line(error->message);
    g_clear_error(&error);
    assert_fast(t0, "deep JSON");
  }
  mdl_graph_free(graph);
  dev_cluster_free(cluster);
}

/* A JSON graph with more ops than MDL_MAX_OPS is refused by count, before one op is read. */
static void test_json_too_many_ops(void) {
  GString *s = g_string_new("{\"batch\": 1, \"tensors\": [], \"ops\": [");
  for (int i = 0; i <= MDL_MAX_OPS; i++) g_string_append(s, i ? ",0" : "0");
  g_string_append(s, "]}");
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  g_assert_null(mdl_graph_from_json(s->str, "many.json", &error));
  assert_refused(error, MDL_ERROR, "\"ops\" has more than 2000000 entries, over the limit");
  g_error_free(error);
  /* The message proves the count check refused it before any op was built; the time bound
   * only guards against a blow-up (building 2 M ops would take seconds, not minutes). */
  assert_fast(t0, "too many ops");
  g_string_free(s, TRUE);
}

/* Issue 17, item 7: a model file of more tensors than MDL_MAX_TENSORS is refused while it is
 * read, at the byte where the count passes the limit (so well before its end: the rest is
 * never read nor parsed; on the old reader cJSON built a tree of all of them first, 3.5 GB for
 * 7.9 M tensors). And a container nested inside an entry may not hold millions either. */
static void test_json_counted_while_reading(void) {
  g_autofree char *path = tmp_path("many-tensors.json");
  GString *s = g_string_new("{\"batch\": 1, \"tensors\": [");
  for (int i = 0; i < 2 * MDL_MAX_TENSORS; i++) g_string_append(s, i ? ",{}" : "{}");
  g_string_append(s, "], \"ops\": [{}]}");
  g_assert_true(g_file_set_contents(path, s->str, (gssize)s->len, NULL));
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  g_assert_null(mdl_graph_parse_spec(path, &error));
  assert_refused(error, MDL_ERROR, "\"tensors\" has more than 4000000 entries");
  const char *at = strstr(error->message, "refused at byte ");
  g_assert_nonnull(at);
  gint64 offset = g_ascii_strtoll(at + strlen("refused at byte "), NULL, 10);
  g_assert_cmpint(offset, >, 3 * MDL_MAX_TENSORS);
  g_assert_cmpint(offset, <, (gint64)s->len / 2 + 100); /* refused half way: not read on */
  g_clear_error(&error);
  assert_fast(t0, "many tensors");
  g_unlink(path);
  /* the same text in memory: refused by the count, before the parse */
  g_assert_null(mdl_graph_from_json(s->str, "many.json", &error));
  assert_refused(error, MDL_ERROR, "many.json: \"tensors\" has more than 4000000 entries");
  g_clear_error(&error);
  g_string_free(s, TRUE);
  /* a shape of a million sizes inside one tensor */
  GString *shape = g_string_new("{\"batch\": 1, \"tensors\": [{\"name\": \"x\", \"shape\": [");
  for (int i = 0; i < 1000000; i++) g_string_append(shape, i ? ",1" : "1");
  g_string_append(shape, "]}], \"ops\": [{}]}");
  g_assert_null(mdl_graph_from_json(shape->str, "shape.json", &error));
  assert_refused(error, MDL_ERROR, "at depth 4 has more than 4096 entries");
  g_clear_error(&error);
  g_string_free(shape, TRUE);
  /* keys with brackets and escaped quotes in strings do not fool the count */
  g_autofree char *base = read_source("model/examples/mlp2.json");
  g_autofree char *tricky = replace_once(base, "\"name\": \"mlp2\"",
                                         "\"name\": \"mlp2 [\\\"{\", \"note\": \"]]}\"");
  MdlGraph *g = mdl_graph_from_json(tricky, "tricky.json", &error);
  g_assert_no_error(error);
  mdl_graph_free(g);
}

/* A model file larger than MDL_MAX_JSON_BYTES is refused before it is read (a sparse file:
 * nothing is written). */
static void test_json_file_too_large(void) {
  g_autofree char *path = tmp_path("huge-model.json");
  FILE *f = fopen(path, "w");
  g_assert_nonnull(f);
  g_assert_cmpint(fseeko(f, MDL_MAX_JSON_BYTES + 1, SEEK_SET), ==, 0);
  g_assert_cmpint(fputc('}', f), !=, EOF);
  fclose(f);
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  g_assert_null(mdl_graph_parse_spec(path, &error));
  assert_refused(error, MDL_ERROR, "over the limit of 256 MiB");
  g_error_free(error);
  assert_fast(t0, "huge file");
  g_unlink(path);
}

/* --- strategies ----------------------------------------------------------------------------- */

typedef struct {
  const char *model, *cluster, *strategy;
  const char *needle;
} StrategyCase;

static const StrategyCase bad_strategy_specs[] = {
    {"mlp", "dgx-a100", "megatron:tp=0", "tp"},
    {"mlp", "dgx-a100", "megatron:mb=-1", "mb"},
    {"mlp", "dgx-a100", "megatron:tp=nan", "tp"},
    {"mlp", "dgx-a100", "megatron:dp=1e400", "dp"},
    {"mlp", "dgx-a100", "megatron:tp=99999999999999", "tp"},
    /* issue 17, item 6: a positive integer past the bound is too large, not "not positive" */
    {"mlp", "dgx-a100", "megatron:tp=4294967297", "tp=4294967297 is too large"},
    {"mlp", "dgx-a100", "megatron:tp=99999999999999999999999", "is too large"},
    /* issue 17, item 6: the batch check names what the user wrote (dp, its default) and not
     * megatron's dp*mb, and offers a dp that divides */
    {"gpt3-1.3b", "dgx-a100:nodes=3", "dp",
     "strategy dp: 24 data-parallel replicas (dp defaults to cluster dgx-a100's 24 GPUs / tp*pp "
     "= 1) do not divide model gpt3-1.3b's global batch of 512 samples evenly; dp=16 would "
     "(dp:dp=16)"},
    {"gpt3-1.3b", "dgx-a100:nodes=3", "megatron:tp=2,dp=12,mb=2",
     "12 data-parallel replicas (dp=12) of 2-sample microbatches (mb=2)"},
    {"mlp", "dgx-a100", "megatron:tp=1000000000,pp=1000000000,dp=1000000000", "1e+27 devices"},
    {"mlp", "dgx-a100", "megatron:tp=1,pp=4,dp=2,schedule=interleaved,vp=1000000000",
     "4000000000 pipeline chunks"},
    {"mlp", "dgx-a100", "megatron:bucket_mb=nan", "bucket_mb"},
    {"mlp", "dgx-a100", "megatron:zero=7", "zero"},
    {"gpt3-125m", "dgx-a100", "megatron:tp=1000000", "tp"},
    /* used to die of SIGFPE: q^3 overflowed to a negative device count */
    {"gpt3-125m", "dgx-a100", "3d:q=2097152", "devices but cluster"},
    {"gpt3-125m", "dgx-a100", "2.5d:q=65536,d=65536,dp=65536", "devices but cluster"},
    {"gpt3-125m", "dgx-a100", "summa:q=0", "q"},
    /* microbatch counts: 10^7 and 10^11 (this one used to be truncated to an int) */
    {"gpt:layers=1,hidden=64,heads=1,seq=1,vocab=2,batch=10000000", "dgx-a100",
     "megatron:tp=1,pp=1,dp=1,mb=1", "exceed the limit of 1000000"},
    {"gpt:layers=1,hidden=64,heads=1,seq=1,vocab=2,batch=100000000000", "dgx-a100",
     "megatron:tp=1,pp=1,dp=1,mb=1", "100000000000 microbatches"},
    {"gpt:layers=1,hidden=64,heads=1,seq=1,vocab=2,batch=100000000000", "dgx-a100",
     "summa:q=1,mb=1", "12500000000 microbatches (batch / (dp*mb)) exceed"},
};

static void test_strategy_spec(gconstpointer data) {
  const StrategyCase *c = data;
  GError *error = NULL;
  MdlGraph *graph = mdl_graph_parse_spec(c->model, &error);
  g_assert_no_error(error);
  DevCluster *cluster = dev_cluster_parse_spec(c->cluster, &error);
  g_assert_no_error(error);
  gint64 t0 = g_get_monotonic_time();
  g_assert_null(mdl_strategy_parse_spec(c->strategy, graph, cluster, &error));
  assert_refused(error, MDL_ERROR, c->needle);
  g_error_free(error);
  assert_fast(t0, c->strategy);
  mdl_graph_free(graph);
  dev_cluster_free(cluster);
}

static const char *strategy_template =
    "{\"num_microbatches\": 1, \"meshes\": [{\"shape\": [8], \"devices\": [0,1,2,3,4,5,6,7]}],"
    " \"default\": {\"mesh\": 0, \"split\": [\"@sample\"]}}";

static const Case bad_strategy_json[] = {
    {"[0,1,2,3,4,5,6,7]|[0,1,2,3,4,5,6,99]", "names device 99 but cluster dgx-a100 has devices 0..7"},
    {"[0,1,2,3,4,5,6,7]|[0,1,2,3,4,5,6,-1]", "device entry 7"},
    {"[0,1,2,3,4,5,6,7]|[0,1,2,3,4,5,6,6]", "lists device 6 twice"},
    {"\"shape\": [8]|\"shape\": [1e400]", "shape entry 0"},
    {"\"shape\": [8]|\"shape\": [-8]", "shape entry 0"},
    {"\"shape\": [8]|\"shape\": [0]", "shape entry 0"},
    {"\"shape\": [8]|\"shape\": [100000, 100000]", "exceed the limit of 16777216"},
    {"\"shape\": [8]|\"shape\": [1000000, 1000000, 1000000, 1000000]", "1e+24 devices"},
    {"\"num_microbatches\": 1|\"num_microbatches\": 2000000", "num_microbatches"},
    {"\"num_microbatches\": 1|\"num_microbatches\": -1", "num_microbatches"},
    {"\"num_microbatches\": 1|\"num_microbatches\": 1e400", "num_microbatches"},
    {"\"mesh\": 0|\"mesh\": 5", "mesh"},
    {"\"mesh\": 0|\"mesh\": 0, \"stage\": -1", "stage"},
    {"\"@sample\"|\"nosuchdim\"", "nosuchdim"},
};

static void test_strategy_json(gconstpointer data) {
  const Case *c = data;
  g_auto(GStrv) pair = g_strsplit(c->input, "|", 2);
  g_autofree char *json = replace_once(strategy_template, pair[0], pair[1]);
  GError *error = NULL;
  MdlGraph *graph = mdl_graph_parse_spec("mlp", &error);
  g_assert_no_error(error);
  DevCluster *cluster = dev_cluster_parse_spec("dgx-a100", &error);
  g_assert_no_error(error);
  gint64 t0 = g_get_monotonic_time();
  g_assert_null(mdl_strategy_from_json(json, "s.json", graph, cluster, &error));
  assert_refused(error, MDL_ERROR, c->needle);
  g_error_free(error);
  assert_fast(t0, c->input);
  mdl_graph_free(graph);
  dev_cluster_free(cluster);
}

/* --- enormous simulations ------------------------------------------------------------------- */

typedef struct {
  const char *model, *cluster, *strategy;
  gboolean step, no_symmetry;
  const char *needle;   /* NULL: must be accepted */
} SimCase;

static const SimCase enormous[] = {
    /* 201 ops x 10^6 microbatches x forward and backward: about 4 x 10^8 tasks */
    {"mlp:layers=200,hidden=64,batch=1000000", "dgx-a100", "megatron:tp=1,pp=1,dp=1,mb=1",
     FALSE, FALSE, "exceed the limit of 100000000 tasks"},
    /* GPT with 100000 layers is refused the same way (not built: the graph alone takes 3 s):
     * here 2000 layers, 4-stage 1F1B, 4096 microbatches */
    {"gpt:layers=2000,hidden=64,heads=2,seq=8,vocab=8,batch=4096", "dgx-a100",
     "megatron:tp=2,pp=4,dp=1,mb=1", FALSE, FALSE, "exceed the limit of 100000000 tasks"},
    /* 65536 GPUs x 16001 ops: symmetry would fold the replicas, but the builder's per-device
     * arrays and the memory model would not */
    {"mlp:layers=16000,hidden=8,batch=65536", "dgx-a100:nodes=8192", "dp", FALSE, FALSE,
     "ops x microbatches x mesh devices = 1048641536 exceeds the limit of 1000000000"},
    /* step-expanded ring all-reduces over 4096 GPUs: 2 x 4095 x 4096 transfers per bucket */
    {"mlp:layers=80,hidden=1024,batch=4096", "dgx-a100:nodes=512", "dp", TRUE, FALSE,
     "or let symmetry fold the replicas"},
    /* without symmetry: 2001 ops x 65536 GPUs x 2 */
    {"mlp:layers=2000,hidden=8,batch=65536", "dgx-a100:nodes=8192", "dp", FALSE, TRUE,
     "or let symmetry fold the replicas"},
    /* the control: as large a cluster, but symmetry makes it one simulated GPU */
    {"mlp:layers=2,hidden=64,batch=65536", "dgx-a100:nodes=8192", "dp", FALSE, FALSE, NULL},
};

static void test_enormous(gconstpointer data) {
  const SimCase *c = data;
  GError *error = NULL;
  MdlGraph *graph = mdl_graph_parse_spec(c->model, &error);
  g_assert_no_error(error);
  DevCluster *cluster = dev_cluster_parse_spec(c->cluster, &error);
  g_assert_no_error(error);
  MdlStrategy *s = mdl_strategy_parse_spec(c->strategy, graph, cluster, &error);
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.no_symmetry = c->no_symmetry, .step_collectives = c->step};
  gint64 t0 = g_get_monotonic_time();
  SimEstimate e;
  g_assert_true(sim_build_estimate(graph, s, cluster, &options, &e, &error));
  g_assert_no_error(error);
  g_test_message("estimate: %" G_GUINT64_FORMAT " tasks, %" G_GUINT64_FORMAT " slots",
                 (guint64)e.tasks, (guint64)e.device_slots);
  SimRun *run = sim_run_new_with_options(graph, s, cluster, &params, &options, &error);
  if (c->needle) {
    g_assert_null(run);
    assert_refused(error, MDL_ERROR, c->needle);
    g_assert_false(sim_estimate_check(&e, NULL));
    g_error_free(error);
  } else {
    g_assert_no_error(error);
    g_assert_nonnull(run);
    g_assert_true(sim_estimate_check(&e, NULL));
    g_assert_cmpuint(sim_run_prediction(run)->tasks, <=, e.tasks);
    sim_run_free(run);
  }
  assert_fast(t0, c->model);
  mdl_strategy_free(s);
  dev_cluster_free(cluster);
  mdl_graph_free(graph);
}

/* --- the estimate against the builder ------------------------------------------------------- */

/* Stages on meshes of different shapes (cross-mesh resharding), and FlexFlow-style per-op
 * meshes sharing devices. */
static const char *crossmesh_stages =
    "{\"num_microbatches\": 2, \"meshes\": [{\"shape\": [2, 2], \"devices\": [0, 1, 2, 3]},"
    " {\"shape\": [4], \"devices\": [4, 5, 6, 7]}],"
    " \"ops\": [{\"op\": \"fc0\", \"mesh\": 0, \"stage\": 0, \"split\": [\"b\", \"n\"]},"
    " {\"op\": \"fc1\", \"mesh\": 1, \"stage\": 1, \"split\": [\"b\"]},"
    " {\"op\": \"loss\", \"mesh\": 1, \"stage\": 1, \"split\": [\"b\"]}]}";
static const char *shared_meshes =
    "{\"num_microbatches\": 1, \"meshes\": [{\"shape\": [8], \"devices\": [0,1,2,3,4,5,6,7]},"
    " {\"shape\": [2, 4], \"devices\": [0,1,2,3,4,5,6,7]}],"
    " \"ops\": [{\"op\": \"fc0\", \"mesh\": 0, \"split\": [\"b\"]},"
    " {\"op\": \"fc1\", \"mesh\": 1, \"split\": [\"b\", \"n\"]},"
    " {\"op\": \"loss\", \"mesh\": 0, \"split\": [\"b\"]}]}";

static const SimCase exact[] = {
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=1,dp=4", FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=1,dp=4", FALSE, TRUE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=1,dp=4", TRUE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=4,schedule=1f1b", FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=4,schedule=gpipe", TRUE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2",
     "megatron:tp=2,pp=4,dp=2,mb=4,schedule=interleaved,vp=3,wdelay=1", FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=4,zero=1,recompute=full,sp=1",
     FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=4,zero=2,recompute=selective",
     FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2",
     "megatron:tp=4,pp=2,dp=2,mb=4,zero=3,recompute=selective,sp=1", FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=4,pp=2,dp=2,mb=8,zero=3,recompute=full",
     TRUE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "megatron:tp=2,pp=1,dp=8,mb=4,schedule=eager1f1b",
     FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "2.5d:q=2,d=2,dp=2", FALSE, FALSE, NULL},
    {"gpt3-125m", "dgx-a100:nodes=2", "3d:q=2,dp=2", TRUE, FALSE, NULL},
    {"alexnet", "dgx-a100:nodes=2", "summa:q=2,dp=4", FALSE, FALSE, NULL},
    {"vgg16", "flexflow-p100", "dp", FALSE, FALSE, NULL},
    {"mlp:layers=2,hidden=1024,batch=64", "dgx-a100", "@crossmesh_stages", FALSE, FALSE, NULL},
    {"mlp:layers=2,hidden=1024,batch=64", "dgx-a100:nodes=2,gpus_per_node=4", "@crossmesh_stages",
     TRUE, FALSE, NULL},
    {"mlp:layers=2,hidden=1024,batch=64", "dgx-a100", "@shared_meshes", FALSE, FALSE, NULL},
};

static MdlStrategy *strategy_for(const SimCase *c, const MdlGraph *graph,
                                 const DevCluster *cluster) {
  GError *error = NULL;
  MdlStrategy *s;
  if (strcmp(c->strategy, "@crossmesh_stages") == 0)
    s = mdl_strategy_from_json(crossmesh_stages, "crossmesh", graph, cluster, &error);
  else if (strcmp(c->strategy, "@shared_meshes") == 0)
    s = mdl_strategy_from_json(shared_meshes, "shared", graph, cluster, &error);
  else
    s = mdl_strategy_parse_spec(c->strategy, graph, cluster, &error);
  g_assert_no_error(error);
  return s;
}

/* The estimate is an upper bound of the built graph, exact in its compute tasks, and within 5 %
 * of the whole (it is exact on all these; aligned sends of a device to itself are the only
 * slack by design). */
static void test_estimate_exact(gconstpointer data) {
  const SimCase *c = data;
  GError *error = NULL;
  MdlGraph *graph = mdl_graph_parse_spec(c->model, &error);
  g_assert_no_error(error);
  DevCluster *cluster = dev_cluster_parse_spec(c->cluster, &error);
  g_assert_no_error(error);
  MdlStrategy *s = strategy_for(c, graph, cluster);
  CmParams params;
  cm_params_default(&params);
  SimOptions options = {.no_symmetry = c->no_symmetry, .step_collectives = c->step};
  SimEstimate e;
  g_assert_true(sim_build_estimate(graph, s, cluster, &options, &e, &error));
  g_assert_no_error(error);
  SimTaskGraph *tg = sim_build_with_options(graph, s, cluster, &params, &options, &error);
  g_assert_no_error(error);
  guint64 built = sim_task_graph_size(tg), compute = 0;
  for (uint32_t i = 0; i < sim_task_graph_size(tg); i++) {
    SimTaskInfo t;
    sim_task_graph_get(tg, i, &t);
    SimTaskKind k = t.kind;
    compute += k == SIM_TASK_FORWARD || k == SIM_TASK_BACKWARD || k == SIM_TASK_BACKWARD_WEIGHT ||
               k == SIM_TASK_RECOMPUTE;
  }
  g_test_message("estimate %" G_GUINT64_FORMAT ", built %" G_GUINT64_FORMAT, (guint64)e.tasks,
                 built);
  g_assert_cmpuint(e.tasks, >=, built);
  g_assert_cmpuint(e.tasks, <=, built + built / 20);
  g_assert_cmpuint(e.compute_tasks, ==, compute);
  g_assert_cmpint(e.simulated_devices, ==, sim_task_graph_simulated_devices(tg));
  g_assert_cmpint(e.symmetric, ==, sim_task_graph_symmetric(tg));
  g_assert_cmpuint(e.device_slots, >, 0);
  sim_task_graph_free(tg);
  mdl_strategy_free(s);
  dev_cluster_free(cluster);
  mdl_graph_free(graph);
}

/* --- scenarios ------------------------------------------------------------------------------ */

static void test_scenario_too_many_points(void) {
  GString *s = g_string_new("{\"name\": \"big\", \"models\": [\"mlp:batch={a}\"], \"clusters\": "
                            "[\"dgx-a100\"], \"strategies\": [\"dp\"], \"axes\": {\"a\": [");
  for (int i = 1; i <= 1000; i++) g_string_append_printf(s, "%s%d", i > 1 ? "," : "", i);
  g_string_append(s, "], \"b\": [");
  for (int i = 1; i <= 1000; i++) g_string_append_printf(s, "%s%d", i > 1 ? "," : "", i);
  g_string_append(s, "]}}");
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  g_assert_null(scn_scenario_from_json(s->str, NULL, &error));
  assert_refused(error, SCN_ERROR, "1000000 points exceed the limit of 100000");
  g_error_free(error);
  assert_fast(t0, "scenario");
  g_string_free(s, TRUE);
}

/* --- the CLI -------------------------------------------------------------------------------- */

typedef struct {
  const char *args;   /* {DIR} is the test's directory */
  const char *needle;
} CliCase;

static const CliCase cli_cases[] = {
    {"simulate --model gpt3-125m --cluster dgx-a100:nodes=1000000,gpus_per_node=1000 --strategy dp",
     "exceeds the limit of 16777216 devices"},
    {"simulate --model gpt:layers=10000000 --cluster dgx-a100 --strategy dp", "exceeds 100000"},
    {"simulate --model gpt:layers=nan --cluster dgx-a100 --strategy dp", "layers"},
    {"simulate --model gpt3-125m:batch=-1 --cluster dgx-a100 --strategy dp", "batch"},
    {"simulate --model gpt3-125m --cluster dgx-a100:intra_bw_GBps=inf --strategy dp", "intra_bw_GBps"},
    {"simulate --model {DIR}/many-ops.json --cluster dgx-a100 --strategy dp", "2000000 ops"},
    {"simulate --model {DIR}/deep.json --cluster dgx-a100 --strategy dp", "malformed JSON"},
    {"simulate --model {DIR}/cycle.json --cluster dgx-a100 --strategy dp", "cycles are not allowed"},
    {"simulate --model mlp --cluster {DIR}/deep.json --strategy dp", "malformed JSON"},
    {"simulate --model mlp --cluster dgx-a100 --strategy {DIR}/deep.json", "malformed JSON"},
    {"simulate --model mlp --cluster dgx-a100 --strategy {DIR}/ghost-device.json",
     "names device 99 but cluster dgx-a100 has devices 0..7"},
    {"simulate --model gpt3-125m --cluster dgx-a100 --strategy 3d:q=2097152", "devices but cluster"},
    {"simulate --model gpt:layers=1,hidden=64,heads=1,seq=1,vocab=2,batch=100000000000 "
     "--cluster dgx-a100 --strategy megatron:tp=1,pp=1,dp=1,mb=1", "100000000000 microbatches"},
    {"simulate --model mlp:layers=200,hidden=64,batch=1000000 --cluster dgx-a100 "
     "--strategy megatron:tp=1,pp=1,dp=1,mb=1", "exceed the limit of 100000000 tasks"},
    {"explain --model mlp:layers=200,hidden=64,batch=1000000 --cluster dgx-a100 "
     "--strategy megatron:tp=1,pp=1,dp=1,mb=1", "exceed the limit of 100000000 tasks"},
    {"simulate --model mlp:layers=16000,hidden=8,batch=65536 --cluster dgx-a100:nodes=8192 "
     "--strategy dp", "exceeds the limit of 1000000000"},
    {"simulate --model mlp:layers=80,hidden=1024,batch=4096 --cluster dgx-a100:nodes=512 "
     "--strategy dp --collectives step", "or let symmetry fold the replicas"},
    {"search --model mlp:layers=16000,hidden=8,batch=65536 --cluster dgx-a100:nodes=8192 "
     "--budget 3", "exceeds the simulator's limit"},
    {"sweep {DIR}/big-scenario.json", "points exceed the limit of 100000"},
    {"collective --kind all_reduce --bytes 999999999999999999999999999999G --ranks 8 "
     "--cluster dgx-a100", "1 PiB"},
    {"collective --kind all_reduce --bytes 64M --ranks 1000000000 --cluster dgx-a100", "--ranks"},
    {"search --model mlp --cluster dgx-a100 --budget 99999999999", "at most 1e9"},
    /* two tilings of 4096 x 2048 slices: the builder used to abort (g_error) on this plan */
    {"simulate --model mlp:layers=2,hidden=8192,batch=8192 --cluster dgx-a100:nodes=768 "
     "--strategy {DIR}/slices.json", "more than 4194304 slices"},
};

static void write_cli_files(void) {
  GString *s = g_string_new("{\"batch\": 1, \"tensors\": [], \"ops\": [");
  for (int i = 0; i <= MDL_MAX_OPS; i++) g_string_append(s, i ? ",0" : "0");
  g_string_append(s, "]}");
  g_autofree char *many = tmp_path("many-ops.json");
  g_assert_true(g_file_set_contents(many, s->str, -1, NULL));
  g_string_free(s, TRUE);
  g_autofree char *deep = tmp_path("deep.json"), *deep_text = nested("[", "]", 100000);
  g_assert_true(g_file_set_contents(deep, deep_text, -1, NULL));
  g_autofree char *base = read_source("model/examples/mlp2.json");
  g_autofree char *cycle_text = replace_once(base, "{\"tensor\": \"x\",          \"dims\": [\"b\", \"k\"]}",
                                             "{\"tensor\": \"relu0\", \"dims\": [\"b\", \"k\"]}");
  g_autofree char *cycle = tmp_path("cycle.json");
  g_assert_true(g_file_set_contents(cycle, cycle_text, -1, NULL));
  g_autofree char *ghost_text = replace_once(strategy_template, "[0,1,2,3,4,5,6,7]", "[0,1,2,3,4,5,6,99]");
  g_autofree char *ghost = tmp_path("ghost-device.json");
  g_assert_true(g_file_set_contents(ghost, ghost_text, -1, NULL));
  GString *sc = g_string_new("{\"name\": \"big\", \"models\": [\"mlp:batch={a}\"], \"clusters\": "
                             "[\"dgx-a100\"], \"strategies\": [\"dp\"], \"axes\": {\"a\": [");
  for (int i = 1; i <= 1000; i++) g_string_append_printf(sc, "%s%d", i > 1 ? "," : "", i);
  g_string_append(sc, "], \"b\": [");
  for (int i = 1; i <= 1000; i++) g_string_append_printf(sc, "%s%d", i > 1 ? "," : "", i);
  g_string_append(sc, "]}}");
  g_autofree char *big = tmp_path("big-scenario.json");
  g_assert_true(g_file_set_contents(big, sc->str, -1, NULL));
  g_string_free(sc, TRUE);
  /* fc0 on 4096 GPUs split by batch, fc1 on 2048 others split by its input features */
  GString *sl = g_string_new("{\"num_microbatches\": 1, \"meshes\": [{\"shape\": [4096], \"devices\": [");
  for (int d = 0; d < 4096; d++) g_string_append_printf(sl, "%s%d", d ? "," : "", d);
  g_string_append(sl, "]}, {\"shape\": [2048], \"devices\": [");
  for (int d = 4096; d < 6144; d++) g_string_append_printf(sl, "%s%d", d > 4096 ? "," : "", d);
  g_string_append(sl, "]}], \"ops\": [{\"op\": \"fc0\", \"mesh\": 0, \"stage\": 0, \"split\": [\"b\"]},"
                      " {\"op\": \"fc1\", \"mesh\": 1, \"stage\": 1, \"split\": [\"k\"]},"
                      " {\"op\": \"loss\", \"mesh\": 1, \"stage\": 1, \"split\": [\"b\"]}]}");
  g_autofree char *slices = tmp_path("slices.json");
  g_assert_true(g_file_set_contents(slices, sl->str, -1, NULL));
  g_string_free(sl, TRUE);
}

static void test_cli(gconstpointer data) {
  const CliCase *c = data;
  g_auto(GStrv) parts = g_strsplit(c->args, "{DIR}", -1);
  g_autofree char *expanded = g_strjoinv(tmpdir, parts);
  g_autofree char *db = tmp_path("limits.db");
  g_autofree char *args = strncmp(expanded, "collective", 10) == 0
                              ? g_strdup(expanded)
                              : g_strdup_printf("%s --db %s", expanded, db);
  gint64 t0 = g_get_monotonic_time();
  TestCliResult r = test_cli_run(tmpdir, args);
  assert_fast(t0, c->args);
  g_test_message("exit %d: %s", r.status, r.err);
  g_assert_cmpint(r.status, ==, 2);
  /* exactly one line on stderr */
  g_assert_true(g_str_has_suffix(r.err, "\n"));
  g_assert_true(strchr(r.err, '\n') == r.err + strlen(r.err) - 1);
  g_assert_cmpuint(strlen(r.err), <, 600);
  g_assert_true(g_str_has_prefix(r.err, "stratsim"));
  if (!strstr(r.err, c->needle)) g_error("stderr '%s' lacks '%s'", r.err, c->needle);
  test_cli_result_clear(&r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-limits-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_cluster_specs); i++) {
    g_autofree char *path = g_strdup_printf("/limits/cluster/spec/%zu", i);
    g_test_add_data_func(path, &bad_cluster_specs[i], test_cluster_spec);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(bad_cluster_json); i++) {
    g_autofree char *path = g_strdup_printf("/limits/cluster/json/%zu", i);
    g_test_add_data_func(path, &bad_cluster_json[i], test_cluster_json);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(bad_model_specs); i++) {
    g_autofree char *path = g_strdup_printf("/limits/model/spec/%zu", i);
    g_test_add_data_func(path, &bad_model_specs[i], test_model_spec);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(bad_model_json); i++) {
    g_autofree char *path = g_strdup_printf("/limits/model/json/%zu", i);
    g_test_add_data_func(path, &bad_model_json[i], test_model_json);
  }
  g_test_add_func("/limits/json/deep", test_deep_json);
  g_test_add_func("/limits/model/json/too-many-ops", test_json_too_many_ops);
  g_test_add_func("/limits/model/json/file-too-large", test_json_file_too_large);
  g_test_add_func("/limits/model/json/counted-while-reading", test_json_counted_while_reading);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_strategy_specs); i++) {
    g_autofree char *path = g_strdup_printf("/limits/strategy/spec/%zu", i);
    g_test_add_data_func(path, &bad_strategy_specs[i], test_strategy_spec);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(bad_strategy_json); i++) {
    g_autofree char *path = g_strdup_printf("/limits/strategy/json/%zu", i);
    g_test_add_data_func(path, &bad_strategy_json[i], test_strategy_json);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(enormous); i++) {
    g_autofree char *path = g_strdup_printf("/limits/sim/enormous/%zu", i);
    g_test_add_data_func(path, &enormous[i], test_enormous);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(exact); i++) {
    g_autofree char *path = g_strdup_printf("/limits/sim/estimate/%zu", i);
    g_test_add_data_func(path, &exact[i], test_estimate_exact);
  }
  g_test_add_func("/limits/scenario/too-many-points", test_scenario_too_many_points);
  write_cli_files();
  for (gsize i = 0; i < G_N_ELEMENTS(cli_cases); i++) {
    g_autofree char *path = g_strdup_printf("/limits/cli/%zu", i);
    g_test_add_data_func(path, &cli_cases[i], test_cli);
  }
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
