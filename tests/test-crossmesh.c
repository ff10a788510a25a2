/* Tests of sim/crossmesh: unit-task decomposition (paper Fig. 2 and App. B, uneven tiles,
 * random layouts), each method's tasks and bytes against §3.1's formulas, the load balancers
 * (§3.2), the task-graph emission, and the paper's Table 2 cases against the ordering of methods
 * its Fig. 6 and Fig. 8 report. Every time comes from costmodel's alpha-beta on the
 * aws-p3.8xlarge preset (the paper's §5 cluster: 4 V100 per host over NVLink, 10 Gb/s between
 * hosts); no expected time is hard-coded.
 *
 * Over 700 lines on purpose: one GTest binary per module (CONVENTIONS.md, "Tests"), whose cases
 * share this file's fixtures and helpers; splitting it would split one module's test binary.
 */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "costmodel/costmodel.h"
#include "sim/sim.h"
/* White-box: the emit tests add tasks to a graph by hand (the builder's private API). */
#include "sim/sim-int.h"
#include "sim/sim_crossmesh.h"
#include "sim/sim_network.h"
#include "test-util.h"

#define B MDL_LAYOUT_BROADCAST

/* ---- Fixtures ----------------------------------------------------------------------------- */

/* The paper's cluster (§5): aws-p3.8xlarge with @nodes hosts. */
static DevCluster *p3_cluster(int nodes) {
  g_autofree char *spec = g_strdup_printf("aws-p3.8xlarge:nodes=%d", nodes);
  GError *error = NULL;
  DevCluster *c = dev_cluster_parse_spec(spec, &error);
  g_assert_no_error(error);
  return c;
}

/* A mesh of @rows x @cols: row i on host @first_host + i, column j its GPU j. */
static MdlMesh host_mesh(const DevCluster *c, int first_host, int rows, int cols) {
  MdlMesh m = {.ndims = 2, .shape = {rows, cols}, .ndevices = rows * cols};
  m.devices = g_new(int, m.ndevices);
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) m.devices[i * cols + j] = (first_host + i) * c->gpus_per_node + j;
  return m;
}

/* A mesh over explicit devices. */
static MdlMesh list_mesh(int ndims, const int *shape, const int *devices) {
  MdlMesh m = {.ndims = ndims, .ndevices = 1};
  for (int a = 0; a < ndims; a++) m.shape[a] = shape[a], m.ndevices *= shape[a];
  m.devices = g_memdup2(devices, sizeof(int) * (gsize)m.ndevices);
  return m;
}

static MdlLayout layout2(int axis0, int axis1) {
  MdlLayout l = {{B, B, B, B}};
  l.axis[0] = (int8_t)axis0, l.axis[1] = (int8_t)axis1;
  return l;
}

static SimCrossMeshPlan *plan_or_die(const DevCluster *c, const MdlMesh *src, MdlLayout sl,
                                     const MdlMesh *dst, MdlLayout dl, const int64_t *shape,
                                     int ndims, double elem_bytes, SimCrossMeshMethod method,
                                     SimCrossMeshOrder order) {
  SimCrossMeshOptions o;
  sim_crossmesh_options_init(&o);
  o.method = method;
  o.order = order;
  GError *error = NULL;
  SimCrossMeshPlan *p =
      sim_crossmesh_plan_new(c, src, sl, dst, dl, shape, ndims, elem_bytes, &o, &error);
  g_assert_no_error(error);
  g_assert_nonnull(p);
  return p;
}

static int64_t unit_elements(const SimCrossMeshUnit *u, int ndims) {
  int64_t n = 1;
  for (int d = 0; d < ndims; d++) n *= u->hi[d] - u->lo[d];
  return n;
}

static gboolean has_device(const int *list, int n, int d) {
  for (int i = 0; i < n; i++)
    if (list[i] == d) return TRUE;
  return FALSE;
}

/* The time of one whole-NIC transfer of @bytes between two hosts, from costmodel. */
static double nic_seconds(const DevCluster *c, double bytes) {
  int g = c->gpus_per_node;
  g_autofree int *two_hosts = g_new(int, 2 * g);
  for (int i = 0; i < 2 * g; i++) two_hosts[i] = i;
  CmLinkCost link = cm_group_link(c, two_hosts, 2 * g);
  return cm_collective_time(CM_SEND_RECV, 2, bytes, &link);
}

/* ---- Names -------------------------------------------------------------------------------- */

static void test_names(void) {
  for (int m = 0; m < SIM_CROSSMESH_METHOD_COUNT; m++) {
    SimCrossMeshMethod back;
    g_assert_true(sim_crossmesh_method_parse(sim_crossmesh_method_name(m), &back));
    g_assert_cmpint(back, ==, m);
  }
  for (int o = 0; o < SIM_CROSSMESH_ORDER_COUNT; o++) {
    SimCrossMeshOrder back;
    g_assert_true(sim_crossmesh_order_parse(sim_crossmesh_order_name(o), &back));
    g_assert_cmpint(back, ==, o);
  }
  SimCrossMeshMethod m;
  SimCrossMeshOrder o;
  g_assert_false(sim_crossmesh_method_parse("allgather", &m));
  g_assert_false(sim_crossmesh_order_parse("", &o));
  g_assert_false(sim_crossmesh_order_parse(NULL, &o));
  g_assert_cmpstr(sim_crossmesh_method_name(SIM_CROSSMESH_BROADCAST), ==, "broadcast");
  g_assert_cmpstr(sim_crossmesh_order_name(SIM_CROSSMESH_RANDOMIZED_GREEDY), ==,
                  "randomized_greedy");
}

/* ---- Decomposition ------------------------------------------------------------------------ */

/* The paper's Figure 2 (§2.2, App. B.1): a 4x4 matrix, Mesh_A = [[0,1],[2,3]],
 * Mesh_B = [[4,5],[6,7]] on one host of 8 GPUs. Spec 1 (Mesh_A) gives each device a unique row
 * (S^{01} on dim 0); spec 2 (Mesh_B) splits dim 0 in two on mesh axis 0 (devices 4 and 5 hold the
 * top 2x4 slice); spec 3 (Mesh_A) is spec 2's layout on Mesh_A. Task 1 (spec 1 -> 2) has four
 * unit tasks, the first sending row [0,1,2,3] to devices 4 and 5; task 2 (spec 2 -> 3) has two,
 * the first sending the top 2x4 slice to devices 0 and 1, with replicas on 4 and 5. */
static void test_decompose_figure2(void) {
  DevCluster *c = test_cluster(1, 8, 300, 3, 100, 5);
  int shape2[2] = {2, 2}, a_dev[4] = {0, 1, 2, 3}, b_dev[4] = {4, 5, 6, 7};
  MdlMesh a = list_mesh(2, shape2, a_dev), b = list_mesh(2, shape2, b_dev);
  int64_t shape[2] = {4, 4};
  MdlLayout spec1 = layout2(0, 0), spec2 = layout2(0, B);

  SimCrossMeshPlan *t1 = plan_or_die(c, &a, spec1, &b, spec2, shape, 2, 1.0,
                                     SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_NAIVE);
  g_assert_cmpint(sim_crossmesh_plan_num_units(t1), ==, 4);
  for (int i = 0; i < 4; i++) {
    const SimCrossMeshUnit *u = sim_crossmesh_plan_unit(t1, i);
    g_assert_cmpint(u->lo[0], ==, i);
    g_assert_cmpint(u->hi[0], ==, i + 1);
    g_assert_cmpint(u->lo[1], ==, 0);
    g_assert_cmpint(u->hi[1], ==, 4);
    g_assert_cmpfloat(u->bytes, ==, 4.0);
    g_assert_cmpint(u->nholders, ==, 1);
    g_assert_cmpint(u->holders[0], ==, i);  /* row i lives on device i */
    g_assert_cmpint(u->nreceivers, ==, 2);
    g_assert_cmpint(u->receivers[0], ==, i < 2 ? 4 : 6);
    g_assert_cmpint(u->receivers[1], ==, i < 2 ? 5 : 7);
  }

  MdlLayout spec3 = spec2;
  SimCrossMeshPlan *t2 = plan_or_die(c, &b, spec2, &a, spec3, shape, 2, 1.0,
                                     SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_NAIVE);
  g_assert_cmpint(sim_crossmesh_plan_num_units(t2), ==, 2);
  const SimCrossMeshUnit *top = sim_crossmesh_plan_unit(t2, 0);
  g_assert_cmpint(top->hi[0] - top->lo[0], ==, 2);
  g_assert_cmpfloat(top->bytes, ==, 8.0);
  g_assert_cmpint(top->nholders, ==, 2);  /* replicas: a choice of sender */
  g_assert_cmpint(top->holders[0], ==, 4);
  g_assert_cmpint(top->holders[1], ==, 5);
  g_assert_cmpint(top->nreceivers, ==, 2);
  g_assert_cmpint(top->receivers[0], ==, 0);
  g_assert_cmpint(top->receivers[1], ==, 1);
  g_assert_cmpint(top->sender, ==, 4);  /* naive: the lowest-indexed holder */

  sim_crossmesh_plan_free(t1);
  sim_crossmesh_plan_free(t2);
  g_free(a.devices), g_free(b.devices);
  dev_cluster_free(c);
}

/* Uneven tiles (Table 2 case 6): 1024 rows in halves on the source and in thirds (ceil: 342)
 * on the destination cut at 0, 342, 512, 684, 1024. */
static void test_decompose_uneven(void) {
  DevCluster *c = p3_cluster(5);
  MdlMesh src = host_mesh(c, 0, 2, 4), dst = host_mesh(c, 2, 3, 4);
  int64_t shape[1] = {1024};
  MdlLayout split = layout2(0, B);
  SimCrossMeshPlan *p = plan_or_die(c, &src, split, &dst, split, shape, 1, 2.0,
                                    SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_NAIVE);
  const int64_t cuts[5] = {0, 342, 512, 684, 1024};
  g_assert_cmpint(sim_crossmesh_plan_num_units(p), ==, 4);
  for (int i = 0; i < 4; i++) {
    const SimCrossMeshUnit *u = sim_crossmesh_plan_unit(p, i);
    g_assert_cmpint(u->lo[0], ==, cuts[i]);
    g_assert_cmpint(u->hi[0], ==, cuts[i + 1]);
    g_assert_cmpfloat(u->bytes, ==, 2.0 * (double)(cuts[i + 1] - cuts[i]));
    g_assert_cmpint(u->nholders, ==, 4);  /* a source host's four replicas */
    g_assert_cmpint(u->nreceivers, ==, 4);
  }
  sim_crossmesh_plan_free(p);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

/* Random shapes, meshes and layouts (seed in the path): the units partition the tensor; each
 * unit's holders are exactly the source devices whose tile contains it; every destination
 * device receives its whole tile exactly once (units it receives are disjoint, inside its tile,
 * and their volumes sum to the tile's). Tiles are recomputed here independently. */
typedef struct {
  int64_t lo[MDL_MAX_DIMS], hi[MDL_MAX_DIMS];
} TestBox;

static TestBox test_tile(const MdlMesh *m, MdlLayout l, int idx, const int64_t *shape, int ndims) {
  TestBox box;
  for (int d = 0; d < ndims; d++) {
    int64_t k = 1, t = 0;
    for (int a = 0; a < m->ndims; a++) {
      int stride = 1;
      for (int b = a + 1; b < m->ndims; b++) stride *= m->shape[b];
      if (l.axis[a] == d) k *= m->shape[a], t = t * m->shape[a] + (idx / stride) % m->shape[a];
    }
    int64_t size = (shape[d] + k - 1) / k;
    box.lo[d] = MIN(t * size, shape[d]);
    box.hi[d] = MIN((t + 1) * size, shape[d]);
  }
  return box;
}

static gboolean box_inside(const SimCrossMeshUnit *u, const TestBox *b, int ndims) {
  for (int d = 0; d < ndims; d++)
    if (u->lo[d] < b->lo[d] || u->hi[d] > b->hi[d]) return FALSE;
  return TRUE;
}

static void random_mesh(GRand *r, MdlMesh *m, int *pool, int *npool) {
  m->ndims = g_rand_int_range(r, 1, 3);
  m->ndevices = 1;
  for (int a = 0; a < m->ndims; a++) m->ndevices *= (m->shape[a] = g_rand_int_range(r, 1, 4));
  m->devices = g_new(int, m->ndevices);
  for (int i = 0; i < m->ndevices; i++) {
    int j = g_rand_int_range(r, 0, *npool);
    m->devices[i] = pool[j];
    pool[j] = pool[--*npool];
  }
}

static MdlLayout random_layout(GRand *r, const MdlMesh *m, int ndims) {
  MdlLayout l = {{B, B, B, B}};
  for (int a = 0; a < m->ndims; a++) l.axis[a] = (int8_t)g_rand_int_range(r, -1, ndims);
  return l;
}

/* Volume of the intersection of two boxes. */
static int64_t overlap_volume(const TestBox *a, const TestBox *b, int ndims) {
  int64_t v = 1;
  for (int d = 0; d < ndims; d++) v *= MAX(0, MIN(a->hi[d], b->hi[d]) - MAX(a->lo[d], b->lo[d]));
  return v;
}

static void test_decompose_random(gconstpointer data) {
  guint32 seed = GPOINTER_TO_UINT(data);
  GRand *r = g_rand_new_with_seed(seed);
  DevCluster *c = test_cluster(4, 8, 300, 3, 100, 5);
  for (int round = 0; round < 100; round++) {
    int pool[32], npool = 32;
    for (int i = 0; i < 32; i++) pool[i] = i;
    /* Half the rounds draw both meshes from one pool (disjoint, as in the paper), half from
     * two (shared devices copy locally). */
    gboolean disjoint = round % 2 == 0;
    int ndims = g_rand_int_range(r, 1, 4);
    int64_t shape[3], total = 1;
    for (int d = 0; d < ndims; d++) total *= (shape[d] = g_rand_int_range(r, 1, 13));
    MdlMesh src, dst;
    random_mesh(r, &src, pool, &npool);
    if (!disjoint) {
      npool = 32;
      for (int i = 0; i < 32; i++) pool[i] = i;
    }
    random_mesh(r, &dst, pool, &npool);
    MdlLayout sl = random_layout(r, &src, ndims), dl = random_layout(r, &dst, ndims);
    SimCrossMeshPlan *p = plan_or_die(c, &src, sl, &dst, dl, shape, ndims, 2.0,
                                      g_rand_int_range(r, 0, SIM_CROSSMESH_METHOD_COUNT),
                                      g_rand_int_range(r, 0, SIM_CROSSMESH_ORDER_COUNT));
    int n = sim_crossmesh_plan_num_units(p);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      const SimCrossMeshUnit *u = sim_crossmesh_plan_unit(p, i);
      sum += unit_elements(u, ndims);
      g_assert_cmpfloat(u->bytes, ==, 2.0 * (double)unit_elements(u, ndims));
      g_assert_cmpint(u->nreceivers, >, 0);
      for (int s = 0; s < src.ndevices; s++) {
        TestBox t = test_tile(&src, sl, s, shape, ndims);
        g_assert_cmpint(box_inside(u, &t, ndims), ==,
                        has_device(u->holders, u->nholders, src.devices[s]));
      }
      g_assert_true(has_device(u->holders, u->nholders, u->sender));
      for (int j = 1; j < u->nreceivers; j++) g_assert_cmpint(u->receivers[j - 1], <, u->receivers[j]);
      for (int j = 0; j < u->nreceivers; j++)  /* nobody is sent what it holds */
        g_assert_false(has_device(u->holders, u->nholders, u->receivers[j]));
      /* Units are disjoint: slices of one grid differ in some dim's interval. */
      for (int j = 0; j < i; j++) {
        const SimCrossMeshUnit *v = sim_crossmesh_plan_unit(p, j);
        gboolean overlap = TRUE;
        for (int d = 0; d < ndims; d++) overlap &= u->lo[d] < v->hi[d] && v->lo[d] < u->hi[d];
        g_assert_false(overlap);
      }
    }
    if (disjoint) g_assert_cmpint(sum, ==, total);
    else g_assert_cmpint(sum, <=, total);
    for (int k = 0; k < dst.ndevices; k++) {
      TestBox t = test_tile(&dst, dl, k, shape, ndims);
      int64_t need = 1, got = 0;
      for (int d = 0; d < ndims; d++) need *= t.hi[d] - t.lo[d];
      for (int s = 0; s < src.ndevices; s++)
        if (src.devices[s] == dst.devices[k]) {  /* what it holds itself */
          TestBox own = test_tile(&src, sl, s, shape, ndims);
          got += overlap_volume(&own, &t, ndims);
        }
      for (int i = 0; i < n; i++) {
        const SimCrossMeshUnit *u = sim_crossmesh_plan_unit(p, i);
        if (!has_device(u->receivers, u->nreceivers, dst.devices[k])) continue;
        g_assert_true(box_inside(u, &t, ndims));
        got += unit_elements(u, ndims);
      }
      g_assert_cmpint(got, ==, need);
    }
    /* Emission and the engine accept every plan. (No bound against Eq. 1 here: where meshes
     * share hosts or devices, a device's stream or a forwarding host's NIC can be busy in ways
     * the host-level model does not see.) */
    double est = sim_crossmesh_estimate(p);
    if (n > 0) g_assert_cmpfloat(est, >, 0);
    else g_assert_cmpfloat(est, ==, 0);
    sim_crossmesh_plan_free(p);
    g_free(src.devices), g_free(dst.devices);
  }
  dev_cluster_free(c);
  g_rand_free(r);
}

/* Meshes that share devices: what a destination already holds is copied locally, not sent. */
static void test_decompose_shared_devices(void) {
  DevCluster *c = test_cluster(2, 4, 300, 3, 100, 5);
  int s1[1] = {4}, d1[4] = {0, 1, 2, 3}, s2[2] = {2, 2}, d2[4] = {0, 1, 4, 5};
  MdlMesh src = list_mesh(1, s1, d1), dst = list_mesh(2, s2, d2);
  int64_t shape[1] = {8};
  /* Source: S(0) over 0..3 (2 rows each); destination: B everywhere. */
  SimCrossMeshPlan *p = plan_or_die(c, &src, layout2(0, B), &dst, layout2(B, B), shape, 1, 1.0,
                                    SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_GREEDY);
  g_assert_cmpint(sim_crossmesh_plan_num_units(p), ==, 4);
  for (int i = 0; i < 4; i++) {
    const SimCrossMeshUnit *u = sim_crossmesh_plan_unit(p, i);
    g_assert_cmpint(u->holders[0], ==, i);
    /* Devices 0 and 1 are in both meshes: each skips the slice it holds. */
    g_assert_cmpint(u->nreceivers, ==, i < 2 ? 3 : 4);
    g_assert_false(has_device(u->receivers, u->nreceivers, i));
  }
  /* Emission: device 0 (destination index 0) waits for its own source task and the three
   * slices it lacks: a join. */
  SimTaskGraph *g = sim_task_graph_new(dev_cluster_num_devices(c));
  g->num_resources += sim_crossmesh_extra_resources(c);
  SimTask t = {0};
  t.kind = SIM_TASK_FORWARD;
  t.op = t.tensor = t.microbatch = -1;
  t.duration = 1000;
  uint32_t src_ready[4];
  for (int i = 0; i < 4; i++) {
    uint32_t r = sim_resource_compute(i);
    src_ready[i] = sim_task_graph_add(g, &t, &r, 1);
  }
  uint32_t dst_ready[4];
  sim_crossmesh_emit(p, g, NULL, src_ready, dst_ready);
  for (int i = 0; i < 4; i++) {
    g_assert_cmpuint(dst_ready[i], !=, SIM_CROSSMESH_NO_TASK);
    g_assert_cmpuint(sim_task_graph_task(g, dst_ready[i])->duration, ==, 0);  /* joins */
  }
  SimCrossMeshStats st = sim_crossmesh_plan_stats(p);
  g_assert_cmpint(st.transfer_tasks, ==, 14);
  g_assert_cmpint(st.join_tasks, ==, 4);
  sim_task_graph_free(g);
  sim_crossmesh_plan_free(p);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

static void test_decompose_errors(void) {
  DevCluster *c = test_cluster(2, 4, 300, 3, 100, 5);
  MdlMesh src = host_mesh(c, 0, 1, 4), dst = host_mesh(c, 1, 1, 4);
  int64_t shape[2] = {8, 8};
  GError *error = NULL;
  MdlLayout partial = layout2(MDL_LAYOUT_PARTIAL, B);
  g_assert_null(sim_crossmesh_plan_new(c, &src, partial, &dst, layout2(B, B), shape, 2, 2.0, NULL,
                                       &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "Partial"));
  g_clear_error(&error);
  g_assert_null(sim_crossmesh_plan_new(c, &src, layout2(B, 2), &dst, layout2(B, B), shape, 2, 2.0,
                                       NULL, &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_clear_error(&error);
  int64_t bad[2] = {8, 0};
  g_assert_null(sim_crossmesh_plan_new(c, &src, layout2(B, B), &dst, layout2(B, B), bad, 2, 2.0,
                                       NULL, &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_clear_error(&error);
  dst.devices[3] = 99;
  g_assert_null(sim_crossmesh_plan_new(c, &src, layout2(B, B), &dst, layout2(B, B), shape, 2, 2.0,
                                       NULL, &error));
  g_assert_error(error, MDL_ERROR, MDL_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "99"));
  g_clear_error(&error);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

/* ---- Methods (§3.1) ----------------------------------------------------------------------- */

/* One sender device (host 0) and a fully replicated (2,4) destination on hosts 1 and 2: a single
 * unit of the whole tensor, A = 2 receiver hosts of B = 4 devices, like §5.1.1. Tasks and bytes
 * follow from each method's definition; times approach §3.1's T^st = ABt, T^srla = At,
 * T^srga = 2t ((p-1)/p of an all-gather: (1 + 7/8) t), T^bc = t + At/K, with t the NIC time of
 * the slice, up to latencies and the intra-host all-gathers. */
typedef struct {
  SimCrossMeshMethod method;
  int tasks;
  double inter_slices;  /* inter-host bytes in slices */
  double t_low, t_high; /* bounds on time / t */
} MethodCase;

static const MethodCase method_cases[] = {
    {SIM_CROSSMESH_SEND_RECV, 8, 8.0, 8.0, 8.01},
    {SIM_CROSSMESH_LOCAL_ALLGATHER, 10, 2.0, 2.0, 2.1},
    {SIM_CROSSMESH_GLOBAL_ALLGATHER, 9, 1.0 + 2 * 7.0 / 8, 1.875, 1.9},
    {SIM_CROSSMESH_BROADCAST, 1, 2.0, 1.0, 1.05},
};

static void test_method(gconstpointer data) {
  const MethodCase *mc = data;
  DevCluster *c = p3_cluster(3);
  int one[1] = {1}, dev0[1] = {0};
  MdlMesh src = list_mesh(1, one, dev0), dst = host_mesh(c, 1, 2, 4);
  int64_t shape[3] = {1024, 1024, 512};
  double elem = 2.0;  /* fp16: 1 GiB, the message size of §5.1.1 */
  SimCrossMeshPlan *p = plan_or_die(c, &src, layout2(B, B), &dst, layout2(B, B), shape, 3, elem,
                                    mc->method, SIM_CROSSMESH_ENSEMBLE);
  double bytes = 1024.0 * 1024 * 512 * elem, t = nic_seconds(c, bytes);
  g_assert_cmpint(sim_crossmesh_plan_num_units(p), ==, 1);
  SimCrossMeshStats st = sim_crossmesh_plan_stats(p);
  g_assert_cmpint(st.transfer_tasks, ==, mc->tasks);
  g_assert_cmpfloat_with_epsilon(st.inter_host_bytes / bytes, mc->inter_slices, 1e-9);
  double est = sim_crossmesh_estimate(p), cost = sim_crossmesh_plan_cost(p);
  g_test_message("%s: %d tasks, %.3f slices over NICs, %.4f s = %.4f t (t = %.4f s)",
                 sim_crossmesh_method_name(mc->method), st.transfer_tasks,
                 st.inter_host_bytes / bytes, est, est / t, t);
  g_assert_cmpfloat(est / t, >=, mc->t_low * (1 - 1e-9));
  g_assert_cmpfloat(est / t, <=, mc->t_high);
  g_assert_cmpfloat(fabs(est - cost), <=, 1e-9 * cost);  /* one unit: the engine agrees */
  /* One destination per delivering task: joins only where several tasks feed a device. */
  g_assert_cmpint(st.join_tasks, ==, 0);
  sim_crossmesh_plan_free(p);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

/* The broadcast's chunk count: the paper's K ~ 100 for a large slice; a tiny one, where each
 * chunk would pay the latency, goes whole (K = 1, one alpha per hop). */
static void test_method_broadcast_chunks(void) {
  DevCluster *c = p3_cluster(3);
  int one[1] = {1}, dev0[1] = {0};
  MdlMesh src = list_mesh(1, one, dev0), dst = host_mesh(c, 1, 2, 4);
  int64_t tiny[1] = {16};
  SimCrossMeshPlan *p = plan_or_die(c, &src, layout2(B, B), &dst, layout2(B, B), tiny, 1, 2.0,
                                    SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_NAIVE);
  /* Chain: 0 -> 4..7 -> 8..11: 2 NIC hops and 6 NVLink hops, each one message of 32 bytes. */
  double expect = 2 * nic_seconds(c, 32);
  int pair[2] = {4, 5};
  CmLinkCost intra = cm_group_link(c, pair, 2);
  expect += 6 * cm_collective_time(CM_SEND_RECV, 2, 32, &intra);
  g_assert_cmpfloat_with_epsilon(sim_crossmesh_plan_cost(p), expect, 1e-15);
  sim_crossmesh_plan_free(p);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

/* ---- Table 2 (§5.1.2) --------------------------------------------------------------------- */

/* Table 2's cases: tensor (1024, 1024, 512), fp16 (our choice: the paper does not give the
 * dtype; fp16 makes it the 1 GB of §5.1.1), source mesh on the first hosts, destination mesh on
 * the next ones; a (r, c) mesh is r hosts x their first c GPUs. Specs per mesh axis: S^0 on
 * tensor dim 1 is {1, B}, S^{01} is {d, d}.
 * Case 4: Table 2 prints the same specs as case 3, yet §5.1.2 says case 4 "schedules 64 unit
 * tasks"; we read it as RS^{01}R -> S^{01}RR, the variant of case 3 that has 64 unit tasks.
 * Case 5's "S_0RR" is read as S^0RR. */
typedef struct {
  int id;
  int src_rows, src_cols, dst_rows, dst_cols;
  int src_axis[2], dst_axis[2];
  int units;
} Table2Case;

static const Table2Case table2[] = {
    {1, 2, 4, 2, 4, {0, B}, {0, B}, 2},   /* S^0RR -> S^0RR */
    {2, 2, 4, 2, 4, {B, B}, {0, B}, 2},   /* RRR -> S^0RR */
    {3, 2, 4, 2, 4, {1, B}, {0, B}, 4},   /* RS^0R -> S^0RR */
    {4, 2, 4, 2, 4, {1, 1}, {0, 0}, 64},  /* RS^{01}R -> S^{01}RR (see above) */
    {5, 2, 4, 2, 4, {B, 0}, {0, B}, 4},   /* S^1RR -> S^0RR */
    {6, 2, 4, 3, 4, {0, B}, {0, B}, 4},   /* S^0RR -> S^0RR, (2,4) -> (3,4), uneven */
    {7, 1, 4, 2, 4, {B, 0}, {B, B}, 4},   /* S^1RR -> RRR, (1,4) -> (2,4) */
    {8, 2, 3, 3, 2, {B, B}, {B, B}, 1},   /* RRR -> RRR, (2,3) -> (3,2) */
    {9, 2, 4, 2, 4, {1, B}, {2, B}, 4},   /* RS^0R -> RRS^0 */
};

typedef struct {
  double estimate, cost;
  SimCrossMeshStats stats;
} Run;

static Run table2_run(const Table2Case *tc, SimCrossMeshMethod method, SimCrossMeshOrder order) {
  DevCluster *c = p3_cluster(tc->src_rows + tc->dst_rows);
  MdlMesh src = host_mesh(c, 0, tc->src_rows, tc->src_cols);
  MdlMesh dst = host_mesh(c, tc->src_rows, tc->dst_rows, tc->dst_cols);
  int64_t shape[3] = {1024, 1024, 512};
  SimCrossMeshPlan *p =
      plan_or_die(c, &src, layout2(tc->src_axis[0], tc->src_axis[1]), &dst,
                  layout2(tc->dst_axis[0], tc->dst_axis[1]), shape, 3, 2.0, method, order);
  g_assert_cmpint(sim_crossmesh_plan_num_units(p), ==, tc->units);
  Run r = {sim_crossmesh_estimate(p), sim_crossmesh_plan_cost(p), sim_crossmesh_plan_stats(p)};
  /* The engine never takes longer than the host-level Eq. 1 schedule it follows. */
  g_assert_cmpfloat(r.estimate, <=, r.cost * (1 + 1e-9));
  sim_crossmesh_plan_free(p);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
  return r;
}

static gboolean similar(double a, double b) { return fabs(a / b - 1) < 0.05; }

/* Fig. 6 compares three systems, all with their load balancing: "Send/Recv" (point-to-point
 * only, greedy load balance), "Alpa" (all-gather based, greedy load balance: §5.1.2 "the
 * baselines do load balancing with a greedy approach"; its all-gather spans the receivers of a
 * slice, inside a host where they share one and across hosts in cases 7 and 8: our
 * global_allgather), and "AlpaComm" (broadcast with DFS + randomized greedy). The text of §5.1.2
 * says what the figure shows:
 *  - cases 1, 2, 5, 6: AlpaComm and Alpa perform similarly (NVLink all-gathers are cheap);
 *  - cases 7, 8: Alpa's all-gather crosses hosts; AlpaComm is faster, "up to 2.5x";
 *  - cases 3, 4, 9: AlpaComm is 3x to 10x faster (reordering keeps both sender hosts busy),
 *    more so in case 4 (64 unit tasks) than in case 3;
 *  - Send/Recv is never better than Alpa (App. A.5: broadcast beats send/recv with or without
 *    local all-gather; §3.1: T^st = ABt).
 * We assert the ordering AlpaComm <= Alpa <= Send/Recv in every case and the per-group claims
 * above, except: in cases 5 and 6 our Eq. 3 model (a host's units never overlap) makes Alpa's
 * greedy order cost 1.5x and 1.33x where the paper saw no difference, so there we check only
 * that AlpaComm is not slower; and our speedups in cases 3, 4, 9 are 1.5x-2x (ordering alone:
 * the alpha-beta model has none of the real system's other overheads), so we check a strict
 * gain and case 4's being the largest. */
static void test_table2_fig6(gconstpointer data) {
  const Table2Case *tc = data;
  Run send_recv = table2_run(tc, SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_GREEDY);
  Run alpa = table2_run(tc, SIM_CROSSMESH_GLOBAL_ALLGATHER, SIM_CROSSMESH_GREEDY);
  Run local = table2_run(tc, SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_GREEDY);
  Run alpacomm = table2_run(tc, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_ENSEMBLE);
  g_test_message("case %d: send/recv %.4f s, alpa (global all-gather) %.4f s, local all-gather "
                 "%.4f s, alpacomm %.4f s; alpa/alpacomm %.3f",
                 tc->id, send_recv.estimate, alpa.estimate, local.estimate, alpacomm.estimate,
                 alpa.estimate / alpacomm.estimate);
  g_assert_cmpfloat(alpacomm.estimate, <=, alpa.estimate * (1 + 1e-9));
  g_assert_cmpfloat(alpa.estimate, <=, send_recv.estimate * (1 + 1e-9));
  g_assert_cmpfloat(alpacomm.estimate, <=, local.estimate * (1 + 1e-9));
  /* Broadcast never puts more bytes on the NICs than the all-gather methods. */
  g_assert_cmpfloat(alpacomm.stats.inter_host_bytes, <=, alpa.stats.inter_host_bytes + 1);
  double speedup = alpa.estimate / alpacomm.estimate;
  switch (tc->id) {
  case 1:
  case 2:
    g_assert_true(similar(alpacomm.estimate, alpa.estimate));
    g_assert_cmpfloat(send_recv.estimate, >, 2 * alpa.estimate);  /* 4 copies per host */
    break;
  case 7:
  case 8:
    g_assert_cmpfloat(speedup, >, 1.5);
    g_assert_cmpfloat(speedup, <=, 2.5);
    break;
  case 3:
  case 4:
  case 9:
    g_assert_cmpfloat(speedup, >, 1.4);
    if (tc->id == 4) {
      Run case3 = table2_run(&table2[2], SIM_CROSSMESH_GLOBAL_ALLGATHER, SIM_CROSSMESH_GREEDY);
      Run case3_ours = table2_run(&table2[2], SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_ENSEMBLE);
      g_assert_cmpfloat(speedup, >, case3.estimate / case3_ours.estimate);
    }
    break;
  default:
    break;
  }
}

/* Fig. 8 (§5.3.1), the load balancers under broadcast: "Naive", "Load balance only" (greedy)
 * and AlpaComm (the ensemble). The paper: cases 1 and 8 perform alike (point-to-point only,
 * or one broadcast); in case 2 naive sends everything from the first host; in the others naive
 * and greedy meet congestion that AlpaComm's order avoids. Checked: ensemble <= greedy <= naive
 * everywhere; equal in 1 and 8; naive slower than greedy in case 2; ensemble strictly faster
 * than greedy in 3, 4, 5, 6 and 9. Case 7 (one sender host, every unit to the same receivers)
 * leaves no choice to any balancer in our model: all equal there. */
static void test_table2_fig8(gconstpointer data) {
  const Table2Case *tc = data;
  Run naive = table2_run(tc, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_NAIVE);
  Run greedy = table2_run(tc, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_GREEDY);
  Run dfs = table2_run(tc, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_DFS);
  Run randomized = table2_run(tc, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_RANDOMIZED_GREEDY);
  Run ensemble = table2_run(tc, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_ENSEMBLE);
  g_test_message("case %d (broadcast): naive %.4f s, greedy %.4f s, dfs %.4f s, randomized "
                 "%.4f s, ensemble %.4f s",
                 tc->id, naive.estimate, greedy.estimate, dfs.estimate, randomized.estimate,
                 ensemble.estimate);
  g_assert_cmpfloat(ensemble.cost, <=, greedy.cost * (1 + 1e-12));
  g_assert_cmpfloat(greedy.cost, <=, naive.cost * (1 + 1e-12));
  g_assert_cmpfloat(dfs.cost, <=, greedy.cost * (1 + 1e-12));
  g_assert_cmpfloat(ensemble.cost, <=, MIN(dfs.cost, randomized.cost) * (1 + 1e-12));
  switch (tc->id) {
  case 1:
  case 7:
  case 8:
    g_assert_true(similar(naive.estimate, ensemble.estimate));
    break;
  case 2:
    g_assert_cmpfloat(naive.estimate, >, 1.5 * greedy.estimate);
    g_assert_true(similar(greedy.estimate, ensemble.estimate));
    break;
  default:
    g_assert_cmpfloat(ensemble.estimate, <, 0.9 * greedy.estimate);
    break;
  }
}

/* ---- Load balancing (§3.2) ---------------------------------------------------------------- */

/* Case 3 in the host-level model: four equal units of a quarter tensor, T each, unit (a, b) from
 * source host b to destination host a. The slice order (a-major) puts both sender hosts on
 * destination 0 first: naive and greedy (one holder host each, so nothing to balance) take 3T;
 * the optimum pairs disjoint units: 2T, which DFS and randomized greedy find. */
static void test_order_known_optimum(void) {
  const Table2Case *tc = &table2[2];
  Run naive = table2_run(tc, SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_NAIVE);
  Run greedy = table2_run(tc, SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_GREEDY);
  Run dfs = table2_run(tc, SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_DFS);
  Run randomized = table2_run(tc, SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_RANDOMIZED_GREEDY);
  g_assert_cmpfloat_with_epsilon(naive.cost / greedy.cost, 1.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(dfs.cost / greedy.cost, 2.0 / 3.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(randomized.cost / dfs.cost, 1.0, 1e-12);

  /* Case 2: each half is replicated on both source hosts. Naive sends both from host 0 (2T);
   * greedy spreads them (T). */
  Run naive2 = table2_run(&table2[1], SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_NAIVE);
  Run greedy2 = table2_run(&table2[1], SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_GREEDY);
  Run dfs2 = table2_run(&table2[1], SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_DFS);
  g_assert_cmpfloat_with_epsilon(naive2.cost / greedy2.cost, 2.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(dfs2.cost / greedy2.cost, 1.0, 1e-12);
}

/* Case 4's 64 units: the optimum keeps both receiver hosts busy all the time, half the
 * single-receiver-at-a-time schedule's; DFS reaches that lower bound. */
static void test_order_dfs_bound(void) {
  const Table2Case *tc = &table2[3];
  Run dfs = table2_run(tc, SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_DFS);
  DevCluster *c = p3_cluster(4);
  double unit = nic_seconds(c, 1024.0 * 1024 * 512 * 2 / 64);
  g_assert_cmpfloat_with_epsilon(dfs.cost / (32 * unit), 1.0, 1e-9);
  dev_cluster_free(c);
}

/* Randomized greedy is a function of its seed (seed in the path): two plans agree unit by unit
 * on sender and position. */
static void test_order_randomized_seed(gconstpointer data) {
  guint64 seed = GPOINTER_TO_UINT(data);
  DevCluster *c = p3_cluster(4);
  MdlMesh src = host_mesh(c, 0, 2, 4), dst = host_mesh(c, 2, 2, 4);
  int64_t shape[3] = {1024, 1024, 512};
  SimCrossMeshOptions o;
  sim_crossmesh_options_init(&o);
  o.order = SIM_CROSSMESH_RANDOMIZED_GREEDY;
  o.seed = seed;
  SimCrossMeshPlan *p[2];
  for (int k = 0; k < 2; k++) {
    /* Case 5's replicas give randomized greedy choices of sender as well as of order. */
    p[k] = sim_crossmesh_plan_new(c, &src, layout2(B, 0), &dst, layout2(0, 0), shape, 3, 2.0, &o,
                                  NULL);
    g_assert_nonnull(p[k]);
  }
  int n = sim_crossmesh_plan_num_units(p[0]);
  g_assert_cmpint(n, ==, 8);
  for (int i = 0; i < n; i++) {
    g_assert_cmpuint(sim_crossmesh_plan_order(p[0])[i], ==, sim_crossmesh_plan_order(p[1])[i]);
    g_assert_cmpint(sim_crossmesh_plan_unit(p[0], i)->sender, ==,
                    sim_crossmesh_plan_unit(p[1], i)->sender);
  }
  g_assert_cmpfloat(sim_crossmesh_plan_cost(p[0]), ==, sim_crossmesh_plan_cost(p[1]));
  g_assert_cmpfloat(sim_crossmesh_estimate(p[0]), ==, sim_crossmesh_estimate(p[1]));
  for (int k = 0; k < 2; k++) sim_crossmesh_plan_free(p[k]);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

/* A DFS budget of one node returns the greedy incumbent: never worse than greedy. */
static void test_order_dfs_budget(void) {
  DevCluster *c = p3_cluster(4);
  MdlMesh src = host_mesh(c, 0, 2, 4), dst = host_mesh(c, 2, 2, 4);
  int64_t shape[3] = {1024, 1024, 512};
  SimCrossMeshOptions o;
  sim_crossmesh_options_init(&o);
  o.order = SIM_CROSSMESH_GREEDY;
  SimCrossMeshPlan *greedy =
      sim_crossmesh_plan_new(c, &src, layout2(1, 1), &dst, layout2(0, 0), shape, 3, 2.0, &o, NULL);
  o.order = SIM_CROSSMESH_DFS;
  o.dfs_node_budget = 1;
  SimCrossMeshPlan *dfs =
      sim_crossmesh_plan_new(c, &src, layout2(1, 1), &dst, layout2(0, 0), shape, 3, 2.0, &o, NULL);
  g_assert_cmpfloat(sim_crossmesh_plan_cost(dfs), <=, sim_crossmesh_plan_cost(greedy));
  sim_crossmesh_plan_free(greedy);
  sim_crossmesh_plan_free(dfs);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

/* ---- Emission ----------------------------------------------------------------------------- */

/* Table 2 case 3 inside a bigger graph: every source device computes for 1 ms first (src_ready);
 * the resharding then takes exactly its standalone estimate; destinations that receive several
 * units get a join; a consumer on each destination waits on dst_ready. Link resources follow
 * sim_network.h (NICs from 4 * num_devices). */
static void test_emit(void) {
  const Table2Case *tc = &table2[2];
  DevCluster *c = p3_cluster(4);
  MdlMesh src = host_mesh(c, 0, 2, 4), dst = host_mesh(c, 2, 2, 4);
  int64_t shape[3] = {1024, 1024, 512};
  SimCrossMeshPlan *p = plan_or_die(c, &src, layout2(tc->src_axis[0], tc->src_axis[1]), &dst,
                                    layout2(tc->dst_axis[0], tc->dst_axis[1]), shape, 3, 2.0,
                                    SIM_CROSSMESH_LOCAL_ALLGATHER, SIM_CROSSMESH_DFS);
  int nd = dev_cluster_num_devices(c);
  /* sim_network.h's layout: 16 GPUs' ports, then 4 hosts x 1 NIC x 2 sides. */
  g_assert_cmpint(sim_crossmesh_extra_resources(c), ==, 2 * nd + 8);
  g_assert_cmpint((int)sim_stream_resources(nd) + sim_crossmesh_extra_resources(c), ==, sim_network_num_resources(c));
  g_assert_cmpuint(sim_crossmesh_resource_nic(c, 3, 0, TRUE), ==, SIM_STREAMS * nd + 2 * nd + 7);
  SimTaskGraph *g = sim_task_graph_new(nd);
  g->num_resources += sim_crossmesh_extra_resources(c);
  SimTask t = {0};
  t.kind = SIM_TASK_FORWARD;
  t.op = t.tensor = t.microbatch = -1;
  t.duration = sim_time_from_seconds(1e-3);
  uint32_t src_ready[8], dst_ready[8], consumer[8];
  for (int i = 0; i < 8; i++) {
    uint32_t r = sim_resource_compute(src.devices[i]);
    src_ready[i] = sim_task_graph_add(g, &t, &r, 1);
  }
  SimTask tag = {0};
  tag.kind = SIM_TASK_COMM;
  tag.op = 7, tag.tensor = 3, tag.microbatch = 2;
  uint32_t before = sim_task_graph_size(g);
  uint32_t added = sim_crossmesh_emit(p, g, &tag, src_ready, dst_ready);
  SimCrossMeshStats st = sim_crossmesh_plan_stats(p);
  g_assert_cmpuint(added, ==, (uint32_t)(st.transfer_tasks + st.join_tasks));
  /* 4 units x (4 scatter sends + 1 all-gather); each destination gets 2 units: 8 joins. */
  g_assert_cmpint(st.transfer_tasks, ==, 20);
  g_assert_cmpint(st.join_tasks, ==, 8);
  gboolean saw_nic = FALSE;
  for (uint32_t i = before; i < sim_task_graph_size(g); i++) {
    const SimTask *task = sim_task_graph_task(g, i);
    g_assert_cmpint(task->kind, ==, SIM_TASK_COMM);
    g_assert_cmpint(task->tensor, ==, 3);
    g_assert_cmpint(task->microbatch, ==, 2);
    for (int k = 0; k < task->nres; k++) {
      uint32_t r = g_array_index(g->task_resources, uint32_t, task->res_begin + k);
      g_assert_cmpuint(r, <, (uint32_t)g->num_resources);
      saw_nic |= r >= (uint32_t)(SIM_STREAMS * nd + 2 * nd);
    }
  }
  g_assert_true(saw_nic);
  for (int i = 0; i < 8; i++) {
    uint32_t r = sim_resource_compute(dst.devices[i]);
    consumer[i] = sim_task_graph_add(g, &t, &r, 1);
    sim_task_graph_edge(g, dst_ready[i], consumer[i]);
  }
  sim_task_graph_finish(g);
  SimSchedule *s = sim_engine_run(g, NULL);
  g_assert_nonnull(s);
  SimTime alone = sim_time_from_seconds(sim_crossmesh_estimate(p));
  /* Rounding: durations are rounded to picoseconds per task, the estimate once. */
  SimTime expect = 2 * t.duration + alone;
  g_assert_cmpuint(s->makespan, <=, expect + 16);
  g_assert_cmpuint(s->makespan + 16, >=, expect);
  sim_schedule_free(s);
  sim_task_graph_free(g);
  sim_crossmesh_plan_free(p);
  g_free(src.devices), g_free(dst.devices);
  dev_cluster_free(c);
}

/* ---- The paper's notation for layouts --------------------------------------------------- */

static void test_layout_parse(void) {
  MdlLayout l;
  int ndims = 0;
  GError *error = NULL;
  g_assert_true(sim_crossmesh_layout_parse("S0RR", 2, &l, &ndims, &error));
  g_assert_no_error(error);
  g_assert_cmpint(ndims, ==, 3);
  g_assert_cmpint(l.axis[0], ==, 0);
  g_assert_cmpint(l.axis[1], ==, B);
  /* S^{01}: one dim over both axes, row-major (test "Table 2" reads case 4 as {1, 1}). */
  g_assert_true(sim_crossmesh_layout_parse("RS01R", 2, &l, &ndims, NULL));
  g_assert_cmpint(ndims, ==, 3);
  g_assert_cmpint(l.axis[0], ==, 1);
  g_assert_cmpint(l.axis[1], ==, 1);
  g_assert_true(sim_crossmesh_layout_parse("RRS^{1}", 2, &l, &ndims, NULL));
  g_assert_cmpint(l.axis[0], ==, B);
  g_assert_cmpint(l.axis[1], ==, 2);
  g_assert_true(sim_crossmesh_layout_parse("RRR", 2, &l, &ndims, NULL));
  g_assert_cmpint(ndims, ==, 3);
  g_assert_cmpint(l.axis[0], ==, B);
  static const char *const bad[] = {"S2R", "S0S0", "SRR", "P0R", "S^{0R", "RRRRRRRRR"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_false(sim_crossmesh_layout_parse(bad[i], 2, &l, &ndims, &error));
    g_assert_error(error, MDL_ERROR, MDL_ERROR_PARSE);
    g_assert_nonnull(strstr(error->message, bad[i]));
    g_clear_error(&error);
  }
}

/* ---- Moves between meshes in a training iteration (SimOptions.crossmesh) ------------------ */

/* Two elementwise ops over a (1024, 1024, 512) fp16 tensor: `send` on the sender mesh writes t,
 * `recv` on the receiver mesh reads it (its gradient goes back in the backward). */
static const char move_model[] =
    "{\"name\": \"move\", \"batch\": 1024, \"dtype\": \"fp16\", \"tensors\": ["
    " {\"name\": \"x\", \"shape\": [1024, 1024, 512], \"input\": true},"
    " {\"name\": \"t\", \"shape\": [1024, 1024, 512]}, {\"name\": \"u\", \"shape\": [1024, 1024, 512]}],"
    " \"ops\": ["
    " {\"name\": \"send\", \"kind\": \"elementwise\", \"dims\": [{\"name\": \"b\", \"size\": 1024, \"role\": \"sample\"},"
    "  {\"name\": \"y\", \"size\": 1024, \"role\": \"attribute\"}, {\"name\": \"z\", \"size\": 512, \"role\": \"attribute\"}],"
    "  \"inputs\": [{\"tensor\": \"x\", \"dims\": [\"b\", \"y\", \"z\"]}], \"output\": {\"tensor\": \"t\", \"dims\": [\"b\", \"y\", \"z\"]}},"
    " {\"name\": \"recv\", \"kind\": \"elementwise\", \"dims\": [{\"name\": \"b\", \"size\": 1024, \"role\": \"sample\"},"
    "  {\"name\": \"y\", \"size\": 1024, \"role\": \"attribute\"}, {\"name\": \"z\", \"size\": 512, \"role\": \"attribute\"}],"
    "  \"inputs\": [{\"tensor\": \"t\", \"dims\": [\"b\", \"y\", \"z\"]}], \"output\": {\"tensor\": \"u\", \"dims\": [\"b\", \"y\", \"z\"]}}]}";

/* Table 2's meshes (2, 4) -> (2, 4) on hosts 0-1 and 2-3; `send` split @send_split on mesh axis
 * 0 (case 1: "b", S0RR, device-aligned with the receiver's S0RR; case 3: "y", RS0R). */
typedef struct {
  MdlGraph *graph;
  DevCluster *cluster;
  MdlStrategy *strategy;
} MoveSetup;

/* The paper's system (Alpa) moves whole tiles between stages: framework none, so neither
 * Megatron-LM's scatter/gather of pipeline transfers (sb_scatter_gather_axis) nor a host
 * applies. */
static MoveSetup move_setup(const char *send_split) {
  MoveSetup m;
  GError *error = NULL;
  m.cluster = p3_cluster(4);
  m.graph = mdl_graph_from_json(move_model, "move", &error);
  g_assert_no_error(error);
  g_autofree char *json = g_strdup_printf(
      "{\"num_microbatches\": 1, \"framework\": \"none\","
      " \"meshes\": [{\"shape\": [2, 4], \"devices\": [0, 1, 2, 3, 4, 5, 6, 7]},"
      " {\"shape\": [2, 4], \"devices\": [8, 9, 10, 11, 12, 13, 14, 15]}],"
      " \"ops\": [{\"op\": \"send\", \"mesh\": 0, \"stage\": 0, \"split\": [\"%s\", null]},"
      " {\"op\": \"recv\", \"mesh\": 1, \"stage\": 1, \"split\": [\"b\", null]}]}", send_split);
  m.strategy = mdl_strategy_from_json(json, "inline", m.graph, m.cluster, &error);
  g_assert_no_error(error);
  return m;
}

static void move_clear(MoveSetup *m) {
  mdl_strategy_free(m->strategy);
  mdl_graph_free(m->graph);
  dev_cluster_free(m->cluster);
}

static SimRun *move_run(const MoveSetup *m, gboolean crossmesh, SimCrossMeshMethod method,
                        SimCrossMeshOrder order) {
  CmParams params;
  cm_params_default(&params);
  SimOptions o = {.crossmesh = crossmesh, .crossmesh_method = (int)method, .crossmesh_order = (int)order};
  GError *error = NULL;
  SimRun *run = sim_run_new_with_options(m->graph, m->strategy, m->cluster, &params, &o, &error);
  g_assert_no_error(error);
  return run;
}

/* Transfer tasks of the moves of t: per collective kind. */
static void count_moves(const SimRun *run, int *by_collective) {
  memset(by_collective, 0, sizeof(int) * CM_COLLECTIVE_COUNT);
  for (uint32_t i = 0; i < sim_run_num_tasks(run); i++) {
    SimTaskInfo t_info;
    sim_run_task(run, i, &t_info);
    const SimTaskInfo *t = &t_info;
    if (t->kind == SIM_TASK_COMM && t->role == SIM_ROLE_WHOLE && t->duration > 0)
      by_collective[t->collective]++;
  }
}

/* Case 1 is device-aligned: by default each receiver gets its 512 MB tile from its
 * counterpart, one send/recv each way (Megatron's stage-to-stage send/recv without its
 * scatter-gather); the prediction JSON says nothing about cross-mesh planning. Asking for a
 * method plans the aligned move too: broadcast sends each slice over the NICs once. */
static void test_training_aligned(void) {
  MoveSetup m = move_setup("b");
  int counts[CM_COLLECTIVE_COUNT];
  SimRun *tiles = move_run(&m, FALSE, 0, 0);
  count_moves(tiles, counts);
  /* One per simulated receiver each way (symmetry simulates one device per mesh here). */
  g_assert_cmpint(counts[CM_SEND_RECV], ==, sim_run_prediction(tiles)->simulated_gpus);
  g_assert_cmpint(counts[CM_BROADCAST] + counts[CM_ALL_GATHER], ==, 0);
  g_assert_false(sim_run_prediction(tiles)->crossmesh);
  g_autofree char *json = sim_prediction_to_json(tiles, FALSE);
  g_assert_null(strstr(json, "crossmesh"));

  SimRun *bcast = move_run(&m, TRUE, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_ENSEMBLE);
  count_moves(bcast, counts);
  g_assert_cmpint(counts[CM_BROADCAST], >, 0);
  g_assert_cmpfloat(sim_run_prediction(bcast)->iteration_time_s, <, 0.5 * sim_run_prediction(tiles)->iteration_time_s);
  g_autofree char *json2 = sim_prediction_to_json(bcast, FALSE);
  g_assert_nonnull(strstr(json2, "\"crossmesh\":{\"method\":\"broadcast\",\"order\":\"ensemble\"}"));

  SimRun *p2p = move_run(&m, TRUE, SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_GREEDY);
  count_moves(p2p, counts);
  g_assert_cmpint(counts[CM_SEND_RECV], >, 0);
  g_assert_cmpint(counts[CM_BROADCAST] + counts[CM_ALL_GATHER], ==, 0);
  /* Planned send/recv moves the same bytes as the tiles; it may overlap the two directions. */
  g_assert_cmpfloat(sim_run_prediction(p2p)->iteration_time_s, <=, sim_run_prediction(tiles)->iteration_time_s);
  g_assert_cmpfloat(sim_run_prediction(p2p)->iteration_time_s, >, sim_run_prediction(bcast)->iteration_time_s);
  sim_run_free(tiles);
  sim_run_free(bcast);
  sim_run_free(p2p);
  move_clear(&m);
}

/* Case 3 (RS0R -> S0RR) is not aligned: the default plans it with broadcast and the ensemble,
 * so asking for exactly those gives the same graph, bit for bit. Other methods follow Fig. 6's
 * ordering here too: broadcast <= global all-gather (Alpa) <= send/recv. */
static void test_training_methods(void) {
  MoveSetup m = move_setup("y");
  SimRun *dflt = move_run(&m, FALSE, 0, 0);
  SimRun *same = move_run(&m, TRUE, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_ENSEMBLE);
  g_assert_cmpuint(sim_run_num_tasks(dflt), ==, sim_run_num_tasks(same));
  g_assert_cmpmem(&sim_run_prediction(dflt)->iteration_time_s, sizeof(double),
                  &sim_run_prediction(same)->iteration_time_s, sizeof(double));
  SimRun *alpa = move_run(&m, TRUE, SIM_CROSSMESH_GLOBAL_ALLGATHER, SIM_CROSSMESH_GREEDY);
  SimRun *p2p = move_run(&m, TRUE, SIM_CROSSMESH_SEND_RECV, SIM_CROSSMESH_GREEDY);
  SimRun *naive = move_run(&m, TRUE, SIM_CROSSMESH_BROADCAST, SIM_CROSSMESH_NAIVE);
  int counts[CM_COLLECTIVE_COUNT];
  count_moves(alpa, counts);
  g_assert_cmpint(counts[CM_ALL_GATHER], >, 0);
  g_assert_cmpint(counts[CM_BROADCAST], ==, 0);
  g_test_message("case 3 in an iteration: broadcast+ensemble %.4f s, broadcast+naive %.4f s, "
                 "global all-gather+greedy %.4f s, send/recv+greedy %.4f s",
                 sim_run_prediction(dflt)->iteration_time_s, sim_run_prediction(naive)->iteration_time_s,
                 sim_run_prediction(alpa)->iteration_time_s, sim_run_prediction(p2p)->iteration_time_s);
  g_assert_cmpfloat(sim_run_prediction(dflt)->iteration_time_s, <, sim_run_prediction(alpa)->iteration_time_s);
  g_assert_cmpfloat(sim_run_prediction(alpa)->iteration_time_s, <, sim_run_prediction(p2p)->iteration_time_s);
  g_assert_cmpfloat(sim_run_prediction(dflt)->iteration_time_s, <=, sim_run_prediction(naive)->iteration_time_s);
  sim_run_free(dflt);
  sim_run_free(same);
  sim_run_free(alpa);
  sim_run_free(p2p);
  sim_run_free(naive);
  move_clear(&m);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim/crossmesh/names", test_names);
  g_test_add_func("/sim/crossmesh/decompose/figure2", test_decompose_figure2);
  g_test_add_func("/sim/crossmesh/decompose/uneven", test_decompose_uneven);
  g_test_add_func("/sim/crossmesh/decompose/shared-devices", test_decompose_shared_devices);
  g_test_add_func("/sim/crossmesh/decompose/errors", test_decompose_errors);
  static const guint seeds[] = {1, 42, 2023};
  for (guint i = 0; i < G_N_ELEMENTS(seeds); i++) {
    g_autofree char *path = g_strdup_printf("/sim/crossmesh/decompose/random/seed:%u", seeds[i]);
    g_test_add_data_func(path, GUINT_TO_POINTER(seeds[i]), test_decompose_random);
  }
  for (guint i = 0; i < G_N_ELEMENTS(method_cases); i++) {
    g_autofree char *path = g_strdup_printf("/sim/crossmesh/method/%s",
                                            sim_crossmesh_method_name(method_cases[i].method));
    g_test_add_data_func(path, &method_cases[i], test_method);
  }
  g_test_add_func("/sim/crossmesh/method/broadcast-chunks", test_method_broadcast_chunks);
  g_test_add_func("/sim/crossmesh/order/known-optimum", test_order_known_optimum);
  g_test_add_func("/sim/crossmesh/order/dfs-bound", test_order_dfs_bound);
  g_test_add_func("/sim/crossmesh/order/dfs-budget", test_order_dfs_budget);
  for (guint i = 0; i < G_N_ELEMENTS(seeds); i++) {
    g_autofree char *path = g_strdup_printf("/sim/crossmesh/order/randomized/seed:%u", seeds[i]);
    g_test_add_data_func(path, GUINT_TO_POINTER(seeds[i]), test_order_randomized_seed);
  }
  g_test_add_func("/sim/crossmesh/emit", test_emit);
  g_test_add_func("/sim/crossmesh/layout-parse", test_layout_parse);
  g_test_add_func("/sim/crossmesh/training/aligned", test_training_aligned);
  g_test_add_func("/sim/crossmesh/training/methods", test_training_methods);
  for (guint i = 0; i < G_N_ELEMENTS(table2); i++) {
    g_autofree char *fig6 = g_strdup_printf("/sim/crossmesh/table2/case%d/fig6", table2[i].id);
    g_autofree char *fig8 = g_strdup_printf("/sim/crossmesh/table2/case%d/fig8", table2[i].id);
    g_test_add_data_func(fig6, &table2[i], test_table2_fig6);
    g_test_add_data_func(fig8, &table2[i], test_table2_fig8);
  }
  return g_test_run();
}
