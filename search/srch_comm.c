/* search/comm — the one-process communicator (srch_comm.h). */
#include "search/srch_comm.h"

static void single_barrier(gpointer data) { (void)data; }

static char **single_gather(gpointer data, const char *mine) {
  (void)data;
  char **out = g_new0(char *, 2);
  out[0] = g_strdup(mine);
  return out;
}

static void single_free(gpointer data, char **strings) {
  (void)data;
  if (!strings) return;
  g_free(strings[0]);
  g_free(strings);
}

static double single_reduce(gpointer data, double value) {
  (void)data;
  return value;
}

void srch_comm_single(SrchComm *comm) {
  *comm = (SrchComm){.rank = 0, .size = 1, .barrier = single_barrier,
                     .gather_strings = single_gather, .strings_free = single_free,
                     .allreduce_sum = single_reduce, .allreduce_max = single_reduce};
}
