/* Tests of sim/sim_progress.h and of the long commands using it (issue 17, item 8): when
 * stderr is not a terminal, a search, a sweep and an expanded step-mode simulation print a progress line
 * every STRATSIM_PROGRESS_S seconds there (they used to print nothing until the end), stdout
 * keeps only the result, "off" silences them, and a quick run prints nothing. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "sim/sim_progress.h"
#include "test-cli-util.h"
#include "test-db-util.h"

static char *tmpdir;

static char *read_stream(FILE *f) {
  fflush(f);
  long n = ftell(f);
  g_assert_cmpint(n, >=, 0);
  rewind(f);
  char *text = g_malloc0((gsize)n + 1);
  g_assert_cmpuint(fread(text, 1, (size_t)n, f), ==, (size_t)n);
  return text;
}

static guint count(const char *text, const char *needle) {
  guint n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Not a terminal: whole lines, one per interval, naming the command and the latest state. */
static void test_lines(void) {
  FILE *f = tmpfile();
  g_assert_nonnull(f);
  SimProgress *p = sim_progress_new(f, "test", FALSE, 0.05);
  sim_progress_set(p, "phase %d", 1);
  g_usleep(180000);
  sim_progress_set(p, "phase %d", 2);
  g_usleep(180000);
  guint printed = sim_progress_printed(p);
  sim_progress_free(p);
  g_autofree char *text = read_stream(f);
  fclose(f);
  g_test_message("%s", text);
  g_assert_cmpuint(printed, >=, 4);
  g_assert_cmpuint(count(text, "\n"), ==, printed);
  g_assert_cmpuint(count(text, "stratsim test: phase 1 ("), >=, 1);
  g_assert_cmpuint(count(text, "stratsim test: phase 2 ("), >=, 1);
  g_assert_null(strchr(text, '\r'));
  g_assert_true(g_str_has_suffix(text, " s)\n"));
}

/* Nothing before the first interval: quick runs stay quiet; no state, no line. */
static void test_quiet(void) {
  FILE *f = tmpfile();
  SimProgress *p = sim_progress_new(f, "test", FALSE, 10);
  sim_progress_set(p, "working");
  sim_progress_free(p);
  SimProgress *none = sim_progress_new(f, "test", FALSE, 0.02);
  g_usleep(100000);
  sim_progress_free(none);
  sim_progress_set(NULL, "ignored");
  sim_progress_free(NULL);
  g_autofree char *text = read_stream(f);
  fclose(f);
  g_assert_cmpstr(text, ==, "");
}

/* A terminal: redrawn in place, erased at the end. */
static void test_terminal(void) {
  FILE *f = tmpfile();
  SimProgress *p = sim_progress_new(f, "test", TRUE, 5);
  sim_progress_set(p, "drawing");
  g_usleep(1200000); /* two redraws at 0.5 s */
  sim_progress_free(p);
  g_autofree char *text = read_stream(f);
  fclose(f);
  g_assert_null(strchr(text, '\n'));
  g_assert_cmpuint(count(text, "\r  drawing ("), >=, 2);
  g_assert_true(g_str_has_suffix(text, "\r\033[K"));
}

/* `stratsim ARGS` with STRATSIM_PROGRESS_S=@interval; its stderr (a pipe), the exit status 0. */
static char *cli_stderr(const char *interval, const char *args, char **out) {
  g_autofree char *cmd = g_strdup_printf("%s %s", STRATSIM_BIN, args);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "STRATSIM_PROGRESS_S", interval, TRUE);
  char *err = NULL;
  int status = 0;
  GError *error = NULL;
  g_assert_true(g_spawn_sync(tmpdir, argv, env, G_SPAWN_DEFAULT, NULL, NULL, out, &err, &status,
                             &error));
  g_assert_no_error(error);
  g_assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0) g_error("%s: exit %d: %s", args, WEXITSTATUS(status), err);
  return err;
}

typedef struct {
  const char *name, *args, *line;
} CliCase;

static const CliCase cli_cases[] = {
    {"search", "search --model gpt3-1.3b --cluster dgx-a100:nodes=2 --budget 2s --db p.db "
               "--out w.json", "stratsim search: "},
    {"sweep", "sweep claims.json --db p.db --no-charts --threads 1", "stratsim sweep: ["},
    {"simulate", "simulate --model gpt3-125m --cluster dgx-a100:nodes=2 "
                 "--strategy megatron:tp=4,pp=2,mb=1 --collectives step --no-symmetry --db p.db",
     "stratsim simulate: "},
};

static const char *scenario = TEST_SCENARIO_80;

static void test_cli(gconstpointer data) {
  const CliCase *c = data;
  g_autofree char *file = g_build_filename(tmpdir, "claims.json", NULL);
  g_assert_true(g_file_set_contents(file, scenario, -1, NULL));
  g_autofree char *db = g_build_filename(tmpdir, "p.db", NULL);
  g_unlink(db);
  g_autofree char *out = NULL;
  g_autofree char *err = cli_stderr("0.05", c->args, &out);
  g_test_message("%s", err);
  g_assert_cmpuint(count(err, c->line), >=, 2);
  g_assert_null(strchr(err, '\r'));
  g_unlink(db);
  g_autofree char *quiet_out = NULL;
  g_autofree char *quiet = cli_stderr("off", c->args, &quiet_out);
  g_assert_cmpuint(count(quiet, c->line), ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("stratsim-progress-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/sim/progress/lines", test_lines);
  g_test_add_func("/sim/progress/quiet", test_quiet);
  g_test_add_func("/sim/progress/terminal", test_terminal);
  for (gsize i = 0; i < G_N_ELEMENTS(cli_cases); i++) {
    g_autofree char *path = g_strdup_printf("/sim/progress/cli/%s", cli_cases[i].name);
    g_test_add_data_func(path, &cli_cases[i], test_cli);
  }
  int status = g_test_run();
  test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
