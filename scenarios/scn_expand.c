/* scenarios/expand — a scenario's points (scn_scenario.h): every model x cluster x strategy x
 * combination of axis values in the documented order, substituted (scn_template.h), keyed by a
 * SHA-256 of the canonical text of the specs and run options, repeated keys dropped. */
#include "scenarios/scn_scenario.h"
#include "sim/sim_crossmesh.h"

#include <cjson/cJSON.h>
#include <string.h>

static void point_free(gpointer p) {
  ScnPoint *pt = p;
  g_free(pt->key);
  g_free(pt->model);
  g_free(pt->cluster);
  g_free(pt->strategy);
  g_free(pt->model_label);
  g_free(pt->cluster_label);
  g_free(pt->strategy_label);
  g_free(pt->axes_json);
  scn_setting_free(pt->values);
  g_free(pt);
}

char *scn_point_canonical(const ScnScenario *sc, const char *model, const char *cluster,
                          const char *strategy) {
  /* The cross-mesh and framework lines only when the option is given: the keys of every other
   * scenario stay as they were. */
  g_autofree char *crossmesh =
      sc->crossmesh ? g_strdup_printf("crossmesh=%s,%s\n", sim_crossmesh_method_name(sc->crossmesh_method),
                                      sim_crossmesh_order_name(sc->crossmesh_order))
                    : g_strdup("");
  g_autofree char *framework =
      sc->has_framework ? g_strdup_printf("framework=%s\n", mdl_framework_name(sc->framework))
                        : g_strdup("");
  return g_strdup_printf("model=%s\ncluster=%s\nstrategy=%s\ncollectives=%s\nsymmetry=%s\n"
                         "profiles=%s\ncalibration=%s\n%s%s",
                         model, cluster, strategy, sc->step_collectives ? "step" : "task",
                         sc->no_symmetry ? "off" : "on", sc->no_profiles ? "off" : "on",
                         sc->calibration ? sc->calibration : "", crossmesh, framework);
}

const char *scn_point_value(const ScnPoint *point, const char *var) {
  int i = scn_setting_find(point->values, var);
  return i >= 0 ? point->values->values[i] : NULL;
}

char *scn_scenario_resolve(const ScnScenario *sc, const char *spec) {
  if (!sc->dir || (!strchr(spec, '/') && !strstr(spec, ".json"))) return g_strdup(spec);
  const char *colon = strchr(spec, ':');
  g_autofree char *path = colon ? g_strndup(spec, (gsize)(colon - spec)) : g_strdup(spec);
  if (g_path_is_absolute(path)) return g_strdup(spec);
  g_autofree char *joined = g_build_filename(sc->dir, path, NULL);
  if (!g_file_test(joined, G_FILE_TEST_IS_REGULAR)) return g_strdup(spec);
  return g_strconcat(joined, colon ? colon : "", NULL);
}

static char *points_axes_json(const ScnSetting *values) {
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; i < values->nvars; i++) {
    if (values->numeric[i]) cJSON_AddNumberToObject(o, values->vars[i], g_ascii_strtod(values->values[i], NULL));
    else cJSON_AddStringToObject(o, values->vars[i], values->values[i]);
  }
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  char *copy = g_strdup(text);
  cJSON_free(text);
  return copy;
}

GPtrArray *scn_scenario_expand(const ScnScenario *sc, GError **error) {
  g_return_val_if_fail(sc != NULL, NULL);
  GPtrArray *points = g_ptr_array_new_with_free_func(point_free);
  GHashTable *keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GHashTable *used_any = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  guint naxes = sc->axes->len;
  /* The product first, in double (a few long axes overflow guint): refused before anything is
   * allocated per point. */
  double product = (double)sc->models->len * sc->clusters->len * sc->strategies->len;
  for (guint a = 0; a < naxes; a++)
    product *= ((ScnAxis *)g_ptr_array_index(sc->axes, a))->settings->len;
  if (product > SCN_MAX_POINTS) {
    g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID,
                "scenario %s: models x clusters x strategies x axis values = %.15g points exceed "
                "the limit of %d", sc->name ? sc->name : "", product, SCN_MAX_POINTS);
    g_ptr_array_unref(points);
    g_hash_table_unref(keys);
    g_hash_table_unref(used_any);
    return NULL;
  }
  g_autofree guint *digit = g_new0(guint, naxes + 1);
  guint combos = 1;
  for (guint a = 0; a < naxes; a++)
    combos *= ((ScnAxis *)g_ptr_array_index(sc->axes, a))->settings->len;
  const GPtrArray *lists[3] = {sc->models, sc->clusters, sc->strategies};
  static const char *const list_names[3] = {"models", "clusters", "strategies"};
  for (guint m = 0; m < sc->models->len; m++)
    for (guint c = 0; c < sc->clusters->len; c++)
      for (guint s = 0; s < sc->strategies->len; s++)
        for (guint combo = 0; combo < combos; combo++) {
          /* Mixed radix, the first axis the most significant digit. */
          guint rest = combo;
          for (guint a = naxes; a-- > 0;) {
            guint n = ((ScnAxis *)g_ptr_array_index(sc->axes, a))->settings->len;
            digit[a] = rest % n;
            rest /= n;
          }
          ScnSetting *all = g_new0(ScnSetting, 1);
          for (guint a = 0; a < naxes; a++) {
            const ScnAxis *axis = g_ptr_array_index(sc->axes, a);
            const ScnSetting *set = g_ptr_array_index(axis->settings, digit[a]);
            for (int k = 0; k < set->nvars; k++) scn_setting_add(all, set->vars[k], set->values[k], set->numeric[k]);
          }
          guint entry[3] = {m, c, s};
          char *spec[3] = {NULL, NULL, NULL}, *label[3] = {NULL, NULL, NULL};
          GHashTable *used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
          gboolean ok = TRUE;
          for (int k = 0; k < 3 && ok; k++) {
            const ScnTemplate *t = g_ptr_array_index(lists[k], entry[k]);
            GError *local = NULL;
            if (!(spec[k] = scn_substitute(t->spec, all, used, &local)) ||
                !(label[k] = scn_substitute(t->label, all, NULL, &local))) {
              g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID, "scenario %s: %s[%u]: %s", sc->name,
                          list_names[k], entry[k], local->message);
              g_error_free(local);
              ok = FALSE;
            }
          }
          if (ok) {
            g_autofree char *canonical = scn_point_canonical(sc, spec[0], spec[1], spec[2]);
            char *key = g_compute_checksum_for_string(G_CHECKSUM_SHA256, canonical, -1);
            if (g_hash_table_contains(keys, key)) {
              g_free(key);
            } else {
              g_hash_table_add(keys, key);
              ScnPoint *p = g_new0(ScnPoint, 1);
              p->index = points->len;
              p->key = g_strdup(key);
              p->model = spec[0], p->cluster = spec[1], p->strategy = spec[2];
              p->model_label = label[0], p->cluster_label = label[1], p->strategy_label = label[2];
              spec[0] = spec[1] = spec[2] = label[0] = label[1] = label[2] = NULL;
              p->model_entry = m, p->cluster_entry = c, p->strategy_entry = s;
              p->values = g_new0(ScnSetting, 1);
              for (int k = 0; k < all->nvars; k++)
                if (g_hash_table_contains(used, all->vars[k])) {
                  scn_setting_add(p->values, all->vars[k], all->values[k], all->numeric[k]);
                  g_hash_table_add(used_any, g_strdup(all->vars[k]));
                }
              p->axes_json = points_axes_json(p->values);
              g_ptr_array_add(points, p);
            }
          }
          for (int k = 0; k < 3; k++) {
            g_free(spec[k]);
            g_free(label[k]);
          }
          g_hash_table_destroy(used);
          scn_setting_free(all);
          if (!ok) goto fail;
        }
  /* An axis no template uses would silently sweep nothing: say so. */
  for (guint a = 0; a < naxes; a++) {
    const ScnAxis *axis = g_ptr_array_index(sc->axes, a);
    const ScnSetting *first = g_ptr_array_index(axis->settings, 0);
    for (int k = 0; k < first->nvars; k++)
      if (!g_hash_table_contains(used_any, first->vars[k])) {
        g_set_error(error, SCN_ERROR, SCN_ERROR_INVALID,
                    "scenario %s: axes.%s sets {%s}, which no model, cluster or strategy uses",
                    sc->name, axis->name, first->vars[k]);
        goto fail;
      }
  }
  g_hash_table_destroy(keys);
  g_hash_table_destroy(used_any);
  return points;
fail:
  g_hash_table_destroy(keys);
  g_hash_table_destroy(used_any);
  g_ptr_array_free(points, TRUE);
  return NULL;
}
