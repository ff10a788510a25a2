/* Private to results/res_*.c: the database handle behind the opaque ResDb. */
#ifndef STRATSIM_RES_DB_INT_H
#define STRATSIM_RES_DB_INT_H

#include <sqlite3.h>
#include "results/res_db.h"

struct ResDb {
  sqlite3 *sql;
  char *path;
};

#endif
