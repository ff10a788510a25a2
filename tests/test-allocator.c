/* Tests of util/memory: the allocator settings every command runs with (util_memory_tune):
 * after them large blocks come from the heap and stay there when freed; with
 * STRATSIM_HUGE_PAGES=1 the heap's reserve asks for transparent huge pages, by default not. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "util/util_memory.h"

/* Whether the kernel offers transparent huge pages at all (its setting is not "[never]"). */
static gboolean thp_offered(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/sys/kernel/mm/transparent_hugepage/enabled", &text, NULL, NULL))
    return FALSE;
  return strstr(text, "[never]") == NULL;
}

/* Whether this test can see the advice: glibc's malloc, no sanitizer, huge pages offered and
 * /proc/self/smaps readable; else marks the test skipped. */
static gboolean can_see_advice(void) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  g_test_skip("the allocator settings apply to glibc's malloc only (not under a sanitizer)");
  return FALSE;
#endif
  if (!g_file_test("/proc/self/smaps", G_FILE_TEST_EXISTS) || !thp_offered()) {
    g_test_skip("no transparent huge pages or no /proc/self/smaps");
    return FALSE;
  }
  return TRUE;
}

/* One case: STRATSIM_HUGE_PAGES (NULL: unset) and whether the heap's blocks then ask for
 * huge pages. */
typedef struct {
  const char *env;
  gboolean advised;
} HugeCase;

/* In a subprocess (the settings are made once per process): a large block before tuning is
 * glibc's own mmap(), advised nothing; after tuning with the case's environment, two 8 MiB
 * blocks and a freed one's successor are advised as the case says. */
static void test_huge(gconstpointer data) {
  const HugeCase *c = data;
  if (!can_see_advice()) return;
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    return;
  }
  gsize size = (gsize)8 << 20;
  char *before = malloc(size);
  memset(before, 1, 4096);
  g_assert_false(util_memory_advised_huge(before + size / 2));
  free(before);
  if (c->env) g_setenv("STRATSIM_HUGE_PAGES", c->env, TRUE);
  else g_unsetenv("STRATSIM_HUGE_PAGES");
  util_memory_tune();
  util_memory_tune(); /* later calls change nothing */
  char *a = malloc(size), *b = malloc(size);
  g_assert_nonnull(a);
  g_assert_nonnull(b);
  memset(a, 2, size);
  g_assert_cmpint(util_memory_advised_huge(a + size / 2), ==, c->advised);
  g_assert_cmpint(util_memory_advised_huge(b + size / 2), ==, c->advised);
  for (gsize i = 0; i < size; i += 4096) g_assert_cmpint(a[i], ==, 2);
  free(a);
  free(b);
  char *d = malloc(size); /* from the heap again (its top is not trimmed) */
  g_assert_cmpint(util_memory_advised_huge(d + size / 2), ==, c->advised);
  free(d);
}

static void test_advised_unknown(void) {
  int local = 0;
  /* the stack is not advised; an address in no mapping reads as not advised */
  g_assert_false(util_memory_advised_huge(&local));
  g_assert_false(util_memory_advised_huge((const void *)(guintptr)8));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/util/memory/advised-unknown", test_advised_unknown);
  static const HugeCase on = {"1", TRUE}, unset = {NULL, FALSE}, zero = {"0", FALSE};
  g_test_add_data_func("/util/memory/huge-pages/on", &on, test_huge);
  g_test_add_data_func("/util/memory/huge-pages/off-by-default", &unset, test_huge);
  g_test_add_data_func("/util/memory/huge-pages/zero", &zero, test_huge);
  return g_test_run();
}
