/* sim/build — replaying one microbatch's resharding for the next ones.
 *
 * A tensor's conversion (sb_convert) is built once per microbatch, and every microbatch's is
 * the same subgraph: the same collectives (their costs are pure functions of the group, the
 * collective and the bytes), the same resources, the same edges among its own tasks, edges in
 * from the same positions of its input (the producers' tasks of that microbatch) and the same
 * positions of its output; only the ids differ (appended after what is built so far) and the
 * tasks' microbatch. So after one microbatch is built, recorded as offsets into its own tasks
 * and indices into its input, the next ones are copied: the arrays grow exactly as building
 * them would have made them grow, edges in the same order too (the graph is the same byte for
 * byte, which tests/test-replay.c checks). Replaying needs the new input to repeat the
 * recorded one's pattern (the same positions empty, equal and distinct: deduplicated edges
 * and passed-through entries depend on it); where it does not, the microbatch is built and
 * recorded in turn. A recording is refused where its tasks name another microbatch or an edge
 * comes from a task that is neither its own nor in its input.
 * The copies are made for all the microbatches that follow at once (sb_replay_many: each
 * array grows once, by every copy, from the callers' inputs computed for every microbatch,
 * and each copy is written in one pass); a caller that adds edges of its own after each
 * microbatch's conversion (the backward's data edges, the re-gathers') names their targets
 * (SbReplayTargets) and each copy's follow its own, so the edge list keeps the order
 * building each microbatch in turn gives it.
 * SimOptions.build_each_microbatch turns replaying off (tests compare the two graphs).
 * Tried (2026-12-02, 175B interleaved point, callgrind, 3 predictions): one pass per copy
 * writing its tasks, resources, edges, outputs and the caller's edges in turn (the recordings
 * there are 1-2 tasks, so each inner loop runs once or twice): 723.5 M -> 722.1 M only; one
 * recorded entry at a time across every copy (what is kept): 705.7 M.
 * Not done (2026-12-03, measured on b3eb382: sb_replay_many 7.0 M instructions a prediction,
 * task copies 2.1 M, their resources 0.7 M, edges 1.4 M, outputs 0.8 M, input patterns 0.7 M):
 * letting the graph for merging name a copy as the recorded microbatch's entries plus an id
 * offset instead of writing it. sim_merge.c reads the graph's tasks, resources and edges as
 * flat arrays indexed by id (Merge.tasks, .res, check_edges' g->edges), so every reader would
 * have to change; not possible without touching sim_merge*.c. */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

#include <stdlib.h>

#define INPUT_BIT 0x80000000u /* an encoded endpoint: input index | INPUT_BIT, or own offset */

void sb_replay_init(SbReplay *r, const Builder *b, const int *in, int nin, const int *out,
                    int nout) {
  memset(r, 0, sizeof *r);
  r->off = b->no_replay;
  r->in = in;
  r->nin = nin;
  r->out = out;
  r->nout = nout;
  r->input = g_new(uint32_t, MAX(nin, 1));
  r->first = g_new(uint32_t, MAX(nin, 1));
  r->output = g_new(uint32_t, MAX(nout, 1));
  r->edges = g_array_new(FALSE, FALSE, sizeof(uint32_t));
}

void sb_replay_clear(SbReplay *r) {
  g_free(r->input);
  g_free(r->first);
  g_free(r->output);
  g_array_unref(r->edges);
}

/* @id encoded against the recording (@begin: its first task, @end: past its last); FALSE
 * where it is neither the recording's own nor in its input. */
static gboolean encode(const SbReplay *r, uint32_t begin, uint32_t end, uint32_t id,
                       uint32_t *out) {
  if (id == NO_TASK) return (*out = NO_TASK, TRUE);
  if (id >= begin && id < end) return (*out = id - begin, TRUE);
  for (int i = 0; i < r->nin; i++)
    if (r->input[i] == id) return (*out = INPUT_BIT | r->first[i], TRUE);
  return FALSE;
}

void sb_replay_record(Builder *b, SbReplay *r, SbMark begin, const uint32_t *input, int mb,
                      const uint32_t *output) {
  if (r->off) return;
  const SimTaskGraph *g = b->tg;
  r->recorded = FALSE;
  r->begin = begin;
  r->end = sb_mark(b);
  for (int i = 0; i < r->nin; i++) r->input[i] = input[r->in[i]];
  for (int i = 0; i < r->nin; i++) {
    int j = 0;
    while (r->input[j] != r->input[i]) j++;
    r->first[i] = (uint32_t)j;
  }
  if (begin.task >= INPUT_BIT || r->end.task - begin.task >= INPUT_BIT) return;
  for (uint32_t t = begin.task; t < r->end.task; t++) {
    const SimTask *task = sim_task_graph_task(g, t);
    if (task->microbatch != mb || task->res_begin < begin.res ||
        task->res_begin + task->nres > r->end.res)
      return;
  }
  const uint32_t *e = (const uint32_t *)g->edges->data;
  g_array_set_size(r->edges, r->end.edge - begin.edge);
  uint32_t *enc = (uint32_t *)r->edges->data;
  for (uint32_t k = begin.edge; k < r->end.edge; k++)
    if (e[k] == NO_TASK || !encode(r, begin.task, r->end.task, e[k], &enc[k - begin.edge]))
      return;
  const uint32_t *spans = (const uint32_t *)g->spans->data;
  for (uint32_t k = begin.span; k < r->end.span; k++)
    if (spans[k] < begin.task || spans[k] >= r->end.task) return;
  for (int j = 0; j < r->nout; j++)
    if (!encode(r, begin.task, r->end.task, output[r->out[j]], &r->output[j])) return;
  r->recorded = TRUE;
}

static int compare_ids(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Whether @in_c (the input at the indices r->in, in order) repeats the recorded input's
 * pattern: empty where it was, equal where it was, distinct where it was. */
static gboolean same_pattern(const SbReplay *r, const uint32_t *in_c) {
  if (r->nin == 1) /* one entry (a symmetric run's representative): empty where it was */
    return (in_c[0] == NO_TASK) == (r->input[0] == NO_TASK);
  uint32_t stack[64];
  g_autofree uint32_t *heap = r->nin > 64 ? g_new(uint32_t, r->nin) : NULL;
  uint32_t *distinct = heap ? heap : stack;
  int n = 0;
  for (int i = 0; i < r->nin; i++) {
    uint32_t x = in_c[i];
    if ((x == NO_TASK) != (r->input[i] == NO_TASK) || x != in_c[r->first[i]]) return FALSE;
    if (r->first[i] == (uint32_t)i && x != NO_TASK) distinct[n++] = x;
  }
  if (n == 2) return distinct[0] != distinct[1];
  if (n > 2) qsort(distinct, (size_t)n, sizeof(uint32_t), compare_ids);
  for (int i = 1; i < n; i++)
    if (distinct[i] == distinct[i - 1]) return FALSE;
  return TRUE;
}

/* How many of the next @count microbatches (inputs @in_c, nin a microbatch) repeat the
 * recording's input pattern, from the first on. */
static int repeating(const SbReplay *r, const uint32_t *in_c, int count) {
  int n = 0;
  if (r->nin == 1) /* (same_pattern's first case, inline: a symmetric run's every conversion) */
    while (n < count && (in_c[n] == NO_TASK) == (r->input[0] == NO_TASK)) n++;
  else
    while (n < count && same_pattern(r, in_c + (gsize)n * (gsize)r->nin)) n++;
  return n;
}

/* A recorded endpoint @x in the copy whose input is @in and first task @base. */
static inline uint32_t decode(uint32_t x, const uint32_t *in, uint32_t base) {
  return x == NO_TASK ? NO_TASK : x & INPUT_BIT ? in[x & ~INPUT_BIT] : base + x;
}

/* The @n copies from @now: their tasks (microbatch and resources shifted) and resources,
 * written one recorded entry at a time across every copy (a recording has a few entries, a
 * replay up to M copies). */
static void copy_tasks(SimTaskGraph *g, const SbReplay *r, SbMark now, int mb, int n) {
  uint32_t ntasks = r->end.task - r->begin.task, nres = r->end.res - r->begin.res;
  const SimTask *from = (const SimTask *)g->tasks->data + r->begin.task;
  SimTask *tasks = (SimTask *)g->tasks->data + now.task;
  for (uint32_t t = 0; t < ntasks; t++) {
    SimTask x = from[t];
    x.microbatch = mb;
    x.res_begin += now.res - r->begin.res;
    for (int i = 0; i < n; i++, x.microbatch++, x.res_begin += nres) tasks[(gsize)i * ntasks + t] = x;
  }
  const uint32_t *res_from = (const uint32_t *)g->task_resources->data + r->begin.res;
  uint32_t *res = (uint32_t *)g->task_resources->data + now.res;
  for (uint32_t k = 0; k < nres; k++)
    for (int i = 0; i < n; i++) res[(gsize)i * nres + k] = res_from[k];
}

/* The @n copies' outputs (@out_c, nout a copy) from their inputs (@in_c) and first task
 * (@first), one recorded output at a time. */
static void copy_outputs(const SbReplay *r, const uint32_t *in_c, uint32_t first, int n,
                         uint32_t *out_c) {
  uint32_t ntasks = r->end.task - r->begin.task;
  for (int j = 0; j < r->nout; j++) {
    uint32_t x = r->output[j];
    for (int i = 0; i < n; i++)
      out_c[(gsize)i * r->nout + j] =
          decode(x, in_c + (gsize)i * r->nin, first + (uint32_t)i * ntasks);
  }
}

/* Whether every caller's edge of the @n copies is added (none left out: sb_replay_many can
 * write them at fixed places). */
static gboolean all_targets(const Builder *b, const SbReplayTargets *targets,
                            const uint32_t *out_c, int n, int nout) {
  for (gsize k = 0; k < (gsize)n * (gsize)nout; k++)
    if (out_c[k] == NO_TASK || targets->to[k] == NO_TASK ||
        (targets->data && sb_repeats_chain(b, out_c[k], targets->to[k])))
      return FALSE;
  return TRUE;
}

/* The @n copies' edges at @e when each copy has the same number (@per pairs: its own, then
 * every caller's, all_targets), one recorded edge endpoint at a time; returns past them. */
static uint32_t *fixed_edges(const SbReplay *r, const uint32_t *in_c, uint32_t first, int n,
                             const uint32_t *out_c, const SbReplayTargets *targets, guint per,
                             uint32_t *e) {
  uint32_t ntasks = r->end.task - r->begin.task;
  const uint32_t *enc = (const uint32_t *)r->edges->data;
  gsize stride = 2 * (gsize)per;
  for (guint k = 0; k < r->edges->len; k++) {
    uint32_t x = enc[k];
    if (x & INPUT_BIT)
      for (int i = 0; i < n; i++) e[i * stride + k] = in_c[(gsize)i * r->nin + (x & ~INPUT_BIT)];
    else
      for (int i = 0; i < n; i++) e[i * stride + k] = first + (uint32_t)i * ntasks + x;
  }
  for (int j = 0; targets && j < r->nout; j++)
    for (int i = 0; i < n; i++) {
      uint32_t *at = e + i * stride + r->edges->len + 2 * (gsize)j;
      at[0] = out_c[(gsize)i * r->nout + j];
      at[1] = targets->to[(gsize)i * r->nout + j];
    }
  return e + n * stride;
}

/* The caller's edges of one copy (SbReplayTargets) at @e, from its outputs @out; returns past
 * them. */
static uint32_t *target_edges(const Builder *b, const SbReplayTargets *targets, int i,
                              const uint32_t *out, int nout, uint32_t *e) {
  const uint32_t *to = targets->to + (gsize)i * (gsize)nout;
  for (int j = 0; j < nout; j++) {
    if (out[j] == NO_TASK || to[j] == NO_TASK) continue;
    if (targets->data && sb_repeats_chain(b, out[j], to[j])) continue;
    *e++ = out[j];
    *e++ = to[j];
  }
  return e;
}

/* The @n copies' edges at @e copy by copy (some caller's edges left out); returns past them. */
static uint32_t *each_copy_edges(const Builder *b, const SbReplay *r, const uint32_t *in_c,
                                 uint32_t first, int n, const uint32_t *out_c,
                                 const SbReplayTargets *targets, uint32_t *e) {
  uint32_t ntasks = r->end.task - r->begin.task;
  const uint32_t *enc = (const uint32_t *)r->edges->data;
  for (int i = 0; i < n; i++) {
    const uint32_t *in = in_c + (gsize)i * (gsize)r->nin;
    uint32_t base = first + (uint32_t)i * ntasks;
    for (guint k = 0; k < r->edges->len; k++) *e++ = enc[k] & INPUT_BIT ? in[enc[k] & ~INPUT_BIT] : base + enc[k];
    if (targets) e = target_edges(b, targets, i, out_c + (gsize)i * r->nout, r->nout, e);
  }
  return e;
}

/* The spans of the @n copies from @first (step-expanded collectives only). */
static void copy_spans(SimTaskGraph *g, const SbReplay *r, uint32_t first, int n) {
  uint32_t ntasks = r->end.task - r->begin.task;
  for (int i = 0; i < n; i++)
    for (uint32_t k = r->begin.span; k < r->end.span; k++) {
      uint32_t id = g_array_index(g->spans, uint32_t, k) - r->begin.task + first + (uint32_t)i * ntasks;
      g_array_append_val(g->spans, id);
    }
}

int sb_replay_many(Builder *b, const SbReplay *r, const uint32_t *in_c, int mb, int count,
                   uint32_t *out_c, const SbReplayTargets *targets) {
  if (r->off || !r->recorded) return 0;
  int n = repeating(r, in_c, count);
  if (!n) return 0;
  SimTaskGraph *g = b->tg;
  SbMark now = sb_mark(b);
  uint32_t ntasks = r->end.task - r->begin.task, nres = r->end.res - r->begin.res;
  /* every array grown once, by all the copies, and written one recorded entry at a time */
  g_array_set_size(g->tasks, now.task + ntasks * (guint)n);
  g_array_set_size(g->task_resources, now.res + nres * (guint)n);
  copy_tasks(g, r, now, mb, n);
  copy_outputs(r, in_c, now.task, n, out_c);
  guint per = r->edges->len / 2 + (targets ? (guint)r->nout : 0);
  uint32_t *e = sb_edges_begin(b, per * (guint)n);
  if (!targets || all_targets(b, targets, out_c, n, r->nout))
    e = fixed_edges(r, in_c, now.task, n, out_c, targets, per, e);
  else
    e = each_copy_edges(b, r, in_c, now.task, n, out_c, targets, e);
  sb_edges_end(b, e);
  if (r->end.span > r->begin.span) copy_spans(g, r, now.task, n);
  return n;
}
