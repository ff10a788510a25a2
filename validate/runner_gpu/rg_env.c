/* validate/runner_gpu/env — the "environment" of a measurements file: the device (rank 0's),
 * the CUDA driver and runtime, NCCL, the clocks, and host, date, command line. */
#include "validate/runner_gpu/rg.h"

/* CUDA encodes versions as 1000 major + 10 minor (13000 -> "13.0"). */
static char *cuda_version(int v) { return g_strdup_printf("%d.%d", v / 1000, (v % 1000) / 10); }

/* NCCL_VERSION_CODE: 10000 major + 100 minor + patch since 2.9, 1000 major + 100 minor before. */
static char *nccl_version(int v) {
  if (v >= 10000) return g_strdup_printf("%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  return g_strdup_printf("%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
}

char *rg_environment(ValMeasurements *m, int device, const char *device_kind, int argc,
                     char **argv, GError **error) {
  struct cudaDeviceProp prop;
  int driver = 0, runtime = 0, nccl = 0, sm_khz = 0, mem_khz = 0;
  if (!rg_cuda_ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", error) ||
      !rg_cuda_ok(cudaDriverGetVersion(&driver), "cudaDriverGetVersion", error) ||
      !rg_cuda_ok(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion", error) ||
      !rg_nccl_ok(ncclGetVersion(&nccl), "ncclGetVersion", error))
    return NULL;
  /* Peak clocks as the device reports them (cudaDeviceProp lost its clock fields in CUDA 13);
   * not the clocks during the run, which NVML would give. A failure leaves them out. */
  if (cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device) != cudaSuccess) sm_khz = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess)
    mem_khz = 0;
  cudaGetLastError(); /* clear a failed attribute query */
  const char *kind = device_kind ? device_kind : rg_device_kind(prop.name, prop.totalGlobalMem);
  val_measurements_set_env_string(m, "device", prop.name);
  val_measurements_set_env_string(m, "device_kind", kind);
  char *text = cuda_version(driver);
  val_measurements_set_env_string(m, "driver", text); /* the CUDA version the driver supports */
  g_free(text);
  text = cuda_version(runtime);
  val_measurements_set_env_string(m, "cuda_runtime", text);
  g_free(text);
  text = nccl_version(nccl);
  val_measurements_set_env_string(m, "nccl", text);
  g_free(text);
  if (sm_khz > 0) val_measurements_set_env_int(m, "sm_clock_mhz", sm_khz / 1000);
  if (mem_khz > 0) val_measurements_set_env_int(m, "mem_clock_mhz", mem_khz / 1000);
  val_measurements_set_env_defaults(m, argc, argv);
  return g_strdup(kind);
}
