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
 * array grows once, by every copy, from the callers' inputs computed for every microbatch);
 * a caller that adds edges of its own after each microbatch's conversion (the backward's
 * data edges) appends each copy's edges itself first (sb_replay_edges), so the edge list
 * keeps the order building each microbatch in turn gives it.
 * SimOptions.build_each_microbatch turns replaying off (tests compare the two graphs). */
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

/* Grows @array (of uint32_t) by @copies copies of its own @count elements at @from. */
static void append_own(GArray *array, guint from, guint count, guint copies) {
  guint len = array->len;
  g_array_set_size(array, len + count * copies);
  uint32_t *a = (uint32_t *)array->data, *to = a + len;
  for (guint i = 0; i < copies; i++)
    for (guint k = 0; k < count; k++) *to++ = a[from + k];
}

guint sb_replay_edge_count(const SbReplay *r) {
  return r->edges->len / 2;
}

uint32_t *sb_replay_edges(const SbReplay *r, const uint32_t *in_c, uint32_t first, int i,
                          uint32_t *e) {
  const uint32_t *enc = (const uint32_t *)r->edges->data;
  uint32_t base = first + (uint32_t)i * (r->end.task - r->begin.task);
  for (guint k = 0; k < r->edges->len; k++)
    *e++ = enc[k] & INPUT_BIT ? in_c[enc[k] & ~INPUT_BIT] : base + enc[k];
  return e;
}

int sb_replay_many(Builder *b, const SbReplay *r, const uint32_t *in_c, int mb, int count,
                   uint32_t *out_c, uint32_t *first) {
  if (r->off || !r->recorded) return 0;
  int n = 0;
  if (r->nin == 1) /* (same_pattern's first case, inline: a symmetric run's every conversion) */
    while (n < count && (in_c[n] == NO_TASK) == (r->input[0] == NO_TASK)) n++;
  else
    while (n < count && same_pattern(r, in_c + (gsize)n * (gsize)r->nin)) n++;
  if (!n) return 0;
  SimTaskGraph *g = b->tg;
  SbMark now = sb_mark(b);
  uint32_t ntasks = r->end.task - r->begin.task, nres = r->end.res - r->begin.res;
  if (ntasks) { /* n copies of the tasks and their resources */
    g_array_set_size(g->tasks, now.task + ntasks * (guint)n);
    append_own(g->task_resources, r->begin.res, nres, (guint)n);
    const SimTask *from = (const SimTask *)g->tasks->data + r->begin.task;
    SimTask *tasks = (SimTask *)g->tasks->data + now.task;
    for (int i = 0; i < n; i++)
      for (uint32_t t = 0; t < ntasks; t++, tasks++) {
        *tasks = from[t];
        tasks->microbatch = mb + i;
        tasks->res_begin += now.res + (uint32_t)i * nres - r->begin.res;
      }
  }
  if (!first) { /* the copies' edges, one after the other */
    uint32_t *e = sb_edges_begin(b, sb_replay_edge_count(r) * (guint)n);
    for (int i = 0; i < n; i++) e = sb_replay_edges(r, in_c + (gsize)i * (gsize)r->nin, now.task, i, e);
    sb_edges_end(b, e);
  }
  for (int i = 0; i < n; i++) {
    const uint32_t *in = in_c + (gsize)i * (gsize)r->nin;
    uint32_t base = now.task + (uint32_t)i * ntasks;
    for (uint32_t k = r->begin.span; k < r->end.span; k++) {
      uint32_t id = g_array_index(g->spans, uint32_t, k) - r->begin.task + base;
      g_array_append_val(g->spans, id);
    }
    uint32_t *out = out_c + (gsize)i * (gsize)r->nout;
    for (int j = 0; j < r->nout; j++) {
      uint32_t x = r->output[j];
      out[j] = x == NO_TASK ? NO_TASK : x & INPUT_BIT ? in[x & ~INPUT_BIT] : base + x;
    }
  }
  if (first) *first = now.task;
  return n;
}
