/* errors — one error taxonomy for the whole library (issue 13, item 2).
 *
 * Every error domain's codes are classified here, in one table: bad input (the user can fix
 * it: a spec, a file, a name, an option; exit status 2) or failure (the work could not be done:
 * a write that failed, a runner that crashed, an internal invariant; exit status 1). Every
 * command maps a GError to its exit status with err_exit_status, nothing else.
 *
 * Layer: the top of the library (it names the domains of every folder: devices/, model/,
 * costmodel/, sim/, search/, results/, session/, scenarios/, validate/, util/); only cli/
 * uses it. */
#ifndef STRATSIM_ERR_STATUS_H
#define STRATSIM_ERR_STATUS_H

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  ERR_EXIT_OK = 0,
  ERR_EXIT_FAILURE = 1,
  ERR_EXIT_BAD_INPUT = 2,
} ErrExit;

typedef enum {
  ERR_CLASS_BAD_INPUT,
  ERR_CLASS_FAILURE,
} ErrClass;

/* The class of @error's (domain, code). Domains of the library, GLib's G_FILE_ERROR (a missing
 * file is bad input, other file errors failures), G_OPTION_ERROR (bad input); any other
 * domain, and NULL, is a failure. */
ErrClass err_classify(const GError *error);
/* ERR_EXIT_BAD_INPUT or ERR_EXIT_FAILURE for @error (NULL: failure). */
ErrExit err_exit_status(const GError *error);

G_END_DECLS

#endif
