/*
 * The functions of a function point, read by the tool from the object's
 * file: for -l and -L, which list them as stap does (with the file and
 * line each is declared at), and for a point with a source qualifier,
 * function("GLOB@FILE:LINE"), whose events are bound by the names of the
 * functions it resolved to, as a statement point's are by its lines.  The
 * engine resolves the same qualifier again in the target (kernel/points.c)
 * with the same rule (lib/func_source.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func_points.h"
#include "lang/lang.h"
#include "lib/func_source.h"

struct walk {
	func_point_fn fn;
	void *ctx;
	struct djp_params_file *pf;
	bool has_src;
	struct djp_src_filter src;
};

static int visit(void *ctx, const struct djp_func *f)
{
	struct walk *w = ctx;
	struct djp_func_source fs;
	char err[256];
	bool known = w->pf && !djp_params_source(w->pf, f->addr, w->has_src && w->src.lo, &fs, err, sizeof(err));

	if (w->has_src && !(known && djp_src_filter_match(&w->src, &fs)))
		return 0;
	return w->fn(w->ctx, f, known ? &fs : NULL, w->pf);
}

int func_points_each(const char *path, const char *spec, func_point_fn fn, void *ctx, char *err, size_t errsz)
{
	struct walk w = { .fn = fn, .ctx = ctx };
	struct djp_func_table *t = NULL;
	const char *at = strchr(spec, '@');
	char glob[600], perr[256];
	int n;

	snprintf(glob, sizeof(glob), "%.*s", (int)(at ? (size_t)(at - spec) : strlen(spec)), spec);
	if (at && djp_src_filter_parse(at + 1, &w.src)) {
		snprintf(err, errsz, "%s: not FILE, FILE:LINE, FILE:N-M or FILE:*", at + 1);
		return -EINVAL;
	}
	w.has_src = at != NULL;
	if ((n = djp_funcs_read(path, &t, err, errsz)))
		return n;
	if (djp_params_open(path, &w.pf, perr, sizeof(perr)))
		w.pf = NULL; /* no DWARF: the functions alone, none with a source */
	n = djp_funcs_match(t, glob, visit, &w);
	djp_funcs_free(t);
	if (w.pf)
		djp_params_close(w.pf);
	return n;
}

char *func_point_object(const struct probe_point *pp, int32_t pid)
{
	char exe[64];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	return realpath(pp->path ? pp->path : exe, NULL);
}

void func_point_spec(const struct probe_point *pp, char *buf, size_t sz)
{
	snprintf(buf, sz, "%.*s", (int)(strlen(pp->glob + 5) - (pp->ret ? 7 : 0)), pp->glob + 5);
}

char *func_point_line_glob(const struct probe_point *pp, unsigned i)
{
	const char *at = pp->connect ? strrchr(pp->connect, '@') : NULL;
	size_t n = strlen(pp->names[i]) + (at ? strlen(at) : 0) + 8;
	char *g = malloc(n);
	if (!g)
		abort();
	snprintf(g, n, "func:%s%s", pp->names[i], at ? at : "");
	return g;
}
