/* Tests for validate/val_plan: the plan reader (valid plans, every rule of val_plan.h refused
 * with an error that names it) and the run-measurements writer (round trip through cJSON). The
 * cross-rank checks' own tests (deadlock, issue order, random plans) are in
 * test-val-plan-check.c. */
#include "validate/val_plan.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* A 2-rank plan with every step kind: rank 0 sends an activation to rank 1, both all-reduce on
 * group 0, rank 1 sends back; the transfers and the collective interleave with compute. */
#define GROUPS "[{\"id\":0,\"ranks\":[0,1]},{\"id\":5,\"ranks\":[1]}]"
#define R0                                                                                     \
  "{\"rank\":0,\"host\":0,\"local_device\":0,\"steps\":["                                     \
  "{\"id\":0,\"stream\":\"compute\",\"kind\":\"gemm\",\"name\":\"fc fwd\",\"op\":\"fc\","     \
  "\"phase\":\"forward\",\"microbatch\":0,\"m\":32,\"n\":512,\"k\":512,\"batch\":1,"          \
  "\"dtype\":\"fp32\",\"deps\":[],\"predicted_s\":1.2e-05},"                                  \
  "{\"id\":1,\"kind\":\"elementwise\",\"elements\":16384,\"bytes\":131072.5,\"deps\":[0]},"   \
  "{\"id\":2,\"kind\":\"send\",\"peer\":1,\"bytes\":65536,\"deps\":[1]},"                     \
  "{\"id\":3,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,"              \
  "\"bytes\":1048576,\"deps\":[0]},"                                                          \
  "{\"id\":4,\"kind\":\"recv\",\"peer\":1,\"bytes\":4096}]}"
#define R1                                                                                     \
  "{\"rank\":1,\"host\":0,\"local_device\":1,\"steps\":["                                     \
  "{\"id\":10,\"kind\":\"recv\",\"peer\":0,\"bytes\":65536},"                                 \
  "{\"id\":11,\"kind\":\"gemm\",\"m\":32,\"n\":512,\"k\":512,\"batch\":2,\"dtype\":\"bf16\","   \
  "\"deps\":[10]},"                                                                           \
  "{\"id\":12,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,"             \
  "\"bytes\":1048576},"                                                                       \
  "{\"id\":14,\"kind\":\"collective\",\"collective\":\"broadcast\",\"group\":5,\"bytes\":8},"  \
  "{\"id\":13,\"kind\":\"send\",\"peer\":0,\"bytes\":4096,\"deps\":[11, 10]}]}"
#define MICRO                                                                                  \
  "{\"ops\":[{\"op\":\"matmul\",\"dtype\":\"fp32\",\"m\":32,\"n\":512,\"k\":512,\"batch\":1}," \
  "{\"op\":\"layernorm\",\"dtype\":\"fp16\",\"elements\":16384,\"phase\":\"backward\"}],"      \
  "\"collectives\":[{\"kind\":\"all_reduce\",\"ranks\":2,\"nodes\":1,\"bytes\":1048576}]}"
#define HEADER                                                                                 \
  "{\"format\":\"stratsim-plan\",\"version\":1,\"model\":\"mlp:layers=2\","                   \
  "\"cluster\":\"dgx-a100:nodes=1,gpus_per_node=2\",\"strategy\":\"dp\",\"dtype\":\"fp32\","  \
  "\"ranks\":2,\"warmup\":2,\"iterations\":5,"                                                \
  "\"predicted\":{\"iteration_time_s\":0.00123,\"device\":\"a100-80gb\"},"
#define PLAN HEADER "\"groups\":" GROUPS ",\"programs\":[" R1 "," R0 "],\"microbenchmarks\":" MICRO "}"

static ValPlan *parse_ok(const char *text) {
  GError *error = NULL;
  ValPlan *plan = val_plan_parse(text, "test.json", &error);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  return plan;
}

static void test_valid(void) {
  ValPlan *plan = parse_ok(PLAN);
  g_assert_cmpint(plan->ranks, ==, 2);
  g_assert_cmpstr(plan->model, ==, "mlp:layers=2");
  g_assert_cmpstr(plan->strategy, ==, "dp");
  g_assert_cmpint(plan->dtype, ==, VAL_DTYPE_FP32);
  g_assert_cmpint(plan->warmup, ==, 2);
  g_assert_cmpint(plan->iterations, ==, 5);
  g_assert_cmpfloat(plan->predicted_iteration_time_s, ==, 0.00123);
  g_assert_cmpstr(plan->predicted_device, ==, "a100-80gb");
  g_assert_cmpint(plan->n_groups, ==, 2);
  g_assert_cmpuint(plan->n_steps, ==, 10);

  /* programs sorted by rank although the file lists rank 1 first */
  const ValProgram *p0 = &plan->programs[0], *p1 = &plan->programs[1];
  g_assert_cmpint(p0->rank, ==, 0);
  g_assert_cmpint(p1->rank, ==, 1);
  g_assert_cmpint(p1->local_device, ==, 1);
  g_assert_cmpuint(p0->n_steps, ==, 5);
  g_assert_cmpuint(p1->n_steps, ==, 5);

  const ValStep *gemm = &p0->steps[0];
  g_assert_cmpint(gemm->kind, ==, VAL_STEP_GEMM);
  g_assert_cmpstr(gemm->name, ==, "fc fwd");
  g_assert_cmpstr(gemm->phase, ==, "forward");
  g_assert_cmpint(gemm->microbatch, ==, 0);
  g_assert_cmpint(gemm->m, ==, 32);
  g_assert_cmpint(gemm->k, ==, 512);
  g_assert_cmpfloat(gemm->predicted_s, ==, 1.2e-05);
  const ValStep *ew = &p0->steps[1];
  g_assert_cmpint(ew->kind, ==, VAL_STEP_ELEMENTWISE);
  g_assert_cmpint(ew->stream, ==, VAL_STREAM_COMPUTE);
  g_assert_cmpint(ew->bytes, ==, 131073); /* rounded up */
  g_assert_cmpuint(ew->n_deps, ==, 1);
  g_assert_cmpuint(ew->deps[0], ==, 0);
  g_assert_true(isnan(ew->predicted_s));
  g_assert_cmpint(ew->microbatch, ==, -1);
  g_assert_null(ew->name);

  const ValStep *send = &p0->steps[2];
  g_assert_cmpint(send->stream, ==, VAL_STREAM_COMM);
  g_assert_cmpint(send->peer, ==, 1);
  g_assert_cmpuint(send->match, ==, 0); /* rank 1's recv id 10 */
  g_assert_cmpuint(p1->steps[0].match, ==, 2);
  g_assert_cmpuint(p1->steps[4].match, ==, 4);
  g_assert_cmpuint(p0->steps[4].match, ==, 4);

  const ValStep *g1 = &p1->steps[1];
  g_assert_cmpint(g1->dtype, ==, VAL_DTYPE_BF16);
  g_assert_cmpint(g1->batch, ==, 2);
  const ValStep *coll = &p1->steps[2];
  g_assert_cmpint(coll->collective, ==, VAL_COLL_ALL_REDUCE);
  g_assert_cmpint(coll->group, ==, 0);
  g_assert_cmpint(coll->group_rank, ==, 1);
  g_assert_cmpint(p1->steps[3].group, ==, 1); /* file id 5 is index 1 */
  g_assert_cmpint(plan->groups[1].id, ==, 5);
  g_assert_cmpuint(p1->steps[4].n_deps, ==, 2);
  g_assert_cmpuint(p1->steps[4].deps[0], ==, 1);
  g_assert_cmpuint(p1->steps[4].deps[1], ==, 0);
  g_assert_cmpint(val_group_find(&plan->groups[0], 1), ==, 1);
  g_assert_cmpint(val_group_find(&plan->groups[1], 0), ==, -1);

  /* the issue order: every step once, each rank in list order, rendezvous launches together */
  guint next[2] = {0, 0};
  guint launches_seen = 0;
  for (guint64 i = 0; i < plan->n_steps; i++) {
    const ValIssue *is = &plan->issue[i];
    g_assert_cmpuint(is->step, ==, next[is->rank]);
    next[is->rank]++;
    if (i > 0) g_assert_cmpuint(is->launch, >=, plan->issue[i - 1].launch);
    if (i == 0 || is->launch != plan->issue[i - 1].launch) launches_seen++;
    const ValStep *s = &plan->programs[is->rank].steps[is->step];
    gboolean paired = s->kind == VAL_STEP_SEND || s->kind == VAL_STEP_RECV ||
                      (s->kind == VAL_STEP_COLLECTIVE && s->group == 0);
    gboolean with_prev = i > 0 && plan->issue[i - 1].launch == is->launch;
    gboolean with_next = i + 1 < plan->n_steps && plan->issue[i + 1].launch == is->launch;
    g_assert_true(paired == (with_prev || with_next));
  }
  g_assert_cmpuint(next[0], ==, 5);
  g_assert_cmpuint(next[1], ==, 5);
  g_assert_cmpuint(launches_seen, ==, plan->n_launches);
  g_assert_cmpuint(plan->n_launches, ==, 7); /* 3 compute, 1 broadcast, 2 transfers, 1 all-reduce */

  g_assert_cmpuint(plan->n_micro_ops, ==, 2);
  g_assert_true(plan->micro_ops[0].gemm);
  g_assert_false(plan->micro_ops[1].gemm);
  g_assert_true(plan->micro_ops[1].backward);
  g_assert_cmpint(plan->micro_ops[1].dtype, ==, VAL_DTYPE_FP16);
  g_assert_cmpuint(plan->n_micro_collectives, ==, 1);
  g_assert_cmpint(plan->micro_collectives[0].bytes, ==, 1048576);
  val_plan_free(plan);
}

/* Optional fields take their documented defaults; a rank may exchange both ways in one
 * order that is not deadlock (send then recv on one side, recv then send on the other). */
static void test_defaults(void) {
  ValPlan *plan = parse_ok(
      "{\"format\":\"stratsim-plan\",\"version\":1,\"dtype\":\"fp16\",\"ranks\":2,"
      "\"programs\":[{\"rank\":0,\"steps\":[{\"id\":0,\"kind\":\"gemm\",\"m\":1,\"n\":1,\"k\":1},"
      "{\"id\":1,\"kind\":\"send\",\"peer\":1,\"bytes\":1},{\"id\":2,\"kind\":\"recv\",\"peer\":1,"
      "\"bytes\":1}]},"
      "{\"rank\":1,\"steps\":[{\"id\":0,\"kind\":\"recv\",\"peer\":0,\"bytes\":1},"
      "{\"id\":1,\"kind\":\"send\",\"peer\":0,\"bytes\":1}]}]}");
  g_assert_cmpint(plan->warmup, ==, 3);
  g_assert_cmpint(plan->iterations, ==, 10);
  g_assert_cmpstr(plan->model, ==, "");
  g_assert_true(isnan(plan->predicted_iteration_time_s));
  g_assert_null(plan->predicted_device);
  g_assert_cmpint(plan->n_groups, ==, 0);
  g_assert_cmpuint(plan->n_micro_ops + plan->n_micro_collectives, ==, 0);
  const ValStep *s = &plan->programs[0].steps[0];
  g_assert_cmpint(s->batch, ==, 1);
  g_assert_cmpint(s->dtype, ==, VAL_DTYPE_FP16);
  g_assert_cmpint(plan->programs[0].steps[0].stream, ==, VAL_STREAM_COMPUTE);
  g_assert_cmpint(plan->programs[1].steps[1].stream, ==, VAL_STREAM_COMM);
  g_assert_cmpint(plan->programs[0].steps[1].stream, ==, VAL_STREAM_COMM);
  val_plan_free(plan);
}

static void test_names(void) {
  g_assert_cmpstr(val_dtype_name(VAL_DTYPE_TF32), ==, "tf32");
  g_assert_cmpuint(val_dtype_size(VAL_DTYPE_TF32), ==, 4);
  g_assert_cmpuint(val_dtype_size(VAL_DTYPE_BF16), ==, 2);
  g_assert_cmpstr(val_step_kind_name(VAL_STEP_RECV), ==, "recv");
  g_assert_cmpstr(val_collective_name(VAL_COLL_REDUCE_SCATTER), ==, "reduce_scatter");
  g_assert_cmpstr(val_stream_name(VAL_STREAM_COMM), ==, "comm");
  double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
  g_assert_cmpfloat(val_median(odd, 3), ==, 2);
  g_assert_cmpfloat(val_median(even, 4), ==, 2.5);
  g_assert_cmpfloat(even[0], ==, 4); /* unchanged */
  g_assert_true(isnan(val_median(odd, 0)));
}

static void test_read_file(void) {
  char *dir = g_dir_make_tmp("test-val-plan-XXXXXX", NULL);
  char *path = g_build_filename(dir, "plan.json", NULL);
  GError *error = NULL;
  g_assert_null(val_plan_read(path, &error));
  g_assert_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "plan.json"));
  g_clear_error(&error);
  g_assert_true(g_file_set_contents(path, PLAN, -1, NULL));
  ValPlan *plan = val_plan_read(path, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(plan->source, ==, path);
  val_plan_free(plan);
  g_assert_null(val_plan_read(dir, &error)); /* a directory */
  g_assert_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT);
  g_clear_error(&error);
  g_remove(path);
  g_rmdir(dir);
  g_free(path);
  g_free(dir);
}

/* --- refused plans: PLAN with @find replaced by @replace must fail naming @expect --- */

typedef struct {
  const char *path;
  const char *find, *replace;
  const char *expect;
} BadCase;

#define STEP2 "{\"id\":2,\"kind\":\"send\",\"peer\":1,\"bytes\":65536,\"deps\":[1]}"
#define STEP3 "{\"id\":3,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":1048576,\"deps\":[0]}"
#define STEP4 "{\"id\":4,\"kind\":\"recv\",\"peer\":1,\"bytes\":4096}"
#define STEP12 "{\"id\":12,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":1048576},"
#define GEMM0 "\"m\":32,\"n\":512,\"k\":512,\"batch\":1,\"dtype\":\"fp32\""

static const BadCase bad_cases[] = {
    {"unmatched-send", STEP4, STEP4 ",{\"id\":5,\"kind\":\"send\",\"peer\":1,\"bytes\":8}",
     "programs[0].steps[5] (id 5): send to rank 1 (transfer 2 from rank 0 to rank 1) has no matching recv"},
    {"unmatched-recv", STEP4, STEP4 ",{\"id\":5,\"kind\":\"recv\",\"peer\":1,\"bytes\":8}",
     "(id 5): recv from rank 1 (transfer 2 from rank 1 to rank 0) has no matching send"},
    {"transfer-bytes", STEP4, "{\"id\":4,\"kind\":\"recv\",\"peer\":1,\"bytes\":4095}",
     "sizes and dtypes must agree"},
    {"transfer-dtype", STEP4, "{\"id\":4,\"kind\":\"recv\",\"peer\":1,\"bytes\":4096,\"dtype\":\"fp16\"}",
     "sizes and dtypes must agree"},
    {"send-to-self", "\"peer\":1,\"bytes\":65536", "\"peer\":0,\"bytes\":65536",
     "field 'peer' is 0: a rank cannot send to itself"},
    {"peer-out-of-range", "\"peer\":1,\"bytes\":65536", "\"peer\":2,\"bytes\":65536",
     "field 'peer' is 2: must be a whole number in 0..1"},
    {"forward-dep", "\"bytes\":131072.5,\"deps\":[0]", "\"bytes\":131072.5,\"deps\":[2]",
     "programs[0].steps[1] (id 1): deps: 2 names no earlier step of rank 0"},
    {"self-dep", "\"bytes\":131072.5,\"deps\":[0]", "\"bytes\":131072.5,\"deps\":[1]",
     "deps: 1 names no earlier step"},
    {"other-rank-dep", "\"deps\":[10]}", "\"deps\":[0]}", "deps: 0 names no earlier step of rank 1"},
    {"dep-not-number", "\"deps\":[10]}", "\"deps\":[\"10\"]}", "deps: \"10\" names no earlier step"},
    {"deps-not-array", "\"deps\":[10]}", "\"deps\":10}", "field 'deps' is 10: must be an array"},
    {"unknown-group", "\"group\":0,\"bytes\":1048576,\"deps\":[0]", "\"group\":7,\"bytes\":1048576,\"deps\":[0]",
     "field 'group' is 7: no such group"},
    {"group-without-rank", "\"group\":0,\"bytes\":1048576,\"deps\":[0]",
     "\"group\":5,\"bytes\":1048576,\"deps\":[0]", "group 5 does not contain rank 0"},
    {"group-rank-range", "{\"id\":5,\"ranks\":[1]}", "{\"id\":5,\"ranks\":[2]}",
     "groups[1]: ranks[0] is 2: must be a rank in 0..1"},
    {"group-duplicate-rank", "\"ranks\":[0,1]", "\"ranks\":[1,1]", "rank 1 appears twice"},
    {"group-duplicate-id", "{\"id\":5,", "{\"id\":0,", "groups[1]: group id 0 appears twice"},
    {"group-empty", "{\"id\":5,\"ranks\":[1]}", "{\"id\":5,\"ranks\":[]}", "groups[1]: field 'ranks' must be"},
    {"negative-bytes", "\"bytes\":131072.5", "\"bytes\":-5",
     "programs[0].steps[1] (id 1): field 'bytes' is -5: must be a positive finite number"},
    {"zero-bytes", "\"bytes\":131072.5", "\"bytes\":0", "field 'bytes' is 0"},
    {"infinite-bytes", "\"bytes\":131072.5", "\"bytes\":1e999", "field 'bytes' is inf"},
    {"huge-bytes", "\"bytes\":131072.5", "\"bytes\":1e16", "field 'bytes' is 10000000000000000"},
    {"string-bytes", "\"bytes\":131072.5", "\"bytes\":\"5\"", "field 'bytes' is \"5\""},
    {"missing-bytes", ",\"bytes\":131072.5", "", "missing field 'bytes'"},
    {"elements-fraction", "\"elements\":16384", "\"elements\":16384.5", "field 'elements' is 16384.5"},
    {"bad-json", "]}]}", "]}", "test.json: malformed JSON at line 1"},
    {"overflow-macs", GEMM0, "\"m\":2147483647,\"n\":2147483647,\"k\":2147483647,\"batch\":1,\"dtype\":\"fp32\"",
     "m*n*k*batch exceeds 4611686018427387904"},
    {"overflow-operand", GEMM0, "\"m\":1073741824,\"n\":1,\"k\":1073741824,\"batch\":1,\"dtype\":\"fp32\"",
     "gemm operand A (m x k)"},
    {"dim-over-int", GEMM0, "\"m\":3000000000,\"n\":1,\"k\":1,\"batch\":1,\"dtype\":\"fp32\"",
     "field 'm' is 3000000000: must be a whole number in 1..2147483647"},
    {"dim-zero", GEMM0, "\"m\":32,\"n\":0,\"k\":512,\"batch\":1,\"dtype\":\"fp32\"", "field 'n' is 0"},
    {"missing-k", GEMM0, "\"m\":32,\"n\":512,\"batch\":1,\"dtype\":\"fp32\"", "missing field 'k'"},
    {"unknown-kind", "\"kind\":\"elementwise\"", "\"kind\":\"conv\"",
     "field 'kind' is \"conv\": must be one of gemm, elementwise, collective, send, recv"},
    {"unknown-dtype", "\"dtype\":\"bf16\"", "\"dtype\":\"fp4\"", "field 'dtype' is \"fp4\""},
    {"unknown-stream", "\"stream\":\"compute\"", "\"stream\":\"copy\"", "field 'stream' is \"copy\""},
    {"unknown-collective", "\"collective\":\"broadcast\"", "\"collective\":\"send_recv\"",
     "field 'collective' is \"send_recv\": must be one of all_reduce, all_gather, reduce_scatter, "
     "all_to_all, broadcast"},
    {"predicted-negative", "\"predicted_s\":1.2e-05", "\"predicted_s\":-1", "field 'predicted_s' is -1"},
    {"step-not-object", STEP4, "4", "programs[0].steps[4]: must be an object"},
    {"duplicate-id", "{\"id\":1,", "{\"id\":0,", "programs[0].steps[1] (id 0): step id 0 appears twice"},
    {"missing-id", "{\"id\":1,", "{", "programs[0].steps[1]: missing field 'id'"},
    {"wrong-format", "\"stratsim-plan\"", "\"stratsim-measurements\"",
     "test.json: field 'format' is \"stratsim-measurements\": must be \"stratsim-plan\""},
    {"wrong-version", "\"version\":1", "\"version\":2", "field 'version' is 2: this reader knows version 1"},
    {"no-ranks", "\"ranks\":2,", "", "missing field 'ranks'"},
    {"zero-ranks", "\"ranks\":2,", "\"ranks\":0,", "field 'ranks' is 0: must be a whole number in 1..65536"},
    {"too-many-ranks", "\"ranks\":2,", "\"ranks\":65537,", "field 'ranks' is 65537"},
    {"programs-count", "\"ranks\":2,", "\"ranks\":3,", "one program per rank (3)"},
    {"duplicate-program", "{\"rank\":1,", "{\"rank\":0,", "programs[1]: rank 0 has two programs"},
    {"iterations-zero", "\"iterations\":5", "\"iterations\":0", "field 'iterations' is 0"},
    {"collective-bytes", STEP12, "{\"id\":12,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":2048},",
     "collective 1 of group 0 is all_reduce of 2048 bytes (fp32) on rank 1 but all_reduce of 1048576"},
    {"collective-kind", STEP12, "{\"id\":12,\"kind\":\"collective\",\"collective\":\"all_gather\",\"group\":0,\"bytes\":1048576},",
     "every member must issue the group's collectives in the same order"},
    {"collective-missing", STEP12, "", "rank 1 issues 0 collective(s) of group 0 but rank 0 issues 1"},
    {"collective-extra", STEP12, STEP12 "{\"id\":15,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":1048576},",
     "collective 2 of group 0 on rank 1 has no counterpart: rank 0"},
    {"deadlock-transfers", STEP2 "," STEP3 "," STEP4, STEP4 "," STEP2 "," STEP3,
     "test.json: programs[0].steps[2] (id 4): the plan can deadlock: rank 0 waits at recv from "
     "rank 1, which waits at step id 10 (its match is id 13)"},
    {"micro-op", "\"op\":\"matmul\"", "\"op\":\"fft\"",
     "microbenchmarks.ops[0]: field 'op' is \"fft\": must be a model op kind"},
    {"micro-gemm-overflow", "\"m\":32,\"n\":512,\"k\":512,\"batch\":1}", "\"m\":2147483647,\"n\":2147483647,\"k\":2,\"batch\":2}",
     "microbenchmarks.ops[0]: gemm m=2147483647"},
    {"micro-phase", "\"phase\":\"backward\"", "\"phase\":\"both\"", "microbenchmarks.ops[1]: field 'phase'"},
    {"micro-ranks", "\"ranks\":2,\"nodes\":1", "\"ranks\":4,\"nodes\":1",
     "microbenchmarks.collectives[0]: field 'ranks' is 4: must be a whole number in 2..2"},
    {"micro-nodes", "\"ranks\":2,\"nodes\":1", "\"ranks\":2,\"nodes\":3", "field 'nodes' is 3"},
    {"micro-kind", "\"kind\":\"all_reduce\"", "\"kind\":\"allreduce\"", "field 'kind' is \"allreduce\""},
    {"not-object", PLAN, "[1]", "test.json: a plan must be a JSON object"},
};

static char *replace_once(const char *text, const char *find, const char *replace) {
  const char *at = strstr(text, find);
  g_assert_nonnull(at); /* the first occurrence is the one meant */
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, replace, at + strlen(find));
}

static void test_bad(gconstpointer data) {
  const BadCase *bc = data;
  char *text = replace_once(PLAN, bc->find, bc->replace);
  GError *error = NULL;
  ValPlan *plan = val_plan_parse(text, "test.json", &error);
  g_assert_null(plan);
  g_assert_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT);
  if (!strstr(error->message, bc->expect))
    g_error("%s: expected \"%s\" in \"%s\"", bc->path, bc->expect, error->message);
  g_error_free(error);
  g_free(text);
}

/* --- measurements --- */

static void test_measurements_round_trip(void) {
  ValPlan *plan = parse_ok(PLAN);
  ValMeasurements *m = val_measurements_new(plan, "gpu");
  char *argv[] = {"stratsim-runner", "my plan.json", "-o", "out.json"};
  val_measurements_set_env_string(m, "device", "NVIDIA H100 80GB HBM3");
  val_measurements_set_env_string(m, "device_kind", "h100-sxm");
  val_measurements_set_env_int(m, "sm_clock_mhz", 1980);
  val_measurements_set_env_string(m, "nccl", NULL);
  val_measurements_set_env_defaults(m, 4, argv);
  val_measurements_set_env_string(m, "device", "NVIDIA H200"); /* replaced in place */
  val_measurements_set_warmup(m, 7);
  val_measurements_add_iteration(m, 0.003);
  val_measurements_add_iteration(m, 0.001);
  val_measurements_add_iteration(m, 0.002);
  val_measurements_add_iteration(m, 0.004);
  double times[] = {2e-5, 1e-5, 3e-5};
  val_measurements_add_step(m, 1, 12, times, 3);
  val_measurements_add_step(m, 0, 3, times, 1);
  val_measurements_set_microbench_info(m, "h100-sxm", "cuBLAS, CUDA events");
  val_measurements_add_kernel(m, &plan->micro_ops[0], 1.1e-5);
  val_measurements_add_kernel(m, &plan->micro_ops[1], 2.5e-6);
  val_measurements_add_collective(m, &plan->micro_collectives[0], 3.9e-5);
  char *text = val_measurements_to_json(m);
  g_assert_true(g_str_has_suffix(text, "}\n"));

  cJSON *root = cJSON_Parse(text);
  g_assert_nonnull(root);
#define GET(obj, key) cJSON_GetObjectItemCaseSensitive(obj, key)
  g_assert_cmpstr(cJSON_GetStringValue(GET(root, "format")), ==, "stratsim-measurements");
  g_assert_cmpfloat(GET(root, "version")->valuedouble, ==, 1);
  g_assert_cmpstr(cJSON_GetStringValue(GET(root, "runner")), ==, "gpu");
  cJSON *p = GET(root, "plan");
  g_assert_cmpstr(cJSON_GetStringValue(GET(p, "model")), ==, "mlp:layers=2");
  g_assert_cmpstr(cJSON_GetStringValue(GET(p, "cluster")), ==, "dgx-a100:nodes=1,gpus_per_node=2");
  g_assert_cmpstr(cJSON_GetStringValue(GET(p, "strategy")), ==, "dp");
  g_assert_cmpfloat(GET(p, "ranks")->valuedouble, ==, 2);
  cJSON *env = GET(root, "environment");
  g_assert_cmpstr(env->child->string, ==, "device"); /* first set, first written */
  g_assert_cmpstr(cJSON_GetStringValue(GET(env, "device")), ==, "NVIDIA H200");
  g_assert_cmpstr(cJSON_GetStringValue(GET(env, "device_kind")), ==, "h100-sxm");
  g_assert_cmpfloat(GET(env, "sm_clock_mhz")->valuedouble, ==, 1980);
  g_assert_null(GET(env, "nccl"));
  g_assert_cmpstr(cJSON_GetStringValue(GET(env, "host")), ==, g_get_host_name());
  g_assert_cmpstr(cJSON_GetStringValue(GET(env, "command")), ==,
                  "stratsim-runner 'my plan.json' -o out.json");
  const char *date = cJSON_GetStringValue(GET(env, "date"));
  g_assert_true(g_regex_match_simple("^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z$",
                                     date, 0, 0));
  g_assert_cmpfloat(GET(root, "warmup")->valuedouble, ==, 7);
  cJSON *its = GET(root, "iterations_s");
  g_assert_cmpint(cJSON_GetArraySize(its), ==, 4);
  g_assert_cmpfloat(cJSON_GetArrayItem(its, 0)->valuedouble, ==, 0.003);
  g_assert_cmpfloat(GET(root, "iteration_time_s")->valuedouble, ==, 0.0025);
  cJSON *steps = GET(root, "steps");
  g_assert_cmpint(cJSON_GetArraySize(steps), ==, 2);
  cJSON *s0 = cJSON_GetArrayItem(steps, 0);
  g_assert_cmpfloat(GET(s0, "rank")->valuedouble, ==, 1);
  g_assert_cmpfloat(GET(s0, "id")->valuedouble, ==, 12);
  g_assert_cmpfloat(GET(s0, "time_s")->valuedouble, ==, 2e-5);
  g_assert_cmpfloat(GET(cJSON_GetArrayItem(steps, 1), "time_s")->valuedouble, ==, 2e-5);
  cJSON *prof = GET(root, "profiles");
  g_assert_cmpstr(cJSON_GetStringValue(GET(prof, "device")), ==, "h100-sxm");
  g_assert_cmpstr(cJSON_GetStringValue(GET(prof, "source")), ==, "cuBLAS, CUDA events");
  cJSON *k0 = cJSON_GetArrayItem(GET(prof, "kernels"), 0);
  g_assert_cmpstr(cJSON_GetStringValue(GET(k0, "op")), ==, "matmul");
  g_assert_cmpfloat(GET(k0, "m")->valuedouble, ==, 32);
  g_assert_cmpfloat(GET(k0, "batch")->valuedouble, ==, 1);
  g_assert_cmpfloat(GET(k0, "time_s")->valuedouble, ==, 1.1e-5);
  cJSON *k1 = cJSON_GetArrayItem(GET(prof, "kernels"), 1);
  g_assert_cmpstr(cJSON_GetStringValue(GET(k1, "dtype")), ==, "fp16");
  g_assert_cmpstr(cJSON_GetStringValue(GET(k1, "phase")), ==, "backward");
  g_assert_cmpfloat(GET(k1, "elements")->valuedouble, ==, 16384);
  g_assert_null(GET(k1, "m"));
  cJSON *coll = GET(root, "collectives");
  cJSON *c0 = cJSON_GetArrayItem(GET(coll, "collectives"), 0);
  g_assert_cmpstr(cJSON_GetStringValue(GET(c0, "kind")), ==, "all_reduce");
  g_assert_cmpfloat(GET(c0, "ranks")->valuedouble, ==, 2);
  g_assert_cmpfloat(GET(c0, "nodes")->valuedouble, ==, 1);
  g_assert_cmpfloat(GET(c0, "bytes")->valuedouble, ==, 1048576);
  g_assert_cmpfloat(GET(c0, "time_s")->valuedouble, ==, 3.9e-5);
  /* PLAN.md's field order */
  const char *order[] = {"format", "version", "runner", "plan", "environment", "warmup",
                         "iterations_s", "iteration_time_s", "steps", "profiles", "collectives"};
  guint i = 0;
  for (cJSON *f = root->child; f; f = f->next, i++) g_assert_cmpstr(f->string, ==, order[i]);
  g_assert_cmpuint(i, ==, G_N_ELEMENTS(order));
  cJSON_Delete(root);
  g_free(text);

  /* written to a file, the same text; an unwritable path is an IO error */
  char *dir = g_dir_make_tmp("test-val-meas-XXXXXX", NULL);
  char *path = g_build_filename(dir, "m.json", NULL);
  GError *error = NULL;
  g_assert_true(val_measurements_write(m, path, &error));
  g_assert_no_error(error);
  char *back = NULL;
  g_assert_true(g_file_get_contents(path, &back, NULL, NULL));
  text = val_measurements_to_json(m);
  g_assert_cmpstr(back, ==, text);
  char *bad = g_build_filename(dir, "missing", "m.json", NULL);
  g_assert_false(val_measurements_write(m, bad, &error));
  g_assert_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_IO);
  g_clear_error(&error);
  g_remove(path);
  g_rmdir(dir);
  g_free(bad);
  g_free(back);
  g_free(text);
  g_free(path);
  g_free(dir);
  val_measurements_free(m);
  val_plan_free(plan);
}

/* Nothing measured: empty arrays, no median, no micro-benchmark sections. */
static void test_measurements_empty(void) {
  ValPlan *plan = parse_ok(PLAN);
  ValMeasurements *m = val_measurements_new(plan, "cpu");
  char *text = val_measurements_to_json(m);
  cJSON *root = cJSON_Parse(text);
  g_assert_cmpint(cJSON_GetArraySize(GET(root, "iterations_s")), ==, 0);
  g_assert_cmpint(cJSON_GetArraySize(GET(root, "steps")), ==, 0);
  g_assert_null(GET(root, "iteration_time_s"));
  g_assert_null(GET(root, "profiles"));
  g_assert_null(GET(root, "collectives"));
  g_assert_cmpfloat(GET(root, "warmup")->valuedouble, ==, 2);
  g_assert_cmpstr(cJSON_GetStringValue(GET(root, "runner")), ==, "cpu");
  cJSON_Delete(root);
  g_free(text);
  val_measurements_free(m);
  val_plan_free(plan);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/plan/valid", test_valid);
  g_test_add_func("/validate/plan/defaults", test_defaults);
  g_test_add_func("/validate/plan/names", test_names);
  g_test_add_func("/validate/plan/read-file", test_read_file);
  for (guint i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
    char *path = g_strdup_printf("/validate/plan/bad/%s", bad_cases[i].path);
    g_test_add_data_func(path, &bad_cases[i], test_bad);
    g_free(path);
  }
  g_test_add_func("/validate/measurements/round-trip", test_measurements_round_trip);
  g_test_add_func("/validate/measurements/empty", test_measurements_empty);
  return g_test_run();
}
