/* Private to results/res_*.c: the database handle behind the opaque ResDb. */
#ifndef STRATSIM_RES_DB_INT_H
#define STRATSIM_RES_DB_INT_H

#include <sqlite3.h>
#include "results/res_db.h"

struct ResDb {
  sqlite3 *sql;
  char *path;
};

/* Inside an open transaction: adds a `runs` row (now, @command, the specs as typed, this
 * binary's version) and returns its id, or -1 (sqlite3_errmsg tells why; the caller rolls
 * back). NULL specs are stored as NULL. */
gint64 res_db_insert_run(ResDb *db, const char *command, const char *model, const char *cluster,
                         const char *strategy);

#endif
