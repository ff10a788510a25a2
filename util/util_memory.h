/* util/memory — the process's allocator settings for simulating large task graphs. */
#ifndef STRATSIM_UTIL_MEMORY_H
#define STRATSIM_UTIL_MEMORY_H

#include <glib.h>

G_BEGIN_DECLS

/* The heap's first bytes that may ask for transparent huge pages (util_memory_tune): a 175B
 * prediction touches ~60 MiB, a step-expanded one a few hundred. Virtual address space only:
 * a page is backed when first written. */
#define UTIL_MEMORY_HUGE_RESERVE ((gsize)256 << 20)

/* Tunes the C library's allocator for building, simulating and freeing task graphs of tens
 * of MiB (glibc; elsewhere, and under AddressSanitizer, nothing). Once per process (later
 * calls return at once); affects the whole process; results are unchanged.
 * - Freed memory stays in the process for the next graph (mallopt: no mmap()ed blocks, no
 *   trimming of the heap's top).
 * - With STRATSIM_HUGE_PAGES=1 in the environment, the heap's first
 *   UTIL_MEMORY_HUGE_RESERVE bytes ask for transparent huge pages (madvise MADV_HUGEPAGE; in
 *   effect where /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise"): a
 *   fresh process then takes one page fault per 2 MiB instead of per 4 KiB. Off by default:
 *   on a virtual machine that hands free memory back to its host, a fresh huge page's first
 *   touch is slow (util_memory.c has the measurements). */
void util_memory_tune(void);

/* Whether the page holding @p asks for transparent huge pages (its mapping's VmFlags in
 * /proc/self/smaps has "hg"); FALSE where that cannot be read. For tests. */
gboolean util_memory_advised_huge(const void *p);

G_END_DECLS

#endif
