/* sim/merge — chain merging: a run's prediction timed on a reduced graph, bit for bit.
 *
 * Why it is exact. A device's compute stream (sim_resource_compute) serves only that device's compute
 * tasks, chained in program order by the builder (chain_prev), and possibly its optimizer step
 * after the last of them; the applicability check below refuses anything else (collectives
 * that hold compute streams without overlap, graphs not from sim_build; step-expanded
 * collectives' transfers hold link resources only, and their spans are kept).
 * So a compute task's start equals its ready time (its chain predecessor has ended, and nothing
 * else can hold the stream), and a compute task c whose predecessors are only its chain
 * predecessor, earlier compute tasks of its own device (ended before the chain predecessor) and
 * its host launch h(c) starts at max(end(chain_prev), end(h(c))). If moreover h(c) has ended by
 * then ("the launch is not late"), c starts exactly when chain_prev ends. A maximal run of such
 * tasks whose members before the last have no successor off the device's compute chain (other
 * than launch queue edges into the host stream) is a group: it runs back to back from its
 * head's start, so it is replaced by one task lasting the sum of its members' durations
 * (integer picoseconds: the sum is exact, and member i starts at the group's start plus the
 * durations before it). Edges out of a tail into a head (or into or out of tasks that are not
 * compute) are kept; the others join members that last more than zero (zero-duration compute
 * tasks are groups of their own): an edge into one is implied by the chain, and one out of one
 * ends before its target's chain predecessor pops, so it never decides when its target is
 * ready or pushed.
 *
 * The host stream (sim_build_host.c) is not in the reduced graph (a graph built for merging
 * does not even materialize it, nor its compute tasks' entries: SimTaskGraph.program_block
 * gives each position's block, whose tables hold the durations and kernels, and the pass
 * below runs its launch queue itself): a host resource serves only its
 * device's launches, in program order, so h(c) starts at max(end(h(chain_prev)), end of the
 * compute tasks c's launch queue waits for) and its end is computed after the engine, in one
 * pass per device, from the compute tasks' (exact) ends. A launch that gates its kernel (ends
 * after the kernel's other dependencies: "late") is given to the reduced run as a release time
 * of that kernel, which then heads its group; each device's first launch is one from the start
 * (it has no predecessor: it ends at its own duration). The pass checks that every compute
 * task's ready time, max(dependencies, launch end), is the one the reduced run used,
 * max(dependencies, release). Where it is not, the releases are corrected and the reduced graph
 * timed again; once it is, the reduced run is the full one: both engines pop the same tasks in
 * the same order at the same times, the launches' ends being what the full run computes from
 * the same earlier ends. After MERGE_ROUNDS runs, or with many launches late (a host-bound run,
 * where merging saves little), the caller runs the full engine: the result is never an
 * approximation. A host task ends no later than its kernel starts, so the makespan is the
 * reduced graph's.
 *
 * Tie-breaks: the engine pops equal ready times by task id. Reduced ids keep the original
 * relative order (groups by their head's id, all below the other tasks, as compute ids are),
 * zero-duration compute tasks stay alone (their successors become ready at their pop time)
 * and, where such a task's launch lasts zero too, the launch must have ended before its other
 * dependencies (else the task would be pushed at a different point of that time's pops). So a
 * task pushed earlier in the reduced run than in the full one (a group's successors at the
 * group's pop, a kernel at its last predecessor's rather than its launch's pop) is pushed
 * before its ready time comes in both, or pops at that time without pushing anything due then:
 * the pops at each time, in order, are the same. Only compute streams, whose order is fixed by
 * the chain, see merged tasks.
 *
 * Collectives between members of a chain are folded into it (sim_merge_folds.c, SimFolds): the
 * group pops once more per folded collective, at the collective's own time and id, instead of
 * the collective and the group after it popping apart (and sim_engine_folds.c times all but a
 * chain's last when the chain pops); members beside a collective (between its fork and its
 * join) run on without waiting for it.
 *
 * The breakdown (sim_breakdown_sums) then runs on the reduced schedule: a group's busy
 * intervals (its stretches: its first and its collectives' steps) are the union of its
 * members' (they touch), so busy time and the measure of communication not under compute are
 * the same integers; the host waits come from the pass. tests/test-merge.c checks merged against full
 * predictions over a set of strategies, the Megatron space and the 175B bench points.
 *
 * Merging per template instead of per task: measured and not built (2026-12-02). The builder
 * stamps each stage's chain from a template per schedule unit and phase, so the idea was to
 * find groups, their durations and the fold positions once per template and stamp each
 * instance's reduced tasks. Callgrind on the 175B interleaved point (`bench --suite predict
 * --repeat 3`, the sum divided by 3; the passes made noinline to split them) puts these passes
 * at ~78 M
 * instructions a prediction out of ~257 M. 481,344 positions, 98,371 tasks that are not
 * compute, 240,310 edges (166,080 of them a candidate's), 73,919 folded collectives (a fork
 * and a join each: 147,838 of the 160,868 run ends), 18,639 groups, 117,010 reduced tasks:
 *   check_tasks 12.3 M: the durations' prefix sums 5.3 M (11 instructions a position),
 *     check_other_tasks 6.5 M (per task);
 *   check_edges 14.3 M (per edge, ~60 instructions each);
 *   sim_merge_fold_collectives 16.4 M: its two passes 5.6 M (per task), settle_folds 10.8 M
 *     (two rounds here: cedges 3.7 M, spans 3.9 M, per-task loops 3.1 M);
 *   reduce 33.7 M: the run-end loop ~9 M plus ~4 M in other_gid, prefetch_fork and the
 *     next_flagged calls (per run end: ~80 instructions), per-task loops (gid, SimFold init,
 *     task copy) ~4.4 M, keep_edge's pass 4.7 M (per edge), sim_task_graph_finish 3.1 M,
 *     allocation ~3 M.
 * The part that is per position is the prefix sums and next_flagged's words with no flag
 * (its 352,706 calls here and in the host pass read 457,900 words): ~6.2 M, 2.4%. The rest
 * is per task, per edge or per folded collective, and each instance's collectives, edges and
 * cuts are its own data: stamping still writes each collective's SimFold, two steps and its
 * join's jx and jdur, and the checks still read every edge and task entry (the exactness
 * argument rests on them, not on how the builder made them). Stamping could at most drop the
 * per-position 6.2 M and the run-end loop's dispatch (a share of its ~13 M), under 13 M (5%),
 * before finding the instances: the graph has no unit boundaries (program_block per position
 * only: finding them is itself a pass over the positions) and each instance's cuts (flags set
 * by its edges from outside and its releases) must still be read. Replacing the prefix sums
 * by summing each stretch's block durations in the run-end loop (the cheapest per-position
 * alternative) cost 4.9 M more a prediction (543.1 M against 528.6 M for sim_merge_predict
 * over 3), iteration times unchanged: not kept. What would move more is the per-collective
 * work (by the figures above ~50 M, ~680 instructions a folded collective over
 * check_other_tasks, check_edges, the fold passes, settle_folds and reduce), which needs the
 * builder to hand over the fold structure with a relation per instance that is cheap to
 * check (a microbatch's communication is replayed with shifted ids, sim_build_replay.c, but
 * its compute ids shift by the microbatch and its positions by schedule unit: such a check
 * is still a pass over the edges, with two shifts and a position map per unit). */
#include "sim/sim-int.h"
#include "sim/sim_merge-int.h"

#include <string.h>

/* Reduced runs at most (each after the late launches the previous one found). */
#define MERGE_ROUNDS 4

/* The next @bytes of an arena at *@fill, 64-byte aligned (a cache line). */
static void *take(char **fill, gsize bytes) {
  void *p = *fill;
  *fill += (bytes + 63) & ~(gsize)63;
  return p;
}

/* Whether resource @r is the compute stream of one of @nd devices. */
static gboolean compute_stream(uint32_t nd, uint32_t r) {
  return r < sim_stream_resources((int)nd) && sim_resource_stream_of(r) == SIM_STREAM_COMPUTE;
}

static gboolean compute_kind(uint8_t kind) {
  return kind == SIM_TASK_FORWARD || kind == SIM_TASK_BACKWARD ||
         kind == SIM_TASK_BACKWARD_WEIGHT || kind == SIM_TASK_RECOMPUTE;
}

/* The other tasks' side of the applicability check: host tasks on one resource, nothing else
 * on a host resource, only an optimizer step on a compute stream; the candidates for folding
 * marked on the way. */
static gboolean check_other_tasks(Merge *m) {
  const SimTaskGraph *g = m->g;
  uint32_t nd = (uint32_t)g->num_devices, streams = sim_stream_resources(g->num_devices);
  gboolean fold = g->spans->len == 0; /* (no folding under step mode) */
  for (uint32_t t = m->C; t < m->n; t++) {
    const SimTask *task = &m->tasks[t];
    if (is_host(m, t)) {
      if (task->nres != 1) return FALSE;
      continue;
    }
    if (fold) sim_merge_candidate(m, t, streams); /* (while the task is read) */
    for (uint16_t k = 0; k < task->nres; k++) {
      uint32_t r = m->res[task->res_begin + k];
      if (m->hb != NONE && r >= g->host_resource_base && r < g->host_resource_base + nd)
        return FALSE;
      /* only an optimizer step after the device's last compute task may share its stream
       * (after: check_edges, over the ones listed here) */
      if (compute_stream(nd, r)) {
        if (task->kind != SIM_TASK_OPTIMIZER) return FALSE;
        g_array_append_val(m->steps, t);
      }
    }
  }
  return TRUE;
}

/* Merge.chunk_dev from the devices' program ranges (dbeg). */
static void chunk_devices(Merge *m, uint32_t nd) {
  for (uint32_t j = 0, d = 0; ((gsize)j << DEV_CHUNK_BITS) < m->C; j++) {
    while (d + 1 < nd && (j << DEV_CHUNK_BITS) >= m->dbeg[d + 1]) d++;
    m->chunk_dev[j] = d;
  }
}

/* The tasks' side of the applicability check; programs, first and last tasks. */
static gboolean check_tasks(Merge *m) {
  const SimTaskGraph *g = m->g;
  uint32_t nd = (uint32_t)g->num_devices;
  const uint32_t *program = g->program, *begin = g->program_begin;
  if (!program || begin[nd] != m->C) return FALSE;
  m->prog = program;
  if (g->program_block) { /* a graph for merging: the builder's blocks (its compute tasks
                             themselves may not be written: SimTaskGraph.program_block) */
    if (!g->program_pos) return FALSE;
    m->cum[0] = 0;
    m->pos = g->program_pos;
    /* every position CHAINED, a device's first HEAD instead, one lasting zero HEAD and TAIL
     * too; the durations' prefix sums (Merge.cum) */
    memset(m->cf, CHAINED, m->C);
    const uint32_t *block = g->program_block;
    const SimTime *bd = g->block_duration;
    SimTime sum = 0;
    gboolean zero = FALSE;
    for (uint32_t k = 0; k < m->C; k++) {
      SimTime duration = bd[block[k]];
      zero |= duration == 0;
      sum += duration;
      m->cum[k + 1] = sum;
    }
    for (uint32_t k = 0; zero && k < m->C; k++)
      if (m->cum[k + 1] == m->cum[k]) m->cf[k] |= HEAD | TAIL;
    for (uint32_t d = 0; d < nd; d++) {
      m->dbeg[d] = begin[d];
      m->first[d] = m->last[d] = NONE;
      if (begin[d] == begin[d + 1]) continue;
      m->cf[begin[d]] = (uint8_t)(HEAD | (m->cf[begin[d]] & TAIL));
      m->first[d] = program[begin[d]], m->last[d] = program[begin[d + 1] - 1];
    }
    m->dbeg[nd] = m->C;
    chunk_devices(m, nd);
    return check_other_tasks(m);
  }
  m->pos = m->posbuf;
  for (uint32_t c = 0; c < m->C; c++) {
    const SimTask *t = &m->tasks[c];
    uint32_t r = m->res[t->res_begin];
    if (t->nres != 1 || !compute_stream(nd, r) || !compute_kind(t->kind)) return FALSE;
    m->dev[c] = (uint32_t)sim_resource_device(r);
    m->posbuf[c] = NONE;
    m->poff[c] = t->duration; /* by id, until program_arrays */
  }
  /* The builder's programs (SimTaskGraph.program), checked against the chains: each task
   * once, on its own device's stream, after its chain predecessor. */
  for (uint32_t d = 0; d < nd; d++) {
    m->dbeg[d] = begin[d];
    m->first[d] = m->last[d] = NONE;
    for (uint32_t k = begin[d]; k < begin[d + 1]; k++) {
      uint32_t c = program[k];
      if (c >= m->C || m->posbuf[c] != NONE || m->dev[c] != d ||
          m->prev[c] != (k == begin[d] ? NONE : program[k - 1]))
        return FALSE;
      m->posbuf[c] = k;
      /* the first of its device, or lasting zero: alone (see the tie-breaks) */
      m->cf[k] = (uint8_t)((k == begin[d] ? HEAD : CHAINED) | (m->poff[c] == 0 ? HEAD | TAIL : 0));
    }
    if (begin[d] < begin[d + 1]) m->first[d] = program[begin[d]], m->last[d] = program[begin[d + 1] - 1];
  }
  m->dbeg[nd] = m->C;
  chunk_devices(m, nd);
  return check_other_tasks(m);
}

/* Calls @visit on every edge (u, v), from the CSR of a finished graph or the edge list of an
 * unfinished one (sim_build_unfinished); stops at the first FALSE. Tried (merge9, 2026-12-01)
 * and not kept: prefetching the compute endpoints' positions (program_pos) 16 edges ahead
 * (check_edges and keep_edge no faster, 175B point, A/B 3x); with a second level, their flags
 * (cf at pos) 8 edges ahead, both ~1 ms slower (the pos load it needs stalls). */
typedef gboolean (*EdgeVisit)(Merge *m, uint32_t u, uint32_t v);
static G_ALWAYS_INLINE inline gboolean each_edge(Merge *m, EdgeVisit visit) {
  const SimTaskGraph *g = m->g;
  if (g->succ_offsets) {
    for (uint32_t u = 0; u < m->n; u++)
      for (uint32_t k = g->succ_offsets[u]; k < g->succ_offsets[u + 1]; k++)
        if (!visit(m, u, g->succ[k])) return FALSE;
    return TRUE;
  }
  const uint32_t *e = (const uint32_t *)g->edges->data;
  for (guint k = 0; k < g->edges->len / 2; k++)
    if (!visit(m, e[2 * k], e[2 * k + 1])) return FALSE;
  return TRUE;
}

/* The edges' side: heads, tails, launch-queue edges; FALSE where an edge breaks the rules. */
static G_ALWAYS_INLINE inline gboolean check_edge(Merge *m, uint32_t u, uint32_t v) {
  gboolean uc = u < m->C;
  if (is_host(m, u)) { /* the host chain, and each launch before its kernel */
    if (is_host(m, v) ? m->prev[v - m->hb] != u - m->hb : v != u - m->hb) return FALSE;
    if (is_host(m, v)) m->host_chain++;
    else m->launches++;
  } else if (is_host(m, v)) {
    if (!uc) return FALSE;
    uint32_t pair[2] = {u, v - m->hb};
    g_array_append_vals(m->queue, pair, 2);
  } else if (v < m->C) {
    if (uc && dev_of(m, u) == dev_of(m, v))
      return m->pos[u] < m->pos[v]; /* the chain or implied by it; else a cycle (the full
                                       engine reports it) */
    if (!uc && (m->flags[u] & CAND)) return sim_merge_candidate_edge(m, u, v, v, u, m->xs);
    m->cf[m->pos[v]] |= HEAD;
    if (uc) m->cf[m->pos[u]] |= TAIL;
  } else if (uc) {
    if (m->flags[v] & CAND) return sim_merge_candidate_edge(m, u, v, u, v, m->xp);
    m->cf[m->pos[u]] |= TAIL;
    const SimTask *t = &m->tasks[v]; /* (read only after a device's last task) */
    if (u == m->last[dev_of(m, u)] && t->kind == SIM_TASK_OPTIMIZER)
      for (uint16_t r = 0; r < t->nres; r++)
        if (m->res[t->res_begin + r] == sim_resource_compute((int)dev_of(m, u))) m->flags[v] |= AFTER_LAST;
  } else { /* between two tasks that are not compute: neither is between two chain members */
    m->flags[u] |= m->flags[u] & CAND ? BAD : 0;
    m->flags[v] |= m->flags[v] & CAND ? BAD : 0;
  }
  return TRUE;
}

static gboolean check_edges(Merge *m, SimTime *hdur) {
  uint32_t nd = (uint32_t)m->g->num_devices, chained = m->C;
  for (uint32_t d = 0; d < nd; d++) chained -= m->first[d] != NONE; /* all but each first */
  if (!each_edge(m, check_edge)) return FALSE;
  uint32_t host_chain = m->host_chain, launches = m->launches;
  /* every launch before its kernel, the host issuing the program in order (one edge each) */
  if (m->hb != NONE && (launches != m->C || host_chain != chained)) return FALSE;
  if (m->hb != NONE) { /* the launches' durations (in @hdur), as a graph for merging has them */
    for (uint32_t c = 0; c < m->C; c++) hdur[c] = m->tasks[m->hb + c].duration;
    m->hdur = hdur;
    m->host = TRUE;
  }
  for (guint i = 0; i < m->steps->len; i++) { /* the tasks on compute streams */
    uint32_t t = g_array_index(m->steps, uint32_t, i);
    const SimTask *task = &m->tasks[t];
    for (uint16_t k = 0; k < task->nres; k++) {
      uint32_t r = m->res[task->res_begin + k];
      if (compute_stream(nd, r) && m->last[sim_resource_device(r)] != NONE && !(m->flags[t] & AFTER_LAST))
        return FALSE;
    }
  }
  return TRUE;
}

/* Orders (a, c) pairs by c, then a. */
static int compare_pairs(const void *a, const void *b) {
  const uint32_t *x = a, *y = b;
  return x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : (x[0] > y[0]) - (x[0] < y[0]);
}

/* The per-position arrays that do not change between rounds, for a full graph (a graph for
 * merging has them from check_tasks): durations (check_tasks left them by id in poff: the
 * tasks are read once), launch durations; the launch queue by position. */
static void program_arrays(Merge *m) {
  m->cum[0] = 0;
  for (uint32_t k = 0; !m->g->program_block && k < m->C; k++) { /* a full graph's, by id */
    uint32_t c = m->prog[k];
    m->pdur[k] = m->poff[c];
    m->phd[k] = m->hdur ? m->hdur[c] : 0;
  }
  for (uint32_t k = 0; !m->g->program_block && k < m->C; k++) /* (a graph for merging's:
                                                                    check_tasks) */
    m->cum[k + 1] = m->cum[k] + m->pdur[k];
  /* a full graph's launch queue by position (its edges come by id in edge order; a graph
   * for merging has none: sim_merge_time_host runs its queue) */
  guint nq = m->queue->len / 2;
  const uint32_t *q = (const uint32_t *)m->queue->data;
  uint32_t *qpos = m->qsorted = g_new(uint32_t, 2 * (gsize)nq + 1);
  for (guint i = 0; i < nq; i++) {
    qpos[2 * i] = m->pos[q[2 * i]];
    qpos[2 * i + 1] = m->pos[q[2 * i + 1]];
  }
  qsort(qpos, nq, 2 * sizeof(uint32_t), compare_pairs);
  m->qpos = qpos;
  /* the host pass keeps the ends of the positions a launch may still wait for: the last
   * (the queue's longest reach back: a graph for merging's bound, a full graph's pairs') + 1,
   * rounded up to a power of two (Merge.pend) */
  uint32_t reach = m->g->host_queue_reach;
  for (guint i = 0; i < nq; i++) {
    uint32_t a = m->qpos[2 * i], c = m->qpos[2 * i + 1];
    reach = MAX(reach, a < c ? c - a : m->C);
  }
  uint32_t size = 1;
  while (size <= reach && size < m->C) size <<= 1;
  m->pend_mask = size - 1;
  m->pend = g_new(SimTime, size);
}

/* An edge of the reduced graph: every edge out of a tail (or a task that is not compute) into
 * a head (or a task that is not compute); one between two compute tasks of a device is then
 * implied by the chain but kept (a zero-duration tail's pop may be what makes the head ready,
 * as in the full run). Other members last more than zero: an edge out of one ends before the
 * chain predecessor of its target pops; an edge into one is implied by the chain. The host
 * stream is timed apart. */
static inline gboolean is_head(const Merge *m, uint32_t c) {
  return (m->head[c >> 6] >> (c & 63)) & 1;
}

static G_ALWAYS_INLINE inline gboolean keep_edge(Merge *m, uint32_t u, uint32_t v) {
  uint32_t C = m->C; /* (a compute task's gid is this round's where it is a tail or a head) */
  if (u >= C ? m->gid[u] == NONE || (m->flags[u] & FOLD) : !(m->cf[m->pos[u]] & TAIL)) return TRUE;
  if (v >= C ? m->gid[v] == NONE || (m->flags[v] & FOLD) : !is_head(m, v)) return TRUE;
  m->redges[m->nredges++] = m->gid[u];
  m->redges[m->nredges++] = m->gid[v];
  return TRUE;
}

/* The reduced graph's id of a task that is not compute (nor a launch): the groups (@ng of
 * them) first, then the others in their order (reduce: m->gid). */
static inline uint32_t other_gid(const Merge *m, uint32_t ng, uint32_t t) {
  return ng + (t - m->C) - (m->hb != NONE && t >= m->hb ? m->C : 0);
}

/* The fork at or after position @k: its collective's lines prefetched (@fold: reduce's, @ng
 * groups); returns the position after it (C: none). */
#define FORK_AHEAD 8
static inline uint32_t prefetch_fork(const Merge *m, uint32_t ng, const SimFold *fold, uint32_t k) {
  k = next_flagged(m->pflags, k, m->C, FORK);
  if (k == m->C) return k;
  __builtin_prefetch(&fold[other_gid(m, ng, m->xfk[k])], 1);
  __builtin_prefetch(&m->xdur[m->xfk[k] - m->C]);
  return k + 1;
}

/* Groups and the reduced graph; @release gets each group's release (its head's). */
static SimTaskGraph *reduce(Merge *m, SimTime **release_out, SimFolds *folds) {
  const SimTaskGraph *g = m->g;
  uint32_t ng = 0;
  /* the graph's flags; a released task heads its group, so does one after a tail (in program
   * order); then groups numbered by their head's id */
  uint32_t words = (m->C + 63) / 64;
  memset(m->head, 0, sizeof(uint64_t) * (words + 1));
  memcpy(m->pflags, m->cf, m->C); /* then the heads these flags make (few positions) */
  for (uint32_t k = next_flagged(m->cf, 0, m->C, RELEASED | TAIL); k < m->C;
       k = next_flagged(m->cf, k + 1, m->C, RELEASED | TAIL)) {
    if (m->cf[k] & RELEASED) m->pflags[k] |= HEAD;
    if ((m->cf[k] & TAIL) && k + 1 < m->C && (m->cf[k + 1] & CHAINED)) m->pflags[k + 1] |= HEAD;
  }
  for (uint32_t k = next_flagged(m->pflags, 0, m->C, HEAD); k < m->C;
       k = next_flagged(m->pflags, k + 1, m->C, HEAD))
    m->head[m->prog[k] >> 6] |= (uint64_t)1 << (m->prog[k] & 63);
  for (uint32_t w = 0; w < words; w++) m->head_rank[w + 1] = m->head_rank[w] + (uint32_t)__builtin_popcountll(m->head[w]);
  ng = m->head_rank[words];
  /* compute tasks: heads and tails get theirs below (the others' are not read) */
  uint32_t R = ng;
  for (uint32_t t = m->C; t < m->n; t++) m->gid[t] = is_host(m, t) ? NONE : R++;
  /* positions: group (a tail's by its id too, for its edges; inner members keep NONE: their
   * edges are implied by the chain); the folded collectives chained per group (SimFolds) at
   * their forks; each stretch's duration by its owner: the group's first, then a step of the
   * collective forked last (a new one at each fork and join). NULL where a head lies inside a
   * span (a late launch released there: the caller runs the full engine). */
  SimTaskGraph *rg = sim_task_graph_new(g->num_devices);
  /* Edges: the chain between groups (in the loop below), then every kept edge (into heads, out
   * of tails); room for as many as the graph has, reserved at once. */
  guint most = 2 * (ng + (g->succ_offsets ? g->succ_offsets[m->n] : g->edges->len / 2));
  g_array_set_size(rg->edges, most);
  m->redges = (uint32_t *)rg->edges->data; /* written in place, then sized */
  m->nredges = 0;
  SimTime *release = g_new0(SimTime, R ? R : 1);
  /* (Tried, merge9: each entry written once, a folded collective's whole at its fork and the
   * others' as they are copied below, instead of this pass: the pass's 0.33 ms went, but the
   * fork loop took 0.2-0.4 ms more, its lines no longer warm; not kept.) */
  SimFold *fold = g_new(SimFold, (gsize)R + 1);
  for (uint32_t i = 0; i <= R; i++) fold[i] = (SimFold){NONE, NONE, 0, 0, NONE, 0};
  SimFoldStep *steps = g_new(SimFoldStep, 2 * (gsize)(R - ng) + 1); /* one per fork and join */
  uint32_t nsteps = 0;
  g_autofree SimTime *gdur = g_new0(SimTime, (gsize)ng + 1);
  SimTime *acc = gdur, from = 0; /* the stretch open, lasting from cum = @from on */
  uint32_t open = 0; /* spans between their fork and join */
  m->hgid = g_renew(uint32_t, m->hgid, (gsize)ng + 1);
  m->jx = g_renew(uint32_t, m->jx, (gsize)(R - ng) + 1);
  m->jdur = g_renew(SimTime, m->jdur, (gsize)(R - ng) + 1);
  m->nheads = m->njoins = 0;
  /* Only the positions that end a run (RUN_ENDS): a stretch's members are the positions
   * from the one that opened it to the one that closes it (a join or a head closes it before
   * itself, a fork after itself), so its duration is a difference of prefix sums (cum). */
  /* a cursor FORK_AHEAD forks ahead: their collectives' SimFold entries (written at the fork)
   * and durations (read at the join) lie scattered, so their lines are fetched early */
  uint32_t ahead = 0;
  for (int i = 0; i <= FORK_AHEAD; i++) ahead = prefetch_fork(m, ng, fold, ahead);
  for (uint32_t k = next_flagged(m->pflags, 0, m->C, RUN_ENDS), gi = 0, last = NONE; k < m->C;
       k = next_flagged(m->pflags, k + 1, m->C, RUN_ENDS)) {
    uint8_t f = m->pflags[k];
    uint32_t c = f & (HEAD | TAIL) ? m->prog[k] : NONE;
    if (f & (JOIN | HEAD)) *acc = m->cum[k] - from, from = m->cum[k]; /* (closed before k) */
    if (f & JOIN) { /* the join of a folded collective: a step of the last forked waits */
      uint32_t x = other_gid(m, ng, m->xat[k]);
      m->jx[m->njoins] = x; /* for sim_merge_time_host, in program order */
      m->jdur[m->njoins++] = m->xdur[m->xat[k] - m->C];
      steps[nsteps] = (SimFoldStep){0, x};
      fold[last].nsteps++;
      acc = &steps[nsteps++].duration;
      open--;
    }
    if (f & HEAD) { /* its rank among the heads by id */
      if (open) {
        g_free(fold);
        g_free(steps);
        g_free(release);
        sim_task_graph_free(rg);
        return NULL;
      }
      uint64_t below = m->head[c >> 6] & (((uint64_t)1 << (c & 63)) - 1);
      uint32_t prev = gi;
      gi = last = m->gid[c] = m->head_rank[c >> 6] + (uint32_t)__builtin_popcountll(below);
      m->hgid[m->nheads++] = gi; /* for sim_merge_time_host, in program order */
      acc = gdur + gi;
      if (f & CHAINED) { /* the chain from the group before */
        m->redges[m->nredges++] = prev;
        m->redges[m->nredges++] = gi;
      }
      if (f & RELEASED) release[gi] = m->rel[k];
    } else if (f & TAIL) {
      m->gid[c] = gi;
    }
    if (f & FORK) { /* the fork of a folded collective: its group's next */
      *acc = m->cum[k + 1] - from, from = m->cum[k + 1]; /* (closed after k) */
      ahead = prefetch_fork(m, ng, fold, ahead);
      uint32_t x = other_gid(m, ng, m->xfk[k]);
      fold[last].next = x;
      fold[x].owner = gi; /* its stream and duration with its task, below */
      fold[x].step = nsteps;
      fold[x].nsteps = 1;
      steps[nsteps] = (SimFoldStep){0, NONE};
      acc = &steps[nsteps++].duration;
      last = x;
      open++;
    }
  }
  *acc = m->cum[m->C] - from;
  folds->steps = steps;
  folds->task = fold;
  rg->num_resources = g->num_resources;
  rg->symmetric = g->symmetric;
  rg->simulated_devices = g->simulated_devices;
  g_array_set_size(rg->tasks, R);
  SimTask *rt = (SimTask *)rg->tasks->data;
  g_array_set_size(rg->task_resources, R);
  uint32_t *rr = (uint32_t *)rg->task_resources->data;
  for (uint32_t w = 0; w < words; w++)
    for (uint64_t bits = m->head[w]; bits; bits &= bits - 1) { /* the heads, in id order */
      uint32_t c = 64 * w + (uint32_t)__builtin_ctzll(bits), i = m->gid[c];
      /* a group: its duration on its device's compute stream (nothing reads more of it; a
       * graph for merging may not have its members' entries written) */
      rt[i] = (SimTask){.duration = gdur[i], .res_begin = i, .nres = 1,
                        .kind = SIM_TASK_FORWARD, .op = -1, .tensor = -1, .microbatch = -1};
      rr[i] = sim_resource_compute((int)dev_of(m, c));
    }
  /* (A folded collective's entry is copied too, though the engine reads its SimFold: the
   * breakdown's sim_host_step_wait reads the entry before an optimizer step, which can be
   * one. Leaving them unwritten saved ~0.15 ms on the 175B point, and valgrind caught that
   * read on test-merge's /merge/space: engine8, not kept.) */
  /* the other tasks' resources: the graph's whole array after the groups' (R entries), each
   * task's run shifted by R (one copy; a full graph's compute and host entries come along
   * unread) */
  guint nres = g->task_resources->len;
  g_array_set_size(rg->task_resources, R + nres);
  rr = (uint32_t *)rg->task_resources->data;
  if (nres > 0) /* (a hand-made graph may hold no resource entry: m->res is NULL then) */
    memcpy(rr + R, m->res, sizeof(uint32_t) * nres);
  for (uint32_t t = m->C; t < m->n; t++) {
    uint32_t i = m->gid[t];
    if (i == NONE) continue;
    const SimTask *task = &m->tasks[t];
    rt[i] = *task;
    rt[i].res_begin += R;
    if (m->flags[t] & FOLD) { /* SimFold.stream and duration, as its task has them */
      fold[i].stream = m->res[task->res_begin];
      fold[i].duration = task->duration;
    }
  }
  /* Step-expanded collectives' spans (gate and join are communication tasks: kept). */
  const uint32_t *spans = (const uint32_t *)g->spans->data;
  for (guint k = 0; k < g->spans->len; k++) {
    uint32_t id = m->gid[spans[k]];
    g_array_append_val(rg->spans, id);
  }
  each_edge(m, keep_edge);
  g_assert(m->nredges <= most);
  g_array_set_size(rg->edges, m->nredges);
  sim_task_graph_finish(rg);
  *release_out = release;
  return rg;
}

gboolean sim_merge_predict(const SimTaskGraph *g, SimTime *makespan, SimBreakdownSums *out,
                           uint32_t *reduced_tasks) {
  return sim_merge_predict_steady(g, NULL, makespan, out, reduced_tasks);
}

gboolean sim_merge_predict_steady(const SimTaskGraph *g, SimSteady *steady, SimTime *makespan,
                                  SimBreakdownSums *out, uint32_t *reduced_tasks) {
  gboolean applied = FALSE;
  if (!g->chain_prev || (!g->succ_offsets && !g->edges)) return FALSE;
  Merge m = {.g = g, .tasks = (const SimTask *)g->tasks->data,
             .res = (const uint32_t *)g->task_resources->data, .prev = g->chain_prev,
             .n = g->tasks->len, .C = g->num_compute, .hb = g->host_base};
  uint32_t nd = (uint32_t)g->num_devices, C1 = m.C ? m.C : 1, n1 = m.n ? m.n : 1;
  /* the candidates' fields are indexed from C (tasks that are not compute: a sixth of the 175B
   * point's): sized to them, not to every task (each page its scattered writes touch is
   * zeroed on a process's first run) */
  gsize others = (gsize)(m.n - MIN(m.C, m.n)) + 1;
  /* the per-task arrays in one allocation; a graph
   * for merging has its durations in its blocks (no poff, hdur, pdur, phd: pos_duration) */
  gsize byid = g->program_block ? 0 : C1;
  gsize per_compute = 2 * sizeof(uint32_t) + 2 * sizeof(SimTime) + 2;
  gsize bytes = C1 * per_compute + byid * (4 * sizeof(SimTime) + 2 * sizeof(uint32_t)) +
                ((C1 >> DEV_CHUNK_BITS) + 1) * sizeof(uint32_t) + 3 * (nd + 1) * sizeof(uint32_t) +
                n1 * (1 + sizeof(uint32_t)) + others * (3 * sizeof(uint32_t) + sizeof(SimTime)) +
                32 * 64; /* alignment */
  char *arena = g_malloc(bytes), *fill = arena;
#define TAKE(type, count) ((type *)take(&fill, sizeof(type) * (gsize)(count)))
  m.dev = TAKE(uint32_t, byid);
  m.posbuf = TAKE(uint32_t, byid);
  m.chunk_dev = TAKE(uint32_t, (C1 >> DEV_CHUNK_BITS) + 1);
  m.poff = TAKE(SimTime, byid);
  m.pdur = TAKE(SimTime, byid);
  m.phd = TAKE(SimTime, byid);
  SimTime *hdur = TAKE(SimTime, byid);
  m.pflags = TAKE(uint8_t, C1);
  m.cf = TAKE(uint8_t, C1);
  m.dbeg = TAKE(uint32_t, nd + 1);
  m.first = TAKE(uint32_t, nd + 1);
  m.last = TAKE(uint32_t, nd + 1);
  m.flags = memset(TAKE(uint8_t, n1), 0, n1);
  m.gid = TAKE(uint32_t, n1);
  /* folding: per position two ids, per task three candidate fields; the ends */
  m.xat = TAKE(uint32_t, 2 * C1);
  m.xfk = m.xat + C1;
  m.cum = TAKE(SimTime, C1 + 1);
  m.xp = TAKE(uint32_t, 3 * others);
  m.xs = m.xp + others;
  m.xdev = m.xs + others;
  m.xdur = TAKE(SimTime, others);
#undef TAKE
  g_assert(fill <= arena + bytes);
  /* the host stream: given (a graph built for merging) or read from the host tasks */
  m.host = g->block_host != NULL;
  if (steady) m.walked_dev = g_new0(guint8, nd + 1); /* (which devices the host pass walks) */
  m.queue = g_array_new(FALSE, FALSE, sizeof(uint32_t)); /* (a full graph's) */
  m.steps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  /* room for every edge (pages touched only as they fill) */
  gsize most_edges = g->succ_offsets ? g->succ_offsets[m.n] : g->edges->len / 2;
  m.cedges = g_new(uint32_t, 2 * most_edges + 2);
  m.head = g_new(uint64_t, C1 / 64 + 2);
  m.head_rank = g_new0(uint32_t, C1 / 64 + 2);
  gboolean ok = check_tasks(&m); /* (candidates marked: check_other_tasks) */
  ok = ok && check_edges(&m, hdur);
  if (ok) sim_merge_fold_collectives(&m);
  if (ok) program_arrays(&m);
  if (ok && m.host) { /* each device's first launch gates its first task */
    m.rel = g_new(SimTime, C1); /* touched in a few places: small pages (not the arena's) */
    for (uint32_t d = 0; d < nd; d++)
      if (m.first[d] != NONE && pos_launch(&m, m.dbeg[d])) {
        m.rel[m.dbeg[d]] = pos_launch(&m, m.dbeg[d]);
        m.cf[m.dbeg[d]] |= RELEASED;
      }
  }
  /* Late launches become releases and the reduced graph is timed again, a few times at most:
   * where many launches are late (a host-bound run) the full engine is as fast. */
  for (int round = 0; ok && round < MERGE_ROUNDS; round++) {
    SimTime *release = NULL;
    SimFolds folds;
    if (round > 0) sim_merge_unfold_released(&m);
    SimTaskGraph *rg = reduce(&m, &release, &folds);
    if (!rg) break;
    SimSchedule *s = sim_engine_run_released(rg, release, &folds, NULL);
    g_autoptr(GArray) iv = g_array_sized_new(FALSE, FALSE, sizeof(SimTime), 2);
    g_autofree guint *off = g_new0(guint, nd + 1);
    gint64 changes = 0;
    m.walked = 0;
    if (s && m.host) {
      changes = sim_merge_time_host(&m, s, s->ready, iv, off);
    }
    ok = s && changes >= 0 && changes <= m.C / 16 + 1;
    if (ok && changes == 0) {
      const SimTime *hiv = (const SimTime *)iv->data;
      *makespan = s->makespan;
      *reduced_tasks = rg->tasks->len;
      if (steady && sim_merge_prove_steady(&m, rg, s, release, &folds, hiv, off, steady)) {
        /* the N-microbatch run: k's with the period [cut_a, cut_b) i times more */
        SimBreakdownSums *w = &steady->window;
        sim_breakdown_sums_window(rg, s, hiv, off, &folds, steady->cut_a, steady->cut_b, out, w);
        SimTime i = (SimTime)steady->periods;
        out->compute += i * w->compute;
        out->exposed += i * w->exposed;
        out->host += i * w->host;
        out->comm += i * w->comm;
        *makespan = steady->makespan;
        *reduced_tasks += (uint32_t)i * steady->reduced_segment;
      } else {
        sim_breakdown_sums(rg, s, hiv, off, &folds, out);
      }
      applied = TRUE;
    }
    sim_schedule_free(s);
    sim_task_graph_free(rg);
    g_free(release);
    g_free((gpointer)folds.task);
    g_free((gpointer)folds.steps);
    if (applied) break;
  }
  ok = applied;
  g_free(arena);
  g_free(m.rel);
  g_free(m.walked_dev);
  g_array_unref(m.queue);
  g_array_unref(m.steps);
  g_free(m.qsorted);
  g_free(m.cedges);
  g_free(m.head);
  g_free(m.head_rank);
  g_free(m.hgid);
  g_free(m.pend);
  g_free(m.jx);
  g_free(m.jdur);
  return ok;
}
