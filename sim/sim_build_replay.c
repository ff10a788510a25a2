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

/* Whether @input repeats the recorded input's pattern at the indices r->in: empty where it
 * was, equal where it was, distinct where it was. */
static gboolean same_pattern(const SbReplay *r, const uint32_t *input) {
  if (r->nin == 1) /* one entry (a symmetric run's representative): empty where it was */
    return (input[r->in[0]] == NO_TASK) == (r->input[0] == NO_TASK);
  uint32_t stack[64];
  g_autofree uint32_t *heap = r->nin > 64 ? g_new(uint32_t, r->nin) : NULL;
  uint32_t *distinct = heap ? heap : stack;
  int n = 0;
  for (int i = 0; i < r->nin; i++) {
    uint32_t x = input[r->in[i]];
    if ((x == NO_TASK) != (r->input[i] == NO_TASK) || x != input[r->in[r->first[i]]])
      return FALSE;
    if (r->first[i] == (uint32_t)i && x != NO_TASK) distinct[n++] = x;
  }
  if (n == 2) return distinct[0] != distinct[1];
  if (n > 2) qsort(distinct, (size_t)n, sizeof(uint32_t), compare_ids);
  for (int i = 1; i < n; i++)
    if (distinct[i] == distinct[i - 1]) return FALSE;
  return TRUE;
}

/* Grows @array by @count elements copied from its own elements at @from. */
static void append_own(GArray *array, guint from, guint count) {
  guint len = array->len;
  gsize size = g_array_get_element_size(array);
  g_array_set_size(array, len + count);
  memcpy(array->data + (gsize)len * size, array->data + (gsize)from * size, (gsize)count * size);
}

gboolean sb_replay(Builder *b, const SbReplay *r, const uint32_t *input, int mb,
                   uint32_t *output) {
  if (r->off || !r->recorded || !same_pattern(r, input)) return FALSE;
  SimTaskGraph *g = b->tg;
  SbMark now = sb_mark(b);
  uint32_t ntasks = r->end.task - r->begin.task;
  if (ntasks) {
    append_own(g->tasks, r->begin.task, ntasks);
    append_own(g->task_resources, r->begin.res, r->end.res - r->begin.res);
    SimTask *tasks = (SimTask *)g->tasks->data + now.task;
    for (uint32_t t = 0; t < ntasks; t++) {
      tasks[t].microbatch = mb;
      tasks[t].res_begin += now.res - r->begin.res;
    }
  }
  guint nedges = r->edges->len;
  if (nedges) {
    g_array_set_size(g->edges, now.edge + nedges);
    uint32_t *e = (uint32_t *)g->edges->data + now.edge;
    const uint32_t *enc = (const uint32_t *)r->edges->data;
    for (guint k = 0; k < nedges; k++)
      e[k] = enc[k] & INPUT_BIT ? input[r->in[enc[k] & ~INPUT_BIT]] : now.task + enc[k];
  }
  for (uint32_t k = r->begin.span; k < r->end.span; k++) {
    uint32_t id = g_array_index(g->spans, uint32_t, k) - r->begin.task + now.task;
    g_array_append_val(g->spans, id);
  }
  for (int j = 0; j < r->nout; j++) {
    uint32_t x = r->output[j];
    output[r->out[j]] = x == NO_TASK       ? NO_TASK
                        : x & INPUT_BIT    ? input[r->in[x & ~INPUT_BIT]]
                                           : now.task + x;
  }
  return TRUE;
}
