/* scenarios/template — the placeholder language of scenario templates (scn_template.h): {name},
 * arithmetic over numeric variables, {{ and }}. */
#include "scenarios/scn_template.h"
#include "scenarios/scn_scenario.h"

#include <math.h>
#include <string.h>

char *scn_format_number(double value) {
  if (value == floor(value) && fabs(value) < 1e15) return g_strdup_printf("%.0f", value);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup(g_ascii_formatd(buf, sizeof buf, "%.15g", value));
}

void scn_setting_free(ScnSetting *s) {
  if (!s) return;
  for (int i = 0; i < s->nvars; i++) {
    g_free(s->vars[i]);
    g_free(s->values[i]);
  }
  g_free(s->vars);
  g_free(s->values);
  g_free(s->numeric);
  g_free(s);
}

void scn_setting_add(ScnSetting *s, const char *var, const char *value, gboolean numeric) {
  s->vars = g_renew(char *, s->vars, s->nvars + 1);
  s->values = g_renew(char *, s->values, s->nvars + 1);
  s->numeric = g_renew(gboolean, s->numeric, s->nvars + 1);
  s->vars[s->nvars] = g_strdup(var);
  s->values[s->nvars] = g_strdup(value);
  s->numeric[s->nvars] = numeric;
  s->nvars++;
}

int scn_setting_find(const ScnSetting *s, const char *var) {
  for (int i = 0; s && i < s->nvars; i++)
    if (strcmp(s->vars[i], var) == 0) return i;
  return -1;
}

/* --- placeholder expressions: + - * / % and parentheses over numeric variables ------------ */

typedef struct {
  const char *p;
  const ScnSetting *setting;
  GHashTable *used;
  GError **error;
  const char *text; /* the whole expression, for messages */
  int depth;        /* nested '(' and unary '-', at most EXPR_MAX_DEPTH */
} Expr;

/* Deeper nesting is refused: each level is a C stack frame, and 100000 '(' overflowed the
 * stack (tests/fuzz/regressions/scenario). */
#define EXPR_MAX_DEPTH 200

static gboolean expr_sum(Expr *e, double *out);

static void skip_space(Expr *e) {
  while (*e->p == ' ' || *e->p == '\t') e->p++;
}

static gboolean expr_atom(Expr *e, double *out) {
  skip_space(e);
  if ((*e->p == '(' || *e->p == '-') && e->depth >= EXPR_MAX_DEPTH) {
    g_set_error(e->error, SCN_ERROR, SCN_ERROR_INVALID,
                "{%.40s...}: nested deeper than %d levels", e->text, EXPR_MAX_DEPTH);
    return FALSE;
  }
  if (*e->p == '(') {
    e->p++;
    e->depth++;
    if (!expr_sum(e, out)) return FALSE;
    e->depth--;
    skip_space(e);
    if (*e->p != ')') {
      g_set_error(e->error, SCN_ERROR, SCN_ERROR_INVALID, "{%s}: missing ')'", e->text);
      return FALSE;
    }
    e->p++;
    return TRUE;
  }
  if (*e->p == '-') {
    e->p++;
    e->depth++;
    if (!expr_atom(e, out)) return FALSE;
    e->depth--;
    *out = -*out;
    return TRUE;
  }
  if (g_ascii_isdigit(*e->p) || *e->p == '.') {
    char *end = NULL;
    *out = g_ascii_strtod(e->p, &end);
    e->p = end;
    return TRUE;
  }
  if (g_ascii_isalpha(*e->p) || *e->p == '_') {
    const char *start = e->p;
    while (g_ascii_isalnum(*e->p) || *e->p == '_') e->p++;
    g_autofree char *name = g_strndup(start, (gsize)(e->p - start));
    int i = scn_setting_find(e->setting, name);
    if (i < 0) {
      g_set_error(e->error, SCN_ERROR, SCN_ERROR_INVALID, "{%s}: no axis sets '%s'", e->text, name);
      return FALSE;
    }
    if (!e->setting->numeric[i]) {
      g_set_error(e->error, SCN_ERROR, SCN_ERROR_INVALID,
                  "{%s}: '%s' is \"%s\", not a number, so it cannot take part in arithmetic",
                  e->text, name, e->setting->values[i]);
      return FALSE;
    }
    if (e->used) g_hash_table_add(e->used, g_strdup(name));
    *out = g_ascii_strtod(e->setting->values[i], NULL);
    return TRUE;
  }
  g_set_error(e->error, SCN_ERROR, SCN_ERROR_INVALID, "{%s}: unexpected '%s'", e->text,
              *e->p ? e->p : "end");
  return FALSE;
}

static gboolean expr_product(Expr *e, double *out) {
  if (!expr_atom(e, out)) return FALSE;
  for (;;) {
    skip_space(e);
    char op = *e->p;
    if (op != '*' && op != '/' && op != '%') return TRUE;
    e->p++;
    double rhs;
    if (!expr_atom(e, &rhs)) return FALSE;
    if ((op == '/' || op == '%') && rhs == 0) {
      g_set_error(e->error, SCN_ERROR, SCN_ERROR_INVALID, "{%s}: division by zero", e->text);
      return FALSE;
    }
    *out = op == '*' ? *out * rhs : op == '/' ? *out / rhs : fmod(*out, rhs);
  }
}

static gboolean expr_sum(Expr *e, double *out) {
  if (!expr_product(e, out)) return FALSE;
  for (;;) {
    skip_space(e);
    char op = *e->p;
    if (op != '+' && op != '-') return TRUE;
    e->p++;
    double rhs;
    if (!expr_product(e, &rhs)) return FALSE;
    *out = op == '+' ? *out + rhs : *out - rhs;
  }
}

gboolean scn_is_variable_name(const char *s) {
  if (!g_ascii_isalpha(*s) && *s != '_') return FALSE;
  for (; *s; s++)
    if (!g_ascii_isalnum(*s) && *s != '_') return FALSE;
  return TRUE;
}

char *scn_substitute(const char *tpl, const ScnSetting *setting, GHashTable *used,
                     GError **error) {
  GString *out = g_string_new(NULL);
  for (const char *p = tpl; *p;) {
    if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
      g_string_append_c(out, p[0]);
      p += 2;
      continue;
    }
    if (*p == '}') {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "'%s': unmatched '}' (write }} for a brace)", tpl);
      goto fail;
    }
    if (*p != '{') {
      g_string_append_c(out, *p++);
      continue;
    }
    const char *close = strchr(p, '}');
    if (!close) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "'%s': unmatched '{' (write {{ for a brace)", tpl);
      goto fail;
    }
    g_autofree char *inner = g_strstrip(g_strndup(p + 1, (gsize)(close - p - 1)));
    int i = scn_is_variable_name(inner) ? scn_setting_find(setting, inner) : -1;
    if (i >= 0) {
      g_string_append(out, setting->values[i]);
      if (used) g_hash_table_add(used, g_strdup(inner));
    } else if (scn_is_variable_name(inner)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "'%s': no axis sets {%s}", tpl, inner);
      goto fail;
    } else {
      Expr e = {.p = inner, .setting = setting, .used = used, .error = error, .text = inner};
      double v;
      if (!expr_sum(&e, &v)) goto fail;
      skip_space(&e);
      if (*e.p) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "'%s': {%s}: unexpected '%s'", tpl, inner, e.p);
        goto fail;
      }
      if (!isfinite(v)) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "'%s': {%s} is not a finite number", tpl, inner);
        goto fail;
      }
      g_autofree char *num = scn_format_number(v);
      g_string_append(out, num);
    }
    p = close + 1;
  }
  return g_string_free(out, FALSE);
fail:
  g_string_free(out, TRUE);
  return NULL;
}
