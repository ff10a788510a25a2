/* scenarios/search — search entries of a scenario: a strategy entry that is not a strategy but
 * `stratsim search` run at each point (search/srch_search.h), the point then simulating the
 * best strategy found.
 *
 * Spec: "search" or "search:algo=A,budget=N,seed=S" (any of the keys, any order; in a scenario
 * file also {"search": {"algo": "cd", "budget": 300, "seed": 1}}). Defaults: algo auto,
 * budget 200 evaluations, seed 1. The space keys vars=group|op, dims=all|megatron,
 * followers=true|false, mesh_axes=1..4 and microbatches=M set SrchOptions.space as `stratsim
 * search --vars, --dims, --followers, --mesh-axes, --microbatches` do. The budget must be a number of evaluations: a time budget
 * would make a stored point depend on the machine that ran it. Each search runs on one thread
 * (the sweep runs points in parallel), so a point's result is the same on every rerun, which
 * is also how `plot` draws its timeline: by searching again.
 */
#ifndef STRATSIM_SCN_SEARCH_H
#define STRATSIM_SCN_SEARCH_H

#include <glib.h>
#include "search/srch_search.h"

G_BEGIN_DECLS

#define SCN_SEARCH_DEFAULT_BUDGET 200

/* Whether @spec is a search entry ("search" or "search:..."). */
gboolean scn_search_spec_is(const char *spec);
/* Parses a search spec into @options (srch_options_default, then the keys; threads 1).
 * FALSE with SCN_ERROR_INVALID naming the key. */
gboolean scn_search_spec_parse(const char *spec, SrchOptions *options, GError **error);

/* Baseline entries: "baseline:NAME", NAME one of data-parallel, megatron, one-weird-trick: the
 * strategy `stratsim search` reports as that baseline (srch_run's baselines: data parallelism
 * with the fewest microbatches that fit, the best point of the Megatron grid, Krizhevsky's
 * "one weird trick" for models with convolutions), simulated at the point. It runs srch_run
 * with the random driver on one evaluation (the driver's result is not used). */
gboolean scn_baseline_spec_is(const char *spec);
/* Fills @options for that run and @baseline with srch_run's name of the baseline ("one weird
 * trick"; static). FALSE with SCN_ERROR_INVALID for an unknown NAME. */
gboolean scn_baseline_spec_parse(const char *spec, SrchOptions *options, const char **baseline,
                                 GError **error);

G_END_DECLS

#endif
