/* util/memory — the process's allocator settings (util_memory.h). */
#define _DEFAULT_SOURCE 1 /* madvise, MADV_HUGEPAGE */
#include "util/util_memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((guintptr)2 << 20)

void util_memory_tune(void) {
  static gsize once = 0;
  if (!g_once_init_enter(&once)) return;
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  /* glibc serves blocks above M_MMAP_THRESHOLD (128 KiB, rising dynamically as they are freed)
   * with fresh mmap()s and returns a heap's free top above M_TRIM_THRESHOLD to the system; a
   * search builds and frees a task graph of tens of MiB per simulation, so each one
   * page-faulted its arrays in anew (mallopt(3)). Measured on GPT-3 175B / 1024 A100s
   * (--algo grid, one thread, perf stat): 2.36 M page faults and 53.5 s task clock before,
   * 1.34 M and 47.7 s with these two settings. 32 MiB is the highest threshold mallopt accepts
   * on 64-bit (HEAP_MAX_SIZE / 2). The heap keeps its peak size until the process ends.
   * Blocks of 32 MiB and more were still mmap()ed afresh per simulation (a GArray grows to a
   * power of two: the 175B task array is exactly 32 MiB), so M_MMAP_MAX 0 serves every block
   * from the heap: bench --suite predict on the 175B point, thread CPU per prediction, median
   * of 21, three pairs: 81.6/61.4/60.5 -> 58.2/57.8/55.9 ms (2026-11-25, loaded machine).
   * With these, a prediction after the first pays little for fresh pages: the 175B bench
   * point, --repeat 401 against --repeat 1 (/usr/bin/time, two pairs, 2026-12-01): 5-6 minor
   * faults and under 0.1 ms of system time a prediction (CPU median ~25-36 ms). */
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  /* Huge pages, only with STRATSIM_HUGE_PAGES=1 (measured 2026-12-02 on this 2-core KVM
   * guest, 175B interleaved point). The first prediction in a fresh process pays for every
   * 4 KiB page it writes: 14.7 k minor faults, ~40 ms of system time against ~25 ms of work.
   * Every block comes from the heap (above), so one block of UTIL_MEMORY_HUGE_RESERVE grows
   * the heap by that much, its 2 MiB-aligned part is advised to use huge pages, and it is
   * freed into the heap (which keeps it: the trim threshold), so later blocks land in it:
   * ~50-140 faults instead. Runs back to back gained: the one prediction of `bench --suite
   * predict --repeat 1`, thread CPU, median of 20 alternated pairs 76.5 -> 46.4 ms; one-shot
   * `stratsim simulate`, wall, two sets of 30 pairs: median 105.5 -> 65 and 97 -> 60.5 ms,
   * mean 115.1 -> 91.3 and 93.4 -> 80.5 ms, with a heavier tail (4-5 of 30 over 130 ms, worst
   * 393 ms). But a one-shot run after the machine idled 4 s lost: 12 pairs, mean 116.9 ms
   * without against 316.7 ms with (every run 265-371 ms), the slow runs spending 65-78% of
   * their samples in the kernel's clear_page_erms and no compaction stall counted in
   * /proc/vmstat. The guest has virtio_balloon bound: free high-order blocks are handed back
   * to the host after a short delay (free page reporting), and a huge page is such a block,
   * so its first touch waits for the host, where 4 KiB pages mostly come from recently freed
   * small blocks. sim_graph.c's header has the same conclusion for the per-array hints it
   * removed. On bare metal, or a guest without page reporting, the hint should only gain;
   * there STRATSIM_HUGE_PAGES=1 turns it on. Where the kernel has huge pages off (or madvise
   * fails) it changes nothing. A heap beyond the reserve grows in small pages (a new mapping
   * the advice does not cover). */
  char *block = g_strcmp0(g_getenv("STRATSIM_HUGE_PAGES"), "1") == 0
                    ? malloc(UTIL_MEMORY_HUGE_RESERVE)
                    : NULL;
  if (block) {
    guintptr from = ((guintptr)block + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    guintptr to = ((guintptr)block + UTIL_MEMORY_HUGE_RESERVE) & ~(HUGE_PAGE - 1);
    if (to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
    free(block);
  }
#endif
  g_once_init_leave(&once, 1);
}

gboolean util_memory_advised_huge(const void *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return FALSE;
  char line[512];
  gboolean inside = FALSE, advised = FALSE;
  guintptr at = (guintptr)p;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    /* a mapping's header: "lo-hi perms offset dev inode path" */
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      advised = strstr(line, " hg") != NULL;
      break;
    }
  }
  fclose(f);
  return advised;
}
