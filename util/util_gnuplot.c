/* util/gnuplot — gnuplot strings, chart files, and drawing with checks (util_gnuplot.h). */
#include "util/util_gnuplot.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

G_DEFINE_QUARK(util-error-quark, util_error)

char *util_gnuplot_quote(const char *text) {
  GString *s = g_string_new("'");
  for (const char *c = text; *c; c++) {
    if (*c == '\'') g_string_append_c(s, '\'');
    if (*c == '\n') {
      g_string_append_c(s, ' ');
      continue;
    }
    g_string_append_c(s, *c);
  }
  g_string_append_c(s, '\'');
  return g_string_free(s, FALSE);
}

char *util_gnuplot_title(const char *title, const char *note) {
  GString *s = g_string_new("\"");
  for (int part = 0; part < 2; part++) {
    const char *text = part ? note : title;
    if (!text) continue;
    if (part) g_string_append(s, "\\n");
    for (const char *c = text; *c; c++) {
      if (*c == '"' || *c == '\\') g_string_append_c(s, '\\');
      g_string_append_c(s, *c == '\n' ? ' ' : *c);
    }
  }
  g_string_append_c(s, '"');
  return g_string_free(s, FALSE);
}

/* @formats with "none" read as png. */
static unsigned formats_or_png(unsigned formats) {
  return formats & (UTIL_GNUPLOT_PNG | UTIL_GNUPLOT_SVG) ? formats : UTIL_GNUPLOT_PNG;
}

char *util_gnuplot_terminal(const char *base, unsigned formats, int width, int height,
                            char **epilogue) {
  g_autofree char *png = g_strdup_printf(
      "set terminal pngcairo size %d,%d enhanced font 'Sans,10'\nset output '%s.png'\n", width,
      height, base);
  g_autofree char *svg = g_strdup_printf(
      "set terminal svg size %d,%d dynamic enhanced font 'Sans,10' background '#ffffff'\n"
      "set output '%s.svg'\n", width, height, base);
  formats = formats_or_png(formats);
  if ((formats & UTIL_GNUPLOT_PNG) && (formats & UTIL_GNUPLOT_SVG)) {
    *epilogue = g_strdup_printf("%sreplot\nunset output\n", svg);
    return g_strdup(png);
  }
  *epilogue = g_strdup("unset output\n");
  return g_strdup(formats & UTIL_GNUPLOT_PNG ? png : svg);
}

gboolean util_write_file(const char *dir, const char *name, const char *contents,
                         GPtrArray *files, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  if (!g_file_set_contents(path, contents, -1, error)) return FALSE;
  if (files) g_ptr_array_add(files, g_strdup(path));
  return TRUE;
}

/* The first non-blank line of @text, or NULL. */
static char *first_line(const char *text) {
  if (!text) return NULL;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (int k = 0; lines[k]; k++)
    if (*g_strstrip(lines[k])) return g_strdup(lines[k]);
  return NULL;
}

/* Runs gnuplot; FALSE when it cannot start, exits non-zero, dies of a signal or reports an
 * error on stderr (gnuplot 5.4 exits 0 after some errors in a script). */
static gboolean run(const char *gnuplot, const char *dir, const char *gp, GError **error) {
  char *argv[] = {(char *)gnuplot, (char *)gp, NULL};
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  GError *local = NULL;
  if (!g_spawn_sync(dir, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &local)) {
    g_set_error(error, UTIL_ERROR, UTIL_ERROR_GNUPLOT, "gnuplot %s/%s failed: %s", dir, gp,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  if (g_spawn_check_wait_status(status, &local) && !(err && strstr(err, "error"))) return TRUE;
  g_autofree char *first = first_line(err);
  g_set_error(error, UTIL_ERROR, UTIL_ERROR_GNUPLOT, "gnuplot %s/%s failed: %s", dir, gp,
              first ? first : local ? local->message : "error");
  g_clear_error(&local);
  return FALSE;
}

gboolean util_gnuplot_draw(const char *gnuplot, const char *dir, const char *script,
                           unsigned formats, GPtrArray *images, GError **error) {
  g_return_val_if_fail(gnuplot && dir && script, FALSE);
  static const char *const extension[] = {"png", "svg"};
  static const unsigned format[] = {UTIL_GNUPLOT_PNG, UTIL_GNUPLOT_SVG};
  formats = formats_or_png(formats);
  g_autofree char *gp = g_strdup_printf("%s.gp", script);
  char *path[2] = {NULL, NULL};
  for (int f = 0; f < 2; f++) {
    if (!(formats & format[f])) continue;
    path[f] = g_strdup_printf("%s/%s.%s", dir, script, extension[f]);
    if (g_unlink(path[f]) != 0 && errno != ENOENT) {
      int e = errno;
      g_set_error(error, UTIL_ERROR, UTIL_ERROR_GNUPLOT, "cannot replace %s: %s", path[f],
                  g_strerror(e));
      goto fail;
    }
  }
  if (!run(gnuplot, dir, gp, error)) goto fail;
  for (int f = 0; f < 2; f++) {
    if (!path[f]) continue;
    GStatBuf st;
    if (g_stat(path[f], &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
      gboolean there = g_file_test(path[f], G_FILE_TEST_EXISTS);
      g_set_error(error, UTIL_ERROR, UTIL_ERROR_GNUPLOT, "gnuplot %s/%s exited 0 but %s is %s",
                  dir, gp, path[f], there ? "empty (a full disk?)" : "missing");
      goto fail;
    }
  }
  for (int f = 0; f < 2; f++)
    if (path[f] && images) g_ptr_array_add(images, path[f]);
    else g_free(path[f]);
  return TRUE;
fail:
  g_free(path[0]);
  g_free(path[1]);
  return FALSE;
}
