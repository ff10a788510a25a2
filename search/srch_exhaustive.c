/* search/exhaustive — depth-first enumeration of the space with branch and bound; when it
 * completes, its best is the global optimum of the space (the reference the heuristics are
 * measured against, AutoDDL Fig. 7).
 *
 * The bound. For a context c and a partial assignment F (variables fixed to values),
 *     LB(F) = sum_{v in F} C_c(v, F_v) + sum_{v not in F} min_x C_c(v, x),
 * where C_c(v, x) is the time one device's compute stream spends on v's ops (every microbatch:
 * forwards, backwards, recomputations) when v has config x (srch_space_measure_compute).
 * Claim: every completion P of F has iteration time >= LB(F).
 * Proof. In a point of the space every op runs on the one mesh, which holds every device, in
 * stage 0, so every device's compute stream runs, for every op o and microbatch, o's forward
 * and backward tasks (sim_build.c add_compute_tasks), whose durations depend only on o's config,
 * the mesh, the microbatch count and the dtype (op_durations) — so they are the durations
 * measured for C_c, and they are equal on every device of the mesh because each split degree
 * divides the dim it splits (equal local shapes). The engine runs at most one task at a time on
 * a resource (a task starts when each of its resources is free, sim.h), so one device's compute
 * tasks occupy disjoint intervals of [0, makespan], and makespan >= sum_o C_c(o's var, P_v)
 * >= LB(F) since each unfixed term is at least its minimum. The iteration time is the makespan
 * converted by the monotone sim_time_seconds, so seconds(LB) <= the iteration time too.
 * Hence when seconds(LB(F)) >= the incumbent, no completion of F is strictly better: the
 * subtree is cut. Values are tried in increasing C_c, so once one value reaches the incumbent
 * every later value does: the loop stops there.
 * The memory bound: the bytes srch_space_value_memory gives are charged by
 * cm_memory_per_device to every device of the mesh (srch_space.h), so sum over fixed values
 * plus the minimum of each unfixed variable above the device's capacity means every
 * completion is rejected for memory (cost +infinity): that value is skipped.
 *
 * Order: variables by decreasing spread max_x C - min_x C (cut early where it matters),
 * values by increasing C (good incumbents early); ties by index. Parallel workers split the
 * (context, first-variable value) subtrees round robin, each with its own incumbent, so the
 * result does not depend on timing. */
#include "search/srch-int.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  SrchWorker *w;
  const SrchContext *ctx;
  int *order;          /* variables in visiting order */
  int **sorted;        /* per variable: value indices by increasing compute */
  SimTime *min_compute;
  double *min_memory;
  double memory_limit;
  int *point;
  int chain;           /* the subtree's task index, labels the best */
  gboolean stopped;    /* out of budget */
} Dfs;

/* Sorting (key, index) pairs: ascending key, ties by index. */
typedef struct {
  SimTime key;
  int index;
} Keyed;

static int compare_keyed(const void *a, const void *b) {
  const Keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->index - y->index;
}

/* Fills @out with 0..n-1 ordered by @keys (ascending, or descending when @descending). */
static void order_by(const SimTime *keys, int n, gboolean descending, int *out) {
  Keyed *k = g_new(Keyed, MAX(n, 1));
  for (int i = 0; i < n; i++) k[i] = (Keyed){descending ? G_MAXUINT64 - keys[i] : keys[i], i};
  qsort(k, (size_t)n, sizeof(Keyed), compare_keyed);
  for (int i = 0; i < n; i++) out[i] = k[i].index;
  g_free(k);
}

static void dfs(Dfs *d, int depth, SimTime bound, double memory) {
  SrchWorker *w = d->w;
  const SrchSpace *s = w->space;
  if (depth == s->nvars) {
    if (!srch_worker_has_budget(w)) {
      d->stopped = TRUE;
      return;
    }
    srch_worker_eval_point(w, d->point, d->chain);
    return;
  }
  int v = d->order[depth];
  for (int i = 0; i < d->ctx->nvalues[v]; i++) {
    int x = d->sorted[v][i];
    SimTime b = bound - d->min_compute[v] + d->ctx->compute[v][x];
    if (sim_time_seconds(b) >= w->best_time_s) {
      w->pruned++; /* and every later value: they cost at least as much */
      break;
    }
    double m = memory - d->min_memory[v] + d->ctx->memory[v][x];
    if (m > d->memory_limit) {
      w->pruned++;
      continue;
    }
    d->point[1 + v] = x;
    dfs(d, depth + 1, b, m);
    if (d->stopped) return;
  }
}

void srch_exhaustive_worker(SrchWorker *w) {
  const SrchSpace *s = w->space;
  int task = 0;
  g_autofree int *point = g_new(int, s->point_len);
  g_autofree int *order = g_new(int, s->nvars);
  g_autofree SimTime *spread = g_new(SimTime, s->nvars);
  g_autofree SimTime *min_compute = g_new(SimTime, s->nvars);
  g_autofree double *min_memory = g_new(double, s->nvars);
  int **sorted = g_new0(int *, s->nvars);
  gboolean stopped = FALSE;
  for (int c = 0; c < s->ncontexts && !stopped; c++) {
    const SrchContext *ctx = &s->contexts[c];
    g_assert(ctx->compute != NULL); /* srch_run measures before starting the workers */
    SimTime bound = 0;
    double memory = 0;
    for (int v = 0; v < s->nvars; v++) {
      g_free(sorted[v]);
      sorted[v] = g_new(int, ctx->nvalues[v]);
      SimTime lo = G_MAXUINT64, hi = 0;
      min_memory[v] = INFINITY;
      for (int x = 0; x < ctx->nvalues[v]; x++) {
        lo = MIN(lo, ctx->compute[v][x]);
        hi = MAX(hi, ctx->compute[v][x]);
        min_memory[v] = MIN(min_memory[v], ctx->memory[v][x]);
      }
      order_by(ctx->compute[v], ctx->nvalues[v], FALSE, sorted[v]);
      min_compute[v] = lo;
      spread[v] = hi - lo;
      bound += lo;
      memory += min_memory[v];
    }
    order_by(spread, s->nvars, TRUE, order);
    point[0] = c;
    Dfs d = {w, ctx, order, sorted, min_compute, min_memory,
             /* slack for the rounding of the running sums */
             s->capacity * (1 + 1e-9), point, 0, FALSE};
    /* The first level is split among the workers. */
    int v0 = order[0];
    for (int i = 0; i < ctx->nvalues[v0]; i++, task++) {
      if (task % w->nworkers != w->index) continue;
      int x = sorted[v0][i];
      SimTime b = bound - min_compute[v0] + ctx->compute[v0][x];
      if (sim_time_seconds(b) >= w->best_time_s) {
        w->pruned++;
        continue; /* later values of this level may belong to other workers: count each */
      }
      double m = memory - min_memory[v0] + ctx->memory[v0][x];
      if (m > d.memory_limit) {
        w->pruned++;
        continue;
      }
      d.chain = task;
      point[1 + v0] = x;
      dfs(&d, 1, b, m);
      if (d.stopped) {
        stopped = TRUE;
        break;
      }
    }
  }
  for (int v = 0; v < s->nvars; v++) g_free(sorted[v]);
  g_free(sorted);
  w->complete = !stopped;
}
