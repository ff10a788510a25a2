/* results/list — what a database holds, as tables for `stratsim list runs|searches|
 * calibrations|scenarios` (issue 17, item 9): the latest rows first, read-only. */
#ifndef STRATSIM_RES_LIST_H
#define STRATSIM_RES_LIST_H

#include <glib.h>
#include "results/res_db.h"

G_BEGIN_DECLS

typedef struct {
  GPtrArray *columns;  /* char *: column titles */
  GPtrArray *rows;     /* GStrv: one text per column ("-" for NULL) */
} ResTable;

void res_table_free(ResTable *table);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ResTable, res_table_free)

/* The kinds res_db_list knows, NULL-terminated: runs, searches, calibrations, scenarios. */
const char *const *res_list_kinds(void);

/* Lists @what (one of res_list_kinds) from @db: at most @limit rows (0: all), newest first
 * (calibrations and scenarios by name). NULL with RES_ERROR_NOT_FOUND for an unknown kind (the
 * message lists the kinds), RES_ERROR_OPEN on a database error. */
ResTable *res_db_list(ResDb *db, const char *what, guint limit, GError **error);

G_END_DECLS

#endif
