/* cli/outputs — output paths checked before the work (issue 17, item 1): a search, sweep or
 * simulation that would end by failing to write its --out, --trace or chart directory is
 * refused at once, with one line naming the option and the path, before minutes of work. */
#ifndef STRATSIM_CLI_OUTPUTS_H
#define STRATSIM_CLI_OUTPUTS_H

#include <glib.h>

/* Whether file @path (given as @option, e.g. "--out") can be written: not a directory, its
 * directory exists and is writable, the file itself writable where it exists. NULL @path: TRUE.
 * FALSE with G_FILE_ERROR (one line). */
gboolean cli_output_file_ok(const char *option, const char *path, GError **error);

/* Whether directory @dir (given as @option) can be written or created: it is a writable
 * directory, or its nearest existing ancestor is (the command creates the rest). */
gboolean cli_output_dir_ok(const char *option, const char *dir, GError **error);

/* Where results land by default (README.md, "Where results go"; issue 17, item 10): the
 * directory $STRATSIM_RESULTS when set; else results/ of the nearest directory, from the
 * current one up, that is a stratsim checkout (it has results/res_db.c) or already holds
 * results/stratsim.db; else results/ here. Returns that directory joined with @name (NULL:
 * the directory itself); caller g_frees. So `build/stratsim` run from build/ or a subdirectory
 * of the checkout writes to the checkout's results/, not a new results/ beside it. */
char *cli_results_path(const char *name);

/* The published measurements `bench --suite megatron|collectives` read by default: the
 * checkout's tests/data/validation found from the current directory up (so the suites run from
 * build/ or any folder of a checkout), else that of the source tree the binary was built from.
 * Caller g_free()s. */
char *cli_validation_dir(void);

/* The folders of the checkout's tests/data/gpu (beside cli_validation_dir) that hold @file,
 * sorted by name (GPtrArray of paths, owned); NULL, with a message on stderr, when there is no
 * such tests/data/gpu. What `bench --suite gemm|host` read by default. */
GPtrArray *cli_gpu_data_dirs(const char *file);

#endif
