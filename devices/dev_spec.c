/* devices/spec — cluster specs as users type them: `PRESET[:key=value,...]`, or a path to a
 * cluster JSON file (containing '/' or ending in ".json"), optionally followed by
 * `:key=value,...` after the ".json". Overrides are applied left to right with
 * dev_cluster_set, which checks every value as the JSON reader does and leaves the cluster
 * unchanged on error. */
#include "devices/dev_cluster-int.h"
#include "devices/dev_presets.h"

#include <string.h>

typedef enum {
  OVERRIDE_COUNT,
  OVERRIDE_DEVICE,
  OVERRIDE_BANDWIDTH,
  OVERRIDE_LATENCY,
  OVERRIDE_RATIO,
  OVERRIDE_NET_LATENCY,
  OVERRIDE_NET_STEP,
  OVERRIDE_NET_SIMPLE,
  OVERRIDE_NCCL_ALGO,
  OVERRIDE_NCCL_PROTO,
  OVERRIDE_NCCL_TUNER,
  OVERRIDE_NCCL_VERSION
} OverrideType;

typedef struct {
  const char *key;
  OverrideType type;
  DevLinkClass link; /* bandwidth and latency keys */
  double scale;      /* preset units -> SI */
} Override;

static const Override overrides[] = {
    {"nodes", OVERRIDE_COUNT, 0, 1},
    {"gpus_per_node", OVERRIDE_COUNT, 0, 1},
    {"nics_per_node", OVERRIDE_COUNT, 0, 1},
    {"device", OVERRIDE_DEVICE, 0, 1},
    {"intra_bw_GBps", OVERRIDE_BANDWIDTH, DEV_LINK_INTRA, DEV_GBPS_TO_BPS},
    {"intra_latency_us", OVERRIDE_LATENCY, DEV_LINK_INTRA, DEV_US_TO_S},
    {"inter_bw_Gbps", OVERRIDE_BANDWIDTH, DEV_LINK_INTER, DEV_GBITPS_TO_BPS},
    {"inter_latency_us", OVERRIDE_LATENCY, DEV_LINK_INTER, DEV_US_TO_S},
    {"oversubscription", OVERRIDE_RATIO, DEV_LINK_INTER, 1},
    {"inter_nccl_latency_us", OVERRIDE_NET_LATENCY, DEV_LINK_INTER, DEV_US_TO_S},
    {"inter_net_step_latency_us", OVERRIDE_NET_STEP, DEV_LINK_INTER, DEV_US_TO_S},
    {"inter_net_simple_extra_us", OVERRIDE_NET_SIMPLE, DEV_LINK_INTER, DEV_US_TO_S},
    {"inter_nccl_algo", OVERRIDE_NCCL_ALGO, DEV_LINK_INTER, 1},
    {"inter_nccl_proto", OVERRIDE_NCCL_PROTO, DEV_LINK_INTER, 1},
    {"inter_nccl_tuner", OVERRIDE_NCCL_TUNER, DEV_LINK_INTER, 1},
    {"nccl_version", OVERRIDE_NCCL_VERSION, 0, 1},
};

/* inter_nccl_algo / inter_nccl_proto: NCCL's names joined by '+' (',' separates overrides),
 * or "default" for NCCL's own choice. */
static gboolean set_nccl_list(DevCluster *cluster, const char *what, const char *value, gboolean protocols,
                              GError **error) {
  char **field = protocols ? &cluster->nccl_proto : &cluster->nccl_algo;
  if (strcmp(value, "default") == 0) {
    g_clear_pointer(field, g_free);
    return TRUE;
  }
  g_autofree char *text = g_strdup(value);
  g_strdelimit(text, "+", ',');
  if (!dev_check_nccl_list(what, text, protocols, error)) return FALSE;
  g_free(*field);
  *field = g_steal_pointer(&text);
  return TRUE;
}

static char *override_keys(void) {
  const char *keys[G_N_ELEMENTS(overrides) + 1];
  for (gsize i = 0; i < G_N_ELEMENTS(overrides); i++) keys[i] = overrides[i].key;
  keys[G_N_ELEMENTS(overrides)] = NULL;
  return dev_names_joined(keys);
}

static int *count_field(DevCluster *c, const char *key) {
  if (strcmp(key, "nodes") == 0) return &c->nodes;
  if (strcmp(key, "gpus_per_node") == 0) return &c->gpus_per_node;
  return &c->nics_per_node;
}

gboolean dev_cluster_set(DevCluster *cluster, const char *key, const char *value, GError **error) {
  g_return_val_if_fail(cluster != NULL && key != NULL && value != NULL, FALSE);
  const char *name = cluster->name ? cluster->name : "(unnamed)";
  const Override *o = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(overrides); i++)
    if (strcmp(overrides[i].key, key) == 0) o = &overrides[i];
  if (!o) {
    g_autofree char *valid = override_keys();
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE,
                "cluster '%s': unknown override '%s' (valid keys: %s)", name, key, valid);
    return FALSE;
  }
  g_autofree char *what = g_strdup_printf("cluster '%s': override '%s'", name, key);
  if (o->type == OVERRIDE_DEVICE) {
    DevKind kind;
    if (!dev_kind_lookup(value, &kind, error)) {
      g_prefix_error(error, "%s: ", what);
      return FALSE;
    }
    dev_kind_clear(&cluster->device);
    cluster->device = kind;
    return TRUE;
  }
  if (o->type == OVERRIDE_NCCL_ALGO || o->type == OVERRIDE_NCCL_PROTO)
    return set_nccl_list(cluster, what, value, o->type == OVERRIDE_NCCL_PROTO, error);
  if (o->type == OVERRIDE_NCCL_TUNER) {
    if (strcmp(value, "default") != 0 && !dev_check_nccl_tuner(what, value, error)) return FALSE;
    g_free(cluster->nccl_tuner);
    cluster->nccl_tuner = strcmp(value, "default") != 0 ? g_strdup(value) : NULL;
    return TRUE;
  }
  if (o->type == OVERRIDE_NCCL_VERSION) {
    int code = 0;
    if (strcmp(value, "default") != 0 && !dev_check_nccl_version(what, value, &code, error)) return FALSE;
    cluster->nccl_version = code;
    return TRUE;
  }
  char *end = NULL;
  double raw = g_ascii_strtod(value, &end);
  if (!*value || end == value || *end != '\0') {
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "%s needs a number, got '%s'", what, value);
    return FALSE;
  }
  switch (o->type) {
  case OVERRIDE_COUNT: {
    int n, *field = count_field(cluster, key);
    if (!dev_check_count(what, raw, &n, error)) return FALSE;
    int nodes = field == &cluster->nodes ? n : cluster->nodes;
    int gpus = field == &cluster->gpus_per_node ? n : cluster->gpus_per_node;
    g_autofree char *where = g_strdup_printf("cluster '%s'", name);
    if (!dev_check_devices(where, nodes, gpus, error)) return FALSE;
    *field = n;
    return TRUE;
  }
  case OVERRIDE_BANDWIDTH:
    if (!dev_check_bandwidth(what, raw, raw * o->scale, error)) return FALSE;
    cluster->link[o->link].bandwidth = raw * o->scale;
    return TRUE;
  case OVERRIDE_LATENCY:
    if (!dev_check_latency(what, raw, raw * o->scale, error)) return FALSE;
    cluster->link[o->link].latency = raw * o->scale;
    return TRUE;
  case OVERRIDE_RATIO:
    return dev_check_oversubscription(what, raw, &cluster->oversubscription, error);
  case OVERRIDE_NET_LATENCY:
  case OVERRIDE_NET_STEP:
  case OVERRIDE_NET_SIMPLE:
    if (!dev_check_latency(what, raw, raw * o->scale, error)) return FALSE;
    *(o->type == OVERRIDE_NET_LATENCY ? &cluster->net_latency
      : o->type == OVERRIDE_NET_STEP  ? &cluster->net_step_latency
                                      : &cluster->net_simple_extra) = raw * o->scale;
    return TRUE;
  default:
    g_return_val_if_reached(FALSE);
  }
}

/* Applies "key=value,key=value" to @c. */
static gboolean apply_overrides(DevCluster *c, const char *text, GError **error) {
  g_auto(GStrv) items = g_strsplit(text, ",", -1);
  for (char **item = items; *item; item++) {
    char *eq = strchr(*item, '=');
    if (!eq || eq == *item) {
      g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE,
                  "cluster '%s': override '%s' is not key=value", c->name, *item);
      return FALSE;
    }
    *eq = '\0';
    if (!dev_cluster_set(c, *item, eq + 1, error)) return FALSE;
  }
  return TRUE;
}

static DevCluster *cluster_from_file(const char *path, GError **error) {
  g_autofree char *text = NULL;
  GError *file_error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &file_error)) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_PARSE, "cannot read cluster file '%s': %s", path,
                file_error->message);
    g_error_free(file_error);
    return NULL;
  }
  DevCluster *c = dev_cluster_from_json(text, path, error);
  if (c) {
    g_free(c->name);
    c->name = g_strdup(path);
  }
  return c;
}

static DevCluster *cluster_from_preset(const char *name, GError **error) {
  const char *text = *name ? dev_presets_cluster_text(name) : NULL;
  if (!text) {
    g_autofree char *known = dev_names_joined(dev_preset_names());
    g_set_error(error, DEV_ERROR, DEV_ERROR_UNKNOWN_PRESET,
                "unknown cluster preset '%s' (known: %s; or give a path to a cluster JSON file)",
                name, known);
    return NULL;
  }
  return dev_cluster_from_json(text, name, error);
}

DevCluster *dev_cluster_parse_spec(const char *spec, GError **error) {
  g_return_val_if_fail(spec != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  const char *colon = strchr(spec, ':');
  g_autofree char *head = colon ? g_strndup(spec, colon - spec) : g_strdup(spec);
  const char *overrides_text = colon ? colon + 1 : NULL;
  DevCluster *c;
  if (strchr(spec, '/') || g_str_has_suffix(head, ".json") || g_str_has_suffix(spec, ".json")) {
    /* A path; overrides only after a ".json:", so other colons stay part of the path. */
    const char *json_colon = g_strrstr(spec, ".json:");
    g_free(head);
    if (g_str_has_suffix(spec, ".json") || !json_colon) {
      head = g_strdup(spec);
      overrides_text = NULL;
    } else {
      head = g_strndup(spec, json_colon + strlen(".json") - spec);
      overrides_text = json_colon + strlen(".json:");
    }
    c = cluster_from_file(head, error);
  } else {
    c = cluster_from_preset(head, error);
  }
  if (c && overrides_text && !apply_overrides(c, overrides_text, error)) {
    dev_cluster_free(c);
    return NULL;
  }
  return c;
}
