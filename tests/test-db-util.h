/* Reading a results database from tests, and the sweep scenario several tests share.
 * Header-only. */
#ifndef STRATSIM_TEST_DB_UTIL_H
#define STRATSIM_TEST_DB_UTIL_H

#include <glib.h>
#include <sqlite3.h>

/* The one integer @sql_text returns from @db_path (opened read-only, waiting on writers). */
static inline gint64 test_db_query_int(const char *db_path, const char *sql_text) {
  sqlite3 *sql = NULL;
  sqlite3_stmt *st = NULL;
  g_assert_cmpint(sqlite3_open_v2(db_path, &sql, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  sqlite3_busy_timeout(sql, 10000);
  g_assert_cmpint(sqlite3_prepare_v2(sql, sql_text, -1, &st, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
  gint64 n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(sql);
  return n;
}

/* 80 points (name "claims"); a sweep of them takes about a second on one thread, so two
 * started together overlap and a progress line every 0.05 s shows several times. */
#define TEST_SCENARIO_80                                                                          \
  "{\"name\": \"claims\","                                                                        \
  " \"models\": [\"gpt:layers={layers},hidden=1024,heads=16,seq=1024,vocab=1000,batch={batch}\"]," \
  " \"clusters\": [\"dgx-a100:nodes=4\"],"                                                        \
  " \"strategies\": [\"megatron:tp={tp},pp=4,mb=1,schedule={schedule}\"],"                        \
  " \"axes\": {\"layers\": [16, 32], \"batch\": [16, 32, 48, 64, 80], \"tp\": [1, 2, 4, 8],"      \
  "          \"schedule\": [\"1f1b\", \"gpipe\"]}}"

#endif
