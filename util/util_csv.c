/* util/csv — see util_csv.h. */
#include "util/util_csv.h"

#include <string.h>

/* Splits one line into fields; NULL on an unterminated quote. */
static GStrv split_line(const char *line) {
  GPtrArray *fields = g_ptr_array_new();
  GString *f = g_string_new(NULL);
  const char *p = line;
  for (;;) {
    g_string_truncate(f, 0);
    if (*p == '"') {
      p++;
      for (;;) {
        if (*p == '\0') {
          g_string_free(f, TRUE);
          g_ptr_array_set_free_func(fields, g_free);
          g_ptr_array_free(fields, TRUE);
          return NULL;
        }
        if (*p == '"' && p[1] == '"') {
          g_string_append_c(f, '"');
          p += 2;
        } else if (*p == '"') {
          p++;
          break;
        } else {
          g_string_append_c(f, *p++);
        }
      }
      while (*p && *p != ',') g_string_append_c(f, *p++); /* text after the closing quote */
    } else {
      while (*p && *p != ',') g_string_append_c(f, *p++);
    }
    g_ptr_array_add(fields, g_strdup(f->str));
    if (*p != ',') break;
    p++;
  }
  g_string_free(f, TRUE);
  g_ptr_array_add(fields, NULL);
  return (GStrv)g_ptr_array_free(fields, FALSE);
}

UtilCsv *util_csv_read(const char *path, GError **error) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, error)) return NULL;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  UtilCsv *csv = g_new0(UtilCsv, 1);
  csv->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  for (int i = 0; lines[i]; i++) {
    g_strchomp(lines[i]); /* a \r of CRLF files too */
    if (lines[i][0] == '\0' || lines[i][0] == '#') continue; /* blank, or a comment */
    GStrv fields = split_line(lines[i]);
    if (!fields || (csv->header && g_strv_length(fields) != g_strv_length(csv->header))) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                  "%s line %d: %s", path, i + 1,
                  fields ? "the number of fields differs from the header's" : "unterminated quote");
      g_strfreev(fields);
      util_csv_free(csv);
      return NULL;
    }
    if (!csv->header) csv->header = fields;
    else g_ptr_array_add(csv->rows, fields);
  }
  if (!csv->header) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: empty, no header", path);
    util_csv_free(csv);
    return NULL;
  }
  return csv;
}

void util_csv_free(UtilCsv *csv) {
  if (!csv) return;
  g_strfreev(csv->header);
  g_ptr_array_unref(csv->rows);
  g_free(csv);
}

int util_csv_column(const UtilCsv *csv, const char *name) {
  for (int i = 0; csv->header[i]; i++)
    if (strcmp(csv->header[i], name) == 0) return i;
  return -1;
}

const char *util_csv_field(const UtilCsv *csv, guint row, int column) {
  GStrv fields = g_ptr_array_index(csv->rows, row);
  return fields[column];
}
