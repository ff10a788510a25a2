/* cli/list — `stratsim list models|clusters|devices`: what is built in. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "devices/dev_cluster.h"
#include "model/mdl_graph.h"

static int list_clusters(void) {
  for (const char *const *n = dev_preset_names(); *n; n++) {
    GError *error = NULL;
    DevCluster *c = dev_cluster_parse_spec(*n, &error);
    if (!c) return cli_fail(error, cli_status_for(error));
    printf("%-16s %3d x %-2d %-10s intra %-8s %6.1f GB/s  inter %d x %5.1f Gb/s  %s\n", *n,
           c->nodes, c->gpus_per_node, c->device.name, c->link[DEV_LINK_INTRA].kind,
           c->link[DEV_LINK_INTRA].bandwidth / 1e9, c->nics_per_node,
           c->link[DEV_LINK_INTER].bandwidth * 8 / 1e9, c->description ? c->description : "");
    dev_cluster_free(c);
  }
  return CLI_EXIT_OK;
}

static int list_devices(void) {
  for (const char *const *n = dev_kind_names(); *n; n++) {
    DevKind k;
    GError *error = NULL;
    if (!dev_kind_lookup(*n, &k, &error)) return cli_fail(error, cli_status_for(error));
    printf("%-10s fp32 %6.1f  tf32 %6.1f  fp16 %6.1f  bf16 %6.1f  fp8 %6.1f TFLOP/s  %5.0f GiB  "
           "%5.0f GB/s\n",
           *n, k.peak_flops[DEV_DTYPE_FP32] / 1e12, k.peak_flops[DEV_DTYPE_TF32] / 1e12,
           k.peak_flops[DEV_DTYPE_FP16] / 1e12, k.peak_flops[DEV_DTYPE_BF16] / 1e12,
           k.peak_flops[DEV_DTYPE_FP8] / 1e12,
           k.memory_bytes / (1024.0 * 1024 * 1024), k.hbm_bandwidth / 1e9);
    dev_kind_clear(&k);
  }
  return CLI_EXIT_OK;
}

static int list_models(void) {
  for (const char *const *n = mdl_zoo_names(); *n; n++) printf("%-12s %s\n", *n, mdl_zoo_describe(*n));
  printf("%-12s %s\n", "gpt:...", "gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V,batch=B,ffn=F");
  printf("%-12s %s\n", "llama:...",
         "llama:layers=L,hidden=H,heads=A,kv_heads=G,ffn=F,seq=S,vocab=V,batch=B,head_dim=D,"
         "tied=0|1,attn=flash|unfused");
  printf("%-12s %s\n", "mlp:...", "mlp:layers=L,hidden=H,batch=B");
  printf("%-12s %s\n", "FILE.json", "an operator graph in JSON (model/README.md)");
  return CLI_EXIT_OK;
}

int cli_list(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "models") == 0) return list_models();
  if (strcmp(what, "clusters") == 0) return list_clusters();
  if (strcmp(what, "devices") == 0) return list_devices();
  fprintf(stderr, "stratsim list: say what to list: models, clusters or devices\n");
  return CLI_EXIT_BAD_INPUT;
}
