/* validate/layers — one transformer layer's forward and backward time, simulated against a
 * published per-layer measurement (Korthikanti et al. 2022, Table 4: the 22B model's layer
 * under five recomputation / sequence-parallel settings; issue 14, item 5). `stratsim bench
 * --suite megatron` prints it; tests/test-components.c checks it. Definitions: val_layers.c. */
#ifndef STRATSIM_VAL_LAYERS_H
#define STRATSIM_VAL_LAYERS_H

#include <glib.h>
#include "model/mdl_strategy.h"

G_BEGIN_DECLS

/* One row of tests/data/validation/korthikanti_table4.csv. */
typedef struct {
  char *experiment;         /* "Selective + Sequence" */
  int layers, hidden, heads, seq, vocab, micro_batch, tp;
  MdlRecompute recompute;
  gboolean sequence_parallel;
  double forward_s, backward_s; /* measured; backward includes recomputation */
} ValLayerRow;

/* The rows of @path (GPtrArray of ValLayerRow, owned: unref frees), or NULL with @error naming
 * the file, the row and the field. */
GPtrArray *val_layer_rows_load(const char *path, GError **error);

typedef struct {
  double forward_s, backward_s;  /* the simulated layer periods */
  double forward_comm_s;         /* the tensor-parallel collectives inside the forward period */
  double forward_comm_ref_s;     /* the same collectives on the measured all-reduce curve */
} ValLayerTimes;

/* Simulates @row's model (one microbatch of micro_batch samples, tp ranks, no pipeline, no data
 * parallelism, on one DGX A100) and measures on GPU 0 the steady-state period of one layer, the
 * middle one k = layers / 2: forward, from the start of layer k's first forward task to layer
 * k+1's; backward, from the start of layer k's first backward-pass task (its recomputed
 * forward, if any) to layer k-1's. Periods, so each includes the layer's exposed
 * communication and any idle time, as a measurement around one layer's calls does. The
 * forward's tensor-parallel collectives (Megatron's forward waits for each) are also timed on
 * @curve (val_allreduce_curve_load), so that forward_s - forward_comm_s + forward_comm_ref_s is
 * the forward with measured collectives. FALSE with @error when the strategy is invalid. */
gboolean val_layer_times(const ValLayerRow *row, const GArray *curve, ValLayerTimes *out,
                         GError **error);

G_END_DECLS

#endif
