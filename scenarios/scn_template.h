/* scenarios/template — the placeholder language of scenario templates.
 *
 * A template is text with placeholders substituted from a setting (variable -> value as text):
 * {name} is a variable's value as text; anything else inside braces is an arithmetic expression
 * over numeric variables (+ - * / % and parentheses, unary minus: {8*nodes}, {(gpus-1)%4});
 * {{ and }} are literal braces. An expression's value is printed as scn_format_number does.
 * Errors (SCN_ERROR_INVALID) name the template and the placeholder: an unset variable, a
 * non-numeric one in arithmetic, division by zero, an unmatched brace, nesting deeper than 200.
 */
#ifndef STRATSIM_SCN_TEMPLATE_H
#define STRATSIM_SCN_TEMPLATE_H

#include <glib.h>

G_BEGIN_DECLS

/* One assignment of values to variables (a point of the sweep axes). */
typedef struct {
  int nvars;
  char **vars;           /* variable names */
  char **values;         /* their values as text (numbers formatted by scn_format_number) */
  gboolean *numeric;
} ScnSetting;

/* Appends @var = @value (both copied); @numeric: the value came from a JSON number. */
void scn_setting_add(ScnSetting *setting, const char *var, const char *value, gboolean numeric);
/* The index of @var in @setting (nullable), or -1. */
int scn_setting_find(const ScnSetting *setting, const char *var);
/* Whether @name is a variable name: a letter or _, then letters, digits, _. */
gboolean scn_is_variable_name(const char *name);
/* A number as placeholder text: integers without a decimal point, others with %.15g. */
char *scn_format_number(double value);

/* Substitutes @setting's variables into @template_text (the rules above); adds the names
 * of the variables used to @used (nullable). NULL with SCN_ERROR_INVALID. */
char *scn_substitute(const char *template_text, const ScnSetting *setting, GHashTable *used,
                     GError **error);

/* Frees a heap-allocated setting and its strings (nullable). */
void scn_setting_free(ScnSetting *setting);

G_END_DECLS

#endif
