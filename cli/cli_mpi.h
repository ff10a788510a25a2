/* cli/mpi — the only place that talks to MPI. Commands that can spread over `mpirun` ranks
 * (search, sweep) call cli_mpi_init first; everything else never sees MPI.
 *
 * MPI is initialised only when the process was started by a launcher (Open MPI's mpirun sets
 * OMPI_COMM_WORLD_SIZE, PMIx launchers PMIX_RANK, MPICH/Hydra PMI_SIZE): a plain
 * `build/stratsim search` stays a single process with no MPI start-up cost. Built without MPI
 * (STRATSIM_HAVE_MPI unset), every call is the single-process answer and cli_mpi_init warns
 * once if it sees a launcher's environment. */
#ifndef STRATSIM_CLI_MPI_H
#define STRATSIM_CLI_MPI_H

#include <glib.h>

#include "search/srch_comm.h"

/* Starts MPI when launched by mpirun (see above). Idempotent; returns FALSE (one line on
 * stderr) when MPI_Init fails. */
gboolean cli_mpi_init(int *argc, char ***argv);
/* Finalises MPI if cli_mpi_init started it. */
void cli_mpi_finalize(void);
/* TRUE when running under MPI with more than one rank. */
gboolean cli_mpi_active(void);
int cli_mpi_rank(void);
int cli_mpi_size(void);
/* Collective barrier (no-op on one rank). */
void cli_mpi_barrier(void);
/* Terminates every rank with @status (exit(@status) on one rank). */
G_GNUC_NORETURN void cli_mpi_abort(int status);
/* Gathers one NUL-terminated string (may be NULL: gathered as NULL) from every rank onto rank
 * 0. On rank 0 returns a new array of cli_mpi_size() strings in rank order (free with
 * g_strfreev-like cli_mpi_strings_free; NULL entries allowed); on other ranks returns NULL.
 * Collective: every rank must call it. */
char **cli_mpi_gather_strings(const char *mine);
void cli_mpi_strings_free(char **strings);
/* Broadcasts a string from rank 0: every rank returns a new copy of rank 0's @text (NULL
 * allowed). Collective. */
char *cli_mpi_bcast_string(const char *text);
/* Sum / max of a double over ranks, result on every rank. Collective. */
double cli_mpi_allreduce_sum(double value);
double cli_mpi_allreduce_max(double value);
/* The library's view of the ranks (search/srch_comm.h) backed by the calls above: what the
 * protocols of a spread search and a shared sweep (search/, scenarios/) talk through. */
void cli_mpi_comm(SrchComm *comm);

#endif
