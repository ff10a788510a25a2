/* validate/runner_cpu/host — `stratsim-cpu-runner --host-cluster OUT`: this machine as a cluster
 * in the preset format (devices/presets/NAME.json), fitted from the runner's own micro-benchmarks:
 *  - GEMM rate: OpenBLAS sgemm (one thread per rank, every rank at once, as a plan runs them)
 *    at square sizes 128..1024; the best size's rate of the slowest rank;
 *  - vector rate: saxpy on an L1-resident vector;
 *  - memory bandwidth: a 128 MiB pass (64 MiB read, 64 MiB written) on every rank at once;
 *  - the intra-host link: MPI ping-pong between ranks 0 and 1, half the round trip of an 8-byte
 *    message (latency) and of a 16 MiB one (bandwidth); an MPI all-reduce over every rank is
 *    measured beside it and written next to what the fitted link predicts for it.
 * The cost model applies efficiencies to peaks (costmodel/cm_compute.c: matmul 0.70, vector
 * 0.50, memory 0.80), so the fitted peaks are the measured rates divided by them: the roofline
 * then predicts the measured rates. Every figure's source says so, and where, when and how it
 * was measured. */
#include "validate/runner_cpu/cpu_runner.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "costmodel/costmodel.h"

char *cpu_model_name(void) {
  g_autofree char *text = NULL;
  if (g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL)) {
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
      if (!g_str_has_prefix(*l, "model name")) continue;
      const char *colon = strchr(*l, ':');
      if (colon) return g_strstrip(g_strdup(colon + 1));
    }
  }
  return g_strdup("unknown CPU");
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The slowest rank's value of @mine (the largest time), on every rank. */
static double slowest(double mine) {
  double out = 0;
  MPI_Allreduce(&mine, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

/* Best sgemm FLOP/s over square sizes; @best_n receives the size. */
static double measure_gemm(CpuRank *r, int *best_n) {
  static const int sizes[] = {128, 256, 512, 1024};
  double best = 0;
  for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
    int n = sizes[s];
    double reps[5];
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 7; k++) {
      double t0 = MPI_Wtime();
      cpu_gemm(r, n, n, n, 1);
      if (k >= 2) reps[k - 2] = MPI_Wtime() - t0;
    }
    double t = slowest(median_of(reps, 5));
    double rate = 2.0 * n * (double)n * n / t;
    if (rate > best) {
      best = rate;
      *best_n = n;
    }
  }
  return best;
}

static double measure_vector(void) {
  enum { N = 4096, LOOPS = 2000 };
  float *x = g_new(float, N), *y = g_new(float, N);
  for (int i = 0; i < N; i++) x[i] = 1e-3f, y[i] = 0;
  double reps[5];
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 7; k++) {
    double t0 = MPI_Wtime();
    for (int l = 0; l < LOOPS; l++) cblas_saxpy(N, 1e-6f, x, 1, y, 1);
    if (k >= 2) reps[k - 2] = MPI_Wtime() - t0;
  }
  g_free(x);
  g_free(y);
  return 2.0 * N * LOOPS / slowest(median_of(reps, 5));
}

#define PASS_BYTES (G_GINT64_CONSTANT(128) << 20)

static double measure_memory(CpuRank *r) {
  double reps[5];
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 7; k++) {
    double t0 = MPI_Wtime();
    cpu_memory_pass(r, PASS_BYTES);
    if (k >= 2) reps[k - 2] = MPI_Wtime() - t0;
  }
  return (double)PASS_BYTES / slowest(median_of(reps, 5));
}

/* Half the round trip of @bytes between ranks 0 and 1 (median of @reps), on every rank. */
static double measure_pingpong(CpuRank *r, gint64 bytes, int reps) {
  int count = (int)((bytes + 3) / 4);
  double *t = g_new(double, reps);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < reps + 3; k++) {
    double t0 = MPI_Wtime();
    if (r->rank == 0) {
      MPI_Send(r->src, count, MPI_FLOAT, 1, 3, MPI_COMM_WORLD);
      MPI_Recv(r->dst, count, MPI_FLOAT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (r->rank == 1) {
      MPI_Recv(r->dst, count, MPI_FLOAT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(r->src, count, MPI_FLOAT, 0, 3, MPI_COMM_WORLD);
    }
    if (k >= 3) t[k - 3] = (MPI_Wtime() - t0) / 2;
  }
  double half = median_of(t, reps);
  g_free(t);
  MPI_Bcast(&half, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return half;
}

static double measure_allreduce(CpuRank *r, gint64 bytes, int reps) {
  int count = (int)((bytes + 3) / 4);
  double *t = g_new(double, reps);
  for (int k = 0; k < reps + 3; k++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(r->src, r->dst, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (k >= 3) t[k - 3] = MPI_Wtime() - t0;
  }
  double m = slowest(median_of(t, reps));
  g_free(t);
  return m;
}

/* The collectives over every rank at a few sizes, as a calibrate measurements file
 * (costmodel/CALIBRATION.md): the slowest rank's median of each. */
static cJSON *measure_collectives(CpuRank *r) {
  static const ValCollectiveKind kinds[] = {VAL_COLL_ALL_REDUCE, VAL_COLL_ALL_GATHER,
                                            VAL_COLL_REDUCE_SCATTER, VAL_COLL_ALL_TO_ALL,
                                            VAL_COLL_BROADCAST, VAL_COLL_SEND_RECV};
  static const gint64 sizes[] = {4096, 65536, 1048576, 16777216};
  cJSON *list = cJSON_CreateArray();
  for (gsize k = 0; k < G_N_ELEMENTS(kinds); k++)
    for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
      int reps = sizes[s] >= 1048576 ? 5 : 20;
      double *t = g_new(double, reps);
      for (int i = 0; i < reps + 2; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        cpu_collective(r, kinds[k], sizes[s], MPI_COMM_WORLD);
        if (i >= 2) t[i - 2] = MPI_Wtime() - t0;
      }
      double time = slowest(median_of(t, reps));
      g_free(t);
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "kind", val_collective_name(kinds[k]));
      cJSON_AddNumberToObject(e, "ranks", r->size);
      cJSON_AddNumberToObject(e, "nodes", 1);
      cJSON_AddNumberToObject(e, "bytes", (double)sizes[s]);
      cJSON_AddNumberToObject(e, "time_s", time);
      cJSON_AddItemToArray(list, e);
    }
  return list;
}

static char *sanitized_host(void) {
  char *h = g_ascii_strdown(g_get_host_name(), -1);
  for (char *p = h; *p; p++)
    if (!g_ascii_isalnum(*p) && *p != '-') *p = '-';
  return h;
}

gboolean cpu_host_cluster(CpuRank *r, const char *path, const char *command, GError **error) {
  if (r->size < 2) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "--host-cluster needs at least 2 MPI ranks (mpirun -np 2) to measure the link");
    return FALSE;
  }
  int gemm_n = 0;
  double gemm = measure_gemm(r, &gemm_n);
  double vector = measure_vector();
  double memory = measure_memory(r);
  double lat = measure_pingpong(r, 8, 1000);
  double big = measure_pingpong(r, G_GINT64_CONSTANT(16) << 20, 10);
  double bandwidth = (double)(G_GINT64_CONSTANT(16) << 20) / big;
  double ar_small = measure_allreduce(r, 8, 200);
  double ar_large = measure_allreduce(r, G_GINT64_CONSTANT(16) << 20, 10);
  cJSON *collectives = measure_collectives(r);
  if (r->rank != 0) {
    cJSON_Delete(collectives);
    return TRUE;
  }

  CmParams params;
  cm_params_default(&params);
  g_autofree char *host = sanitized_host();
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *date = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  g_autofree char *cpu = cpu_model_name();
  g_autofree char *where = g_strdup_printf(
      "measured by stratsim-cpu-runner on %s (%s), %s, command `%s`, %d MPI ranks at once, "
      "OpenBLAS %s on 1 thread per rank", g_get_host_name(), cpu, date, command, r->size,
      openblas_get_config());
  /* The alpha-beta all-reduce of the fitted link (AutoDDL Table 2, p ranks). */
  int p = r->size;
  double beta = 1.0 / bandwidth;
  double model_small = (2 * p - 1) * lat + 2.0 * (p - 1) / p * 8 * beta;
  double model_large = (2 * p - 1) * lat + 2.0 * (p - 1) / p * (double)(G_GINT64_CONSTANT(16) << 20) * beta;

  cJSON *root = cJSON_CreateObject();
  g_autofree char *name = g_strdup_printf("host-%s", host);
  cJSON_AddStringToObject(root, "name", name);
  g_autofree char *desc = g_strdup_printf(
      "this machine (%s, %s) as a cluster of %d MPI ranks for stratsim-cpu-runner: one rank is "
      "one device", g_get_host_name(), cpu, r->size);
  cJSON_AddStringToObject(root, "description", desc);
  cJSON *dev = cJSON_AddObjectToObject(root, "device");
  g_autofree char *dev_name = g_strdup_printf("cpu-%s", host);
  cJSON_AddStringToObject(dev, "name", dev_name);
  g_autofree char *dev_desc = g_strdup_printf("one core of %s running one MPI rank", cpu);
  cJSON_AddStringToObject(dev, "description", dev_desc);
  double fp32 = gemm / params.matmul_efficiency / 1e12;
  cJSON *peak = cJSON_AddObjectToObject(dev, "peak_tflops");
  cJSON_AddNumberToObject(peak, "fp32", fp32);
  cJSON_AddNumberToObject(peak, "tf32", 0);
  cJSON_AddNumberToObject(peak, "fp16", fp32);
  cJSON_AddNumberToObject(peak, "bf16", fp32);
  cJSON_AddNumberToObject(dev, "vector_tflops", vector / params.vector_efficiency / 1e12);
  gint64 pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double mem_gib = pages > 0 && page > 0 ? (double)pages * page / p / (1024.0 * 1024 * 1024) : 1;
  cJSON_AddNumberToObject(dev, "memory_GiB", mem_gib);
  cJSON_AddNumberToObject(dev, "hbm_GBps", memory / params.memory_efficiency / 1e9);
  cJSON_AddNumberToObject(dev, "sm_count", 0);
  cJSON *src = cJSON_AddObjectToObject(dev, "sources");
  g_autofree char *s_fp32 = g_strdup_printf(
      "sgemm %dx%dx%d reached %.4g GFLOP/s (median of 5 after 2 warm-up, slowest rank; best of "
      "sizes 128-1024); stated as that / %.2f, the cost model's matmul efficiency; %s",
      gemm_n, gemm_n, gemm_n, gemm / 1e9, params.matmul_efficiency, where);
  cJSON_AddStringToObject(src, "peak_tflops.fp32", s_fp32);
  cJSON_AddStringToObject(src, "peak_tflops.tf32", "no TF32 on a CPU: fp32 GEMMs (cm_compute.c falls back)");
  cJSON_AddStringToObject(src, "peak_tflops.fp16", "the CPU runner computes fp16 steps in fp32: the fp32 figure");
  cJSON_AddStringToObject(src, "peak_tflops.bf16", "the CPU runner computes bf16 steps in fp32: the fp32 figure");
  g_autofree char *s_vec = g_strdup_printf(
      "saxpy on a 4096-float vector (L1-resident) reached %.4g GFLOP/s; stated as that / %.2f, "
      "the cost model's vector efficiency; %s", vector / 1e9, params.vector_efficiency, where);
  cJSON_AddStringToObject(src, "vector_tflops", s_vec);
  g_autofree char *s_mem = g_strdup_printf(
      "physical memory (sysconf) divided among the %d ranks; %s", p, where);
  cJSON_AddStringToObject(src, "memory_GiB", s_mem);
  g_autofree char *s_bw = g_strdup_printf(
      "a 128 MiB pass (64 MiB read, 64 MiB written, every rank at once) reached %.4g GB/s per "
      "rank (median of 5, slowest rank); stated as that / %.2f, the cost model's memory "
      "efficiency; %s", memory / 1e9, params.memory_efficiency, where);
  cJSON_AddStringToObject(src, "hbm_GBps", s_bw);
  cJSON_AddStringToObject(src, "sm_count", "no SMs: no GEMM wave quantization");
  cJSON_AddNumberToObject(root, "nodes", 1);
  cJSON_AddNumberToObject(root, "gpus_per_node", p);
  cJSON *intra = cJSON_AddObjectToObject(root, "intra");
  cJSON_AddStringToObject(intra, "kind", "shared-memory");
  cJSON_AddNumberToObject(intra, "bandwidth_GBps", bandwidth / 1e9);
  cJSON_AddNumberToObject(intra, "latency_us", lat * 1e6);
  g_autofree char *s_link = g_strdup_printf(
      "MPI ping-pong between ranks 0 and 1: half the round trip of 8 bytes %.3g us (median of "
      "1000), of 16 MiB %.4g ms (median of 10): %.4g GB/s. Check: MPI_Allreduce over %d ranks "
      "measured %.3g us at 8 B and %.4g ms at 16 MiB; this link's alpha-beta all-reduce "
      "(AutoDDL Table 2) predicts %.3g us and %.4g ms; %s",
      lat * 1e6, big * 1e3, bandwidth / 1e9, p, ar_small * 1e6, ar_large * 1e3,
      model_small * 1e6, model_large * 1e3, where);
  cJSON_AddStringToObject(intra, "source", s_link);
  cJSON *inter = cJSON_AddObjectToObject(root, "inter");
  cJSON_AddStringToObject(inter, "kind", "none");
  cJSON_AddNumberToObject(inter, "bandwidth_Gbps", bandwidth * 8 / 1e9);
  cJSON_AddNumberToObject(inter, "nics_per_node", 1);
  cJSON_AddNumberToObject(inter, "latency_us", lat * 1e6);
  cJSON_AddStringToObject(inter, "source",
                          "unused: one host (nodes=1); the intra-host figures, so that a spec "
                          "override nodes=N stays meaningful only as shared memory");
  cJSON *sources = cJSON_AddObjectToObject(root, "sources");
  cJSON_AddStringToObject(sources, "nodes", "one host");
  g_autofree char *s_gpn = g_strdup_printf("the MPI ranks the runner measured with (%d); %s", p, where);
  cJSON_AddStringToObject(sources, "gpus_per_node", s_gpn);
  char *printed = cJSON_Print(root);
  cJSON_Delete(root);
  g_autofree char *text = g_strdup_printf("%s\n", printed);
  cJSON_free(printed);
  /* The collectives file: host.json -> host.collectives.json */
  cJSON *coll = cJSON_CreateObject();
  cJSON_AddStringToObject(coll, "device", dev_name);
  g_autofree char *coll_source = g_strdup_printf(
      "MPI collectives over all %d ranks (MPI_COMM_WORLD), median of 5-20 after 2 warm-up, "
      "slowest rank; %s", p, where);
  cJSON_AddStringToObject(coll, "source", coll_source);
  cJSON_AddItemToObject(coll, "collectives", collectives);
  char *coll_printed = cJSON_Print(coll);
  cJSON_Delete(coll);
  g_autofree char *coll_text = g_strdup_printf("%s\n", coll_printed);
  cJSON_free(coll_printed);
  g_autofree char *stem = g_str_has_suffix(path, ".json") ? g_strndup(path, strlen(path) - 5) : g_strdup(path);
  g_autofree char *coll_path = g_strdup_printf("%s.collectives.json", stem);
  if (!g_file_set_contents(path, text, -1, error) ||
      !g_file_set_contents(coll_path, coll_text, -1, error))
    return FALSE;
  printf("host cluster: %s and %s (collectives for stratsim calibrate): sgemm %.4g GFLOP/s (n=%d), memory %.4g GB/s per rank, link %.3g us "
         "%.4g GB/s, all-reduce 8 B %.3g us (model %.3g us), 16 MiB %.4g ms (model %.4g ms)\n",
         path, coll_path, gemm / 1e9, gemm_n, memory / 1e9, lat * 1e6, bandwidth / 1e9, ar_small * 1e6,
         model_small * 1e6, ar_large * 1e3, model_large * 1e3);
  return TRUE;
}
