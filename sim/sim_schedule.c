/* sim/schedule — the program order of every pipeline rank (orders and sources in
 * sim/sim_schedule.h). Pure functions of the strategy: no task graph, no time. */
#include "sim/sim-int.h"
#include "sim/sim_schedule.h"

#include <string.h>

static inline void push(GArray *units, SimUnitPhase phase, int chunk, int microbatch) {
  /* (sized for every unit at once by sim_pipeline_units: no growth here) */
  g_array_index(units, SimUnit, units->len++) = (SimUnit){(uint8_t)phase, chunk, microbatch};
}

/* GPipe, 1F1B and eager-1F1B on one chunk per rank: @warm forwards, (F, B) pairs, then the
 * remaining backwards. GPipe is the case warm = M. */
static void one_forward_one_backward(GArray *units, int chunk, int M, int warm) {
  for (int i = 0; i < warm; i++) push(units, SIM_UNIT_FORWARD, chunk, i);
  for (int i = 0; i < M - warm; i++) {
    push(units, SIM_UNIT_FORWARD, chunk, warm + i);
    push(units, SIM_UNIT_BACKWARD, chunk, i);
  }
  for (int i = M - warm; i < M; i++) push(units, SIM_UNIT_BACKWARD, chunk, i);
}

/* Megatron-LM's interleaved schedule (forward_backward_pipelining_with_interleaving) for rank
 * @r of @P with @V chunks each. Units k = 0 .. MV-1 walk the microbatches in groups of P:
 * forward unit k is microbatch (k / PV) P + k % P of local chunk (k / P) % V, so a rank runs
 * P microbatches through one chunk before moving to its next chunk; backward unit k visits
 * the chunks in reverse. The warm-up, 2(P - r - 1) + (V - 1) P units, is what it takes for
 * the first microbatch's forward to run through all V P chunks and its backward to come back
 * to rank r's last chunk; when M == P Megatron runs every forward first. */
static void interleaved(GArray *units, int r, int P, int V, int M) {
  int total = M * V;
  int warm = M == P ? total : MIN(total, 2 * (P - r - 1) + (V - 1) * P);
#define UNIT_MB(k) (((k) / (P * V)) * P + (k) % P)
#define FWD_CHUNK(k) ((((k) / P) % V) * P + r)
#define BWD_CHUNK(k) ((V - 1 - ((k) / P) % V) * P + r)
  for (int k = 0; k < warm; k++) push(units, SIM_UNIT_FORWARD, FWD_CHUNK(k), UNIT_MB(k));
  for (int k = 0; k < total - warm; k++) {
    int f = k + warm;
    push(units, SIM_UNIT_FORWARD, FWD_CHUNK(f), UNIT_MB(f));
    push(units, SIM_UNIT_BACKWARD, BWD_CHUNK(k), UNIT_MB(k));
  }
  for (int k = total - warm; k < total; k++)
    push(units, SIM_UNIT_BACKWARD, BWD_CHUNK(k), UNIT_MB(k));
#undef UNIT_MB
#undef FWD_CHUNK
#undef BWD_CHUNK
}

/* Weight delay: every B gets its W right after it, except the first @delayed B's of the rank,
 * whose W's go to the end in the same order (ZB-H1 placement, Qi et al. 2024, section 3.1:
 * later ranks postpone more W's, which fill their drain bubble while the earlier ranks are
 * still busy with backwards). */
static GArray *split_weight(GArray *units, int delayed) {
  GArray *out = g_array_sized_new(FALSE, FALSE, sizeof(SimUnit), units->len * 3 / 2 + 1);
  GArray *tail = g_array_new(FALSE, FALSE, sizeof(SimUnit));
  int backwards = 0;
  for (guint i = 0; i < units->len; i++) {
    SimUnit u = g_array_index(units, SimUnit, i);
    g_array_append_val(out, u);
    if (u.phase != SIM_UNIT_BACKWARD) continue;
    SimUnit w = {SIM_UNIT_WEIGHT, u.chunk, u.microbatch};
    g_array_append_val(backwards++ < delayed ? tail : out, w);
  }
  g_array_append_vals(out, tail->data, tail->len);
  g_array_unref(tail);
  g_array_unref(units);
  return out;
}

SimUnit *sim_pipeline_units(const MdlStrategy *s, int rank, int *n_units) {
  g_return_val_if_fail(s && n_units, NULL);
  int P = mdl_strategy_num_ranks(s), M = s->num_microbatches;
  g_return_val_if_fail(rank >= 0 && rank < P, NULL);
  int V = s->schedule == MDL_SCHEDULE_INTERLEAVED && s->virtual_stages > 1 ? s->virtual_stages : 1;
  GArray *units = g_array_sized_new(FALSE, FALSE, sizeof(SimUnit), (guint)(2 * M * V + 1));
  if (s->schedule == MDL_SCHEDULE_GPIPE)
    one_forward_one_backward(units, rank, M, M);
  else if (s->schedule == MDL_SCHEDULE_EAGER_1F1B)
    one_forward_one_backward(units, rank, M, MIN(2 * (P - rank - 1), M));
  else if (s->schedule == MDL_SCHEDULE_INTERLEAVED && s->virtual_stages > 1)
    interleaved(units, rank, P, s->virtual_stages, M);
  else /* 1F1B (and interleaving of one chunk per rank, which validation refuses) */
    one_forward_one_backward(units, rank, M, MIN(P - rank - 1, M));
  if (s->weight_delay) units = split_weight(units, rank);
  *n_units = (int)units->len;
  return (SimUnit *)g_array_free(units, FALSE);
}

char *sim_pipeline_format(const MdlStrategy *s, const SimUnit *units, int n) {
  static const char letter[] = {'F', 'B', 'W'};
  GString *out = g_string_new(NULL);
  for (int i = 0; i < n; i++) {
    g_string_append_printf(out, "%s%c%d", i ? " " : "", letter[units[i].phase % 3],
                           units[i].microbatch);
    if (s->virtual_stages > 1) g_string_append_printf(out, ".c%d", units[i].chunk);
  }
  return g_string_free(out, FALSE);
}

int sim_pipeline_peak_in_flight(const SimUnit *units, int n) {
  gboolean split = FALSE;
  int max_mb = 0;
  for (int i = 0; i < n; i++) {
    split |= units[i].phase == SIM_UNIT_WEIGHT;
    max_mb = MAX(max_mb, units[i].microbatch);
  }
  GHashTable *held = g_hash_table_new(g_direct_hash, g_direct_equal);
  int peak = 0;
  for (int i = 0; i < n; i++) {
    gpointer key = GINT_TO_POINTER(units[i].chunk * (max_mb + 1) + units[i].microbatch + 1);
    if (units[i].phase == SIM_UNIT_FORWARD) {
      g_hash_table_add(held, key);
      peak = MAX(peak, (int)g_hash_table_size(held));
    } else if (units[i].phase == (split ? SIM_UNIT_WEIGHT : SIM_UNIT_BACKWARD)) {
      g_hash_table_remove(held, key);
    }
  }
  g_hash_table_unref(held);
  return peak;
}
