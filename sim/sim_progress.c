/* sim/progress — a ticker thread printing the state the work sets (sim_progress.h). */
#include "sim/sim_progress.h"

#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#define TERMINAL_REDRAW_S 0.5

struct SimProgress {
  FILE *stream;
  char *command;
  gboolean terminal;
  double interval_s;
  gint64 started_us;
  GMutex lock;
  GCond wake;
  gboolean stopping;
  char *state;        /* NULL until the work sets one */
  guint printed;
  GThread *ticker;
};

/* Under the lock: prints the state once. */
static void print_state(SimProgress *p) {
  if (!p->state) return;
  double elapsed = (double)(g_get_monotonic_time() - p->started_us) / G_USEC_PER_SEC;
  if (p->terminal)
    fprintf(p->stream, "\r  %s (%.1f s)\033[K", p->state, elapsed);
  else
    fprintf(p->stream, "stratsim %s: %s (%.1f s)\n", p->command, p->state, elapsed);
  fflush(p->stream);
  p->printed++;
}

static gpointer tick(gpointer data) {
  SimProgress *p = data;
  double every = p->terminal ? TERMINAL_REDRAW_S : p->interval_s;
  g_mutex_lock(&p->lock);
  gint64 next = p->started_us + (gint64)(every * G_USEC_PER_SEC);
  while (!p->stopping) {
    if (!g_cond_wait_until(&p->wake, &p->lock, next) && !p->stopping) {
      print_state(p);
      next += (gint64)(every * G_USEC_PER_SEC);
      gint64 now = g_get_monotonic_time();
      if (next < now) next = now + (gint64)(every * G_USEC_PER_SEC); /* after a stall */
    }
  }
  g_mutex_unlock(&p->lock);
  return NULL;
}

SimProgress *sim_progress_new(FILE *stream, const char *command, gboolean terminal,
                              double interval_s) {
  g_return_val_if_fail(stream != NULL && command != NULL && interval_s > 0, NULL);
  SimProgress *p = g_new0(SimProgress, 1);
  p->stream = stream;
  p->command = g_strdup(command);
  p->terminal = terminal;
  p->interval_s = interval_s;
  p->started_us = g_get_monotonic_time();
  g_mutex_init(&p->lock);
  g_cond_init(&p->wake);
  p->ticker = g_thread_new("progress", tick, p);
  return p;
}

SimProgress *sim_progress_new_stderr(const char *command) {
  double interval = SIM_PROGRESS_INTERVAL_S;
  const char *env = g_getenv("STRATSIM_PROGRESS_S");
  if (env && *env) {
    char *end = NULL;
    double v = g_ascii_strtod(env, &end);
    if (g_ascii_strcasecmp(env, "off") == 0 || (end && !*end && v == 0)) return NULL;
    if (end && !*end && v > 0 && v < 1e6) interval = v;
  }
  return sim_progress_new(stderr, command, isatty(STDERR_FILENO), interval);
}

void sim_progress_set(SimProgress *p, const char *format, ...) {
  if (!p) return;
  va_list ap;
  va_start(ap, format);
  char *text = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_mutex_lock(&p->lock);
  g_free(p->state);
  p->state = text;
  g_mutex_unlock(&p->lock);
}

guint sim_progress_printed(SimProgress *p) {
  g_mutex_lock(&p->lock);
  guint n = p->printed;
  g_mutex_unlock(&p->lock);
  return n;
}

void sim_progress_free(SimProgress *p) {
  if (!p) return;
  g_mutex_lock(&p->lock);
  p->stopping = TRUE;
  g_cond_broadcast(&p->wake);
  g_mutex_unlock(&p->lock);
  g_thread_join(p->ticker);
  if (p->terminal && p->printed) {
    fputs("\r\033[K", p->stream);
    fflush(p->stream);
  }
  g_mutex_clear(&p->lock);
  g_cond_clear(&p->wake);
  g_free(p->state);
  g_free(p->command);
  g_free(p);
}
