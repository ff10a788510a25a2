/* scenarios/reshard — single cross-mesh moves, cases x methods (scn_reshard.h). */
#include "scenarios/scn_reshard.h"
#include "util/util_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "devices/dev_cluster.h"
#include "scenarios/scn_scenario.h"

static void case_free(gpointer p) {
  ScnReshardCase *c = p;
  g_free(c->label);
  g_free(c->src);
  g_free(c->dst);
  g_free(c);
}

static void method_free(gpointer p) {
  ScnReshardMethod *m = p;
  g_free(m->label);
  g_free(m);
}

void scn_reshard_free(ScnReshard *r) {
  if (!r) return;
  g_free(r->name);
  g_free(r->description);
  g_free(r->paper);
  g_free(r->cluster);
  if (r->cases) g_ptr_array_unref(r->cases);
  if (r->methods) g_ptr_array_unref(r->methods);
  g_free(r);
}

gboolean scn_reshard_is(const char *json_text) {
  cJSON *root = cJSON_Parse(json_text);
  const cJSON *kind = root ? cJSON_GetObjectItemCaseSensitive(root, "kind") : NULL;
  gboolean is = cJSON_IsString(kind) && strcmp(kind->valuestring, "reshard") == 0;
  cJSON_Delete(root);
  return is;
}

/* Refuses fields outside @known (comments, starting with `_`, pass). */
static gboolean known_fields(const cJSON *obj, const char *where, const char *const *known,
                             GError **error) {
  for (const cJSON *f = obj->child; f; f = f->next) {
    gboolean ok = f->string[0] == '_';
    for (int i = 0; known[i] && !ok; i++) ok = strcmp(f->string, known[i]) == 0;
    if (!ok) {
      g_autofree char *list = g_strjoinv(", ", (char **)known);
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: unknown field \"%s\" (known: %s)",
                  where, f->string, list);
      return FALSE;
    }
  }
  return TRUE;
}

static char *string_field(const cJSON *obj, const char *name, gboolean required,
                          const char *where, GError **error) {
  const char *text = "";
  UtilJsonStatus status = util_json_string(obj, name, TRUE, &text);
  if (status == UTIL_JSON_OK || (status == UTIL_JSON_MISSING && !required)) return g_strdup(text);
  g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: \"%s\" must be a non-empty string",
              where, name);
  return NULL;
}

/* A mesh [hosts, GPUs per host]. */
static gboolean mesh_field(const cJSON *obj, const char *name, const char *where, int *out,
                           GError **error) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2) goto bad;
  for (int i = 0; i < 2; i++) {
    gint64 x = 0;
    if (util_json_int_value(cJSON_GetArrayItem(v, i), 1, 4096, &x) != UTIL_JSON_OK) goto bad;
    out[i] = (int)x;
  }
  return TRUE;
bad:
  g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
              "reshard %s: \"%s\" must be [hosts, GPUs per host] (positive integers)", where, name);
  return FALSE;
}

static gboolean parse_cases(const cJSON *root, ScnReshard *r, GError **error) {
  static const char *const known[] = {"label", "src_mesh", "dst_mesh", "src", "dst", NULL};
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "cases");
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: \"cases\" must be a non-empty array", r->name);
    return FALSE;
  }
  int i = 0;
  for (const cJSON *c = list->child; c; c = c->next, i++) {
    g_autofree char *where = g_strdup_printf("%s: cases[%d]", r->name, i);
    if (!cJSON_IsObject(c) || !known_fields(c, where, known, error)) {
      if (error && !*error)
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: not an object", where);
      return FALSE;
    }
    ScnReshardCase *rc = g_new0(ScnReshardCase, 1);
    g_ptr_array_add(r->cases, rc);
    if (!(rc->label = string_field(c, "label", TRUE, where, error)) ||
        !mesh_field(c, "src_mesh", where, rc->src_mesh, error) ||
        !mesh_field(c, "dst_mesh", where, rc->dst_mesh, error) ||
        !(rc->src = string_field(c, "src", TRUE, where, error)) ||
        !(rc->dst = string_field(c, "dst", TRUE, where, error)))
      return FALSE;
    /* The layouts are checked here, so that a typo fails at load time. */
    for (int side = 0; side < 2; side++) {
      MdlLayout layout;
      int ndims;
      GError *local = NULL;
      if (!sim_crossmesh_layout_parse(side ? rc->dst : rc->src, 2, &layout, &ndims, &local)) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: %s", where, local->message);
        g_error_free(local);
        return FALSE;
      }
      if (ndims != r->ndims) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE,
                    "reshard %s: layout '%s' has %d tensor dims, the tensor %d", where,
                    side ? rc->dst : rc->src, ndims, r->ndims);
        return FALSE;
      }
    }
  }
  return TRUE;
}

static gboolean parse_methods(const cJSON *root, ScnReshard *r, GError **error) {
  static const char *const known[] = {"label", "method", "order", NULL};
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "methods");
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: \"methods\" must be a non-empty array", r->name);
    return FALSE;
  }
  int i = 0;
  for (const cJSON *m = list->child; m; m = m->next, i++) {
    g_autofree char *where = g_strdup_printf("%s: methods[%d]", r->name, i);
    if (!cJSON_IsObject(m) || !known_fields(m, where, known, error)) {
      if (error && !*error)
        g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: not an object", where);
      return FALSE;
    }
    ScnReshardMethod *rm = g_new0(ScnReshardMethod, 1);
    g_ptr_array_add(r->methods, rm);
    g_autofree char *method = NULL, *order = NULL;
    if (!(rm->label = string_field(m, "label", TRUE, where, error)) ||
        !(method = string_field(m, "method", TRUE, where, error)) ||
        !(order = string_field(m, "order", TRUE, where, error)))
      return FALSE;
    if (!sim_crossmesh_method_parse(method, &rm->method)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: method '%s' (send_recv, "
                  "local_allgather, global_allgather, broadcast)", where, method);
      return FALSE;
    }
    if (!sim_crossmesh_order_parse(order, &rm->order)) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: order '%s' (naive, greedy, dfs, "
                  "randomized_greedy, ensemble)", where, order);
      return FALSE;
    }
  }
  return TRUE;
}

ScnReshard *scn_reshard_from_json(const char *json_text, GError **error) {
  static const char *const known[] = {"name", "kind", "description", "paper", "cluster",
                                      "tensor", "element_bytes", "cases", "methods", NULL};
  cJSON *root = cJSON_Parse(json_text);
  if (!cJSON_IsObject(root)) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard: not a JSON object");
    cJSON_Delete(root);
    return NULL;
  }
  ScnReshard *r = g_new0(ScnReshard, 1);
  r->cases = g_ptr_array_new_with_free_func(case_free);
  r->methods = g_ptr_array_new_with_free_func(method_free);
  const cJSON *v;
  if (!(r->name = string_field(root, "name", TRUE, "file", error)) ||
      !known_fields(root, r->name, known, error) ||
      !(r->description = string_field(root, "description", FALSE, r->name, error)) ||
      !(r->paper = string_field(root, "paper", FALSE, r->name, error)) ||
      !(r->cluster = string_field(root, "cluster", TRUE, r->name, error)))
    goto err;
  v = cJSON_GetObjectItemCaseSensitive(root, "kind");
  if (!cJSON_IsString(v) || strcmp(v->valuestring, "reshard") != 0) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: \"kind\" must be \"reshard\"", r->name);
    goto err;
  }
  v = cJSON_GetObjectItemCaseSensitive(root, "tensor");
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > MDL_MAX_DIMS) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: \"tensor\" must be a shape of 1 to %d dims",
                r->name, MDL_MAX_DIMS);
    goto err;
  }
  for (const cJSON *d = v->child; d; d = d->next) {
    gint64 size = 0;
    if (util_json_int_value(d, 1, G_GINT64_CONSTANT(1000000000000000), &size) != UTIL_JSON_OK) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: \"tensor\": dims are positive integers",
                  r->name);
      goto err;
    }
    r->tensor[r->ndims++] = size;
  }
  v = cJSON_GetObjectItemCaseSensitive(root, "element_bytes");
  r->element_bytes = 2;
  if (v) {
    if (!cJSON_IsNumber(v) || v->valuedouble <= 0 || v->valuedouble > 64) {
      g_set_error(error, SCN_ERROR, SCN_ERROR_PARSE, "reshard %s: \"element_bytes\" must be a positive number",
                  r->name);
      goto err;
    }
    r->element_bytes = v->valuedouble;
  }
  if (!parse_cases(root, r, error) || !parse_methods(root, r, error)) goto err;
  cJSON_Delete(root);
  return r;
err:
  cJSON_Delete(root);
  scn_reshard_free(r);
  return NULL;
}

ScnReshard *scn_reshard_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, error)) return NULL;
  ScnReshard *r = scn_reshard_from_json(text, error);
  if (!r) g_prefix_error(error, "%s: ", path);
  return r;
}

/* --- running ------------------------------------------------------------------------------ */

static void row_free(gpointer p) {
  ScnReshardRow *row = p;
  g_free(row->seconds);
  g_free(row->cost);
  g_free(row);
}

/* A mesh of @shape[0] hosts from @first_host, their first @shape[1] GPUs. */
static MdlMesh host_mesh(const DevCluster *c, int first_host, const int *shape) {
  MdlMesh m = {.ndims = 2, .shape = {shape[0], shape[1]}, .ndevices = shape[0] * shape[1]};
  m.devices = g_new(int, m.ndevices);
  for (int i = 0; i < shape[0]; i++)
    for (int j = 0; j < shape[1]; j++) m.devices[i * shape[1] + j] = (first_host + i) * c->gpus_per_node + j;
  return m;
}

static gboolean run_case(const ScnReshard *r, const ScnReshardCase *rc, ScnReshardRow *row,
                         GError **error) {
  gboolean ok = FALSE;
  MdlMesh src = {0}, dst = {0};
  g_autofree char *spec = g_strdup_printf("%s%snodes=%d", r->cluster, strchr(r->cluster, ':') ? "," : ":",
                                          rc->src_mesh[0] + rc->dst_mesh[0]);
  DevCluster *c = dev_cluster_parse_spec(spec, error);
  if (!c) goto out;
  if (MAX(rc->src_mesh[1], rc->dst_mesh[1]) > c->gpus_per_node) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "a mesh row of %d GPUs on hosts of %d",
                MAX(rc->src_mesh[1], rc->dst_mesh[1]), c->gpus_per_node);
    goto out;
  }
  src = host_mesh(c, 0, rc->src_mesh);
  dst = host_mesh(c, rc->src_mesh[0], rc->dst_mesh);
  MdlLayout from, to;
  int ndims;
  if (!sim_crossmesh_layout_parse(rc->src, 2, &from, &ndims, error) ||
      !sim_crossmesh_layout_parse(rc->dst, 2, &to, &ndims, error))
    goto out;
  for (guint k = 0; k < r->methods->len; k++) {
    const ScnReshardMethod *rm = g_ptr_array_index(r->methods, k);
    SimCrossMeshOptions o;
    sim_crossmesh_options_init(&o);
    o.method = rm->method;
    o.order = rm->order;
    SimCrossMeshPlan *plan = sim_crossmesh_plan_new(c, &src, from, &dst, to, r->tensor, r->ndims,
                                                    r->element_bytes, &o, error);
    if (!plan) goto out;
    row->units = sim_crossmesh_plan_num_units(plan);
    row->seconds[k] = sim_crossmesh_estimate(plan);
    row->cost[k] = sim_crossmesh_plan_cost(plan);
    sim_crossmesh_plan_free(plan);
  }
  ok = TRUE;
out:
  g_free(src.devices);
  g_free(dst.devices);
  dev_cluster_free(c);
  return ok;
}

GPtrArray *scn_reshard_run(const ScnReshard *r, GError **error) {
  g_return_val_if_fail(r, NULL);
  GPtrArray *rows = g_ptr_array_new_with_free_func(row_free);
  for (guint i = 0; i < r->cases->len; i++) {
    const ScnReshardCase *rc = g_ptr_array_index(r->cases, i);
    ScnReshardRow *row = g_new0(ScnReshardRow, 1);
    row->seconds = g_new0(double, r->methods->len);
    row->cost = g_new0(double, r->methods->len);
    g_ptr_array_add(rows, row);
    if (!run_case(r, rc, row, error)) {
      g_prefix_error(error, "reshard %s: case %s (%s -> %s): ", r->name, rc->label, rc->src, rc->dst);
      g_ptr_array_unref(rows);
      return NULL;
    }
  }
  return rows;
}

void scn_reshard_print(const ScnReshard *r, const GPtrArray *rows, FILE *out) {
  fprintf(out, "%s", r->name);
  if (r->description[0]) fprintf(out, ": %s", r->description);
  fprintf(out, "\ncluster %s, tensor (", r->cluster);
  for (int d = 0; d < r->ndims; d++) fprintf(out, "%s%" G_GINT64_FORMAT, d ? ", " : "", r->tensor[d]);
  fprintf(out, "), %g bytes per element; seconds per move, simulated alone\n", r->element_bytes);
  fprintf(out, "%-6s %-22s %-13s %6s", "case", "layouts", "meshes", "units");
  /* A column per method, as wide as its label (at least 9). */
  g_autofree int *width = g_new(int, r->methods->len);
  for (guint k = 0; k < r->methods->len; k++) {
    const char *label = ((const ScnReshardMethod *)g_ptr_array_index(r->methods, k))->label;
    width[k] = MAX(9, (int)strlen(label));
    fprintf(out, "  %*s", width[k], label);
  }
  fputc('\n', out);
  for (guint i = 0; i < rows->len; i++) {
    const ScnReshardCase *rc = g_ptr_array_index(r->cases, i);
    const ScnReshardRow *row = g_ptr_array_index(rows, i);
    g_autofree char *layouts = g_strdup_printf("%s -> %s", rc->src, rc->dst);
    g_autofree char *meshes = g_strdup_printf("(%d,%d)->(%d,%d)", rc->src_mesh[0], rc->src_mesh[1],
                                              rc->dst_mesh[0], rc->dst_mesh[1]);
    fprintf(out, "%-6s %-22s %-13s %6d", rc->label, layouts, meshes, row->units);
    for (guint k = 0; k < r->methods->len; k++) fprintf(out, "  %*.3f", width[k], row->seconds[k]);
    fputc('\n', out);
  }
  fprintf(out, "methods:");
  for (guint k = 0; k < r->methods->len; k++) {
    const ScnReshardMethod *rm = g_ptr_array_index(r->methods, k);
    fprintf(out, "%s %s = %s + %s", k ? "," : "", rm->label, sim_crossmesh_method_name(rm->method),
            sim_crossmesh_order_name(rm->order));
  }
  fputc('\n', out);
}

/* --- chart -------------------------------------------------------------------------------- */

/* A data-file label: double-quoted, no double quotes inside. */
static char *quoted(const char *text) {
  g_autofree char *copy = g_strdup(text);
  for (char *c = copy; *c; c++)
    if (*c == '"' || *c == '\n' || *c == '\t') *c = *c == '"' ? '\'' : ' ';
  return g_strdup_printf("\"%s\"", copy);
}

gboolean scn_reshard_chart(const ScnReshard *r, const GPtrArray *rows, const char *out_dir,
                           const char *base, unsigned formats, ScnChartOutcome *o, GError **error) {
  g_return_val_if_fail(r && rows && out_dir && base && o && o->files, FALSE);
  if (g_mkdir_with_parents(out_dir, 0755) != 0) {
    int e = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "cannot create %s: %s", out_dir,
                g_strerror(e));
    return FALSE;
  }
  GString *data = g_string_new(NULL);
  g_string_append_printf(data, "# stratsim reshard %s: seconds per move\n# case", r->name);
  for (guint k = 0; k < r->methods->len; k++) {
    g_autofree char *label = g_strdelimit(
        g_strdup(((const ScnReshardMethod *)g_ptr_array_index(r->methods, k))->label), " \t", '_');
    g_string_append_printf(data, " %s", label);
  }
  g_string_append(data, " units\n");
  for (guint i = 0; i < rows->len; i++) {
    const ScnReshardCase *rc = g_ptr_array_index(r->cases, i);
    const ScnReshardRow *row = g_ptr_array_index(rows, i);
    g_autofree char *label = quoted(rc->label);
    g_string_append(data, label);
    for (guint k = 0; k < r->methods->len; k++) g_string_append_printf(data, " %.9g", row->seconds[k]);
    g_string_append_printf(data, " %d\n", row->units);
  }
  /* Wide enough for every bar to be a few pixels: the groups share 1000 px at least. */
  int width = MAX(900, (int)(rows->len * (r->methods->len + 1) * 14) + 200), height = 480;
  g_autofree char *epilogue = NULL;
  g_autofree char *terminal = util_gnuplot_terminal(base, formats, width, height, &epilogue);
  GString *shape = g_string_new(NULL);
  for (int d = 0; d < r->ndims; d++)
    g_string_append_printf(shape, "%s%" G_GINT64_FORMAT, d ? ", " : "", r->tensor[d]);
  g_autofree char *title = g_strdup_printf("%s: one move of a (%s) tensor of %g-byte elements, %s",
                                           r->name, shape->str, r->element_bytes, r->cluster);
  g_string_free(shape, TRUE);
  g_autofree char *qtitle = util_gnuplot_title(title, r->paper[0] ? r->paper : NULL);
  static const char *const colours[] = {"#e41a1c", "#377eb8", "#4daf4a", "#984ea3",
                                        "#ff7f00", "#a65628", "#f781bf", "#999999"};
  g_autofree char *dat = g_strdup_printf("%s.dat", base);
  g_autofree char *gp = g_strdup_printf("%s.gp", base);
  GString *plot = g_string_new(NULL);
  g_string_append_printf(
      plot,
      "# stratsim chart: draw with `gnuplot %s.gp` in this directory (reads %s.dat)\n%s"
      "set title %s noenhanced\nset xlabel 'case'\nset ylabel 'time per move (s)'\n"
      "set style data histograms\nset style histogram clustered gap 1\n"
      "set style fill solid 0.85 border rgb '#404040'\nset boxwidth 0.9\n"
      "set key outside right top noenhanced\nset grid ytics\nset yrange [0:*]\nset border 3\n"
      "set xtics nomirror\nset ytics nomirror\nplot ",
      base, base, terminal, qtitle);
  for (guint k = 0; k < r->methods->len; k++) {
    const ScnReshardMethod *rm = g_ptr_array_index(r->methods, k);
    g_autofree char *q = util_gnuplot_quote(rm->label);
    g_string_append_printf(plot, "%s'%s' using %u%s title %s lc rgb '%s'", k ? ", \\\n     " : "",
                           k ? "" : dat, k + 2,
                           k ? "" : ":xtic(1)", q, colours[k % G_N_ELEMENTS(colours)]);
  }
  g_string_append_printf(plot, "\n%s", epilogue);
  gboolean ok = util_write_file(out_dir, dat, data->str, o->files, error) &&
                util_write_file(out_dir, gp, plot->str, o->files, error);
  g_string_free(data, TRUE);
  g_string_free(plot, TRUE);
  if (!ok) return FALSE;
  g_ptr_array_add(o->scripts, g_strdup(base));
  return scn_chart_draw(out_dir, formats, o, error);
}
