/*
 * Tables sorted by address, as both engines search them: user space's
 * SIGTRAP handler (arch/x86/trap.c) and djprobe.ko's die notifier
 * (kmod/ktrap.c) look a trap's address up in a table published whole, and
 * djprobe.ko keeps a module's sites in address order (kmod/ksites.c).  An
 * entry is any struct whose first member is its address (a uintptr_t, the
 * kernel's unsigned long); each table says so where it is declared.  Pure
 * and lock-free, so a trap handler may search; compiled in both (djprobe.ko
 * through kmod/compat/).
 */
#ifndef DJP_LIB_ADDR_SORTED_H
#define DJP_LIB_ADDR_SORTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uintptr_t djp_addr_of(const void *base, size_t size, size_t i)
{
	return *(const uintptr_t *)((const char *)base + i * size);
}

/* A comparator for qsort() and the kernel's sort(): by address. */
static inline int djp_addr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return (x > y) - (x < y);
}

/* Are the n entries of `size` bytes at base in address order already?
 * (A batch's sites usually come so: one module's, in turn.) */
static inline bool djp_addr_sorted(const void *base, size_t n, size_t size)
{
	for (size_t i = 1; i < n; i++)
		if (djp_addr_of(base, size, i - 1) > djp_addr_of(base, size, i))
			return false;
	return true;
}

/* The entry at addr among the n sorted ones at base, or NULL. */
static inline const void *djp_addr_find(const void *base, size_t n, size_t size, uintptr_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uintptr_t a = djp_addr_of(base, size, mid);

		if (addr < a)
			hi = mid;
		else if (addr > a)
			lo = mid + 1;
		else
			return (const char *)base + mid * size;
	}
	return NULL;
}

#endif
