/* search/mcmc — Metropolis-Hastings over the strategy space (FlexFlow section 6.1-6.2; AutoDDL
 * section 4.4).
 *
 * Target p(S) ~ exp(-beta cost(S)) (FlexFlow eq. 1). A proposal picks one variable uniformly
 * (the op or group configs, and the context: mesh and microbatch count) and sets it to
 * another of its values uniformly, so q(S|S*) = q(S*|S) and the acceptance is FlexFlow eq. 2:
 * min(1, exp(beta (cost(S) - cost(S*)))). Strategies over memory cost the penalty of
 * srch-int.h (1e9 s times peak / capacity): a chain that starts there only moves downhill, to
 * less memory, until it is feasible; a feasible chain practically never accepts one.
 *
 * beta: costs are seconds and differ by orders of magnitude between models, so beta is
 * relative: beta = beta_rel / c_ref, c_ref the chain's first feasible cost. The default
 * beta_rel = 100 accepts a proposal 1% worse with probability e^-1 = 0.37, 5% worse with
 * e^-5 = 0.007 and 10% worse with 4.5e-5: the chain drifts across the many near-equal configs
 * of small ops (plateaus) but rarely climbs out of a basin by more than a few percent.
 *
 * Restarts (FlexFlow section 6.2): chains start from data parallelism (chain 0), the expert
 * strategy (chain 1: Megatron-style, or "one weird trick" for CNNs), each with the fewest
 * microbatches that fit in memory, and random points (chains 2, 3, ...); chain c runs on worker c mod threads. A chain gets 1/restarts of its worker's
 * budget and ends early when it has not improved its best for half of that budget (FlexFlow's
 * "no improvement for half the search time"). */
#include "search/srch-int.h"

#include <math.h>
#include <string.h>

#define MIN_CHAIN_EVALUATIONS 16

/* Chain 0 starts from data parallelism, 1 from the expert strategy, the rest at random. */
static void chain_start(const SrchSpace *s, int chain, GRand *rng, int *point) {
  if (chain == 0) srch_space_data_parallel(s, point);
  else if (chain == 1) srch_space_expert(s, point);
  else srch_space_random(s, rng, point);
}

/* A starting point over memory moves to the next larger microbatch count on its mesh (the
 * same configs, mapped: srch_space_set_context) until one fits, as the data-parallel baseline
 * takes the fewest microbatches that fit: a chain walking out of the infeasible region one
 * variable at a time may not reach the microbatch count before its patience ends. Returns the
 * cost of the point it leaves in @point. */
static double fit_microbatches(SrchWorker *w, int *point, int chain, double cost) {
  const SrchSpace *s = w->space;
  g_autofree int *cand = g_new(int, s->point_len);
  while (!srch_feasible(cost) && srch_worker_has_budget(w)) {
    const SrchContext *at = &s->contexts[point[0]];
    int next = -1;
    for (int c = 0; c < s->ncontexts; c++) {
      const SrchContext *ctx = &s->contexts[c];
      if (ctx->mesh == at->mesh && ctx->microbatches > at->microbatches &&
          (next < 0 || ctx->microbatches < s->contexts[next].microbatches))
        next = c;
    }
    if (next < 0) break;
    memcpy(cand, point, sizeof(int) * (gsize)s->point_len);
    srch_space_set_context(s, cand, next);
    double c = srch_worker_eval_point(w, cand, chain);
    memcpy(point, cand, sizeof(int) * (gsize)s->point_len);
    cost = c;
  }
  return cost;
}

/* Proposes a neighbour of @point in @cand: one variable to another value. FALSE when the
 * chosen variable has a single value (the step is a no-op). */
static gboolean propose(const SrchSpace *s, GRand *rng, const int *point, int *cand) {
  memcpy(cand, point, sizeof(int) * (gsize)s->point_len);
  gboolean ctx_var = s->ncontexts > 1;
  int r = g_rand_int_range(rng, 0, s->nvars + (ctx_var ? 1 : 0));
  if (r == s->nvars) {
    int to = g_rand_int_range(rng, 0, s->ncontexts - 1);
    if (to >= point[0]) to++;
    srch_space_set_context(s, cand, to);
    return TRUE;
  }
  int n = s->contexts[point[0]].nvalues[r];
  if (n < 2) return FALSE;
  int x = g_rand_int_range(rng, 0, n - 1);
  if (x >= point[1 + r]) x++;
  cand[1 + r] = x;
  return TRUE;
}

static void run_chain(SrchWorker *w, int chain, double beta_rel, guint64 chain_evaluations,
                      gint64 chain_us) {
  const SrchSpace *s = w->space;
  GRand *rng = srch_chain_rand(w, chain);
  g_autofree int *point = g_new(int, s->point_len);
  g_autofree int *cand = g_new(int, s->point_len);
  gint64 chain_deadline = chain_us ? g_get_monotonic_time() + chain_us : 0;
  chain_start(s, chain, rng, point);
  guint64 first = w->evaluations;
  double cost = srch_worker_eval_point(w, point, chain);
  if (chain < 2) cost = fit_microbatches(w, point, chain, cost);
  double reference = srch_feasible(cost) ? cost : NAN;
  double chain_best = cost;
  guint64 last_improvement = w->evaluations;
  while (srch_worker_has_budget(w) && !srch_worker_spinning(w)) {
    guint64 used = w->evaluations - first;
    if (chain_evaluations && used >= chain_evaluations) break;
    if (chain_deadline && g_get_monotonic_time() >= chain_deadline) break;
    guint64 patience = chain_evaluations ? chain_evaluations / 2 : used / 2;
    if (used >= MIN_CHAIN_EVALUATIONS && w->evaluations - last_improvement > MAX(patience, MIN_CHAIN_EVALUATIONS))
      break; /* no improvement for half the chain's budget */
    if (!propose(s, rng, point, cand)) {
      w->steps++;
      continue;
    }
    double c = srch_worker_eval_point(w, cand, chain);
    if (!isfinite(reference) && srch_feasible(c)) reference = c;
    gboolean accept;
    if (c <= cost) accept = TRUE; /* also from +infinity to +infinity */
    else if (!isfinite(c) || !isfinite(reference)) accept = FALSE; /* downhill only until feasible */
    else accept = g_rand_double(rng) < exp(beta_rel / reference * (cost - c)); /* eq. 2 */
    if (accept) {
      memcpy(point, cand, sizeof(int) * (gsize)s->point_len);
      cost = c;
    }
    if (c < chain_best) {
      chain_best = c;
      last_improvement = w->evaluations;
    }
  }
  g_rand_free(rng);
}

void srch_mcmc_worker(SrchWorker *w) {
  const SrchOptions *o = w->options;
  int restarts = o->restarts > 0 ? o->restarts : SRCH_DEFAULT_RESTARTS;
  double beta_rel = o->beta > 0 ? o->beta : SRCH_DEFAULT_BETA;
  guint64 chain_evaluations = 0;
  gint64 chain_us = 0;
  if (w->budget_evaluations)
    chain_evaluations = MAX(MIN_CHAIN_EVALUATIONS, w->budget_evaluations / (guint64)restarts);
  if (w->deadline_us) chain_us = MAX(1, (w->deadline_us - w->start_us) / restarts);
  for (int k = 0; srch_worker_has_budget(w) && !srch_worker_spinning(w); k++)
    run_chain(w, k * w->nworkers + w->index, beta_rel, chain_evaluations, chain_us);
}
