/* Tests of the pipeline schedules (sim/sim_schedule.h) and what they drive: the exact unit
 * order of every schedule on a small case, that every rank's program holds each unit once and
 * the programs together cannot deadlock, closed-form iteration times on equal stages with free
 * communication (interleaved 1F1B, eager-1F1B, backward weight delaying), activations in
 * flight (programs and cost model against the papers' closed forms), the gradient sync after
 * the delayed weight gradients, the trace, the strategy JSON, and the spec errors.
 *
 * Over 700 lines on purpose: one GTest binary per module (CONVENTIONS.md, "Tests"), whose cases
 * share this file's fixtures and helpers; splitting it would split one module's test binary.
 */
#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"
#include "sim/sim_schedule.h"
#include "test-util.h"

static char *tmpdir;

/* Just the fields the schedule reads. */
static MdlStrategy pipeline_shape(MdlSchedule schedule, int P, int V, int M, gboolean wdelay) {
  MdlStrategy s;
  memset(&s, 0, sizeof s);
  s.num_stages = P * V;
  s.virtual_stages = V;
  s.num_microbatches = M;
  s.schedule = schedule;
  s.weight_delay = wdelay;
  return s;
}

static char *rank_program(const MdlStrategy *s, int rank) {
  int n = 0;
  g_autofree SimUnit *units = sim_pipeline_units(s, rank, &n);
  return sim_pipeline_format(s, units, n);
}

/* --- exact orders: P = 4, M = 8 (V = 2), written out by hand from the papers' rules --- */

typedef struct {
  const char *name;
  MdlSchedule schedule;
  int P, V, M;
  gboolean wdelay;
  const char *ranks[4];
} OrderCase;

static const OrderCase order_cases[] = {
    {"gpipe", MDL_SCHEDULE_GPIPE, 4, 1, 8, FALSE,
     {"F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7",
      "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7",
      "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7",
      "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7"}},
    /* Narayanan et al. 2021, Fig. 4 (top): P - r - 1 warm-up forwards. */
    {"1f1b", MDL_SCHEDULE_1F1B, 4, 1, 8, FALSE,
     {"F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
      "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
      "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"}},
    /* Cross-mesh paper, section 4: stage i (1-based) runs 2(#stages - i) + 1 forwards, then
     * the steady phase: 7, 5, 3, 1 forwards before the first backward. */
    {"eager1f1b", MDL_SCHEDULE_EAGER_1F1B, 4, 1, 8, FALSE,
     {"F0 F1 F2 F3 F4 F5 F6 B0 F7 B1 B2 B3 B4 B5 B6 B7",
      "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 B4 B5 B6 B7",
      "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"}},
    /* Narayanan et al. 2021, Fig. 4 (bottom), Megatron-LM's order: groups of P = 4
     * microbatches per chunk; warm-up 2(P - r - 1) + (V - 1) P = 10, 8, 6, 4 units. Rank r
     * holds chunks r and r + 4. */
    {"interleaved", MDL_SCHEDULE_INTERLEAVED, 4, 2, 8, FALSE,
     {"F0.c0 F1.c0 F2.c0 F3.c0 F0.c4 F1.c4 F2.c4 F3.c4 F4.c0 F5.c0 F6.c0 B0.c4 F7.c0 B1.c4 "
      "F4.c4 B2.c4 F5.c4 B3.c4 F6.c4 B0.c0 F7.c4 B1.c0 B2.c0 B3.c0 B4.c4 B5.c4 B6.c4 B7.c4 "
      "B4.c0 B5.c0 B6.c0 B7.c0",
      "F0.c1 F1.c1 F2.c1 F3.c1 F0.c5 F1.c5 F2.c5 F3.c5 F4.c1 B0.c5 F5.c1 B1.c5 F6.c1 B2.c5 "
      "F7.c1 B3.c5 F4.c5 B0.c1 F5.c5 B1.c1 F6.c5 B2.c1 F7.c5 B3.c1 B4.c5 B5.c5 B6.c5 B7.c5 "
      "B4.c1 B5.c1 B6.c1 B7.c1",
      "F0.c2 F1.c2 F2.c2 F3.c2 F0.c6 F1.c6 F2.c6 B0.c6 F3.c6 B1.c6 F4.c2 B2.c6 F5.c2 B3.c6 "
      "F6.c2 B0.c2 F7.c2 B1.c2 F4.c6 B2.c2 F5.c6 B3.c2 F6.c6 B4.c6 F7.c6 B5.c6 B6.c6 B7.c6 "
      "B4.c2 B5.c2 B6.c2 B7.c2",
      "F0.c3 F1.c3 F2.c3 F3.c3 F0.c7 B0.c7 F1.c7 B1.c7 F2.c7 B2.c7 F3.c7 B3.c7 F4.c3 B0.c3 "
      "F5.c3 B1.c3 F6.c3 B2.c3 F7.c3 B3.c3 F4.c7 B4.c7 F5.c7 B5.c7 F6.c7 B6.c7 F7.c7 B7.c7 "
      "B4.c3 B5.c3 B6.c3 B7.c3"}},
    /* 1F1B with weight delay: each B followed by its W, but rank r's first r W's at the end
     * (ZB-H1 placement, Qi et al. 2024, section 3.1). */
    {"1f1b-wdelay", MDL_SCHEDULE_1F1B, 4, 1, 8, TRUE,
     {"F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
      "F0 F1 F2 B0 F3 B1 W1 F4 B2 W2 F5 B3 W3 F6 B4 W4 F7 B5 W5 B6 W6 B7 W7 W0",
      "F0 F1 B0 F2 B1 F3 B2 W2 F4 B3 W3 F5 B4 W4 F6 B5 W5 F7 B6 W6 B7 W7 W0 W1",
      "F0 B0 F1 B1 F2 B2 F3 B3 W3 F4 B4 W4 F5 B5 W5 F6 B6 W6 F7 B7 W7 W0 W1 W2"}},
    /* Interleaved with M == P: Megatron runs every forward first. */
    {"interleaved-m-equals-p", MDL_SCHEDULE_INTERLEAVED, 2, 2, 2, FALSE,
     {"F0.c0 F1.c0 F0.c2 F1.c2 B0.c2 B1.c2 B0.c0 B1.c0",
      "F0.c1 F1.c1 F0.c3 F1.c3 B0.c3 B1.c3 B0.c1 B1.c1"}},
};

static void test_order(gconstpointer data) {
  const OrderCase *c = data;
  MdlStrategy s = pipeline_shape(c->schedule, c->P, c->V, c->M, c->wdelay);
  for (int r = 0; r < c->P; r++) {
    g_autofree char *got = rank_program(&s, r);
    if (g_strcmp0(got, c->ranks[r]) != 0)
      g_error("%s rank %d:\n  got      %s\n  expected %s", c->name, r, got, c->ranks[r]);
  }
}

/* --- properties of every program --- */

/* Activation sets rank r holds at its peak, from the papers (see costmodel/cm_memory.c):
 * GPipe M; 1F1B min(M, P - r) (Narayanan et al. 2021, 2.2); eager-1F1B min(M, 2(P - r - 1) + 1)
 * (cross-mesh paper, 4); interleaved min(MV, warm-up + 1) chunk-microbatches (Megatron's
 * warm-up); weight delay adds the r postponed W's (at most MV in all). */
static int expected_in_flight(const MdlStrategy *s, int r) {
  int P = mdl_strategy_num_ranks(s), M = s->num_microbatches, V = s->virtual_stages;
  int total = M * V, units;
  if (s->schedule == MDL_SCHEDULE_GPIPE) units = M;
  else if (s->schedule == MDL_SCHEDULE_EAGER_1F1B) units = MIN(M, 2 * (P - r - 1) + 1);
  else if (s->schedule == MDL_SCHEDULE_INTERLEAVED)
    units = MIN(total, (M == P ? total : MIN(total, 2 * (P - r - 1) + (V - 1) * P)) + 1);
  else units = MIN(M, P - r);
  return s->weight_delay ? MIN(total, units + r) : units;
}

/* Executes all ranks' programs at the unit level (each rank in its order; F(c, m) after
 * F(c-1, m); B(c, m) after B(c+1, m), the last chunk's after its F; W after B); TRUE when every
 * unit runs, i.e. the programs cannot deadlock. */
static gboolean programs_complete(const MdlStrategy *s) {
  int P = mdl_strategy_num_ranks(s), C = s->num_stages, M = s->num_microbatches;
  g_autofree gboolean *done = g_new0(gboolean, 3 * C * M);
#define DONE(ph, c, m) done[((ph) * C + (c)) * M + (m)]
  SimUnit **units = g_new(SimUnit *, P);
  int *n = g_new(int, P), *next = g_new0(int, P);
  for (int r = 0; r < P; r++) units[r] = sim_pipeline_units(s, r, &n[r]);
  gboolean progress = TRUE;
  while (progress) {
    progress = FALSE;
    for (int r = 0; r < P; r++) {
      while (next[r] < n[r]) {
        SimUnit u = units[r][next[r]];
        gboolean ready;
        if (u.phase == SIM_UNIT_FORWARD) ready = u.chunk == 0 || DONE(0, u.chunk - 1, u.microbatch);
        else if (u.phase == SIM_UNIT_BACKWARD)
          ready = u.chunk == C - 1 ? DONE(0, u.chunk, u.microbatch)
                                   : DONE(1, u.chunk + 1, u.microbatch);
        else ready = DONE(1, u.chunk, u.microbatch);
        if (!ready) break;
        DONE(u.phase, u.chunk, u.microbatch) = TRUE;
        next[r]++;
        progress = TRUE;
      }
    }
  }
  gboolean all = TRUE;
  for (int r = 0; r < P; r++) {
    all = all && next[r] == n[r];
    g_free(units[r]);
  }
#undef DONE
  g_free(units);
  g_free(n);
  g_free(next);
  return all;
}

/* Every rank's program holds each (phase, chunk, microbatch) of its chunks exactly once, F
 * before B before W; together the programs run to completion; the peak of activation sets
 * held equals the closed form. */
static void check_programs(const MdlStrategy *s) {
  int P = mdl_strategy_num_ranks(s), C = s->num_stages, M = s->num_microbatches;
  int phases = s->weight_delay ? 3 : 2;
  for (int r = 0; r < P; r++) {
    int n = 0;
    g_autofree SimUnit *units = sim_pipeline_units(s, r, &n);
    g_autofree int *pos = g_new(int, 3 * C * M);
    for (int i = 0; i < 3 * C * M; i++) pos[i] = -1;
    for (int i = 0; i < n; i++) {
      const SimUnit *u = &units[i];
      g_assert_cmpint(u->phase, <, phases);
      g_assert_cmpint(u->chunk % P, ==, r);
      g_assert_cmpint(u->microbatch, >=, 0);
      g_assert_cmpint(u->microbatch, <, M);
      int k = (u->phase * C + u->chunk) * M + u->microbatch;
      if (pos[k] >= 0) g_error("rank %d: unit %d repeated", r, i);
      pos[k] = i;
    }
    g_assert_cmpint(n, ==, phases * s->virtual_stages * M);
    for (int c = r; c < C; c += P)
      for (int m = 0; m < M; m++)
        for (int ph = 1; ph < phases; ph++)
          g_assert_cmpint(pos[(ph * C + c) * M + m], >, pos[((ph - 1) * C + c) * M + m]);
    int peak = sim_pipeline_peak_in_flight(units, n);
    if (peak != expected_in_flight(s, r))
      g_error("%s P=%d V=%d M=%d wdelay=%d rank %d: %d in flight, expected %d",
              mdl_schedule_name(s->schedule), P, s->virtual_stages, M, s->weight_delay, r, peak,
              expected_in_flight(s, r));
  }
  g_assert_true(programs_complete(s));
}

static void test_programs(void) {
  int checked = 0;
  for (int sched = 0; sched < MDL_SCHEDULE_COUNT; sched++)
    for (int P = 1; P <= 5; P++)
      for (int M = 1; M <= 12; M++)
        for (int V = 1; V <= 3; V++)
          for (int wdelay = 0; wdelay <= 1; wdelay++) {
            gboolean interleaved = sched == MDL_SCHEDULE_INTERLEAVED;
            if (interleaved != (V > 1)) continue;
            if (interleaved && (P < 2 || M % P != 0)) continue; /* what validation allows */
            MdlStrategy s = pipeline_shape((MdlSchedule)sched, P, V, M, wdelay);
            check_programs(&s);
            checked++;
          }
  g_assert_cmpint(checked, >, 300);
}

/* --- whole iterations on equal stages --- */

typedef struct {
  DevCluster *cluster;
  MdlGraph *graph;
  MdlStrategy *strategy;
  SimRun *run;
  SimTime tf, tb, tw;  /* one chunk's forward, backward (or B) and W, per microbatch */
} Pipe;

/* A chain of @layers equal dense layers on P GPUs of one host, pp = P, dp = tp = 1, microbatches
 * of 8 samples, optimizer free. Communication is free (zero latency, infinite bandwidth, set
 * in the struct as check_bubble in test-sim.c does) unless @send_latency_us > 0. With
 * @all_grads the data input is marked as needing a gradient, so that the first layer, like
 * the others, has a dX and a dW kernel (a matmul on data runs only its dW kernel: its stage
 * would differ by a kernel's launch overhead and quantization). */
static void pipe_run(Pipe *p, MdlSchedule schedule, int P, int V, int M, gboolean wdelay,
                     int layers, gboolean all_grads, double send_latency_us) {
  memset(p, 0, sizeof *p);
  p->cluster = test_cluster(1, P, 1e6, send_latency_us, 8e6, send_latency_us);
  p->cluster->link[DEV_LINK_INTRA].bandwidth = INFINITY;
  p->cluster->link[DEV_LINK_INTER].bandwidth = INFINITY;
  p->graph = test_chain_graph(layers, 8192, 8 * M);
  if (all_grads) mdl_graph_tensor(p->graph, 0)->is_input = FALSE;
  MdlMegatronConfig cfg = {.tp = 1, .pp = P, .dp = 1, .microbatch_size = 8, .schedule = schedule,
                           .virtual_stages = V, .weight_delay = wdelay, .dtype = DEV_DTYPE_FP16};
  GError *error = NULL;
  p->strategy = test_no_host(mdl_strategy_megatron(p->graph, p->cluster, &cfg, &error));
  g_assert_no_error(error);
  g_assert_cmpint(p->strategy->num_microbatches, ==, M);
  CmParams params;
  cm_params_default(&params);
  params.optimizer_bytes_per_param = 0;
  /* The stated flat GEMM efficiency, not the device kind's figures: on A100 a weight-gradient
   * GEMM over this chain's 8 tokens writes its 8192 x 8192 output after its (tiny) main loop
   * (cm_gemm_exposed_bytes), so tw would exceed tf and tb and leave the ZB-H1 form below. */
  params.gemm_by_device = FALSE;
  p->run = sim_run_new(p->graph, p->strategy, p->cluster, &params, &error);
  g_assert_no_error(error);
  /* Equal stages: every op's F, B and W take the same time. */
  SimTime per_op[SIM_TASK_KIND_COUNT] = {0};
  for (uint32_t i = 0; i < sim_run_num_tasks(p->run); i++) {
    SimTaskInfo t_info;
    sim_run_task(p->run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind != SIM_TASK_FORWARD && t->kind != SIM_TASK_BACKWARD &&
        t->kind != SIM_TASK_BACKWARD_WEIGHT)
      continue;
    if (per_op[t->kind] == 0) per_op[t->kind] = t->duration;
    g_assert_cmpuint(t->duration, ==, per_op[t->kind]);
  }
  int per_chunk = layers / (P * V);
  p->tf = per_op[SIM_TASK_FORWARD] * per_chunk;
  p->tb = per_op[SIM_TASK_BACKWARD] * per_chunk;
  p->tw = per_op[SIM_TASK_BACKWARD_WEIGHT] * per_chunk;
  g_assert_cmpuint(p->tf, >, 0);
  g_assert_cmpuint(p->tb, >, 0);
  g_assert_true(wdelay ? p->tw > 0 : p->tw == 0);
}

static void pipe_clear(Pipe *p) {
  sim_run_free(p->run);
  mdl_strategy_free(p->strategy);
  mdl_graph_free(p->graph);
  dev_cluster_free(p->cluster);
}

/* The makespan is @expected exactly (integer picoseconds: equal durations add up exactly),
 * and the reported bubble is the makespan minus each GPU's work M V (tf + tb + tw). */
static void assert_makespan(const Pipe *p, SimTime expected) {
  SimTime makespan = sim_schedule_makespan(sim_run_schedule(p->run));
  if (makespan != expected)
    g_error("%s P=%d V=%d M=%d wdelay=%d: makespan %" G_GUINT64_FORMAT " ps, closed form %"
            G_GUINT64_FORMAT " ps", mdl_schedule_name(p->strategy->schedule),
            mdl_strategy_num_ranks(p->strategy), p->strategy->virtual_stages,
            p->strategy->num_microbatches, p->strategy->weight_delay, makespan, expected);
  SimTime work = (SimTime)p->strategy->num_microbatches * p->strategy->virtual_stages *
                 (p->tf + p->tb + p->tw);
  g_assert_cmpfloat_with_epsilon(sim_run_prediction(p->run)->bubble_s, sim_time_seconds(expected - work),
                                 1e-12);
  g_assert_cmpfloat(sim_run_prediction(p->run)->comm_exposed_s, ==, 0.0);
}

/* Interleaved 1F1B (Narayanan et al. 2021, section 2.2): with chunk times tf, tb (a stage's
 * over V), the iteration takes (M V + P - 1)(tf + tb): the bubble (P - 1)(tf + tb) is the
 * non-interleaved (P - 1)(tF + tB) divided by V, a bubble fraction of (P - 1)/(V M + P - 1).
 * Checked exactly, and against 1F1B on the same model and GPUs: bubble ratio exactly V. */
static void check_interleaved(int P, int V, int M) {
  Pipe in, plain;
  pipe_run(&in, MDL_SCHEDULE_INTERLEAVED, P, V, M, FALSE, P * V, TRUE, 0);
  assert_makespan(&in, ((SimTime)M * V + P - 1) * (in.tf + in.tb));
  const SimPrediction *pr = sim_run_prediction(in.run);
  g_assert_cmpfloat_with_epsilon(pr->bubble_s / pr->iteration_time_s,
                                 (P - 1.0) / (V * M + P - 1.0), 1e-12);
  pipe_run(&plain, MDL_SCHEDULE_1F1B, P, 1, M, FALSE, P * V, TRUE, 0);
  SimTime bubble_in = sim_schedule_makespan(sim_run_schedule(in.run)) - (SimTime)M * V * (in.tf + in.tb);
  SimTime bubble_plain = sim_schedule_makespan(sim_run_schedule(plain.run)) - (SimTime)M * (plain.tf + plain.tb);
  g_assert_cmpuint(bubble_plain, ==, (SimTime)V * bubble_in);
  pipe_clear(&in);
  pipe_clear(&plain);
}

static void test_interleaved_bubble(void) {
  check_interleaved(4, 2, 8);
  check_interleaved(4, 2, 4);  /* M == P: all forwards first, same closed form */
  check_interleaved(2, 3, 4);
  check_interleaved(4, 3, 12);
}

/* Eager-1F1B with free communication: "when there is no communication cost, the latencies of
 * these two schedules are the same" (cross-mesh paper, section 4): (M + P - 1)(tF + tB). */
static void check_eager(int P, int M) {
  Pipe p;
  pipe_run(&p, MDL_SCHEDULE_EAGER_1F1B, P, 1, M, FALSE, P, TRUE, 0);
  assert_makespan(&p, ((SimTime)M + P - 1) * (p.tf + p.tb));
  pipe_clear(&p);
}

static void test_eager_bubble(void) {
  check_eager(4, 8);
  check_eager(3, 5);
  check_eager(4, 2);
}

/* With a stage-to-stage transfer that costs something, eager-1F1B hides what 1F1B exposes
 * (cross-mesh paper, section 4, Fig. 4): strictly shorter iterations, same compute. */
static void test_eager_overlaps_sends(void) {
  const int P = 4, M = 8;
  Pipe eager, plain;
  pipe_run(&eager, MDL_SCHEDULE_EAGER_1F1B, P, 1, M, FALSE, P, TRUE, 20);
  pipe_run(&plain, MDL_SCHEDULE_1F1B, P, 1, M, FALSE, P, TRUE, 20);
  g_test_message("1f1b %.6g s, eager-1f1b %.6g s", sim_run_prediction(plain.run)->iteration_time_s,
                 sim_run_prediction(eager.run)->iteration_time_s);
  g_assert_cmpuint(sim_schedule_makespan(sim_run_schedule(eager.run)), <, sim_schedule_makespan(sim_run_schedule(plain.run)));
  g_assert_cmpfloat(sim_run_prediction(eager.run)->compute_s, ==, sim_run_prediction(plain.run)->compute_s);
  pipe_clear(&eager);
  pipe_clear(&plain);
}

/* Backward weight delaying on equal stages with free communication, F, B, W of one chunk tf,
 * tb, tw. The split alone lets dX leave a stage tw earlier, so each of the P - 1 drain hops
 * costs tb instead of tb + tw; the ZB-H1 placement (Qi et al. 2024, section 3.1) also fills
 * the drain with the postponed W's:
 *   1F1B, eager-1F1B:            M (tf + tb + tw) + (P - 1)(tf + tb - tw)   [ZB-H1's bubble,
 *                                for tw <= min(tf, tb); here tf = tb = tw]
 *   interleaved, M > P:          M V (tf + tb + tw) + (P - 1)(tf + tb - tw)
 *   GPipe (and interleaved M=P): M V (tf + tb + tw) + (P - 1)(tf + tb)
 * against (P - 1)(tf + tb + tw) without the delay: strictly less whenever P > 1. */
static void check_weight_delay(MdlSchedule schedule, int P, int V, int M) {
  Pipe d, base;
  pipe_run(&d, schedule, P, V, M, TRUE, P * V, TRUE, 0);
  g_assert_cmpuint(d.tw, <=, MIN(d.tf, d.tb)); /* where the ZB-H1 form holds */
  SimTime work = (SimTime)M * V * (d.tf + d.tb + d.tw);
  gboolean all_forwards_first = schedule == MDL_SCHEDULE_GPIPE ||
                                (schedule == MDL_SCHEDULE_INTERLEAVED && M == P);
  SimTime bubble = all_forwards_first ? (SimTime)(P - 1) * (d.tf + d.tb)
                                      : (SimTime)(P - 1) * (d.tf + d.tb - d.tw);
  assert_makespan(&d, work + bubble);
  pipe_run(&base, schedule, P, V, M, FALSE, P * V, TRUE, 0);
  g_assert_cmpuint(sim_schedule_makespan(sim_run_schedule(base.run)), ==,
                   (SimTime)M * V * (base.tf + base.tb) + (P - 1) * (base.tf + base.tb));
  if (P > 1) g_assert_cmpfloat(sim_run_prediction(d.run)->bubble_s, <, sim_run_prediction(base.run)->bubble_s);
  pipe_clear(&d);
  pipe_clear(&base);
}

static void test_weight_delay_bubble(void) {
  check_weight_delay(MDL_SCHEDULE_1F1B, 4, 1, 8);
  check_weight_delay(MDL_SCHEDULE_1F1B, 3, 1, 5);
  check_weight_delay(MDL_SCHEDULE_1F1B, 4, 1, 4);
  check_weight_delay(MDL_SCHEDULE_EAGER_1F1B, 4, 1, 8);
  check_weight_delay(MDL_SCHEDULE_GPIPE, 4, 1, 8);
  check_weight_delay(MDL_SCHEDULE_INTERLEAVED, 4, 2, 8);
  check_weight_delay(MDL_SCHEDULE_INTERLEAVED, 2, 2, 2);
  check_weight_delay(MDL_SCHEDULE_1F1B, 1, 1, 3);
}

/* The cost model's activations on rank r's GPU are one microbatch's saved layer input (one
 * layer per chunk, each chunk 1/V of the rank's activations) times the closed form above. */
static void test_memory_in_flight(void) {
  struct { MdlSchedule schedule; int P, V, M; gboolean wdelay; } cases[] = {
      {MDL_SCHEDULE_GPIPE, 4, 1, 8, FALSE},       {MDL_SCHEDULE_1F1B, 4, 1, 8, FALSE},
      {MDL_SCHEDULE_1F1B, 4, 1, 2, FALSE},        {MDL_SCHEDULE_EAGER_1F1B, 4, 1, 8, FALSE},
      {MDL_SCHEDULE_EAGER_1F1B, 4, 1, 3, FALSE},  {MDL_SCHEDULE_INTERLEAVED, 4, 2, 8, FALSE},
      {MDL_SCHEDULE_INTERLEAVED, 4, 2, 4, FALSE}, {MDL_SCHEDULE_INTERLEAVED, 2, 3, 6, FALSE},
      {MDL_SCHEDULE_1F1B, 4, 1, 8, TRUE},         {MDL_SCHEDULE_EAGER_1F1B, 4, 1, 8, TRUE},
      {MDL_SCHEDULE_INTERLEAVED, 4, 2, 8, TRUE},  {MDL_SCHEDULE_GPIPE, 3, 1, 4, TRUE},
  };
  for (gsize k = 0; k < G_N_ELEMENTS(cases); k++) {
    int P = cases[k].P, V = cases[k].V, M = cases[k].M;
    DevCluster *c = test_cluster(1, P, 100, 1, 100, 1);
    MdlGraph *g = test_chain_graph(P * V, 1024, 8 * M);
    MdlMegatronConfig cfg = {.tp = 1, .pp = P, .dp = 1, .microbatch_size = 8,
                             .schedule = cases[k].schedule, .virtual_stages = V,
                             .weight_delay = cases[k].wdelay, .dtype = DEV_DTYPE_FP16};
    GError *error = NULL;
    MdlStrategy *s = test_no_host(mdl_strategy_megatron(g, c, &cfg, &error));
    g_assert_no_error(error);
    g_autofree CmMemory *mem = cm_memory_per_device(g, s, c);
    double per_layer = 8.0 * 1024 * 2; /* one microbatch's [8, 1024] fp16 input */
    for (int r = 0; r < P; r++) {
      double expected = per_layer * expected_in_flight(s, r);
      if (fabs(mem[r].activations - expected) > 1e-9 * expected)
        g_error("%s P=%d V=%d M=%d wdelay=%d rank %d: activations %.0f, expected %.0f",
                mdl_schedule_name(s->schedule), P, V, M, s->weight_delay, r, mem[r].activations,
                expected);
    }
    mdl_strategy_free(s);
    mdl_graph_free(g);
    dev_cluster_free(c);
  }
}

/* Under weight delay the gradient all-reduce of a weight waits for the last W of its ops in
 * program order; on rank 1 that is microbatch 0's W, postponed to the end. */
static void test_grad_sync_after_weight_grads(void) {
  DevCluster *c = test_cluster(1, 4, 100, 2, 100, 5);
  MdlGraph *g = test_chain_graph(4, 1024, 64);
  GError *error = NULL;
  /* bucket_mb=0: one all-reduce per weight, so each sync can be matched with its op's W. */
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec("megatron:pp=2,dp=2,mb=8,wdelay=1,bucket_mb=0", g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimRun *run = sim_run_new(g, s, c, &params, &error);
  g_assert_no_error(error);
  uint32_t n = sim_run_num_tasks(run);
  int syncs = 0;
  SimTime w0_end = 0, wlast_end = 0;
  SimTaskInfo t_info, w_info;
  for (uint32_t i = 0; i < n; i++) {
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind == SIM_TASK_BACKWARD_WEIGHT && s->configs[t->op].stage == 1) {
      if (t->microbatch == 0) w0_end = MAX(w0_end, t->end);
      if (t->microbatch == s->num_microbatches - 1) wlast_end = MAX(wlast_end, t->end);
    }
    if (t->kind != SIM_TASK_GRAD_SYNC) continue;
    syncs++;
    for (uint32_t j = 0; j < n; j++) {
      sim_run_task(run, j, &w_info);
      const SimTaskInfo *w = &w_info;
      if (w->kind == SIM_TASK_BACKWARD_WEIGHT && w->op == t->op)
        g_assert_cmpuint(t->start, >=, w->end);
    }
  }
  g_assert_cmpint(syncs, ==, 4);
  g_assert_cmpuint(w0_end, >, wlast_end); /* the case the rule is for */
  sim_run_free(run);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* Symmetry folds the data-parallel replicas of an interleaved, weight-delayed pipeline and
 * still gives the expanded graph's timeline end. */
static void test_symmetry_interleaved(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=8,hidden=512,heads=8,seq=128,vocab=1000,batch=16",
                                     &error);
  g_assert_no_error(error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec(
      "megatron:tp=2,pp=2,dp=2,mb=2,schedule=interleaved,vp=2,wdelay=1", g, c, &error));
  g_assert_no_error(error);
  CmParams params;
  cm_params_default(&params);
  SimOptions folded = {.no_symmetry = FALSE}, expanded = {.no_symmetry = TRUE};
  SimTaskGraph *a = sim_build_with_options(g, s, c, &params, &folded, &error);
  SimTaskGraph *b = sim_build_with_options(g, s, c, &params, &expanded, &error);
  g_assert_no_error(error);
  SimSchedule *sa = sim_engine_run(a, &error), *sb = sim_engine_run(b, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(sim_schedule_makespan(sa), ==, sim_schedule_makespan(sb));
  g_assert_cmpuint(sim_task_graph_size(a), <, sim_task_graph_size(b));
  sim_schedule_free(sa);
  sim_schedule_free(sb);
  sim_task_graph_free(a);
  sim_task_graph_free(b);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* --- the trace shows the schedule --- */

typedef struct {
  double ts;
  char *label;  /* the name up to the op: "F3.c5" */
  char *cat;
} Slice;

static gint slice_cmp(gconstpointer a, gconstpointer b) {
  const Slice *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void slice_clear(gpointer data) {
  Slice *s = data;
  g_free(s->label);
  g_free(s->cat);
}

/* One op per chunk, so each unit is one compute slice: reading GPU r's compute row left to
 * right must spell rank r's program, with each slice's category its phase. */
static void test_trace_spells_program(void) {
  const int P = 2, V = 2, M = 4;
  Pipe p;
  pipe_run(&p, MDL_SCHEDULE_INTERLEAVED, P, V, M, TRUE, P * V, TRUE, 0);
  g_autofree char *path = g_build_filename(tmpdir, "interleaved.trace.json", NULL);
  GError *error = NULL;
  g_assert_true(sim_trace_write(p.run, path, &error));
  g_assert_no_error(error);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  cJSON *root = cJSON_Parse(text);
  g_assert_nonnull(root);
  for (int r = 0; r < P; r++) {
    GArray *slices = g_array_new(FALSE, FALSE, sizeof(Slice));
    g_array_set_clear_func(slices, slice_clear);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "traceEvents")) {
      if (g_strcmp0(cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph")), "X") != 0) continue;
      if (cJSON_GetObjectItem(e, "pid")->valueint != r) continue;
      if (cJSON_GetObjectItem(e, "tid")->valueint != 0) continue;
      const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
      const char *cat = cJSON_GetStringValue(cJSON_GetObjectItem(e, "cat"));
      if (g_strcmp0(cat, "optimizer") == 0) continue;
      const char *space = strchr(name, ' ');
      g_assert_nonnull(space);
      Slice s = {cJSON_GetObjectItem(e, "ts")->valuedouble, g_strndup(name, (gsize)(space - name)),
                 g_strdup(cat)};
      g_array_append_val(slices, s);
    }
    g_array_sort(slices, slice_cmp);
    GString *spelled = g_string_new(NULL);
    for (guint i = 0; i < slices->len; i++) {
      const Slice *s = &g_array_index(slices, Slice, i);
      g_string_append_printf(spelled, "%s%s", i ? " " : "", s->label);
      const char *want = s->label[0] == 'F' ? "forward" : s->label[0] == 'B' ? "backward"
                                                                              : "backward_weight";
      g_assert_cmpstr(s->cat, ==, want);
    }
    g_autofree char *program = rank_program(p.strategy, r);
    g_assert_cmpstr(spelled->str, ==, program);
    g_string_free(spelled, TRUE);
    g_array_unref(slices);
  }
  cJSON_Delete(root);
  pipe_clear(&p);
}

/* --- strategy JSON and spec errors --- */

static void test_json_round_trip(void) {
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  MdlGraph *g = mdl_graph_parse_spec("gpt:layers=8,hidden=256,heads=4,seq=64,vocab=100,batch=16",
                                     &error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec(
      "megatron:tp=2,pp=4,dp=1,mb=1,schedule=interleaved,vp=2,wdelay=1", g, c, &error));
  g_assert_no_error(error);
  g_assert_cmpint(s->num_stages, ==, 8);
  g_assert_cmpint(s->virtual_stages, ==, 2);
  g_assert_cmpint(s->vp, ==, 2);
  g_assert_cmpint(s->meshes->len, ==, 4); /* one mesh per rank, shared by its two chunks */
  g_autofree char *json = mdl_strategy_to_json(s, g);
  MdlStrategy *back = test_no_host(mdl_strategy_from_json(json, "rt.json", g, c, &error));
  g_assert_no_error(error);
  g_assert_cmpint(back->virtual_stages, ==, 2);
  g_assert_true(back->weight_delay);
  g_assert_cmpint(back->schedule, ==, MDL_SCHEDULE_INTERLEAVED);
  g_assert_cmpint(back->num_stages, ==, 8);
  for (int o = 0; o < s->num_ops; o++) {
    g_assert_cmpint(back->configs[o].stage, ==, s->configs[o].stage);
    g_assert_cmpint(back->configs[o].mesh, ==, s->configs[o].mesh);
    g_assert_cmpint(back->configs[o].mesh, ==, s->configs[o].stage % 4);
  }
  mdl_strategy_free(back);
  /* The same file with its virtual stages under 1F1B is refused. */
  g_autofree char *bad = g_strdup(json);
  char *at = strstr(bad, "\"interleaved\"");
  g_assert_nonnull(at);
  memcpy(at, "\"1f1b\"       ", strlen("\"interleaved\""));
  back = test_no_host(mdl_strategy_from_json(bad, "bad.json", g, c, &error));
  g_assert_null(back);
  g_assert_error(error, MDL_ERROR, MDL_ERROR_STRATEGY);
  g_assert_nonnull(strstr(error->message, "vp=2"));
  g_clear_error(&error);
  mdl_strategy_free(s);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

typedef struct {
  const char *model;
  const char *spec;
  int code;
  const char *needle;
} SpecError;

#define GPT12 "gpt:layers=12,hidden=256,heads=4,seq=64,vocab=100,batch=24"
#define GPT8 "gpt:layers=8,hidden=256,heads=4,seq=64,vocab=100,batch=12"
static const SpecError spec_errors[] = {
    {GPT12, "megatron:pp=2,vp=2", MDL_ERROR_STRATEGY, "vp=2 needs schedule=interleaved"},
    {GPT12, "megatron:pp=4,vp=2,schedule=interleaved", MDL_ERROR_STRATEGY, "4*2 = 8 does not divide the model's 12 layers"},
    {GPT12, "megatron:pp=2,schedule=interleaved", MDL_ERROR_STRATEGY, "vp >= 2"},
    {GPT8, "megatron:pp=4,dp=2,vp=2,schedule=interleaved", MDL_ERROR_STRATEGY, "6 microbatches are not a multiple of pp=4"},
    {GPT12, "megatron:pp=2,schedule=zigzag", MDL_ERROR_PARSE, "zigzag"},
    {GPT12, "megatron:pp=2,wdelay=2", MDL_ERROR_PARSE, "wdelay=2"},
    {GPT12, "megatron:pp=2,vp=0,schedule=interleaved", MDL_ERROR_PARSE, "vp=0"},
};

static void test_spec_error(gconstpointer data) {
  const SpecError *e = data;
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec("dgx-a100", &error);
  MdlGraph *g = mdl_graph_parse_spec(e->model, &error);
  g_assert_no_error(error);
  MdlStrategy *s = test_no_host(mdl_strategy_parse_spec(e->spec, g, c, &error));
  g_assert_null(s);
  g_assert_error(error, MDL_ERROR, e->code);
  if (!strstr(error->message, e->needle))
    g_error("'%s': error '%s' does not say '%s'", e->spec, error->message, e->needle);
  g_assert_null(strchr(error->message, '\n'));
  g_error_free(error);
  mdl_graph_free(g);
  dev_cluster_free(c);
}

/* The CLI turns them into exit status 2 and one line on stderr naming the value. */
static void test_cli_errors(void) {
  static const char *const cases[][2] = {
      {"--strategy megatron:pp=2,vp=2", "vp=2"},
      {"--strategy megatron:pp=4,vp=2,schedule=interleaved", "12 layers"},
      {"--strategy megatron:pp=2,schedule=roundrobin", "roundrobin"},
  };
  for (gsize k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *cmd = g_strdup_printf("%s simulate --model " GPT12 " --cluster dgx-a100 %s "
                                           "--db cli.db", STRATSIM_BIN, cases[k][0]);
    g_auto(GStrv) argv = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int status = 0;
    GError *error = NULL;
    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, &error));
    g_assert_true(g_spawn_sync(tmpdir, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                               &status, &error));
    g_assert_no_error(error);
    g_assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 2) g_error("'%s' exited %d: %s", cmd, WEXITSTATUS(status), err);
    int lines = 0;
    for (const char *q = err; *q; q++) lines += *q == '\n';
    if (lines != 1 || !strstr(err, cases[k][1]))
      g_error("'%s': want one line naming '%s', got: %s", cmd, cases[k][1], err);
  }
}

static void remove_tmpdir(void) {
  g_autoptr(GDir) dir = g_dir_open(tmpdir, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name(dir))) {
    g_autofree char *path = g_build_filename(tmpdir, name, NULL);
    g_remove(path);
  }
  g_rmdir(tmpdir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  GError *error = NULL;
  tmpdir = g_dir_make_tmp("stratsim-schedule-XXXXXX", &error);
  g_assert_no_error(error);
  for (gsize i = 0; i < G_N_ELEMENTS(order_cases); i++) {
    g_autofree char *path = g_strdup_printf("/sim/schedule/order/%s", order_cases[i].name);
    g_test_add_data_func(path, &order_cases[i], test_order);
  }
  g_test_add_func("/sim/schedule/programs", test_programs);
  g_test_add_func("/sim/schedule/interleaved-bubble", test_interleaved_bubble);
  g_test_add_func("/sim/schedule/eager-bubble", test_eager_bubble);
  g_test_add_func("/sim/schedule/eager-overlaps-sends", test_eager_overlaps_sends);
  g_test_add_func("/sim/schedule/weight-delay-bubble", test_weight_delay_bubble);
  g_test_add_func("/sim/schedule/memory-in-flight", test_memory_in_flight);
  g_test_add_func("/sim/schedule/grad-sync-after-weight-grads", test_grad_sync_after_weight_grads);
  g_test_add_func("/sim/schedule/symmetry-interleaved", test_symmetry_interleaved);
  g_test_add_func("/sim/schedule/trace-spells-program", test_trace_spells_program);
  g_test_add_func("/sim/schedule/json-round-trip", test_json_round_trip);
  for (gsize i = 0; i < G_N_ELEMENTS(spec_errors); i++) {
    g_autofree char *path = g_strdup_printf("/sim/schedule/spec-error/%zu", i);
    g_test_add_data_func(path, &spec_errors[i], test_spec_error);
  }
  g_test_add_func("/sim/schedule/cli-errors", test_cli_errors);
  int status = g_test_run();
  remove_tmpdir();
  return status;
}
