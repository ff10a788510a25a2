/* util/csv — reading small CSV tables (RFC 4180: comma-separated, fields in double quotes may
 * hold commas and "" for a quote; no newlines inside fields; a line starting with '#' is a
 * comment), such as the published measurements in tests/data/validation/. */
#ifndef STRATSIM_UTIL_CSV_H
#define STRATSIM_UTIL_CSV_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  GStrv header;      /* column names */
  GPtrArray *rows;   /* GStrv per data line (blank and '#' lines skipped), as many fields as
                        header */
} UtilCsv;

/* Reads @path. NULL with @error: G_FILE_ERROR when it cannot be read, G_FILE_ERROR_INVAL
 * naming the file and line for an unterminated quote or a row whose field count differs from
 * the header's. Free with util_csv_free. */
UtilCsv *util_csv_read(const char *path, GError **error);
void util_csv_free(UtilCsv *csv);
/* The index of column @name, or -1. */
int util_csv_column(const UtilCsv *csv, const char *name);
/* Field @column of row @row (borrowed). */
const char *util_csv_field(const UtilCsv *csv, guint row, int column);

G_END_DECLS

#endif
