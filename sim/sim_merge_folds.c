/* sim/merge_folds — collectives folded into compute chains (sim_merge.c's SimFolds): which
 * communication tasks fold, and the heads and tails the others make.
 *
 * The fold relation from the builder: measured, not kept (tmpl-fold, 2026-12-02). The idea:
 * the builder knows where each tensor-parallel collective forks off and joins its chain, so it
 * could hand the relation over and not materialize the edges it implies, and merging would
 * neither read nor check them. 175B interleaved point, `bench --suite predict --repeat 3 -s
 * megatron:tp=8,pp=16,dp=8,mb=1,schedule=interleaved,vp=2`, callgrind, 697.1 M instructions
 * for the 3 predictions (232.4 M each); with the passes noinline, per prediction: check_edges
 * 17.4 M (its 166,080 candidates' edges: sim_merge_candidate_edge 9.4 M, ~56 a call, plus
 * their dispatch and their share of the loop, ~4 M), sim_merge_fold_collectives 17.1 M
 * (settle_folds 11.5 M, of which span_broken 4.1 M; cedges 3.7 M), keep_edges 4.7 M (69% of
 * its edges the candidates'), check_other_tasks 6.5 M, reduce's own 16.5 M (per run end:
 * unchanged by where the relation comes from, as are the fold passes over the tasks, the
 * span checks and the engine). The most that can go is then the candidates' part of
 * check_edges, keep_edges and the cedges loop, ~16 M (6.8%), and only if merging trusted the
 * builder's relation outright (no device test, no xp/xs from positions, no flags from
 * unfolded candidates' edges), with the builder proving each collective's whole edge set
 * across all its paths (conversions shared by consumers, multi-step conversions, ring and
 * ahead overlap, cross-mesh moves, replays).
 * Built and measured the checked form instead: the builder held each edge between a compute
 * task and another task in a per-task slot (SimTaskGraph pairs: one edge in from a compute
 * task, one out into one, where the slot was free; the rest in the edge list), written by the
 * forward, recompute and gradient data-edge loops and by sb_replay_many (per recorded edge,
 * where every copy's input was a compute task), a graph for merging only (not under
 * build_each_microbatch); merging checked a task's held edges with its entry in
 * check_other_tasks (a candidate's as sim_merge_candidate_edge does, its device test as the
 * device's position range; any other task's by check_edge), kept them in reduce's task loop
 * (keep_edge) and set the unfolded candidates' flags from them in settle_folds (no cedges).
 * Exact (the four bench iteration times, test-merge whole), but 697.1 M -> 682.9 M for 3
 * predictions, -4.7 M a prediction (2.0%): merging's edge loops -35.2 M, check_other_tasks
 * +17.1 M (a held edge still costs its position, device test, xp/xs or flag: ~25-35), settle
 * -3.4 M, the builder +4.7 M (its data-edge loops and replays test and fill the slots), the
 * slots' zeroing +2.4 M. A first form checking held edges with check_edge itself was 708.2 M
 * (the dispatch, not the loop, is most of an edge's cost). Under the 5% bar: not kept. */
#include "sim/sim-int.h"
#include "sim/sim_merge-int.h"

#include <string.h>

/* Folding collectives. A collective X on one communication stream of a device (a symmetric
 * graph's tensor-parallel all-reduce, say) whose predecessors are all compute tasks of that
 * device, the last p in program order (its fork), and whose successors are all compute tasks
 * of that device, the first s after p (its join), becomes ready when p ends, and s when both
 * X and the member before s have ended; the members between (beside X: Megatron's dW beside
 * dX's all-reduce, a re-gather issued a task ahead) do not wait for it (nothing else can hold
 * their stream). X's stream is shared (with the all-gathers after pipeline receives), so when
 * X starts is the engine's to say: X leaves the graph's edges and joins p's group as its next
 * folded collective (SimFolds): the group runs up to p, X pops at p's end under its own id (the
 * order of equal times is the full run's) and starts when its stream is free, the group goes
 * on through X's steps (waiting at each join for the collective joining there, which forked
 * earlier and so is timed), and its successors see it end after its last step. A group pops
 * once per folded collective instead of twice (X and the group after it). Not folded: X
 * whose span (fork to the member before its join) holds a tail (its successors off the chain
 * need its own end) or, after the fork, a head (the group would split under X); a collective
 * lasting zero; two joining at one member (and of two forking at one, the later-joining);
 * anything under step mode. Candidates' edges wait in cedges until the decision; an unfolded
 * candidate's then make heads and tails as any other's. Candidates are marked as the
 * applicability check reads the tasks (sim_merge_candidate). */
/* Whether some member of @x's span has a flag that unfolds it: a tail from its fork to the
 * member before its join (their successors off the chain need their own ends), a head after
 * its fork up to the member before its join (the group would split under it). */
static gboolean span_broken(const Merge *m, uint32_t x) {
  uint32_t p = m->xp[x - m->C], s = m->xs[x - m->C];
  for (uint32_t k = p; k < s; k++) {
    uint8_t f = m->cf[k];
    if ((f & TAIL) || (k > p && (f & HEAD))) return TRUE;
  }
  return FALSE;
}

/* The unfolded candidates' edges make heads and tails; a collective whose span they break
 * unfolds (again until none does); then JOIN and FORK mark the folded ones only. Tried
 * (merge9, 2026-12-01) and not kept: rounds after the first setting only the flags of the
 * candidates the last one unfolded and checking only the spans holding a position whose flags
 * changed (fork at most the longest span back). Exact (cross-checked against these rounds over
 * the whole ctest), but fold + settle stayed 1.43-1.50 ms on the 175B point (2 rounds, 193
 * unfolded in the first): the second full round runs on lines the first brought in; the cost
 * is the first round's misses. Prefetching the spans' flags 16 candidates ahead here, or a
 * candidate's join and fork lines 16 ahead in sim_merge_fold_collectives' passes (1882053:
 * ~10% by 20-run means, but the minimum over 40 predictions 1.52-1.55 ms with and without it,
 * A/B 3x; removed): no gain. */
static void settle_folds(Merge *m) {
  uint32_t C = m->C;
  for (gboolean changed = TRUE; changed;) {
    const uint32_t *e = m->cedges;
    for (guint k = 0; k < m->ncedges / 2; k++) {
      uint32_t x = e[2 * k], at = e[2 * k + 1];
      if (!(m->flags[x] & FOLD)) m->cf[at & ~SUCCESSOR] |= at & SUCCESSOR ? HEAD : TAIL;
    }
    changed = FALSE;
    for (uint32_t t = C; t < m->n; t++)
      if ((m->flags[t] & FOLD) && span_broken(m, t)) {
        m->flags[t] &= (uint8_t)~FOLD;
        changed = TRUE;
      }
  }
  for (uint32_t t = C; t < m->n; t++) {
    if (!(m->flags[t] & CAND) || m->xs[t - C] == NONE) continue;
    uint32_t sp = m->xs[t - C], p = m->xp[t - C];
    if (m->flags[t] & FOLD) continue;
    if ((m->cf[sp] & JOIN) && (m->xat[sp] == t || m->xat[sp] == NONE - 1)) m->cf[sp] &= (uint8_t)~JOIN;
    if (p != NONE && (m->cf[p] & FORK) && m->xfk[p] == t) m->cf[p] &= (uint8_t)~FORK;
  }
}

/* Which candidates fold (the rules above); the flags of the others' edges. */
void sim_merge_fold_collectives(Merge *m) {
  uint32_t C = m->C;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t t = C; t < m->n; t++) {
      uint8_t f = m->flags[t];
      if ((f & (CAND | BAD)) != CAND) continue;
      uint32_t p = m->xp[t - C], sp = m->xs[t - C];
      if (p == NONE || sp == NONE || sp <= p) continue;
      if (pass == 0) { /* two joining at one member: neither */
        m->xat[sp] = m->cf[sp] & JOIN ? NONE - 1 : t;
        m->cf[sp] |= JOIN;
      } else if (m->xat[sp] == t) { /* two forking at one member: the one joining first */
        uint32_t y = m->cf[p] & FORK ? m->xfk[p] : NONE;
        if (y != NONE && m->xs[y - C] < sp) continue;
        if (y != NONE) m->flags[y] &= (uint8_t)~FOLD;
        m->xfk[p] = t;
        m->cf[p] |= FORK;
        m->flags[t] |= FOLD;
      }
    }
  settle_folds(m);
}

/* A late launch released inside a folded collective's span would split the group under it:
 * such collectives unfold, and the positions' flags follow (the reduced graph is then the one
 * they would have given unfolded from the start). FALSE where none did. */
gboolean sim_merge_unfold_released(Merge *m) {
  gboolean any = FALSE;
  g_autoptr(GArray) open = g_array_new(FALSE, FALSE, sizeof(uint32_t)); /* spans open here */
  for (uint32_t d = 0; d < (uint32_t)m->g->num_devices; d++) {
    g_array_set_size(open, 0);
    for (uint32_t k = m->dbeg[d]; k < m->dbeg[d + 1]; k++) {
      for (guint i = 0; (m->cf[k] & JOIN) && i < open->len; i++)
        if (g_array_index(open, uint32_t, i) == m->xat[k]) g_array_remove_index_fast(open, i);
      if (open->len && (m->cf[k] & RELEASED)) {
        for (guint i = 0; i < open->len; i++) {
          uint32_t x = g_array_index(open, uint32_t, i);
          m->flags[x] = (uint8_t)((m->flags[x] & ~FOLD) | BAD);
        }
        g_array_set_size(open, 0);
        any = TRUE;
      }
      if (m->cf[k] & FORK) g_array_append_val(open, m->xfk[k]);
    }
  }
  if (!any) return FALSE;
  settle_folds(m); /* the flags it adds are the positions' own (cf) */
  return TRUE;
}

