/* sim/progress — progress lines for long runs (searches, sweeps, step-mode simulations, bench).
 *
 * The work sets its current state (a short text) whenever it likes, from any thread; a ticker
 * thread of the reporter prints it. On a terminal the line is redrawn in place twice a second
 * and erased at the end; elsewhere (a pipe, a file, a CI log: issue 17, item 8) a full line
 * "stratsim COMMAND: STATE (N s)" is printed every interval, so that a long run is never
 * silent there and the log stays readable. Nothing is printed before the first interval has
 * passed, so quick runs print nothing. Wall-clock time is read here only to pace the lines:
 * nothing a simulation computes depends on it. */
#ifndef STRATSIM_SIM_PROGRESS_H
#define STRATSIM_SIM_PROGRESS_H

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

/* Seconds between lines when the stream is not a terminal, unless STRATSIM_PROGRESS_S says
 * otherwise (documented in README.md, "Long runs"). */
#define SIM_PROGRESS_INTERVAL_S 5.0

typedef struct SimProgress SimProgress;

/* A reporter for `stratsim @command` writing to @stream (borrowed; the caller keeps it open
 * until sim_progress_free). @terminal: redraw in place; else a line every @interval_s (> 0). */
SimProgress *sim_progress_new(FILE *stream, const char *command, gboolean terminal,
                              double interval_s);

/* The CLI's reporter: stderr, a terminal when isatty says so, else lines every
 * STRATSIM_PROGRESS_S seconds (a positive number; default SIM_PROGRESS_INTERVAL_S; 0 or
 * "off": no progress at all, NULL returned). */
SimProgress *sim_progress_new_stderr(const char *command);

/* Sets the current state (printf-style; copied). Thread-safe; @progress may be NULL. */
void sim_progress_set(SimProgress *progress, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* Lines (or redraws) printed so far. */
guint sim_progress_printed(SimProgress *progress);

/* Stops the ticker (on a terminal, erases the line) and frees. NULL allowed. */
void sim_progress_free(SimProgress *progress);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimProgress, sim_progress_free)

G_END_DECLS

#endif
