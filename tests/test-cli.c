/* End-to-end tests of the `stratsim` binary: the acceptance command, determinism, the trace,
 * the database, and bad input (exit status 2, one line on stderr naming the problem). */
#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test-cli-util.h"

static char *tmpdir;

/* The binary, run in the test's temporary directory. */
static TestCliResult run_cli(const char *args) { return test_cli_run(tmpdir, args); }

#define ACCEPT "simulate --model gpt3-1.3b --cluster dgx-a100:nodes=2 --strategy megatron:tp=8,pp=1,dp=2"

/* The acceptance command: plausible figures. */
static void test_acceptance(void) {
  TestCliResult r = run_cli(ACCEPT " --json --db acc.db");
  g_assert_cmpint(r.status, ==, 0);
  cJSON *j = cJSON_Parse(r.out);
  g_assert_nonnull(j);
  const char *keys[] = {"iteration_time_s", "samples_per_s", "tflops_per_gpu", "mfu",
                        "peak_memory_bytes", "tasks", "events", "sim_wall_s"};
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    cJSON *item = cJSON_GetObjectItem(j, keys[i]);
    if (!cJSON_IsNumber(item)) g_error("missing %s in %s", keys[i], r.out);
  }
  cJSON *br = cJSON_GetObjectItem(j, "breakdown");
  g_assert_true(cJSON_IsNumber(cJSON_GetObjectItem(br, "compute_s")));
  g_assert_true(cJSON_IsNumber(cJSON_GetObjectItem(br, "comm_exposed_s")));
  g_assert_true(cJSON_IsNumber(cJSON_GetObjectItem(br, "bubble_s")));
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "fits_memory")));
  double tflops = cJSON_GetObjectItem(j, "tflops_per_gpu")->valuedouble;
  g_assert_cmpfloat(tflops, >, 10);
  g_assert_cmpfloat(tflops, <, 312); /* A100 bf16 dense peak */
  double mem = cJSON_GetObjectItem(j, "peak_memory_bytes")->valuedouble;
  /* 1.3e9 parameters x 16 bytes / 8-way tensor parallel = 2.6 GB, plus activations. */
  g_assert_cmpfloat(mem, >, 2.6e9);
  g_assert_cmpfloat(mem, <, 20e9);
  g_assert_cmpint(cJSON_GetObjectItem(j, "tasks")->valuedouble, >, 1000);
  cJSON_Delete(j);
  test_cli_result_clear(&r);
}

static char *without_wall(const char *json) {
  cJSON *j = cJSON_Parse(json);
  g_assert_nonnull(j);
  cJSON_DeleteItemFromObject(j, "sim_wall_s");
  cJSON_DeleteItemFromObject(j, "run_id"); /* one per stored run */
  char *text = cJSON_PrintUnformatted(j);
  char *out = g_strdup(text);
  cJSON_free(text);
  cJSON_Delete(j);
  return out;
}

static void test_same_twice(void) {
  const char *cmd = "simulate --model gpt:layers=4,hidden=1024,heads=16,seq=512,vocab=8000,batch=32 "
                    "--cluster dgx-a100:nodes=2 --strategy megatron:tp=4,pp=2,dp=2,mb=2 --json --db twice.db";
  TestCliResult a = run_cli(cmd), b = run_cli(cmd);
  g_assert_cmpint(a.status, ==, 0);
  g_assert_cmpint(b.status, ==, 0);
  g_autofree char *ja = without_wall(a.out);
  g_autofree char *jb = without_wall(b.out);
  g_assert_cmpstr(ja, ==, jb);
  test_cli_result_clear(&a);
  test_cli_result_clear(&b);
}

/* Processes (GPUs) named in a trace file. */
static int trace_gpus(const char *name) {
  g_autofree char *path = g_build_filename(tmpdir, name, NULL);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  cJSON *j = cJSON_Parse(text);
  g_assert_nonnull(j);
  cJSON *events = cJSON_GetObjectItem(j, "traceEvents"), *e;
  g_assert_true(cJSON_IsArray(events));
  int gpus = 0, spans = 0;
  cJSON_ArrayForEach(e, events) {
    const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph"));
    const char *nm = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
    if (g_strcmp0(ph, "M") == 0 && g_strcmp0(nm, "process_name") == 0) gpus++;
    if (g_strcmp0(ph, "X") == 0) spans++;
  }
  g_assert_cmpint(spans, >, gpus);
  cJSON_Delete(j);
  return gpus;
}

static void test_text_trace_db(void) {
  TestCliResult r = run_cli("simulate --model mlp:layers=4,hidden=1024,batch=64 --cluster flexflow-p100 "
                     "--strategy dp --trace t.json --db sub/dir/r.db --no-symmetry");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "iteration"));
  g_assert_nonnull(strstr(r.out, "breakdown"));
  g_assert_nonnull(strstr(r.out, "stored"));
  g_assert_cmpint(trace_gpus("t.json"), ==, 16);
  g_autofree char *db = g_build_filename(tmpdir, "sub", "dir", "r.db", NULL);
  g_assert_true(g_file_test(db, G_FILE_TEST_EXISTS));
  test_cli_result_clear(&r);
  /* With symmetry (the default) the 16 data-parallel replicas are simulated once. */
  r = run_cli("simulate --model mlp:layers=4,hidden=1024,batch=64 --cluster flexflow-p100 "
              "--strategy dp --trace t1.json --db sub/dir/r.db");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "symmetry"));
  g_assert_cmpint(trace_gpus("t1.json"), ==, 1);
  test_cli_result_clear(&r);
}

/* A strategy that does not fit in memory: its prediction is printed and stored, then one line
 * on stderr names the GPU and the sizes, and the exit status is 2 (bad input). */
static void test_does_not_fit(void) {
  TestCliResult r = run_cli("simulate --model gpt3-6.7b --cluster dgx-a100 --strategy dp --json --db nofit.db");
  g_assert_cmpint(r.status, ==, 2);
  cJSON *j = cJSON_Parse(r.out);
  g_assert_nonnull(j);
  g_assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "fits_memory")));
  g_assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "run_id")));
  cJSON_Delete(j);
  g_assert_nonnull(strstr(r.err, "strategy dp does not fit: GPU 0 needs "));
  g_assert_nonnull(strstr(r.err, "of its 80 GiB"));
  const char *nl = strchr(r.err, '\n');
  g_assert_true(nl && nl[1] == '\0'); /* one line */
  test_cli_result_clear(&r);
  /* the same model where it fits: exit 0, nothing on stderr */
  r = run_cli("simulate --model gpt3-6.7b --cluster dgx-a100 --strategy megatron:tp=8,mb=1 --db nofit.db");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_cmpstr(r.err, ==, "");
  test_cli_result_clear(&r);
}

static void test_list(void) {
  TestCliResult r = run_cli("list models");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "gpt3-175b"));
  g_assert_nonnull(strstr(r.out, "vgg16"));
  test_cli_result_clear(&r);
  r = run_cli("list clusters");
  g_assert_cmpint(r.status, ==, 0);
  g_assert_nonnull(strstr(r.out, "dgx-h100"));
  g_assert_nonnull(strstr(r.out, "piz-daint"));
  test_cli_result_clear(&r);
}

typedef struct {
  const char *args;
  const char *needle;
} BadInput;

static const BadInput bad_inputs[] = {
    {"simulate --model gpt3-1.3b --cluster nosuch --strategy dp", "nosuch"},
    {"simulate --model nosuchmodel --cluster dgx-a100 --strategy dp", "nosuchmodel"},
    {"simulate --model gpt3-1.3b --cluster bad.json --strategy dp", "bad.json"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy megatron:tp=3", "heads"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy megatron:tp=8,dp=4", "cluster"},
    {"simulate --model gpt:layers=0 --cluster dgx-a100 --strategy dp", "layers"},
    {"simulate --model gpt:hidden=-5 --cluster dgx-a100 --strategy dp", "hidden"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100:nodes=0 --strategy dp", "nodes"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100:nodes=-3 --strategy dp", "nodes"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy bad.json", "bad.json"},
    {"simulate --model bad.json --cluster dgx-a100 --strategy dp", "bad.json"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy dp --db notadb.db", "notadb.db"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy megatron:tp=8,zero=4", "zero=4"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy megatron:tp=8,recompute=all", "recompute=all"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy megatron:tp=8,sp=yes", "sp=yes"},
    {"simulate --model gpt3-1.3b --cluster dgx-a100 --strategy megatron:tp=1,sp=1", "sp=1"},
    {"simulate --model gpt3-1.3b", "--cluster"},
    {"simulate --bogus", "bogus"},
    {"frobnicate", "frobnicate"},
};

static void test_bad_input(gconstpointer data) {
  const BadInput *b = data;
  TestCliResult r = run_cli(b->args);
  if (r.status != 2) g_error("'%s' exited %d: %s", b->args, r.status, r.err);
  g_assert_nonnull(r.err);
  g_assert_cmpint(strlen(r.err), >, 0);
  /* Exactly one line, naming the problem. */
  int lines = 0;
  for (const char *p = r.err; *p; p++) lines += *p == '\n';
  if (lines != 1 || r.err[strlen(r.err) - 1] != '\n') g_error("'%s': not one line: %s", b->args, r.err);
  if (!strstr(r.err, b->needle)) g_error("'%s': error '%s' does not name '%s'", b->args, r.err, b->needle);
  test_cli_result_clear(&r);
}

/* A file that is not a database is reported and left as it was. */
static void test_not_a_database_untouched(void) {
  g_autofree char *path = g_build_filename(tmpdir, "notadb.db", NULL);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "this is not a database, it is a text file of some length......\n");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  GError *error = NULL;
  tmpdir = g_dir_make_tmp("stratsim-cli-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *bad = g_build_filename(tmpdir, "bad.json", NULL);
  g_assert_true(g_file_set_contents(bad, "{\"name\": \"oops\", ", -1, NULL));
  g_autofree char *notadb = g_build_filename(tmpdir, "notadb.db", NULL);
  g_assert_true(g_file_set_contents(
      notadb, "this is not a database, it is a text file of some length......\n", -1, NULL));
  g_test_add_func("/cli/simulate/acceptance", test_acceptance);
  g_test_add_func("/cli/simulate/same-twice", test_same_twice);
  g_test_add_func("/cli/simulate/text-trace-db", test_text_trace_db);
  g_test_add_func("/cli/simulate/does-not-fit", test_does_not_fit);
  g_test_add_func("/cli/list", test_list);
  for (gsize i = 0; i < G_N_ELEMENTS(bad_inputs); i++) {
    g_autofree char *path = g_strdup_printf("/cli/bad-input/%zu", i);
    g_test_add_data_func(path, &bad_inputs[i], test_bad_input);
  }
  g_test_add_func("/cli/bad-input/not-a-database-untouched", test_not_a_database_untouched);
  int status = g_test_run();
  test_remove_tree(tmpdir);
  return status;
}
