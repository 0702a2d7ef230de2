/*
 * The source qualifier of a function probe: function("NAME@FILE"),
 * function("NAME@FILE:LINE"), "NAME@FILE:N-M" and "NAME@FILE:*", as
 * SystemTap reads them, to tell apart functions of one name (the static
 * helpers of different files) or to pick the function around a line.
 *
 * A function is named by FILE when the file it is declared in, as its
 * DWARF says (lib/func_params.c, djp_params_source), ends with FILE
 * component by component, as line:FILE:LINE names a file
 * (djp_path_names); a FILE with glob characters is matched by fnmatch
 * against the whole path and against its last component.  A LINE (or
 * N-M) names the function when it is the declaration's line, as stap -l
 * prints it, or falls among the lines the function's code spans, as stap
 * resolves "*@file.c:123" to the functions around line 123.  "*" or no
 * LINE: any line.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "lib/func_source.h"
#include "lib/func_symbols.h"

static int line_no(const char *s, const char **end, unsigned *v)
{
	char *e;
	unsigned long n;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	n = strtoul(s, &e, 10);
	if (!n || n > 10000000)
		return -EINVAL;
	*v = (unsigned)n;
	*end = e;
	return 0;
}

int djp_src_filter_parse(const char *spec, struct djp_src_filter *f)
{
	const char *colon = strrchr(spec, ':'), *e;
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);

	memset(f, 0, sizeof(*f));
	if (!n || n >= sizeof(f->file))
		return -EINVAL;
	memcpy(f->file, spec, n);
	if (!colon || !strcmp(colon + 1, "*"))
		return 0;
	if (line_no(colon + 1, &e, &f->lo))
		return -EINVAL;
	f->hi = f->lo;
	if (*e == '-' && (line_no(e + 1, &e, &f->hi) || f->hi < f->lo))
		return -EINVAL;
	return *e ? -EINVAL : 0;
}

static bool file_named(const char *want, const char *path)
{
	const char *base = strrchr(path, '/');
	if (!strpbrk(want, "*?["))
		return djp_path_names(path, want);
	return !fnmatch(want, path, 0) || !fnmatch(want, base ? base + 1 : path, 0);
}

bool djp_src_filter_match(const struct djp_src_filter *f, const struct djp_func_source *s)
{
	if (!file_named(f->file, s->file))
		return false;
	if (!f->lo)
		return true;
	if (s->decl_line >= f->lo && s->decl_line <= f->hi)
		return true;
	return s->lo_line && f->lo <= s->hi_line && f->hi >= s->lo_line;
}
