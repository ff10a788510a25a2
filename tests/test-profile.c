/* Tests of measured kernel times (costmodel/cm_profile.h): exact lookups, interpolation in
 * shape and size, phases, storage in SQLite, their use by the simulator and by the CLI. The
 * kernel times here are made-up test inputs, not measurements. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test-cli-util.h"
#include "costmodel/cm_profile.h"
#include "results/res_db.h"
#include "sim/sim.h"
#include "test-util.h"

static char *tmpdir;

static CmProfiles *sample(void) {
  CmProfiles *p = cm_profiles_new();
  CmProfilePoint gemm1 = {.device = "a100-80gb", .kind = MDL_OP_MATMUL, .dtype = DEV_DTYPE_FP16,
                          .shape = {1024, 1024, 1024, 1}, .time_s = 20e-6};
  CmProfilePoint gemm2 = gemm1;
  gemm2.shape = (CmGemmShape){4096, 4096, 4096, 1};
  gemm2.time_s = 640e-6;
  CmProfilePoint ln1 = {.device = "a100-80gb", .kind = MDL_OP_LAYERNORM, .dtype = DEV_DTYPE_FP16,
                        .elements = 1e6, .time_s = 10e-6};
  CmProfilePoint ln2 = ln1;
  ln2.elements = 1e8;
  ln2.time_s = 400e-6;
  CmProfilePoint lnb = ln1;
  lnb.backward = TRUE;
  lnb.time_s = 25e-6;
  cm_profiles_add(p, &gemm1);
  cm_profiles_add(p, &gemm2);
  cm_profiles_add(p, &ln1);
  cm_profiles_add(p, &ln2);
  cm_profiles_add(p, &lnb);
  return p;
}

static void test_lookup(void) {
  CmProfiles *p = sample();
  double t;
  CmGemmShape exact = {1024, 1024, 1024, 1}, mid = {2048, 2048, 2048, 1};
  g_assert_true(cm_profiles_lookup(p, "a100-80gb", MDL_OP_MATMUL, DEV_DTYPE_FP16, &exact, 0, FALSE, &t));
  g_assert_cmpfloat(t, ==, 20e-6);
  /* A batched matmul uses the same GEMM points. */
  g_assert_true(cm_profiles_lookup(p, "a100-80gb", MDL_OP_BATCH_MATMUL, DEV_DTYPE_FP16, &exact, 0, FALSE, &t));
  g_assert_cmpfloat(t, ==, 20e-6);
  /* Halfway in log space between rates r1 and r2: rate sqrt(r1 r2) (equal weights). */
  double r1 = 2 * pow(1024, 3) / 20e-6, r2 = 2 * pow(4096, 3) / 640e-6;
  g_assert_true(cm_profiles_lookup(p, "a100-80gb", MDL_OP_MATMUL, DEV_DTYPE_FP16, &mid, 0, FALSE, &t));
  g_assert_cmpfloat_with_epsilon(t, 2 * pow(2048, 3) / sqrt(r1 * r2), 1e-15);
  /* Elements: log-log between 1e6 and 1e8, proportional beyond. */
  g_assert_true(cm_profiles_lookup(p, "a100-80gb", MDL_OP_LAYERNORM, DEV_DTYPE_FP16, NULL, 1e7, FALSE, &t));
  g_assert_cmpfloat_with_epsilon(t, sqrt(10e-6 * 400e-6), 1e-15);
  g_assert_true(cm_profiles_lookup(p, "a100-80gb", MDL_OP_LAYERNORM, DEV_DTYPE_FP16, NULL, 2e8, FALSE, &t));
  g_assert_cmpfloat_with_epsilon(t, 800e-6, 1e-15);
  g_assert_true(cm_profiles_lookup(p, "a100-80gb", MDL_OP_LAYERNORM, DEV_DTYPE_FP16, NULL, 1e6, TRUE, &t));
  g_assert_cmpfloat(t, ==, 25e-6);
  /* Nothing for another device, dtype or kind. */
  g_assert_false(cm_profiles_lookup(p, "h100-sxm", MDL_OP_MATMUL, DEV_DTYPE_FP16, &exact, 0, FALSE, &t));
  g_assert_false(cm_profiles_lookup(p, "a100-80gb", MDL_OP_MATMUL, DEV_DTYPE_BF16, &exact, 0, FALSE, &t));
  g_assert_false(cm_profiles_lookup(p, "a100-80gb", MDL_OP_SOFTMAX, DEV_DTYPE_FP16, NULL, 1e6, FALSE, &t));
  cm_profiles_free(p);
}

/* A measured forward GEMM replaces the roofline in the simulated task, plus launch overhead. */
static void test_simulator_uses_profiles(void) {
  DevCluster *c = test_cluster(1, 2, 150, 3.4, 100, 9.6);
  MdlGraph *g = test_chain_graph(1, 1024, 2048);
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_data_parallel(g, c, 2, DEV_DTYPE_FP16, &error);
  g_assert_no_error(error);
  CmProfiles *p = sample();
  CmParams params;
  cm_params_default(&params);
  params.profiles = p;
  SimRun *run = sim_run_new(g, s, c, &params, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sim_run_profiled_kernels(run), ==, 5);
  gboolean seen = FALSE;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind != SIM_TASK_FORWARD) continue;
    /* Each replica: [1024, 1024] x [1024, 1024]: exactly the first point. */
    g_assert_cmpuint(t->duration, ==, sim_time_from_seconds(20e-6 + params.kernel_overhead_s));
    seen = TRUE;
  }
  g_assert_true(seen);
  sim_run_free(run);
  cm_profiles_free(p);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_db_round_trip(void) {
  g_autofree char *path = g_build_filename(tmpdir, "p.db", NULL);
  GError *error = NULL;
  ResDb *db = res_db_open(path, &error);
  g_assert_no_error(error);
  CmProfiles *p = sample();
  g_assert_cmpint(res_db_store_profiles(db, p, "test inputs", &error), ==, 5);
  /* Storing again replaces, not duplicates. */
  g_assert_cmpint(res_db_store_profiles(db, p, "test inputs", &error), ==, 5);
  CmProfiles *back = res_db_load_profiles(db, "a100-80gb", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(cm_profiles_size(back), ==, 5);
  double t;
  CmGemmShape exact = {4096, 4096, 4096, 1};
  g_assert_true(cm_profiles_lookup(back, "a100-80gb", MDL_OP_MATMUL, DEV_DTYPE_FP16, &exact, 0, FALSE, &t));
  g_assert_cmpfloat(t, ==, 640e-6);
  CmProfiles *none = res_db_load_profiles(db, "h200", &error);
  g_assert_cmpuint(cm_profiles_size(none), ==, 0);
  cm_profiles_free(none);
  cm_profiles_free(back);
  cm_profiles_free(p);
  res_db_close(db);
}

static int run_cli(const char *args, char **out) {
  TestCliResult r = test_cli_run(tmpdir, args);
  *out = g_steal_pointer(&r.out);
  int status = r.status;
  test_cli_result_clear(&r);
  return status;
}

static void test_cli(void) {
  g_autofree char *file = g_build_filename(tmpdir, "prof.json", NULL);
  g_assert_true(g_file_set_contents(file,
      "{\"device\": \"a100-80gb\", \"source\": \"test inputs, not measured\", \"kernels\": ["
      "{\"op\": \"matmul\", \"dtype\": \"bf16\", \"m\": 2048, \"n\": 2048, \"k\": 2048, \"time_s\": 1e-4}]}", -1, NULL));
  g_autofree char *bad = g_build_filename(tmpdir, "bad.json", NULL);
  g_assert_true(g_file_set_contents(bad, "{\"device\": \"a100-80gb\", \"kernels\": []}", -1, NULL));
  g_autofree char *out = NULL;
  g_assert_cmpint(run_cli("profiles import prof.json --db cli.db", &out), ==, 0);
  g_free(g_steal_pointer(&out));
  g_assert_cmpint(run_cli("profiles import bad.json --db cli.db", &out), ==, 2);
  g_free(g_steal_pointer(&out));
  g_assert_cmpint(run_cli("simulate --model mlp --cluster dgx-a100 --db cli.db", &out), ==, 0);
  g_assert_nonnull(strstr(out, "1 measured kernel times"));
  g_free(g_steal_pointer(&out));
  g_assert_cmpint(run_cli("simulate --model mlp --cluster dgx-a100 --db cli.db --no-profiles", &out), ==, 0);
  g_assert_nonnull(strstr(out, "roofline (no measured"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-profile-XXXXXX", NULL);
  g_test_add_func("/costmodel/profile/lookup", test_lookup);
  g_test_add_func("/costmodel/profile/simulator", test_simulator_uses_profiles);
  g_test_add_func("/costmodel/profile/db", test_db_round_trip);
  g_test_add_func("/costmodel/profile/cli", test_cli);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  return status;
}
