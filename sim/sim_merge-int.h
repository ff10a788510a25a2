/* sim/merge — private to sim/sim_merge*.c: chain merging's state (sim_merge.c) and the
 * folding of collectives into chains (sim_merge_folds.c). */
#ifndef STRATSIM_SIM_MERGE_INT_H
#define STRATSIM_SIM_MERGE_INT_H

#include "sim/sim-int.h"

#include <string.h>

#define NONE UINT32_MAX
#define SUCCESSOR 0x80000000u /* in cedges: the compute end is the candidate's successor */

/* CAND, BAD, FOLD: collectives that may be folded into a compute chain (fold_collectives).
 * Flags of tasks that are not compute (Merge.flags): AFTER_LAST, CAND, BAD, FOLD; of positions
 * (Merge.cf, pflags): HEAD, TAIL, CHAINED, RELEASED and JOIN, FORK (the position is a folded
 * collective's join, fork: xat, xfk hold it; elsewhere they are not read, nor written). */
enum { HEAD = 1, TAIL = 2, AFTER_LAST = 4, CHAINED = 8, RELEASED = 16, CAND = 32, BAD = 64,
       FOLD = 128, JOIN = 32, FORK = 64 };
/* The position flags that end a run of members reduce adds up at once: a head, a tail, a
 * join, a fork (the other members only add their durations to the group's). */
#define RUN_ENDS (HEAD | TAIL | JOIN | FORK)

typedef struct {
  const SimTaskGraph *g;
  const SimTask *tasks;
  const uint32_t *res;
  const uint32_t *prev;  /* g->chain_prev */
  uint32_t n, C, hb;     /* tasks, compute tasks, host base (NONE: no host stream) */
  uint32_t *dev;         /* per compute task of a full graph: its device (check_tasks) */
  uint32_t *chunk_dev;   /* per DEV_CHUNK positions from 0: the device of the first (dev_of) */
  const uint32_t *pos;   /* per compute task: its position in prog (a graph for merging's
                            SimTaskGraph.program_pos, or posbuf) */
  uint32_t *posbuf;      /* a full graph's, found by check_tasks */
  const uint32_t *prog;  /* the compute tasks in program order, device after device (the
                            graph's SimTaskGraph.program) */
  uint32_t *dbeg;        /* per device: where its program starts in prog (nd + 1 entries) */
  uint32_t *first;       /* per device: its first compute task (NONE: none) */
  uint32_t *last;        /* per device: its last compute task */
  uint8_t *flags;        /* per task that is not compute (CAND, BAD, FOLD, AFTER_LAST) */
  uint8_t *cf;           /* per position: its compute task's HEAD and TAIL from the graph
                            (first of its device, lasting zero, edges off the chain), CHAINED
                            where it has a chain predecessor, RELEASED where it has a release */
  uint32_t *gid;         /* per non-host task: its task in the reduced graph (compute tasks:
                            set each round for its heads and tails, the only ones read) */
  /* Per position in prog (sequential passes instead of chasing the chain again; gathered once
   * by program_arrays, as compute ids are scattered in program order): */
  SimTime *poff;         /* a full graph's durations by compute id (check_tasks, for
                            program_arrays) */
  SimTime *pdur;         /* its duration (a full graph's; a graph for merging's come from its
                            blocks: pos_duration) */
  SimTime *phd;          /* its launch's duration (with a host stream; likewise: pos_launch) */
  SimTime *cum;          /* per position k (C + 1 entries): the durations of the positions
                            before k summed (check_tasks for a graph for merging,
                            program_arrays for a full one), so that reduce adds a run of
                            members at once */
  uint8_t *pflags;       /* its flags */
  SimTime *rel;          /* its launch's end where it gates the task (a late launch: the task
                            heads a group released then); read only where RELEASED (the rest
                            of the array is never touched) */
  const SimTime *hdur;   /* per compute task of a full graph: its launch's duration */
  gboolean host;         /* there is a host stream (launch durations in phd) */
  GArray *queue;         /* uint32_t pairs (q, c): edge q -> h(c) of a full graph's launch
                            queue, as ids, from its edges (a graph for merging has none:
                            sim_merge_time_host runs its queue, SimTaskGraph.block_kernels) */
  const uint32_t *qpos;  /* the same as pairs of positions, sorted by c's (program_arrays) */
  uint32_t *qsorted;     /* (qpos, owned) */
  uint32_t host_chain, launches; /* host -> host and host -> compute edges seen */
  GArray *steps;         /* uint32_t: the tasks that are not compute on a compute stream
                            (optimizer steps: check_other_tasks), each once per such stream */
  uint32_t *redges;      /* the reduced graph's edge list, while its edges are added */
  guint nredges;
  /* Folded collectives (fold_collectives): */
  uint32_t *xp, *xs;     /* per task from C, a candidate's: its predecessors' last position,
                            its successors' first (NONE: none) */
  uint32_t *xdev;        /* per task from C, a candidate's: its stream's device */
  SimTime *xdur;         /* per task from C, a candidate's: its duration */
  uint32_t *xat;         /* per position with JOIN: the folded collective it waits for (its
                            join; while folding, NONE - 1: two join there) */
  uint32_t *xfk;         /* per position with FORK: the folded collective waiting for it (its
                            fork) */
  SimTime *pend;         /* per position k, at k & pend_mask: its end in the reduced run
                            (sim_merge_time_host; positions a launch queue's reach apart
                            share an entry) */
  uint32_t pend_mask;
  uint32_t *cedges;      /* the candidates' edges as (candidate, position of its compute end,
                            SUCCESSOR where that is the successor), their flags deferred */
  /* This round's heads by compute id (reduce): a bitmap and, per 64-bit word, the heads
   * before it, so a head's group (its rank among the heads in id order) is a popcount. */
  uint64_t *head;
  uint32_t *head_rank;
  guint ncedges;         /* entries (2 per edge) */
  /* This round's heads' groups and joins' collectives (their tasks in the reduced graph and
   * durations), in program order (reduce), for sim_merge_time_host to read in turn: */
  uint32_t *hgid, *jx;
  SimTime *jdur;
  uint32_t nheads, njoins;
  uint32_t walked;       /* devices whose launches the last host pass walked (not proven early) */
  guint8 *walked_dev;    /* per device (or NULL): whether it was one of them */
} Merge;

static inline gboolean is_host(const Merge *m, uint32_t v) {
  return m->hb != NONE && v >= m->hb && v < m->hb + m->C;
}

/* Compute task @c's device: its position's, from its chunk's first position's on (devices'
 * programs lie one after the other: few chunks hold a device's start). */
#define DEV_CHUNK_BITS 8
static inline uint32_t dev_of(const Merge *m, uint32_t c) {
  uint32_t k = m->pos[c], d = m->chunk_dev[k >> DEV_CHUNK_BITS];
  while (k >= m->dbeg[d + 1]) d++;
  return d;
}

/* Edge (@u, @v) of candidate @x with compute task @c, kept for later; the last position of
 * @x's predecessors (@at: xp) or the first of its successors (xs). */
static inline gboolean sim_merge_candidate_edge(Merge *m, uint32_t u, uint32_t v, uint32_t c,
                                                uint32_t x, uint32_t *at) {
  uint32_t *a = &at[x - m->C];
  m->cedges[m->ncedges++] = x;
  m->cedges[m->ncedges++] = m->pos[c] | (c == v ? SUCCESSOR : 0);
  (void)u;
  if (m->xdev[x - m->C] != dev_of(m, c)) m->flags[x] |= BAD;
  else if (at == m->xp) *a = *a == NONE ? m->pos[c] : MAX(*a, m->pos[c]);
  else *a = MIN(*a, m->pos[c]);
  return TRUE;
}

/* Folding (sim_merge_folds.c): whether task @t (neither compute nor a launch) is a
 * candidate, a communication task lasting more than zero on one stream (of @streams) that is
 * not a compute stream, marked CAND with its device and duration (the caller leaves step
 * mode's graphs out); which fold; the ones a late launch released inside their span unfolds
 * (FALSE: none did). */
static inline void sim_merge_candidate(Merge *m, uint32_t t, uint32_t streams) {
  const SimTask *task = &m->tasks[t];
  uint32_t r = task->nres == 1 ? m->res[task->res_begin] : NONE;
  if (task->kind == SIM_TASK_COMM && task->duration > 0 && r < streams &&
      sim_resource_stream_of(r) != SIM_STREAM_COMPUTE) {
    m->flags[t] |= CAND;
    m->xp[t - m->C] = m->xs[t - m->C] = NONE;
    m->xdev[t - m->C] = (uint32_t)sim_resource_device(r);
    m->xdur[t - m->C] = task->duration;
  }
}
void sim_merge_fold_collectives(Merge *m);
gboolean sim_merge_unfold_released(Merge *m);

/* The first position from @k on (@n: none) whose @flags have a bit of @mask, read a word (8
 * positions) at a time: most positions have none. */
static inline uint32_t next_flagged(const uint8_t *flags, uint32_t k, uint32_t n, uint8_t mask) {
  for (; k < n; k += 8) {
    uint64_t word = 0;
    if (n - k >= 8)
      memcpy(&word, flags + k, 8); /* one load */
    else
      memcpy(&word, flags + k, n - k);
    uint64_t bits = GUINT64_FROM_LE(word) & (0x0101010101010101ull * mask); /* k's lowest */
    if (bits) return k + (uint32_t)__builtin_ctzll(bits) / 8;
  }
  return n;
}

/* The host stream over the reduced schedule (sim_merge_host.c): 0 where the reduced run is the
 * full one (the host waits in @iv/@off), else the releases corrected and their count, or -1
 * (the tie-breaks forbid merging). */
gint64 sim_merge_time_host(Merge *m, const SimSchedule *s, const SimTime *nr, GArray *iv,
                           guint *off);

/* A device's host walk (sim_merge_time_host) before position @position: its last launch's end,
 * its last ends, and its launch queue (how far back it stands, the kernels in it, and the ends
 * of the positions from there on, ends[0 .. queue_back); owned, g_free). */
typedef struct {
  uint32_t position;
  SimTime host_end, prev_end, member_end;
  uint32_t queue_back;
  guint64 queued;
  SimTime *ends;
} SimHostWalkState;

/* Walks device @d again over the final reduced run @s (@hi, @ji: its first entries in reduce's
 * lists of heads and joins) and records its state before positions @at and @until (@at <=
 * @until); FALSE where the walk meets a late launch, a host wait between the two, or a queue
 * reaching back further than the ends kept. */
gboolean sim_merge_walk_state(Merge *m, const SimSchedule *s, uint32_t d, uint32_t hi,
                              uint32_t ji, uint32_t at, uint32_t until, SimHostWalkState *out);

/* The steady state proven on the final reduced run (sim_merge_period.c): SimSteady filled. */
gboolean sim_merge_prove_steady(Merge *m, const SimTaskGraph *rg, const SimSchedule *s,
                                const SimTime *release, const SimFolds *folds,
                                const SimTime *host_iv, const guint *host_off, SimSteady *st);

/* Position @k's duration and its launch's: a graph for merging's from its blocks
 * (SimTaskGraph.program_block: small tables), a full graph's gathered per position. */
static inline SimTime pos_duration(const Merge *m, uint32_t k) {
  return m->g->program_block ? m->g->block_duration[m->g->program_block[k]] : m->pdur[k];
}
static inline void pos_times(const Merge *m, uint32_t k, SimTime *duration, SimTime *launch) {
  const uint32_t *block = m->g->program_block;
  if (!block) {
    *duration = m->pdur[k];
    *launch = m->phd[k];
    return;
  }
  uint32_t b = block[k];
  *duration = m->g->block_duration[b];
  *launch = m->g->block_host ? m->g->block_host[b] : 0;
}
static inline SimTime pos_launch(const Merge *m, uint32_t k) {
  if (!m->g->program_block) return m->phd[k];
  return m->g->block_host ? m->g->block_host[m->g->program_block[k]] : 0;
}

#endif
