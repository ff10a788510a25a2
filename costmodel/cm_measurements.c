/* costmodel/measurements — reading measured collectives: nccl-tests output (the format its
 * src/common.cu prints) and the runner's measurements JSON (costmodel/CALIBRATION.md).
 * Contract in cm_calibrate.h. Nothing is appended unless the whole input is good. */
#include "costmodel/cm_calibrate.h"
#include "util/util_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(cm-error-quark, cm_error)

void cm_nccl_tests_info_clear(CmNcclTestsInfo *info) {
  if (!info) return;
  g_clear_pointer(&info->program, g_free);
}

/* nccl-tests program stems, most specific first: "reduce" is a substring of three others. */
static const struct {
  const char *stem;
  CmCollective kind;
} nccl_programs[] = {
    {"all_reduce", CM_ALL_REDUCE},        {"all_gather", CM_ALL_GATHER},
    {"reduce_scatter", CM_REDUCE_SCATTER}, {"alltoall", CM_ALL_TO_ALL},
    {"sendrecv", CM_SEND_RECV},            {"broadcast", CM_BROADCAST},
    {"reduce", CM_REDUCE},
};

gboolean cm_collective_from_nccl_program(const char *text, CmCollective *out) {
  g_return_val_if_fail(text != NULL && out != NULL, FALSE);
  for (gsize i = 0; i < G_N_ELEMENTS(nccl_programs); i++) {
    if (strstr(text, nccl_programs[i].stem)) {
      *out = nccl_programs[i].kind;
      return TRUE;
    }
  }
  return FALSE;
}

static gboolean parse_double(const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(v)) return FALSE;
  *out = v;
  return TRUE;
}

static gboolean parse_uint(const char *s, guint64 *out) {
  if (!*s) return FALSE;
  for (const char *c = s; *c; c++)
    if (!g_ascii_isdigit(*c)) return FALSE;
  return g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT64, out, NULL);
}

/* Strips a launcher's per-line prefix: mpirun --tag-output "[1,0]<stdout>:" or srun -l "0: ". */
static const char *strip_prefix(const char *line) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (*p == '[') {
    const char *tag = strstr(p, "]<stdout>:");
    if (!tag) tag = strstr(p, "]<stderr>:");
    if (tag) return tag + strlen("]<stdout>:");
  }
  const char *q = p;
  while (g_ascii_isdigit(*q)) q++;
  if (q > p && *q == ':' && (q[1] == ' ' || q[1] == '\t' || q[1] == '\0')) return q + 1;
  return line;
}

typedef struct {
  double time_us;
  gboolean ok;  /* #wrong is 0 or N/A */
} Column;

/* A table row: size count type [redop [root]] then (time algbw busbw #wrong) twice. */
static gboolean parse_row(char **tok, int ntok, guint64 *size, Column col[2]) {
  if (ntok < 11 || ntok > 13) return FALSE;
  guint64 count;
  if (!parse_uint(tok[0], size) || !parse_uint(tok[1], &count)) return FALSE;
  if (!g_ascii_isalpha(tok[2][0])) return FALSE; /* the data type: float, half, bfloat16, ... */
  for (int c = 0; c < 2; c++) {
    char **f = tok + ntok - 8 + 4 * c;
    double algbw, busbw, wrong;
    if (!parse_double(f[0], &col[c].time_us) || col[c].time_us < 0 ||
        !parse_double(f[1], &algbw) || !parse_double(f[2], &busbw))
      return FALSE;
    if (strcmp(f[3], "N/A") == 0) col[c].ok = TRUE;
    else if (parse_double(f[3], &wrong) && wrong >= 0) col[c].ok = wrong == 0;
    else return FALSE;
  }
  return TRUE;
}

/* A "Rank N Group G Pid P on HOST device D [bus] NAME" line (older releases: no Group). */
static gboolean parse_rank_line(char **tok, int ntok, guint64 *rank, const char **host) {
  if (ntok < 4 || strcmp(tok[0], "Rank") != 0 || !parse_uint(tok[1], rank)) return FALSE;
  for (int i = 2; i + 1 < ntok; i++) {
    if (strcmp(tok[i], "on") == 0) {
      *host = tok[i + 1];
      return TRUE;
    }
  }
  return FALSE;
}

static char **split_ws(const char *s, int *n) {
  char **tok = g_strsplit_set(s, " \t", -1);
  int k = 0;
  for (int i = 0; tok[i]; i++) {
    if (tok[i][0]) tok[k++] = tok[i];
    else g_free(tok[i]);
  }
  tok[k] = NULL;
  *n = k;
  return tok;
}

gboolean cm_nccl_tests_parse(const char *text, const char *origin, int kind_hint, GArray *out,
                             CmNcclTestsInfo *info, GError **error) {
  g_return_val_if_fail(text != NULL && origin != NULL && out != NULL, FALSE);
  gboolean ok = FALSE;
  char *program = NULL;
  double avg_busbw = NAN;
  int rows = 0, skipped = 0;
  GHashTable *ranks = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  GHashTable *hosts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GArray *found = g_array_new(FALSE, FALSE, sizeof(double) * 2); /* (bytes, time_s) */
  char **lines = g_strsplit(text, "\n", -1);
  gboolean blank = TRUE;
  for (const char *c = text; *c && blank; c++) blank = g_ascii_isspace(*c);
  if (blank) {
    g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s: empty file", origin);
    goto out;
  }
  for (int ln = 0; lines[ln]; ln++) {
    char *line = lines[ln];
    gsize len = strlen(line);
    if (len && line[len - 1] == '\r') line[len - 1] = '\0';
    const char *body = strip_prefix(line);
    while (*body == ' ' || *body == '\t') body++;
    int ntok;
    if (*body == '#') {
      const char *rest = body + 1;
      while (*rest == ' ' || *rest == '\t') rest++;
      if (g_str_has_prefix(rest, "Collective test starting:")) {
        g_free(program);
        program = g_strstrip(g_strdup(rest + strlen("Collective test starting:")));
      } else if (g_str_has_prefix(rest, "Avg bus bandwidth")) {
        const char *colon = strchr(rest, ':');
        char *end = NULL;
        if (colon) {
          double v = g_ascii_strtod(colon + 1, &end);
          if (end != colon + 1) avg_busbw = v;
        }
      } else {
        char **tok = split_ws(rest, &ntok);
        guint64 rank;
        const char *host;
        if (parse_rank_line(tok, ntok, &rank, &host)) {
          gint64 r = (gint64)rank;
          if (!g_hash_table_contains(ranks, &r)) g_hash_table_add(ranks, g_memdup2(&r, sizeof r));
          if (!g_hash_table_contains(hosts, host)) g_hash_table_add(hosts, g_strdup(host));
        }
        g_strfreev(tok);
      }
      continue;
    }
    char **tok = split_ws(body, &ntok);
    if (ntok == 0 || !g_ascii_isdigit(tok[0][0]) || strchr(tok[0], ':') || strchr(tok[0], '.')) {
      g_strfreev(tok); /* not a table row: NCCL INFO lines, launcher noise */
      continue;
    }
    guint64 size;
    Column col[2];
    if (!parse_row(tok, ntok, &size, col)) {
      g_set_error(error, CM_ERROR, CM_ERROR_PARSE,
                  "%s:%d: malformed nccl-tests row (expected size count type redop root "
                  "time algbw busbw #wrong time algbw busbw #wrong)",
                  origin, ln + 1);
      g_strfreev(tok);
      goto out;
    }
    g_strfreev(tok);
    rows++;
    for (int c = 0; c < 2; c++) {
      if (!col[c].ok) {
        skipped++;
        continue;
      }
      if (size == 0 || col[c].time_us <= 0) continue; /* nothing moved, nothing to fit */
      double pair[2] = {(double)size, col[c].time_us * 1e-6};
      g_array_append_val(found, pair);
    }
  }
  if (rows == 0) {
    g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s: no nccl-tests result rows", origin);
    goto out;
  }
  CmCollective kind;
  if (program) {
    if (!cm_collective_from_nccl_program(program, &kind)) {
      g_set_error(error, CM_ERROR, CM_ERROR_UNKNOWN_KIND,
                  "%s: nccl-tests program '%s' measures no collective stratsim models "
                  "(all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast, reduce)",
                  origin, program);
      goto out;
    }
    if (kind_hint >= 0 && (CmCollective)kind_hint != kind) {
      g_set_error(error, CM_ERROR, CM_ERROR_INVALID, "%s: output of %s, not of %s", origin,
                  program, cm_collective_name((CmCollective)kind_hint));
      goto out;
    }
  } else if (kind_hint >= 0 && kind_hint < CM_COLLECTIVE_COUNT) {
    kind = (CmCollective)kind_hint;
  } else {
    g_set_error(error, CM_ERROR, CM_ERROR_UNKNOWN_KIND,
                "%s: no '# Collective test starting' line says which collective this is; "
                "name the file after the nccl-tests program (all_reduce_perf, ...) or pass --kind",
                origin);
    goto out;
  }
  int nranks = (int)g_hash_table_size(ranks), nhosts = (int)g_hash_table_size(hosts);
  if (nranks == 0) {
    g_set_error(error, CM_ERROR, CM_ERROR_PARSE,
                "%s: no '#  Rank N ... on HOST device D' lines under '# Using devices': "
                "cannot tell the ranks and hosts",
                origin);
    goto out;
  }
  if (nranks < 2) {
    g_set_error(error, CM_ERROR, CM_ERROR_INVALID,
                "%s: one rank measures no communication", origin);
    goto out;
  }
  for (guint i = 0; i < found->len; i++) {
    const double *pair = &g_array_index(found, double, 2 * i);
    CmMeasurement m = {kind, nranks, nhosts, pair[0], pair[1]};
    g_array_append_val(out, m);
  }
  if (info) {
    info->program = g_steal_pointer(&program);
    info->ranks = nranks;
    info->nodes = nhosts;
    info->rows = rows;
    info->skipped = skipped;
    info->avg_busbw_GBps = avg_busbw;
  }
  ok = TRUE;
out:
  g_strfreev(lines);
  g_free(program);
  g_hash_table_destroy(ranks);
  g_hash_table_destroy(hosts);
  g_array_free(found, TRUE);
  return ok;
}

/* FALSE with the error for collectives[@index].@key, missing or not @range. */
static gboolean field_error(UtilJsonStatus status, const char *key, const char *range,
                            const char *origin, int index, GError **error) {
  gboolean missing = status == UTIL_JSON_MISSING;
  g_set_error(error, CM_ERROR, missing ? CM_ERROR_PARSE : CM_ERROR_INVALID,
              "%s: collectives[%d].%s: %s (%s)", origin, index, key,
              missing ? "missing" : "out of range", range);
  return FALSE;
}

static gboolean json_int(const cJSON *obj, const char *key, int lo, int hi, int *out,
                         const char *origin, int index, GError **error) {
  gint64 v = 0;
  UtilJsonStatus status = util_json_int(obj, key, lo, hi, &v);
  if (status == UTIL_JSON_OK) {
    *out = (int)v;
    return TRUE;
  }
  g_autofree char *range = g_strdup_printf("an integer from %d to %d", lo, hi);
  return field_error(status, key, range, origin, index, error);
}

static gboolean json_positive(const cJSON *obj, const char *key, double *out, const char *origin,
                              int index, GError **error) {
  double v = 0;
  UtilJsonStatus status = util_json_number(obj, key, &v);
  if (status == UTIL_JSON_OK && v > 0) {
    *out = v;
    return TRUE;
  }
  return field_error(status == UTIL_JSON_OK ? UTIL_JSON_OUT_OF_RANGE : status, key,
                     "a positive number", origin, index, error);
}

gboolean cm_measurements_parse_json(const char *text, const char *origin, GArray *out,
                                    char **device, GError **error) {
  g_return_val_if_fail(text != NULL && origin != NULL && out != NULL, FALSE);
  gboolean ok = FALSE;
  GArray *found = g_array_new(FALSE, FALSE, sizeof(CmMeasurement));
  cJSON *root = cJSON_Parse(text);
  if (!root || !cJSON_IsObject(root)) {
    g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s: not a JSON object", origin);
    goto out;
  }
  /* A runner's whole run-measurements file (validate/PLAN.md): its "collectives" object is a
   * measurements file of this format. */
  const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *body = root;
  if (cJSON_IsString(format) && strcmp(format->valuestring, "stratsim-measurements") == 0) {
    body = cJSON_GetObjectItemCaseSensitive(root, "collectives");
    if (!cJSON_IsObject(body)) {
      g_set_error(error, CM_ERROR, CM_ERROR_PARSE,
                  "%s: a run-measurements file without a \"collectives\" object (the runner "
                  "measured no collectives)", origin);
      goto out;
    }
  }
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(body, "device");
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "collectives");
  if (!cJSON_IsString(dev)) {
    g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s: \"device\" must be a string", origin);
    goto out;
  }
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
    g_set_error(error, CM_ERROR, CM_ERROR_PARSE,
                "%s: \"collectives\" must be a non-empty array", origin);
    goto out;
  }
  int i = 0;
  for (const cJSON *item = list->child; item; item = item->next, i++) {
    CmMeasurement m;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(item, "kind");
    if (!cJSON_IsObject(item) || !cJSON_IsString(kind)) {
      g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s: collectives[%d].kind: missing", origin, i);
      goto out;
    }
    if (!cm_collective_parse(kind->valuestring, &m.kind)) {
      g_set_error(error, CM_ERROR, CM_ERROR_UNKNOWN_KIND,
                  "%s: collectives[%d].kind: unknown collective '%s' (all_reduce, all_gather, "
                  "reduce_scatter, all_to_all, send_recv, broadcast, reduce)",
                  origin, i, kind->valuestring);
      goto out;
    }
    if (!json_int(item, "ranks", 2, DEV_MAX_DEVICES, &m.ranks, origin, i, error) ||
        !json_int(item, "nodes", 1, m.ranks, &m.nodes, origin, i, error) ||
        !json_positive(item, "bytes", &m.bytes, origin, i, error) ||
        !json_positive(item, "time_s", &m.time_s, origin, i, error))
      goto out;
    g_array_append_val(found, m);
  }
  g_array_append_vals(out, found->data, found->len);
  if (device) *device = g_strdup(dev->valuestring);
  ok = TRUE;
out:
  cJSON_Delete(root);
  g_array_free(found, TRUE);
  return ok;
}

gboolean cm_measurements_load_file(const char *path, int kind_hint, GArray *out, GError **error) {
  g_return_val_if_fail(path != NULL && out != NULL, FALSE);
  char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, error)) return FALSE;
  gboolean ok;
  const char *c = text;
  while (*c && g_ascii_isspace(*c)) c++;
  if (strlen(text) != len) {
    g_set_error(error, CM_ERROR, CM_ERROR_PARSE, "%s: not a text file", path);
    ok = FALSE;
  } else if (*c == '{') {
    ok = cm_measurements_parse_json(text, path, out, NULL, error);
  } else {
    /* The header's program name wins over the file's name, which may be anything. */
    CmCollective from_name;
    g_autofree char *base = g_path_get_basename(path);
    if (kind_hint < 0 && !strstr(text, "Collective test starting:") &&
        cm_collective_from_nccl_program(base, &from_name))
      kind_hint = (int)from_name;
    ok = cm_nccl_tests_parse(text, path, kind_hint, out, NULL, error);
  }
  g_free(text);
  return ok;
}
