/* util/gnuplot — the plumbing every chart writer shares: gnuplot strings (quoted text, titles,
 * the png/svg terminal lines), writing a chart's files, and running gnuplot on a script and
 * checking what it drew.
 *
 * A chart is a data file and a script NAME.gp, written next to the images it draws (NAME.png
 * with pngcairo, NAME.svg), so that it can be redrawn by hand (`cd DIR && gnuplot NAME.gp`).
 * gnuplot is an external program run as a child process in the chart's directory. It can exit 0
 * and leave an image empty (a full disk: issue 17 item 2), so drawing removes the old images
 * first and afterwards requires each asked-for image to be a non-empty regular file.
 *
 * This module sits in util/, under every other folder: scenarios/ and validate/ both draw with
 * it, and validate/ does not depend on scenarios/. */
#ifndef STRATSIM_UTIL_GNUPLOT_H
#define STRATSIM_UTIL_GNUPLOT_H

#include <glib.h>

G_BEGIN_DECLS

#define UTIL_ERROR (util_error_quark())
GQuark util_error_quark(void);
typedef enum {
  UTIL_ERROR_GNUPLOT, /* gnuplot failed, or exited 0 without drawing an image (a failure) */
} UtilError;

/* Image formats a script draws (a bit set). */
enum { UTIL_GNUPLOT_PNG = 1 << 0, UTIL_GNUPLOT_SVG = 1 << 1 };

/* @text as a single-quoted gnuplot string (quotes doubled, newlines as spaces). Free with
 * g_free. */
char *util_gnuplot_quote(const char *text);

/* A double-quoted gnuplot string of @title and, on a second line, @note (nullable). Free with
 * g_free. */
char *util_gnuplot_title(const char *title, const char *note);

/* The gnuplot lines that draw the current plot to @base.png and/or @base.svg (@formats; none
 * means png) at @width x @height pixels. The plot command must follow them, then *@epilogue
 * (set here). Both strings are the caller's to free. */
char *util_gnuplot_terminal(const char *base, unsigned formats, int width, int height,
                            char **epilogue);

/* Writes @contents to @dir/@name and appends that path to @files (nullable; the array must
 * free its elements with g_free). FALSE with a G_FILE_ERROR when it cannot be written. */
gboolean util_write_file(const char *dir, const char *name, const char *contents,
                         GPtrArray *files, GError **error);

/* Runs @gnuplot (a path) on @script.gp in @dir and checks that it drew @dir/@script.png and/or
 * .svg (@formats; none means png), each a non-empty regular file; images of an earlier run are
 * removed first so that they cannot pass for new ones. Appends the images' paths to @images
 * (nullable; g_free elements). FALSE with UTIL_ERROR_GNUPLOT naming the script and gnuplot's
 * first error line, its exit status, or the missing or empty image. */
gboolean util_gnuplot_draw(const char *gnuplot, const char *dir, const char *script,
                           unsigned formats, GPtrArray *images, GError **error);

G_END_DECLS

#endif
