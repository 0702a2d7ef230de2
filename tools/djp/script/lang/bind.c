/*
 * Probe point resolution: which markers each probe is attached to.
 *
 * A `process.mark("GLOB")` point matches, by fnmatch(3), the markers the
 * source offers for the target, of any provider, and
 * `process.provider("P").mark("GLOB")` (the pattern "P:GLOB") the SDT
 * probes of provider P (lib/marker_match.h); `process("PATH").mark("GLOB")` only those of
 * the object at PATH (same path, same file after realpath, or, for a bare
 * name, the same basename).  Each (probe, marker) pair becomes a binding, and
 * the per-marker list of bindings is what the interpreter walks on a hit, so
 * dispatch is one array index.  A point that matches nothing is an error, as
 * in stap, unless it ends with '?'.  After type checking, each binding gets
 * the argument index of every context variable its probe reads ($len is the
 * first argument of one marker and the third of another).
 *
 * `kernel.mark("GLOB")` matches the markers of every loaded kernel module
 * (the kernel source's, klive.c), `module("MODGLOB").mark("GLOB")` those of
 * the modules MODGLOB names; a kernel point never matches a process's
 * marker nor the reverse.
 */
#include <fnmatch.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/djp/script/func_points.h"
#include "lang.h"
#include "lib/escape.h"
#include "lib/marker_match.h"
#include "tools/djp/script/run/run.h" /* str_hash: the arrays' hash of $$name */
#include "tools/djp/script/usym.h"

bool same_object(const char *path, const char *object)
{
	char a[PATH_MAX], b[PATH_MAX];
	const char *base;

	if (!strcmp(path, object))
		return true;
	if (!strchr(path, '/')) {
		base = strrchr(object, '/');
		return !strcmp(base ? base + 1 : object, path);
	}
	return realpath(path, a) && realpath(object, b) && !strcmp(a, b);
}

/*
 * A function point whose function begins with a marker or an SDT probe's
 * nop: the engine gives the point that site (one site an address), whose
 * events are the marker's.  So the point matches a marker whose site is
 * the entry of a function its glob names, by the symbols of the process
 * (usym.c).
 */
static bool marker_at_entry(const struct probe_point *pp, const struct djp_ev_desc *d)
{
	struct usym u;
	if (!d->site_runtime || !d->site || !usym_lookup_any(d->site, &u) || !u.name || u.off)
		return false;
	for (unsigned i = 0; i < pp->nnames; i++) /* a source-qualified point's functions */
		if (!strcmp(pp->names[i], u.name))
			return true;
	return !pp->names && !fnmatch(pp->glob + 5, u.name, 0);
}

bool pp_matches(const struct probe_point *pp, const struct djp_ev_desc *d)
{
	if (pp->kind == PP_LIFE || d->life) /* which process: the binding's path and pid */
		return pp->kind == PP_LIFE && pp->life == d->life;
	if (pp->kind != PP_MARK || pp->kernel != d->kernel)
		return false;
	if (pp->thread) /* the library's marker, wherever the library is */
		return !d->kernel && !d->provider_len && !strcmp(d->name, pp->glob);
	if (pp->kernel && pp->point) /* a function point: its site, by name (kmod/kfunc.c) */
		return d->object && !strcmp(d->object, "kernel") && !strcmp(d->name, pp->connect);
	if (pp->kernel) /* a marker of a module: no provider, no point */
		return (!pp->module || !fnmatch(pp->module, d->object ? d->object : "", 0)) &&
		       djp_marker_match_n(pp->glob, NULL, 0, d->name);
	if (pp->path && !same_object(pp->path, d->object ? d->object : ""))
		return false;
	if (pp->point && !pp->ret && !strncmp(pp->glob, "func:", 5) &&
	    !(d->provider_len == 4 && !memcmp(d->provider, "func", 4)))
		return marker_at_entry(pp, d);
	if (pp->point) { /* an entry point is not its return, nor the reverse */
		size_t n = strlen(d->name);
		if ((n > 7 && !strcmp(d->name + n - 7, "%return")) != pp->ret)
			return false;
	}
	/* a statement point, and a function point with a source qualifier,
	 * by the names of the sites they resolved to (interp.c) */
	if (pp->point && (!strncmp(pp->glob, "line:", 5) || pp->names)) {
		for (unsigned i = 0; i < pp->nnames; i++)
			if (d->provider_len == 4 && !memcmp(d->provider, "func", 4) && !strcmp(d->name, pp->names[i]))
				return true;
		return false;
	}
	return djp_marker_match_n(pp->glob, d->provider, d->provider_len, d->name);
}

/* len bytes of s (or all of it, len < 0) C-escaped, in the script's pool:
 * names and paths come from the target's files, and pp() reaches the
 * terminal (lib/escape.h). */
static const char *pp_escaped(struct script *sc, const char *s, int len)
{
	size_t n = len < 0 ? strlen(s) : (size_t)len;
	char *raw = pool_alloc(sc, n + 1), *out = pool_alloc(sc, 4 * n + 1);
	memcpy(raw, s, n);
	raw[n] = 0;
	return djp_escape_c(out, 4 * n + 1, raw, false);
}

static void add_binding(struct script *sc, struct probe *p, const struct probe_point *pt, const struct djp_ev_desc *d)
{
	struct binding *b;

	for (int i = 0; i < p->nbinds; i++)
		if (p->binds[i]->desc == d)
			return;
	b = pool_alloc(sc, sizeof(*b));
	b->probe = p;
	b->desc = d;
	b->pn = pt->text;
	b->pid = pt->pid;
	b->path = pt->kind == PP_LIFE || pt->thread ? pt->path : NULL;
	b->name = pp_escaped(sc, d->name, -1);
	b->format = pp_escaped(sc, d->format ? d->format : "", -1);
	b->name_hash = str_hash(b->name);
	{
		const char *ret = strstr(d->name, "%return");
		const char *obj = pp_escaped(sc, d->object ? d->object : "?", -1);
		const char *name = pp_escaped(sc, d->name, ret ? (int)(ret - d->name) : -1);
		const char *prov = pp_escaped(sc, d->provider_len ? d->provider : "", (int)d->provider_len);
		size_t n = strlen(name) + strlen(obj) + strlen(prov) + 48;
		char *pp = pool_alloc(sc, n);
		if (d->life || pt->thread || (d->kernel && pt->point)) /* a life point's, a kernel function point's: as written */
			snprintf(pp, n, "%s", pt->text);
		else if (d->kernel && !pt->module) /* stap's pp() of a kernel marker */
			snprintf(pp, n, "kernel.mark(\"%s\")", name);
		else if (d->kernel)
			snprintf(pp, n, "module(\"%s\").mark(\"%s\")", obj, name);
		else if (d->provider_len == 4 && !memcmp(d->provider, "func", 4) && ret) /* a return probe's */
			snprintf(pp, n, "process(\"%s\").function(\"%s\").return", obj, name);
		else if (d->provider_len == 4 && !memcmp(d->provider, "func", 4)) /* an instruction probe's */
			snprintf(pp, n, "process(\"%s\").%s(\"%s\")", obj, strchr(d->name, '+') ? "statement" : "function",
				 name);
		else if (d->provider_len) /* stap's pp() of an SDT probe */
			snprintf(pp, n, "process(\"%s\").provider(\"%s\").mark(\"%s\")", obj, prov, name);
		else
			snprintf(pp, n, "process(\"%s\").mark(\"%s\")", obj, name);
		b->pp = pp;
	}
	if ((p->nbinds & (p->nbinds - 1)) == 0) {
		struct binding **n = pool_alloc(sc, sizeof(*n) * (size_t)(p->nbinds ? p->nbinds * 2 : 1));
		if (p->nbinds)
			memcpy(n, p->binds, sizeof(*n) * (size_t)p->nbinds);
		p->binds = n;
	}
	p->binds[p->nbinds++] = b;
}

/* The priority of p's begin (or end) point. */
static int64_t probe_priority(const struct probe *p, int kind)
{
	for (const struct probe_point *pp = p->points; pp; pp = pp->next)
		if (pp->kind == kind)
			return pp->priority;
	return 0;
}

/* begin(N), end(N), error(N): p into its list, by priority, in the order
 * written within one */
static void add_ordered(struct script *sc, struct probe *p, const struct probe_point *pp)
{
	struct probe ***v = pp->kind == PP_BEGIN ? &sc->begins : pp->kind == PP_END ? &sc->ends : &sc->errs;
	int *cnt = pp->kind == PP_BEGIN ? &sc->nbegins : pp->kind == PP_END ? &sc->nends : &sc->nerrs;
	struct probe **nv = realloc(*v, sizeof(**v) * (size_t)(*cnt + 1));
	int at = *cnt;

	if (!nv)
		abort();
	*v = nv;
	while (at > 0 && probe_priority(nv[at - 1], pp->kind) > pp->priority) {
		nv[at] = nv[at - 1];
		at--;
	}
	nv[at] = p;
	(*cnt)++;
}

static void add_timer(struct script *sc, struct probe *p, const struct probe_point *pp)
{
	struct timer *nt = realloc(sc->timers, sizeof(*nt) * (size_t)(sc->ntimers + 1));
	if (!nt)
		abort();
	sc->timers = nt;
	nt[sc->ntimers++] = (struct timer){ .probe = p, .period_ns = pp->period_ns, .random_ns = pp->random_ns };
}

/* A mark point: a binding per marker of src it matches.  True when it
 * matched one and is sufficient (`!`): the probe's later points are
 * dropped. */
static bool bind_mark_point(struct script *sc, struct probe *p, struct probe_point *pp, const struct djp_source *src)
{
	int n = 0;
	for (unsigned i = 0; src && i < src->ndescs; i++) {
		if (pp_matches(pp, &src->descs[i])) {
			add_binding(sc, p, pp, &src->descs[i]);
			n++;
		}
	}
	if (!n && !pp->optional && !pp->point && src && src->wrapper && !pp->path) {
		/* a wrapper's: the program it execs dials in later and binds
		 * then (bind_late), as djp trace waits for it; say so, naming
		 * it */
		char prog[4096];
		p->waits_exec = true;
		fprintf(stderr,
			"djp: %s matches nothing in %s, the program the command ran; waiting for a program it "
			"execs\n",
			pp->text, djp_escape_c(prog, sizeof(prog), src->wrapper, false));
	} else if (!n && !pp->optional && !pp->point) {
		diag(sc, pp->line, pp->col, "semantic error", "while resolving probe point %s: no match", pp->text);
	}
	if (!n || !pp->sufficient)
		return false;
	pp->next = NULL; /* the later points are not used at all */
	return true;
}

/* process.begin, process.end: the source's descriptor of that life;
 * only a process source (-c, -x) has them. */
static void bind_life_point(struct script *sc, struct probe *p, struct probe_point *pp, const struct djp_source *src)
{
	for (unsigned i = 0; src && i < src->ndescs; i++) {
		if (pp_matches(pp, &src->descs[i])) {
			add_binding(sc, p, pp, &src->descs[i]);
			return;
		}
	}
	if (!pp->optional)
		diag(sc, pp->line, pp->col, "semantic error",
		     "while resolving probe point %s: no process to follow (give -c CMD or -x PID)", pp->text);
}

/* per marker id, the bindings of every probe to it */
static void index_bindings(struct script *sc, const struct djp_source *src)
{
	sc->by_desc = calloc(src->ndescs + 1, sizeof(*sc->by_desc));
	sc->nby_desc = calloc(src->ndescs + 1, sizeof(*sc->nby_desc));
	sc->nby = src->ndescs;
	if (!sc->by_desc || !sc->nby_desc)
		abort();
	for (struct probe *p = sc->probes; p; p = p->next) {
		for (int i = 0; i < p->nbinds; i++) {
			uint32_t id = p->binds[i]->desc->id;
			if (id >= src->ndescs)
				continue;
			sc->by_desc[id] = realloc(sc->by_desc[id], sizeof(struct binding *) * (size_t)(sc->nby_desc[id] + 1));
			if (!sc->by_desc[id])
				abort();
			sc->by_desc[id][sc->nby_desc[id]++] = p->binds[i];
		}
	}
}

int resolve_probes(struct script *sc, const struct djp_source *src)
{
	int errors = sc->nerrors;

	sc->src = src;
	for (struct probe *p = sc->probes; p; p = p->next) {
		bool enough = false; /* a `!` point before resolved */
		for (struct probe_point *pp = p->points; pp && !enough; pp = pp->next) {
			switch (pp->kind) {
			case PP_BEGIN:
			case PP_END:
			case PP_ERROR:
				add_ordered(sc, p, pp);
				p->has_nonmark = true;
				break;
			case PP_NEVER:
				p->has_nonmark = true;
				break;
			case PP_TIMER:
				add_timer(sc, p, pp);
				p->has_nonmark = true;
				break;
			case PP_MARK:
				enough = bind_mark_point(sc, p, pp, src);
				break;
			case PP_LIFE:
				bind_life_point(sc, p, pp, src);
				break;
			}
		}
	}
	if (src)
		index_bindings(sc, src);
	return sc->nerrors - errors;
}

/* Does a marker met after the check fit probe p: every context variable
 * the probe reads exists in it, with the type the check gave it?  When it
 * does not, *why names the variable. */
static bool fits(const struct probe *p, const struct djp_ev_desc *d, const char **why)
{
	for (int r = 0; r < p->nrefs; r++) {
		int f = ctx_field(d, p->refs[r]);
		*why = p->refs[r];
		if (f < 0 || ctx_type(d, f) != p->ref_ty[r])
			return false;
	}
	return true;
}

void bind_late(struct script *sc, const struct djp_ev_desc *d)
{
	uint32_t id = d->id;

	if (id >= sc->nby) {
		unsigned n = sc->nby ? sc->nby : 16;
		while (n <= id)
			n *= 2;
		sc->by_desc = realloc(sc->by_desc, sizeof(*sc->by_desc) * (n + 1));
		sc->nby_desc = realloc(sc->nby_desc, sizeof(*sc->nby_desc) * (n + 1));
		if (!sc->by_desc || !sc->nby_desc)
			abort();
		for (unsigned i = sc->nby; i <= n; i++) {
			sc->by_desc[i] = NULL;
			sc->nby_desc[i] = -1; /* not bound yet */
		}
		sc->nby = n;
	}
	if (sc->nby_desc[id] >= 0)
		return;
	sc->nby_desc[id] = 0;
	for (struct probe *p = sc->probes; p; p = p->next) {
		const char *why;
		struct binding *b;
		struct probe_point *pp;
		for (pp = p->points; pp && !pp_matches(pp, d); pp = pp->next)
			;
		if (!pp)
			continue;
		if (!fits(p, d, &why)) {
			if (!script_no_warnings)
				fprintf(stderr,
				"WARNING: marker \"%s\" (%s), loaded after the script started, has no context variable "
				"'$%s' of the type probe %s uses: not bound\n",
				d->name, d->object ? d->object : "?", why, p->points->text);
			continue;
		}
		add_binding(sc, p, pp, d);
		b = p->binds[p->nbinds - 1];
		for (int r = 0; r < p->nrefs; r++)
			b->field[r] = (int8_t)ctx_field(d, p->refs[r]);
		sc->by_desc[id] = realloc(sc->by_desc[id], sizeof(struct binding *) * (size_t)(sc->nby_desc[id] + 1));
		if (!sc->by_desc[id])
			abort();
		sc->by_desc[id][sc->nby_desc[id]++] = b;
	}
}

/* The type of argument f of marker d: a %s is a string, the rest numbers. */
uint8_t ctx_type(const struct djp_ev_desc *d, int f)
{
	return (unsigned)f < d->fmt.nfields && d->fmt.field[f].conv == 's' ? TY_STR : TY_LONG;
}

/* Argument index of context variable `name` ("arg3" or a field name). */
int ctx_field(const struct djp_ev_desc *d, const char *name)
{
	int i = djp_format_field_index(&d->fmt, name, strlen(name));
	if (i >= 0 && (unsigned)i < d->nargs)
		return i;
	if (!strncmp(name, "arg", 3) && name[3] >= '1' && name[3] <= '9') {
		char *end;
		long n = strtol(name + 3, &end, 10);
		if (!*end && n >= 1 && (unsigned long)n <= d->nargs)
			return (int)n - 1;
	}
	return -1;
}

void bind_fields(struct script *sc)
{
	for (struct probe *p = sc->probes; p; p = p->next)
		for (int i = 0; i < p->nbinds; i++)
			for (int r = 0; r < p->nrefs; r++)
				p->binds[i]->field[r] = (int8_t)ctx_field(p->binds[i]->desc, p->refs[r]);
}

void script_release(struct script *sc)
{
	for (int i = 0; i < sc->nregexes; i++)
		regfree(sc->regexes[i]);
	free(sc->regexes);
	sc->regexes = NULL;
	sc->nregexes = 0;
	free(sc->toks);
	sc->toks = NULL;
	free(sc->begins);
	free(sc->ends);
	free(sc->errs);
	free(sc->timers);
	if (sc->by_desc)
		for (unsigned i = 0; i < sc->nby; i++)
			free(sc->by_desc[i]);
	free(sc->by_desc);
	free(sc->nby_desc);
	pool_free_all(sc);
	sc->begins = sc->ends = sc->errs = NULL;
	sc->timers = NULL;
	sc->by_desc = NULL;
	sc->nby_desc = NULL;
}

/* The end's line of a point that matched in no program of the run: the
 * one the command ran, and the last one it exec'd when it did (as djp
 * trace says it, trace.c). */
static void never_line(const char *point, const struct djp_source *src)
{
	char prog[4096], text[1024], last[4096];
	const char *lp = src && src->ops->last_program ? src->ops->last_program(src) : NULL;

	fprintf(stderr, "djp: %s matched nothing in %s, the program the command ran, nor in %s%s%s\n",
		djp_escape_c(text, sizeof(text), point, false),
		djp_escape_c(prog, sizeof(prog), src && src->wrapper ? src->wrapper : "?", false),
		lp ? "the programs it exec'd (the last: " : "a program it exec'd",
		lp ? djp_escape_c(last, sizeof(last), lp, false) : "", lp ? ")" : "");
}

/* A function or statement point: did its sites come, in the program the
 * command ran or in one a -c wrapper exec'd (live.c keeps a point the
 * wrapper does not have for those)? */
static bool point_matched(const struct probe_point *pp, const struct djp_source *src)
{
	bool any = false;

	if (pp->kind != PP_MARK || !pp->point || pp->optional || !src || !src->ops->glob_matched)
		return true;
	if (!pp->names || strncmp(pp->glob, "line:", 5))
		return src->ops->glob_matched(src, pp->connect ? pp->connect : pp->glob);
	for (unsigned i = 0; i < pp->nnames && !any; i++) { /* a statement point: its sites by name */
		char *g = func_point_line_glob(pp, i);
		any = src->ops->glob_matched(src, g);
		free(g);
	}
	return any;
}

bool report_never_bound(const struct script *sc, const struct djp_source *src)
{
	bool any = false;

	for (const struct probe *p = sc->probes; p; p = p->next) {
		if (p->waits_exec && !p->nbinds) {
			never_line(p->points->text, src);
			any = true;
		}
		for (const struct probe_point *pp = p->points; pp; pp = pp->next)
			if (!point_matched(pp, src)) {
				never_line(pp->text, src);
				any = true;
			}
	}
	return any;
}
