/* devices/cluster — a cluster from JSON in the preset format (devices/presets/NAME.json):
 *   {"name", "description", "device": KIND or {inline device}, "nodes", "gpus_per_node",
 *    "intra": {"kind", "bandwidth_GBps", "latency_us", "source"},
 *    "inter": {"kind", "bandwidth_Gbps", "nics_per_node", "latency_us", "source",
 *              optional "oversubscription", optional "nccl_latency_us",
 *              optional "net_step_latency_us", "net_simple_extra_us",
 *              optional "nccl_algo", "nccl_proto" (NCCL_ALGO / NCCL_PROTO of the network's
 *              job profile, devices/dev_nccl_env.c), optional "nccl_tuner" (the tuner
 *              plugin the network's NCCL plugin brings and NCCL loads by default)},
 *    optional "nccl_version": the NCCL release its jobs run ("2.19.3"),
 *    "sources": {...}}
 * Units are converted to SI on the way in (GB/s x1e9, Gb/s x1e9/8, us x1e-6); every figure is
 * range-checked, so a DevCluster that exists is valid: counts >= 1, bandwidths > 0 and finite,
 * latencies >= 0 and finite. `source`/`sources` are documentation and are not kept. Link kinds
 * are free text ("nvlink", "nvswitch", "pcie", "infiniband", "aries", "ethernet", ...). */
#include "devices/dev_cluster-int.h"

#include <string.h>

static gboolean read_count(const cJSON *obj, const char *prefix, const char *field,
                           const char *where, int *out, GError **error) {
  double raw;
  if (!dev_json_number(obj, prefix, field, where, &raw, error)) return FALSE;
  g_autofree char *what = g_strdup_printf("%s: field '%s%s%s'", where, prefix ? prefix : "",
                                          prefix ? "." : "", field);
  return dev_check_count(what, raw, out, error);
}

/* One link class: @bandwidth_field is in GB/s or Gb/s, converted with @bandwidth_scale. */
static gboolean read_link(const cJSON *root, const char *field, const char *bandwidth_field,
                          double bandwidth_scale, const char *where, DevLink *out,
                          GError **error) {
  const cJSON *obj;
  const char *kind;
  double bandwidth, latency;
  if (!dev_json_object(root, NULL, field, where, &obj, error) ||
      !dev_json_string(obj, field, "kind", where, &kind, error) ||
      !dev_json_number(obj, field, bandwidth_field, where, &bandwidth, error) ||
      !dev_json_number(obj, field, "latency_us", where, &latency, error))
    return FALSE;
  g_autofree char *bw_what = g_strdup_printf("%s: field '%s.%s'", where, field, bandwidth_field);
  g_autofree char *lat_what = g_strdup_printf("%s: field '%s.latency_us'", where, field);
  if (!dev_check_bandwidth(bw_what, bandwidth, bandwidth * bandwidth_scale, error) ||
      !dev_check_latency(lat_what, latency, latency * DEV_US_TO_S, error))
    return FALSE;
  out->kind = g_strdup(kind);
  out->bandwidth = bandwidth * bandwidth_scale;
  out->latency = latency * DEV_US_TO_S;
  return TRUE;
}

/* `device`: a kind name from the built-in table or an inline device object. */
static gboolean read_device(const cJSON *root, const char *where, DevKind *out, GError **error) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "device");
  if (cJSON_IsString(item) && item->valuestring) {
    if (dev_kind_lookup(item->valuestring, out, error)) return TRUE;
    g_prefix_error(error, "%s: ", where);
    return FALSE;
  }
  if (cJSON_IsObject(item)) {
    g_autofree char *device_where = g_strdup_printf("%s: device", where);
    return dev_kind_from_cjson(item, device_where, out, error);
  }
  memset(out, 0, sizeof *out);
  g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE,
              item ? "%s: field 'device' must be a device kind name or a device object"
                   : "%s: field 'device' is missing",
              where);
  return FALSE;
}

/* Optional "inter.oversubscription": 1 (non-blocking) when absent; 1..1000 otherwise. */
static gboolean read_oversubscription(const cJSON *root, const char *where, double *out,
                                      GError **error) {
  const cJSON *inter = cJSON_GetObjectItemCaseSensitive(root, "inter");
  *out = 1.0;
  if (!cJSON_GetObjectItemCaseSensitive(inter, "oversubscription")) return TRUE;
  double v;
  if (!dev_json_number(inter, "inter", "oversubscription", where, &v, error)) return FALSE;
  g_autofree char *what = g_strdup_printf("%s: field 'inter.oversubscription'", where);
  return dev_check_oversubscription(what, v, out, error);
}

/* Optional latencies of "inter" in us: "nccl_latency_us" (the NCCL network plugin's reported
 * latency, DevCluster.net_latency), "net_step_latency_us" and "net_simple_extra_us"
 * (.net_step_latency, .net_simple_extra); 0 when absent. */
static gboolean read_net_step(const cJSON *root, const char *field, const char *where, double *out,
                              GError **error) {
  const cJSON *inter = cJSON_GetObjectItemCaseSensitive(root, "inter");
  *out = 0.0;
  if (!cJSON_GetObjectItemCaseSensitive(inter, field)) return TRUE;
  double v;
  if (!dev_json_number(inter, "inter", field, where, &v, error)) return FALSE;
  g_autofree char *what = g_strdup_printf("%s: field 'inter.%s'", where, field);
  if (!dev_check_latency(what, v, v * DEV_US_TO_S, error)) return FALSE;
  *out = v * DEV_US_TO_S;
  return TRUE;
}

/* Optional "inter.nccl_algo" and "inter.nccl_proto": NCCL_ALGO / NCCL_PROTO as the network's
 * documented job profile sets them; NULL (NCCL's defaults) when absent. */
static gboolean read_nccl_list(const cJSON *root, const char *field, gboolean protocols, const char *where,
                               char **out, GError **error) {
  const cJSON *inter = cJSON_GetObjectItemCaseSensitive(root, "inter");
  *out = NULL;
  if (!cJSON_GetObjectItemCaseSensitive(inter, field)) return TRUE;
  const char *text;
  if (!dev_json_string(inter, "inter", field, where, &text, error)) return FALSE;
  g_autofree char *what = g_strdup_printf("%s: field 'inter.%s'", where, field);
  if (!dev_check_nccl_list(what, text, protocols, error)) return FALSE;
  *out = g_strdup(text);
  return TRUE;
}

/* Optional "inter.nccl_tuner": the tuner plugin NCCL loads by default there; NULL when absent. */
static gboolean read_nccl_tuner(const cJSON *root, const char *where, char **out, GError **error) {
  const cJSON *inter = cJSON_GetObjectItemCaseSensitive(root, "inter");
  *out = NULL;
  if (!cJSON_GetObjectItemCaseSensitive(inter, "nccl_tuner")) return TRUE;
  const char *text;
  if (!dev_json_string(inter, "inter", "nccl_tuner", where, &text, error)) return FALSE;
  g_autofree char *what = g_strdup_printf("%s: field 'inter.nccl_tuner'", where);
  if (!dev_check_nccl_tuner(what, text, error)) return FALSE;
  *out = g_strdup(text);
  return TRUE;
}

/* Optional "nccl_version": the NCCL release the cluster's jobs run; 0 (not stated) when absent. */
static gboolean read_nccl_version(const cJSON *root, const char *where, int *out, GError **error) {
  *out = 0;
  if (!cJSON_GetObjectItemCaseSensitive(root, "nccl_version")) return TRUE;
  const char *text;
  if (!dev_json_string(root, NULL, "nccl_version", where, &text, error)) return FALSE;
  g_autofree char *what = g_strdup_printf("%s: field 'nccl_version'", where);
  return dev_check_nccl_version(what, text, out, error);
}

DevCluster *dev_cluster_from_json(const char *json_text, const char *origin, GError **error) {
  g_return_val_if_fail(json_text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  if (!origin) origin = "(unnamed)";
  g_autofree char *where = g_strdup_printf("cluster '%s'", origin);
  cJSON *root = dev_json_parse(json_text, where, error);
  if (!root) return NULL;
  DevCluster *c = g_new0(DevCluster, 1);
  const char *name, *description;
  if (!cJSON_IsObject(root)) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s: the text must be a JSON object", where);
    goto err;
  }
  if (!dev_json_optional_string(root, "name", where, origin, &name, error) ||
      !dev_json_optional_string(root, "description", where, "", &description, error))
    goto err;
  c->name = g_strdup(name);
  c->description = g_strdup(description);
  if (!read_device(root, where, &c->device, error) ||
      !read_count(root, NULL, "nodes", where, &c->nodes, error) ||
      !read_count(root, NULL, "gpus_per_node", where, &c->gpus_per_node, error) ||
      !read_link(root, "intra", "bandwidth_GBps", DEV_GBPS_TO_BPS, where,
                 &c->link[DEV_LINK_INTRA], error) ||
      !read_link(root, "inter", "bandwidth_Gbps", DEV_GBITPS_TO_BPS, where,
                 &c->link[DEV_LINK_INTER], error) ||
      !read_count(cJSON_GetObjectItemCaseSensitive(root, "inter"), "inter", "nics_per_node", where,
                  &c->nics_per_node, error) ||
      !read_oversubscription(root, where, &c->oversubscription, error) ||
      !read_net_step(root, "nccl_latency_us", where, &c->net_latency, error) ||
      !read_net_step(root, "net_step_latency_us", where, &c->net_step_latency, error) ||
      !read_net_step(root, "net_simple_extra_us", where, &c->net_simple_extra, error) ||
      !read_nccl_list(root, "nccl_algo", FALSE, where, &c->nccl_algo, error) ||
      !read_nccl_list(root, "nccl_proto", TRUE, where, &c->nccl_proto, error) ||
      !read_nccl_tuner(root, where, &c->nccl_tuner, error) ||
      !read_nccl_version(root, where, &c->nccl_version, error) ||
      !dev_check_devices(where, c->nodes, c->gpus_per_node, error))
    goto err;
  cJSON_Delete(root);
  return c;
err:
  cJSON_Delete(root);
  dev_cluster_free(c);
  return NULL;
}

DevCluster *dev_cluster_copy(const DevCluster *cluster) {
  g_return_val_if_fail(cluster != NULL, NULL);
  DevCluster *c = g_new0(DevCluster, 1);
  *c = *cluster;
  c->name = g_strdup(cluster->name);
  c->description = g_strdup(cluster->description);
  dev_kind_copy(&c->device, &cluster->device);
  for (int l = 0; l < DEV_LINK_COUNT; l++) c->link[l].kind = g_strdup(cluster->link[l].kind);
  c->nccl_algo = g_strdup(cluster->nccl_algo);
  c->nccl_proto = g_strdup(cluster->nccl_proto);
  c->nccl_tuner = g_strdup(cluster->nccl_tuner);
  return c;
}

void dev_cluster_free(DevCluster *cluster) {
  if (!cluster) return;
  g_free(cluster->name);
  g_free(cluster->description);
  dev_kind_clear(&cluster->device);
  for (int l = 0; l < DEV_LINK_COUNT; l++) g_free(cluster->link[l].kind);
  g_free(cluster->nccl_algo);
  g_free(cluster->nccl_proto);
  g_free(cluster->nccl_tuner);
  g_free(cluster);
}
