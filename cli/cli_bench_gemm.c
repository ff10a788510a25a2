/* cli/bench_gemm — `stratsim bench --suite gemm [--data DIR]`: the GEMM model (cm_gemm.c,
 * cm_compute.c) against every GEMM stratsim-gpubench measured on a GPU (DIR: one
 * tests/data/gpu/<device>-<date>/ folder; default: each such folder of the checkout). Per dtype
 * and per shape group (a Megatron layer's forward, data-gradient and weight-gradient GEMMs,
 * attention's batched GEMMs, the output layer, a square sweep): rows, mean and max |error| and
 * the mean signed error of the predicted kernel time; then by size. Without --data, also the
 * published tables of tests/data/validation (gemm_public.csv, gemm_a100_public.csv, the held-out
 * gemm_a100_heldout.csv, gemm_blackwell_public.csv) row by row, and per device. Prints; asserts
 * nothing. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "validate/val_gemm.h"

typedef struct {
  int n;
  double sum_abs, max_abs, sum;
} Errors;

static void add_error(Errors *e, const ValGemmRow *r) {
  double err = r->predicted_s / r->measured_s - 1;
  e->n++;
  e->sum += err;
  e->sum_abs += fabs(err);
  e->max_abs = MAX(e->max_abs, fabs(err));
}

static void print_errors(const char *kind, const char *dtype, const char *what, const Errors *e) {
  if (e->n == 0) return;
  printf("bench: gemm  %-9s %-5s %-22s %5d rows  mean |err| %5.1f%%  max %6.1f%%  bias %+6.1f%%\n",
         kind, dtype, what, e->n, 100 * e->sum_abs / e->n, 100 * e->max_abs, 100 * e->sum / e->n);
}

static double abs_error(const ValGemmRow *r) { return fabs(r->predicted_s / r->measured_s - 1); }

/* Largest |error| first; ties by label, so the order is the same on every run. */
static gint by_error(gconstpointer a, gconstpointer b) {
  const ValGemmRow *x = *(const ValGemmRow *const *)a, *y = *(const ValGemmRow *const *)b;
  double ex = abs_error(x), ey = abs_error(y);
  return ex > ey ? -1 : ex < ey ? 1 : strcmp(x->shape, y->shape);
}

/* Size classes by FLOPs: the model's floor and launch costs matter below 1 GFLOP. */
static const double size_edges[] = {1e8, 1e9, 1e10, 1e11, INFINITY};
static const char *const size_names[] = {"< 0.1 GFLOP", "0.1-1 GFLOP", "1-10 GFLOP",
                                         "10-100 GFLOP", ">= 100 GFLOP"};

static int bench_file(const char *dir, const char *file, const char *how) {
  CmParams params;
  cm_params_default(&params);
  GError *error = NULL;
  g_autofree char *kind = NULL;
  g_autoptr(GPtrArray) rows = val_gemm_rows_load(dir, file, &params, &kind, &error);
  if (!rows) return cli_fail(error, CLI_EXIT_BAD_INPUT);
  printf("bench: gemm  %s/%s: %u GEMMs measured by stratsim-gpubench (%s), predicted on %s "
         "(error = predicted / measured - 1)\n", dir, file, rows->len, how, kind);
  for (int d = 0; d < DEV_DTYPE_COUNT; d++) {
    Errors all = {0}, by_size[G_N_ELEMENTS(size_edges)] = {{0}};
    g_autoptr(GHashTable) groups = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    g_autoptr(GPtrArray) order = g_ptr_array_new();
    for (guint i = 0; i < rows->len; i++) {
      const ValGemmRow *r = g_ptr_array_index(rows, i);
      if ((int)r->dtype != d) continue;
      add_error(&all, r);
      guint s = 0;
      while (r->flops >= size_edges[s]) s++;
      add_error(&by_size[s], r);
      Errors *g = g_hash_table_lookup(groups, r->group);
      if (!g) {
        g = g_new0(Errors, 1);
        g_hash_table_insert(groups, r->group, g);
        g_ptr_array_add(order, r->group);
      }
      add_error(g, r);
    }
    const char *dtype = dev_dtype_name((DevDtype)d);
    for (guint i = 0; i < order->len; i++)
      print_errors(kind, dtype, g_ptr_array_index(order, i),
                   g_hash_table_lookup(groups, g_ptr_array_index(order, i)));
    for (guint s = 0; s < G_N_ELEMENTS(size_edges); s++)
      print_errors(kind, dtype, size_names[s], &by_size[s]);
    print_errors(kind, dtype, "all", &all);
    /* The five rows the model misses most, with their TFLOP/s. */
    g_autoptr(GPtrArray) worst = g_ptr_array_new();
    for (guint i = 0; i < rows->len; i++)
      if ((int)((const ValGemmRow *)g_ptr_array_index(rows, i))->dtype == d)
        g_ptr_array_add(worst, g_ptr_array_index(rows, i));
    g_ptr_array_sort(worst, by_error);
    for (guint i = 0; i < MIN(5u, worst->len); i++) {
      const ValGemmRow *r = g_ptr_array_index(worst, i);
      printf("bench: gemm  %-9s %-5s worst: %-40s %7.1f measured %7.1f predicted TFLOP/s (%+.1f%%)\n",
             kind, dtype, r->shape, r->flops / r->measured_s / 1e12, r->flops / r->predicted_s / 1e12,
             100 * (r->predicted_s / r->measured_s - 1));
    }
  }
  return CLI_EXIT_OK;
}

/* gemm.csv, then gemm_graph.csv where the folder has it. */
static int bench_dir(const char *dir) {
  int status = bench_file(dir, "gemm.csv", "launched back to back from the host");
  g_autofree char *graph = g_build_filename(dir, "gemm_graph.csv", NULL);
  if (status == CLI_EXIT_OK && g_file_test(graph, G_FILE_TEST_EXISTS))
    status = bench_file(dir, "gemm_graph.csv", "replayed from a CUDA graph: kernel time alone");
  return status;
}

/* Every row of the published table @file of @validation, then per device (all rows, and those
 * of at least 30 GFLOP: smaller published GEMMs carry launch costs). */
static int bench_public(const char *validation, const char *file) {
  CmParams params;
  cm_params_default(&params);
  GError *error = NULL;
  g_autofree char *path = g_build_filename(validation, file, NULL);
  g_autoptr(GPtrArray) rows = val_gemm_public_load(path, &params, &error);
  if (!rows) return cli_fail(error, CLI_EXIT_BAD_INPUT);
  printf("bench: gemm-public  %s: %u published GEMMs (sources in the file), predicted on each "
         "row's device kind (error = predicted / measured time - 1)\n", path, rows->len);
  g_autoptr(GPtrArray) devices = g_ptr_array_new();
  for (guint i = 0; i < rows->len; i++) {
    const ValGemmRow *r = g_ptr_array_index(rows, i);
    printf("bench: gemm-public  %-9s %-5s %-24s %7.1f measured %7.1f predicted TFLOP/s (%+.1f%%)\n",
           r->device, dev_dtype_name(r->dtype), r->shape, r->flops / r->measured_s / 1e12,
           r->flops / r->predicted_s / 1e12, 100 * (r->predicted_s / r->measured_s - 1));
    gboolean seen = FALSE;
    for (guint d = 0; d < devices->len && !seen; d++) seen = !strcmp(devices->pdata[d], r->device);
    if (!seen) g_ptr_array_add(devices, r->device);
  }
  for (guint d = 0; d < devices->len; d++) {
    Errors all = {0}, large = {0};
    for (guint i = 0; i < rows->len; i++) {
      const ValGemmRow *r = g_ptr_array_index(rows, i);
      if (strcmp(r->device, devices->pdata[d])) continue;
      add_error(&all, r);
      if (r->flops >= 30e9) add_error(&large, r);
    }
    print_errors(devices->pdata[d], "", "published, all", &all);
    print_errors(devices->pdata[d], "", "published, >= 30 GFLOP", &large);
  }
  return CLI_EXIT_OK;
}

int cli_bench_gemm(const char *data_dir) {
  if (data_dir) return bench_dir(data_dir);
  g_autoptr(GPtrArray) dirs = cli_gpu_data_dirs("gemm.csv");
  if (!dirs) return CLI_EXIT_BAD_INPUT;
  int status = CLI_EXIT_OK;
  for (guint i = 0; i < dirs->len && status == CLI_EXIT_OK; i++)
    status = bench_dir(g_ptr_array_index(dirs, i));
  g_autofree char *validation = cli_validation_dir();
  static const char *const tables[] = {"gemm_public.csv", "gemm_a100_public.csv",
                                       "gemm_a100_heldout.csv", "gemm_blackwell_public.csv"};
  for (guint i = 0; validation && i < G_N_ELEMENTS(tables) && status == CLI_EXIT_OK; i++)
    status = bench_public(validation, tables[i]);
  return status;
}
