/* cli/mpi — see cli_mpi.h. Strings travel as (length, bytes) with length -1 for NULL. */
#include "cli/cli_mpi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STRATSIM_HAVE_MPI
#include <mpi.h>
#endif

static gboolean started = FALSE;
static int world_rank = 0;
static int world_size = 1;

static gboolean launched_by_mpirun(void) {
  return g_getenv("OMPI_COMM_WORLD_SIZE") || g_getenv("PMIX_RANK") || g_getenv("PMI_SIZE");
}

gboolean cli_mpi_init(int *argc, char ***argv) {
  if (started) return TRUE;
#ifdef STRATSIM_HAVE_MPI
  if (!launched_by_mpirun()) return TRUE;
  int already = 0;
  MPI_Initialized(&already);
  if (!already && MPI_Init(argc, argv) != MPI_SUCCESS) {
    fprintf(stderr, "stratsim: MPI_Init failed\n");
    return FALSE;
  }
  started = TRUE;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
#else
  if (launched_by_mpirun())
    fprintf(stderr, "stratsim: built without MPI: every rank runs the whole job alone "
                    "(install libopenmpi-dev and rebuild)\n");
#endif
  return TRUE;
}

void cli_mpi_finalize(void) {
#ifdef STRATSIM_HAVE_MPI
  if (started) MPI_Finalize();
#endif
  started = FALSE;
  world_rank = 0;
  world_size = 1;
}

gboolean cli_mpi_active(void) { return started && world_size > 1; }
int cli_mpi_rank(void) { return world_rank; }
int cli_mpi_size(void) { return world_size; }

void cli_mpi_barrier(void) {
#ifdef STRATSIM_HAVE_MPI
  if (started) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void cli_mpi_abort(int status) {
#ifdef STRATSIM_HAVE_MPI
  if (cli_mpi_active()) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  exit(status);
}

char **cli_mpi_gather_strings(const char *mine) {
  int64_t len = mine ? (int64_t)strlen(mine) : -1;
  if (!cli_mpi_active()) {
    char **out = g_new0(char *, 2);
    out[0] = g_strdup(mine);
    return out;
  }
#ifdef STRATSIM_HAVE_MPI
  int64_t *lens = world_rank == 0 ? g_new0(int64_t, world_size) : NULL;
  MPI_Gather(&len, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  char **out = NULL;
  if (world_rank == 0) {
    out = g_new0(char *, world_size + 1);
    out[0] = g_strdup(mine);
    for (int r = 1; r < world_size; r++) {
      if (lens[r] < 0) continue;
      out[r] = g_malloc((size_t)lens[r] + 1);
      /* Strings can exceed INT_MAX only in theory; chunk anyway so MPI's int counts hold. */
      int64_t got = 0;
      while (got < lens[r]) {
        int chunk = (int)MIN(lens[r] - got, (int64_t)1 << 30);
        MPI_Recv(out[r] + got, chunk, MPI_CHAR, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        got += chunk;
      }
      out[r][lens[r]] = '\0';
    }
  } else if (len > 0) {
    int64_t sent = 0;
    while (sent < len) {
      int chunk = (int)MIN(len - sent, (int64_t)1 << 30);
      MPI_Send(mine + sent, chunk, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
      sent += chunk;
    }
  }
  g_free(lens);
  return out;
#else
  return NULL;
#endif
}

void cli_mpi_strings_free(char **strings) {
  if (!strings) return;
  int n = cli_mpi_active() ? world_size : 1;
  for (int i = 0; i < n; i++) g_free(strings[i]);
  g_free(strings);
}

char *cli_mpi_bcast_string(const char *text) {
  if (!cli_mpi_active()) return g_strdup(text);
#ifdef STRATSIM_HAVE_MPI
  int64_t len = world_rank == 0 ? (text ? (int64_t)strlen(text) : -1) : 0;
  MPI_Bcast(&len, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (len < 0) return NULL;
  char *out = g_malloc((size_t)len + 1);
  if (world_rank == 0) memcpy(out, text, (size_t)len);
  int64_t done = 0;
  while (done < len) {
    int chunk = (int)MIN(len - done, (int64_t)1 << 30);
    MPI_Bcast(out + done, chunk, MPI_CHAR, 0, MPI_COMM_WORLD);
    done += chunk;
  }
  out[len] = '\0';
  return out;
#else
  return g_strdup(text);
#endif
}

double cli_mpi_allreduce_sum(double value) {
#ifdef STRATSIM_HAVE_MPI
  if (cli_mpi_active()) {
    double out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
#endif
  return value;
}

double cli_mpi_allreduce_max(double value) {
#ifdef STRATSIM_HAVE_MPI
  if (cli_mpi_active()) {
    double out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
#endif
  return value;
}

static void comm_barrier(gpointer data) {
  (void)data;
  cli_mpi_barrier();
}

static char **comm_gather(gpointer data, const char *mine) {
  (void)data;
  return cli_mpi_gather_strings(mine);
}

static void comm_free(gpointer data, char **strings) {
  (void)data;
  cli_mpi_strings_free(strings);
}

static double comm_sum(gpointer data, double value) {
  (void)data;
  return cli_mpi_allreduce_sum(value);
}

static double comm_max(gpointer data, double value) {
  (void)data;
  return cli_mpi_allreduce_max(value);
}

void cli_mpi_comm(SrchComm *comm) {
  *comm = (SrchComm){.rank = cli_mpi_rank(), .size = cli_mpi_active() ? cli_mpi_size() : 1,
                     .barrier = comm_barrier, .gather_strings = comm_gather,
                     .strings_free = comm_free, .allreduce_sum = comm_sum,
                     .allreduce_max = comm_max};
}
