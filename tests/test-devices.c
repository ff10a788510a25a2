/* Tests of devices/: the device kinds table, every cluster preset and its figures in SI units,
 * overrides, cluster JSON files, every error a user can cause (code and a message naming the
 * culprit), serialisation, and the dtype helpers. */
#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "devices/dev_cluster.h"
#include "devices/dev_presets.h"

#define GIB 1073741824.0

static char *tmpdir;

/* Equal to a relative 1e-12: figures go through one multiplication by a unit factor. */
static void assert_close(double got, double want) {
  if (!(fabs(got - want) <= 1e-12 * fabs(want))) g_error("got %.17g, want %.17g", got, want);
}

/* *@error is set with @code and its one-line message contains every needle; clears it. */
static void assert_error(GError **error, int code, const char *needle, const char *needle2) {
  GError *e = *error;
  g_assert_nonnull(e);
  g_assert_true(e->domain == DEV_ERROR);
  if (e->code != code) g_error("code %d, want %d: %s", e->code, code, e->message);
  if (strchr(e->message, '\n')) g_error("not one line: %s", e->message);
  if (needle && !strstr(e->message, needle)) g_error("'%s' does not name '%s'", e->message, needle);
  if (needle2 && !strstr(e->message, needle2))
    g_error("'%s' does not name '%s'", e->message, needle2);
  g_clear_error(error);
}

/* ---- names, thread-safe first use ---- */

static gpointer names_thread(gpointer data) {
  const char *const *kinds = dev_kind_names();
  const char *const *presets = dev_preset_names();
  return GINT_TO_POINTER(g_strv_length((char **)kinds) * 100 + g_strv_length((char **)presets));
}

/* Runs first, so the lazy tables are built by racing threads; all must see the same lists. */
static void test_names_threads(void) {
  GThread *threads[8];
  for (int i = 0; i < 8; i++) threads[i] = g_thread_new("names", names_thread, NULL);
  for (int i = 0; i < 8; i++) g_assert_cmpint(GPOINTER_TO_INT(g_thread_join(threads[i])), ==, 1015);
  g_assert_true(dev_kind_names() == dev_kind_names());
  g_assert_true(dev_preset_names() == dev_preset_names());
}

static const char *const expected_kinds[] = {"a100-40gb", "a100-80gb", "b200", "gb200", "h100-sxm", "h200",
                                             "k80",       "p100",      "p100-pcie", "v100", NULL};
static const char *const expected_presets[] = {
    "a2-megagpu-16g", "aws-p3.8xlarge", "aws-p4d", "aws-p5", "aws-p6-b200", "dgx-a100", "dgx-b200",
    "dgx-h100", "dgx-h200", "flexflow-k80", "flexflow-p100",  "gb200-nvl72", "gcp-a3-mega", "h200",
    "piz-daint", NULL};

static void test_names(void) {
  const char *const *kinds = dev_kind_names();
  const char *const *presets = dev_preset_names();
  g_assert_cmpstrv((const char *const *)kinds, expected_kinds);
  g_assert_cmpstrv((const char *const *)presets, expected_presets);
}

/* ---- dtypes ---- */

static void test_dtype(void) {
  const char *names[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
  guint bytes[] = {4, 4, 2, 2, 2}; /* fp8: a GEMM mode on bf16 storage */
  for (int d = 0; d < DEV_DTYPE_COUNT; d++) {
    g_assert_cmpstr(dev_dtype_name((DevDtype)d), ==, names[d]);
    g_assert_cmpuint(dev_dtype_bytes((DevDtype)d), ==, bytes[d]);
    DevDtype parsed = DEV_DTYPE_COUNT;
    g_assert_true(dev_dtype_parse(names[d], &parsed));
    g_assert_cmpint(parsed, ==, d);
  }
  DevDtype parsed = DEV_DTYPE_FP32;
  g_assert_true(dev_dtype_parse("BF16", &parsed));
  g_assert_cmpint(parsed, ==, DEV_DTYPE_BF16);
  parsed = DEV_DTYPE_FP16;
  g_assert_false(dev_dtype_parse("fp4", &parsed));
  g_assert_false(dev_dtype_parse("", &parsed));
  g_assert_false(dev_dtype_parse(NULL, &parsed));
  g_assert_cmpint(parsed, ==, DEV_DTYPE_FP16); /* untouched on failure */
}

/* The kinds a dtype-refusal message names: those with a nonzero peak for it. */
static void test_kinds_supporting(void) {
  g_autofree char *fp8 = dev_kinds_supporting(DEV_DTYPE_FP8);
  g_assert_cmpstr(fp8, ==, "b200, gb200, h100-sxm, h200");
  g_autofree char *bf16 = dev_kinds_supporting(DEV_DTYPE_BF16);
  g_assert_cmpstr(bf16, ==, "a100-40gb, a100-80gb, b200, gb200, h100-sxm, h200");
  g_autofree char *fp32 = dev_kinds_supporting(DEV_DTYPE_FP32);
  g_assert_nonnull(strstr(fp32, "k80"));
}

/* ---- device kinds ---- */

typedef struct {
  const char *name;
  double fp32, tf32, fp16, bf16, fp8, vector; /* TFLOP/s */
  double memory_GiB, hbm_GBps;
} KindFigures;

static const KindFigures kind_figures[] = {
    {"k80", 4.37, 0, 4.37, 0, 0, 4.37, 12, 240},
    {"p100", 10.6, 0, 21.2, 0, 0, 10.6, 16, 732},
    {"p100-pcie", 9.3, 0, 18.7, 0, 0, 9.3, 16, 732},
    {"v100", 15.7, 0, 125, 0, 0, 15.7, 16, 900},
    {"a100-40gb", 19.5, 156, 312, 312, 0, 19.5, 40, 1555},
    {"a100-80gb", 19.5, 156, 312, 312, 0, 19.5, 80, 2039},
    {"h100-sxm", 67, 494.5, 989.5, 989.5, 1979, 67, 80, 3350},
    {"h200", 67, 494.5, 989.5, 989.5, 1979, 67, 141, 4800},
    {"b200", 75, 1100, 2250, 2250, 4500, 75, 180, 7700},
    {"gb200", 80, 1250, 2500, 2500, 5000, 80, 186, 8000},
};

static void test_kind_figures(gconstpointer data) {
  const KindFigures *f = data;
  DevKind k;
  GError *error = NULL;
  g_assert_true(dev_kind_lookup(f->name, &k, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(k.name, ==, f->name);
  g_assert_nonnull(k.description);
  g_assert_cmpuint(strlen(k.description), >, 0);
  double want[DEV_DTYPE_COUNT] = {f->fp32, f->tf32, f->fp16, f->bf16, f->fp8};
  for (int d = 0; d < DEV_DTYPE_COUNT; d++) assert_close(k.peak_flops[d], want[d] * 1e12);
  assert_close(k.vector_flops, f->vector * 1e12);
  assert_close(k.memory_bytes, f->memory_GiB * GIB);
  assert_close(k.hbm_bandwidth, f->hbm_GBps * 1e9);
  /* Sanity that holds on every GPU: matmul dtypes are at least the plain fp32 rate. */
  g_assert_cmpfloat(k.peak_flops[DEV_DTYPE_FP32], >, 0);
  g_assert_cmpfloat(k.peak_flops[DEV_DTYPE_FP16], >=, k.peak_flops[DEV_DTYPE_FP32]);
  g_assert_cmpfloat(k.vector_flops, <=, k.peak_flops[DEV_DTYPE_FP32]);
  dev_kind_clear(&k);
  g_assert_null(k.name);
}

static void test_kind_copy_unknown(void) {
  DevKind k, copy;
  GError *error = NULL;
  g_assert_true(dev_kind_lookup("v100", &k, &error));
  dev_kind_copy(&copy, &k);
  g_assert_true(copy.name != k.name);
  g_assert_cmpstr(copy.name, ==, "v100");
  g_assert_cmpfloat(copy.peak_flops[DEV_DTYPE_FP16], ==, k.peak_flops[DEV_DTYPE_FP16]);
  dev_kind_clear(&k);
  g_assert_cmpstr(copy.name, ==, "v100");
  dev_kind_clear(&copy);
  g_assert_false(dev_kind_lookup("tpu-v4", &k, &error));
  g_assert_null(k.name);
  assert_error(&error, DEV_ERROR_UNKNOWN_DEVICE, "tpu-v4", "a100-80gb");
}

/* Every figure of every device and preset names its source (the JSON has no comments). */
static void test_sources(void) {
  const char *kind_fields[] = {"peak_tflops.fp32", "peak_tflops.tf32", "peak_tflops.fp16",
                               "peak_tflops.bf16", "peak_tflops.fp8",  "vector_tflops",
                               "memory_GiB",       "hbm_GBps"};
  int files = 0, kinds = 0;
  for (const StratsimEmbedded *e = dev_presets_data; e->name; e++) {
    if (!g_str_has_suffix(e->name, ".json")) continue; /* a stray "" from a trailing ';' in FILES */
    files++;
    cJSON *root = cJSON_Parse(e->text);
    if (!root) g_error("%s does not parse", e->name);
    if (strcmp(e->name, DEV_KINDS_FILE) == 0) {
      const cJSON *dev;
      cJSON_ArrayForEach(dev, cJSON_GetObjectItem(root, "devices")) {
        const cJSON *sources = cJSON_GetObjectItem(dev, "sources");
        for (gsize i = 0; i < G_N_ELEMENTS(kind_fields); i++) {
          const cJSON *s = cJSON_GetObjectItem(sources, kind_fields[i]);
          if (!cJSON_IsString(s) || strlen(s->valuestring) < 10)
            g_error("device %s: no source for %s", cJSON_GetObjectItem(dev, "name")->valuestring,
                    kind_fields[i]);
        }
        kinds++;
      }
    } else {
      const char *link_sources[] = {"intra", "inter"};
      for (int l = 0; l < 2; l++) {
        const cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(root, link_sources[l]), "source");
        if (!cJSON_IsString(s) || !strstr(s->valuestring, "NCCL src/graph/tuning.cc hwLat"))
          g_error("%s: %s.source missing or without its latency source", e->name, link_sources[l]);
      }
      const cJSON *sources = cJSON_GetObjectItem(root, "sources");
      g_assert_true(cJSON_IsString(cJSON_GetObjectItem(sources, "nodes")));
      g_assert_true(cJSON_IsString(cJSON_GetObjectItem(sources, "gpus_per_node")));
      const char *name = cJSON_GetObjectItem(root, "name")->valuestring;
      g_autofree char *want = g_strconcat(name, ".json", NULL);
      g_assert_cmpstr(want, ==, e->name); /* file name = preset name */
    }
    cJSON_Delete(root);
  }
  g_assert_cmpint(files, ==, 16);
  g_assert_cmpint(kinds, ==, 10);
}

/* ---- presets ---- */

typedef struct {
  const char *name, *device;
  int nodes, gpus_per_node, nics_per_node;
  const char *intra_kind;
  double intra_GBps, intra_us;
  const char *inter_kind;
  double inter_Gbps, inter_us;
} PresetFigures;

static const PresetFigures preset_figures[] = {
    {"a2-megagpu-16g", "a100-40gb", 1, 16, 1, "nvswitch", 300, 3.4, "ethernet", 100, 9.6},
    {"aws-p3.8xlarge", "v100", 1, 4, 1, "nvlink", 50, 3.4, "ethernet", 10, 9.6},
    {"aws-p4d", "a100-40gb", 1, 8, 4, "nvswitch", 300, 3.4, "efa", 100, 9.6},
    {"aws-p5", "h100-sxm", 1, 8, 8, "nvswitch", 450, 3.4, "efa", 400, 9.6},
    {"aws-p6-b200", "b200", 1, 8, 8, "nvswitch", 900, 3.4, "efa", 400, 9.6},
    {"dgx-a100", "a100-80gb", 1, 8, 8, "nvswitch", 300, 3.4, "infiniband", 200, 9.6},
    {"dgx-b200", "b200", 1, 8, 8, "nvswitch", 900, 3.4, "infiniband", 400, 9.6},
    {"dgx-h100", "h100-sxm", 1, 8, 8, "nvswitch", 450, 3.4, "infiniband", 400, 9.6},
    {"dgx-h200", "h200", 1, 8, 8, "nvswitch", 450, 3.4, "infiniband", 400, 9.6},
    {"flexflow-k80", "k80", 16, 4, 1, "pcie", 15.75, 5.7, "infiniband", 56, 9.6},
    {"flexflow-p100", "p100", 4, 4, 1, "nvlink", 20, 3.4, "infiniband", 100, 9.6},
    {"gb200-nvl72", "gb200", 1, 72, 72, "nvswitch", 900, 3.4, "infiniband", 400, 9.6},
    {"gcp-a3-mega", "h100-sxm", 1, 8, 8, "nvswitch", 450, 3.4, "tcpxo", 200, 9.6},
    {"h200", "h200", 1, 1, 1, "nvlink", 450, 3.4, "infiniband", 400, 9.6},
    {"piz-daint", "p100-pcie", 16, 1, 1, "pcie", 15.75, 5.7, "aries", 80, 9.6},
};

static void test_preset(gconstpointer data) {
  const PresetFigures *f = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(f->name, &error);
  g_assert_no_error(error);
  g_assert_nonnull(c);
  g_assert_cmpstr(c->name, ==, f->name);
  g_assert_cmpuint(strlen(c->description), >, 10);
  g_assert_cmpstr(c->device.name, ==, f->device);
  g_assert_cmpint(c->nodes, ==, f->nodes);
  g_assert_cmpint(c->gpus_per_node, ==, f->gpus_per_node);
  g_assert_cmpint(c->nics_per_node, ==, f->nics_per_node);
  g_assert_cmpint(dev_cluster_num_devices(c), ==, f->nodes * f->gpus_per_node);
  g_assert_cmpint(dev_cluster_node_of(c, dev_cluster_num_devices(c) - 1), ==, f->nodes - 1);
  g_assert_cmpstr(c->link[DEV_LINK_INTRA].kind, ==, f->intra_kind);
  g_assert_cmpstr(c->link[DEV_LINK_INTER].kind, ==, f->inter_kind);
  assert_close(c->link[DEV_LINK_INTRA].bandwidth, f->intra_GBps * 1e9);
  assert_close(c->link[DEV_LINK_INTRA].latency, f->intra_us * 1e-6);
  assert_close(c->link[DEV_LINK_INTER].bandwidth, f->inter_Gbps * 1e9 / 8);
  assert_close(c->link[DEV_LINK_INTER].latency, f->inter_us * 1e-6);
  g_assert_cmpfloat(c->device.peak_flops[DEV_DTYPE_FP32], >, 0);
  g_assert_cmpfloat(c->device.memory_bytes, >, 0);
  g_assert_cmpfloat(c->device.hbm_bandwidth, >, 0);
  dev_cluster_free(c);
}

/* The example the rest of the simulator leans on, spelled out in SI units. */
static void test_dgx_a100_si(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  g_assert_no_error(error);
  g_assert_cmpint(dev_cluster_num_devices(c), ==, 8);
  g_assert_cmpint(c->nics_per_node, ==, 8);
  g_assert_cmpfloat(c->link[DEV_LINK_INTER].bandwidth, ==, 200e9 / 8); /* 25 GB/s per NIC */
  g_assert_cmpfloat(c->link[DEV_LINK_INTRA].bandwidth, ==, 300e9);
  assert_close(c->link[DEV_LINK_INTER].latency, 9.6e-6);
  assert_close(c->link[DEV_LINK_INTRA].latency, 3.4e-6);
  g_assert_cmpfloat(c->device.peak_flops[DEV_DTYPE_BF16], ==, 312e12);
  g_assert_cmpfloat(c->device.memory_bytes, ==, 80 * GIB);
  dev_cluster_free(c);
}

/* ---- overrides ---- */

static void test_overrides(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100:nodes=2,inter_bw_Gbps=100", &error);
  g_assert_no_error(error);
  g_assert_cmpint(c->nodes, ==, 2);
  g_assert_cmpint(dev_cluster_num_devices(c), ==, 16);
  g_assert_cmpint(dev_cluster_node_of(c, 8), ==, 1);
  g_assert_cmpfloat(c->link[DEV_LINK_INTER].bandwidth, ==, 100e9 / 8);
  g_assert_cmpfloat(c->link[DEV_LINK_INTRA].bandwidth, ==, 300e9); /* untouched */
  dev_cluster_free(c);

  c = dev_cluster_parse_spec("dgx-a100:gpus_per_node=4,nics_per_node=2,device=h100-sxm,"
                             "intra_bw_GBps=150.5,intra_latency_us=0,inter_latency_us=12.5",
                             &error);
  g_assert_no_error(error);
  g_assert_cmpint(c->gpus_per_node, ==, 4);
  g_assert_cmpint(c->nics_per_node, ==, 2);
  g_assert_cmpstr(c->device.name, ==, "h100-sxm");
  assert_close(c->device.peak_flops[DEV_DTYPE_BF16], 989.5e12);
  g_assert_cmpfloat(c->link[DEV_LINK_INTRA].bandwidth, ==, 150.5e9);
  g_assert_cmpfloat(c->link[DEV_LINK_INTRA].latency, ==, 0);
  assert_close(c->link[DEV_LINK_INTER].latency, 12.5e-6);
  g_assert_cmpstr(c->name, ==, "dgx-a100");

  /* dev_cluster_set: later values win; a failed set leaves the cluster as it was. */
  g_assert_true(dev_cluster_set(c, "nodes", "3", &error));
  g_assert_true(dev_cluster_set(c, "nodes", "5", &error));
  g_assert_cmpint(c->nodes, ==, 5);
  g_assert_false(dev_cluster_set(c, "nodes", "0", &error));
  assert_error(&error, DEV_ERROR_INVALID, "nodes", "dgx-a100");
  g_assert_false(dev_cluster_set(c, "device", "nosuchgpu", &error));
  assert_error(&error, DEV_ERROR_UNKNOWN_DEVICE, "nosuchgpu", "h100-sxm");
  g_assert_false(dev_cluster_set(c, "inter_bw_Gbps", "-1", &error));
  assert_error(&error, DEV_ERROR_INVALID, "inter_bw_Gbps", NULL);
  g_assert_cmpint(c->nodes, ==, 5);
  g_assert_cmpstr(c->device.name, ==, "h100-sxm");
  g_assert_cmpfloat(c->link[DEV_LINK_INTER].bandwidth, ==, 200e9 / 8);
  dev_cluster_free(c);

  /* An empty override list is no override. */
  c = dev_cluster_parse_spec("piz-daint:", &error);
  g_assert_no_error(error);
  g_assert_cmpint(c->nodes, ==, 16);
  dev_cluster_free(c);
}

/* ---- errors from specs ---- */

typedef struct {
  const char *spec;
  int code;
  const char *needle, *needle2;
} BadSpec;

static const BadSpec bad_specs[] = {
    {"nosuch", DEV_ERROR_UNKNOWN_PRESET, "'nosuch'", "dgx-a100, dgx-b200, dgx-h100"},
    {"", DEV_ERROR_UNKNOWN_PRESET, "unknown cluster preset", "piz-daint"},
    {"devices", DEV_ERROR_UNKNOWN_PRESET, "'devices'", NULL}, /* the kinds table is no preset */
    {"nosuch:nodes=2", DEV_ERROR_UNKNOWN_PRESET, "'nosuch'", NULL},
    {"dgx-a100:device=tpu", DEV_ERROR_UNKNOWN_DEVICE, "'tpu'", "a100-80gb"},
    {"dgx-a100:bogus=1", DEV_ERROR_PARSE, "'bogus'", "nodes, gpus_per_node, nics_per_node"},
    {"dgx-a100:nodes", DEV_ERROR_PARSE, "'nodes'", "key=value"},
    {"dgx-a100:=3", DEV_ERROR_PARSE, "'=3'", NULL},
    {"dgx-a100:nodes=2,", DEV_ERROR_PARSE, "key=value", NULL},
    {"dgx-a100:nodes=abc", DEV_ERROR_PARSE, "'abc'", "nodes"},
    {"dgx-a100:nodes=", DEV_ERROR_PARSE, "nodes", "number"},
    {"dgx-a100:nodes=0", DEV_ERROR_INVALID, "'nodes'", "got 0"},
    {"dgx-a100:nodes=-3", DEV_ERROR_INVALID, "'nodes'", "got -3"},
    {"dgx-a100:nodes=2.5", DEV_ERROR_INVALID, "'nodes'", NULL},
    {"dgx-a100:nodes=1000001", DEV_ERROR_INVALID, "'nodes'", "1000000"},
    {"dgx-a100:nodes=nan", DEV_ERROR_INVALID, "'nodes'", NULL},
    {"dgx-a100:gpus_per_node=0", DEV_ERROR_INVALID, "'gpus_per_node'", NULL},
    {"dgx-a100:gpus_per_node=2000000", DEV_ERROR_INVALID, "'gpus_per_node'", NULL},
    {"dgx-a100:nics_per_node=-1", DEV_ERROR_INVALID, "'nics_per_node'", NULL},
    {"dgx-a100:nodes=1000000,gpus_per_node=1000", DEV_ERROR_INVALID, "gpus_per_node", "devices"},
    {"dgx-a100:intra_bw_GBps=0", DEV_ERROR_INVALID, "'intra_bw_GBps'", NULL},
    {"dgx-a100:intra_bw_GBps=-5", DEV_ERROR_INVALID, "'intra_bw_GBps'", NULL},
    {"dgx-a100:intra_bw_GBps=nan", DEV_ERROR_INVALID, "'intra_bw_GBps'", NULL},
    {"dgx-a100:inter_bw_Gbps=inf", DEV_ERROR_INVALID, "'inter_bw_Gbps'", NULL},
    {"dgx-a100:inter_bw_Gbps=1e300", DEV_ERROR_INVALID, "'inter_bw_Gbps'", "absurd"},
    {"dgx-a100:intra_latency_us=-1", DEV_ERROR_INVALID, "'intra_latency_us'", NULL},
    {"dgx-a100:inter_latency_us=NaN", DEV_ERROR_INVALID, "'inter_latency_us'", NULL},
    {"dgx-a100:inter_latency_us=1e9", DEV_ERROR_INVALID, "'inter_latency_us'", "absurd"},
    {"aws-p5:inter_nccl_latency_us=-1", DEV_ERROR_INVALID, "'inter_nccl_latency_us'", NULL},
    {"aws-p5:inter_nccl_latency_us=inf", DEV_ERROR_INVALID, "'inter_nccl_latency_us'", NULL},
    {"aws-p5:inter_net_step_latency_us=-1", DEV_ERROR_INVALID, "'inter_net_step_latency_us'", NULL},
    {"aws-p5:inter_net_simple_extra_us=nan", DEV_ERROR_INVALID, "'inter_net_simple_extra_us'", NULL},
    {"aws-p6-b200:inter_nccl_tuner=ofi", DEV_ERROR_INVALID, "'inter_nccl_tuner'", NULL},
    {"gcp-a3-mega:inter_nccl_algo=Ring+Foo", DEV_ERROR_INVALID, "'Foo' is not an NCCL algorithm", "NVLSTree"},
    {"gcp-a3-mega:inter_nccl_proto=LL256", DEV_ERROR_INVALID, "'LL256' is not an NCCL protocol", "Simple"},
    {"gcp-a3-mega:inter_nccl_proto=^", DEV_ERROR_INVALID, "'inter_nccl_proto' is empty", NULL},
    {"dgx-h200:nccl_version=3.1", DEV_ERROR_INVALID, "'nccl_version'", "'3.1' is not an NCCL release"},
    {"dgx-h200:nccl_version=2.x", DEV_ERROR_INVALID, "'2.x'", "MAJOR.MINOR"},
    {"dgx-h200:nccl_version=2.100.1", DEV_ERROR_INVALID, "'2.100.1'", NULL},
    {"dgx-h200:nccl_version=2.28.3.1", DEV_ERROR_INVALID, "'2.28.3.1'", NULL},
    {"dgx-h200:nccl_version=", DEV_ERROR_INVALID, "'nccl_version'", NULL},
    {"/nonexistent/dir/cluster.json", DEV_ERROR_PARSE, "/nonexistent/dir/cluster.json", NULL},
    {"missing-file.json", DEV_ERROR_PARSE, "missing-file.json", NULL},
    {"/nonexistent/c.json:nodes=2", DEV_ERROR_PARSE, "'/nonexistent/c.json'", NULL},
};

/* The NCCL release a cluster's jobs run: NCCL_VERSION_CODE from "MAJOR.MINOR[.PATCH]", from a
 * JSON field or an override, `default` clearing it; printed back only where set. */
static void test_nccl_version(void) {
  int code = -1;
  g_assert_true(dev_nccl_version_parse("2.19.3", &code));
  g_assert_cmpint(code, ==, 21903);
  g_assert_true(dev_nccl_version_parse("2.28", &code));
  g_assert_cmpint(code, ==, 22800);
  g_assert_false(dev_nccl_version_parse("2.8.", &code));
  g_assert_false(dev_nccl_version_parse("02.8.3x", &code));
  g_assert_cmpint(code, ==, 22800);
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-h200:nccl_version=2.30.7", &error);
  g_assert_no_error(error);
  g_assert_cmpint(c->nccl_version, ==, 23007);
  g_autofree char *text = dev_cluster_to_json(c);
  cJSON *j = cJSON_Parse(text);
  g_assert_cmpstr(cJSON_GetObjectItem(j, "nccl_version")->valuestring, ==, "2.30.7");
  cJSON_Delete(j);
  g_assert_true(dev_cluster_set(c, "nccl_version", "default", &error));
  g_assert_cmpint(c->nccl_version, ==, 0);
  g_autofree char *plain = dev_cluster_to_json(c);
  g_assert_null(strstr(plain, "nccl_version"));
  dev_cluster_free(c);
  static const char *json = "{\"device\": \"a100-80gb\", \"nodes\": 1, \"gpus_per_node\": 8, \"nccl_version\": %s,"
                            " \"intra\": {\"kind\": \"nvswitch\", \"bandwidth_GBps\": 300, \"latency_us\": 1},"
                            " \"inter\": {\"kind\": \"infiniband\", \"bandwidth_Gbps\": 200,"
                            " \"nics_per_node\": 8, \"latency_us\": 5}}";
  g_autofree char *good = g_strdup_printf(json, "\"2.16.2\""), *bad = g_strdup_printf(json, "2.16");
  c = dev_cluster_from_json(good, "v.json", &error);
  g_assert_no_error(error);
  g_assert_cmpint(c->nccl_version, ==, 21602);
  dev_cluster_free(c);
  g_assert_null(dev_cluster_from_json(bad, "v.json", &error));
  g_assert_error(error, DEV_ERROR, DEV_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "nccl_version"));
  g_clear_error(&error);
}

static void test_bad_spec(gconstpointer data) {
  const BadSpec *b = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(b->spec, &error);
  if (c) g_error("'%s' parsed", b->spec);
  assert_error(&error, b->code, b->needle, b->needle2);
}

/* ---- errors from JSON ---- */

/* A valid cluster with an inline device; bad cases mutate one field of it. */
static const char *base_json =
    "{\"name\": \"base\", \"description\": \"a test cluster\","
    " \"device\": {\"name\": \"gpu-x\", \"description\": \"made up\","
    "   \"peak_tflops\": {\"fp32\": 10, \"tf32\": 0, \"fp16\": 100, \"bf16\": 100},"
    "   \"vector_tflops\": 10, \"memory_GiB\": 24, \"hbm_GBps\": 1000, \"sources\": {}},"
    " \"nodes\": 3, \"gpus_per_node\": 2,"
    " \"intra\": {\"kind\": \"nvlink\", \"bandwidth_GBps\": 50, \"latency_us\": 2,"
    "   \"source\": \"t\"},"
    " \"inter\": {\"kind\": \"roce\", \"bandwidth_Gbps\": 40, \"nics_per_node\": 2,"
    "   \"latency_us\": 7.5, \"source\": \"t\"},"
    " \"sources\": {}}";

/* base_json with the member at dotted @path replaced by @value (raw JSON text, spliced in as
 * written so that e.g. 1e999 reaches the parser), or deleted when @value is NULL. */
static char *mutate(const char *path, const char *value) {
  cJSON *root = cJSON_Parse(base_json);
  g_assert_nonnull(root);
  g_auto(GStrv) parts = g_strsplit(path, ".", -1);
  cJSON *obj = root;
  guint n = g_strv_length(parts);
  for (guint i = 0; i + 1 < n; i++) obj = cJSON_GetObjectItem(obj, parts[i]);
  g_assert_nonnull(obj);
  cJSON_DeleteItemFromObject(obj, parts[n - 1]);
  if (value) cJSON_AddStringToObject(obj, parts[n - 1], "@VALUE@");
  char *printed = cJSON_PrintUnformatted(root);
  g_auto(GStrv) halves = g_strsplit(printed, "\"@VALUE@\"", -1);
  char *text = g_strjoinv(value, halves);
  cJSON_free(printed);
  cJSON_Delete(root);
  return text;
}

static void test_base_json(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_from_json(base_json, "base.json", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(c->name, ==, "base");
  g_assert_cmpstr(c->device.name, ==, "gpu-x");
  g_assert_cmpfloat(c->device.peak_flops[DEV_DTYPE_FP16], ==, 100e12);
  g_assert_cmpfloat(c->device.peak_flops[DEV_DTYPE_TF32], ==, 0);
  g_assert_cmpfloat(c->device.memory_bytes, ==, 24 * GIB);
  g_assert_cmpint(dev_cluster_num_devices(c), ==, 6);
  g_assert_cmpint(c->nics_per_node, ==, 2);
  g_assert_cmpstr(c->link[DEV_LINK_INTER].kind, ==, "roce");
  g_assert_cmpfloat(c->link[DEV_LINK_INTER].bandwidth, ==, 5e9);
  assert_close(c->link[DEV_LINK_INTER].latency, 7.5e-6);
  dev_cluster_free(c);
  /* Without "name" the origin names it; "description" is optional. */
  g_autofree char *anonymous = mutate("name", NULL);
  g_autofree char *terse = mutate("description", NULL);
  c = dev_cluster_from_json(anonymous, "somewhere", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(c->name, ==, "somewhere");
  dev_cluster_free(c);
  c = dev_cluster_from_json(terse, "x", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(c->description, ==, "");
  dev_cluster_free(c);
}

typedef struct {
  const char *path, *value; /* value NULL: delete the field */
  int code;
  const char *needle;
} BadJson;

static const BadJson bad_jsons[] = {
    {"nodes", NULL, DEV_ERROR_PARSE, "'nodes' is missing"},
    {"nodes", "\"4\"", DEV_ERROR_PARSE, "'nodes' must be a number"},
    {"nodes", "0", DEV_ERROR_INVALID, "'nodes'"},
    {"nodes", "-1", DEV_ERROR_INVALID, "'nodes'"},
    {"nodes", "1.5", DEV_ERROR_INVALID, "'nodes'"},
    {"nodes", "1000001", DEV_ERROR_INVALID, "'nodes'"},
    {"gpus_per_node", NULL, DEV_ERROR_PARSE, "'gpus_per_node'"},
    {"gpus_per_node", "0", DEV_ERROR_INVALID, "'gpus_per_node'"},
    {"device", NULL, DEV_ERROR_PARSE, "'device' is missing"},
    {"device", "5", DEV_ERROR_PARSE, "'device'"},
    {"device", "\"tpu\"", DEV_ERROR_UNKNOWN_DEVICE, "'tpu'"},
    {"device.name", NULL, DEV_ERROR_PARSE, "'name'"},
    {"device.peak_tflops", NULL, DEV_ERROR_PARSE, "'peak_tflops' is missing"},
    {"device.peak_tflops.fp32", NULL, DEV_ERROR_PARSE, "'peak_tflops.fp32' is missing"},
    {"device.peak_tflops.fp32", "0", DEV_ERROR_INVALID, "'peak_tflops.fp32'"},
    {"device.peak_tflops.bf16", "-1", DEV_ERROR_INVALID, "'peak_tflops.bf16'"},
    {"device.peak_tflops.fp16", "\"fast\"", DEV_ERROR_PARSE, "'peak_tflops.fp16'"},
    {"device.peak_tflops.tf32", "1e999", DEV_ERROR_INVALID, "'peak_tflops.tf32'"},
    {"device.vector_tflops", NULL, DEV_ERROR_PARSE, "'vector_tflops'"},
    {"device.memory_GiB", "0", DEV_ERROR_INVALID, "'memory_GiB'"},
    {"device.hbm_GBps", "-900", DEV_ERROR_INVALID, "'hbm_GBps'"},
    {"device.hbm_GBps", "1e12", DEV_ERROR_INVALID, "absurd"},
    {"intra", NULL, DEV_ERROR_PARSE, "'intra' is missing"},
    {"intra", "[]", DEV_ERROR_PARSE, "'intra' must be an object"},
    {"intra.kind", NULL, DEV_ERROR_PARSE, "'intra.kind'"},
    {"intra.kind", "\"\"", DEV_ERROR_PARSE, "'intra.kind'"},
    {"intra.bandwidth_GBps", NULL, DEV_ERROR_PARSE, "'intra.bandwidth_GBps' is missing"},
    {"intra.bandwidth_GBps", "0", DEV_ERROR_INVALID, "'intra.bandwidth_GBps'"},
    {"intra.bandwidth_GBps", "-3", DEV_ERROR_INVALID, "'intra.bandwidth_GBps'"},
    {"intra.latency_us", "-0.5", DEV_ERROR_INVALID, "'intra.latency_us'"},
    {"inter.bandwidth_Gbps", NULL, DEV_ERROR_PARSE, "'inter.bandwidth_Gbps' is missing"},
    {"inter.bandwidth_Gbps", "1e999", DEV_ERROR_INVALID, "'inter.bandwidth_Gbps'"},
    {"inter.nics_per_node", NULL, DEV_ERROR_PARSE, "'inter.nics_per_node'"},
    {"inter.nics_per_node", "0", DEV_ERROR_INVALID, "'inter.nics_per_node'"},
    {"inter.latency_us", "null", DEV_ERROR_PARSE, "'inter.latency_us'"},
    {"inter.latency_us", "2e6", DEV_ERROR_INVALID, "absurd"},
    {"inter.nccl_latency_us", "\"fast\"", DEV_ERROR_PARSE, "'inter.nccl_latency_us'"},
    {"inter.nccl_latency_us", "-75", DEV_ERROR_INVALID, "'inter.nccl_latency_us'"},
    {"inter.net_step_latency_us", "\"slow\"", DEV_ERROR_PARSE, "'inter.net_step_latency_us'"},
    {"inter.net_simple_extra_us", "-3", DEV_ERROR_INVALID, "'inter.net_simple_extra_us'"},
    {"name", "7", DEV_ERROR_PARSE, "'name'"},
};

static void test_bad_json(gconstpointer data) {
  const BadJson *b = data;
  g_autofree char *text = mutate(b->path, b->value);
  GError *error = NULL;
  DevCluster *c = dev_cluster_from_json(text, "origin.json", &error);
  if (c) g_error("%s=%s parsed", b->path, b->value ? b->value : "(deleted)");
  assert_error(&error, b->code, b->needle, "origin.json");
}

static void test_malformed_json(void) {
  const char *texts[] = {"{\"name\": \"oops\", ", "", "{\"nodes\": 1,\n \"x\": ]}", "{} trailing"};
  for (gsize i = 0; i < G_N_ELEMENTS(texts); i++) {
    GError *error = NULL;
    g_assert_null(dev_cluster_from_json(texts[i], "bad.json", &error));
    assert_error(&error, DEV_ERROR_PARSE, "bad.json", "malformed JSON");
  }
  GError *error = NULL;
  g_assert_null(dev_cluster_from_json("{\"nodes\": 1,\n \"x\": ]}", "bad.json", &error));
  assert_error(&error, DEV_ERROR_PARSE, "line 2", NULL);
  g_assert_null(dev_cluster_from_json("[1, 2]", "array.json", &error));
  assert_error(&error, DEV_ERROR_PARSE, "array.json", "JSON object");
}

/* ---- cluster files ---- */

static char *write_temp(const char *name, const char *text) {
  char *path = g_build_filename(tmpdir, name, NULL);
  GError *error = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, &error));
  g_assert_no_error(error);
  return path;
}

static void assert_same_cluster(const DevCluster *a, const DevCluster *b) {
  g_assert_cmpstr(a->device.name, ==, b->device.name);
  for (int d = 0; d < DEV_DTYPE_COUNT; d++)
    g_assert_cmpfloat(a->device.peak_flops[d], ==, b->device.peak_flops[d]);
  g_assert_cmpfloat(a->device.memory_bytes, ==, b->device.memory_bytes);
  g_assert_cmpint(a->nodes, ==, b->nodes);
  g_assert_cmpint(a->gpus_per_node, ==, b->gpus_per_node);
  g_assert_cmpint(a->nics_per_node, ==, b->nics_per_node);
  for (int l = 0; l < DEV_LINK_COUNT; l++) {
    g_assert_cmpstr(a->link[l].kind, ==, b->link[l].kind);
    g_assert_cmpfloat(a->link[l].bandwidth, ==, b->link[l].bandwidth);
    g_assert_cmpfloat(a->link[l].latency, ==, b->link[l].latency);
  }
}

static void test_file_round_trip(void) {
  GError *error = NULL;
  /* A preset copied to a file reads back the same, named by its path. */
  g_autofree char *dgx = write_temp("my-dgx.json", dev_presets_find("dgx-a100.json"));
  DevCluster *preset = dev_cluster_parse_spec("dgx-a100", &error);
  DevCluster *file = dev_cluster_parse_spec(dgx, &error);
  g_assert_no_error(error);
  assert_same_cluster(preset, file);
  g_assert_cmpstr(file->name, ==, dgx);
  dev_cluster_free(file);
  /* Overrides after the path. */
  g_autofree char *spec = g_strconcat(dgx, ":nodes=3,inter_bw_Gbps=400", NULL);
  file = dev_cluster_parse_spec(spec, &error);
  g_assert_no_error(error);
  g_assert_cmpint(file->nodes, ==, 3);
  g_assert_cmpfloat(file->link[DEV_LINK_INTER].bandwidth, ==, 50e9);
  g_assert_cmpstr(file->name, ==, dgx);
  dev_cluster_free(file);
  dev_cluster_free(preset);
  /* An inline device. */
  g_autofree char *custom = write_temp("custom.json", base_json);
  file = dev_cluster_parse_spec(custom, &error);
  g_assert_no_error(error);
  DevCluster *direct = dev_cluster_from_json(base_json, "base", &error);
  g_assert_no_error(error);
  assert_same_cluster(direct, file);
  dev_cluster_free(direct);
  /* Overrides in a bad file name the file. */
  g_autofree char *bad_spec = g_strconcat(custom, ":nodes=0", NULL);
  g_assert_null(dev_cluster_parse_spec(bad_spec, &error));
  assert_error(&error, DEV_ERROR_INVALID, custom, "nodes");
  dev_cluster_free(file);
  /* A malformed file names itself. */
  g_autofree char *bad = write_temp("bad.json", "{\"name\": \"oops\", ");
  g_assert_null(dev_cluster_parse_spec(bad, &error));
  assert_error(&error, DEV_ERROR_PARSE, bad, "malformed JSON");
  /* A directory is not a file. */
  g_assert_null(dev_cluster_parse_spec(tmpdir, &error));
  assert_error(&error, DEV_ERROR_PARSE, tmpdir, NULL);
}

/* ---- serialisation and copies ---- */

static void test_to_json(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100:nodes=2", &error);
  g_assert_no_error(error);
  char *text = dev_cluster_to_json(c);
  cJSON *j = cJSON_Parse(text);
  g_assert_nonnull(j);
  g_assert_cmpstr(cJSON_GetObjectItem(j, "name")->valuestring, ==, "dgx-a100");
  g_assert_cmpint(cJSON_GetObjectItem(j, "nodes")->valueint, ==, 2);
  g_assert_cmpint(cJSON_GetObjectItem(j, "gpus_per_node")->valueint, ==, 8);
  g_assert_cmpint(cJSON_GetObjectItem(j, "nics_per_node")->valueint, ==, 8);
  g_assert_cmpint(cJSON_GetObjectItem(j, "num_devices")->valueint, ==, 16);
  cJSON *device = cJSON_GetObjectItem(j, "device");
  g_assert_cmpstr(cJSON_GetObjectItem(device, "name")->valuestring, ==, "a100-80gb");
  cJSON *peak = cJSON_GetObjectItem(device, "peak_flops");
  g_assert_cmpfloat(cJSON_GetObjectItem(peak, "bf16")->valuedouble, ==, 312e12);
  g_assert_cmpfloat(cJSON_GetObjectItem(device, "memory_bytes")->valuedouble, ==, 80 * GIB);
  g_assert_cmpfloat(cJSON_GetObjectItem(device, "hbm_bandwidth_Bps")->valuedouble, ==, 2039e9);
  cJSON *inter = cJSON_GetObjectItem(j, "inter");
  g_assert_cmpstr(cJSON_GetObjectItem(inter, "kind")->valuestring, ==, "infiniband");
  g_assert_cmpfloat(cJSON_GetObjectItem(inter, "bandwidth_Bps")->valuedouble, ==, 25e9);
  g_assert_cmpfloat(cJSON_GetObjectItem(inter, "latency_s")->valuedouble, ==,
                    c->link[DEV_LINK_INTER].latency); /* printed exactly */
  /* Deterministic key order: name first, inter last. */
  g_assert_cmpstr(j->child->string, ==, "name");
  g_assert_cmpstr(cJSON_GetArrayItem(j, cJSON_GetArraySize(j) - 1)->string, ==, "inter");
  cJSON_Delete(j);
  /* A copy is deep and serialises identically. */
  DevCluster *copy = dev_cluster_copy(c);
  g_assert_true(copy->device.name != c->device.name);
  g_assert_true(copy->link[DEV_LINK_INTRA].kind != c->link[DEV_LINK_INTRA].kind);
  char *text2 = dev_cluster_to_json(copy);
  g_assert_cmpstr(text, ==, text2);
  g_free(text2);
  dev_cluster_free(c); /* the copy outlives the original */
  g_assert_cmpstr(copy->device.name, ==, "a100-80gb");
  g_assert_true(dev_cluster_set(copy, "nodes", "4", &error));
  text2 = dev_cluster_to_json(copy);
  g_assert_cmpstr(text, !=, text2);
  g_free(text2);
  g_free(text);
  dev_cluster_free(copy);
  dev_cluster_free(NULL);
}

/* The inter-host fabric's oversubscription: 1 by default, from the file or an override, and
 * values below 1 (or absurd) refused with the key named. */
static void test_oversubscription(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(c->oversubscription, ==, 1.0);
  dev_cluster_free(c);
  c = dev_cluster_parse_spec("dgx-a100:nodes=4,oversubscription=4", &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(c->oversubscription, ==, 4.0);
  g_autofree char *json = dev_cluster_to_json(c);
  g_assert_nonnull(strstr(json, "\"oversubscription\":\t4"));
  dev_cluster_free(c);
  const char *bad[] = {"dgx-a100:oversubscription=0.5", "dgx-a100:oversubscription=nan",
                       "dgx-a100:oversubscription=1e9"};
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_null(dev_cluster_parse_spec(bad[i], &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "oversubscription"));
    g_clear_error(&error);
  }
}

/* The NCCL network plugin's reported latency: 0 where a preset does not give one (NCCL's own
 * InfiniBand), aws-ofi-nccl's figures on the EFA presets, an override, and the JSON record only
 * where set (bad values: bad_specs, bad_jsons). */
static void test_net_latency(void) {
  /* us: the plugin's reported latency; step_us, simple_us: what a network step takes in NCCL's
   * kernels where the provider measured it (AWS's EFA model, the one measured on TCPXO, none
   * on InfiniBand). */
  const struct {
    const char *spec;
    double us, step_us, simple_us;
  } cases[] = {{"dgx-h100", 0, 0, 0},     {"gcp-a3-mega", 0, 69.1, 0}, {"aws-p4d", 75, 20, 3},
               {"aws-p5", 75, 20, 3},     {"aws-p6-b200", 35, 20, 3},
               {"dgx-h100:inter_nccl_latency_us=20", 20, 0, 0},
               {"dgx-h100:inter_net_step_latency_us=5,inter_net_simple_extra_us=1", 0, 5, 1}};
  GError *error = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    DevCluster *c = dev_cluster_parse_spec(cases[i].spec, &error);
    g_assert_no_error(error);
    assert_close(c->net_latency + 1.0, cases[i].us * 1e-6 + 1.0);
    assert_close(c->net_step_latency + 1.0, cases[i].step_us * 1e-6 + 1.0);
    assert_close(c->net_simple_extra + 1.0, cases[i].simple_us * 1e-6 + 1.0);
    g_autofree char *json = dev_cluster_to_json(c);
    g_assert_true((strstr(json, "nccl_latency_s") != NULL) == (cases[i].us > 0));
    g_assert_true((strstr(json, "net_step_latency_s") != NULL) == (cases[i].step_us > 0));
    dev_cluster_free(c);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  GError *error = NULL;
  tmpdir = g_dir_make_tmp("stratsim-devices-XXXXXX", &error);
  g_assert_no_error(error);
  /* First, so that racing threads build the lazy tables. */
  g_test_add_func("/devices/lazy-init-threads", test_names_threads);
  g_test_add_func("/devices/names", test_names);
  g_test_add_func("/devices/kinds-supporting", test_kinds_supporting);
  g_test_add_func("/devices/dtype", test_dtype);
  for (gsize i = 0; i < G_N_ELEMENTS(kind_figures); i++) {
    g_autofree char *path = g_strdup_printf("/devices/kind/%s", kind_figures[i].name);
    g_test_add_data_func(path, &kind_figures[i], test_kind_figures);
  }
  g_test_add_func("/devices/kind/copy-unknown", test_kind_copy_unknown);
  g_test_add_func("/devices/sources", test_sources);
  for (gsize i = 0; i < G_N_ELEMENTS(preset_figures); i++) {
    g_autofree char *path = g_strdup_printf("/devices/preset/%s", preset_figures[i].name);
    g_test_add_data_func(path, &preset_figures[i], test_preset);
  }
  g_test_add_func("/devices/preset/dgx-a100-si", test_dgx_a100_si);
  g_test_add_func("/devices/overrides", test_overrides);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_specs); i++) {
    g_autofree char *path = g_strdup_printf("/devices/error/spec/%zu", i);
    g_test_add_data_func(path, &bad_specs[i], test_bad_spec);
  }
  g_test_add_func("/devices/json/base", test_base_json);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_jsons); i++) {
    g_autofree char *path = g_strdup_printf("/devices/error/json/%zu", i);
    g_test_add_data_func(path, &bad_jsons[i], test_bad_json);
  }
  g_test_add_func("/devices/error/malformed", test_malformed_json);
  g_test_add_func("/devices/file/round-trip", test_file_round_trip);
  g_test_add_func("/devices/to-json", test_to_json);
  g_test_add_func("/devices/oversubscription", test_oversubscription);
  g_test_add_func("/devices/net-latency", test_net_latency);
  g_test_add_func("/devices/nccl-version", test_nccl_version);
  int status = g_test_run();
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", tmpdir);
  if (system(rm) != 0) g_warning("could not remove %s", tmpdir);
  return status;
}
