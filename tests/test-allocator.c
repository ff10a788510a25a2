/* Tests of util/memory: the allocator settings every command runs with (util_memory_tune):
 * after them a large block lands in the heap's reserve, which asks for transparent huge pages,
 * where before it was a fresh mapping that did not. */
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

static void test_tune(void) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  g_test_skip("the allocator settings apply to glibc's malloc only (not under a sanitizer)");
  return;
#else
  if (!g_file_test("/proc/self/smaps", G_FILE_TEST_EXISTS)) {
    g_test_skip("no /proc/self/smaps to read the mappings' flags from");
    return;
  }
  if (!thp_offered()) {
    g_test_skip("transparent huge pages are off on this kernel");
    return;
  }
  gsize size = (gsize)8 << 20;
  /* before: glibc serves a block this large with its own mmap(), advised nothing */
  char *before = malloc(size);
  g_assert_nonnull(before);
  memset(before, 1, 4096);
  g_assert_false(util_memory_advised_huge(before + size / 2));
  free(before);
  util_memory_tune();
  util_memory_tune(); /* later calls change nothing */
  /* after: blocks come from the heap's reserve, advised huge pages, up to the reserve's size */
  char *a = malloc(size), *b = malloc(size);
  g_assert_nonnull(a);
  g_assert_nonnull(b);
  memset(a, 2, size);
  g_assert_true(util_memory_advised_huge(a + size / 2));
  g_assert_true(util_memory_advised_huge(b + size / 2));
  for (gsize i = 0; i < size; i += 4096) g_assert_cmpint(a[i], ==, 2);
  free(a);
  free(b);
  /* a reused block is still there (the heap's top is not trimmed) */
  char *c = malloc(size);
  g_assert_true(util_memory_advised_huge(c + size / 2));
  free(c);
#endif
}

/* STRATSIM_HUGE_PAGES=0: blocks still come from the heap, without the advice (in a
 * subprocess: the settings are made once per process). */
static void test_opt_out(void) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  g_test_skip("the allocator settings apply to glibc's malloc only (not under a sanitizer)");
#else
  if (!g_file_test("/proc/self/smaps", G_FILE_TEST_EXISTS) || !thp_offered()) {
    g_test_skip("no transparent huge pages or no /proc/self/smaps");
    return;
  }
  if (g_test_subprocess()) {
    g_setenv("STRATSIM_HUGE_PAGES", "0", TRUE);
    util_memory_tune();
    gsize size = (gsize)8 << 20;
    char *a = malloc(size);
    memset(a, 3, size);
    g_assert_false(util_memory_advised_huge(a + size / 2));
    free(a);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
#endif
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
  g_test_add_func("/util/memory/tune", test_tune);
  g_test_add_func("/util/memory/opt-out", test_opt_out);
  return g_test_run();
}
