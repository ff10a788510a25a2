/* cli/bench_collectives — `stratsim bench --suite collectives` (cli_bench_collectives.c): the
 * collective model and calibration against published curves (costmodel/cm_check.h). Measures
 * and prints; asserts nothing (tests/test-nccl.c holds the bounds). */
#ifndef STRATSIM_CLI_BENCH_COLLECTIVES_H
#define STRATSIM_CLI_BENCH_COLLECTIVES_H

/* Prints, per curve of @path (NULL: nccl_public.csv in cli_validation_dir()) and over all of
 * them, the model's error at sizes >= 1 MiB, the held-out error of
 * a calibration fitted to every other size, and the error at 4x the largest fitted size.
 * Returns a CLI exit status. */
int cli_bench_collectives(const char *path);

#endif
