/* search/random — random search: uniform points (a uniform context, then uniform values), one
 * GRand per worker seeded from (seed, worker index). The baseline AutoDDL's Fig. 7 compares
 * the heuristics against. */
#include "search/srch-int.h"

void srch_random_worker(SrchWorker *w) {
  const SrchSpace *s = w->space;
  GRand *rng = srch_chain_rand(w, w->index);
  g_autofree int *point = g_new(int, s->point_len);
  while (srch_worker_has_budget(w) && !srch_worker_spinning(w)) {
    srch_space_random(s, rng, point);
    srch_worker_eval_point(w, point, w->index);
  }
  g_rand_free(rng);
}
