/* cli/bench_search — `stratsim bench --suite search` (cli_bench_search.c): the search's speed
 * and how fast each algorithm gets near its best. Measures and prints; asserts nothing. */
#ifndef STRATSIM_CLI_BENCH_SEARCH_H
#define STRATSIM_CLI_BENCH_SEARCH_H

/* Runs the three parts: evaluations per second with and without delta simulation, the full
 * Megatron space against Calculon (Megatron-5B on 64 A100s, GPT-3 175B on 1024 A100s), time
 * to within 1% of the best per algorithm.
 * @seconds (> 0) is each algorithm's time budget in the last part. Returns a
 * CLI exit status. */
int cli_bench_search(double seconds);

#endif
