/* cli/collective — `stratsim collective --kind K --bytes N --ranks R --cluster C
 * [--calibration NAME] [--json] [--db FILE]`: the predicted time and bus bandwidth of one
 * collective over ranks 0..R-1 (devices 0..R-1: hosts filled first, as a launcher places
 * them), and the algorithm chosen. */
#include "cli/cli.h"
#include "cli/cli_outputs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "costmodel/cm_tuner.h"
#include "session/ses_session.h"

/* A size per rank: "N" bytes, or N with a unit (issue 17, item 9): K, M, G, T as nccl-tests'
 * -b/-e read them (KiB, MiB, GiB, TiB); KiB, MiB, GiB, TiB; KB, MB, GB, TB in SI (1000^n), as
 * written in NCCL's and vendors' tables; any case. From 1 byte to 1 PiB per rank (more is
 * absurd: README, "Limits"). */
static gboolean parse_bytes(const char *text, double *out) {
  static const struct { const char *suffix; double unit; } units[] = {
      {"", 1},          {"B", 1},
      {"K", 0x1p10},    {"KiB", 0x1p10}, {"KB", 1e3},
      {"M", 0x1p20},    {"MiB", 0x1p20}, {"MB", 1e6},
      {"G", 0x1p30},    {"GiB", 0x1p30}, {"GB", 1e9},
      {"T", 0x1p40},    {"TiB", 0x1p40}, {"TB", 1e12},
  };
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod(text, &end);
  if (end == text || errno != 0 || !isfinite(v)) return FALSE;
  while (*end == ' ') end++;
  for (gsize i = 0; i < G_N_ELEMENTS(units); i++) {
    if (g_ascii_strcasecmp(end, units[i].suffix) != 0) continue;
    double bytes = v * units[i].unit;
    if (!(bytes >= 1) || bytes > 0x1p50) return FALSE;
    *out = bytes;
    return TRUE;
  }
  return FALSE;
}

static void print_time(double s) {
  if (s < 1e-3) printf("%.4g us", s * 1e6);
  else if (s < 1) printf("%.4g ms", s * 1e3);
  else printf("%.4g s", s);
}

static void print_bytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) printf("%.4g GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) printf("%.4g MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) printf("%.4g KiB", b / 1024.0);
  else printf("%.0f B", b);
}

/* The cluster whose network figures entered NCCL's model (a covered collective across hosts):
 * the plugin's reported latency (NCCL's choice) and the network's own step latency (the
 * time); NULL otherwise. */
static const DevCluster *network_of(const CmCollectiveEstimate *e, const DevCluster *cluster) {
  return e->shape.hosts > 1 && cm_nccl_covers(e->kind) ? cluster : NULL;
}

static void print_text(const CmCollectiveEstimate *e, const char *cluster_spec,
                       const char *calibration, const DevCluster *net) {
  const char *links[DEV_LINK_COUNT] = {"intra-host", "inter-host"};
  printf("stratsim collective: %s of ", cm_collective_name(e->kind));
  print_bytes(e->bytes);
  printf(" (%.0f bytes) over %d ranks on %d host%s of %s\n", e->bytes, e->shape.ranks,
         e->shape.hosts, e->shape.hosts == 1 ? "" : "s", cluster_spec);
  printf("  algorithm    %s%s%s: %d intra-host + %d inter-host steps\n", cm_algorithm_name(e->algorithm),
         e->protocol >= 0 ? "/" : "", e->protocol >= 0 ? cm_protocol_name((CmProtocol)e->protocol) : "",
         e->steps[DEV_LINK_INTRA], e->steps[DEV_LINK_INTER]);
  printf("  time         ");
  print_time(e->time_s);
  printf("  (%s)\n", cm_time_source_name(e->source));
  printf("  algbw        %.4g GB/s\n", e->algbw / 1e9);
  printf("  busbw        %.4g GB/s\n", e->busbw / 1e9);
  printf("  candidates  ");
  for (int a = 0; a < CM_ALGO_COUNT; a++) {
    if (isnan(e->candidates[a])) continue;
    printf(" %s ", cm_algorithm_name((CmAlgorithm)a));
    print_time(e->candidates[a]);
    printf(";");
  }
  printf("\n");
  if (net && net->net_latency > 0)
    printf("  network      the NIC plugin reports %.4g us a network step: NCCL's tuner counts it in "
           "its pick, the time does not\n", net->net_latency * 1e6);
  if (net && net->net_step_latency > 0)
    printf("  network      a network step takes %.4g us (+%.4g with Simple) in the time, the "
           "network's own figure (NCCL's tuner keeps its hwLat[NET])\n",
           net->net_step_latency * 1e6, net->net_simple_extra * 1e6);
  for (int i = 0; e->nphases > 1 && i < e->nphases; i++) {
    const CmCollectivePhase *ph = &e->phases[i];
    printf("  phase %d      %s (%s) over %d ranks, %s, ", i + 1, cm_collective_name(ph->kind),
           cm_algorithm_name(ph->algorithm), ph->ranks, links[ph->link]);
    print_bytes(ph->bytes);
    printf(": ");
    print_time(ph->time_s);
    printf("\n");
  }
  if (calibration) {
    printf("  calibration  %s (model alone: ", calibration);
    print_time(e->model_time_s);
    printf(")\n");
  } else {
    printf("  calibration  none: the cluster's preset link figures\n");
  }
}

static char *estimate_json(const CmCollectiveEstimate *e, const char *cluster_spec,
                           const char *calibration, const DevCluster *net) {
  const char *links[DEV_LINK_COUNT] = {"intra", "inter"};
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "kind", cm_collective_name(e->kind));
  cJSON_AddNumberToObject(j, "ranks", e->shape.ranks);
  cJSON_AddNumberToObject(j, "nodes", e->shape.hosts);
  cJSON_AddNumberToObject(j, "bytes", e->bytes);
  cJSON_AddStringToObject(j, "cluster", cluster_spec);
  /* What the time came from: the model's algorithm, or the calibration's regime. */
  cJSON_AddStringToObject(j, "algorithm", e->source == CM_TIME_MODEL ? cm_algorithm_name(e->algorithm)
                                                                      : cm_time_source_name(e->source));
  cJSON_AddStringToObject(j, "model_algorithm", cm_algorithm_name(e->algorithm));
  if (e->protocol >= 0) cJSON_AddStringToObject(j, "protocol", cm_protocol_name((CmProtocol)e->protocol));
  else cJSON_AddNullToObject(j, "protocol");
  cJSON_AddNumberToObject(j, "time_s", e->time_s);
  cJSON_AddNumberToObject(j, "model_time_s", e->model_time_s);
  cJSON_AddStringToObject(j, "time_source", cm_time_source_name(e->source));
  cJSON_AddNumberToObject(j, "algbw_GBps", e->algbw / 1e9);
  cJSON_AddNumberToObject(j, "busbw_GBps", e->busbw / 1e9);
  if (calibration) cJSON_AddStringToObject(j, "calibration", calibration);
  else cJSON_AddNullToObject(j, "calibration");
  if (net && net->net_latency > 0) cJSON_AddNumberToObject(j, "nccl_net_latency_s", net->net_latency);
  if (net && net->net_step_latency > 0) {
    cJSON_AddNumberToObject(j, "net_step_latency_s", net->net_step_latency);
    cJSON_AddNumberToObject(j, "net_simple_extra_s", net->net_simple_extra);
  }
  cJSON *steps = cJSON_AddObjectToObject(j, "steps");
  for (int l = 0; l < DEV_LINK_COUNT; l++) cJSON_AddNumberToObject(steps, links[l], e->steps[l]);
  cJSON *phases = cJSON_AddArrayToObject(j, "phases");
  for (int i = 0; i < e->nphases; i++) {
    const CmCollectivePhase *ph = &e->phases[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", cm_collective_name(ph->kind));
    cJSON_AddStringToObject(o, "algorithm", cm_algorithm_name(ph->algorithm));
    cJSON_AddStringToObject(o, "link", links[ph->link]);
    cJSON_AddNumberToObject(o, "ranks", ph->ranks);
    cJSON_AddNumberToObject(o, "bytes", ph->bytes);
    cJSON_AddNumberToObject(o, "time_s", ph->time_s);
    cJSON_AddItemToArray(phases, o);
  }
  cJSON *cand = cJSON_AddObjectToObject(j, "candidates");
  for (int a = 0; a < CM_ALGO_COUNT; a++)
    if (!isnan(e->candidates[a]))
      cJSON_AddNumberToObject(cand, cm_algorithm_name((CmAlgorithm)a), e->candidates[a]);
  char *text = cJSON_PrintUnformatted(j);
  char *out = g_strdup(text);
  cJSON_free(text);
  cJSON_Delete(j);
  return out;
}

int cli_collective(int argc, char **argv) {
  g_autofree char *kind_name = NULL, *bytes_text = NULL, *cluster_spec = NULL;
  g_autofree char *calibration_name = NULL, *db_path = NULL;
  int ranks = G_MININT; /* unset */
  gboolean json = FALSE;
  GOptionEntry entries[] = {
      {"kind", 'k', 0, G_OPTION_ARG_STRING, &kind_name, "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or send_recv", "K"},
      {"bytes", 'b', 0, G_OPTION_ARG_STRING, &bytes_text, "size per rank as nccl-tests counts it: N bytes, or N with K/KiB, M/MiB, G/GiB, T/TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)", "N"},
      {"ranks", 'r', 0, G_OPTION_ARG_INT, &ranks, "ranks, placed on devices 0..R-1 (hosts filled first)", "R"},
      {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_spec, "cluster: PRESET[:key=value,...] or a JSON file", "C"},
      {"calibration", 0, 0, G_OPTION_ARG_STRING, &calibration_name, "use calibration NAME from the database (stratsim calibrate)", "NAME"},
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print one JSON object", NULL},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default results/stratsim.db)", "FILE"},
      {NULL}};
  if (!cli_parse_options("collective", "Predicts the time of one collective.", entries, &argc, &argv))
    return CLI_EXIT_BAD_INPUT;
  if (!kind_name || !bytes_text || ranks == G_MININT || !cluster_spec) {
    fprintf(stderr, "stratsim collective: --kind, --bytes, --ranks and --cluster are required\n");
    return CLI_EXIT_BAD_INPUT;
  }
  CmCollective kind;
  if (!cm_collective_parse(kind_name, &kind)) {
    fprintf(stderr, "stratsim collective: unknown collective '%s' (all_reduce, all_gather, "
                    "reduce_scatter, all_to_all, broadcast, reduce, send_recv)\n", kind_name);
    return CLI_EXIT_BAD_INPUT;
  }
  double bytes;
  if (!parse_bytes(bytes_text, &bytes)) {
    fprintf(stderr,
            "stratsim collective: --bytes '%s' is not a size from 1 byte to 1 PiB (N, or N with "
            "K, M, G, T or KiB.. (powers of 1024), KB, MB, GB, TB (powers of 1000))\n",
            bytes_text);
    return CLI_EXIT_BAD_INPUT;
  }
  if (ranks < 2) {
    fprintf(stderr, "stratsim collective: --ranks %d: a collective needs 2 ranks or more\n", ranks);
    return CLI_EXIT_BAD_INPUT;
  }
  if (!db_path) db_path = cli_results_path("stratsim.db"); /* cli_outputs.h */

  GError *error = NULL;
  int status = CLI_EXIT_OK;
  int *devices = NULL;
  /* Read only: a collective's estimate stores nothing. */
  SesSpecs specs = {.cluster = cluster_spec, .db_path = db_path, .read_only = TRUE,
                    .calibration = calibration_name, .no_profiles = TRUE};
  SesSession *session = ses_session_new_from_specs(&specs, &error);
  if (!session) {
    status = cli_fail(error, cli_status_for(error));
    goto out;
  }
  const DevCluster *cluster = ses_session_cluster(session);
  const CmCalibration *calibration = ses_session_params(session)->calibration;
  if (ranks > dev_cluster_num_devices(cluster)) {
    fprintf(stderr, "stratsim collective: --ranks %d is more than the %d GPUs of %s\n", ranks,
            dev_cluster_num_devices(cluster), cluster_spec);
    status = CLI_EXIT_BAD_INPUT;
    goto out;
  }
  if (calibration) {
    g_autofree char *mismatch = cm_calibration_cluster_mismatch(calibration, cluster);
    if (mismatch) fprintf(stderr, "stratsim collective: warning: %s\n", mismatch);
  }
  devices = g_new(int, ranks);
  for (int i = 0; i < ranks; i++) devices[i] = i;
  CmCollectiveEstimate e = cm_collective_estimate(cluster, kind, devices, ranks, bytes, calibration);
  if (json) {
    g_autofree char *text = estimate_json(&e, cluster_spec, calibration_name, network_of(&e, cluster));
    printf("%s\n", text);
  } else {
    print_text(&e, cluster_spec, calibration_name, network_of(&e, cluster));
  }
out:
  g_free(devices);
  ses_session_free(session);
  return status;
}
