/* sim/build_memo — collective times and NCCL channel counts kept across the strategies one
 * bounder screens (sim_bounder_set_strategy): cm_group_collective_time and NCCL's tuner are
 * pure functions of the cost parameters, the cluster, the collective, the group's devices in
 * order and the bytes, and a bounder keeps the first two for its lifetime, so the memo is
 * keyed by the other three, devices compared one by one. Without a memo (b->collectives
 * NULL: the builder, a one-shot bound) both are computed each time. */
#include "sim/sim-int.h"
#include "sim/sim_build-int.h"

#include "costmodel/cm_nccl.h"

/* Past this many entries the memo starts again empty (a bound on its memory). */
#define MEMO_MAX_ENTRIES 65536

typedef struct {
  int coll, p;
  double bytes;
  const int *devices; /* a lookup's: the caller's; an entry's: its own copy */
  guint hash;
} Key;

typedef struct {
  Key key; /* first: the table hashes and compares entries as keys */
  double time_s;
  int channels; /* -1: not asked yet */
  gboolean timed;
} Entry;

struct SbCollectiveMemo {
  GHashTable *entries; /* Entry -> itself */
};

static guint key_hash(gconstpointer k) {
  return ((const Key *)k)->hash;
}

static gboolean key_equal(gconstpointer a, gconstpointer b) {
  const Key *x = a, *y = b;
  return x->hash == y->hash && x->coll == y->coll && x->p == y->p && x->bytes == y->bytes &&
         memcmp(x->devices, y->devices, sizeof(int) * (gsize)x->p) == 0;
}

static Key make_key(CmCollective coll, const int *devices, int p, double bytes) {
  guint64 bits;
  memcpy(&bits, &bytes, sizeof bits);
  guint64 h = (bits ^ (bits >> 29)) * 0x9E3779B97F4A7C15u ^ ((guint64)coll << 40) ^ (guint64)p;
  for (int i = 0; i < p; i++) h = (h ^ (guint64)devices[i]) * 0x100000001B3u; /* FNV-1a, 64 bits */
  return (Key){(int)coll, p, bytes, devices, (guint)(h ^ (h >> 32))};
}

SbCollectiveMemo *sb_collective_memo_new(void) {
  SbCollectiveMemo *memo = g_new(SbCollectiveMemo, 1);
  memo->entries = g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
  return memo;
}

void sb_collective_memo_free(SbCollectiveMemo *memo) {
  if (!memo) return;
  g_hash_table_unref(memo->entries);
  g_free(memo);
}

/* @b's entry for the collective, made (with nothing computed yet) where there is none. */
static Entry *entry_of(const Builder *b, CmCollective coll, const int *devices, int p, double bytes) {
  GHashTable *table = b->collectives->entries;
  Key key = make_key(coll, devices, p, bytes);
  Entry *e = g_hash_table_lookup(table, &key);
  if (e) return e;
  if (g_hash_table_size(table) >= MEMO_MAX_ENTRIES) g_hash_table_remove_all(table);
  e = g_malloc(sizeof(Entry) + sizeof(int) * (gsize)p); /* the devices after the entry */
  int *own = (int *)(e + 1);
  memcpy(own, devices, sizeof(int) * (gsize)p);
  key.devices = own;
  *e = (Entry){key, 0, -1, FALSE};
  g_hash_table_add(table, e);
  return e;
}

double sb_collective_time(const Builder *b, CmCollective coll, const int *devices, int p, double bytes) {
  if (!b->collectives) return cm_group_collective_time(b->p, b->c, coll, devices, p, bytes);
  Entry *e = entry_of(b, coll, devices, p, bytes);
  if (!e->timed) {
    e->time_s = cm_group_collective_time(b->p, b->c, coll, devices, p, bytes);
    e->timed = TRUE;
  }
  return e->time_s;
}

/* Channels (CTAs) NCCL's tuner runs @coll of @bytes over @devices on; 0 for what is not an
 * NCCL collective kernel (cm_nccl_covers). */
static int nccl_channels(const DevCluster *c, CmCollective coll, const int *devices, int p, double bytes) {
  if (!cm_nccl_covers(coll)) return 0;
  CmGroupShape shape;
  CmNcclHardware hw;
  CmNcclCost cost;
  CmAlgorithm algorithm;
  CmProtocol protocol;
  cm_group_shape(c, devices, p, &shape);
  cm_nccl_hardware(c, &hw);
  cm_nccl_tune(coll, &shape, &hw, bytes, &algorithm, &protocol, &cost);
  return cost.channels;
}

int sb_collective_channels(const Builder *b, CmCollective coll, const int *devices, int p, double bytes) {
  if (!b->collectives) return nccl_channels(b->c, coll, devices, p, bytes);
  Entry *e = entry_of(b, coll, devices, p, bytes);
  if (e->channels < 0) e->channels = nccl_channels(b->c, coll, devices, p, bytes);
  return e->channels;
}
