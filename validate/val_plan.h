/* validate/plan — reading a plan (validate/PLAN.md, format version 1) into plain C structs, and
 * writing run measurements (the same file's second format). Both runners (stratsim-runner on
 * GPUs, stratsim-cpu-runner over MPI) use this module, so they accept the same plans and emit
 * byte-for-byte the same format.
 *
 * What a successfully read ValPlan guarantees (a runner may rely on all of it, unchecked):
 *  - 1 <= ranks <= VAL_PLAN_MAX_RANKS; programs[r].rank == r for every r (one program per rank,
 *    sorted by rank whatever the file's order);
 *  - every group has >= 1 distinct members, each in [0, ranks); group ids are unique;
 *  - in each program, step ids are unique, every dep is an EARLIER step of the same program
 *    (stored as its index in that program's steps), kinds, streams and dtypes are known;
 *  - gemm: 1 <= m, n, k, batch <= G_MAXINT (cuBLAS and BLAS take int), m*n*k*batch <=
 *    VAL_PLAN_MAX_MACS, and each operand (batch*m*k, batch*k*n, batch*m*n elements of the
 *    dtype) is at most VAL_PLAN_MAX_BYTES;
 *  - elementwise: 1 <= elements <= VAL_PLAN_MAX_ELEMENTS, 1 <= bytes <= VAL_PLAN_MAX_BYTES;
 *  - collective: a known kind, a group that contains the rank, 1 <= bytes <= VAL_PLAN_MAX_BYTES;
 *    every member of a group issues the same sequence of that group's collectives (same kind,
 *    bytes and dtype at each position);
 *  - send/recv: a peer in [0, ranks) other than the rank itself; the k-th send from p to q is
 *    matched by the k-th recv from p in q's program, with the same bytes and dtype (each step's
 *    `match` names the other end);
 *  - the plan cannot deadlock: issuing each rank's communication steps in list order, where a
 *    collective completes once all its group's members reach it and a send once its recv is
 *    reached (and vice versa), completes every step. `issue` is such an order over all ranks,
 *    usable by a single thread that drives every rank (see ValIssue).
 * bytes in the file may be fractional (they come from a cost model); they are rounded up to
 * whole bytes here.
 *
 * Errors are in VAL_PLAN_ERROR and name the file, the field and the value, e.g.
 * "plan.json: programs[1].steps[4] (id 9): send to rank 0 has no matching recv ...". */
#ifndef STRATSIM_VAL_PLAN_H
#define STRATSIM_VAL_PLAN_H

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define VAL_PLAN_ERROR (val_plan_error_quark())
GQuark val_plan_error_quark(void);
typedef enum {
  VAL_PLAN_ERROR_INPUT, /* the plan is malformed or breaks a rule above (exit status 2) */
  VAL_PLAN_ERROR_IO,    /* the file cannot be read or written (exit status 1) */
} ValPlanError;

/* Limits of the reader (checked before anything of that size is allocated). */
#define VAL_PLAN_MAX_RANKS 65536
#define VAL_PLAN_MAX_TOTAL_STEPS 4000000     /* all programs together (the builder stops at 2 M) */
#define VAL_PLAN_MAX_JSON_BYTES (1u << 30)   /* 1 GiB, checked before reading the file */
#define VAL_PLAN_MAX_BYTES (INT64_C(1) << 50)    /* 1 PiB per buffer, as `collective --bytes` */
#define VAL_PLAN_MAX_ELEMENTS (INT64_C(1) << 50)
#define VAL_PLAN_MAX_MACS (INT64_C(1) << 62)     /* m*n*k*batch, as MDL_MAX_ELEMENTS */
#define VAL_PLAN_MAX_ITERATIONS_READ 100000      /* warmup and iterations each */

typedef enum { VAL_DTYPE_FP32, VAL_DTYPE_TF32, VAL_DTYPE_FP16, VAL_DTYPE_BF16 } ValDtype;
/* The simulator's streams per GPU (sim.h's SimStream, in its order): compute; comm (TP/SP/CP/EP
 * collectives); p2p (pipeline send/recv, cross-mesh moves); dp (gradient sync, ZeRO gathers). */
typedef enum { VAL_STREAM_COMPUTE, VAL_STREAM_COMM, VAL_STREAM_P2P, VAL_STREAM_DP, VAL_STREAMS } ValStream;
typedef enum {
  VAL_STEP_GEMM,
  VAL_STEP_ELEMENTWISE,
  VAL_STEP_COLLECTIVE,
  VAL_STEP_SEND,
  VAL_STEP_RECV,
} ValStepKind;
/* The first five appear in steps; all seven in microbenchmarks.collectives (CALIBRATION.md). */
typedef enum {
  VAL_COLL_ALL_REDUCE,
  VAL_COLL_ALL_GATHER,
  VAL_COLL_REDUCE_SCATTER,
  VAL_COLL_ALL_TO_ALL,
  VAL_COLL_BROADCAST, /* root: the group's first member */
  VAL_COLL_SEND_RECV, /* microbenchmarks only: one message between two ranks */
  VAL_COLL_REDUCE,    /* microbenchmarks only: root rank 0 of the set */
} ValCollectiveKind;

typedef struct {
  int id;      /* as in the file */
  int n_ranks;
  int *ranks;  /* members in the file's order (a broadcast's root is ranks[0]) */
} ValGroup;

typedef struct {
  gint64 id;               /* as in the file (unique within the rank); measurements use it */
  ValStepKind kind;
  ValStream stream;        /* the file's `stream`; default compute for gemm/elementwise, else comm */
  ValDtype dtype;          /* the step's, else the plan's */
  char *name, *op, *phase; /* nullable, informative */
  int microbatch;          /* -1 when absent */
  /* gemm: C[batch,m,n] = A[batch,m,k] B[batch,k,n] */
  gint64 m, n, k, batch;
  /* elementwise: elements; elementwise, collective, send, recv: bytes (per rank, CALIBRATION.md
   * convention for collectives) */
  gint64 elements, bytes;
  ValCollectiveKind collective;
  int group;               /* collective: index into ValPlan.groups (not the file's id) */
  int group_rank;          /* collective: this rank's position in that group's ranks */
  guint64 sequence;        /* collective: its position among the group's collectives;
                              send/recv: among the transfers of its (sender, receiver) pair */
  int peer;                /* send: receiver; recv: sender */
  guint match;             /* send/recv: index of the other end in programs[peer].steps */
  guint n_deps;
  guint *deps;             /* indices of earlier steps of the same program */
  double predicted_s;      /* NAN when absent */
} ValStep;

typedef struct {
  int rank;
  int host;          /* the file's host and local_device (0 when absent) */
  int local_device;
  guint n_steps;
  ValStep *steps;
} ValProgram;

/* One step in ValPlan.issue: steps with the same `launch` are consecutive and must be issued
 * together (all members of one collective, or a send and its recv: one ncclGroupStart/End when
 * a single thread drives several ranks). Compute steps are launches of their own. Within a
 * rank, the order is the program's list order. */
typedef struct {
  int rank;
  guint step;    /* index into programs[rank].steps */
  guint launch;  /* 0, 1, 2, ...: non-decreasing along ValPlan.issue */
} ValIssue;

typedef struct {
  char *op;              /* a model op kind name (matmul, layernorm, ...: PROFILES.md) */
  gboolean gemm;         /* matmul, batch_matmul, conv2d: keyed by m, n, k, batch */
  ValDtype dtype;
  gint64 m, n, k, batch; /* gemm (limits as for gemm steps) */
  gint64 elements;       /* other ops (limit as for elementwise steps) */
  gboolean backward;     /* other ops: phase "backward" (else "forward") */
} ValMicroOp;

typedef struct {
  ValCollectiveKind kind;
  int ranks;             /* 2 .. plan ranks */
  int nodes;             /* 1 .. ranks */
  gint64 bytes;          /* 1 .. VAL_PLAN_MAX_BYTES */
} ValMicroCollective;

typedef struct {
  char *source;          /* the file name given to the reader */
  char *model, *cluster, *strategy;  /* "" when absent */
  ValDtype dtype;
  int ranks;
  int warmup, iterations;  /* 0..VAL_PLAN_MAX_ITERATIONS_READ (iterations >= 1); defaults 3, 10 */
  double predicted_iteration_time_s;  /* NAN when absent */
  char *predicted_device;             /* nullable */
  int n_groups;
  ValGroup *groups;
  ValProgram *programs;  /* ranks of them, programs[r].rank == r */
  guint64 n_steps;       /* all programs */
  ValIssue *issue;       /* n_steps entries: every step of every rank once */
  guint n_launches;
  guint n_micro_ops;
  ValMicroOp *micro_ops;
  guint n_micro_collectives;
  ValMicroCollective *micro_collectives;
} ValPlan;

/* Parses plan JSON @text (NUL-terminated) and checks every rule above; @source names it in
 * errors (e.g. the file name). Returns a new plan (free with val_plan_free) or NULL with
 * @error (VAL_PLAN_ERROR_INPUT). */
ValPlan *val_plan_parse(const char *text, const char *source, GError **error);
/* Reads and parses the file @path (at most VAL_PLAN_MAX_JSON_BYTES): VAL_PLAN_ERROR_IO when it
 * cannot be read, else as val_plan_parse. */
ValPlan *val_plan_read(const char *path, GError **error);
void val_plan_free(ValPlan *plan);

/* Index of @rank in @group's members, -1 when not a member. */
int val_group_find(const ValGroup *group, int rank);

/* Names as in the files ("fp32", "gemm", "all_reduce", "compute") and their sizes. */
const char *val_dtype_name(ValDtype dtype);
guint val_dtype_size(ValDtype dtype); /* 4, 4, 2, 2 bytes */
const char *val_step_kind_name(ValStepKind kind);
const char *val_collective_name(ValCollectiveKind kind);
const char *val_stream_name(ValStream stream);

/* Median of @n values (the mean of the two middle ones when @n is even; NAN when 0); @values
 * is not changed. */
double val_median(const double *values, guint n);

/* --- run measurements (PLAN.md, "Run measurements JSON") --- */

/* A builder for one measurements file. Fields are written in PLAN.md's order; sections with
 * nothing in them are written as follows: "iterations_s" and "steps" always (maybe empty),
 * "iteration_time_s" only when there is at least one iteration, "profiles" only with at least
 * one kernel, "collectives" only with at least one collective. */
typedef struct ValMeasurements ValMeasurements;

/* @runner: "gpu" or "cpu"; the "plan" object is copied from @plan (model, cluster, strategy,
 * ranks) and "warmup" from plan->warmup (val_measurements_set_warmup overrides it). */
ValMeasurements *val_measurements_new(const ValPlan *plan, const char *runner);
void val_measurements_free(ValMeasurements *m);

/* "environment" fields, in the order first set (setting a key again replaces its value).
 * The usual keys (PLAN.md): device, device_kind, driver, cuda_runtime, nccl (strings),
 * sm_clock_mhz, mem_clock_mhz (integers), host, date, command (strings); a runner may add
 * others (e.g. "blas"). A NULL @value leaves the key out. */
void val_measurements_set_env_string(ValMeasurements *m, const char *key, const char *value);
void val_measurements_set_env_int(ValMeasurements *m, const char *key, gint64 value);
/* Sets host (g_get_host_name), date (now, UTC, "2026-11-23T17:00:00Z") and command (@argv
 * joined with spaces, each argument shell-quoted when it needs it). */
void val_measurements_set_env_defaults(ValMeasurements *m, int argc, char **argv);

void val_measurements_set_warmup(ValMeasurements *m, int warmup);
/* One timed iteration's wall time (seconds, > 0 and finite; else a programming error). */
void val_measurements_add_iteration(ValMeasurements *m, double seconds);
/* One step's durations over the timed iterations; its "time_s" is their median (@n >= 1). */
void val_measurements_add_step(ValMeasurements *m, int rank, gint64 id, const double *times_s,
                               guint n);
/* The "device" and "source" of both "profiles" and "collectives" (copied; NULL leaves them
 * out): device is a stratsim device kind (h100-sxm), source says how it was measured. */
void val_measurements_set_microbench_info(ValMeasurements *m, const char *device_kind,
                                          const char *source);
/* A micro-benchmark result (@op and @c are copied): one entry of "profiles.kernels" or of
 * "collectives.collectives" with "time_s". */
void val_measurements_add_kernel(ValMeasurements *m, const ValMicroOp *op, double time_s);
void val_measurements_add_collective(ValMeasurements *m, const ValMicroCollective *c,
                                     double time_s);

/* The file's text (caller g_frees), pretty-printed, ending in a newline. */
char *val_measurements_to_json(const ValMeasurements *m);
/* Writes the text to @path (atomically: g_file_set_contents); VAL_PLAN_ERROR_IO on failure. */
gboolean val_measurements_write(const ValMeasurements *m, const char *path, GError **error);

G_END_DECLS

#endif
