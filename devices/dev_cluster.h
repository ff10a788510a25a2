/* devices — the cluster model: device kinds, hosts, links, presets.
 *
 * A cluster is `nodes` hosts of `gpus_per_node` identical GPUs. Devices are numbered
 * 0..nodes*gpus_per_node-1, host-major: device d lives on node d / gpus_per_node.
 * Two link classes: intra-host (NVLink, NVSwitch, PCIe: per GPU, per direction) and
 * inter-host (NICs: per NIC, per direction; `nics_per_node` of them per host).
 * Units inside the library are SI: bytes, bytes/s, seconds, FLOP/s. Preset files use the
 * units of datasheets (GB/s, Gb/s, us, TFLOP/s, GiB) and say where every figure comes from.
 */
#ifndef STRATSIM_DEV_CLUSTER_H
#define STRATSIM_DEV_CLUSTER_H

#include <glib.h>

G_BEGIN_DECLS

#define DEV_ERROR (dev_error_quark())
GQuark dev_error_quark(void);
typedef enum {
  DEV_ERROR_UNKNOWN_PRESET,
  DEV_ERROR_UNKNOWN_DEVICE,
  DEV_ERROR_PARSE,   /* malformed JSON or a missing/ill-typed field */
  DEV_ERROR_INVALID, /* a value out of range: zero or negative size, NaN, ... */
} DevError;

typedef enum {
  DEV_DTYPE_FP32,
  DEV_DTYPE_TF32, /* fp32 storage, TF32 tensor-core matmuls */
  DEV_DTYPE_FP16,
  DEV_DTYPE_BF16,
  DEV_DTYPE_FP8,  /* bf16 storage, FP8 tensor-core GEMMs (Transformer Engine's recipe) */
  DEV_DTYPE_COUNT
} DevDtype;

const char *dev_dtype_name(DevDtype dtype);
/* Parses "fp32", "tf32", "fp16", "bf16", "fp8". */
gboolean dev_dtype_parse(const char *text, DevDtype *out);
/* Bytes per element as stored in memory (tf32 is stored as fp32, fp8 as bf16). */
guint dev_dtype_bytes(DevDtype dtype);

typedef struct {
  char *name;                            /* "a100-80gb" */
  char *description;
  double peak_flops[DEV_DTYPE_COUNT];    /* dense FLOP/s of matmul-class work; 0 = unsupported */
  double vector_flops;                   /* non-tensor-core fp32 FLOP/s (elementwise, norms) */
  double memory_bytes;                   /* HBM capacity */
  double hbm_bandwidth;                  /* bytes/s */
  int sm_count;                          /* streaming multiprocessors (GEMM wave quantization);
                                            0 = unknown */
} DevKind;

/* Limits on what a cluster description may say; larger values are rejected as absurd. */
#define DEV_MAX_COUNT 1000000      /* nodes, gpus_per_node, nics_per_node */
#define DEV_MAX_DEVICES (1 << 24)  /* nodes * gpus_per_node */

typedef enum { DEV_LINK_INTRA, DEV_LINK_INTER, DEV_LINK_COUNT } DevLinkClass;

typedef struct {
  char *kind;        /* "nvlink", "nvswitch", "pcie", "infiniband", "aries", "ethernet" */
  double bandwidth;  /* bytes/s, per direction: per GPU (intra) or per NIC (inter) */
  double latency;    /* seconds: alpha, the latency of one message or collective step */
} DevLink;

typedef struct {
  char *name;        /* preset name, or the file it came from */
  char *description;
  DevKind device;    /* owned copy */
  int nodes;
  int gpus_per_node;
  int nics_per_node; /* inter-host NICs per host */
  double oversubscription; /* inter-host fabric: host bandwidth / bisection share (>= 1; 1 =
                              non-blocking fat tree). Applied to NIC transfers in the
                              step-expanded collective mode. */
  double net_latency;      /* seconds: the extra latency per inter-host hop the NCCL network
                              plugin reports (ncclNetProperties.latency, which NCCL's topology
                              search copies into each graph's latencyInter, src/graph/search.cc,
                              and its tuner adds to every network step, src/graph/tuning.cc);
                              0 where the plugin reports none (NCCL's own InfiniBand and socket
                              transports: "props->latency = 0; // Not set") */
  double net_step_latency; /* seconds: what one inter-host step of NCCL's kernels takes on this
                              network as its provider measured it (aws-ofi-nccl's tuner model
                              on EFA: "net_lat"); 0 where none is published: the kernels' time
                              then uses NCCL's own hwLat[NET] (src/graph/tuning.cc, its figure
                              for its InfiniBand transport). Not a tuning input: NCCL's choice
                              keeps hwLat[NET] + net_latency */
  double net_simple_extra; /* seconds: added to net_step_latency with the Simple protocol (the
                              completion's cost, aws-ofi-nccl TUNER_NET_COMP_OVERHEAD) */
  char *nccl_algo;         /* NCCL_ALGO as the network's documented job profile sets it for
                              jobs that span hosts (NCCL's syntax: "Ring,Tree", "^NVLS"); NULL:
                              NCCL's default, every algorithm */
  char *nccl_proto;        /* NCCL_PROTO likewise ("Simple"); NULL: every protocol */
  char *nccl_tuner;        /* the tuner plugin NCCL loads on this platform by default, which
                              makes NCCL's choice where it covers the case (DEV_NCCL_TUNER_*;
                              costmodel/cm_aws_tuner.h); NULL: NCCL's own formula */
  int nccl_version;        /* the NCCL release the jobs run, as NCCL_VERSION_CODE (2.28.3 ->
                              22803); 0: not stated, and the collective model follows the
                              release its constants were read from (costmodel/cm_nccl.c) */
  DevLink link[DEV_LINK_COUNT];
} DevCluster;

/* Whether NCCL_ALGO / NCCL_PROTO text @list (DevCluster.nccl_algo, .nccl_proto: names
 * separated by ',', case-insensitive, a leading '^' excluding the names instead) lets NCCL
 * use algorithm or protocol @name ("NVLSTree", "LL128"); TRUE for every name when @list is
 * NULL. */
gboolean dev_nccl_list_allows(const char *list, const char *name);

/* aws-ofi-nccl's region tuner with its p6-b200.48xlarge table (DevCluster.nccl_tuner). */
#define DEV_NCCL_TUNER_AWS_OFI_P6 "aws-ofi-nccl-p6-b200"

/* Parses an NCCL release "MAJOR.MINOR[.PATCH]" (major 2, minor and patch 0..99; the text a
 * `nccl_version` field or override holds) into NCCL_VERSION_CODE (2.19.3 -> 21903). FALSE,
 * @out untouched, for anything else. */
gboolean dev_nccl_version_parse(const char *text, int *out);

/* Parses a cluster spec: `PRESET[:key=value,...]` or a path to a cluster JSON file
 * (anything containing '/' or ending in ".json"). Override keys: nodes, gpus_per_node,
 * nics_per_node, device, intra_bw_GBps, intra_latency_us, inter_bw_Gbps, inter_latency_us,
 * oversubscription, inter_nccl_latency_us, inter_net_step_latency_us,
 * inter_net_simple_extra_us, inter_nccl_algo, inter_nccl_proto (NCCL's names
 * joined by '+' here, since ',' separates overrides: `inter_nccl_proto=Simple+LL128`;
 * `default` clears the setting), inter_nccl_tuner (a DEV_NCCL_TUNER_* name, or `default`:
 * NCCL's own), nccl_version (`2.28.3`; `default` clears it).
 * A path may take overrides too: `dir/file.json:nodes=2`. A cluster read from a file is
 * named by its path. Returns a new cluster (free with dev_cluster_free) or NULL with @error
 * set: DEV_ERROR_UNKNOWN_PRESET (the message lists the presets), DEV_ERROR_UNKNOWN_DEVICE,
 * DEV_ERROR_PARSE (also an unreadable file, an unknown override key), DEV_ERROR_INVALID. */
DevCluster *dev_cluster_parse_spec(const char *spec, GError **error);

/* Builds a cluster from JSON text in the preset format; @origin names it in errors and is
 * its name when the text has no "name". `device` is a kind name or an inline device object in
 * the format of devices/presets/devices.json. Returns a new cluster or NULL with @error set. */
DevCluster *dev_cluster_from_json(const char *json_text, const char *origin, GError **error);

/* Applies one override `key=value` (the keys of dev_cluster_parse_spec); on error the
 * cluster is unchanged. Bandwidths and latencies are in the preset units (GB/s, Gb/s, us). */
gboolean dev_cluster_set(DevCluster *cluster, const char *key, const char *value, GError **error);

/* A deep copy; free with dev_cluster_free. dev_cluster_free accepts NULL. */
DevCluster *dev_cluster_copy(const DevCluster *cluster);
void dev_cluster_free(DevCluster *cluster);

/* Serialises the cluster (resolved values, SI units) as JSON; caller frees with g_free. */
char *dev_cluster_to_json(const DevCluster *cluster);

static inline int dev_cluster_num_devices(const DevCluster *c) { return c->nodes * c->gpus_per_node; }
static inline int dev_cluster_node_of(const DevCluster *c, int device) { return device / c->gpus_per_node; }

/* Looks up a device kind by name in the built-in device table; fills @out with an owned
 * copy (clear with dev_kind_clear). */
gboolean dev_kind_lookup(const char *name, DevKind *out, GError **error);
void dev_kind_copy(DevKind *dst, const DevKind *src);
void dev_kind_clear(DevKind *kind);

/* Names of built-in cluster presets, NULL-terminated, static storage. */
const char *const *dev_preset_names(void);
/* Names of built-in device kinds, NULL-terminated, static storage. */
const char *const *dev_kind_names(void);
/* The built-in kinds that run @dtype (peak > 0), joined by ", " ("none" if no kind does);
 * for messages that refuse a dtype. Caller frees with g_free. */
char *dev_kinds_supporting(DevDtype dtype);

G_END_DECLS

#endif
