/* sim/merge_host — chain merging's host stream (sim_merge.c): each launch's end from its
 * device's previous launch and the launch queue, over the reduced run's schedule; the check
 * that no launch the reduced run took as early gates its kernel, and the host waits.
 *
 * A device whose launches a bound proves early (early_device: every launch after the first
 * ends before the kernel ahead of it ends, from prefix sums of durations and launches and the
 * queue's moves, no kernel end read) is not walked past its first position: nothing would
 * change there. On the 175B interleaved point all 16 devices are proven (the selective + sp
 * point: 15, its first stage's launches come within the bound's reach at its 4th position);
 * the pass went 39.5 M -> 26.7 M instructions a prediction, the whole bench run (3
 * predictions, callgrind) 697.1 M -> 673.6 M (-3.4%); thread CPU within this VM's noise
 * (medians of 41 predictions 28-40 ms both ways that hour; bests 22.9 old, 22.0 new).
 * tests/test-merge.c checks the bound is taken there (sim_merge_host_bounded_devices), and
 * its full-against-merged comparisons fail if the bound is loosened by one launch (checked
 * by mutation: the RHS without the position's own launch, or no bound at all, both fail
 * its first comparison, /merge/identical-symmetric, on the exposed communication).
 *
 * Tried (engine8, 2026-11-25) and not kept: the members' loop of a graph for merging in a
 * function of its own with the block tables, the queue and the ends in locals (the flags' byte
 * stores let the compiler reload them through the Merge at every position). Bit for bit, but
 * the pass's samples on the 175B bench point went 414-418 -> 404-410 (perf record, 40 runs,
 * two pairs): it is the loop-carried chain of ends and launches (~2 ns a position over the
 * 481k positions), not the reloads. A gain needs fewer positions walked (per template or run
 * of members, from prefix sums of durations and launches), not a lighter walk.
 * Tried (merge9, 2026-12-01) and removed: the reduced schedule's entries of the heads and
 * joins 16 ahead prefetched (perf put ~15% of the pass on a join's s->start read; a24a13a):
 * ~13% less by 20-run means, but the minimum over 40 predictions 2.05-2.15 ms without and
 * 2.00-2.13 with it (A/B 4x), within noise. Measured there: on the 175B point
 * no plain member's launch comes within 0.53 ms of its kernel (the host runs far ahead, the
 * queue of 1024 kernels binding at half the positions), so a bound could prove whole runs of
 * members early; still every launch's end feeds the next, and the queue's reach back needs the
 * ends, so skipping positions exactly needs their launches in closed form (not attempted).
 * Tried (merge9) and not kept: two devices' passes side by side (their chains independent, a
 * state and a ring of ends each, heads and joins from per-device starts reduce recorded): bit
 * for bit, but the pass went ~1.95-2.05 -> 2.65-2.95 ms (minimum over 40 predictions, A/B 4x;
 * the two states spill and the per-position branch on HEAD | JOIN replaces the runs' loop).
 * Tried (tmpl-host, 2026-12-02) and not kept: the runs of plain members in closed form. A run
 * a .. b - 1 after a head or join ends its members at end(i) = base + cum[i + 1] (base: the
 * head's or join's start - cum of it), so the ring of ends becomes a ring of (run, base);
 * launches unroll to L(b - 1) = max(L0 + H, max over the run's queue moves j of end(q_j - 1)
 * + H - H_j) (L0: the launch before a, H: the run's launches summed, H_j: those before j).
 * With m the last move and p the queue before it, every other move waits for an end at most
 * end(p - 1) (ends and q nondecreasing; a start before its predecessor's end turned the runs
 * off for the device) with H_j >= 0, so L(b - 1) = max(L0 + H, end(q_m - 1) + H - H_m) where
 * L0 >= end(p - 1) or end(q_m - 1) >= end(p - 1) + H_m; and no member is late where
 * max(L0, end(q_m - 1)) + H <= end(a - 1), a's start (each L(k) is at most that, each start at
 * least). Else the run was walked position by position. Bit for bit (the four bench points'
 * iteration times, and the launches and ends equal to this walk's at every run's end on the
 * 175B point). On that point (16 simulated devices, 481,344 positions: 394,738 plain members,
 * 18,639 heads, 73,919 joins, so 74,303 runs of 5.3 members; 2.05 kernels a position, the
 * queue reaching ~500 positions back) the late bound always held and the exactness condition
 * failed on 7,710 runs (45,204 members walked). Instructions (callgrind, inclusive, a
 * prediction): the pass 39.5 M -> 38.8 M; the whole bench run (3 predictions) 770.4 M -> 768.2
 * M (-0.3%, the brief's bar was 5%). Why: the queue still moves over every member (~25
 * instructions a member with the launches summed, 10 M), a run's closed form costs ~100 (two
 * ring lookups, the condition; 8 M) and a head or join ~110-170 (12 M), against ~57 a member
 * in this walk: a run of 5.3 members saves ~300 and costs ~240. Variants: the kernels and
 * launches summed per device first (then a run's queue end, last move and the queue before it
 * by short searches on the sums, no walk over its members): 45.1 M (that summing alone 8.7 M,
 * 18 instructions a position, spilled); the run, the by-position walk and head_or_join as
 * functions of their own (noinline): 43.4 M (head_or_join ~170 a head or join). A gain needs
 * the per-position parts gone: the kernels' and launches' prefix sums stamped by the builder
 * per chain template (per unit offsets), joins taken into runs as changes of base (a join's
 * start from its collective's end, ~20 instructions instead of ~110-170), and an exactness
 * condition that holds over runs from head to head (~26 members: the one above charges every
 * launch before the last move, so it fails more as runs grow). */
#include "sim/sim-int.h"
#include "sim/sim_merge-int.h"

/* Where the host pass is in the launch queue: the next pair of a full graph's (Merge.qpos),
 * or, for a graph for merging, the queue run here as sim_build_host.c's add_queue_edges runs
 * it (per device from its first position: q the first task not known done, launched and
 * done the kernels before the current position and before q). */
typedef struct {
  guint i;
  uint32_t q;
  guint64 launched, done, depth;
  const int *kernels;     /* a graph for merging's SimTaskGraph.block_kernels (NULL: pairs) */
  const uint32_t *block;  /* its program_block */
} QueueRun;

/* The latest end among the compute tasks position @k's launch waits for (0: none), the
 * queue moved past @k. */
static inline SimTime queue_wait(const Merge *m, uint32_t k, QueueRun *r, guint nq) {
  SimTime qwait = 0;
  const int *kernels = r->kernels;
  if (kernels) { /* the tasks up to q - 1 done before k's kernels fit in the queue */
    const uint32_t *block = r->block;
    guint64 kk = (guint64)kernels[block[k]];
    uint32_t q0 = r->q;
    while (r->q < k && r->launched - r->done + kk > r->depth)
      r->done += (guint64)kernels[block[r->q++]];
    if (r->q != q0) qwait = m->pend[(r->q - 1) & m->pend_mask];
    r->launched += kk;
    return qwait;
  }
  for (; r->i < nq && m->qpos[2 * r->i + 1] == k; r->i++)
    qwait = MAX(qwait, m->pend[m->qpos[2 * r->i] & m->pend_mask]);
  return qwait;
}

/* Devices whose launches sim_merge_time_host proved early by early_device (all threads). */
#define EARLY_CHUNK 64 /* positions early_device bounds at once */
static gint bounded_devices;

guint sim_merge_host_bounded_devices(void) { return (guint)g_atomic_int_get(&bounded_devices); }

/* Whether every launch of a device's program (its positions @first .. @end - 1, position k
 * running block @block[k]: @host its launch time, @kernels its kernels; @cum the durations'
 * prefix sums by position, @depth the launch queue's) after its first position ends before
 * the kernel ahead of it in program order ends, so before its own kernel could start: then
 * no launch there is late and no host wait ends there, and the walk below (sim_merge_time_host)
 * would change nothing and add no interval after the first position. @start: the first
 * position's (its group's) start in the reduced run. @by_position: every position walked
 * (the bound below without its chunks: what they must imply, for tests).
 *
 * Why it is enough. With PD[k] and PH[k] the durations and launches of the positions before k
 * (from @first), L the launch ends and E the kernel ends in the reduced run, the walk has
 * L[k] = max(L[k-1], W[k]) + dh[k] from L[first-1] = 0, where W[k] is 0 or, where the queue
 * moved at k to q[k], E[q[k] - 1]. Unrolled, L[k] = max over j <= k of W'[j] + PH[k+1] - PH[j]
 * (W'[first] = 0). The compute stream runs its positions in order, each starting no earlier
 * than the one before ends (a head at its group's start, a join after its collective too), so
 * E[k-1] >= E[q-1] + PD[k] - PD[q] for q > first and E[k-1] >= start + PD[k]. Hence with
 * A[j] = PD[q[j]] - PH[j] (q[j] the queue's position after j's move, W'[j] <= E[q[j] - 1] in
 * both cases) and A[j] = -start - PH[j] where q[j] is still @first (W'[j] = 0), A[j] <
 * PD[k] - PH[k+1] for every j <= k gives L[k] < E[k-1] <= the kernel's start and its other
 * dependencies (a plain member's predecessor's end; a head's group waits for its tail). The
 * queue runs as queue_wait runs it. Strict, so an instant launch never ties its instant kernel
 * (the -1 case).
 *
 * By chunks of EARLY_CHUNK positions [c0, c1): with K[k] the kernels before k, the queue at
 * c1 - 1 stands at the first q with K[c1] - K[q] <= depth (or at c1 - 1: it never passes its
 * position), so at most at the first chunk start b with K[c1] - K[b] <= depth; PD and PH
 * being nondecreasing, every A[j] of the chunk is at most PD[min(b, c1 - 1)] - PH[c0] (and
 * -start <= 0 <= PD) and every PD[k] - PH[k+1] at least PD[c0] - PH[c1]. Where the one
 * inequality holds the chunk is proven without its positions' A[j] (only K and PH summed
 * over them); where not, it is walked as above, from the bounds so far (amax, and the queue
 * at b: each at least the exact walk's, so the walk's test is at least as strict). On the
 * 175B interleaved bench point every device's chunks after its first hold: the host pass
 * went 27.6 M -> 6.0 M instructions a prediction (callgrind, `bench --suite predict
 * --repeat 3` / 3; the whole prediction 210.6 M -> 189.1 M), the iteration unchanged. */
/* The positions the bound walks, as pieces of the program (sim_merge_launches_repeated): the
 * real positions [first, end) whose durations' prefix sums are cum + shift. */
typedef struct {
  uint64_t vstart;       /* the piece's first position in the sequence walked */
  uint32_t first, end;
  SimTime shift;
} Piece;

/* PD at sequence position @v (in piece @pc[*@at] or later: a cursor moving forward, as the
 * queue does; -1 for a lookup anywhere). */
static inline gint64 piece_pd(const Piece *pc, int npc, int *at, uint64_t v, const SimTime *cum,
                              SimTime cum0) {
  int i = *at < 0 ? 0 : *at;
  if (*at < 0) { /* the last piece starting at or before v */
    int lo = 0, hi = npc - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (pc[mid].vstart <= v) lo = mid;
      else hi = mid - 1;
    }
    i = lo;
  }
  while (i + 1 < npc && v >= pc[i + 1].vstart) i++;
  if (*at >= 0) *at = i;
  const Piece *x = &pc[i];
  return (gint64)(cum[x->first + (uint32_t)(v - x->vstart)] + x->shift - cum0);
}

static inline uint32_t piece_block(const Piece *pc, int npc, int *at, uint64_t v,
                                   const uint32_t *block) {
  while (*at + 1 < npc && v >= pc[*at + 1].vstart) (*at)++;
  return block[pc[*at].first + (uint32_t)(v - pc[*at].vstart)];
}

gboolean sim_merge_launches_early(const uint32_t *block, const SimTime *host, const int *kernels,
                                  guint64 depth, const SimTime *cum, uint32_t first, uint32_t end,
                                  SimTime start, gboolean by_position) {
  return sim_merge_launches_repeated(block, host, kernels, depth, cum, first, end, end, end, 0,
                                     start, by_position);
}

gboolean sim_merge_launches_repeated(const uint32_t *block, const SimTime *host,
                                     const int *kernels, guint64 depth, const SimTime *cum,
                                     uint32_t first, uint32_t from, uint32_t to, uint32_t end,
                                     guint copies, SimTime start, gboolean by_position) {
  /* the sequence: [first, to), then [from, to) @copies times more, then [to, end) */
  int npc = 0;
  g_autofree Piece *pc = g_new(Piece, (gsize)copies + 2);
  uint64_t v = 0;
  SimTime period = cum[to] - cum[from];
  pc[npc++] = (Piece){v, first, to, 0};
  v += to - first;
  for (guint c = 1; c <= copies && to > from; c++, v += to - from)
    pc[npc++] = (Piece){v, from, to, (SimTime)c * period};
  pc[npc++] = (Piece){v, to, end, (SimTime)copies * period};
  v += end - to;
  const SimTime cum0 = cum[first];
  /* chunks: EARLY_CHUNK positions from each piece's start; K at each chunk's first position */
  uint64_t most = 0;
  for (int i = 0; i < npc; i++) most += (pc[i].end - pc[i].first + EARLY_CHUNK - 1) / EARLY_CHUNK;
  g_autofree guint64 *kb = g_new(guint64, most + 1);
  g_autofree uint64_t *vb = g_new(uint64_t, most + 1); /* each chunk's first position */
  /* a repeated piece's chunk sums, once (kernels, launches) */
  uint32_t rchunks = (to - from + EARLY_CHUNK - 1) / EARLY_CHUNK;
  g_autofree guint64 *rk = copies ? g_new(guint64, rchunks + 1) : NULL;
  g_autofree gint64 *rh = copies ? g_new(gint64, rchunks + 1) : NULL;
  /* The walk's state, each at least the exact walk's (so every test below is at least as
   * strict): amax >= max A[j] so far, q >= the queue's position (done = K[q] exactly: the
   * walk below moves it by the kernels); launched = K and ph = PH at the chunk's start. */
  gint64 amax = G_MININT64, ph = 0;
  guint64 launched = 0, done = 0;
  uint64_t q = 0;
  uint32_t bi = 0, c = 0;
  int qat = 0, pat = 0, anywhere = -1; /* piece cursors: the queue's, its PD's */
  for (int pi = 0; pi < npc; pi++) {
    const Piece *x = &pc[pi];
    for (uint32_t r0 = x->first, j = 0; r0 < x->end; r0 += EARLY_CHUNK, j++, c++) {
      uint32_t r1 = MIN(r0 + EARLY_CHUNK, x->end);
      uint64_t c0 = x->vstart + (r0 - x->first), c1 = c0 + (r1 - r0);
      kb[c] = launched;
      vb[c] = c0;
      guint64 k1 = launched;
      gint64 ph1 = ph;
      if (pi > 0 && pi < npc - 1 && pi > 1) { /* a repeated piece after its first copy */
        k1 += rk[j];
        ph1 += rh[j];
      } else {
        guint64 dk = 0;
        gint64 dp = 0;
        for (uint32_t k = r0; k < r1; k++) {
          uint32_t b = block[k];
          dk += (guint64)kernels[b];
          dp += (gint64)host[b];
        }
        if (pi == 1 && pi < npc - 1) rk[j] = dk, rh[j] = dp;
        k1 += dk;
        ph1 += dp;
      }
      /* The chunk at once: the queue at c1 - 1 is at most the first chunk start b with
       * K[c1] - K[b] <= depth (it stops at the first position with that), and at most c1 - 1;
       * PD being nondecreasing, A[j] <= PD[that] - PH[c0] for j in the chunk, and PD[k] -
       * PH[k + 1] >= PD[c0] - PH[c1] for k in it. */
      while (bi < c && k1 - kb[bi] > depth) bi++;
      gboolean bounded = k1 - kb[bi] <= depth;
      uint64_t qb = bounded ? vb[bi] : c1;
      gint64 a = MAX(amax, piece_pd(pc, npc, &anywhere, MIN(qb, c1 - 1), cum, cum0) - ph);
      if (!by_position && a < (gint64)(cum[r0] + x->shift - cum0) - ph1) {
        amax = a;
        if (qb > q) { /* the queue's bound moves on to a chunk start (where K is known) */
          q = qb;
          done = bounded ? kb[bi] : k1;
        }
        launched = k1;
        ph = ph1;
        continue;
      }
      /* Else position by position, the queue run as queue_wait runs it (from q, at or past
       * the exact one: its moves stay at or past the exact ones). */
      for (uint32_t k = r0; k < r1; k++) {
        uint64_t vk = x->vstart + (k - x->first);
        uint32_t b = block[k];
        guint64 kk = (guint64)kernels[b];
        while (q < vk && launched - done + kk > depth)
          done += (guint64)kernels[piece_block(pc, npc, &qat, q++, block)];
        launched += kk;
        /* PD[q] once the queue moved, else -start (the first position's start) */
        gint64 pdq = q > 0 ? piece_pd(pc, npc, &pat, q, cum, cum0) : -(gint64)start;
        gint64 dh = (gint64)host[b];
        amax = MAX(amax, pdq - ph);
        if (vk > 0 && amax >= (gint64)(cum[k] + x->shift - cum0) - (ph + dh)) return FALSE;
        ph += dh;
      }
    }
  }
  return TRUE;
}

/* sim_merge_launches_early for a graph for merging's device (positions @first .. @end - 1,
 * @start its first position's start), unless positions past the first were released by an
 * earlier round (the walk may have to take their releases back); counts the device's heads
 * and joins after @first into *@heads, *@joins (the walk reads reduce's lists in turn). */
static gboolean early_device(const Merge *m, uint32_t first, uint32_t end, SimTime start,
                             uint32_t *heads, uint32_t *joins) {
  const SimTaskGraph *g = m->g;
  if (!g->block_kernels || !g->block_host ||
      next_flagged(m->cf, first + 1, end, RELEASED) < end ||
      !sim_merge_launches_early(g->program_block, g->block_host, g->block_kernels,
                                g->host_queue_depth, m->cum, first, end, start, FALSE))
    return FALSE;
  /* the heads and joins after @first, a word (8 positions) at a time: HEAD is bit 0, JOIN
   * bit 5 of a byte, the bytes' bits summed by one multiply */
  G_STATIC_ASSERT(HEAD == 1 && JOIN == 32);
  const uint64_t ones = 0x0101010101010101ull;
  uint32_t nh = 0, nj = 0;
  uint32_t k = first + 1;
  for (; k + 8 <= end; k += 8) { /* (a fixed-size copy: one load) */
    uint64_t word;
    memcpy(&word, m->pflags + k, 8);
    word = GUINT64_FROM_LE(word);
    nh += (uint32_t)(((word & ones) * ones) >> 56);
    nj += (uint32_t)((((word >> 5) & ones) * ones) >> 56);
  }
  for (; k < end; k++) {
    nh += m->pflags[k] & HEAD;
    nj += (m->pflags[k] & JOIN) >> 5;
  }
  *heads = nh;
  *joins = nj;
  return TRUE;
}

/* The host stream over the reduced schedule @s (@nr: per task of the reduced graph, when its
 * last dependency ended, releases aside: SimSchedule.ready): each launch's end,
 * from its device's previous launch and the launch queue. The schedule is the full run's when
 * every compute task's ready time, max(its dependencies, its launch), is what the reduced run
 * gave it, max(its dependencies, its release): returns 0 then, with the host-wait intervals
 * in @iv/@off (sim_host_wait_intervals' layout). Otherwise the releases are set to the launches
 * that gate their tasks and the count of changes returned (the caller runs again), or -1
 * where the tie-breaks forbid (an instant launch gating an instant kernel). */
/* Where a device's walk (sim_merge_time_host) is: resumable, so that the steady-state route
 * can read its state at two positions (sim_merge_walk_state). */
typedef struct {
  SimTime host_end, prev_end, member_end;
  QueueRun queue;
  uint32_t hi, ji; /* reduce's lists of heads and joins, read in turn */
  gint64 changes;  /* -1: an instant launch at its instant kernel's time (the tie-breaks) */
} HostWalk;

/* The walk over positions [@from, @end) of one device (@w: where it is). */
static void walk_positions(Merge *m, const SimSchedule *s, const SimTime *nr, HostWalk *w,
                           uint32_t from, uint32_t end, GArray *iv, guint nq) {
  uint32_t mask = m->pend_mask;
  SimTime host_end = w->host_end, prev_end = w->prev_end, member_end = w->member_end;
  QueueRun queue = w->queue;
  uint32_t hi = w->hi, ji = w->ji;
  gint64 changes = w->changes;
  for (uint32_t k = from; k < end; k++) {
    /* Up to the next head or join, members that start when the one before ends (lasting
     * more than zero: else they head their group) and are not released (a release makes
     * a head): the launch is late where it ends after that; no host wait ends at such a
     * member (the stream was busy up to its start). */
    for (uint32_t next = next_flagged(m->pflags, k, end, HEAD | JOIN); k < next; k++) {
      SimTime duration, dh;
      pos_times(m, k, &duration, &dh);
      SimTime start = member_end;
      member_end = m->pend[k & mask] = start + duration;
      SimTime qwait = queue_wait(m, k, &queue, nq); /* (once: it moves the queue) */
      SimTime launched = MAX(host_end, qwait) + dh;
      if (launched > start) {
        m->rel[k] = launched;
        m->cf[k] |= RELEASED;
        changes++;
      }
      if (member_end > prev_end) prev_end = member_end;
      host_end = launched;
    }
    if (k == end) break;
    /* a head starts with its group; a member after its predecessor and, at a join, its
     * folded collective */
    uint8_t pf = m->pflags[k];
    gboolean head = (pf & HEAD) != 0;
    uint32_t gi = head ? m->hgid[hi++] : NONE;
    SimTime start = member_end;
    if (pf & JOIN) { /* when the collective it waits for ends */
      if (!head) start = MAX(start, s->start[m->jx[ji]] + m->jdur[ji]);
      ji++;
    }
    if (head) start = s->start[gi];
    SimTime duration, dh;
    pos_times(m, k, &duration, &dh);
    member_end = m->pend[k & mask] = start + duration;
    SimTime qwait = queue_wait(m, k, &queue, nq);
    SimTime launched = MAX(host_end, qwait) + dh;
    /* a head's dependencies are its group's; an inner member's, its predecessor's end */
    SimTime deps = head ? nr[gi] : start;
    SimTime rel = m->cf[k] & RELEASED ? m->rel[k] : 0;
    if (dh == 0 && duration == 0 && launched >= deps) {
      changes = -1; /* an instant launch at its instant kernel's time (the tie-breaks) */
      break;
    }
    if (MAX(deps, rel) != MAX(deps, launched)) {
      m->rel[k] = launched > deps ? launched : 0;
      m->cf[k] = (uint8_t)(m->rel[k] ? m->cf[k] | RELEASED : m->cf[k] & ~RELEASED);
      changes++;
    }
    SimTime wait_end = MIN(launched, start);
    if (wait_end > prev_end) {
      SimTime pair[2] = {prev_end, wait_end};
      g_array_append_vals(iv, pair, 2);
    }
    if (member_end > prev_end) prev_end = member_end;
    host_end = launched;
  }
  *w = (HostWalk){host_end, prev_end, member_end, queue, hi, ji, changes};
}

static void walk_init(const Merge *m, HostWalk *w, uint32_t d, uint32_t hi, uint32_t ji) {
  *w = (HostWalk){0, 0, 0,
                  {.depth = m->g->host_queue_depth, .kernels = m->g->block_kernels,
                   .block = m->g->program_block, .q = m->dbeg[d]},
                  hi, ji, 0};
}

gint64 sim_merge_time_host(Merge *m, const SimSchedule *s, const SimTime *nr, GArray *iv,
                           guint *off) {
  uint32_t nd = (uint32_t)m->g->num_devices;
  guint nq = m->queue->len / 2;
  uint32_t hi = 0, ji = 0; /* reduce's lists of heads and joins, read in turn */
  gint64 changes = 0;
  g_array_set_size(iv, 0);
  for (uint32_t d = 0; d < nd; d++) {
    off[d] = iv->len / 2;
    HostWalk w;
    walk_init(m, &w, d, hi, ji); /* (a graph for merging's queue starts anew per device) */
    uint32_t end = m->dbeg[d + 1], later_heads = 0, later_joins = 0;
    /* a device proven early: only its first position walked (a head: HEAD is set on each
     * device's first), the lists' entries of the rest skipped */
    gboolean early = m->dbeg[d] < end && (m->pflags[m->dbeg[d]] & HEAD) &&
                     early_device(m, m->dbeg[d], end, s->start[m->hgid[hi]], &later_heads,
                                  &later_joins);
    if (early) {
      end = m->dbeg[d] + 1;
      g_atomic_int_inc(&bounded_devices);
    }
    m->walked += !early && m->dbeg[d] < m->dbeg[d + 1];
    if (m->walked_dev) m->walked_dev[d] = !early && m->dbeg[d] < m->dbeg[d + 1];
    walk_positions(m, s, nr, &w, m->dbeg[d], end, iv, nq);
    if (w.changes < 0) return -1;
    changes += w.changes;
    hi = w.hi + later_heads;
    ji = w.ji + later_joins;
  }
  off[nd] = iv->len / 2;
  return changes;
}

gboolean sim_merge_walk_state(Merge *m, const SimSchedule *s, uint32_t d, uint32_t hi,
                              uint32_t ji, uint32_t at, uint32_t until, SimHostWalkState *out) {
  HostWalk w;
  walk_init(m, &w, d, hi, ji);
  g_autoptr(GArray) iv = g_array_new(FALSE, FALSE, sizeof(SimTime));
  uint32_t from = m->dbeg[d];
  uint32_t stop[2] = {at, until};
  for (int i = 0; i < 2; i++) {
    guint waits = iv->len;
    walk_positions(m, s, s->ready, &w, from, stop[i], iv, 0);
    /* (the final round: no late launch; no wait between the cuts) */
    if (w.changes != 0 || (i == 1 && iv->len > waits)) return FALSE;
    SimHostWalkState *x = &out[i];
    x->position = stop[i];
    x->host_end = w.host_end;
    x->prev_end = w.prev_end;
    x->member_end = w.member_end;
    x->queue_back = stop[i] - w.queue.q;
    x->queued = w.queue.launched - w.queue.done;
    if (x->queue_back > m->pend_mask + 1) return FALSE;
    x->ends = g_new(SimTime, (gsize)x->queue_back + 1);
    for (uint32_t j = 0; j < x->queue_back; j++) x->ends[j] = m->pend[(w.queue.q + j) & m->pend_mask];
    from = stop[i];
  }
  return TRUE;
}
