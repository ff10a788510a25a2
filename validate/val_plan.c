/* validate/plan — the plan reader: JSON -> ValPlan (header, groups, programs and their steps,
 * microbenchmarks), then the cross-rank checks that val_plan.h promises (val_plan_check.c).
 * Typed fields and their error wording are in val_plan_fields.c; the run-measurements writer
 * is in val_measurements.c. */
#include "validate/val_plan-int.h"

#include "model/mdl_graph.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

G_DEFINE_QUARK(val-plan-error-quark, val_plan_error)

/* --- names --- */

static const char *const dtype_names[] = {"fp32", "tf32", "fp16", "bf16"};
static const char *const kind_names[] = {"gemm", "elementwise", "collective", "send", "recv"};
static const char *const collective_names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                               "all_to_all", "broadcast", "send_recv", "reduce"};
static const char *const stream_names[] = {"compute", "comm", "p2p", "dp"};

const char *val_dtype_name(ValDtype dtype) {
  g_return_val_if_fail((guint)dtype < G_N_ELEMENTS(dtype_names), "?");
  return dtype_names[dtype];
}

guint val_dtype_size(ValDtype dtype) {
  return dtype == VAL_DTYPE_FP16 || dtype == VAL_DTYPE_BF16 ? 2 : 4;
}

const char *val_step_kind_name(ValStepKind kind) {
  g_return_val_if_fail((guint)kind < G_N_ELEMENTS(kind_names), "?");
  return kind_names[kind];
}

const char *val_collective_name(ValCollectiveKind kind) {
  g_return_val_if_fail((guint)kind < G_N_ELEMENTS(collective_names), "?");
  return collective_names[kind];
}

const char *val_stream_name(ValStream stream) {
  g_return_val_if_fail((guint)stream < G_N_ELEMENTS(stream_names), "?");
  return stream_names[stream];
}

int val_group_find(const ValGroup *group, int rank) {
  for (int i = 0; i < group->n_ranks; i++)
    if (group->ranks[i] == rank) return i;
  return -1;
}

double val_median(const double *values, guint n) {
  if (n == 0) return NAN;
  double *v = g_memdup2(values, n * sizeof *v);
  for (guint i = 1; i < n; i++) /* insertion sort: n is a few hundred iterations at most */
    for (guint j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  g_free(v);
  return m;
}

/* --- freeing --- */

static void program_clear(ValProgram *p) {
  for (guint i = 0; i < p->n_steps; i++) {
    ValStep *s = &p->steps[i];
    g_free(s->name);
    g_free(s->op);
    g_free(s->phase);
    g_free(s->deps);
  }
  g_free(p->steps);
}

void val_plan_free(ValPlan *plan) {
  if (!plan) return;
  for (int i = 0; i < plan->n_groups; i++) g_free(plan->groups[i].ranks);
  g_free(plan->groups);
  if (plan->programs)
    for (int r = 0; r < plan->ranks; r++) program_clear(&plan->programs[r]);
  g_free(plan->programs);
  g_free(plan->issue);
  for (guint i = 0; i < plan->n_micro_ops; i++) g_free(plan->micro_ops[i].op);
  g_free(plan->micro_ops);
  g_free(plan->micro_collectives);
  g_free(plan->source);
  g_free(plan->model);
  g_free(plan->cluster);
  g_free(plan->strategy);
  g_free(plan->predicted_device);
  g_free(plan);
}

/* --- groups --- */

/* Group membership as sorted (rank, position) pairs: a lookup is a binary search, so a
 * 65 536-rank group costs no scan per collective step. */
typedef struct {
  int rank, position;
} Member;

static int member_cmp(const void *a, const void *b) {
  const Member *x = a, *y = b;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

typedef struct {
  ValPlan *plan;
  Member **members;        /* per group, sorted by rank */
  int n_members;           /* entries of members (NULL until that group is read) */
  GHashTable *group_index; /* file id -> index + 1 */
} Reader;

static int member_position(const Reader *rd, int group, int rank) {
  const ValGroup *g = &rd->plan->groups[group];
  Member key = {rank, 0};
  const Member *m = bsearch(&key, rd->members[group], (size_t)g->n_ranks, sizeof key, member_cmp);
  return m ? m->position : -1;
}

static gboolean read_groups(Reader *rd, const cJSON *root, Ctx *c, GError **error) {
  ValPlan *plan = rd->plan;
  const cJSON *groups = util_json_member(root, "groups");
  if (!groups) return TRUE; /* a plan without collectives */
  if (!cJSON_IsArray(groups)) {
    val_plan_fail_value(error, c, "groups", groups, "must be an array");
    return FALSE;
  }
  int n = cJSON_GetArraySize(groups);
  plan->groups = g_new0(ValGroup, n);
  rd->members = g_new0(Member *, n);
  rd->n_members = n;
  int i = 0;
  for (const cJSON *gj = groups->child; gj; gj = gj->next, i++) {
    g_snprintf(c->at, sizeof c->at, "groups[%d]", i);
    if (!cJSON_IsObject(gj)) {
      val_plan_fail(error, c, "must be an object");
      return FALSE;
    }
    ValGroup *g = &plan->groups[i];
    if (!val_plan_int32_field(gj, "id", 0, G_MAXINT, TRUE, 0, &g->id, c, error)) return FALSE;
    if (g_hash_table_contains(rd->group_index, GINT_TO_POINTER(g->id))) {
      val_plan_fail(error, c, "group id %d appears twice", g->id);
      return FALSE;
    }
    const cJSON *ranks = util_json_member(gj, "ranks");
    int size = cJSON_IsArray(ranks) ? cJSON_GetArraySize(ranks) : 0;
    if (size < 1 || size > plan->ranks) {
      val_plan_fail(error, c, "field 'ranks' must be an array of 1..%d distinct ranks", plan->ranks);
      return FALSE;
    }
    plan->n_groups = i + 1; /* from here on, val_plan_free frees its ranks */
    g->ranks = g_new(int, size);
    rd->members[i] = g_new(Member, size);
    g->n_ranks = size;
    int j = 0;
    for (const cJSON *rj = ranks->child; rj; rj = rj->next, j++) {
      double x = cJSON_IsNumber(rj) ? rj->valuedouble : NAN;
      if (!(x >= 0 && x < plan->ranks && x == floor(x))) {
        char *d = util_json_describe(rj);
        val_plan_fail(error, c, "ranks[%d] is %s: must be a rank in 0..%d", j, d, plan->ranks - 1);
        g_free(d);
        return FALSE;
      }
      g->ranks[j] = (int)x;
      rd->members[i][j] = (Member){(int)x, j};
    }
    qsort(rd->members[i], (size_t)size, sizeof(Member), member_cmp);
    for (j = 1; j < size; j++)
      if (rd->members[i][j].rank == rd->members[i][j - 1].rank) {
        val_plan_fail(error, c, "rank %d appears twice in 'ranks'", rd->members[i][j].rank);
        return FALSE;
      }
    g_hash_table_insert(rd->group_index, GINT_TO_POINTER(g->id), GINT_TO_POINTER(i + 1));
  }
  return TRUE;
}

/* --- steps --- */

static gboolean gemm_dims(const cJSON *obj, ValDtype dtype, gint64 *m, gint64 *n, gint64 *k,
                          gint64 *batch, const Ctx *c, GError **error) {
  if (!val_plan_int_field(obj, "m", 1, G_MAXINT, TRUE, 0, m, c, error) ||
      !val_plan_int_field(obj, "n", 1, G_MAXINT, TRUE, 0, n, c, error) ||
      !val_plan_int_field(obj, "k", 1, G_MAXINT, TRUE, 0, k, c, error) ||
      !val_plan_int_field(obj, "batch", 1, G_MAXINT, FALSE, 1, batch, c, error))
    return FALSE;
  /* Each factor < 2^31: the products below are computed in 128 bits' worth of care. */
  guint64 mn = (guint64)*m * (guint64)*n, macs;
  if (!g_uint64_checked_mul(&macs, mn, (guint64)*k) ||
      !g_uint64_checked_mul(&macs, macs, (guint64)*batch) || macs > (guint64)VAL_PLAN_MAX_MACS) {
    val_plan_fail(error, c,
                  "gemm m=%" G_GINT64_FORMAT " n=%" G_GINT64_FORMAT " k=%" G_GINT64_FORMAT
                  " batch=%" G_GINT64_FORMAT ": m*n*k*batch exceeds %" G_GINT64_FORMAT,
                  *m, *n, *k, *batch, VAL_PLAN_MAX_MACS);
    return FALSE;
  }
  const struct {
    const char *name;
    gint64 rows, cols;
  } operands[] = {{"A (m x k)", *m, *k}, {"B (k x n)", *k, *n}, {"C (m x n)", *m, *n}};
  for (guint i = 0; i < G_N_ELEMENTS(operands); i++) {
    guint64 bytes = (guint64)operands[i].rows * (guint64)operands[i].cols; /* < 2^62 */
    if (!g_uint64_checked_mul(&bytes, bytes, (guint64)*batch) ||
        !g_uint64_checked_mul(&bytes, bytes, val_dtype_size(dtype)) ||
        bytes > (guint64)VAL_PLAN_MAX_BYTES) {
      val_plan_fail(error, c, "gemm operand %s x batch %" G_GINT64_FORMAT " exceeds %" G_GINT64_FORMAT " bytes",
                    operands[i].name, *batch, VAL_PLAN_MAX_BYTES);
      return FALSE;
    }
  }
  return TRUE;
}

/* Reads programs[r].steps[i] into @s; ids of earlier steps are in @ids. */
static gboolean read_step(Reader *rd, const cJSON *sj, int rank, guint index, ValStep *s,
                          GHashTable *ids, Ctx *c, GError **error) {
  ValPlan *plan = rd->plan;
  ValProgram *p = &plan->programs[rank];
  g_snprintf(c->at, sizeof c->at, "programs[%d].steps[%u]", rank, index);
  s->predicted_s = NAN;
  s->microbatch = -1;
  s->group = -1;
  s->peer = -1;
  if (!cJSON_IsObject(sj)) {
    val_plan_fail(error, c, "must be an object");
    return FALSE;
  }
  if (!val_plan_int_field(sj, "id", 0, G_GINT64_CONSTANT(1) << 53, TRUE, 0, &s->id, c, error)) return FALSE;
  g_snprintf(c->at, sizeof c->at, "programs[%d].steps[%u] (id %" G_GINT64_FORMAT ")", rank, index,
             s->id);
  if (g_hash_table_contains(ids, &s->id)) {
    val_plan_fail(error, c, "step id %" G_GINT64_FORMAT " appears twice in rank %d's program", s->id, rank);
    return FALSE;
  }
  int kind, stream, dtype;
  if (!val_plan_enum_field(sj, "kind", kind_names, G_N_ELEMENTS(kind_names), TRUE, 0, &kind, c, error))
    return FALSE;
  s->kind = (ValStepKind)kind;
  int default_stream = s->kind == VAL_STEP_GEMM || s->kind == VAL_STEP_ELEMENTWISE
                           ? VAL_STREAM_COMPUTE
                           : VAL_STREAM_COMM;
  if (!val_plan_enum_field(sj, "stream", stream_names, G_N_ELEMENTS(stream_names), FALSE, default_stream,
                           &stream, c, error) ||
      !val_plan_enum_field(sj, "dtype", dtype_names, G_N_ELEMENTS(dtype_names), FALSE, (int)plan->dtype,
                           &dtype, c, error))
    return FALSE;
  s->stream = (ValStream)stream;
  s->dtype = (ValDtype)dtype;
  const char *name, *op, *phase;
  if (!val_plan_string_field(sj, "name", FALSE, &name, c, error) ||
      !val_plan_string_field(sj, "op", FALSE, &op, c, error) ||
      !val_plan_string_field(sj, "phase", FALSE, &phase, c, error) ||
      !val_plan_int32_field(sj, "microbatch", -1, G_MAXINT, FALSE, -1, &s->microbatch, c, error))
    return FALSE;
  s->name = g_strdup(name);
  s->op = g_strdup(op);
  s->phase = g_strdup(phase);
  const cJSON *pred = util_json_member(sj, "predicted_s");
  if (pred) {
    if (!cJSON_IsNumber(pred) || !isfinite(pred->valuedouble) || pred->valuedouble < 0) {
      val_plan_fail_value(error, c, "predicted_s", pred, "must be a finite number of seconds >= 0");
      return FALSE;
    }
    s->predicted_s = pred->valuedouble;
  }

  switch (s->kind) {
  case VAL_STEP_GEMM:
    if (!gemm_dims(sj, s->dtype, &s->m, &s->n, &s->k, &s->batch, c, error)) return FALSE;
    break;
  case VAL_STEP_ELEMENTWISE:
    if (!val_plan_int_field(sj, "elements", 1, VAL_PLAN_MAX_ELEMENTS, TRUE, 0, &s->elements, c, error) ||
        !val_plan_bytes_field(sj, "bytes", &s->bytes, c, error))
      return FALSE;
    break;
  case VAL_STEP_COLLECTIVE: {
    int coll, group_id;
    /* Steps take the first five kinds; send_recv and reduce are microbenchmark-only. */
    if (!val_plan_enum_field(sj, "collective", collective_names, VAL_COLL_BROADCAST + 1, TRUE, 0, &coll, c,
                             error) ||
        !val_plan_int32_field(sj, "group", 0, G_MAXINT, TRUE, 0, &group_id, c, error) ||
        !val_plan_bytes_field(sj, "bytes", &s->bytes, c, error))
      return FALSE;
    s->collective = (ValCollectiveKind)coll;
    int gi = GPOINTER_TO_INT(g_hash_table_lookup(rd->group_index, GINT_TO_POINTER(group_id))) - 1;
    if (gi < 0) {
      val_plan_fail(error, c, "field 'group' is %d: no such group in 'groups'", group_id);
      return FALSE;
    }
    s->group = gi;
    s->group_rank = member_position(rd, gi, rank);
    if (s->group_rank < 0) {
      val_plan_fail(error, c, "group %d does not contain rank %d", group_id, rank);
      return FALSE;
    }
    break;
  }
  case VAL_STEP_SEND:
  case VAL_STEP_RECV:
    if (!val_plan_int32_field(sj, "peer", 0, plan->ranks - 1, TRUE, 0, &s->peer, c, error) ||
        !val_plan_bytes_field(sj, "bytes", &s->bytes, c, error))
      return FALSE;
    if (s->peer == rank) {
      val_plan_fail(error, c, "field 'peer' is %d: a rank cannot %s itself", s->peer,
                    s->kind == VAL_STEP_SEND ? "send to" : "receive from");
      return FALSE;
    }
    break;
  }

  const cJSON *deps = util_json_member(sj, "deps");
  if (deps && !cJSON_IsArray(deps)) {
    val_plan_fail_value(error, c, "deps", deps, "must be an array of step ids");
    return FALSE;
  }
  int n_deps = deps ? cJSON_GetArraySize(deps) : 0;
  if (n_deps > 0) {
    s->deps = g_new(guint, n_deps);
    for (const cJSON *dj = deps->child; dj; dj = dj->next) {
      double x = cJSON_IsNumber(dj) ? dj->valuedouble : NAN;
      gint64 id = x >= 0 && x <= (double)(G_GINT64_CONSTANT(1) << 53) && x == floor(x) ? (gint64)x : -1;
      gpointer at = id >= 0 ? g_hash_table_lookup(ids, &id) : NULL;
      if (!at) {
        char *d = util_json_describe(dj);
        val_plan_fail(error, c, "deps: %s names no earlier step of rank %d (deps must name earlier steps "
                      "of the same rank)", d, rank);
        g_free(d);
        return FALSE;
      }
      s->deps[s->n_deps++] = (guint)((const ValStep *)at - p->steps);
    }
  }
  g_hash_table_insert(ids, &s->id, s);
  return TRUE;
}

static gboolean read_programs(Reader *rd, const cJSON *root, Ctx *c, GError **error) {
  ValPlan *plan = rd->plan;
  const cJSON *programs = util_json_member(root, "programs");
  int n = cJSON_IsArray(programs) ? cJSON_GetArraySize(programs) : -1;
  if (n != plan->ranks) {
    c->at[0] = '\0';
    val_plan_fail(error, c, "field 'programs' must be an array of one program per rank (%d)", plan->ranks);
    return FALSE;
  }
  /* Count first: nothing is allocated for a plan over the limits. */
  const cJSON **by_rank = g_new0(const cJSON *, n);
  guint64 total = 0;
  gboolean ok = FALSE;
  int i = 0;
  for (const cJSON *pj = programs->child; pj; pj = pj->next, i++) {
    g_snprintf(c->at, sizeof c->at, "programs[%d]", i);
    int rank;
    if (!cJSON_IsObject(pj)) {
      val_plan_fail(error, c, "must be an object");
      goto out;
    }
    if (!val_plan_int32_field(pj, "rank", 0, plan->ranks - 1, TRUE, 0, &rank, c, error)) goto out;
    if (by_rank[rank]) {
      val_plan_fail(error, c, "rank %d has two programs", rank);
      goto out;
    }
    by_rank[rank] = pj;
    const cJSON *steps = util_json_member(pj, "steps");
    if (!cJSON_IsArray(steps)) {
      val_plan_fail(error, c, "field 'steps' must be an array");
      goto out;
    }
    total += (guint64)cJSON_GetArraySize(steps);
    if (total > VAL_PLAN_MAX_TOTAL_STEPS) {
      c->at[0] = '\0';
      val_plan_fail(error, c, "more than %d steps in all programs", VAL_PLAN_MAX_TOTAL_STEPS);
      goto out;
    }
  }
  plan->n_steps = total;
  plan->programs = g_new0(ValProgram, n);
  for (int r = 0; r < n; r++) {
    ValProgram *p = &plan->programs[r];
    const cJSON *pj = by_rank[r];
    p->rank = r;
    g_snprintf(c->at, sizeof c->at, "programs[%d]", r);
    if (!val_plan_int32_field(pj, "host", 0, G_MAXINT, FALSE, 0, &p->host, c, error) ||
        !val_plan_int32_field(pj, "local_device", 0, G_MAXINT, FALSE, 0, &p->local_device, c, error))
      goto out;
    const cJSON *steps = util_json_member(pj, "steps");
    guint count = (guint)cJSON_GetArraySize(steps);
    p->steps = g_new0(ValStep, count);
    GHashTable *ids = g_hash_table_new(g_int64_hash, g_int64_equal); /* id -> ValStep * */
    gboolean steps_ok = TRUE;
    for (const cJSON *sj = steps->child; sj && steps_ok; sj = sj->next) {
      /* n_steps counts the steps to free, including a half-read one */
      steps_ok = read_step(rd, sj, r, p->n_steps, &p->steps[p->n_steps], ids, c, error);
      p->n_steps++;
    }
    g_hash_table_destroy(ids);
    if (!steps_ok) goto out;
  }
  ok = TRUE;
out:
  g_free(by_rank);
  return ok;
}

/* --- microbenchmarks --- */

static gboolean read_microbenchmarks(ValPlan *plan, const cJSON *root, Ctx *c, GError **error) {
  const cJSON *mb = util_json_member(root, "microbenchmarks");
  c->at[0] = '\0';
  if (!mb) return TRUE;
  if (!cJSON_IsObject(mb)) {
    val_plan_fail_value(error, c, "microbenchmarks", mb, "must be an object");
    return FALSE;
  }
  const cJSON *ops = util_json_member(mb, "ops"), *colls = util_json_member(mb, "collectives");
  if ((ops && !cJSON_IsArray(ops)) || (colls && !cJSON_IsArray(colls))) {
    val_plan_fail(error, c, "microbenchmarks: 'ops' and 'collectives' must be arrays");
    return FALSE;
  }
  int n_ops = ops ? cJSON_GetArraySize(ops) : 0, n_colls = colls ? cJSON_GetArraySize(colls) : 0;
  plan->micro_ops = g_new0(ValMicroOp, n_ops);
  plan->micro_collectives = g_new0(ValMicroCollective, n_colls);
  int i = 0;
  for (const cJSON *oj = ops ? ops->child : NULL; oj; oj = oj->next, i++) {
    g_snprintf(c->at, sizeof c->at, "microbenchmarks.ops[%d]", i);
    ValMicroOp *o = &plan->micro_ops[i];
    const char *op;
    MdlOpKind kind;
    int dtype;
    if (!cJSON_IsObject(oj)) {
      val_plan_fail(error, c, "must be an object");
      return FALSE;
    }
    if (!val_plan_string_field(oj, "op", TRUE, &op, c, error)) return FALSE;
    if (!mdl_op_kind_parse(op, &kind)) {
      val_plan_fail_value(error, c, "op", util_json_member(oj, "op"), "must be a model op kind (PROFILES.md)");
      return FALSE;
    }
    o->op = g_strdup(op);
    plan->n_micro_ops = (guint)i + 1;
    if (!val_plan_enum_field(oj, "dtype", dtype_names, G_N_ELEMENTS(dtype_names), TRUE, 0, &dtype, c, error))
      return FALSE;
    o->dtype = (ValDtype)dtype;
    o->gemm = kind == MDL_OP_MATMUL || kind == MDL_OP_BATCH_MATMUL || kind == MDL_OP_CONV2D;
    if (o->gemm) {
      if (!gemm_dims(oj, o->dtype, &o->m, &o->n, &o->k, &o->batch, c, error)) return FALSE;
    } else {
      int phase;
      static const char *const phases[] = {"forward", "backward"};
      if (!val_plan_int_field(oj, "elements", 1, VAL_PLAN_MAX_ELEMENTS, TRUE, 0, &o->elements, c, error) ||
          !val_plan_enum_field(oj, "phase", phases, 2, FALSE, 0, &phase, c, error))
        return FALSE;
      o->backward = phase == 1;
    }
  }
  i = 0;
  for (const cJSON *cj = colls ? colls->child : NULL; cj; cj = cj->next, i++) {
    g_snprintf(c->at, sizeof c->at, "microbenchmarks.collectives[%d]", i);
    ValMicroCollective *m = &plan->micro_collectives[i];
    int kind;
    if (!cJSON_IsObject(cj)) {
      val_plan_fail(error, c, "must be an object");
      return FALSE;
    }
    if (!val_plan_enum_field(cj, "kind", collective_names, G_N_ELEMENTS(collective_names), TRUE, 0, &kind,
                             c, error))
      return FALSE;
    m->kind = (ValCollectiveKind)kind;
    if (plan->ranks < 2) {
      val_plan_fail(error, c, "a collective benchmark needs at least 2 ranks; the plan has %d", plan->ranks);
      return FALSE;
    }
    if (!val_plan_int32_field(cj, "ranks", 2, plan->ranks, TRUE, 0, &m->ranks, c, error) ||
        !val_plan_int32_field(cj, "nodes", 1, m->ranks, TRUE, 0, &m->nodes, c, error) ||
        !val_plan_bytes_field(cj, "bytes", &m->bytes, c, error))
      return FALSE;
    plan->n_micro_collectives = (guint)i + 1;
  }
  return TRUE;
}

static gboolean read_header(ValPlan *plan, const cJSON *root, Ctx *c, GError **error) {
  const char *format, *model, *cluster, *strategy;
  gint64 version;
  int dtype;
  if (!cJSON_IsObject(root)) {
    val_plan_fail(error, c, "a plan must be a JSON object");
    return FALSE;
  }
  if (!val_plan_string_field(root, "format", TRUE, &format, c, error)) return FALSE;
  if (strcmp(format, "stratsim-plan") != 0) {
    val_plan_fail_value(error, c, "format", util_json_member(root, "format"), "must be \"stratsim-plan\"");
    return FALSE;
  }
  if (!val_plan_int_field(root, "version", 0, G_MAXINT, TRUE, 0, &version, c, error)) return FALSE;
  if (version != 1) {
    val_plan_fail(error, c, "field 'version' is %" G_GINT64_FORMAT ": this reader knows version 1", version);
    return FALSE;
  }
  if (!val_plan_string_field(root, "model", FALSE, &model, c, error) ||
      !val_plan_string_field(root, "cluster", FALSE, &cluster, c, error) ||
      !val_plan_string_field(root, "strategy", FALSE, &strategy, c, error) ||
      !val_plan_enum_field(root, "dtype", dtype_names, G_N_ELEMENTS(dtype_names), TRUE, 0, &dtype, c, error) ||
      !val_plan_int32_field(root, "ranks", 1, VAL_PLAN_MAX_RANKS, TRUE, 0, &plan->ranks, c, error) ||
      !val_plan_int32_field(root, "warmup", 0, VAL_PLAN_MAX_ITERATIONS_READ, FALSE, 3, &plan->warmup, c,
                            error) ||
      !val_plan_int32_field(root, "iterations", 1, VAL_PLAN_MAX_ITERATIONS_READ, FALSE, 10,
                            &plan->iterations, c, error))
    return FALSE;
  plan->model = g_strdup(model ? model : "");
  plan->cluster = g_strdup(cluster ? cluster : "");
  plan->strategy = g_strdup(strategy ? strategy : "");
  plan->dtype = (ValDtype)dtype;
  const cJSON *pred = util_json_member(root, "predicted");
  if (pred) {
    const cJSON *t = util_json_member(pred, "iteration_time_s");
    const char *device;
    if (!cJSON_IsObject(pred)) {
      val_plan_fail_value(error, c, "predicted", pred, "must be an object");
      return FALSE;
    }
    if (t && (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || t->valuedouble < 0)) {
      val_plan_fail_value(error, c, "predicted.iteration_time_s", t, "must be a finite number >= 0");
      return FALSE;
    }
    if (t) plan->predicted_iteration_time_s = t->valuedouble;
    if (!val_plan_string_field(pred, "device", FALSE, &device, c, error)) return FALSE;
    plan->predicted_device = g_strdup(device);
  }
  return TRUE;
}

ValPlan *val_plan_parse(const char *text, const char *source, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  Ctx c = {source ? source : "plan", ""};
  ValPlan *plan = g_new0(ValPlan, 1);
  plan->source = g_strdup(c.source);
  plan->predicted_iteration_time_s = NAN;
  Reader rd = {plan, NULL, 0, g_hash_table_new(g_direct_hash, g_direct_equal)};
  cJSON *root = val_plan_parse_json(text, &c, error);
  gboolean ok = root && read_header(plan, root, &c, error) && read_groups(&rd, root, &c, error) &&
                read_programs(&rd, root, &c, error) && val_plan_match_transfers(plan, &c, error) &&
                val_plan_match_collectives(plan, &c, error) && val_plan_check_streams(plan, &c, error) &&
                val_plan_check_deadlock(plan, &c, error) &&
                read_microbenchmarks(plan, root, &c, error);
  cJSON_Delete(root);
  for (int g = 0; g < rd.n_members; g++) g_free(rd.members[g]);
  g_free(rd.members);
  g_hash_table_destroy(rd.group_index);
  if (!ok) {
    val_plan_free(plan);
    return NULL;
  }
  return plan;
}

ValPlan *val_plan_read(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  GStatBuf st;
  if (g_stat(path, &st) != 0) {
    int e = errno;
    g_set_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_IO, "%s: cannot read the plan: %s", path,
                g_strerror(e));
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    g_set_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT, "%s: not a regular file", path);
    return NULL;
  }
  if ((guint64)st.st_size > VAL_PLAN_MAX_JSON_BYTES) {
    g_set_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT,
                "%s: %" G_GUINT64_FORMAT " bytes: a plan file may have at most %u bytes", path,
                (guint64)st.st_size, VAL_PLAN_MAX_JSON_BYTES);
    return NULL;
  }
  char *text = NULL;
  GError *local = NULL;
  if (!g_file_get_contents(path, &text, NULL, &local)) {
    g_set_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_IO, "%s: cannot read the plan: %s", path,
                local->message);
    g_error_free(local);
    return NULL;
  }
  ValPlan *plan = val_plan_parse(text, path, error);
  g_free(text);
  return plan;
}
