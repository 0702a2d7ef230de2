/*
 * Context variables of functions that have no debug information: said at
 * compile time, with what to use instead.
 *
 * A function point's `$fd` or `$arg2` is a parameter the object's DWARF
 * places at the probed address (kernel/points.c gives the site its
 * arguments from it when it is connected).  A function without DWARF (a
 * stripped bash or python, code built without -g) gets a site with no
 * arguments at all, so a probe that reads one would never be bound to it:
 * before this, a warning at run time for each site and a probe that
 * never fired.  SystemTap refuses such a script at elaboration ("not
 * accessible at this address"); djp does too, before anything is armed,
 * and names what does work there: the arguments by the ABI, int_arg(n)
 * and pointer_arg(n) (run/builtins/dwarfless.c).
 *
 * The rule: a function point (not a statement point, whose line already
 * needs DWARF) of a probe that reads context variables, whose glob names
 * functions of its object, none of which has DWARF, is an error at the
 * first such variable, one for each point.  `$return` at a return is not:
 * a return site always has the return value.  Nor is one that only
 * @defined() asks about, nor one in a branch it ruled out: stap's idiom
 * for code with and without DWARF, `@defined($fd) ? $fd : int_arg(1)`.  A point whose object cannot
 * be read now (a -c wrapper's program, a library not found) is left to
 * the connect, as before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "tools/djp/script/func_points.h"
#include "tools/djp/source/source.h"

struct dwarf_count {
	unsigned with, without;
	char first[128];
};

static int count_fn(void *ctx, const struct djp_func *f, const struct djp_func_source *src,
		    struct djp_params_file *pf)
{
	struct dwarf_count *c = ctx;
	(void)pf;
	if (src)
		c->with++;
	else if (!c->without++)
		snprintf(c->first, sizeof(c->first), "%s", f->name);
	return 0;
}

/* The first context variable node of n that a return point may not have
 * (any but $return when ret). */
static const struct node *first_ref(const struct node *n, bool ret)
{
	const struct node *r;
	/* a folded @defined(...) keeps what it asked of below it (check.c):
	 * not a read; the branch it ruled out is gone */
	if (!n || n->kind == N_NUM)
		return NULL;
	if (n->kind == N_CTX && !(ret && !strcmp(n->str, "return")))
		return n;
	if ((r = first_ref(n->a, ret)) || (r = first_ref(n->b, ret)) || (r = first_ref(n->c, ret)) ||
	    (r = first_ref(n->d, ret)) || (r = first_ref(n->fe_limit, ret)) || (r = first_ref(n->fe_slice, ret)))
		return r;
	for (int i = 0; i < n->nargs; i++)
		if ((r = first_ref(n->args[i], ret)))
			return r;
	return NULL;
}

/* "int_arg(2) or pointer_arg(2)" for $arg2; for a name, its position is
 * the user's to know.  At a return the argument registers hold something
 * else: they are read at the entry. */
static void instead(const char *name, bool ret, char *buf, size_t sz)
{
	char *end;
	long k = !strncmp(name, "arg", 3) ? strtol(name + 3, &end, 10) : 0;
	int n;
	if (k >= 1 && !*end)
		n = snprintf(buf, sz, "int_arg(%ld) or pointer_arg(%ld)", k, k);
	else
		n = snprintf(buf, sz, "int_arg(N) or pointer_arg(N), N its position among the arguments");
	if (ret && n > 0 && (size_t)n < sz)
		snprintf(buf + n, sz - (size_t)n, ", in a probe of the function's entry");
}

int check_dwarfless_refs(struct script *sc, const struct djp_source *src)
{
	int errors = 0;

	for (struct probe *p = sc->probes; p; p = p->next) {
		for (struct probe_point *pp = p->points; pp; pp = pp->next) {
			struct dwarf_count c = { 0 };
			const struct node *ref;
			char spec[600], err[512], use[160], *path;
			if (pp->kind != PP_MARK || !pp->point || pp->kernel || strncmp(pp->glob, "func:", 5))
				continue;
			if (!(ref = first_ref(p->cond, pp->ret)) && !(ref = first_ref(p->body, pp->ret)))
				break; /* the probe reads none: no point of it matters */
			if (!(path = func_point_object(pp, src ? src->target_pid : 0)))
				continue;
			func_point_spec(pp, spec, sizeof(spec));
			if (func_points_each(path, spec, count_fn, &c, err, sizeof(err)) > 0 && !c.with && c.without) {
				instead(ref->str, pp->ret, use, sizeof(use));
				diag(sc, ref->line, ref->col, "semantic error",
				     "'$%s' in probe point %s: no debug information for '%s' in %s: use %s", ref->str,
				     pp->text, c.first, path, use);
				errors++;
			}
			free(path);
		}
	}
	return errors;
}
