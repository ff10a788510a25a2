/* costmodel/aws_tuner — aws-ofi-nccl's p6-b200 region table and its point-in-region test
 * (cm_aws_tuner.h). The vertices below are the plugin's, in bytes and ranks, region by region
 * in its order (aws/aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp at 228fa0e,
 * region_init_internal_p6); EXT(k) is the table's k-th extended vertex (extend_region of the
 * two vertices listed with it). They are turned into log2 coordinates once (the table is
 * read-only afterwards). */
#include "costmodel/cm_aws_tuner.h"

#include <math.h>

/* include/tuner/nccl_ofi_tuner_region.h at 2198d1d. */
#define TUNER_MAX_SIZE (100.0 * 1024 * 1024 * 1024)
#define TUNER_MAX_RANKS (1024.0 * 1024)
/* transform_log2: a 0 coordinate becomes 1e-6 before log2. */
#define ZERO_COORD 1e-6
/* is_inside_region's tolerance (log2 units). */
#define EDGE_EPS 1e-10

#define MAX_VERTICES 20
#define MAX_REGIONS 5
#define EXT(k) {-1.0, (k)}

enum { PAT = -1 }; /* NCCL_ALGO_PAT: in the plugin's tables, not in this model */

typedef struct {
  double bytes, ranks; /* bytes < 0: extended vertex number `ranks` */
} Vertex;

typedef struct {
  int algorithm; /* CmAlgorithm, or PAT */
  CmProtocol protocol;
  int n;
  Vertex v[MAX_VERTICES];
} Region;

typedef struct {
  CmCollective kind;
  int ranks_per_host; /* 8: nRanks == 8 x nNodes; 1: nRanks == nNodes */
  Vertex ext[3][2];   /* extend_region(a, b, corner) */
  int next;
  int nregions;
  Region r[MAX_REGIONS];
} Table;

#define MS TUNER_MAX_SIZE
#define MR TUNER_MAX_RANKS

static const Table tables[] = {
    {CM_ALL_REDUCE, 8,
     {{{393216, 16}, {393216, 1024}}, {{96993280, 1024}, {106430464, 2048}},
      {{10737418240.0, 512}, {34359738368.0, 1500}}},
     3, 5,
     {{CM_ALGO_TREE, CM_PROTO_LL, 4, {{0, 16}, {393216, 16}, EXT(0), {0, MR}}},
      {CM_ALGO_TREE, CM_PROTO_LL128, 10,
       {EXT(0), {393216, 16}, {4718592, 16}, {18350080, 32}, {40370176, 64}, {57147392, 128},
        {72876032, 256}, {96993280, 1024}, {106430464, 2048}, EXT(1)}},
      {CM_ALGO_RING, CM_PROTO_LL128, 5,
       {{90701824, 128}, {50855936, 64}, {18350080, 32}, {133693440, 32}, {120061952, 64}}},
      {CM_ALGO_NVLS_TREE, CM_PROTO_SIMPLE, 19,
       {EXT(1), {106430464, 2048}, {96993280, 1024}, {72876032, 256}, {57147392, 128},
        {40370176, 64}, {18350080, 32}, {50855936, 64}, {90701824, 128}, {120061952, 64},
        {133693440, 32}, {18350080, 32}, {4718592, 16}, {MS, 16}, {435159040, 32},
        {1072693248, 64}, {10737418240.0, 512}, {34359738368.0, 1500}, EXT(2)}},
      {CM_ALGO_RING, CM_PROTO_SIMPLE, 5,
       {EXT(2), {10737418240.0, 512}, {1072693248, 64}, {435159040, 32}, {MS, 16}}}}},
    {CM_ALL_GATHER, 8,
     {{{74973184, 1024}, {213385216, 2048}}, {{8321499136.0, 512}, {32212254720.0, 2048}}},
     2, 3,
     {{CM_ALGO_RING, CM_PROTO_LL, 10,
       {{0, 16}, {786432, 16}, {1572864, 32}, {2621440, 64}, {4718592, 128}, {17301504, 256},
        {74973184, 1024}, {213385216, 2048}, EXT(0), {0, MR}}},
      {CM_ALGO_RING, CM_PROTO_LL128, 14,
       {EXT(0), {213385216, 2048}, {74973184, 1024}, {17301504, 256}, {4718592, 128},
        {2621440, 64}, {1572864, 32}, {786432, 16}, {198705152, 16}, {456130560, 32},
        {871366656, 64}, {8321499136.0, 512}, {32212254720.0, 2048}, EXT(1)}},
      {CM_ALGO_RING, CM_PROTO_SIMPLE, 7,
       {EXT(1), {32212254720.0, 2048}, {8321499136.0, 512}, {871366656, 64}, {456130560, 32},
        {198705152, 16}, {MS, 16}}}}},
    {CM_REDUCE_SCATTER, 8,
     {{{73924608, 1024}, {209190912, 2048}}, {{4294967296.0, 256}, {8589934592.0, 512}}},
     2, 3,
     {{CM_ALGO_RING, CM_PROTO_LL, 11,
       {{0, 16}, {786432, 16}, {1572864, 32}, {2621440, 64}, {4718592, 128}, {17301504, 256},
        {35127296, 512}, {73924608, 1024}, {209190912, 2048}, EXT(0), {0, MR}}},
      {CM_ALGO_RING, CM_PROTO_LL128, 15,
       {EXT(0), {209190912, 2048}, {73924608, 1024}, {35127296, 512}, {17301504, 256},
        {4718592, 128}, {2621440, 64}, {1572864, 32}, {786432, 16}, {219676672, 16},
        {508559360, 32}, {592445440, 64}, {4294967296.0, 256}, {8589934592.0, 512}, EXT(1)}},
      {CM_ALGO_RING, CM_PROTO_SIMPLE, 7,
       {EXT(1), {8589934592.0, 512}, {4294967296.0, 256}, {592445440, 64}, {508559360, 32},
        {219676672, 16}, {MS, 16}}}}},
    {CM_ALL_REDUCE, 1, {{{0, 0}, {0, 0}}}, 0, 5,
     {{CM_ALGO_TREE, CM_PROTO_LL, 5, {{0, 2}, {32768, 2}, {32768, 128}, {32768, 131072}, {0, 131072}}},
      {CM_ALGO_TREE, CM_PROTO_LL128, 6,
       {{32768, 2}, {131072, 2}, {8388608, 128}, {8589934592.0, 131072}, {32768, 131072}, {32768, 128}}},
      {CM_ALGO_RING, CM_PROTO_LL128, 8,
       {{131072, 2}, {3145728, 2}, {297795584, 128}, {107374182400.0, 45916},
        {107374182400.0, 59831}, {164626432, 128}, {20971520, 48}, {3145728, 48}}},
      {CM_ALGO_TREE, CM_PROTO_SIMPLE, 6,
       {{3145728, 48}, {20971520, 48}, {164626432, 128}, {107374182400.0, 59831},
        {107374182400.0, 131072}, {8589934592.0, 131072}}},
      {CM_ALGO_RING, CM_PROTO_SIMPLE, 4,
       {{3145728, 2}, {107374182400.0, 2}, {107374182400.0, 45916}, {297795584, 128}}}}},
    {CM_ALL_GATHER, 1, {{{0, 0}, {0, 0}}}, 0, 4,
     {{CM_ALGO_RING, CM_PROTO_LL, 3, {{0, 2}, {65536, 2}, {65536, 4}}},
      {PAT, CM_PROTO_SIMPLE, 9,
       {{0, 2}, {65536, 4}, {1048576, 4}, {4194305, 16}, {12582912, 48}, {88080384, 48},
        {248512512, 128}, {34359738368.0, 17137}, {0, 131072}}},
      {CM_ALGO_RING, CM_PROTO_LL128, 12,
       {{65536, 2}, {2097152, 2}, {16777216, 8}, {291504128, 128}, {34359738368.0, 15008},
        {34359738368.0, 17137}, {248512512, 128}, {88080384, 48}, {12582912, 48},
        {4194305, 16}, {1048576, 4}, {65536, 4}}},
      {CM_ALGO_RING, CM_PROTO_SIMPLE, 5,
       {{2097152, 2}, {34359738368.0, 2}, {34359738368.0, 15008}, {291504128, 128}, {16777216, 8}}}}},
    {CM_REDUCE_SCATTER, 1, {{{0, 0}, {0, 0}}}, 0, 4,
     {{CM_ALGO_RING, CM_PROTO_LL, 3, {{0, 2}, {65536, 2}, {65536, 4}}},
      {PAT, CM_PROTO_SIMPLE, 9,
       {{0, 2}, {65536, 4}, {1048576, 4}, {3345192, 8}, {19065019, 16}, {67108864, 48},
        {106954752, 48}, {274877906944.0, 121928}, {0, 131072}}},
      {CM_ALGO_RING, CM_PROTO_LL128, 9,
       {{65536, 2}, {2097152, 2}, {16777216, 8}, {106954752, 48}, {67108864, 48},
        {19065019, 16}, {3345192, 8}, {1048576, 4}, {65536, 4}}},
      {CM_ALGO_RING, CM_PROTO_SIMPLE, 5,
       {{2097152, 2}, {274877906944.0, 2}, {274877906944.0, 121928}, {106954752, 48},
        {16777216, 8}}}}},
};

#undef MS
#undef MR

/* A table's regions in log2 coordinates. */
typedef struct {
  double x, y;
} Point;

typedef struct {
  int n;
  Point p[MAX_VERTICES];
} Polygon;

static Polygon polygons[G_N_ELEMENTS(tables)][MAX_REGIONS];

static Point log2_point(double bytes, double ranks) {
  return (Point){log2(bytes > 0 ? bytes : ZERO_COORD), log2(ranks > 0 ? ranks : ZERO_COORD)};
}

/* extend_region: on the line through @a and @b (log2 coordinates), the point that reaches the
 * corner's x or y, whichever comes first; vertical and horizontal lines keep their x or y. */
static Point extend(Point a, Point b) {
  Point z = log2_point(TUNER_MAX_SIZE, TUNER_MAX_RANKS);
  if (a.x == b.x) return (Point){a.x, z.y};
  if (a.y == b.y) return (Point){z.x, a.y};
  double m = (a.y - b.y) / (a.x - b.x), c = b.y - m * b.x, y_at_corner = m * z.x + c;
  return y_at_corner < z.y ? (Point){z.x, y_at_corner} : (Point){(z.y - c) / m, z.y};
}

static gpointer build_polygons(gpointer unused) {
  (void)unused;
  for (gsize t = 0; t < G_N_ELEMENTS(tables); t++) {
    const Table *table = &tables[t];
    Point ext[3];
    for (int k = 0; k < table->next; k++)
      ext[k] = extend(log2_point(table->ext[k][0].bytes, table->ext[k][0].ranks),
                      log2_point(table->ext[k][1].bytes, table->ext[k][1].ranks));
    for (int r = 0; r < table->nregions; r++) {
      const Region *region = &table->r[r];
      Polygon *poly = &polygons[t][r];
      poly->n = region->n;
      for (int i = 0; i < region->n; i++) {
        const Vertex *v = &region->v[i];
        poly->p[i] = v->bytes < 0 ? ext[(int)v->ranks] : log2_point(v->bytes, v->ranks);
      }
    }
  }
  return NULL;
}

/* Whether @p lies on the segment @a @b, within EDGE_EPS. */
static gboolean on_segment(Point p, Point a, Point b) {
  double dx = b.x - a.x, dy = b.y - a.y, len2 = dx * dx + dy * dy;
  double t = len2 > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / len2 : 0.0;
  if (t < -EDGE_EPS || t > 1 + EDGE_EPS) return FALSE;
  double ex = a.x + t * dx - p.x, ey = a.y + t * dy - p.y;
  return sqrt(ex * ex + ey * ey) < EDGE_EPS;
}

/* Inside @poly or on its boundary. */
static gboolean contains(const Polygon *poly, Point p) {
  for (int i = 0; i < poly->n; i++)
    if (on_segment(p, poly->p[i], poly->p[(i + 1) % poly->n])) return TRUE;
  gboolean inside = FALSE;
  for (int i = 0; i < poly->n; i++) {
    Point a = poly->p[i], b = poly->p[(i + 1) % poly->n];
    if ((a.y > p.y) == (b.y > p.y)) continue;
    double x = a.x + (p.y - a.y) * (b.x - a.x) / (b.y - a.y);
    if (x > p.x) inside = !inside;
  }
  return inside;
}

gboolean cm_aws_tuner_p6_choice(CmCollective kind, int ranks, int hosts, double bytes,
                                CmNcclRunsFunc runs, gpointer data, CmAlgorithm *algorithm,
                                CmProtocol *protocol) {
  g_return_val_if_fail(runs != NULL && algorithm != NULL && protocol != NULL, FALSE);
  /* region_get_coll_info_internal_v3: "Skip when two nodes or lesser". */
  if (hosts <= 2 || ranks < 1 || !(bytes >= 0)) return FALSE;
  int per_host = ranks == 8 * hosts ? 8 : ranks == hosts ? 1 : 0;
  static GOnce once = G_ONCE_INIT;
  g_once(&once, build_polygons, NULL);
  Point p = log2_point(bytes, ranks);
  for (gsize t = 0; t < G_N_ELEMENTS(tables); t++) {
    const Table *table = &tables[t];
    if (table->kind != kind || table->ranks_per_host != per_host) continue;
    for (int r = 0; r < table->nregions; r++) {
      const Region *region = &table->r[r];
      if (region->algorithm != PAT && !runs((CmAlgorithm)region->algorithm, region->protocol, data))
        continue;
      if (!contains(&polygons[t][r], p)) continue;
      if (region->algorithm == PAT) return FALSE;
      *algorithm = (CmAlgorithm)region->algorithm;
      *protocol = region->protocol;
      return TRUE;
    }
    return FALSE;
  }
  return FALSE;
}
