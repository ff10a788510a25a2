/* Per-component checks against published Megatron runs (validate/val_components.h) on
 * Korthikanti et al. 2022 Table 5 (tests/data/validation/megatron_public.csv) and the 8 x A100
 * nccl-tests all-reduce curve (nccl_a100.csv): the simulated GEMM compute against the
 * analytical FLOP count at the measured GEMM rate, and the tensor-parallel collectives the
 * simulator charges against the ones Korthikanti's analysis counts, at the simulator's own
 * collective cost. Errors against the measured communication and iteration times go to the
 * log (`stratsim bench --suite megatron` prints them too); their accuracy depends on the
 * collective model (issue 14, items 1-2). */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util_csv.h"
#include "validate/val_components.h"
#include "validate/val_layers.h"
#include "validate/val_pipeline.h"

static char *data(const char *name) {
  return g_build_filename(STRATSIM_SOURCE_DIR, "tests", "data", "validation", name, NULL);
}

/* The rows of megatron_public.csv measuring @metric (@count of them) and the A100 curve. */
static GPtrArray *load(const char *metric, guint count, GArray **curve) {
  g_autofree char *rows_path = data("megatron_public.csv"), *curve_path = data("nccl_a100.csv");
  GError *error = NULL;
  GPtrArray *rows = val_megatron_rows_load(rows_path, metric, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rows->len, ==, count);
  *curve = val_allreduce_curve_load(curve_path, "A100", 8, &error);
  g_assert_no_error(error);
  return rows;
}

static void test_table5(void) {
  GError *error = NULL;
  g_autoptr(GArray) curve = NULL;
  g_autoptr(GPtrArray) rows = load("iteration_seconds", 8, &curve);
  double e2e = 0, p2p_full = 0;
  guint nrows = rows->len;
#if defined(__SANITIZE_ADDRESS__)
  /* The 22B and 175B pairs (one without a pipeline, one with): the 530B and 1T rows' simulations
   * take most of the ~23 s instrumented and run the same code (the release run checks every row). */
  nrows = 4;
#endif
  for (guint i = 0; i < nrows; i++) {
    const ValMegatronRow *r = g_ptr_array_index(rows, i);
    g_assert_false(r->grad_reduce_after_backward); /* dp=1: simulated as before */
    ValComponents c;
    g_assert_true(val_megatron_components(r, curve, &c, &error));
    g_assert_no_error(error);
    g_test_message("%s %s: iteration %.3f s measured, %.3f predicted (%+.1f%%); GEMM %.3f ref, "
                   "%.3f sim (%+.1f%%); TP comm %.3f on the measured curve, %.3f sim (%+.1f%%), "
                   "%.3f counted at the simulator's cost", r->model,
                   mdl_recompute_name(r->recompute), c.measured_s, c.predicted_s,
                   100 * (c.predicted_s / c.measured_s - 1), c.gemm_ref_s, c.gemm_sim_s,
                   100 * (c.gemm_sim_s / c.gemm_ref_s - 1), c.comm_ref_s, c.comm_sim_s,
                   100 * (c.comm_sim_s / c.comm_ref_s - 1), c.comm_model_s);
    /* Within 8% (issue 14: 10%) of the FLOPs at the reference A100 GEMM rate, the attention core at the HBM peak. */
    g_assert_cmpfloat(fabs(c.gemm_sim_s / c.gemm_ref_s - 1), <, 0.08);
    g_assert_cmpfloat(fabs(c.comm_sim_s / c.comm_model_s - 1), <, 0.06);
    e2e += fabs(c.predicted_s / c.measured_s - 1);
    /* The analytical iteration (val_pipeline.h): its terms add up; the bubble is
     * (p-1)/(v m); a single stage has no pipeline exchanges; the hidden communication is
     * part of the counted one; the scatter-gather leaves sequence-parallel rows with smaller
     * exchanges than their full-recomputation twins (same p, v, m). */
    ValPipelineRef a;
    val_megatron_pipeline_reference(r, curve, &c, &a);
    double m = (double)r->global_batch / (r->micro_batch * r->dp);
    g_assert_cmpfloat(a.bubble_fraction, ==, (r->pp - 1) / (r->interleaved * m));
    g_assert_cmpfloat(fabs(a.e2e_ref_s - a.busy_ref_s * (1 + a.bubble_fraction)), <, 1e-12 * a.e2e_ref_s);
    g_assert_cmpfloat(a.hidden_ref_s, >, 0);
    g_assert_cmpfloat(a.hidden_ref_s, <, c.comm_ref_s);
    g_assert_cmpint(a.p2p_ref_s > 0, ==, r->pp > 1);
    g_test_message("  analytical iteration %.3f s (%+.1f%%), exposed communication %.3f ref, "
                   "%.3f sim, bubble %.3f ref, %.3f sim", a.e2e_ref_s,
                   100 * (a.e2e_ref_s / c.measured_s - 1),
                   c.comm_ref_s - a.hidden_ref_s + a.p2p_ref_s, c.exposed_sim_s, a.bubble_ref_s,
                   c.bubble_sim_s);
    if (i % 2 == 1 && r->pp > 1) g_assert_cmpfloat(a.p2p_ref_s, <, p2p_full);
    p2p_full = a.p2p_ref_s;
  }
  g_test_message("end-to-end mean |error| %.1f%%", 100 * e2e / nrows);
}

/* Narayanan et al. 2021 Table 1 rows: loaded with their data-parallel degree and fp16; Eq. 3's
 * FLOPs (96 B s l h^2 (1 + s/6h + V/16lh)) against the 1.7B row worked by hand; the smallest
 * row simulated (its GEMM compute against the FLOP count at the measured rate, the predicted
 * TFLOP/s from the predicted iteration); the error goes to the log (the bench prints all).
 * Removing the dp, fp16 or interleave fields, or a term of Eq. 3, fails it. */
static void test_table1(void) {
  GError *error = NULL;
  g_autoptr(GArray) curve = NULL;
  g_autoptr(GPtrArray) rows = load("tflops_per_gpu", 10, &curve);
  const ValMegatronRow *r = g_ptr_array_index(rows, 0);
  g_assert_cmpstr(r->model, ==, "GPT 1.7B");
  g_assert_cmpint(r->dp, ==, 32);
  g_assert_true(r->fp16);
  /* Every Table 1 row ran Megatron-LM 6985e58: gradients all-reduced after the backward. */
  for (guint i = 0; i < rows->len; i++)
    g_assert_true(((const ValMegatronRow *)g_ptr_array_index(rows, i))->grad_reduce_after_backward);
  g_assert_cmpfloat(r->measured_tflops, ==, 137);
  /* 96 x 512 x 2048 x 24 x 2304^2 x (1 + 2048/13824 + 51200/884736) */
  double by_hand = 96.0 * 512 * 2048 * 24 * 2304.0 * 2304 *
                   (1 + 2048.0 / (6 * 2304) + 51200.0 / (16 * 24 * 2304));
  g_assert_cmpfloat_with_epsilon(val_megatron_flops(r), by_hand, 1e-9 * by_hand);
  const ValMegatronRow *r76 = g_ptr_array_index(rows, 5);
  g_assert_cmpint(r76->interleaved, ==, 3);
  g_assert_cmpint(r76->gpus, ==, r76->tp * r76->pp * r76->dp);
  ValComponents c;
  g_assert_true(val_megatron_components(r, curve, &c, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat_with_epsilon(c.predicted_tflops, by_hand / (c.predicted_s * 32) / 1e12, 1e-9);
  /* At least the FLOPs at the measured peak; above it by the LM head (~5% here, outside the
   * reference) and the attention GEMMs, whose head dim 96 puts them under the A100's ridge
   * point (2 x 96 FLOPs per 2-byte score written: memory bound). */
  g_assert_cmpfloat(c.gemm_sim_s, >=, c.gemm_ref_s);
  g_assert_cmpfloat(c.gemm_sim_s, <, 1.25 * c.gemm_ref_s);
  g_test_message("%s: %.1f TFLOP/s per GPU measured, %.1f predicted (%+.1f%%)", r->model,
                 c.measured_tflops, c.predicted_tflops,
                 100 * (c.predicted_tflops / c.measured_tflops - 1));
}

/* The curve interpolates in log-log space and scales proportionally beyond its ends. */
static void test_curve(void) {
  g_autofree char *curve_path = data("nccl_a100.csv");
  GError *error = NULL;
  g_autoptr(GArray) curve = val_allreduce_curve_load(curve_path, "A100", 8, &error);
  g_assert_no_error(error);
  const double *p = (const double *)curve->data;
  g_assert_cmpfloat_with_epsilon(val_curve_time(curve, p[2]), p[3], 1e-12 * p[3]);
  double mid = sqrt(p[2] * p[4]);
  g_assert_cmpfloat_with_epsilon(val_curve_time(curve, mid), sqrt(p[3] * p[5]), 1e-12 * p[5]);
  g_assert_cmpfloat_with_epsilon(val_curve_time(curve, p[0] / 2), p[1] / 2, 1e-15);
  g_assert_null(val_allreduce_curve_load(curve_path, "TPU", 8, &error));
  g_assert_nonnull(error);
  g_clear_error(&error);
}

/* Several curves of one system: the median of their times per size (three curves at 1 MiB,
 * two at 4 MiB, one at 16 MiB). */
static void test_curve_median(void) {
  const char *csv = "collective,size_bytes,ranks,nodes,gpus_per_node,gpu_system,algbw_GBps,busbw_GBps,time_us,source\n"
                    "all_reduce,1048576,8,1,8,A100 a,,,30,x\n"
                    "all_reduce,1048576,8,1,8,A100 b,,,10,x\n"
                    "all_reduce,1048576,8,1,8,A100 c,,,20,x\n"
                    "all_reduce,4194304,8,1,8,A100 a,,,40,x\n"
                    "all_reduce,4194304,8,1,8,A100 b,,,60,x\n"
                    "all_reduce,16777216,8,1,8,A100 a,,,100,x\n"
                    "all_reduce,16777216,4,1,4,A100 a,,,1,x\n";
  g_autofree char *path = g_build_filename(g_get_tmp_dir(), "stratsim-test-curve-median.csv", NULL);
  g_assert_true(g_file_set_contents(path, csv, -1, NULL));
  GError *error = NULL;
  g_autoptr(GArray) curve = val_allreduce_curve_load(path, "A100", 8, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(curve->len, ==, 3);
  const double *p = (const double *)curve->data;
  const double want[6] = {1048576, 20e-6, 4194304, 50e-6, 16777216, 100e-6};
  for (int i = 0; i < 6; i++) g_assert_cmpfloat_with_epsilon(p[i], want[i], 1e-9 * want[i]);
  g_remove(path);
}

/* The 8 x A100 curves of the reference (nccl_a100.csv) are the 8 x A100 all-reduce rows of
 * nccl_public.csv (the bench's copy), row for row; the file holds the eight curves found so
 * far (validate/KORTHIKANTI.md), and at 16 MiB the reference is the median of the seven
 * that measure it (gcm's run starts at 32 MiB): 260.5 us, the -g 8 run on "thanos". */
static GHashTable *a100_rows(const char *name, guint *systems) {
  g_autofree char *path = data(name);
  GError *error = NULL;
  UtilCsv *csv = util_csv_read(path, &error);
  g_assert_no_error(error);
  int coll = util_csv_column(csv, "collective"), ranks = util_csv_column(csv, "ranks");
  int size = util_csv_column(csv, "size_bytes"), sys = util_csv_column(csv, "gpu_system");
  int time = util_csv_column(csv, "time_us");
  GHashTable *rows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < csv->rows->len; i++) {
    const char *s = util_csv_field(csv, i, sys);
    if (strcmp(util_csv_field(csv, i, coll), "all_reduce") != 0 || atoi(util_csv_field(csv, i, ranks)) != 8 ||
        !strstr(s, "A100"))
      continue;
    g_hash_table_add(rows, g_strdup_printf("%s|%s|%s", s, util_csv_field(csv, i, size), util_csv_field(csv, i, time)));
    g_hash_table_add(names, g_strdup(s));
  }
  *systems = g_hash_table_size(names);
  util_csv_free(csv);
  return rows;
}

static void test_curve_a100_public(void) {
  guint systems, public_systems;
  g_autoptr(GHashTable) ref = a100_rows("nccl_a100.csv", &systems);
  g_autoptr(GHashTable) pub = a100_rows("nccl_public.csv", &public_systems);
  g_assert_cmpuint(systems, ==, 8);
  g_assert_cmpuint(public_systems, ==, systems);
  g_assert_cmpuint(g_hash_table_size(ref), ==, g_hash_table_size(pub));
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, ref);
  while (g_hash_table_iter_next(&it, &key, NULL)) g_assert_true(g_hash_table_contains(pub, key));
  g_autofree char *path = data("nccl_a100.csv");
  GError *error = NULL;
  g_autoptr(GArray) curve = val_allreduce_curve_load(path, "A100", 8, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat_with_epsilon(val_curve_time(curve, 16777216), 260.5e-6, 1e-12);
  /* the one-process-per-GPU curves alone (bench megatron-1ppg rows): thanos under mpirun -np 8
   * and gcm's health check; at 64 MiB the mean of their 615.7 and 557.4 us, at 16 MiB thanos's
   * 213.3 us (gcm starts at 32 MiB) */
  g_autoptr(GArray) one = val_allreduce_curve_load(path, "-g 1 x 8 processes", 8, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat_with_epsilon(val_curve_time(one, 67108864), 586.55e-6, 1e-12);
  g_assert_cmpfloat_with_epsilon(val_curve_time(one, 16777216), 213.3e-6, 1e-12);
}

/* Korthikanti et al. 2022 Table 4 (korthikanti_table4.csv): one layer of the 22B model. The
 * simulated periods behave as the layer's structure says they must: the full recomputation's
 * backward is the plain backward plus one recomputed forward (its kernels and its two
 * all-reduces: the forward period, within 2%), selective recomputation adds less than that,
 * and sequence parallelism shortens the forward (layer-norms and dropouts on 1/t of the
 * tokens). Errors against the measured times go to the log (`stratsim bench --suite
 * megatron`, megatron-layer rows). */
static void test_table4(void) {
  g_autofree char *path = data("korthikanti_table4.csv");
  GError *error = NULL;
  g_autoptr(GPtrArray) rows = val_layer_rows_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rows->len, ==, 5);
  g_autofree char *curve_path = data("nccl_a100.csv");
  g_autoptr(GArray) curve = val_allreduce_curve_load(curve_path, "A100", 8, &error);
  g_assert_no_error(error);
  double fwd[5], bwd[5], ref0 = 0;
  for (guint i = 0; i < rows->len; i++) {
    const ValLayerRow *r = g_ptr_array_index(rows, i);
    ValLayerTimes t;
    g_assert_true(val_layer_times(r, curve, &t, &error));
    g_assert_no_error(error);
    fwd[i] = t.forward_s;
    bwd[i] = t.backward_s;
    /* The forward's collectives: two all-reduces, or with sequence parallelism two
     * all-gathers and two reduce-scatters of the same activations (each half an all-reduce
     * on the reference side): the same reference either way, inside the forward period. */
    g_assert_cmpfloat(t.forward_comm_s, >, 0);
    g_assert_cmpfloat(t.forward_comm_s, <, t.forward_s);
    if (i == 0) ref0 = t.forward_comm_ref_s;
    g_assert_cmpfloat(fabs(t.forward_comm_ref_s / ref0 - 1), <, 1e-9);
    g_test_message("%s: forward %.3g ms (measured %.3g), backward %.3g ms (measured %.3g)",
                   r->experiment, 1e3 * fwd[i], 1e3 * r->forward_s, 1e3 * bwd[i],
                   1e3 * r->backward_s);
    g_assert_cmpfloat(fwd[i], >, 0);
    g_assert_cmpfloat(bwd[i], >, fwd[i]);
  }
  /* rows: none, SP, full, selective, selective + SP */
  g_assert_cmpfloat(fabs(bwd[2] - bwd[0] - fwd[0]), <, 0.02 * fwd[0]);
  g_assert_cmpfloat(bwd[3], >, bwd[0]);
  g_assert_cmpfloat(bwd[3] - bwd[0], <, 0.5 * fwd[0]);
  g_assert_cmpfloat(fwd[1], <, fwd[0]);
  g_assert_cmpfloat(fwd[4], ==, fwd[1]); /* selective recomputation leaves the forward alone */
  /* A bad field is named. */
  g_autofree char *bad = NULL;
  int fd = g_file_open_tmp("table4-XXXXXX.csv", &bad, &error);
  g_assert_no_error(error);
  close(fd);
  g_assert_true(g_file_set_contents(bad, "experiment,layers,hidden,heads,seq_len,vocab,micro_batch,"
                                    "tp,recompute,sequence_parallel,forward_ms,backward_ms\n"
                                    "x,48,6144,64,2048,51200,4,8,full,n,fast,19.5\n", -1, &error));
  g_assert_null(val_layer_rows_load(bad, &error));
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, "forward_ms"));
  g_clear_error(&error);
  g_unlink(bad);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/components/table5", test_table5);
  g_test_add_func("/validate/components/table1", test_table1);
  g_test_add_func("/validate/components/curve", test_curve);
  g_test_add_func("/validate/components/curve/median", test_curve_median);
  g_test_add_func("/validate/components/curve/a100-public", test_curve_a100_public);
  g_test_add_func("/validate/components/table4", test_table4);
  return g_test_run();
}
