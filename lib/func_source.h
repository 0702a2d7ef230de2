/*
 * SystemTap's source qualifier of a function probe, the "@FILE:LINE" of
 * function("NAME@FILE:LINE") (lib/func_source.c has the essay).
 */
#ifndef DJP_LIB_FUNC_SOURCE_H
#define DJP_LIB_FUNC_SOURCE_H

#include <stdbool.h>

#include "lib/func_params.h"

struct djp_src_filter {
	char file[1024];  /* a file name ("t.c", "src/t.c") or a glob */
	unsigned lo, hi;  /* the lines, lo..hi; both 0: any line */
};

/* Parse "FILE", "FILE:N", "FILE:N-M" or "FILE:*": 0, or -EINVAL. */
int djp_src_filter_parse(const char *spec, struct djp_src_filter *f);

/* Is the function whose source is s one the filter names? */
bool djp_src_filter_match(const struct djp_src_filter *f, const struct djp_func_source *s);

#endif
