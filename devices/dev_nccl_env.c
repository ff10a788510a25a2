/* devices/nccl_env — the NCCL algorithms and protocols a network's documented job profile
 * allows (DevCluster.nccl_algo, .nccl_proto): NCCL_ALGO / NCCL_PROTO text in NCCL's own syntax
 * (src/graph/tuning.cc, parseList: names separated by ',', case-insensitive; a leading '^'
 * excludes the names listed instead of allowing only them). */
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
