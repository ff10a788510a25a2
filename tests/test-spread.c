/* The protocols of a search spread over ranks and of a sweep shared by ranks (search/
 * srch_comm.h, srch_result_gather; scenarios/scn_sweep.h, scn_sweep_gather), run in one
 * process over a fake communicator: rank 0 of 2 whose peer's contributions are made in the
 * test. (tests/test-search-mpi.c and test-sweep-mpi.c run them over real mpirun ranks where
 * MPI is built.) */
#include <cjson/cJSON.h>
#include <glib.h>
#include <string.h>

#include "scenarios/scn_sweep.h"
#include "search/srch_search.h"
#include "session/ses_session.h"

/* Rank 0 of 2: rank 1 sent @peer; its numbers equal @peer_value in every reduction. */
typedef struct {
  const char *peer;
  double peer_value;
  int gathers;
} Fake;

static void fake_barrier(gpointer data) { (void)data; }

static char **fake_gather(gpointer data, const char *mine) {
  Fake *f = data;
  f->gathers++;
  char **out = g_new0(char *, 3);
  out[0] = g_strdup(mine);
  out[1] = g_strdup(f->peer);
  return out;
}

static void fake_free(gpointer data, char **strings) {
  (void)data;
  if (!strings) return;
  g_free(strings[0]);
  g_free(strings[1]);
  g_free(strings);
}

static double fake_sum(gpointer data, double value) { return value + ((Fake *)data)->peer_value; }
static double fake_max(gpointer data, double value) { return MAX(value, ((Fake *)data)->peer_value); }

static SrchComm fake_comm(Fake *f) {
  return (SrchComm){.rank = 0, .size = 2, .data = f, .barrier = fake_barrier,
                    .gather_strings = fake_gather, .strings_free = fake_free,
                    .allreduce_sum = fake_sum, .allreduce_max = fake_max};
}

static char *member_text(const char *json, const char *key) {
  cJSON *root = cJSON_Parse(json);
  g_assert_nonnull(root);
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, key));
  char *out = g_strdup(text);
  cJSON_free(text);
  cJSON_Delete(root);
  return out;
}

/* Rank 0's share merged with rank 1's, gathered through the protocol, is the search of one
 * process with 2 threads (the same global workers). */
static void test_search_gather(void) {
  GError *error = NULL;
  SesSpecs specs = {.model = "mlp", .cluster = "dgx-a100"};
  SesSession *s = ses_session_new_from_specs(&specs, &error);
  g_assert_no_error(error);
  const MdlGraph *g = ses_session_graph(s);
  const DevCluster *c = ses_session_cluster(s);
  SrchOptions o;
  srch_options_default(&o);
  o.algo = SRCH_ALGO_MCMC;
  o.budget.evaluations = 60;
  o.seed = 5;
  o.nranks = 2;
  o.rank = 1;
  SrchResult *peer = srch_run(g, c, ses_session_params(s), &o, &error);
  g_assert_no_error(error);
  g_autofree char *peer_text = srch_result_serialize(peer, g);
  o.rank = 0;
  SrchResult *mine = srch_run(g, c, ses_session_params(s), &o, &error);
  g_assert_no_error(error);
  Fake f = {.peer = peer_text};
  SrchComm comm = fake_comm(&f);
  g_assert_true(srch_result_gather(mine, g, c, &comm, &error));
  g_assert_no_error(error);
  g_assert_cmpint(f.gathers, ==, 1);
  SrchOptions one = o;
  one.rank = 0;
  one.nranks = 1;
  one.threads = 2;
  SrchResult *whole = srch_run(g, c, ses_session_params(s), &one, &error);
  g_assert_no_error(error);
  g_autofree char *a = srch_result_to_json(mine, &o, g, c);
  g_autofree char *b = srch_result_to_json(whole, &one, g, c);
  /* "baselines" too: two Megatron grid points tie on this model (gpipe and 1f1b at the same
   * time), and the merge breaks exact ties as one process does. */
  const char *keys[] = {"search", "best", "baselines", "convergence"};
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *x = member_text(a, keys[i]), *y = member_text(b, keys[i]);
    g_assert_cmpstr(x, ==, y);
  }
  /* A peer that failed (sent nothing): the merge fails on rank 0. */
  Fake failed = {.peer = NULL};
  SrchComm bad = fake_comm(&failed);
  g_assert_false(srch_result_gather(whole, g, c, &bad, &error));
  g_assert_error(error, SRCH_ERROR, SRCH_ERROR_FAILED);
  g_clear_error(&error);
  /* One process: nothing to gather. */
  SrchComm single;
  srch_comm_single(&single);
  g_assert_true(srch_result_gather(whole, g, c, &single, &error));
  g_assert_false(srch_result_gather(NULL, NULL, NULL, &single, &error));
  g_assert_no_error(error);
  srch_result_free(whole);
  srch_result_free(mine);
  srch_result_free(peer);
  ses_session_free(s);
}

/* The sweep's counts summed over the ranks, the longest time, one line per rank on rank 0. */
static void test_sweep_gather(void) {
  Fake f = {.peer = "  rank 1 on elsewhere: 3 points simulated (1 failed or do not fit), 2.0 s",
            .peer_value = 3};
  SrchComm comm = fake_comm(&f);
  ScnSweepSummary sum = {.points = 10, .ran = 4, .errors = 0, .left = 1};
  double elapsed = 1.5;
  char **lines = NULL;
  scn_sweep_gather(&comm, &sum, &elapsed, &lines);
  g_assert_cmpuint(sum.ran, ==, 7);
  g_assert_cmpuint(sum.errors, ==, 3);
  g_assert_cmpuint(sum.stored_before, ==, 10 - 7 - 1);
  g_assert_cmpfloat(elapsed, ==, 3);
  g_assert_nonnull(lines);
  g_assert_true(g_str_has_prefix(lines[0], "  rank 0 on "));
  g_assert_nonnull(strstr(lines[0], "4 points simulated (0 failed"));
  g_assert_cmpstr(lines[1], ==, f.peer);
  comm.strings_free(comm.data, lines);
  g_assert_true(scn_sweep_all_ok(&comm, TRUE) == FALSE); /* the peer's 3 is "not ok" */
  ScnSweepOptions options = {0};
  scn_sweep_share(&options, &comm);
  g_assert_cmpint(options.share_rank, ==, 0);
  g_assert_cmpint(options.share_size, ==, 2);
  g_assert_nonnull(options.planned);
  SrchComm single;
  srch_comm_single(&single);
  ScnSweepOptions alone = {0};
  scn_sweep_share(&alone, &single);
  g_assert_cmpint(alone.share_size, ==, 0);
  g_assert_true(scn_sweep_all_ok(&single, TRUE));
  g_assert_false(scn_sweep_all_ok(&single, FALSE));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/spread/search-gather", test_search_gather);
  g_test_add_func("/spread/sweep-gather", test_sweep_gather);
  return g_test_run();
}
