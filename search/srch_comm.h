/* search/comm — the processes a job is spread over (mpirun ranks), seen through callbacks.
 *
 * The protocols of a spread search (srch_result_gather) and of a shared sweep
 * (scenarios/scn_sweep.h: scn_sweep_gather) live in the library and talk to the other ranks
 * only through an SrchComm, which the caller fills: the CLI with MPI (cli/cli_mpi.c, built
 * only where MPI is found), tests with a fake, everything else with srch_comm_single. So the
 * library links no MPI and keeps no global state. */
#ifndef STRATSIM_SRCH_COMM_H
#define STRATSIM_SRCH_COMM_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  int rank;       /* this process, 0 .. size - 1 */
  int size;       /* processes; 1: alone */
  gpointer data;  /* handed to every callback */
  /* Every rank waits for all. */
  void (*barrier)(gpointer data);
  /* Gathers one string (NULL allowed) from every rank onto rank 0: on rank 0 a new array of
   * size strings in rank order (NULL entries allowed; free with strings_free), NULL on the
   * others. Collective. */
  char **(*gather_strings)(gpointer data, const char *mine);
  void (*strings_free)(gpointer data, char **strings);
  /* Sum and maximum over the ranks, the result on every rank. Collective. */
  double (*allreduce_sum)(gpointer data, double value);
  double (*allreduce_max)(gpointer data, double value);
} SrchComm;

/* Fills @comm with the one-process communicator: rank 0 of 1, every collective immediate. */
void srch_comm_single(SrchComm *comm);

G_END_DECLS

#endif
