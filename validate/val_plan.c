/* validate/plan — the plan reader: JSON -> ValPlan, then the cross-rank checks (transfers
 * matched per pair, group collectives in one order, no deadlock) that val_plan.h promises.
 * The run-measurements writer is in val_measurements.c. */
#include "validate/val_plan.h"

#include "model/mdl_graph.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

G_DEFINE_QUARK(val-plan-error-quark, val_plan_error)

/* Where a check is: "programs[1].steps[4] (id 9)", "groups[0]", "" (top level). */
typedef struct {
  const char *source;
  char at[128];
} Ctx;

static void fail(GError **error, const Ctx *c, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void fail(GError **error, const Ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT, "%s: %s%s%s", c->source, c->at,
              c->at[0] ? ": " : "", msg);
  g_free(msg);
}

/* A short rendering of a JSON value for an error message. */
static char *describe(const cJSON *v) {
  if (cJSON_IsNumber(v)) return g_strdup_printf("%.17g", v->valuedouble);
  char *text = cJSON_PrintUnformatted(v);
  if (!text) return g_strdup("?");
  char *out = strlen(text) > 40 ? g_strdup_printf("%.37s...", text) : g_strdup(text);
  cJSON_free(text);
  return out;
}

static void fail_value(GError **error, const Ctx *c, const char *key, const cJSON *v,
                       const char *must) {
  char *d = describe(v);
  fail(error, c, "field '%s' is %s: %s", key, d, must);
  g_free(d);
}

static const cJSON *member(const cJSON *obj, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* A whole number in [lo, hi] (hi <= 2^62, exact as a double), else @dflt when absent and not
 * @required. */
static gboolean int_field(const cJSON *obj, const char *key, gint64 lo, gint64 hi,
                          gboolean required, gint64 dflt, gint64 *out, const Ctx *c,
                          GError **error) {
  const cJSON *v = member(obj, key);
  if (!v) {
    if (required) {
      fail(error, c, "missing field '%s'", key);
      return FALSE;
    }
    *out = dflt;
    return TRUE;
  }
  double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi) {
    char *must = g_strdup_printf("must be a whole number in %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT,
                                 lo, hi);
    fail_value(error, c, key, v, must);
    g_free(must);
    return FALSE;
  }
  *out = (gint64)x;
  return TRUE;
}

static gboolean int32_field(const cJSON *obj, const char *key, int lo, int hi, gboolean required,
                            int dflt, int *out, const Ctx *c, GError **error) {
  gint64 v;
  if (!int_field(obj, key, lo, hi, required, dflt, &v, c, error)) return FALSE;
  *out = (int)v;
  return TRUE;
}

/* A byte count: a finite number in (0, VAL_PLAN_MAX_BYTES], rounded up to whole bytes. */
static gboolean bytes_field(const cJSON *obj, const char *key, gint64 *out, const Ctx *c,
                            GError **error) {
  const cJSON *v = member(obj, key);
  if (!v) {
    fail(error, c, "missing field '%s'", key);
    return FALSE;
  }
  double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!isfinite(x) || x <= 0 || x > (double)VAL_PLAN_MAX_BYTES) {
    char *must = g_strdup_printf("must be a positive finite number of bytes up to %" G_GINT64_FORMAT,
                                 VAL_PLAN_MAX_BYTES);
    fail_value(error, c, key, v, must);
    g_free(must);
    return FALSE;
  }
  *out = (gint64)ceil(x);
  return TRUE;
}

/* An optional string: NULL when absent; an error when present but not a string. */
static gboolean string_field(const cJSON *obj, const char *key, gboolean required,
                             const char **out, const Ctx *c, GError **error) {
  const cJSON *v = member(obj, key);
  *out = NULL;
  if (!v && !required) return TRUE;
  if (!v) {
    fail(error, c, "missing field '%s'", key);
    return FALSE;
  }
  if (!cJSON_IsString(v) || !v->valuestring) {
    fail_value(error, c, key, v, "must be a string");
    return FALSE;
  }
  *out = v->valuestring;
  return TRUE;
}

/* --- names --- */

static const char *const dtype_names[] = {"fp32", "tf32", "fp16", "bf16"};
static const char *const kind_names[] = {"gemm", "elementwise", "collective", "send", "recv"};
static const char *const collective_names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                               "all_to_all", "broadcast", "send_recv", "reduce"};
static const char *const stream_names[] = {"compute", "comm"};

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

static int name_index(const char *const *names, guint n, const char *text) {
  for (guint i = 0; text && i < n; i++)
    if (strcmp(names[i], text) == 0) return (int)i;
  return -1;
}

/* A named enum field; @n_allowed names the accepted prefix of @names. */
static gboolean enum_field(const cJSON *obj, const char *key, const char *const *names,
                           guint n_allowed, gboolean required, int dflt, int *out, const Ctx *c,
                           GError **error) {
  const char *text;
  if (!string_field(obj, key, required, &text, c, error)) return FALSE;
  if (!text) {
    *out = dflt;
    return TRUE;
  }
  int i = name_index(names, n_allowed, text);
  if (i < 0) {
    GString *must = g_string_new("must be one of ");
    for (guint j = 0; j < n_allowed; j++) g_string_append_printf(must, "%s%s", j ? ", " : "", names[j]);
    fail_value(error, c, key, member(obj, key), must->str);
    g_string_free(must, TRUE);
    return FALSE;
  }
  *out = i;
  return TRUE;
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
  const cJSON *groups = member(root, "groups");
  if (!groups) return TRUE; /* a plan without collectives */
  if (!cJSON_IsArray(groups)) {
    fail_value(error, c, "groups", groups, "must be an array");
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
      fail(error, c, "must be an object");
      return FALSE;
    }
    ValGroup *g = &plan->groups[i];
    if (!int32_field(gj, "id", 0, G_MAXINT, TRUE, 0, &g->id, c, error)) return FALSE;
    if (g_hash_table_contains(rd->group_index, GINT_TO_POINTER(g->id))) {
      fail(error, c, "group id %d appears twice", g->id);
      return FALSE;
    }
    const cJSON *ranks = member(gj, "ranks");
    int size = cJSON_IsArray(ranks) ? cJSON_GetArraySize(ranks) : 0;
    if (size < 1 || size > plan->ranks) {
      fail(error, c, "field 'ranks' must be an array of 1..%d distinct ranks", plan->ranks);
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
        char *d = describe(rj);
        fail(error, c, "ranks[%d] is %s: must be a rank in 0..%d", j, d, plan->ranks - 1);
        g_free(d);
        return FALSE;
      }
      g->ranks[j] = (int)x;
      rd->members[i][j] = (Member){(int)x, j};
    }
    qsort(rd->members[i], (size_t)size, sizeof(Member), member_cmp);
    for (j = 1; j < size; j++)
      if (rd->members[i][j].rank == rd->members[i][j - 1].rank) {
        fail(error, c, "rank %d appears twice in 'ranks'", rd->members[i][j].rank);
        return FALSE;
      }
    g_hash_table_insert(rd->group_index, GINT_TO_POINTER(g->id), GINT_TO_POINTER(i + 1));
  }
  return TRUE;
}

/* --- steps --- */

static gboolean gemm_dims(const cJSON *obj, ValDtype dtype, gint64 *m, gint64 *n, gint64 *k,
                          gint64 *batch, const Ctx *c, GError **error) {
  if (!int_field(obj, "m", 1, G_MAXINT, TRUE, 0, m, c, error) ||
      !int_field(obj, "n", 1, G_MAXINT, TRUE, 0, n, c, error) ||
      !int_field(obj, "k", 1, G_MAXINT, TRUE, 0, k, c, error) ||
      !int_field(obj, "batch", 1, G_MAXINT, FALSE, 1, batch, c, error))
    return FALSE;
  /* Each factor < 2^31: the products below are computed in 128 bits' worth of care. */
  guint64 mn = (guint64)*m * (guint64)*n, macs;
  if (!g_uint64_checked_mul(&macs, mn, (guint64)*k) ||
      !g_uint64_checked_mul(&macs, macs, (guint64)*batch) || macs > (guint64)VAL_PLAN_MAX_MACS) {
    fail(error, c,
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
      fail(error, c, "gemm operand %s x batch %" G_GINT64_FORMAT " exceeds %" G_GINT64_FORMAT " bytes",
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
    fail(error, c, "must be an object");
    return FALSE;
  }
  if (!int_field(sj, "id", 0, G_GINT64_CONSTANT(1) << 53, TRUE, 0, &s->id, c, error)) return FALSE;
  g_snprintf(c->at, sizeof c->at, "programs[%d].steps[%u] (id %" G_GINT64_FORMAT ")", rank, index,
             s->id);
  if (g_hash_table_contains(ids, &s->id)) {
    fail(error, c, "step id %" G_GINT64_FORMAT " appears twice in rank %d's program", s->id, rank);
    return FALSE;
  }
  int kind, stream, dtype;
  if (!enum_field(sj, "kind", kind_names, G_N_ELEMENTS(kind_names), TRUE, 0, &kind, c, error))
    return FALSE;
  s->kind = (ValStepKind)kind;
  int default_stream = s->kind == VAL_STEP_GEMM || s->kind == VAL_STEP_ELEMENTWISE
                           ? VAL_STREAM_COMPUTE
                           : VAL_STREAM_COMM;
  if (!enum_field(sj, "stream", stream_names, G_N_ELEMENTS(stream_names), FALSE, default_stream,
                  &stream, c, error) ||
      !enum_field(sj, "dtype", dtype_names, G_N_ELEMENTS(dtype_names), FALSE, (int)plan->dtype,
                  &dtype, c, error))
    return FALSE;
  s->stream = (ValStream)stream;
  s->dtype = (ValDtype)dtype;
  const char *name, *op, *phase;
  if (!string_field(sj, "name", FALSE, &name, c, error) ||
      !string_field(sj, "op", FALSE, &op, c, error) ||
      !string_field(sj, "phase", FALSE, &phase, c, error) ||
      !int32_field(sj, "microbatch", -1, G_MAXINT, FALSE, -1, &s->microbatch, c, error))
    return FALSE;
  s->name = g_strdup(name);
  s->op = g_strdup(op);
  s->phase = g_strdup(phase);
  const cJSON *pred = member(sj, "predicted_s");
  if (pred) {
    if (!cJSON_IsNumber(pred) || !isfinite(pred->valuedouble) || pred->valuedouble < 0) {
      fail_value(error, c, "predicted_s", pred, "must be a finite number of seconds >= 0");
      return FALSE;
    }
    s->predicted_s = pred->valuedouble;
  }

  switch (s->kind) {
  case VAL_STEP_GEMM:
    if (!gemm_dims(sj, s->dtype, &s->m, &s->n, &s->k, &s->batch, c, error)) return FALSE;
    break;
  case VAL_STEP_ELEMENTWISE:
    if (!int_field(sj, "elements", 1, VAL_PLAN_MAX_ELEMENTS, TRUE, 0, &s->elements, c, error) ||
        !bytes_field(sj, "bytes", &s->bytes, c, error))
      return FALSE;
    break;
  case VAL_STEP_COLLECTIVE: {
    int coll, group_id;
    /* Steps take the first five kinds; send_recv and reduce are microbenchmark-only. */
    if (!enum_field(sj, "collective", collective_names, VAL_COLL_BROADCAST + 1, TRUE, 0, &coll, c,
                    error) ||
        !int32_field(sj, "group", 0, G_MAXINT, TRUE, 0, &group_id, c, error) ||
        !bytes_field(sj, "bytes", &s->bytes, c, error))
      return FALSE;
    s->collective = (ValCollectiveKind)coll;
    int gi = GPOINTER_TO_INT(g_hash_table_lookup(rd->group_index, GINT_TO_POINTER(group_id))) - 1;
    if (gi < 0) {
      fail(error, c, "field 'group' is %d: no such group in 'groups'", group_id);
      return FALSE;
    }
    s->group = gi;
    s->group_rank = member_position(rd, gi, rank);
    if (s->group_rank < 0) {
      fail(error, c, "group %d does not contain rank %d", group_id, rank);
      return FALSE;
    }
    break;
  }
  case VAL_STEP_SEND:
  case VAL_STEP_RECV:
    if (!int32_field(sj, "peer", 0, plan->ranks - 1, TRUE, 0, &s->peer, c, error) ||
        !bytes_field(sj, "bytes", &s->bytes, c, error))
      return FALSE;
    if (s->peer == rank) {
      fail(error, c, "field 'peer' is %d: a rank cannot %s itself", s->peer,
           s->kind == VAL_STEP_SEND ? "send to" : "receive from");
      return FALSE;
    }
    break;
  }

  const cJSON *deps = member(sj, "deps");
  if (deps && !cJSON_IsArray(deps)) {
    fail_value(error, c, "deps", deps, "must be an array of step ids");
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
        char *d = describe(dj);
        fail(error, c, "deps: %s names no earlier step of rank %d (deps must name earlier steps "
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
  const cJSON *programs = member(root, "programs");
  int n = cJSON_IsArray(programs) ? cJSON_GetArraySize(programs) : -1;
  if (n != plan->ranks) {
    c->at[0] = '\0';
    fail(error, c, "field 'programs' must be an array of one program per rank (%d)", plan->ranks);
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
      fail(error, c, "must be an object");
      goto out;
    }
    if (!int32_field(pj, "rank", 0, plan->ranks - 1, TRUE, 0, &rank, c, error)) goto out;
    if (by_rank[rank]) {
      fail(error, c, "rank %d has two programs", rank);
      goto out;
    }
    by_rank[rank] = pj;
    const cJSON *steps = member(pj, "steps");
    if (!cJSON_IsArray(steps)) {
      fail(error, c, "field 'steps' must be an array");
      goto out;
    }
    total += (guint64)cJSON_GetArraySize(steps);
    if (total > VAL_PLAN_MAX_TOTAL_STEPS) {
      c->at[0] = '\0';
      fail(error, c, "more than %d steps in all programs", VAL_PLAN_MAX_TOTAL_STEPS);
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
    if (!int32_field(pj, "host", 0, G_MAXINT, FALSE, 0, &p->host, c, error) ||
        !int32_field(pj, "local_device", 0, G_MAXINT, FALSE, 0, &p->local_device, c, error))
      goto out;
    const cJSON *steps = member(pj, "steps");
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

/* --- cross-rank checks --- */

static void step_ctx(Ctx *c, const ValPlan *plan, int rank, guint index) {
  g_snprintf(c->at, sizeof c->at, "programs[%d].steps[%u] (id %" G_GINT64_FORMAT ")", rank, index,
             plan->programs[rank].steps[index].id);
}

/* The k-th send from p to q is matched with the k-th recv from p in q's program. */
static gboolean match_transfers(ValPlan *plan, Ctx *c, GError **error) {
  /* (sender, receiver) -> the receiver's recv step indices, in order */
  GHashTable *recvs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                            (GDestroyNotify)g_array_unref);
  GHashTable *sent = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  gboolean ok = FALSE;
  for (int q = 0; q < plan->ranks; q++) {
    ValProgram *p = &plan->programs[q];
    for (guint i = 0; i < p->n_steps; i++) {
      ValStep *s = &p->steps[i];
      if (s->kind != VAL_STEP_RECV) continue;
      gint64 key = (gint64)s->peer * VAL_PLAN_MAX_RANKS + q;
      GArray *list = g_hash_table_lookup(recvs, &key);
      if (!list) {
        list = g_array_new(FALSE, FALSE, sizeof(guint));
        g_hash_table_insert(recvs, g_memdup2(&key, sizeof key), list);
      }
      s->sequence = list->len;
      g_array_append_val(list, i);
    }
  }
  for (int r = 0; r < plan->ranks; r++) {
    ValProgram *p = &plan->programs[r];
    for (guint i = 0; i < p->n_steps; i++) {
      ValStep *s = &p->steps[i];
      if (s->kind != VAL_STEP_SEND) continue;
      gint64 key = (gint64)r * VAL_PLAN_MAX_RANKS + s->peer;
      GArray *list = g_hash_table_lookup(recvs, &key);
      gpointer count = g_hash_table_lookup(sent, &key);
      guint k = GPOINTER_TO_UINT(count);
      g_hash_table_replace(sent, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(k + 1));
      s->sequence = k;
      if (!list || k >= list->len) {
        step_ctx(c, plan, r, i);
        fail(error, c,
             "send to rank %d (transfer %u from rank %d to rank %d) has no matching recv: rank "
             "%d's program has %u recv(s) from rank %d",
             s->peer, k + 1, r, s->peer, s->peer, list ? list->len : 0, r);
        goto out;
      }
      guint j = g_array_index(list, guint, k);
      ValStep *t = &plan->programs[s->peer].steps[j];
      if (t->bytes != s->bytes || t->dtype != s->dtype) {
        step_ctx(c, plan, r, i);
        fail(error, c,
             "send of %" G_GINT64_FORMAT " bytes (%s) to rank %d is matched by recv id %" G_GINT64_FORMAT
             " of %" G_GINT64_FORMAT " bytes (%s): sizes and dtypes must agree",
             s->bytes, val_dtype_name(s->dtype), s->peer, t->id, t->bytes, val_dtype_name(t->dtype));
        goto out;
      }
      s->match = j;
      t->match = i;
    }
  }
  /* Recvs beyond the sends of their pair. */
  for (int q = 0; q < plan->ranks; q++) {
    ValProgram *p = &plan->programs[q];
    for (guint i = 0; i < p->n_steps; i++) {
      ValStep *s = &p->steps[i];
      if (s->kind != VAL_STEP_RECV) continue;
      gint64 key = (gint64)s->peer * VAL_PLAN_MAX_RANKS + q;
      guint n_sent = GPOINTER_TO_UINT(g_hash_table_lookup(sent, &key));
      if (s->sequence >= n_sent) {
        step_ctx(c, plan, q, i);
        fail(error, c,
             "recv from rank %d (transfer %" G_GUINT64_FORMAT " from rank %d to rank %d) has no "
             "matching send: rank %d's program has %u send(s) to rank %d",
             s->peer, s->sequence + 1, s->peer, q, s->peer, n_sent, q);
        goto out;
      }
    }
  }
  ok = TRUE;
out:
  g_hash_table_destroy(recvs);
  g_hash_table_destroy(sent);
  return ok;
}

/* Every member issues its group's collectives in the same sequence: compared with the group's
 * first member (kind, bytes, dtype at each position, and the count). */
static gboolean match_collectives(ValPlan *plan, Ctx *c, GError **error) {
  if (plan->n_groups == 0) return TRUE;
  GArray **reference = g_new0(GArray *, plan->n_groups); /* guint step indices of ranks[0] */
  guint64 **counts = g_new0(guint64 *, plan->n_groups);  /* per group, per member position */
  for (int g = 0; g < plan->n_groups; g++) {
    reference[g] = g_array_new(FALSE, FALSE, sizeof(guint));
    counts[g] = g_new0(guint64, plan->groups[g].n_ranks);
  }
  gboolean ok = FALSE;
  for (int g = 0; g < plan->n_groups; g++) {
    const ValProgram *first = &plan->programs[plan->groups[g].ranks[0]];
    for (guint i = 0; i < first->n_steps; i++)
      if (first->steps[i].kind == VAL_STEP_COLLECTIVE && first->steps[i].group == g)
        g_array_append_val(reference[g], i);
  }
  for (int r = 0; r < plan->ranks; r++) {
    ValProgram *p = &plan->programs[r];
    for (guint i = 0; i < p->n_steps; i++) {
      ValStep *s = &p->steps[i];
      if (s->kind != VAL_STEP_COLLECTIVE) continue;
      const ValGroup *g = &plan->groups[s->group];
      s->sequence = counts[s->group][s->group_rank]++;
      GArray *ref = reference[s->group];
      if (s->sequence >= ref->len) {
        step_ctx(c, plan, r, i);
        fail(error, c,
             "collective %" G_GUINT64_FORMAT " of group %d on rank %d has no counterpart: rank %d "
             "(the group's first member) issues %u collective(s) of that group",
             s->sequence + 1, g->id, r, g->ranks[0], ref->len);
        goto out;
      }
      const ValStep *t = &plan->programs[g->ranks[0]].steps[g_array_index(ref, guint, s->sequence)];
      if (t->collective != s->collective || t->bytes != s->bytes || t->dtype != s->dtype) {
        step_ctx(c, plan, r, i);
        fail(error, c,
             "collective %" G_GUINT64_FORMAT " of group %d is %s of %" G_GINT64_FORMAT
             " bytes (%s) on rank %d but %s of %" G_GINT64_FORMAT " bytes (%s) on rank %d (id %"
             G_GINT64_FORMAT "): every member must issue the group's collectives in the same order",
             s->sequence + 1, g->id, val_collective_name(s->collective), s->bytes,
             val_dtype_name(s->dtype), r, val_collective_name(t->collective), t->bytes,
             val_dtype_name(t->dtype), g->ranks[0], t->id);
        goto out;
      }
    }
  }
  for (int g = 0; g < plan->n_groups; g++) {
    const ValGroup *grp = &plan->groups[g];
    for (int j = 1; j < grp->n_ranks; j++)
      if (counts[g][j] != reference[g]->len) {
        c->at[0] = '\0';
        fail(error, c,
             "rank %d issues %" G_GUINT64_FORMAT " collective(s) of group %d but rank %d issues %u",
             grp->ranks[j], counts[g][j], grp->id, grp->ranks[0], reference[g]->len);
        goto out;
      }
  }
  ok = TRUE;
out:
  for (int g = 0; g < plan->n_groups; g++) {
    g_array_unref(reference[g]);
    g_free(counts[g]);
  }
  g_free(reference);
  g_free(counts);
  return ok;
}

/* Issues every program in list order with rendezvous semantics (a collective completes when all
 * members reach it, a transfer when both ends do), recording the order in plan->issue; a rank
 * left with steps means the plan can deadlock. */
typedef struct {
  ValPlan *plan;
  guint *head;        /* per rank: the next step to issue */
  gboolean *waiting;  /* per rank: arrived at a rendezvous step not complete yet */
  int *arrived;       /* per group: members waiting at its current collective */
  int *work;          /* ranks to advance */
  int n_work;
  guint64 n_issue;
} Issuer;

static void issue(Issuer *is, int rank, guint step) {
  is->plan->issue[is->n_issue++] = (ValIssue){rank, step, is->plan->n_launches};
}

static void complete(Issuer *is, int rank) {
  is->head[rank]++;
  is->waiting[rank] = FALSE;
  is->work[is->n_work++] = rank;
}

static void advance(Issuer *is, int r) {
  ValPlan *plan = is->plan;
  const ValProgram *p = &plan->programs[r];
  while (!is->waiting[r] && is->head[r] < p->n_steps) {
    guint i = is->head[r];
    const ValStep *s = &p->steps[i];
    if (s->kind == VAL_STEP_GEMM || s->kind == VAL_STEP_ELEMENTWISE) {
      issue(is, r, i);
      plan->n_launches++;
      is->head[r]++;
      continue;
    }
    is->waiting[r] = TRUE;
    if (s->kind == VAL_STEP_COLLECTIVE) {
      const ValGroup *g = &plan->groups[s->group];
      if (++is->arrived[s->group] < g->n_ranks) return;
      is->arrived[s->group] = 0;
      for (int j = 0; j < g->n_ranks; j++) issue(is, g->ranks[j], is->head[g->ranks[j]]);
      plan->n_launches++;
      for (int j = 0; j < g->n_ranks; j++) complete(is, g->ranks[j]);
      return;
    }
    /* a transfer: complete when the other end is this step's match, and waiting there */
    if (!is->waiting[s->peer] || is->head[s->peer] != s->match) return;
    int sender = s->kind == VAL_STEP_SEND ? r : s->peer;
    int receiver = s->kind == VAL_STEP_SEND ? s->peer : r;
    issue(is, sender, is->head[sender]);
    issue(is, receiver, is->head[receiver]);
    plan->n_launches++;
    complete(is, sender);
    complete(is, receiver);
    return;
  }
}

static gboolean check_deadlock(ValPlan *plan, Ctx *c, GError **error) {
  Issuer is = {plan, g_new0(guint, plan->ranks), g_new0(gboolean, plan->ranks),
               g_new0(int, MAX(plan->n_groups, 1)), NULL, 0, 0};
  /* Each completion pushes its ranks once; a rank is pushed at most once per step it completes
   * plus its initial push, so the stack needs ranks + steps entries at most. */
  is.work = g_new(int, (gsize)plan->ranks + plan->n_steps + 1);
  plan->issue = g_new(ValIssue, MAX(plan->n_steps, 1));
  for (int r = plan->ranks - 1; r >= 0; r--) is.work[is.n_work++] = r;
  while (is.n_work > 0) advance(&is, is.work[--is.n_work]);
  gboolean ok = TRUE;
  for (int r = 0; r < plan->ranks && ok; r++) {
    const ValProgram *p = &plan->programs[r];
    if (is.head[r] >= p->n_steps) continue;
    const ValStep *s = &p->steps[is.head[r]];
    step_ctx(c, plan, r, is.head[r]);
    ok = FALSE;
    if (s->kind == VAL_STEP_COLLECTIVE) {
      const ValGroup *g = &plan->groups[s->group];
      int absent = -1;
      for (int j = 0; j < g->n_ranks && absent < 0; j++) {
        int q = g->ranks[j];
        const ValProgram *pq = &plan->programs[q];
        gboolean there = is.waiting[q] && is.head[q] < pq->n_steps &&
                         pq->steps[is.head[q]].kind == VAL_STEP_COLLECTIVE &&
                         pq->steps[is.head[q]].group == s->group;
        if (!there) absent = q;
      }
      g_assert(absent >= 0);
      const ValProgram *pq = absent >= 0 ? &plan->programs[absent] : NULL;
      fail(error, c,
           "the plan can deadlock: rank %d waits at %s on group %d, which rank %d has not reached "
           "(it waits at step id %" G_GINT64_FORMAT ")",
           r, val_collective_name(s->collective), g->id, absent,
           pq && is.head[absent] < pq->n_steps ? pq->steps[is.head[absent]].id : -1);
    } else {
      const ValProgram *pq = &plan->programs[s->peer];
      fail(error, c,
           "the plan can deadlock: rank %d waits at %s %s rank %d, which waits at step id %"
           G_GINT64_FORMAT " (its match is id %" G_GINT64_FORMAT ")",
           r, val_step_kind_name(s->kind), s->kind == VAL_STEP_SEND ? "to" : "from", s->peer,
           is.head[s->peer] < pq->n_steps ? pq->steps[is.head[s->peer]].id : -1,
           pq->steps[s->match].id);
    }
  }
  g_assert(!ok || is.n_issue == plan->n_steps);
  g_free(is.head);
  g_free(is.waiting);
  g_free(is.arrived);
  g_free(is.work);
  return ok;
}

/* --- microbenchmarks --- */

static gboolean read_microbenchmarks(ValPlan *plan, const cJSON *root, Ctx *c, GError **error) {
  const cJSON *mb = member(root, "microbenchmarks");
  c->at[0] = '\0';
  if (!mb) return TRUE;
  if (!cJSON_IsObject(mb)) {
    fail_value(error, c, "microbenchmarks", mb, "must be an object");
    return FALSE;
  }
  const cJSON *ops = member(mb, "ops"), *colls = member(mb, "collectives");
  if ((ops && !cJSON_IsArray(ops)) || (colls && !cJSON_IsArray(colls))) {
    fail(error, c, "microbenchmarks: 'ops' and 'collectives' must be arrays");
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
      fail(error, c, "must be an object");
      return FALSE;
    }
    if (!string_field(oj, "op", TRUE, &op, c, error)) return FALSE;
    if (!mdl_op_kind_parse(op, &kind)) {
      fail_value(error, c, "op", member(oj, "op"), "must be a model op kind (PROFILES.md)");
      return FALSE;
    }
    o->op = g_strdup(op);
    plan->n_micro_ops = (guint)i + 1;
    if (!enum_field(oj, "dtype", dtype_names, G_N_ELEMENTS(dtype_names), TRUE, 0, &dtype, c, error))
      return FALSE;
    o->dtype = (ValDtype)dtype;
    o->gemm = kind == MDL_OP_MATMUL || kind == MDL_OP_BATCH_MATMUL || kind == MDL_OP_CONV2D;
    if (o->gemm) {
      if (!gemm_dims(oj, o->dtype, &o->m, &o->n, &o->k, &o->batch, c, error)) return FALSE;
    } else {
      int phase;
      static const char *const phases[] = {"forward", "backward"};
      if (!int_field(oj, "elements", 1, VAL_PLAN_MAX_ELEMENTS, TRUE, 0, &o->elements, c, error) ||
          !enum_field(oj, "phase", phases, 2, FALSE, 0, &phase, c, error))
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
      fail(error, c, "must be an object");
      return FALSE;
    }
    if (!enum_field(cj, "kind", collective_names, G_N_ELEMENTS(collective_names), TRUE, 0, &kind,
                    c, error))
      return FALSE;
    m->kind = (ValCollectiveKind)kind;
    if (plan->ranks < 2) {
      fail(error, c, "a collective benchmark needs at least 2 ranks; the plan has %d", plan->ranks);
      return FALSE;
    }
    if (!int32_field(cj, "ranks", 2, plan->ranks, TRUE, 0, &m->ranks, c, error) ||
        !int32_field(cj, "nodes", 1, m->ranks, TRUE, 0, &m->nodes, c, error) ||
        !bytes_field(cj, "bytes", &m->bytes, c, error))
      return FALSE;
    plan->n_micro_collectives = (guint)i + 1;
  }
  return TRUE;
}

/* --- the whole plan --- */

static cJSON *parse_json(const char *text, const Ctx *c, GError **error) {
  const char *end = NULL; /* cJSON_GetErrorPtr would read a global */
  cJSON *root = cJSON_ParseWithOpts(text, &end, TRUE);
  if (root) return root;
  int line = 1, column = 1;
  for (const char *p = text; end && p < end && *p; p++) {
    if (*p == '\n') line++, column = 1;
    else column++;
  }
  fail(error, c, "malformed JSON at line %d, column %d", line, column);
  return NULL;
}

static gboolean read_header(ValPlan *plan, const cJSON *root, Ctx *c, GError **error) {
  const char *format, *model, *cluster, *strategy;
  gint64 version;
  int dtype;
  if (!cJSON_IsObject(root)) {
    fail(error, c, "a plan must be a JSON object");
    return FALSE;
  }
  if (!string_field(root, "format", TRUE, &format, c, error)) return FALSE;
  if (strcmp(format, "stratsim-plan") != 0) {
    fail_value(error, c, "format", member(root, "format"), "must be \"stratsim-plan\"");
    return FALSE;
  }
  if (!int_field(root, "version", 0, G_MAXINT, TRUE, 0, &version, c, error)) return FALSE;
  if (version != 1) {
    fail(error, c, "field 'version' is %" G_GINT64_FORMAT ": this reader knows version 1", version);
    return FALSE;
  }
  if (!string_field(root, "model", FALSE, &model, c, error) ||
      !string_field(root, "cluster", FALSE, &cluster, c, error) ||
      !string_field(root, "strategy", FALSE, &strategy, c, error) ||
      !enum_field(root, "dtype", dtype_names, G_N_ELEMENTS(dtype_names), TRUE, 0, &dtype, c, error) ||
      !int32_field(root, "ranks", 1, VAL_PLAN_MAX_RANKS, TRUE, 0, &plan->ranks, c, error) ||
      !int32_field(root, "warmup", 0, VAL_PLAN_MAX_ITERATIONS_READ, FALSE, 3, &plan->warmup, c,
                   error) ||
      !int32_field(root, "iterations", 1, VAL_PLAN_MAX_ITERATIONS_READ, FALSE, 10,
                   &plan->iterations, c, error))
    return FALSE;
  plan->model = g_strdup(model ? model : "");
  plan->cluster = g_strdup(cluster ? cluster : "");
  plan->strategy = g_strdup(strategy ? strategy : "");
  plan->dtype = (ValDtype)dtype;
  const cJSON *pred = member(root, "predicted");
  if (pred) {
    const cJSON *t = member(pred, "iteration_time_s");
    const char *device;
    if (!cJSON_IsObject(pred)) {
      fail_value(error, c, "predicted", pred, "must be an object");
      return FALSE;
    }
    if (t && (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || t->valuedouble < 0)) {
      fail_value(error, c, "predicted.iteration_time_s", t, "must be a finite number >= 0");
      return FALSE;
    }
    if (t) plan->predicted_iteration_time_s = t->valuedouble;
    if (!string_field(pred, "device", FALSE, &device, c, error)) return FALSE;
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
  cJSON *root = parse_json(text, &c, error);
  gboolean ok = root && read_header(plan, root, &c, error) && read_groups(&rd, root, &c, error) &&
                read_programs(&rd, root, &c, error) && match_transfers(plan, &c, error) &&
                match_collectives(plan, &c, error) && check_deadlock(plan, &c, error) &&
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
