/* search/cd — coordinate descent with restarts (AutoDDL section 4.4, after Farsa and
 * Rahnamayan's discrete coordinate descent).
 *
 * One sweep visits the context (mesh and microbatch count; the configs follow
 * srch_space_set_context's mapping) and then every variable in graph order; each is set to
 * the value with the lowest cost with all others held (S[i] = argmin_s Cost(..., s, ...)),
 * updating the point at once (Gauss-Seidel). Only a strictly lower cost moves a coordinate, so
 * the cost never rises and ties keep the current value. When a sweep moves nothing the point is
 * a fixed point: the run records it (the evaluator keeps the best) and restarts: restart r
 * (worker r mod threads) starts from data parallelism (r = 0), the expert strategy (r = 1) or
 * a random point seeded from (seed, r). The evaluator's cache makes re-visits free; a worker
 * stops after CD_IDLE_RESTARTS restarts in a row that found nothing new (a small space is used
 * up). */
#include "search/srch-int.h"

#include <math.h>
#include <string.h>

#define CD_IDLE_RESTARTS 10

/* Tries every value of coordinate @var (-1: the context) of @point; moves to the best if it
 * is strictly better. Returns TRUE if the point moved. */
static gboolean sweep_coordinate(SrchWorker *w, int var, int chain, int *point, double *cost,
                                 int *cand, int *best) {
  const SrchSpace *s = w->space;
  double best_cost = *cost;
  gboolean moved = FALSE;
  int n = var < 0 ? s->ncontexts : s->contexts[point[0]].nvalues[var];
  int current = var < 0 ? point[0] : point[1 + var];
  for (int x = 0; x < n; x++) {
    if (x == current) continue;
    if (!srch_worker_has_budget(w)) break;
    memcpy(cand, point, sizeof(int) * (gsize)s->point_len);
    if (var < 0) srch_space_set_context(s, cand, x);
    else cand[1 + var] = x;
    double c = srch_worker_eval_point(w, cand, chain);
    if (c < best_cost) {
      best_cost = c;
      memcpy(best, cand, sizeof(int) * (gsize)s->point_len);
      moved = TRUE;
    }
  }
  if (moved) {
    memcpy(point, best, sizeof(int) * (gsize)s->point_len);
    *cost = best_cost;
  }
  return moved;
}

void srch_cd_worker(SrchWorker *w) {
  const SrchSpace *s = w->space;
  g_autofree int *point = g_new(int, s->point_len);
  g_autofree int *cand = g_new(int, s->point_len);
  g_autofree int *best = g_new(int, s->point_len);
  int idle = 0;
  for (int k = 0; srch_worker_has_budget(w) && !srch_worker_spinning(w) && idle < CD_IDLE_RESTARTS; k++) {
    int chain = k * w->nworkers + w->index;
    GRand *rng = srch_chain_rand(w, chain);
    if (chain == 0) srch_space_data_parallel(s, point);
    else if (chain == 1) srch_space_expert(s, point);
    else srch_space_random(s, rng, point);
    g_rand_free(rng);
    guint64 before = w->evaluations;
    double cost = srch_worker_eval_point(w, point, chain);
    for (gboolean moved = TRUE; moved && srch_worker_has_budget(w);) {
      moved = FALSE;
      if (s->ncontexts > 1) moved |= sweep_coordinate(w, -1, chain, point, &cost, cand, best);
      for (int v = 0; v < s->nvars && srch_worker_has_budget(w); v++)
        moved |= sweep_coordinate(w, v, chain, point, &cost, cand, best);
    }
    idle = w->evaluations == before ? idle + 1 : 0;
  }
}
