/* Tests of expert parallelism's layouts beyond test-moe.c: expert tensor parallelism apart from
 * tp (Megatron-Core's --expert-tensor-parallel-size, `etp=`): the expert groups as Megatron-Core
 * builds them (parallel_state.py: the expert RankGenerator lays out etp-ep-edp-pp over the same
 * ranks as the dense tp-cp-dp-pp), the expert weights' memory, the one-line errors, describe and
 * the strategy JSON; and the all-gather token dispatcher (--moe-token-dispatcher-type allgather,
 * `dispatcher=`): its collectives, their bytes as token_dispatcher.py's, each the cost model's
 * formula. */
#include <glib.h>
#include <string.h>

#include "model/mdl_strategy-int.h"
#include "costmodel/cm_framework.h"
#include "test-moe-util.h"
#include "test-util.h"

static MdlStrategy *parse_or_die(const char *spec, const MdlGraph *g, const DevCluster *c) {
  GError *error = NULL;
  MdlStrategy *s = mdl_strategy_parse_spec(spec, g, c, &error);
  g_assert_no_error(error);
  return s;
}

static int find_op(const MdlGraph *g, const char *name) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    if (strcmp(mdl_graph_op(g, o)->name, name) == 0) return o;
  g_error("no op %s", name);
}

/* Whether mesh indices @i and @j differ only on the axes in @mask. */
static gboolean same_group(const MdlMesh *mesh, unsigned mask, int i, int j) {
  for (int a = mesh->ndims - 1; a >= 0; a--) {
    if (!(mask & (1u << a)) && i % mesh->shape[a] != j % mesh->shape[a]) return FALSE;
    i /= mesh->shape[a], j /= mesh->shape[a];
  }
  return TRUE;
}

/* The axes on which op @o splits its dim named @dim. */
static unsigned split_axes(const MdlGraph *g, const MdlStrategy *s, int o, const char *dim) {
  const MdlOp *op = mdl_graph_op(g, o);
  const MdlMesh *mesh = mdl_strategy_mesh(s, s->configs[o].mesh);
  unsigned mask = 0;
  for (int a = 0; a < mesh->ndims; a++)
    if (s->configs[o].split[a] >= 0 && strcmp(op->dims[s->configs[o].split[a]].name, dim) == 0)
      mask |= 1u << a;
  return mask;
}

/* Megatron-Core's groups of ranks r, r' of one pipeline stage (rank = mesh index here). */
typedef enum { GROUP_DENSE_TP, GROUP_EP, GROUP_ETP, GROUP_EDP } Group;
static gboolean megatron_group(Group kind, int tp, int etp, int ep, int r, int q) {
  switch (kind) {
  case GROUP_DENSE_TP: return r / tp == q / tp;
  case GROUP_EP: return r / (etp * ep) == q / (etp * ep) && r % etp == q % etp;
  case GROUP_ETP: return r / etp == q / etp;
  default: return r % (etp * ep) == q % (etp * ep); /* expert data parallelism */
  }
}

/* For @spec: the devices across which the expert GEMM splits its experts (EP), its tensor dim
 * (ETP), across which its weight is replicated (expert DP), and across which the shared
 * experts' column-parallel GEMM splits n (dense TP) are Megatron-Core's groups. */
static void check_groups(const char *spec, int tp, int etp, int ep) {
  DevCluster *c = h100(2);
  MdlGraph *g = moe_graph(16, 64, 128, &small_moe);
  MdlStrategy *s = parse_or_die(spec, g, c);
  g_assert_cmpint(s->etp, ==, etp);
  int fc1 = find_op(g, "layer0.expert_fc1"), shared = find_op(g, "layer0.shared_fc1");
  const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
  const MdlOp *op = mdl_graph_op(g, fc1);
  unsigned masks[4] = {split_axes(g, s, shared, "n"), split_axes(g, s, fc1, "e"),
                       etp > 1 ? split_axes(g, s, fc1, "n") : 0,
                       mdl_operand_replica_axes(op, &op->inputs[1], &s->configs[fc1], mesh)};
  for (int kind = GROUP_DENSE_TP; kind <= GROUP_EDP; kind++)
    for (int r = 0; r < mesh->ndevices; r++)
      for (int q = 0; q < mesh->ndevices; q++) {
        g_assert_cmpint(mesh->devices[r], ==, r);
        if (same_group(mesh, masks[kind], r, q) != megatron_group(kind, tp, etp, ep, r, q))
          g_error("%s: group %d of ranks %d and %d differs from Megatron-Core's", spec, kind, r, q);
      }
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* The grouped expert GEMM's shard per GPU: E/ep experts, its output features (2f, SwiGLU's
 * gate and up) cut by etp, every token of the rank's expert-data-parallel replica. */
static void test_gemm_shard(void) {
  DevCluster *c = h100(2);
  MdlGraph *g = moe_graph(16, 64, 128, &small_moe);
  int fc1 = find_op(g, "layer0.expert_fc1");
  const MdlOp *op = mdl_graph_op(g, fc1);
  struct { const char *spec; int ep, etp; } cases[] = {
    {"megatron:dp=4,tp=4,ep=4", 4, 4},
    {"megatron:dp=4,tp=4,ep=4,etp=2", 4, 2},
    {"megatron:dp=4,tp=4,ep=8,etp=1", 8, 1},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    MdlStrategy *s = parse_or_die(cases[i].spec, g, c);
    const MdlMesh *mesh = mdl_strategy_mesh(s, 0);
    int e = mdl_op_find_dim(op, "e"), n = mdl_op_find_dim(op, "n");
    g_assert_cmpfloat(mdl_config_local_dim(op, e, &s->configs[fc1], mesh, s->num_microbatches), ==,
                      8.0 / cases[i].ep);
    g_assert_cmpfloat(mdl_config_local_dim(op, n, &s->configs[fc1], mesh, s->num_microbatches), ==,
                      2.0 * 512 / cases[i].etp);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_groups(void) {
  check_groups("megatron:dp=4,tp=4,ep=4", 4, 4, 4);         /* etp = tp, as before */
  check_groups("megatron:dp=4,tp=4,ep=8,etp=1", 4, 1, 8);   /* mesh (2, 2, 4) */
  check_groups("megatron:dp=4,tp=4,ep=4,etp=2", 4, 2, 4);   /* (2, 2, 2, 2) */
  check_groups("megatron:dp=2,tp=8,ep=8,etp=1", 8, 1, 8);   /* (2, 8): EP inside the TP group */
  check_groups("megatron:dp=8,tp=2,ep=4,etp=1", 2, 1, 4);
}

/* Expert weights per GPU: E experts of 3 h f parameters over ep x etp; the router's h E
 * parameters on every GPU (no shared experts here). */
static void test_memory(void) {
  DevCluster *c = h100(2);
  MdlMoeConfig moe = small_moe;
  moe.shared_ffn = 0;
  MdlGraph *g = moe_graph(16, 64, 128, &moe);
  struct { const char *spec; int ep, etp; } cases[] = {
    {"megatron:dp=8,tp=2,ep=2", 2, 2},
    {"megatron:dp=8,tp=2,ep=2,etp=1", 2, 1},
    {"megatron:dp=8,tp=2,ep=8,etp=1", 8, 1},
    {"megatron:dp=4,tp=4,ep=4,etp=2", 4, 2},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    MdlStrategy *s = parse_or_die(cases[i].spec, g, c);
    CmMemory *m = cm_memory_per_device(g, s, c);
    double expect = 2.0 * (128.0 * 8 + 8.0 * 3 * 128 * 512 / (cases[i].ep * cases[i].etp));
    g_assert_cmpfloat(m[0].weights, ==, expect);
    g_free(m);
    mdl_strategy_free(s);
  }
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void expect_error(const char *spec, const char *needle) {
  DevCluster *c = h100(2);
  MdlGraph *g = moe_graph(16, 64, 128, &small_moe);
  test_assert_strategy_error(g, c, spec, -1, needle);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

static void test_errors(void) {
  expect_error("megatron:dp=4,tp=2,ep=2,etp=4", "etp=4 must divide tp=2");
  expect_error("megatron:dp=4,tp=4,ep=2,etp=1", "etp=1 needs ep to be a multiple of tp/etp = 4 (got ep=2)");
  expect_error("megatron:dp=8,tp=2,etp=1", "etp=1 differs from tp=2 but ep=1");
  expect_error("megatron:dp=2,tp=2,ep=8,etp=1", "ep/(tp/etp) = 8/2 must divide dp*cp = 2*1");
  expect_error("megatron:dp=4,tp=2,ep=2,etp=0", "etp=0");
  expect_error("megatron:dp=2,tp=2,cp=2,ep=4,etp=2,pp=1,mb=1,etp=x", "etp=x");
  expect_error("dp:etp=2", "tp, pp, cp, ep and etp must be 1");
}

/* describe names etp when it differs from tp; the strategy JSON keeps the layout (the meshes and
 * every op's splits) so that reading it back gives the same strategy. */
static void test_describe_json(void) {
  DevCluster *c = h100(2);
  MdlGraph *g = moe_graph(16, 64, 128, &small_moe);
  MdlStrategy *s = parse_or_die("megatron:dp=4,tp=4,ep=8,etp=1", g, c);
  MdlStrategy *same = parse_or_die("megatron:dp=4,tp=4,ep=4", g, c);
  g_autofree char *d = mdl_strategy_describe(s, g), *d_same = mdl_strategy_describe(same, g);
  g_assert_nonnull(strstr(d, "tp=4 pp=1 etp=1,"));
  g_assert_null(strstr(d_same, "etp"));
  g_autofree char *json = mdl_strategy_to_json(s, g);
  GError *error = NULL;
  MdlStrategy *back = mdl_strategy_from_json(json, "test", g, c, &error);
  g_assert_no_error(error);
  g_assert_true(mdl_strategy_same_except_splits(s, back));
  g_assert_cmpmem(s->configs, sizeof(MdlOpConfig) * (gsize)s->num_ops, back->configs,
                  sizeof(MdlOpConfig) * (gsize)back->num_ops);
  mdl_strategy_free(back);
  mdl_strategy_free(same);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}


/* The all-gather dispatcher on 4 expert ranks (dp=4, ep=4, 2 samples of 256 tokens a rank,
 * overlap off): MoEAllGatherTokenDispatcher all-gathers the hidden states over the tp x ep group,
 * [(S/TP) B, H] -> [(S/TP) B TP EP, H] (token_permutation), and reduce-scatters the un-permuted
 * expert outputs back (token_unpermutation): each moves EP S B H elements a rank; the backward
 * runs the reverse pair. The routing weights reach the rank of each expert as an all-to-all of
 * the logits (Megatron-Core all-gathers them whole: H/E times smaller than the tokens, left
 * out). Every collective is the formula's time, and with overlap off the exposed communication
 * is their sum. */
static void test_allgather_dispatcher(void) {
  DevCluster *c = h100(1);
  MdlMoeConfig moe = small_moe;
  moe.shared_ffn = 0;
  int64_t b = 8, seq = 256, h = 512, local_b = 2, ep = 4;
  MdlGraph *g = moe_graph_after_op(b, seq, h, &moe, TRUE);
  MdlStrategy *st = parse_or_die("megatron:dp=4,ep=4,mb=2,overlap=0,dispatcher=allgather", g, c);
  g_assert_cmpint(st->dispatcher, ==, MDL_DISPATCHER_ALLGATHER);
  CmParams params;
  cm_params_default(&params);
  GError *error = NULL;
  SimRun *run = sim_run_new(g, st, c, &params, &error);
  g_assert_no_error(error);
  double tokens = (double)(ep * local_b * seq * h) * 2; /* bf16 */
  double ag = 0, rs = 0, a2a = 0, ar = 0;
  g_assert_cmpint(check_collectives(run, c, "all_gather", 4, tokens, &ag), ==, 2);
  g_assert_cmpint(check_collectives(run, c, "reduce_scatter", 4, tokens, &rs), ==, 2);
  g_assert_cmpint(check_collectives(run, c, "all_to_all", 4, 2.0 * local_b * seq * moe.experts, &a2a), ==, 2);
  /* the router's gradient all-reduce, in the framework's gradient precision (fp32 main_grad
   * under megatron-lm) */
  double grad_bytes = cm_framework_grad_bytes(st->framework, st->dtype);
  g_assert_cmpint(check_collectives(run, c, "all_reduce", 4, grad_bytes * h * moe.experts, &ar), ==, 1);
  double sum = ag + rs + a2a + ar;
  g_assert_cmpfloat_with_epsilon(sim_run_prediction(run)->comm_exposed_s, sum, 1e-9 * sum);
  /* The all-to-all dispatcher of the same layout moves the token buffers instead. */
  MdlStrategy *a2a_st = parse_or_die("megatron:dp=4,ep=4,mb=2,overlap=0", g, c);
  SimRun *a2a_run = sim_run_new(g, a2a_st, c, &params, &error);
  g_assert_no_error(error);
  double buffers = 2.0 * local_b * moe.experts * mdl_moe_capacity(&moe, seq) * h, t = 0;
  g_assert_cmpint(check_collectives(a2a_run, c, "all_to_all", 4, buffers, &t), ==, 4);
  g_assert_cmpint(check_collectives(a2a_run, c, "all_gather", 4, tokens, &t), ==, 0);
  g_test_message("exposed communication: allgather %.1f us, alltoall %.1f us", sum * 1e6,
                 sim_run_prediction(a2a_run)->comm_exposed_s * 1e6);
  sim_run_free(a2a_run);
  mdl_strategy_free(a2a_st);
  sim_run_free(run);
  mdl_strategy_free(st);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* The key's errors, describe, and the JSON (the layouts carry the dispatcher). */
static void test_dispatcher_key(void) {
  expect_error("megatron:dp=4,ep=4,dispatcher=ring", "dispatcher=ring must be alltoall or allgather");
  expect_error("megatron:dp=4,dispatcher=allgather", "dispatcher=allgather needs expert parallelism");
  DevCluster *c = h100(1);
  MdlGraph *g = moe_graph(16, 64, 128, &small_moe);
  MdlStrategy *s = parse_or_die("megatron:dp=8,ep=4,dispatcher=allgather", g, c);
  g_autofree char *d = mdl_strategy_describe(s, g);
  g_assert_nonnull(strstr(d, " dispatcher=allgather,"));
  int dispatch = find_op(g, "layer0.moe_dispatch"), combine = find_op(g, "layer0.moe_combine");
  g_assert_cmpuint(split_axes(g, s, dispatch, "e"), !=, 0);
  g_assert_cmpuint(split_axes(g, s, combine, "e"), !=, 0);
  g_autofree char *json = mdl_strategy_to_json(s, g);
  GError *error = NULL;
  MdlStrategy *back = mdl_strategy_from_json(json, "test", g, c, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(s->configs, sizeof(MdlOpConfig) * (gsize)s->num_ops, back->configs,
                  sizeof(MdlOpConfig) * (gsize)back->num_ops);
  mdl_strategy_free(back);
  mdl_strategy_free(s);
  s = parse_or_die("megatron:dp=8,ep=4", g, c); /* alltoall: dispatch and combine by sample */
  g_assert_cmpuint(split_axes(g, s, dispatch, "e"), ==, 0);
  g_assert_cmpuint(split_axes(g, s, combine, "e"), ==, 0);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Under sequence parallelism each tensor-parallel rank routes its own S/TP tokens: the dispatch
 * splits its token dim c on the tp axis, so the forward all-to-all of the dispatched buffers
 * moves b x E x (c/tp) x h a rank, and the tensor-parallel all-gather follows it (Megatron-Core's
 * alltoall dispatcher: permute, A2A(EP), AG(TP)); the way back reduce-scatters over tp before
 * its all-to-all (RS(TP), A2A(EP)). */
static void test_sp_dispatch(void) {
  DevCluster *c = h100(1);
  MdlMoeConfig moe = small_moe;
  moe.shared_ffn = 0;
  int64_t b = 8, seq = 256, h = 512, local_b = 2, tp = 2;
  MdlGraph *g = moe_graph_after_op(b, seq, h, &moe, TRUE);
  MdlStrategy *st = parse_or_die("megatron:dp=4,tp=2,ep=2,mb=2,sp=1", g, c);
  int dispatch = find_op(g, "layer0.moe_dispatch");
  const MdlMesh *mesh = mdl_strategy_mesh(st, 0);
  g_assert_cmpuint(split_axes(g, st, dispatch, "c"), ==, 1u << (mesh->ndims - 1));
  CmParams params;
  cm_params_default(&params);
  GError *error = NULL;
  SimRun *run = sim_run_new(g, st, c, &params, &error);
  g_assert_no_error(error);
  int out = mdl_graph_op(g, dispatch)->output.tensor, a2a = 0, ag = 0;
  double buffer = 2.0 * local_b * moe.experts * mdl_moe_capacity(&moe, seq) / tp * h;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.kind != SIM_TASK_COMM || t.phase != SIM_PHASE_FORWARD || t.tensor != out) continue;
    if (t.collective == CM_ALL_TO_ALL) {
      a2a++;
      g_assert_cmpfloat(t.bytes, ==, buffer);
    } else if (t.collective == CM_ALL_GATHER) { /* its gathered size: every tp rank's tokens */
      ag++;
      g_assert_cmpfloat(t.bytes, ==, buffer * tp);
    }
  }
  g_assert_cmpint(a2a, >, 0);
  g_assert_cmpint(ag, >, 0);
  /* The combine's read of the row-parallel expert GEMM's output (partial over tp, split by
   * expert): reduce-scattered over tp first, then the all-to-all moves the 1/tp shard
   * (Megatron-Core's token_unpermutation: RS(TP), then A2A(EP)). */
  int down = mdl_graph_op(g, find_op(g, "layer0.expert_fc2"))->output.tensor, rs = 0;
  a2a = 0;
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t;
    sim_run_task(run, i, &t);
    if (t.kind != SIM_TASK_COMM || t.phase != SIM_PHASE_FORWARD || t.tensor != down) continue;
    if (t.collective == CM_REDUCE_SCATTER) {
      g_assert_cmpint(a2a, ==, 0); /* built (and run) before the all-to-all */
      rs++;
      g_assert_cmpfloat(t.bytes, ==, buffer * tp);
    } else if (t.collective == CM_ALL_TO_ALL) {
      a2a++;
      g_assert_cmpfloat(t.bytes, ==, buffer);
    }
  }
  g_assert_cmpint(rs, >, 0);
  g_assert_cmpint(a2a, >, 0);
  sim_run_free(run);
  mdl_strategy_free(st);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/expert/etp/groups", test_groups);
  g_test_add_func("/expert/etp/memory", test_memory);
  g_test_add_func("/expert/etp/gemm-shard", test_gemm_shard);
  g_test_add_func("/expert/etp/errors", test_errors);
  g_test_add_func("/expert/etp/describe-json", test_describe_json);
  g_test_add_func("/expert/dispatcher/allgather-time", test_allgather_dispatcher);
  g_test_add_func("/expert/dispatcher/key", test_dispatcher_key);
  g_test_add_func("/expert/dispatcher/sp-tokens", test_sp_dispatch);
  return g_test_run();
}
