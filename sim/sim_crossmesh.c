/* sim/crossmesh — unit-task decomposition (paper App. B.2) and the plan object.
 *
 * Each tensor dim gets the cut points of both tilings; the slices are the cells of the product
 * of the resulting intervals, enumerated row-major (dim 0 slowest). A device's tile is a box of
 * whole intervals, so each device lists the slices inside its box: holders per slice from the
 * source mesh, receivers from the destination mesh (CSR built by counting, O(output)). */
#include "sim/sim-int.h"
#include "sim/sim_crossmesh-int.h"
#include "sim/sim_network.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Guards the slice count (the product of interval counts) against absurd tilings. */
#define CMX_MAX_SLICES (1 << 22)

static const char *const method_names[SIM_CROSSMESH_METHOD_COUNT] = {
    "send_recv", "local_allgather", "global_allgather", "broadcast"};
static const char *const order_names[SIM_CROSSMESH_ORDER_COUNT] = {
    "naive", "greedy", "dfs", "randomized_greedy", "ensemble"};

const char *sim_crossmesh_method_name(SimCrossMeshMethod method) {
  g_return_val_if_fail(method < SIM_CROSSMESH_METHOD_COUNT, "?");
  return method_names[method];
}

gboolean sim_crossmesh_method_parse(const char *text, SimCrossMeshMethod *out) {
  for (int i = 0; text && i < SIM_CROSSMESH_METHOD_COUNT; i++)
    if (strcmp(text, method_names[i]) == 0) {
      *out = (SimCrossMeshMethod)i;
      return TRUE;
    }
  return FALSE;
}

const char *sim_crossmesh_order_name(SimCrossMeshOrder order) {
  g_return_val_if_fail(order < SIM_CROSSMESH_ORDER_COUNT, "?");
  return order_names[order];
}

gboolean sim_crossmesh_order_parse(const char *text, SimCrossMeshOrder *out) {
  for (int i = 0; text && i < SIM_CROSSMESH_ORDER_COUNT; i++)
    if (strcmp(text, order_names[i]) == 0) {
      *out = (SimCrossMeshOrder)i;
      return TRUE;
    }
  return FALSE;
}

gboolean sim_crossmesh_layout_parse(const char *text, int mesh_ndims, MdlLayout *layout,
                                    int *ndims, GError **error) {
  g_return_val_if_fail(text && layout && ndims && mesh_ndims >= 1 && mesh_ndims <= MDL_MAX_MESH_AXES,
                       FALSE);
  for (int a = 0; a < MDL_MAX_MESH_AXES; a++) layout->axis[a] = MDL_LAYOUT_BROADCAST;
  int dim = 0;
  for (const char *c = text; *c;) {
    if (dim == MDL_MAX_DIMS) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "layout '%s': more than %d tensor dims", text,
                  MDL_MAX_DIMS);
      return FALSE;
    }
    if (*c == 'R') {
      c++, dim++;
      continue;
    }
    if (*c != 'S') {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE,
                  "layout '%s': '%c' is not R or S (one token per tensor dim: R, S0, S01, S^{01})",
                  text, *c);
      return FALSE;
    }
    c++;
    gboolean brace = FALSE;
    if (*c == '^') c++;
    if (*c == '{') c++, brace = TRUE;
    int axes = 0;
    for (; g_ascii_isdigit(*c); c++, axes++) {
      int a = *c - '0';
      if (a >= mesh_ndims || layout->axis[a] != MDL_LAYOUT_BROADCAST) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "layout '%s': mesh axis %d %s", text, a,
                    a >= mesh_ndims ? "is outside the mesh" : "splits two dims");
        return FALSE;
      }
      layout->axis[a] = (int8_t)dim;
    }
    if (brace && *c++ != '}') axes = 0;
    if (axes == 0) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_PARSE, "layout '%s': S needs its mesh axes (S0, S01, S^{01})",
                  text);
      return FALSE;
    }
    dim++;
  }
  *ndims = dim;
  return TRUE;
}

void sim_crossmesh_options_init(SimCrossMeshOptions *o) {
  memset(o, 0, sizeof *o);
  o->method = SIM_CROSSMESH_BROADCAST;
  o->order = SIM_CROSSMESH_ENSEMBLE;
  o->seed = 1;
  o->broadcast_chunks = 100;  /* paper §3.1: "K ~ 100 in our experiments" */
  o->randomized_trials = 32;  /* paper §3.2 says only "repeat this process multiple times" */
  o->dfs_node_budget = 200000;
}

/* ---- Tilings ---------------------------------------------------------------------------- */

typedef struct {
  int64_t lo[MDL_MAX_DIMS], hi[MDL_MAX_DIMS];
} Box;

/* Checks a mesh and its layout; fills the split degree of every tensor dim. */
static gboolean check_side(const DevCluster *cluster, const MdlMesh *mesh, MdlLayout layout,
                           int ndims, const char *side, int *degree, GError **error) {
  int nd = dev_cluster_num_devices(cluster);
  if (mesh->ndims < 1 || mesh->ndims > MDL_MAX_MESH_AXES || mesh->ndevices < 1 || !mesh->devices) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID, "cross-mesh resharding: empty %s mesh", side);
    return FALSE;
  }
  for (int i = 0; i < mesh->ndevices; i++) {
    int d = mesh->devices[i];
    if (d < 0 || d >= nd) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                  "cross-mesh resharding: %s mesh device %d is not in the cluster (0..%d)", side, d,
                  nd - 1);
      return FALSE;
    }
    for (int j = 0; j < i; j++)
      if (mesh->devices[j] == d) {
        g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                    "cross-mesh resharding: %s mesh lists device %d twice", side, d);
        return FALSE;
      }
  }
  for (int d = 0; d < ndims; d++) degree[d] = 1;
  for (int a = 0; a < mesh->ndims; a++) {
    int v = layout.axis[a];
    if (v == MDL_LAYOUT_PARTIAL) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                  "cross-mesh resharding: %s layout is Partial on mesh axis %d; reduce the "
                  "partial sums before moving the tensor", side, a);
      return FALSE;
    }
    if (v >= ndims || v < MDL_LAYOUT_PARTIAL) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                  "cross-mesh resharding: %s layout splits tensor dim %d on mesh axis %d, but the "
                  "tensor has %d dims", side, v, a, ndims);
      return FALSE;
    }
    if (v >= 0) degree[v] *= mesh->shape[a];
  }
  return TRUE;
}

static inline int64_t tile_size(int64_t length, int degree) { return (length + degree - 1) / degree; }

/* The tile of every device of @mesh: along each dim, the row-major index over the axes that
 * split it (first axis major), cut in tiles of ceil(l / k), the last one short. */
static void tile_boxes(const MdlMesh *mesh, MdlLayout layout, int ndims, const int64_t *shape,
                       const int *degree, Box *boxes) {
  for (int i = 0; i < mesh->ndevices; i++) {
    int coord[MDL_MAX_MESH_AXES];
    int rest = i;
    for (int a = mesh->ndims - 1; a >= 0; a--) {
      coord[a] = rest % mesh->shape[a];
      rest /= mesh->shape[a];
    }
    for (int d = 0; d < ndims; d++) {
      int64_t t = 0;
      for (int a = 0; a < mesh->ndims; a++)
        if (layout.axis[a] == d) t = t * mesh->shape[a] + coord[a];
      int64_t c = tile_size(shape[d], degree[d]);
      boxes[i].lo[d] = MIN(t * c, shape[d]);
      boxes[i].hi[d] = MIN((t + 1) * c, shape[d]);
    }
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int find_cut(const int64_t *cuts, int n, int64_t v) {
  const int64_t *p = bsearch(&v, cuts, (size_t)n, sizeof *cuts, cmp_i64);
  g_assert(p);
  return (int)(p - cuts);
}

/* Calls back for every slice id inside @box: ranges of interval indices per dim. */
typedef struct {
  int ndims;
  int nint[MDL_MAX_DIMS];     /* intervals per dim */
  int64_t *cuts[MDL_MAX_DIMS];
  int ncuts[MDL_MAX_DIMS];
} Grid;

static int64_t grid_slices_in(const Grid *g, const Box *box, int *first, int *last) {
  int64_t count = 1;
  for (int d = 0; d < g->ndims; d++) {
    if (box->lo[d] >= box->hi[d]) return 0;
    first[d] = find_cut(g->cuts[d], g->ncuts[d], box->lo[d]);
    last[d] = find_cut(g->cuts[d], g->ncuts[d], box->hi[d]);  /* exclusive */
    count *= last[d] - first[d];
  }
  return count;
}

/* Adds device @who (a mesh index) to every slice inside @box: counting pass when @fill is
 * NULL (counts[slice]++), else fill[pos[slice]++] = who. */
static void grid_visit(const Grid *g, const Box *box, int who, int *counts, int *fill, int *pos) {
  int first[MDL_MAX_DIMS], last[MDL_MAX_DIMS], cur[MDL_MAX_DIMS];
  if (grid_slices_in(g, box, first, last) == 0) return;
  memcpy(cur, first, sizeof(int) * (size_t)g->ndims);
  for (;;) {
    int64_t id = 0;
    for (int d = 0; d < g->ndims; d++) id = id * g->nint[d] + cur[d];
    if (fill) fill[pos[id]++] = who;
    else counts[id]++;
    int d = g->ndims - 1;
    while (d >= 0 && ++cur[d] == last[d]) cur[d] = first[d], d--;
    if (d < 0) break;
  }
}

/* CSR of mesh indices per slice. */
static void slice_lists(const Grid *g, const Box *boxes, int ndevices, int64_t nslices,
                        int **offsets_out, int **list_out) {
  int *offsets = g_new0(int, nslices + 1);
  for (int i = 0; i < ndevices; i++) grid_visit(g, &boxes[i], i, offsets + 1, NULL, NULL);
  for (int64_t s = 0; s < nslices; s++) offsets[s + 1] += offsets[s];
  int *list = g_new(int, offsets[nslices] ? offsets[nslices] : 1);
  g_autofree int *pos = g_memdup2(offsets, sizeof(int) * (gsize)nslices);
  for (int i = 0; i < ndevices; i++) grid_visit(g, &boxes[i], i, NULL, list, pos);
  *offsets_out = offsets;
  *list_out = list;
}

typedef struct {
  int device, index;
} DevIndex;

static int cmp_dev_index(const void *a, const void *b) {
  return ((const DevIndex *)a)->device - ((const DevIndex *)b)->device;
}

/* Sorts mesh indices @idx by cluster id into @devices / @indices. */
static void sorted_devices(const int *idx, int n, const int *mesh_devices, int *devices,
                           int *indices) {
  g_autofree DevIndex *tmp = g_new(DevIndex, n ? n : 1);
  for (int i = 0; i < n; i++) tmp[i] = (DevIndex){mesh_devices[idx[i]], idx[i]};
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_dev_index);
  for (int i = 0; i < n; i++) devices[i] = tmp[i].device, indices[i] = tmp[i].index;
}

/* Distinct hosts of ascending @devices. */
static int distinct_hosts(const SimCrossMeshPlan *p, const int *devices, int n, int *hosts) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    int h = cmx_host(p, devices[i]);
    if (m == 0 || hosts[m - 1] != h) hosts[m++] = h;
  }
  return m;
}

/* Candidate sender hosts, their T, m_i. */
static void unit_hosts(SimCrossMeshPlan *p, CmxUnit *u) {
  u->cand_host = g_new(int, u->pub.nholders);
  u->ncand = distinct_hosts(p, u->holders, u->pub.nholders, u->cand_host);
  u->cand_seconds = g_new(double, u->ncand);
  u->min_seconds = INFINITY;
  for (int k = 0, j = 0; k < u->ncand; k++) {
    while (cmx_host(p, u->holders[j]) != u->cand_host[k]) j++;
    u->cand_seconds[k] = cmx_unit_seconds(p, u, u->holders[j]);
    u->min_seconds = MIN(u->min_seconds, u->cand_seconds[k]);
  }
  u->recv_hosts = g_new(int, u->pub.nreceivers);
  u->nrecv_hosts = distinct_hosts(p, u->receivers, u->pub.nreceivers, u->recv_hosts);
}

/* Units alike for the host-level model: same candidates, the same T from each, same m_i. */
static void unit_classes(SimCrossMeshPlan *p) {
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GString *key = g_string_new(NULL);
  p->nclasses = 0;
  for (int i = 0; i < p->nunits; i++) {
    CmxUnit *u = &p->units[i];
    g_string_truncate(key, 0);
    for (int k = 0; k < u->ncand; k++)
      g_string_append_printf(key, "%d:%a,", u->cand_host[k], u->cand_seconds[k]);
    g_string_append_c(key, '|');
    for (int k = 0; k < u->nrecv_hosts; k++) g_string_append_printf(key, "%d,", u->recv_hosts[k]);
    gpointer cls;
    if (g_hash_table_lookup_extended(seen, key->str, NULL, &cls)) {
      u->cls = GPOINTER_TO_INT(cls);
    } else {
      u->cls = p->nclasses++;
      g_hash_table_insert(seen, g_strdup(key->str), GINT_TO_POINTER(u->cls));
    }
  }
  g_string_free(key, TRUE);
}

/* Builds the units of the product grid; drops receivers that hold the slice themselves. */
static gboolean decompose(SimCrossMeshPlan *p, const MdlMesh *src, MdlLayout src_layout,
                          const MdlMesh *dst, MdlLayout dst_layout, const int *src_degree,
                          const int *dst_degree, GError **error) {
  g_autofree Box *src_boxes = g_new(Box, src->ndevices);
  g_autofree Box *dst_boxes = g_new(Box, dst->ndevices);
  tile_boxes(src, src_layout, p->ndims, p->shape, src_degree, src_boxes);
  tile_boxes(dst, dst_layout, p->ndims, p->shape, dst_degree, dst_boxes);

  Grid g = {.ndims = p->ndims};
  int64_t nslices = 1;
  gboolean ok = TRUE;
  for (int d = 0; d < p->ndims; d++) {
    int ks = src_degree[d], kd = dst_degree[d];
    int64_t cs = tile_size(p->shape[d], ks), cd = tile_size(p->shape[d], kd);
    g.cuts[d] = g_new(int64_t, ks + kd + 2);
    int n = 0;
    for (int j = 0; j <= ks; j++) g.cuts[d][n++] = MIN(j * cs, p->shape[d]);
    for (int j = 0; j <= kd; j++) g.cuts[d][n++] = MIN(j * cd, p->shape[d]);
    qsort(g.cuts[d], (size_t)n, sizeof(int64_t), cmp_i64);
    int m = 0;
    for (int j = 0; j < n; j++)
      if (m == 0 || g.cuts[d][m - 1] != g.cuts[d][j]) g.cuts[d][m++] = g.cuts[d][j];
    g.ncuts[d] = m;
    g.nint[d] = m - 1;
    nslices *= g.nint[d];
    if (nslices > CMX_MAX_SLICES) ok = FALSE;
  }
  if (!ok) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "cross-mesh resharding: the two tilings cut the tensor into more than %d slices",
                CMX_MAX_SLICES);
    for (int d = 0; d < p->ndims; d++) g_free(g.cuts[d]);
    return FALSE;
  }

  int *h_off, *h_list, *r_off, *r_list;
  slice_lists(&g, src_boxes, src->ndevices, nslices, &h_off, &h_list);
  slice_lists(&g, dst_boxes, dst->ndevices, nslices, &r_off, &r_list);

  p->units = g_new0(CmxUnit, nslices);
  p->nunits = 0;
  g_autofree int *kept = g_new(int, dst->ndevices);
  for (int64_t s = 0; s < nslices; s++) {
    CmxUnit *u = &p->units[p->nunits];
    int64_t rest = s, elements = 1;
    for (int d = p->ndims - 1; d >= 0; d--) {
      int i = (int)(rest % g.nint[d]);
      rest /= g.nint[d];
      u->pub.lo[d] = g.cuts[d][i];
      u->pub.hi[d] = g.cuts[d][i + 1];
      elements *= u->pub.hi[d] - u->pub.lo[d];
    }
    int nh = h_off[s + 1] - h_off[s];
    g_assert(nh > 0);  /* the source tiling covers the tensor */
    /* Receivers that hold the slice already copy it locally. */
    int nr = 0;
    for (int j = r_off[s]; j < r_off[s + 1]; j++) {
      int idx = r_list[j], local = -1;
      for (int k = h_off[s]; k < h_off[s + 1]; k++)
        if (src->devices[h_list[k]] == dst->devices[idx]) local = h_list[k];
      if (local >= 0) p->dst_local[idx] = local;
      else kept[nr++] = idx;
    }
    if (nr == 0) continue;
    u->pub.bytes = (double)elements * p->elem_bytes;
    u->holders = g_new(int, nh);
    u->holder_index = g_new(int, nh);
    sorted_devices(h_list + h_off[s], nh, src->devices, u->holders, u->holder_index);
    u->receivers = g_new(int, nr);
    u->receiver_index = g_new(int, nr);
    sorted_devices(kept, nr, dst->devices, u->receivers, u->receiver_index);
    u->pub.holders = u->holders;
    u->pub.nholders = nh;
    u->pub.receivers = u->receivers;
    u->pub.nreceivers = nr;
    p->nunits++;
  }
  g_free(h_off), g_free(h_list), g_free(r_off), g_free(r_list);
  for (int d = 0; d < p->ndims; d++) g_free(g.cuts[d]);
  return TRUE;
}

/* The sending device on each unit's chosen host: the lowest holder under the naive order
 * (paper §3.2), else the holder on that host with the fewest bytes assigned so far, in the
 * plan's order (spreads the sends over the host's GPUs; ties: lowest id). */
static void choose_senders(SimCrossMeshPlan *p) {
  g_autofree double *sent = g_new0(double, p->num_devices);
  for (int o = 0; o < p->nunits; o++) {
    CmxUnit *u = &p->units[p->order[o]];
    int host = u->cand_host[u->choice], best = -1;
    for (int j = 0; j < u->pub.nholders; j++) {
      int d = u->holders[j];
      if (cmx_host(p, d) != host) continue;
      if (best < 0 || (p->options.order != SIM_CROSSMESH_NAIVE && sent[d] < sent[best])) best = d;
    }
    g_assert(best >= 0);
    u->pub.sender = best;
    u->pub.duration = u->cand_seconds[u->choice];
    sent[best] += u->pub.bytes;
  }
}

SimCrossMeshPlan *sim_crossmesh_plan_new(const DevCluster *cluster, const MdlMesh *src_mesh,
                                         MdlLayout src_layout, const MdlMesh *dst_mesh,
                                         MdlLayout dst_layout, const int64_t *tensor_shape,
                                         int ndims, double elem_bytes,
                                         const SimCrossMeshOptions *options, GError **error) {
  g_return_val_if_fail(cluster && src_mesh && dst_mesh && tensor_shape, NULL);
  if (ndims < 1 || ndims > MDL_MAX_DIMS) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "cross-mesh resharding: a tensor of %d dims (1..%d)", ndims, MDL_MAX_DIMS);
    return NULL;
  }
  double elements = 1;
  for (int d = 0; d < ndims; d++) {
    if (tensor_shape[d] < 1) {
      g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                  "cross-mesh resharding: tensor dim %d has size %" G_GINT64_FORMAT, d,
                  tensor_shape[d]);
      return NULL;
    }
    elements *= (double)tensor_shape[d];
  }
  if (elements > (double)MDL_MAX_ELEMENTS || !(elem_bytes > 0) || !isfinite(elem_bytes)) {
    g_set_error(error, MDL_ERROR, MDL_ERROR_INVALID,
                "cross-mesh resharding: tensor of %g elements of %g bytes", elements, elem_bytes);
    return NULL;
  }
  int src_degree[MDL_MAX_DIMS], dst_degree[MDL_MAX_DIMS];
  if (!check_side(cluster, src_mesh, src_layout, ndims, "source", src_degree, error) ||
      !check_side(cluster, dst_mesh, dst_layout, ndims, "destination", dst_degree, error))
    return NULL;

  SimCrossMeshPlan *p = g_new0(SimCrossMeshPlan, 1);
  if (options) p->options = *options;
  else sim_crossmesh_options_init(&p->options);
  if (p->options.broadcast_chunks < 1) p->options.broadcast_chunks = 1;
  if (p->options.randomized_trials < 1) p->options.randomized_trials = 1;
  p->num_devices = dev_cluster_num_devices(cluster);
  p->nodes = cluster->nodes;
  p->gpus_per_node = cluster->gpus_per_node;
  p->nics_per_node = cluster->nics_per_node;
  int first = 0;
  p->intra = cm_group_link(cluster, &first, 1);
  p->nic = p->intra;
  cm_nccl_hardware(cluster, &p->nccl);
  if (cluster->nodes >= 2) {
    /* Whole hosts on both ends: cm_group_link gives the group gpus_per_node / gpus_per_node of
     * the NICs, i.e. all of a host's NIC bandwidth (capped by the intra-host link); contention
     * between concurrent transfers is the NIC resources' job, not a share. An oversubscribed
     * fabric slows every NIC transfer, as in the step-expanded mode (sim_network.h). */
    g_autofree int *two_hosts = g_new(int, 2 * cluster->gpus_per_node);
    for (int i = 0; i < 2 * cluster->gpus_per_node; i++) two_hosts[i] = i;
    p->nic = cm_group_link(cluster, two_hosts, 2 * cluster->gpus_per_node);
    if (cluster->oversubscription > 1) p->nic.beta *= cluster->oversubscription;
  }
  p->ndims = ndims;
  memcpy(p->shape, tensor_shape, sizeof(int64_t) * (size_t)ndims);
  p->elem_bytes = elem_bytes;
  p->src_ndevices = src_mesh->ndevices;
  p->dst_ndevices = dst_mesh->ndevices;
  p->src_devices = g_memdup2(src_mesh->devices, sizeof(int) * (gsize)src_mesh->ndevices);
  p->dst_devices = g_memdup2(dst_mesh->devices, sizeof(int) * (gsize)dst_mesh->ndevices);
  p->dst_local = g_new(int, dst_mesh->ndevices);
  for (int i = 0; i < dst_mesh->ndevices; i++) p->dst_local[i] = -1;

  if (!decompose(p, src_mesh, src_layout, dst_mesh, dst_layout, src_degree, dst_degree, error)) {
    sim_crossmesh_plan_free(p);
    return NULL;
  }
  for (int i = 0; i < p->nunits; i++) unit_hosts(p, &p->units[i]);
  unit_classes(p);
  p->order = g_new(uint32_t, p->nunits ? p->nunits : 1);
  cmx_balance(p);
  choose_senders(p);
  return p;
}

void sim_crossmesh_plan_free(SimCrossMeshPlan *p) {
  if (!p) return;
  for (int i = 0; i < p->nunits; i++) {
    CmxUnit *u = &p->units[i];
    g_free(u->holders);
    g_free(u->holder_index);
    g_free(u->receivers);
    g_free(u->receiver_index);
    g_free(u->cand_host);
    g_free(u->cand_seconds);
    g_free(u->recv_hosts);
  }
  g_free(p->units);
  g_free(p->order);
  g_free(p->src_devices);
  g_free(p->dst_devices);
  g_free(p->dst_local);
  g_free(p);
}

const SimCrossMeshOptions *sim_crossmesh_plan_options(const SimCrossMeshPlan *p) {
  return &p->options;
}

int sim_crossmesh_plan_num_units(const SimCrossMeshPlan *p) { return p->nunits; }

const SimCrossMeshUnit *sim_crossmesh_plan_unit(const SimCrossMeshPlan *p, int i) {
  g_return_val_if_fail(i >= 0 && i < p->nunits, NULL);
  return &p->units[i].pub;
}

const uint32_t *sim_crossmesh_plan_order(const SimCrossMeshPlan *p) { return p->order; }

double sim_crossmesh_plan_cost(const SimCrossMeshPlan *p) { return p->cost; }

int sim_crossmesh_extra_resources(const DevCluster *cluster) {
  return sim_network_num_resources(cluster) - (int)sim_stream_resources(dev_cluster_num_devices(cluster));
}

uint32_t sim_crossmesh_resource_nic(const DevCluster *cluster, int host, int nic,
                                    gboolean ingress) {
  return sim_network_nic_base(dev_cluster_num_devices(cluster)) +
         (uint32_t)(2 * (host * cluster->nics_per_node + nic) + (ingress ? 1 : 0));
}
