/* model/json_count — counts a model JSON's entries while its bytes go by, before any parse.
 *
 * cJSON builds a node of some 64 bytes (plus its strings) for every value, so a 240 MiB model
 * file of 7.9 M tensors took 3.5 GB and 17.5 s to parse before the reader's count check could
 * refuse it (issue 17, item 7). This scanner needs no tree: it follows strings (and their
 * escapes) and brackets, knows the top-level key each depth-1 container belongs to, and counts
 * the entries of every open container. It refuses as soon as the top-level "tensors" array
 * passes MDL_MAX_TENSORS entries, "ops" passes MDL_MAX_OPS, or any other container passes
 * MDL_JSON_MAX_ENTRIES (the format's own arrays and objects hold at most a few dozen: shapes
 * and dims MDL_MAX_DIMS, inputs MDL_MAX_INPUTS, an op some 15 fields), so memory stays in
 * proportion to what the reader accepts. Malformed JSON is not judged here: cJSON does that,
 * with its line and context, once the counts pass. Containers nested deeper than
 * MDL_JSON_COUNT_DEPTH are not counted (cJSON refuses nesting past 1000 levels anyway). */
#include "model/mdl_json_count.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

enum { KIND_OTHER, KIND_TENSORS, KIND_OPS };

typedef struct {
  gint64 entries;  /* entries begun so far */
  gboolean value;  /* a value (or key) has begun since the last ',' or the opening bracket */
  int kind;
} Open;

struct MdlJsonCount {
  char *origin;
  gint64 offset;        /* bytes seen */
  int depth;            /* open containers */
  gboolean in_string, escape;
  char key[16];         /* the last string closed at depth 1 (a top-level key), truncated */
  gsize key_len;
  gboolean key_truncated;
  Open open[MDL_JSON_COUNT_DEPTH];
};

MdlJsonCount *mdl_json_count_new(const char *origin) {
  MdlJsonCount *c = g_new0(MdlJsonCount, 1);
  c->origin = g_strdup(origin ? origin : "json");
  return c;
}

void mdl_json_count_free(MdlJsonCount *c) {
  if (!c) return;
  g_free(c->origin);
  g_free(c);
}

static gboolean refuse(MdlJsonCount *c, const Open *o, GError **error) {
  if (o->kind == KIND_TENSORS || o->kind == KIND_OPS) {
    gboolean tensors = o->kind == KIND_TENSORS;
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "%s: \"%s\" has more than %d entries, over the limit of %d %s (refused at byte %"
                G_GINT64_FORMAT ", before parsing)", c->origin, tensors ? "tensors" : "ops",
                tensors ? MDL_MAX_TENSORS : MDL_MAX_OPS, tensors ? MDL_MAX_TENSORS : MDL_MAX_OPS,
                tensors ? "tensors" : "ops", c->offset);
  } else {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "%s: a JSON array or object at depth %d has more than %d entries (refused at byte %"
                G_GINT64_FORMAT "); the model format's own hold at most a few dozen", c->origin,
                c->depth, MDL_JSON_MAX_ENTRIES, c->offset);
  }
  return FALSE;
}

/* A value or key begins at the current depth: count it once per entry. */
static gboolean begin_value(MdlJsonCount *c, GError **error) {
  if (c->depth < 1 || c->depth > MDL_JSON_COUNT_DEPTH) return TRUE;
  Open *o = &c->open[c->depth - 1];
  if (o->value) return TRUE;
  o->value = TRUE;
  o->entries++;
  gint64 limit = o->kind == KIND_TENSORS ? MDL_MAX_TENSORS
                 : o->kind == KIND_OPS   ? MDL_MAX_OPS
                                         : MDL_JSON_MAX_ENTRIES;
  return o->entries <= limit || refuse(c, o, error);
}

static void open_container(MdlJsonCount *c, char bracket) {
  c->depth++;
  if (c->depth > MDL_JSON_COUNT_DEPTH) return;
  Open *o = &c->open[c->depth - 1];
  memset(o, 0, sizeof *o);
  if (c->depth == 2 && bracket == '[' && !c->key_truncated) {
    if (c->key_len == 7 && memcmp(c->key, "tensors", 7) == 0) o->kind = KIND_TENSORS;
    else if (c->key_len == 3 && memcmp(c->key, "ops", 3) == 0) o->kind = KIND_OPS;
  }
}

gboolean mdl_json_count_feed(MdlJsonCount *c, const char *bytes, gsize len, GError **error) {
  g_return_val_if_fail(c != NULL && (bytes != NULL || len == 0), FALSE);
  for (gsize i = 0; i < len; i++, c->offset++) {
    char ch = bytes[i];
    if (c->in_string) {
      if (c->escape) c->escape = FALSE;
      else if (ch == '\\') c->escape = TRUE;
      else if (ch == '"') c->in_string = FALSE;
      else if (c->depth == 1 && c->key_len < sizeof c->key) c->key[c->key_len++] = ch;
      else if (c->depth == 1) c->key_truncated = TRUE;
      continue;
    }
    switch (ch) {
    case ' ': case '\t': case '\n': case '\r': case ':':
      break;
    case '"':
      if (!begin_value(c, error)) return FALSE;
      c->in_string = TRUE;
      if (c->depth == 1) c->key_len = 0, c->key_truncated = FALSE;
      break;
    case '[': case '{':
      if (!begin_value(c, error)) return FALSE;
      open_container(c, ch);
      break;
    case ']': case '}':
      if (c->depth > 0) c->depth--;
      break;
    case ',':
      if (c->depth >= 1 && c->depth <= MDL_JSON_COUNT_DEPTH) c->open[c->depth - 1].value = FALSE;
      break;
    default: /* numbers, true, false, null */
      if (!begin_value(c, error)) return FALSE;
      break;
    }
  }
  return TRUE;
}

gboolean mdl_json_count_text(const char *text, const char *origin, GError **error) {
  g_return_val_if_fail(text != NULL, FALSE);
  MdlJsonCount *c = mdl_json_count_new(origin);
  gboolean ok = mdl_json_count_feed(c, text, strlen(text), error);
  mdl_json_count_free(c);
  return ok;
}

gboolean mdl_read_model_json_file(const char *path, char **text, GError **error) {
  g_return_val_if_fail(path != NULL && text != NULL, FALSE);
  GStatBuf st;
  if (g_stat(path, &st) == 0 && (gint64)st.st_size > MDL_MAX_JSON_BYTES) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "model file %s is %" G_GINT64_FORMAT " bytes, over the limit of %" G_GINT64_FORMAT
                " MiB", path, (gint64)st.st_size, MDL_MAX_JSON_BYTES >> 20);
    return FALSE;
  }
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model file %s: %s", path, g_strerror(errno));
    return FALSE;
  }
  g_autofree char *origin = g_strdup_printf("model file %s", path);
  MdlJsonCount *c = mdl_json_count_new(origin);
  GString *s = g_string_new(NULL);
  char buf[1 << 16];
  gboolean ok = TRUE;
  gsize n;
  while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) {
    ok = mdl_json_count_feed(c, buf, n, error);
    g_string_append_len(s, buf, (gssize)n);
    if (ok && (gint64)s->len > MDL_MAX_JSON_BYTES) { /* grew while being read */
      g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "model file %s is over the limit of %"
                  G_GINT64_FORMAT " MiB", path, MDL_MAX_JSON_BYTES >> 20);
      ok = FALSE;
    }
  }
  if (ok && ferror(f)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model file %s: read error", path);
    ok = FALSE;
  }
  fclose(f);
  mdl_json_count_free(c);
  if (ok && memchr(s->str, '\0', s->len)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "model file %s holds a NUL byte: not JSON text",
                path);
    ok = FALSE;
  }
  *text = ok ? g_string_free(s, FALSE) : (g_string_free(s, TRUE), NULL);
  return ok;
}
