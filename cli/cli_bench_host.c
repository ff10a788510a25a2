/* cli/bench_host — `stratsim bench --suite host [--data DIR]`: the host stream per layer
 * (val_host.h) against a Megatron-LM layer stack PyTorch ran on a GPU (DIR: one
 * tests/data/gpu/<device>-<date>/ folder with a torch_layers.csv; default: each such folder of
 * the checkout). Per row at micro-batch 1, then over all rows and over those the measurement
 * found host-bound (the GPU idle for more than half the wall time), for the default profile
 * (megatron-lm) and for no host stream (none): mean |error| and mean signed error of the host
 * and wall time per layer, and the host-bound share measured and predicted; then how each
 * ranks the micro-batch sizes of a layer shape by time per sample (Kendall's tau against the
 * measured order), and every (sequence, micro-batch) of a layer shape by time per token.
 * Prints; asserts nothing. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "validate/val_host.h"

typedef struct {
  int n;
  double sum_abs, sum;
} Errors;

static void add(Errors *e, double predicted, double measured) {
  double err = predicted / measured - 1;
  e->n++;
  e->sum += err;
  e->sum_abs += fabs(err);
}

/* The GPU's idle share of the wall time (torch_layer_bench.py's host_bound = wall - gpu). */
static double idle_share(double wall, double gpu) { return wall > 0 ? MAX(0, wall - gpu) / wall : 0; }

typedef struct {
  Errors host, wall, wall_bound;
  int measured_bound, predicted_bound, agree, rows;
  double measured_kernels, predicted_kernels; /* sums over the rows */
  double measured_share, predicted_share; /* sums over the host-bound rows */
} Summary;

static void print_summary(const char *framework, const char *phase, const Summary *s) {
  const Errors *h = &s->host, *w = &s->wall, *b = &s->wall_bound;
  if (h->n)
    printf("bench: host  %-11s %-8s host ms/layer  mean |err| %5.1f%%  bias %+6.1f%%  (%d rows); "
           "kernels/layer %.1f measured (profiler), %.1f in the profile\n",
           framework, phase, 100 * h->sum_abs / h->n, 100 * h->sum / h->n, h->n,
           s->measured_kernels / s->rows, s->predicted_kernels / s->rows);
  if (w->n)
    printf("bench: host  %-11s %-8s wall ms/layer  mean |err| %5.1f%%  bias %+6.1f%%  (%d rows); "
           "host-bound rows %5.1f%% / %+6.1f%% (%d)\n",
           framework, phase, 100 * w->sum_abs / w->n, 100 * w->sum / w->n, w->n,
           b->n ? 100 * b->sum_abs / b->n : 0, b->n ? 100 * b->sum / b->n : 0, b->n);
  if (s->measured_bound)
    printf("bench: host  %-11s %-8s host-bound (GPU idle > 50%%): measured %d of %d rows, "
           "predicted %d, both %d; idle share on the measured ones %.2f measured, %.2f "
           "predicted\n", framework, phase, s->measured_bound, s->rows, s->predicted_bound,
           s->agree, s->measured_share / s->measured_bound, s->predicted_share / s->measured_bound);
}

static int bench_file(const char *path) {
  GError *error = NULL;
  g_autoptr(GPtrArray) rows = val_host_rows_load(path, &error);
  if (!rows) return cli_fail(error, CLI_EXIT_BAD_INPUT);
  printf("bench: host  %s: %u rows (a Megatron-LM layer stack run by PyTorch on the GPU, per "
         "layer; error = predicted / measured - 1; simulated on one h100-sxm, tp=1)\n", path,
         rows->len);
  printf("bench: host  %-24s %-8s %8s %8s %8s %8s %8s %8s %6s %6s\n", "layers h seq mb",
         "phase", "host", "sim", "wall", "sim", "gpu", "sim", "idle", "sim");
  static const MdlFramework frameworks[] = {MDL_FRAMEWORK_MEGATRON_LM, MDL_FRAMEWORK_NONE};
  Summary sums[G_N_ELEMENTS(frameworks)][2];
  memset(sums, 0, sizeof sums);
  g_autofree double *walls = g_new0(double, G_N_ELEMENTS(frameworks) * (rows->len + 1));
  for (guint i = 0; i < rows->len; i++) {
    const ValHostRow *r = g_ptr_array_index(rows, i);
    double measured_idle = idle_share(r->wall_s, r->gpu_s);
    for (guint f = 0; f < G_N_ELEMENTS(frameworks); f++) {
      ValHostTimes t;
      if (!val_host_times(r, frameworks[f], &t, &error)) return cli_fail(error, CLI_EXIT_BAD_INPUT);
      Summary *s = &sums[f][r->backward];
      walls[f * rows->len + i] = t.wall_s;
      double predicted_idle = idle_share(t.wall_s, t.gpu_s);
      s->rows++;
      s->measured_kernels += r->kernels;
      s->predicted_kernels += t.kernels;
      if (t.host_s > 0) add(&s->host, t.host_s, r->host_s);
      add(&s->wall, t.wall_s, r->wall_s);
      s->predicted_bound += predicted_idle > 0.5;
      if (measured_idle > 0.5) {
        add(&s->wall_bound, t.wall_s, r->wall_s);
        s->measured_bound++;
        s->agree += predicted_idle > 0.5;
        s->measured_share += measured_idle;
        s->predicted_share += predicted_idle;
      }
      if (f == 0 && r->micro_batch == 1) {
        g_autofree char *shape = g_strdup_printf("%d h%d s%d mb%d", r->layers, r->hidden, r->seq,
                                                 r->micro_batch);
        printf("bench: host  %-24s %-8s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %6.2f %6.2f\n", shape,
               r->backward ? "backward" : "forward", 1e3 * r->host_s, 1e3 * t.host_s,
               1e3 * r->wall_s, 1e3 * t.wall_s, 1e3 * r->gpu_s, 1e3 * t.gpu_s, measured_idle,
               predicted_idle);
      }
    }
  }
  for (guint f = 0; f < G_N_ELEMENTS(frameworks); f++)
    for (int phase = 0; phase < 2; phase++)
      print_summary(mdl_framework_name(frameworks[f]), phase ? "backward" : "forward",
                    &sums[f][phase]);
  for (guint f = 0; f < G_N_ELEMENTS(frameworks); f++) {
    int pairs, token_pairs;
    double tau = val_host_ranking_tau(rows, walls + f * rows->len, FALSE, &pairs);
    double token_tau = val_host_ranking_tau(rows, walls + f * rows->len, TRUE, &token_pairs);
    printf("bench: host  %-11s ranking, Kendall tau against the measured order: micro-batch sizes "
           "by time per sample %.2f (%d pairs); (sequence, micro-batch) by time per token %.2f "
           "(%d pairs)\n", mdl_framework_name(frameworks[f]), tau, pairs, token_tau, token_pairs);
  }
  return CLI_EXIT_OK;
}

int cli_bench_host(const char *data_dir) {
  if (data_dir) {
    g_autofree char *path = g_build_filename(data_dir, "torch_layers.csv", NULL);
    return bench_file(path);
  }
  g_autoptr(GPtrArray) dirs = cli_gpu_data_dirs("torch_layers.csv");
  if (!dirs) return CLI_EXIT_BAD_INPUT;
  int status = CLI_EXIT_OK;
  for (guint i = 0; i < dirs->len && status == CLI_EXIT_OK; i++) {
    g_autofree char *path = g_build_filename(g_ptr_array_index(dirs, i), "torch_layers.csv", NULL);
    status = bench_file(path);
  }
  return status;
}
