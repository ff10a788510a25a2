/* search/space_points — moves inside a strategy space (srch_space.h): switching a point's
 * context (mesh and microbatches) to the nearest configs, the data-parallel, expert ("one weird
 * trick") and random points, and the per-op compute measurement. Split out of srch_space.c, which
 * builds the space (variables, meshes, contexts and their valid configs). */
#include "search/srch_space.h"

#include <math.h>
#include <string.h>

/* Per op dim, log2 of its split degree under @config on @mesh. */
static void degrees_log2(const MdlOp *op, const SrchConfig *config, const SrchMesh *mesh, double *out) {
  for (int d = 0; d < op->ndims; d++) {
    out[d] = 0;
    for (int a = 0; a < mesh->naxes; a++)
      if (config->split[a] == d) out[d] += log2((double)mesh->shape[a]);
  }
}

void srch_space_set_context(const SrchSpace *s, int *point, int to) {
  int from = point[0];
  if (from == to) return;
  const SrchContext *a = &s->contexts[from], *b = &s->contexts[to];
  for (int v = 0; v < s->nvars; v++) {
    const MdlOp *op = mdl_graph_op(s->graph, s->members[v][0]);
    double want[MDL_MAX_DIMS], have[MDL_MAX_DIMS];
    degrees_log2(op, &a->values[v][point[1 + v]], &s->meshes[a->mesh], want);
    int best = 0;
    double best_distance = INFINITY;
    for (int j = 0; j < b->nvalues[v]; j++) {
      degrees_log2(op, &b->values[v][j], &s->meshes[b->mesh], have);
      double distance = 0;
      for (int d = 0; d < op->ndims; d++) distance += fabs(have[d] - want[d]);
      if (distance < best_distance) {
        best_distance = distance;
        best = j;
      }
    }
    point[1 + v] = best;
  }
  point[0] = to;
}

/* The context on mesh @mesh with the fewest microbatches, -1 if none. */
static int context_of_mesh(const SrchSpace *s, int mesh) {
  for (int c = 0; c < s->ncontexts; c++)
    if (s->contexts[c].mesh == mesh) return c; /* contexts are in microbatch order per mesh */
  return -1;
}

/* Sets variable @v of @point to the value nearest @wish: the wish itself, else with the
 * axes in @fallback_mask replicated, else every axis replicated, else the first value. */
static void set_wished(const SrchSpace *s, int *point, int v, int8_t *wish, unsigned fallback_mask) {
  int ctx = point[0];
  int j = srch_space_find_value(s, ctx, v, wish);
  if (j < 0) {
    for (int a = 0; a < MDL_MAX_MESH_AXES; a++)
      if (fallback_mask & (1u << a)) wish[a] = -1;
    j = srch_space_find_value(s, ctx, v, wish);
  }
  if (j < 0) {
    int8_t none[MDL_MAX_MESH_AXES];
    memset(none, -1, sizeof none);
    j = srch_space_find_value(s, ctx, v, none);
  }
  point[1 + v] = j < 0 ? 0 : j;
}

gboolean srch_space_data_parallel(const SrchSpace *s, int *point) {
  for (int c = 0; c < s->ncontexts; c++) {
    if (s->meshes[s->contexts[c].mesh].naxes != 1) continue;
    gboolean all = TRUE;
    point[0] = c;
    for (int v = 0; v < s->nvars; v++) {
      int8_t wish[MDL_MAX_MESH_AXES];
      memset(wish, -1, sizeof wish);
      wish[0] = (int8_t)mdl_op_sample_dim(mdl_graph_op(s->graph, s->members[v][0]));
      int j = srch_space_find_value(s, c, v, wish);
      if (j < 0) {
        all = FALSE;
        break;
      }
      point[1 + v] = j;
    }
    if (all) return TRUE;
  }
  /* Not in the space: the first context, each variable split on its sample dim where it can. */
  point[0] = 0;
  for (int v = 0; v < s->nvars; v++) {
    int8_t wish[MDL_MAX_MESH_AXES];
    memset(wish, -1, sizeof wish);
    for (int a = 0; a < s->meshes[s->contexts[0].mesh].naxes; a++)
      wish[a] = (int8_t)mdl_op_sample_dim(mdl_graph_op(s->graph, s->members[v][0]));
    set_wished(s, point, v, wish, ~0u);
  }
  return FALSE;
}

static gboolean has_convolutions(const MdlGraph *g) {
  for (int o = 0; o < mdl_graph_num_ops(g); o++)
    if (mdl_graph_op(g, o)->kind == MDL_OP_CONV2D) return TRUE;
  return FALSE;
}

static int first_parameter_dim(const MdlOp *op) {
  for (int d = 0; d < op->ndims; d++)
    if (op->dims[d].role == MDL_ROLE_PARAMETER && op->dims[d].splittable) return d;
  return -1;
}

void srch_space_expert(const SrchSpace *s, int *point) {
  int N = s->cluster->nodes, G = s->cluster->gpus_per_node;
  int mesh = -1, host_axis = -1, gpu_axis = -1;
  gboolean trick = has_convolutions(s->graph);
  for (int m = 0; m < s->nmeshes && mesh < 0; m++) {
    const SrchMesh *sm = &s->meshes[m];
    if (trick || N == 1 || G == 1) {
      if (sm->naxes == 1) mesh = m;
      continue;
    }
    if (sm->naxes == 2 && sm->nodes[0] == N && sm->gpus[0] == 1 && sm->nodes[1] == 1 && sm->gpus[1] == G) {
      mesh = m;
      host_axis = 0;
      gpu_axis = 1;
    }
  }
  if (mesh < 0) mesh = 0; /* not in the space (e.g. one mesh axis): the 1-axis mesh */
  if (host_axis < 0 && gpu_axis < 0 && !trick) {
    if (N == 1) gpu_axis = 0;
    else host_axis = 0;
  }
  int ctx = context_of_mesh(s, mesh);
  point[0] = ctx >= 0 ? ctx : 0;
  for (int v = 0; v < s->nvars; v++) {
    const MdlOp *op = mdl_graph_op(s->graph, s->members[v][0]);
    int8_t wish[MDL_MAX_MESH_AXES];
    memset(wish, -1, sizeof wish);
    unsigned fallback = 0;
    if (trick) {
      /* Krizhevsky 2014: data-parallel convolutions, model-parallel fully connected layers. */
      int p = op->kind == MDL_OP_MATMUL ? first_parameter_dim(op) : -1;
      wish[0] = (int8_t)(p >= 0 ? p : mdl_op_sample_dim(op));
    } else {
      if (host_axis >= 0) wish[host_axis] = (int8_t)mdl_op_sample_dim(op);
      if (gpu_axis >= 0) {
        wish[gpu_axis] = (int8_t)op->tp_dim;
        fallback = 1u << gpu_axis;
      }
    }
    set_wished(s, point, v, wish, fallback);
  }
}

void srch_space_random(const SrchSpace *s, GRand *rng, int *point) {
  double u = g_rand_double(rng);
  point[0] = s->ncontexts - 1;
  for (int c = 0; c < s->ncontexts - 1; c++)
    if (u < s->context_cdf[c]) {
      point[0] = c;
      break;
    }
  const SrchContext *c = &s->contexts[point[0]];
  for (int v = 0; v < s->nvars; v++) point[1 + v] = g_rand_int_range(rng, 0, c->nvalues[v]);
}

/* --- compute per value (the exhaustive search's bound) --- */

gboolean srch_space_measure_compute(SrchSpace *s, const CmParams *params,
                                    const SimOptions *options, GError **error) {
  MdlStrategy *st = srch_space_new_strategy(s, error);
  if (!st) return FALSE;
  int nops = mdl_graph_num_ops(s->graph);
  g_autofree int *point = g_new(int, s->point_len);
  g_autofree guint64 *sum = g_new(guint64, nops);
  g_autofree guint64 *forwards = g_new(guint64, nops);
  gboolean ok = TRUE;
  for (int c = 0; c < s->ncontexts && ok; c++) {
    SrchContext *ctx = &s->contexts[c];
    if (ctx->compute) continue;
    int most = 0;
    for (int v = 0; v < s->nvars; v++) most = MAX(most, ctx->nvalues[v]);
    ctx->compute = g_new0(SimTime *, s->nvars);
    for (int v = 0; v < s->nvars; v++) ctx->compute[v] = g_new0(SimTime, MAX(ctx->nvalues[v], 1));
    point[0] = c;
    for (int j = 0; j < most && ok; j++) {
      for (int v = 0; v < s->nvars; v++) point[1 + v] = MIN(j, ctx->nvalues[v] - 1);
      srch_space_apply(s, point, st);
      SimTaskGraph *tg = sim_build_with_options(s->graph, st, s->cluster, params, options, error);
      if (!tg) {
        ok = FALSE;
        break;
      }
      sim_task_graph_op_compute(tg, nops, sum, forwards);
      sim_task_graph_free(tg);
      for (int v = 0; v < s->nvars; v++) {
        if (j >= ctx->nvalues[v]) continue;
        SimTime total = 0;
        for (int i = 0; i < s->nmembers[v]; i++) {
          int o = s->members[v][i];
          /* forwards = microbatches x simulated devices of the op; every device of the mesh
           * runs the same kernels (each split degree divides its dim). */
          guint64 devices = forwards[o] / (guint64)ctx->microbatches;
          total += devices ? sum[o] / devices : 0;
        }
        ctx->compute[v][j] = total;
      }
    }
  }
  mdl_strategy_free(st);
  return ok;
}
