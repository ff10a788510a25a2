/* Tests for validate/val_plan_check: the cross-rank checks of a plan (val_plan.h's promises):
 * a deadlock across two groups named, the issue order of a 64-rank ring, and the deadlock check
 * against a naive oracle on random plans (seed in the test path). */
#include "validate/val_plan.h"

#include <glib.h>
#include <string.h>

/* Two groups of the same ranks used in opposite orders: each group's own order agrees, yet a
 * rank that issues in list order waits forever. */
static void test_deadlock_groups(void) {
  const char *text =
      "{\"format\":\"stratsim-plan\",\"version\":1,\"dtype\":\"fp32\",\"ranks\":2,"
      "\"groups\":[{\"id\":0,\"ranks\":[0,1]},{\"id\":1,\"ranks\":[1,0]}],"
      "\"programs\":[{\"rank\":0,\"steps\":["
      "{\"id\":0,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":8},"
      "{\"id\":1,\"kind\":\"collective\",\"collective\":\"all_gather\",\"group\":1,\"bytes\":8}]},"
      "{\"rank\":1,\"steps\":["
      "{\"id\":0,\"kind\":\"collective\",\"collective\":\"all_gather\",\"group\":1,\"bytes\":8},"
      "{\"id\":1,\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":8}]}]}";
  GError *error = NULL;
  g_assert_null(val_plan_parse(text, "x.json", &error));
  g_assert_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "programs[0].steps[0] (id 0): the plan can deadlock: "
                                          "rank 0 waits at all_reduce on group 0, which rank 1"));
  g_clear_error(&error);
}

/* A group whose collectives switch streams, and transfers on two streams, are refused (a
 * runner's communicator must stay on one stream); the same plans with one stream each pass. */
static void test_streams(void) {
  const char *group_fmt =
      "{\"format\":\"stratsim-plan\",\"version\":1,\"dtype\":\"fp32\",\"ranks\":2,"
      "\"groups\":[{\"id\":0,\"ranks\":[0,1]}],\"programs\":["
      "{\"rank\":0,\"steps\":[{\"id\":0,\"stream\":\"comm\",\"kind\":\"collective\","
      "\"collective\":\"all_reduce\",\"group\":0,\"bytes\":8},{\"id\":1,\"stream\":\"%s\","
      "\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":8}]},"
      "{\"rank\":1,\"steps\":[{\"id\":0,\"stream\":\"comm\",\"kind\":\"collective\","
      "\"collective\":\"all_reduce\",\"group\":0,\"bytes\":8},{\"id\":1,\"stream\":\"comm\","
      "\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":0,\"bytes\":8}]}]}";
  const char *transfer_fmt =
      "{\"format\":\"stratsim-plan\",\"version\":1,\"dtype\":\"fp32\",\"ranks\":2,"
      "\"programs\":[{\"rank\":0,\"steps\":[{\"id\":0,\"stream\":\"p2p\",\"kind\":\"send\","
      "\"peer\":1,\"bytes\":8}]},{\"rank\":1,\"steps\":[{\"id\":0,\"stream\":\"%s\","
      "\"kind\":\"recv\",\"peer\":0,\"bytes\":8}]}]}";
  struct {
    const char *fmt, *stream, *needle;
  } cases[] = {
      {group_fmt, "dp", "programs[0].steps[1] (id 1): collective of group 0 on stream dp where the "
                        "group's earlier collectives run on comm"},
      {transfer_fmt, "comm", "programs[1].steps[0] (id 0): recv on stream comm where an earlier "
                             "transfer runs on p2p"},
      {group_fmt, "comm", NULL},
      {transfer_fmt, "p2p", NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strdup_printf(cases[i].fmt, cases[i].stream);
    GError *error = NULL;
    ValPlan *plan = val_plan_parse(text, "x.json", &error);
    if (!cases[i].needle) {
      g_assert_no_error(error);
      val_plan_free(plan);
      continue;
    }
    g_assert_null(plan);
    g_assert_error(error, VAL_PLAN_ERROR, VAL_PLAN_ERROR_INPUT);
    g_assert_nonnull(strstr(error->message, cases[i].needle));
    g_clear_error(&error);
  }
}

/* A ring of 64 ranks passing a token around twice, with a collective over all of them in the
 * middle: the issue order completes and puts each transfer's two ends together. */
static void test_ring(void) {
  enum { N = 64 };
  GString *t = g_string_new("{\"format\":\"stratsim-plan\",\"version\":1,\"dtype\":\"fp32\",");
  g_string_append_printf(t, "\"ranks\":%d,\"groups\":[{\"id\":3,\"ranks\":[", N);
  for (int r = N - 1; r >= 0; r--) g_string_append_printf(t, "%d%s", r, r ? "," : "]}],");
  g_string_append(t, "\"programs\":[");
  for (int r = 0; r < N; r++) {
    g_string_append_printf(t, "%s{\"rank\":%d,\"steps\":[", r ? "," : "", r);
    int id = 0;
    for (int lap = 0; lap < 2; lap++) {
      const char *first = r == 0 ? "send" : "recv", *second = r == 0 ? "recv" : "send";
      int first_peer = r == 0 ? 1 : r - 1, second_peer = r == 0 ? N - 1 : (r + 1) % N;
      g_string_append_printf(t, "%s{\"id\":%d,\"kind\":\"%s\",\"peer\":%d,\"bytes\":4},",
                             lap ? "," : "", id, first, first_peer);
      id++;
      g_string_append_printf(t, "{\"id\":%d,\"kind\":\"gemm\",\"m\":8,\"n\":8,\"k\":8,\"deps\":[%d]},",
                             id, id - 1);
      id++;
      g_string_append_printf(t, "{\"id\":%d,\"kind\":\"%s\",\"peer\":%d,\"bytes\":4,\"deps\":[%d]}",
                             id, second, second_peer, id - 1);
      id++;
      if (lap == 0) {
        g_string_append_printf(t, ",{\"id\":%d,\"kind\":\"collective\",\"collective\":"
                                  "\"all_to_all\",\"group\":3,\"bytes\":64}", id);
        id++;
      }
    }
    g_string_append(t, "]}");
  }
  g_string_append(t, "]}");
  GError *error = NULL;
  ValPlan *plan = val_plan_parse(t->str, "ring.json", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->n_steps, ==, N * 7);
  guint *next = g_new0(guint, N);
  for (guint64 i = 0; i < plan->n_steps; i++) {
    const ValIssue *is = &plan->issue[i];
    g_assert_cmpuint(is->step, ==, next[is->rank]++);
    const ValStep *s = &plan->programs[is->rank].steps[is->step];
    if (s->kind == VAL_STEP_SEND) { /* its recv next, in the same launch */
      const ValIssue *other = &plan->issue[i + 1];
      g_assert_cmpint(other->rank, ==, s->peer);
      g_assert_cmpuint(other->step, ==, s->match);
      g_assert_cmpuint(other->launch, ==, is->launch);
    }
    if (s->kind == VAL_STEP_COLLECTIVE) g_assert_cmpint(s->group_rank, ==, N - 1 - is->rank);
  }
  for (int r = 0; r < N; r++) g_assert_cmpuint(next[r], ==, 7);
  g_free(next);
  val_plan_free(plan);
  g_string_free(t, TRUE);
}

/* --- random plans: the deadlock check against a naive oracle --- */

typedef enum { RND_COMPUTE, RND_COLLECTIVE, RND_SEND, RND_RECV } RndKind;
typedef struct {
  RndKind kind;
  int group, peer;   /* group index; the other end of a transfer */
  gint64 bytes;
  int channel;       /* the group, or ranks + the (sender, receiver) pair: its rendezvous order */
} RndStep;

/* A random plan as per-rank step lists, projected from one global order of compute steps,
 * collectives and transfers (so it cannot deadlock), as the plan builder does. */
static GArray **random_programs(GRand *rng, int ranks, int n_groups, int **groups, int *sizes) {
  GArray **programs = g_new(GArray *, ranks);
  for (int r = 0; r < ranks; r++) programs[r] = g_array_new(FALSE, TRUE, sizeof(RndStep));
  for (int g = 0; g < n_groups; g++) {
    sizes[g] = 0;
    groups[g] = g_new(int, ranks);
    for (int r = 0; r < ranks; r++)
      if (g_rand_boolean(rng)) groups[g][sizes[g]++] = r;
    if (sizes[g] < 2) sizes[g] = 2, groups[g][0] = 0, groups[g][1] = ranks - 1;
  }
  int events = g_rand_int_range(rng, 10, 40);
  for (int e = 0; e < events; e++) {
    int what = g_rand_int_range(rng, 0, 10);
    if (what < 4) {
      RndStep st = {RND_COMPUTE, -1, -1, 0, -1};
      g_array_append_val(programs[g_rand_int_range(rng, 0, ranks)], st);
    } else if (what < 7) {
      int g = g_rand_int_range(rng, 0, n_groups);
      gint64 bytes = 64 * (e + 1);
      for (int j = 0; j < sizes[g]; j++) {
        RndStep st = {RND_COLLECTIVE, g, -1, bytes, g};
        g_array_append_val(programs[groups[g][j]], st);
      }
    } else {
      int from = g_rand_int_range(rng, 0, ranks), to = g_rand_int_range(rng, 0, ranks - 1);
      if (to >= from) to++;
      int channel = n_groups + from * ranks + to;
      RndStep send = {RND_SEND, -1, to, 8 * (e + 1), channel};
      RndStep recv = {RND_RECV, -1, from, 8 * (e + 1), channel};
      g_array_append_val(programs[from], send);
      g_array_append_val(programs[to], recv);
    }
  }
  return programs;
}

/* The oracle: sweep the ranks until nothing moves, completing whatever rendezvous is ready. */
static gboolean oracle_completes(GArray **programs, int ranks, int **groups, int *sizes) {
  guint *head = g_new0(guint, ranks);
  gboolean moved = TRUE;
  while (moved) {
    moved = FALSE;
    for (int r = 0; r < ranks; r++) {
      while (head[r] < programs[r]->len &&
             g_array_index(programs[r], RndStep, head[r]).kind == RND_COMPUTE)
        head[r]++, moved = TRUE;
      if (head[r] >= programs[r]->len) continue;
      const RndStep *st = &g_array_index(programs[r], RndStep, head[r]);
      if (st->kind == RND_COLLECTIVE) {
        gboolean ready = TRUE;
        for (int j = 0; j < sizes[st->group] && ready; j++) {
          int q = groups[st->group][j];
          ready = head[q] < programs[q]->len &&
                  g_array_index(programs[q], RndStep, head[q]).kind == RND_COLLECTIVE &&
                  g_array_index(programs[q], RndStep, head[q]).group == st->group;
        }
        if (ready) {
          for (int j = 0; j < sizes[st->group]; j++) head[groups[st->group][j]]++;
          moved = TRUE;
        }
      } else {
        int q = st->peer;
        RndKind other = st->kind == RND_SEND ? RND_RECV : RND_SEND;
        if (head[q] < programs[q]->len && g_array_index(programs[q], RndStep, head[q]).kind == other &&
            g_array_index(programs[q], RndStep, head[q]).peer == r) {
          head[r]++, head[q]++;
          moved = TRUE;
        }
      }
    }
  }
  gboolean done = TRUE;
  for (int r = 0; r < ranks; r++) done = done && head[r] == programs[r]->len;
  g_free(head);
  return done;
}

static char *random_plan_json(GArray **programs, int ranks, int n_groups, int **groups, int *sizes) {
  GString *t = g_string_new("{\"format\":\"stratsim-plan\",\"version\":1,\"dtype\":\"fp16\",");
  g_string_append_printf(t, "\"ranks\":%d,\"groups\":[", ranks);
  for (int g = 0; g < n_groups; g++) {
    g_string_append_printf(t, "%s{\"id\":%d,\"ranks\":[", g ? "," : "", 10 * g);
    for (int j = 0; j < sizes[g]; j++) g_string_append_printf(t, "%s%d", j ? "," : "", groups[g][j]);
    g_string_append(t, "]}");
  }
  g_string_append(t, "],\"programs\":[");
  for (int r = 0; r < ranks; r++) {
    g_string_append_printf(t, "%s{\"rank\":%d,\"steps\":[", r ? "," : "", r);
    int last_compute = -1;
    for (guint i = 0; i < programs[r]->len; i++) {
      const RndStep *st = &g_array_index(programs[r], RndStep, i);
      g_string_append_printf(t, "%s{\"id\":%u,", i ? "," : "", i);
      switch (st->kind) {
      case RND_COMPUTE:
        g_string_append(t, "\"kind\":\"gemm\",\"m\":4,\"n\":4,\"k\":4");
        if (last_compute >= 0) g_string_append_printf(t, ",\"deps\":[%d]", last_compute);
        last_compute = (int)i;
        break;
      case RND_COLLECTIVE:
        g_string_append_printf(t, "\"kind\":\"collective\",\"collective\":\"all_reduce\",\"group\":%d,"
                                  "\"bytes\":%" G_GINT64_FORMAT, 10 * st->group, st->bytes);
        break;
      case RND_SEND:
      case RND_RECV:
        g_string_append_printf(t, "\"kind\":\"%s\",\"peer\":%d,\"bytes\":%" G_GINT64_FORMAT,
                               st->kind == RND_SEND ? "send" : "recv", st->peer, st->bytes);
        break;
      }
      g_string_append(t, "}");
    }
    g_string_append(t, "]}");
  }
  g_string_append(t, "]}");
  return g_string_free(t, FALSE);
}

/* Seed N: a plan projected from a global order is accepted, with a complete issue order; then
 * 8 mutations, each swapping two adjacent communication steps of different rendezvous orders
 * on one rank (per-group and per-pair orders stay intact): accepted exactly when the oracle
 * completes, else refused as a deadlock. */
static void test_random(gconstpointer data) {
  guint32 seed = GPOINTER_TO_UINT(data);
  GRand *rng = g_rand_new_with_seed(seed);
  int ranks = g_rand_int_range(rng, 2, 7), n_groups = g_rand_int_range(rng, 1, 4);
  int **groups = g_new(int *, n_groups), *sizes = g_new(int, n_groups);
  GArray **programs = random_programs(rng, ranks, n_groups, groups, sizes);
  int refused = 0;
  for (int round = 0; round <= 8; round++) {
    if (round > 0) { /* mutate: swap an adjacent pair of communication steps on a random rank */
      int r = g_rand_int_range(rng, 0, ranks);
      GArray *p = programs[r];
      for (guint tries = 0; tries < 2 * p->len + 2; tries++) {
        if (p->len < 2) break;
        guint i = (guint)g_rand_int_range(rng, 0, (gint32)p->len - 1);
        RndStep *a = &g_array_index(p, RndStep, i), *b = &g_array_index(p, RndStep, i + 1);
        if (a->kind == RND_COMPUTE || b->kind == RND_COMPUTE || a->channel == b->channel) continue;
        RndStep tmp = *a;
        *a = *b;
        *b = tmp;
        break;
      }
    }
    char *text = random_plan_json(programs, ranks, n_groups, groups, sizes);
    gboolean expect = oracle_completes(programs, ranks, groups, sizes);
    if (round == 0) g_assert_true(expect);
    GError *error = NULL;
    ValPlan *plan = val_plan_parse(text, "random.json", &error);
    if (expect) {
      if (!plan) g_error("seed %u round %d: refused: %s\n%s", seed, round, error->message, text);
      guint *next = g_new0(guint, ranks);
      for (guint64 i = 0; i < plan->n_steps; i++) g_assert_cmpuint(plan->issue[i].step, ==, next[plan->issue[i].rank]++);
      for (int r = 0; r < ranks; r++) g_assert_cmpuint(next[r], ==, programs[r]->len);
      g_free(next);
      val_plan_free(plan);
    } else {
      if (plan) g_error("seed %u round %d: accepted a plan that deadlocks\n%s", seed, round, text);
      g_assert_nonnull(strstr(error->message, "the plan can deadlock"));
      g_error_free(error);
      refused++;
    }
    g_free(text);
  }
  g_test_message("seed %u: %d of 8 mutations deadlock", seed, refused);
  for (int r = 0; r < ranks; r++) g_array_unref(programs[r]);
  for (int g = 0; g < n_groups; g++) g_free(groups[g]);
  g_free(programs);
  g_free(groups);
  g_free(sizes);
  g_rand_free(rng);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/plan/deadlock-groups", test_deadlock_groups);
  g_test_add_func("/validate/plan/ring", test_ring);
  g_test_add_func("/validate/plan/streams", test_streams);
  for (guint seed = 1; seed <= 60; seed++) {
    char *path = g_strdup_printf("/validate/plan/random/seed:%u", seed);
    g_test_add_data_func(path, GUINT_TO_POINTER(seed), test_random);
    g_free(path);
  }
  return g_test_run();
}
