/* validate/plan_check — the cross-rank checks of a read plan (val_plan.h promises them): the
 * k-th send from p to q matched with the k-th recv from p in q's program, every member of a group
 * issuing that group's collectives in one order, and no deadlock (with the issue order it
 * finds). Errors name the step (programs[r].steps[i] (id N)). */
#include "validate/val_plan-int.h"

#include <string.h>

static void step_ctx(Ctx *c, const ValPlan *plan, int rank, guint index) {
  g_snprintf(c->at, sizeof c->at, "programs[%d].steps[%u] (id %" G_GINT64_FORMAT ")", rank, index,
             plan->programs[rank].steps[index].id);
}

/* The k-th send from p to q is matched with the k-th recv from p in q's program. */
gboolean val_plan_match_transfers(ValPlan *plan, Ctx *c, GError **error) {
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
        val_plan_fail(error, c,
                      "send to rank %d (transfer %u from rank %d to rank %d) has no matching recv: rank "
                      "%d's program has %u recv(s) from rank %d",
                      s->peer, k + 1, r, s->peer, s->peer, list ? list->len : 0, r);
        goto out;
      }
      guint j = g_array_index(list, guint, k);
      ValStep *t = &plan->programs[s->peer].steps[j];
      if (t->bytes != s->bytes || t->dtype != s->dtype) {
        step_ctx(c, plan, r, i);
        val_plan_fail(error, c,
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
        val_plan_fail(error, c,
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
gboolean val_plan_check_streams(const ValPlan *plan, Ctx *c, GError **error) {
  g_autofree int *group_stream = g_new(int, MAX(plan->n_groups, 1));
  for (int g = 0; g < plan->n_groups; g++) group_stream[g] = -1;
  int transfer_stream = -1;
  for (int r = 0; r < plan->ranks; r++) {
    const ValProgram *p = &plan->programs[r];
    for (guint i = 0; i < p->n_steps; i++) {
      const ValStep *s = &p->steps[i];
      gboolean transfer = s->kind == VAL_STEP_SEND || s->kind == VAL_STEP_RECV;
      if (!transfer && s->kind != VAL_STEP_COLLECTIVE) continue;
      int *first = transfer ? &transfer_stream : &group_stream[s->group];
      if (*first < 0) *first = (int)s->stream;
      if (*first == (int)s->stream) continue;
      step_ctx(c, plan, r, i);
      if (transfer)
        val_plan_fail(error, c, "%s on stream %s where an earlier transfer runs on %s: every send "
                      "and recv shares one communicator, so they must all be on one stream",
                      val_step_kind_name(s->kind), val_stream_name(s->stream),
                      val_stream_name((ValStream)*first));
      else
        val_plan_fail(error, c, "collective of group %d on stream %s where the group's earlier "
                      "collectives run on %s: a group's communicator must stay on one stream",
                      plan->groups[s->group].id, val_stream_name(s->stream),
                      val_stream_name((ValStream)*first));
      return FALSE;
    }
  }
  return TRUE;
}

gboolean val_plan_match_collectives(ValPlan *plan, Ctx *c, GError **error) {
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
        val_plan_fail(error, c,
                      "collective %" G_GUINT64_FORMAT " of group %d on rank %d has no counterpart: rank %d "
                      "(the group's first member) issues %u collective(s) of that group",
                      s->sequence + 1, g->id, r, g->ranks[0], ref->len);
        goto out;
      }
      const ValStep *t = &plan->programs[g->ranks[0]].steps[g_array_index(ref, guint, s->sequence)];
      if (t->collective != s->collective || t->bytes != s->bytes || t->dtype != s->dtype) {
        step_ctx(c, plan, r, i);
        val_plan_fail(error, c,
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
        val_plan_fail(error, c,
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

gboolean val_plan_check_deadlock(ValPlan *plan, Ctx *c, GError **error) {
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
      val_plan_fail(error, c,
                    "the plan can deadlock: rank %d waits at %s on group %d, which rank %d has not reached "
                    "(it waits at step id %" G_GINT64_FORMAT ")",
                    r, val_collective_name(s->collective), g->id, absent,
                    pq && is.head[absent] < pq->n_steps ? pq->steps[is.head[absent]].id : -1);
    } else {
      const ValProgram *pq = &plan->programs[s->peer];
      val_plan_fail(error, c,
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
