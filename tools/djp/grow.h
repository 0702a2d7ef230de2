/*
 * Growing an array the tool fills as it drains events: doubled until it
 * holds `need` elements, from `first` when it has none yet.
 */
#ifndef DJP_TOOL_GROW_H
#define DJP_TOOL_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/* *p holds *cap elements of elem bytes; make it hold at least need.
 * false (and *p as it was) when there is no memory. */
static inline bool djp_grow(void **p, size_t *cap, size_t need, size_t first, size_t elem)
{
	size_t n = *cap ? *cap : first;
	void *v;
	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	if (!(v = realloc(*p, n * elem)))
		return false;
	*p = v;
	*cap = n;
	return true;
}

#endif
