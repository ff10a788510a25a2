/* devices/nccl_env — the NCCL algorithms and protocols a network's documented job profile
 * allows (DevCluster.nccl_algo, .nccl_proto): NCCL_ALGO / NCCL_PROTO text in NCCL's own syntax
 * (src/graph/tuning.cc, parseList: names separated by ',', case-insensitive; a leading '^'
 * excludes the names listed instead of allowing only them); and the NCCL release a cluster's
 * jobs run (DevCluster.nccl_version), as NCCL numbers it: NCCL_VERSION_CODE = major x 10000 +
 * minor x 100 + patch from NCCL 2.9 on (src/nccl.h.in, NCCL_VERSION(X,Y,Z)); and the tuner
 * plugin the platform loads by default (DevCluster.nccl_tuner). */
#include "devices/dev_cluster-int.h"
#include "devices/dev_presets.h"

#include <string.h>

/* The names NCCL's NCCL_ALGO and NCCL_PROTO accept (src/include/device.h, ncclAlgoStr and
 * ncclProtoStr). */
static const char *const algo_names[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain",
                                         "NVLS", "NVLSTree", "PAT", NULL};
static const char *const proto_names[] = {"LL", "LL128", "Simple", NULL};

static gboolean known(const char *const *names, const char *name) {
  for (const char *const *n = names; *n; n++)
    if (g_ascii_strcasecmp(*n, name) == 0) return TRUE;
  return FALSE;
}

gboolean dev_nccl_list_allows(const char *list, const char *name) {
  if (!list) return TRUE;
  gboolean exclude = list[0] == '^';
  g_auto(GStrv) items = g_strsplit(exclude ? list + 1 : list, ",", -1);
  gboolean listed = FALSE;
  for (char **item = items; *item && !listed; item++) listed = g_ascii_strcasecmp(g_strstrip(*item), name) == 0;
  return exclude ? !listed : listed;
}

gboolean dev_check_nccl_list(const char *what, const char *text, gboolean protocols, GError **error) {
  const char *const *names = protocols ? proto_names : algo_names;
  const char *body = text[0] == '^' ? text + 1 : text;
  g_auto(GStrv) items = g_strsplit(body, ",", -1);
  gboolean any = FALSE;
  for (char **item = items; *item; item++) {
    g_strstrip(*item);
    if (!known(names, *item)) {
      g_autofree char *valid = dev_names_joined(names);
      g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID, "%s: '%s' is not an NCCL %s (known: %s)", what,
                  *item, protocols ? "protocol" : "algorithm", valid);
      return FALSE;
    }
    any = TRUE;
  }
  if (!any) {
    g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID, "%s is empty", what);
    return FALSE;
  }
  return TRUE;
}

/* The tuner plugins whose choices the collective model knows (costmodel/cm_aws_tuner.h). */
static const char *const tuner_names[] = {DEV_NCCL_TUNER_AWS_OFI_P6, NULL};

gboolean dev_check_nccl_tuner(const char *what, const char *text, GError **error) {
  for (const char *const *n = tuner_names; *n; n++)
    if (strcmp(*n, text) == 0) return TRUE;
  g_autofree char *valid = dev_names_joined(tuner_names);
  g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID, "%s: '%s' is not a tuner plugin this model knows (known: %s)",
              what, text, valid);
  return FALSE;
}

/* One decimal field of 1-2 digits (3 for none: the caller checks the separators). */
static gboolean version_field(const char **p, int *out) {
  int n = 0, digits = 0;
  while (g_ascii_isdigit(**p) && digits < 3) n = 10 * n + (*(*p)++ - '0'), digits++;
  *out = n;
  return digits >= 1 && digits <= 2;
}

gboolean dev_nccl_version_parse(const char *text, int *out) {
  g_return_val_if_fail(out != NULL, FALSE);
  if (!text) return FALSE;
  const char *p = text;
  int major, minor, patch = 0;
  if (!version_field(&p, &major) || major != 2 || *p++ != '.' || !version_field(&p, &minor)) return FALSE;
  if (*p == '.' && (p++, !version_field(&p, &patch))) return FALSE;
  if (*p != '\0') return FALSE;
  *out = major * 10000 + minor * 100 + patch;
  return TRUE;
}

gboolean dev_check_nccl_version(const char *what, const char *text, int *out, GError **error) {
  if (dev_nccl_version_parse(text, out)) return TRUE;
  g_set_error(error, DEV_ERROR, DEV_ERROR_INVALID,
              "%s: '%s' is not an NCCL release (MAJOR.MINOR[.PATCH], e.g. 2.19.3)", what, text);
  return FALSE;
}
