/* sim/build — symmetry: choosing the devices to simulate (see the comment below). */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

/* --- Symmetry (issue 4): devices a strategy treats alike are simulated once. ---
 * Along a mesh axis every device runs the same tasks on equal partitions; when in addition
 * every group of devices along any set of the mesh's axes communicates at the same cost
 * (cm_group_link, and the same shape: hosts and members per host, which NCCL's model costs), and every stage-to-stage transfer pair costs the same, the task graph is
 * invariant under permuting replicas, so each replica's timeline equals its representative's:
 * simulating the devices with coordinate 0 on those axes gives the expanded graph's answer,
 * bit for bit. A collective then occupies only its simulated members' streams and still costs
 * the whole group's time. Meshes that share devices (FlexFlow-style per-op placements) are
 * always expanded. */

/* In step mode (sim_network.h) the groups must also fold, or, for an axis left @expanded while
 * others fold, be alike: the folding permutes replicas along the other axes, which must map
 * each of these groups to one whose links are the same. */
static gboolean uniform_group_cost(const Builder *b, const MdlMesh *mesh, unsigned mask,
                                   gboolean expanded) {
  g_autofree int *members = g_new(int, mesh->ndevices);
  g_autofree int *devices = g_new(int, mesh->ndevices);
  g_autofree int *first_devices = g_new(int, mesh->ndevices);
  CmLinkCost first = {0};
  CmGroupShape first_shape = {0};
  gboolean have = FALSE;
  for (int base = 0; base < mesh->ndevices; base++) {
    if (!sb_is_group_base(mesh, mask, base)) continue;
    int p = sb_group_members(mesh, mask, base, members);
    for (int i = 0; i < p; i++) devices[i] = mesh->devices[members[i]];
    if (b->step && (expanded ? have && !sim_network_groups_alike(b->c, first_devices, devices, p)
                             : !sim_network_group_foldable(b->c, devices, p)))
      return FALSE;
    if (!have) memcpy(first_devices, devices, sizeof(int) * (gsize)p);
    CmLinkCost c = cm_group_link(b->c, devices, p);
    /* NCCL's model (cm_tuner.h) costs a group by its shape: hosts and members per host. */
    CmGroupShape g;
    cm_group_shape(b->c, devices, p, &g);
    if (!have) first = c, first_shape = g, have = TRUE;
    else if (c.alpha != first.alpha || c.beta != first.beta || g.hosts != first_shape.hosts ||
             g.min_per_host != first_shape.min_per_host || g.max_per_host != first_shape.max_per_host)
      return FALSE;
  }
  return TRUE;
}

/* Whether every index-aligned transfer from mesh @m1 to @m2 (as sb_convert() sends) costs the
 * same. */
static gboolean uniform_pair(const Builder *b, int m1, int m2) {
  const MdlMesh *sm = mdl_strategy_mesh(b->s, m1), *dm = mdl_strategy_mesh(b->s, m2);
  CmLinkCost first = {0};
  for (int j = 0; j < dm->ndevices; j++) {
    int pair[2] = {sm->devices[j % sm->ndevices], dm->devices[j]};
    CmLinkCost c = cm_group_link(b->c, pair, 2);
    if (pair[0] == pair[1]) c.alpha = c.beta = -1;
    if (j == 0) first = c;
    else if (c.alpha != first.alpha || c.beta != first.beta) return FALSE;
  }
  return TRUE;
}

/* Every transfer between two meshes costs the same. Only pairs a tensor moves between (the
 * producer's mesh and a reader's, both ways for the gradient) are checked: all pairs would cost
 * meshes^2 x mesh size (minutes for thousands of stages of thousands of GPUs). */
static gboolean uniform_transfers(const Builder *b) {
  gsize nm = b->s->meshes->len;
  g_autoptr(GHashTable) checked = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (int o = 0; o < b->nops; o++) {
    const MdlOp *op = mdl_graph_op(b->g, o);
    for (int k = 0; k < op->ninputs; k++) {
      int p = mdl_graph_tensor(b->g, op->inputs[k].tensor)->producer;
      if (p < 0 || cfg(b, p)->mesh == cfg(b, o)->mesh) continue;
      int m1 = cfg(b, p)->mesh, m2 = cfg(b, o)->mesh;
      gpointer key = GSIZE_TO_POINTER((gsize)m1 * nm + (gsize)m2 + 1);
      if (g_hash_table_contains(checked, key)) continue;
      g_hash_table_add(checked, key);
      /* the activation forward, its gradient back */
      if (!uniform_pair(b, m1, m2) || !uniform_pair(b, m2, m1)) return FALSE;
    }
  }
  return TRUE;
}

static gboolean meshes_disjoint(const Builder *b) {
  int n = b->tg->num_devices;
  g_autofree int *owner = g_new(int, n);
  for (int d = 0; d < n; d++) owner[d] = -1;
  for (guint m = 0; m < b->s->meshes->len; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(b->s, (int)m);
    for (int i = 0; i < mesh->ndevices; i++) {
      if (owner[mesh->devices[i]] >= 0) return FALSE;
      owner[mesh->devices[i]] = (int)m;
    }
  }
  return TRUE;
}

/* Mask of the axes of mesh @m whose replicas may be folded: all axes of size > 1, when the
 * groups the simulation forms on it (along each single axis for resharding, over the gradient
 * sync masks) have uniform costs; otherwise none. */
static unsigned symmetric_axes(const Builder *b, int m, const int *ops, int nops) {
  const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
  unsigned all = 0;
  for (int a = 0; a < mesh->ndims; a++)
    if (mesh->shape[a] > 1) all |= 1u << a;
  unsigned fold = all;
  /* Step mode folds the axes whose groups fold (sim_network.h) and expands the others, when
   * every gradient sync group lies within the folded axes or outside them (a group across both
   * would have some simulated members, neither one nor all). */
  for (int a = 0; a < mesh->ndims; a++)
    if ((all & (1u << a)) && !uniform_group_cost(b, mesh, 1u << a, FALSE)) {
      if (!b->step || !uniform_group_cost(b, mesh, 1u << a, TRUE)) return 0;
      fold &= ~(1u << a);
    }
  /* Each mask is checked once (a check walks the whole mesh; there are at most 2^4 masks and
   * possibly millions of weights). */
  guint32 uniform = 0;
  G_STATIC_ASSERT(MDL_MAX_MESH_AXES <= 5);
  /* The weights used on this mesh: those of its @ops (a scan of every weight per mesh would be
   * quadratic in deep pipelines). */
  for (int i = 0; i < nops; i++) {
    const MdlOp *op = mdl_graph_op(b->g, ops[i]);
    for (int k = 0; k < op->ninputs; k++) {
      int w = op->inputs[k].tensor, first;
      if (!mdl_graph_tensor(b->g, w)->is_weight) continue;
      MdlLayout layout;
      unsigned mask = sb_grad_sync_mask(b, w, m, &first, &layout);
      if (!mask || (uniform & (1u << mask))) continue;
      gboolean expanded = b->step && !(mask & fold);
      if ((!expanded && (mask & ~fold)) || !uniform_group_cost(b, mesh, mask, expanded)) return 0;
      uniform |= 1u << mask;
    }
  }
  return fold;
}

static gboolean same_shape(const Builder *b, int m1, int m2) {
  const MdlMesh *x = mdl_strategy_mesh(b->s, m1), *y = mdl_strategy_mesh(b->s, m2);
  return x->ndims == y->ndims && memcmp(x->shape, y->shape, sizeof(int) * (gsize)x->ndims) == 0;
}

void sb_choose_representatives(Builder *b, gboolean allow) {
  int nm = (int)b->s->meshes->len;
  b->nrep = g_new0(int, nm);
  b->rep_idx = g_new0(int *, nm);
  b->rep_pos = g_new0(int *, nm);
  b->rep_of = g_new0(int *, nm);
  /* Step mode folds under sim_network.h's conditions, and only when every mesh folds the same
   * axes of the same shape: a stage-to-stage transfer from a folded to an expanded mesh would
   * book replicas' sends on the representative's egress. */
  b->symmetric = allow && (!b->step || sim_network_foldable(b->c, b->s->overlap)) &&
                 meshes_disjoint(b) && uniform_transfers(b);
  /* The ops of each mesh (CSR), for symmetric_axes. */
  g_autofree int *begin = g_new0(int, nm + 1);
  g_autofree int *ops = g_new(int, MAX(b->nops, 1));
  for (int o = 0; o < b->nops; o++) begin[cfg(b, o)->mesh + 1]++;
  for (int m = 0; m < nm; m++) begin[m + 1] += begin[m];
  g_autofree int *fill = g_memdup2(begin, sizeof(int) * (gsize)nm);
  for (int o = 0; o < b->nops; o++) ops[fill[cfg(b, o)->mesh]++] = o;
  g_autofree unsigned *masks = g_new0(unsigned, nm);
  unsigned any = 0;
  for (int m = 0; m < nm && b->symmetric; m++) {
    masks[m] = symmetric_axes(b, m, ops + begin[m], begin[m + 1] - begin[m]);
    any |= masks[m];
    if (b->step && m > 0 && (masks[m] != masks[0] || !same_shape(b, 0, m))) b->symmetric = FALSE;
  }
  if (b->step && !any) b->symmetric = FALSE; /* nothing folds: say so */
  for (int m = 0; m < nm; m++) {
    const MdlMesh *mesh = mdl_strategy_mesh(b->s, m);
    unsigned mask = b->symmetric ? masks[m] : 0;
    int stride[MDL_MAX_MESH_AXES];
    sb_mesh_strides(mesh, stride);
    b->rep_idx[m] = g_new(int, mesh->ndevices);
    b->rep_pos[m] = g_new(int, mesh->ndevices);
    b->rep_of[m] = g_new(int, mesh->ndevices);
    for (int i = 0; i < mesh->ndevices; i++) {
      int rep = i;
      for (int a = 0; a < mesh->ndims; a++)
        if (mask & (1u << a)) rep -= ((i / stride[a]) % mesh->shape[a]) * stride[a];
      b->rep_of[m][i] = rep;
      b->rep_pos[m][i] = -1;
      if (rep == i) {
        b->rep_pos[m][i] = b->nrep[m];
        b->rep_idx[m][b->nrep[m]++] = i;
      }
    }
  }
}

void sb_free_representatives(Builder *b) {
  for (guint m = 0; m < b->s->meshes->len; m++) {
    g_free(b->rep_idx[m]);
    g_free(b->rep_pos[m]);
    g_free(b->rep_of[m]);
  }
  g_free(b->rep_idx);
  g_free(b->rep_pos);
  g_free(b->rep_of);
  g_free(b->nrep);
}
