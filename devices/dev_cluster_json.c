/* devices/cluster_json — a resolved cluster as JSON, in SI units (bytes, bytes/s, seconds,
 * FLOP/s), with a fixed key order so the output is byte-for-byte reproducible:
 *   {"name", "description", "nodes", "gpus_per_node", "nics_per_node", "num_devices",
 *    "device": {"name", "description", "peak_flops": {"fp32", "tf32", "fp16", "bf16"},
 *               "vector_flops", "memory_bytes", "hbm_bandwidth_Bps"},
 *    "intra": {"kind", "bandwidth_Bps", "latency_s"}, "inter": {..., "nccl_latency_s",
 *    "net_step_latency_s", "net_simple_extra_s", "nccl_algo", "nccl_proto", "nccl_tuner"
 *    where the cluster sets them}, "nccl_version" where set, before "inter"}
 * It records what a run used; it is not the preset input format. */
#include "devices/dev_cluster-int.h"


static cJSON *kind_to_json(const DevKind *k) {
  cJSON *obj = cJSON_CreateObject();
  cJSON_AddStringToObject(obj, "name", k->name ? k->name : "");
  cJSON_AddStringToObject(obj, "description", k->description ? k->description : "");
  cJSON *peak = cJSON_AddObjectToObject(obj, "peak_flops");
  for (int d = 0; d < DEV_DTYPE_COUNT; d++)
    cJSON_AddNumberToObject(peak, dev_dtype_name((DevDtype)d), k->peak_flops[d]);
  cJSON_AddNumberToObject(obj, "vector_flops", k->vector_flops);
  cJSON_AddNumberToObject(obj, "memory_bytes", k->memory_bytes);
  cJSON_AddNumberToObject(obj, "hbm_bandwidth_Bps", k->hbm_bandwidth);
  return obj;
}

static cJSON *link_to_json(const DevLink *l) {
  cJSON *obj = cJSON_CreateObject();
  cJSON_AddStringToObject(obj, "kind", l->kind ? l->kind : "");
  cJSON_AddNumberToObject(obj, "bandwidth_Bps", l->bandwidth);
  cJSON_AddNumberToObject(obj, "latency_s", l->latency);
  return obj;
}

char *dev_cluster_to_json(const DevCluster *cluster) {
  g_return_val_if_fail(cluster != NULL, NULL);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "name", cluster->name ? cluster->name : "");
  cJSON_AddStringToObject(root, "description", cluster->description ? cluster->description : "");
  cJSON_AddNumberToObject(root, "nodes", cluster->nodes);
  cJSON_AddNumberToObject(root, "gpus_per_node", cluster->gpus_per_node);
  cJSON_AddNumberToObject(root, "nics_per_node", cluster->nics_per_node);
  cJSON_AddNumberToObject(root, "oversubscription", cluster->oversubscription);
  cJSON_AddNumberToObject(root, "num_devices", dev_cluster_num_devices(cluster));
  cJSON_AddItemToObject(root, "device", kind_to_json(&cluster->device));
  cJSON_AddItemToObject(root, "intra", link_to_json(&cluster->link[DEV_LINK_INTRA]));
  cJSON *inter = link_to_json(&cluster->link[DEV_LINK_INTER]);
  /* Only where set, so records of clusters without it keep their bytes. */
  if (cluster->net_latency > 0) cJSON_AddNumberToObject(inter, "nccl_latency_s", cluster->net_latency);
  if (cluster->net_step_latency > 0)
    cJSON_AddNumberToObject(inter, "net_step_latency_s", cluster->net_step_latency);
  if (cluster->net_simple_extra > 0)
    cJSON_AddNumberToObject(inter, "net_simple_extra_s", cluster->net_simple_extra);
  if (cluster->nccl_algo) cJSON_AddStringToObject(inter, "nccl_algo", cluster->nccl_algo);
  if (cluster->nccl_proto) cJSON_AddStringToObject(inter, "nccl_proto", cluster->nccl_proto);
  if (cluster->nccl_tuner) cJSON_AddStringToObject(inter, "nccl_tuner", cluster->nccl_tuner);
  if (cluster->nccl_version > 0) {
    char version[32];
    g_snprintf(version, sizeof version, "%d.%d.%d", cluster->nccl_version / 10000,
               cluster->nccl_version / 100 % 100, cluster->nccl_version % 100);
    cJSON_AddStringToObject(root, "nccl_version", version);
  }
  cJSON_AddItemToObject(root, "inter", inter);
  char *printed = cJSON_Print(root);
  cJSON_Delete(root);
  g_assert(printed != NULL); /* cJSON fails only when out of memory */
  char *text = g_strdup(printed); /* the caller frees with g_free, not cJSON's allocator */
  cJSON_free(printed);
  return text;
}
