/* sim/trace — Chrome trace-event JSON of a simulated iteration (opens in Perfetto and
 * chrome://tracing). One process per device ("GPU d (node n)"), one thread per stream (tid =
 * SimStream: 0 compute, 1 comm for TP/CP/EP collectives, 2 p2p, 3 dp; the host stream 4);
 * complete events ("ph":"X") in microseconds. Written by
 * streaming fprintf: traces of millions of tasks never sit in memory as a JSON tree.
 * Pipeline schedules read off the compute rows: a compute slice is named by its phase (F
 * forward, B backward or its dX part, W the delayed weight gradients, R a recomputed forward),
 * microbatch and, with virtual stages, model chunk ("F3.c5 layer10.fc1"), its "cat" is the
 * phase (Perfetto groups and filters by it) and "cname" gives each phase one colour in
 * chrome://tracing. */
/* It reads the run through sim.h's read API only (SimTaskInfo, spans, schedule accessors), as
 * any consumer outside sim/ would: the representation can change under it. */
#include "sim/sim.h"
#include "sim/sim_network.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static void write_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s < 0x20) continue;
    fputc(*s, f);
  }
}

static void task_name(const SimRun *run, const SimTaskInfo *t, FILE *f) {
  const MdlGraph *g = sim_run_graph(run);
  const MdlStrategy *strategy = sim_run_strategy(run);
  switch (t->kind) {
  case SIM_TASK_HOST:
    fprintf(f, "launch %d ", t->microbatch);
    write_escaped(f, mdl_graph_op(g, t->op)->name);
    break;
  case SIM_TASK_FORWARD:
  case SIM_TASK_BACKWARD:
  case SIM_TASK_BACKWARD_WEIGHT:
  case SIM_TASK_RECOMPUTE:
    /* "F3 layer0.qkv": phase and microbatch first, as pipeline timelines label them; the
     * model chunk after a dot when ranks hold several ("F3.c5 layer10.fc1"); R a recomputed
     * forward. */
    fputc(t->kind == SIM_TASK_FORWARD    ? 'F'
          : t->kind == SIM_TASK_BACKWARD ? 'B'
          : t->kind == SIM_TASK_RECOMPUTE ? 'R'
                                          : 'W',
          f);
    fprintf(f, "%d", t->microbatch);
    if (strategy->virtual_stages > 1) fprintf(f, ".c%d", strategy->configs[t->op].stage);
    fputc(' ', f);
    write_escaped(f, mdl_graph_op(g, t->op)->name);
    break;
  case SIM_TASK_COMM:
  case SIM_TASK_GRAD_SYNC:
    fputs(cm_collective_name(t->collective), f);
    fputc(' ', f);
    write_escaped(f, mdl_graph_tensor(g, t->tensor)->name);
    break;
  default:
    fputs("optimizer step", f);
  }
}

/* Reserved colour names of the trace viewer (catapult's color_scheme), one per compute phase. */
static const char *const kind_colour[SIM_TASK_KIND_COUNT] = {
    [SIM_TASK_FORWARD] = "thread_state_running",         /* green */
    [SIM_TASK_BACKWARD] = "thread_state_runnable",       /* blue */
    [SIM_TASK_BACKWARD_WEIGHT] = "thread_state_iowait",  /* orange */
    [SIM_TASK_OPTIMIZER] = "yellow",
    [SIM_TASK_RECOMPUTE] = "olive",                       /* the forward's green, darker */
    [SIM_TASK_HOST] = "grey",
};

/* The trace goes to a temporary file beside @path, renamed over it once complete: a trace
 * that cannot be written whole (a full disk) leaves no truncated file (issue 17, item 1).
 * Special files (/dev/stdout, a FIFO) are written in place. */
gboolean sim_trace_write(const SimRun *run, const char *path, GError **error) {
  gboolean in_place = g_file_test(path, G_FILE_TEST_EXISTS) &&
                      !g_file_test(path, G_FILE_TEST_IS_REGULAR);
  g_autofree char *temp = in_place ? NULL : g_strdup_printf("%s.partial-XXXXXX", path);
  FILE *f = NULL;
  if (in_place) {
    f = fopen(path, "w");
  } else {
    int fd = g_mkstemp_full(temp, O_WRONLY, 0644);
    if (fd >= 0 && !(f = fdopen(fd, "w"))) close(fd);
  }
  if (!f) {
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "cannot write trace %s: %s",
                path, g_strerror(errno));
    if (temp) g_unlink(temp);
    return FALSE;
  }
  const SimTaskGraph *g = sim_run_task_graph(run);
  const SimSchedule *s = sim_run_schedule(run);
  const DevCluster *cluster = sim_run_cluster(run);
  const MdlStrategy *strategy = sim_run_strategy(run);
  int ndev = sim_task_graph_num_devices(g), nres = sim_task_graph_num_resources(g);
  uint32_t ntasks = sim_run_num_tasks(run);
  SimTaskInfo info;
  const SimTaskInfo *t = &info;
  fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
  gboolean first = TRUE;
  uint32_t streams = sim_stream_resources(ndev);
  int host_probe;
  gboolean host = sim_task_graph_host_device(g, (uint32_t)nres - 1, &host_probe); /* host streams last */
  g_autofree gboolean *used = g_new0(gboolean, ndev ? ndev : 1);
  g_autofree gboolean *link_used = g_new0(gboolean, (gsize)nres + 1);
  for (uint32_t i = 0; i < ntasks; i++) {
    sim_run_task(run, i, &info);
    for (int r = 0; r < t->nres; r++) {
      uint32_t resource = t->resources[r];
      int device;
      if (resource < streams) used[sim_resource_device(resource)] = TRUE;
      else if (sim_task_graph_host_device(g, resource, &device)) used[device] = TRUE;
      else link_used[resource] = TRUE;
    }
  }
  /* Step-expanded collectives: link ports and NICs in one "network" process (pid = devices). */
  for (uint32_t r = streams; r < (uint32_t)nres; r++) {
    if (!link_used[r]) continue;
    g_autofree char *name = sim_network_resource_name(cluster, r);
    if (first || r == streams || !link_used[r - 1]) {
      gboolean any_before = FALSE;
      for (uint32_t q = streams; q < r && !any_before; q++) any_before = link_used[q];
      if (!any_before)
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":"
                   "\"network (ports, NICs)\"}}",
                first ? "" : ",\n", ndev);
      first = FALSE;
    }
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"",
            ndev, r - streams);
    write_escaped(f, name);
    fputs("\"}}", f);
  }
  for (int d = 0; d < ndev; d++) {
    if (!used[d]) continue;
    fprintf(f,
            "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"GPU %d "
            "(node %d)\"}},\n"
            "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
            first ? "" : ",\n", d, d, dev_cluster_node_of(cluster, d), d, d);
    /* One thread per stream (tid = SimStream), the host stream after them. */
    for (int k = 0; k < SIM_STREAMS; k++)
      fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":"
                 "{\"name\":\"%s\"}}", d, k, sim_stream_name((SimStream)k));
    if (host)
      fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":"
                 "{\"name\":\"host\"}}", d, SIM_STREAMS);
    first = FALSE;
  }
  for (uint32_t i = 0; i < ntasks; i++) {
    sim_run_task(run, i, &info);
    if (t->role == SIM_ROLE_GATE || t->role == SIM_ROLE_JOIN) continue; /* markers, 0 long */
    for (int r = 0; r < t->nres; r++) {
      uint32_t resource = t->resources[r];
      uint32_t pid = resource < streams ? (uint32_t)sim_resource_device(resource) : (uint32_t)ndev;
      uint32_t tid = resource < streams ? (uint32_t)sim_resource_stream_of(resource) : resource - streams;
      int device;
      if (sim_task_graph_host_device(g, resource, &device)) pid = (uint32_t)device, tid = SIM_STREAMS;
      fprintf(f, "%s{\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":%.6f,\"dur\":%.6f,\"name\":\"",
              first ? "" : ",\n", pid, tid, (double)t->start / 1e6,
              (double)t->duration / 1e6);
      first = FALSE;
      task_name(run, t, f);
      fprintf(f, "\",\"cat\":\"%s\"", sim_task_kind_name(t->kind));
      if (t->kind < SIM_TASK_KIND_COUNT && kind_colour[t->kind])
        fprintf(f, ",\"cname\":\"%s\"", kind_colour[t->kind]);
      fprintf(f, ",\"args\":{\"microbatch\":%d", t->microbatch);
      if (t->op >= 0 && (t->kind == SIM_TASK_FORWARD || t->kind == SIM_TASK_BACKWARD ||
                         t->kind == SIM_TASK_BACKWARD_WEIGHT || t->kind == SIM_TASK_RECOMPUTE))
        fprintf(f, ",\"chunk\":%d", strategy->configs[t->op].stage);
      if (t->kind == SIM_TASK_COMM || t->kind == SIM_TASK_GRAD_SYNC)
        fprintf(f, ",\"bytes\":%.0f,\"group_size\":%u", (double)t->bytes, t->group_size);
      fputs("}}", f);
    }
  }
  /* A step-expanded collective occupies its members' communication streams from its gate to
   * its join: one slice per member, as NCCL's kernel on its stream. */
  for (uint32_t k = 0; k < sim_task_graph_num_spans(g); k++) {
    uint32_t gate_id, join_id;
    sim_task_graph_span(g, k, &gate_id, &join_id);
    sim_run_task(run, gate_id, &info);
    const SimTaskInfo *gate = &info;
    SimTime begin = gate->start, end = sim_schedule_start(s, join_id);
    for (int r = 0; r < gate->nres; r++) {
      fprintf(f, "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,\"name\":\"",
              first ? "" : ",\n", sim_resource_device(gate->resources[r]),
              (int)sim_resource_stream_of(gate->resources[r]), (double)begin / 1e6,
              (double)(end - begin) / 1e6);
      first = FALSE;
      task_name(run, gate, f);
      fprintf(f, "\",\"cat\":\"%s\",\"args\":{\"bytes\":%.0f,\"group_size\":%u}}",
              sim_task_kind_name(gate->kind), (double)gate->bytes, gate->group_size);
    }
  }
  fputs("\n]}\n", f);
  gboolean ok = !ferror(f);
  int saved = errno;
  if (fclose(f) != 0) ok = FALSE, saved = errno;
  if (ok && temp && g_rename(temp, path) != 0) ok = FALSE, saved = errno;
  if (!ok) {
    if (temp) g_unlink(temp);
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO, "error writing trace %s (%s): no trace "
                "written", path, g_strerror(saved));
    return FALSE;
  }
  return TRUE;
}
