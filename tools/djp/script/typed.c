/*
 * A script's typed accesses: `$req->hdr->len`, `$p->arr[2]`, `&$p->x`,
 * `$return->f`, `@cast($p, "struct T")->f`, and pretty-printed, `$p$`,
 * `$p->in$$`, `$$parms$`, read in the target when the probe fires.
 *
 * How it works.  Before the check (so that @defined can ask), each access
 * of a probe body is compiled against the DWARF of every function the
 * probe's function points name, and of every address of its statement
 * points' lines (lib/typed_compile.c): one load program per site, since a
 * glob's functions may place the variable, or lay out its type,
 * differently; a pretty-printed access is one program per value it
 * prints, laid out alike at every site (else it is an error).  An access that does not compile in one of them
 * is undefined for the probe; the check says why where the access is
 * written (line:column), before anything is armed, unless @defined rules
 * it out.
 *
 * The check gives each access it keeps an index, the same in every
 * function: before arm, each function site gets the list of programs
 * (the accesses of the probes that do not name it get a program that
 * loads nothing), sent to the target (LOADS) before its patterns.  Each
 * event of the site then carries the results in that order (DJP_EVF_LOADS),
 * and the value of an access is the word at its index (a pretty-printed
 * one's, the words from its index on).  At most DJP_LOAD_MAX_PROGS values
 * a script.
 *
 * A load that faults in the target ends that access with the address;
 * reading its value is then stap's run-time error, `user memory copy fault
 * at 0xADDR near operator '->'`, and the program runs on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func_points.h"
#include "lib/func_symbols.h"
#include "lib/ring.h"
#include "run/builtins/dwarfless.h"
#include "run/interp.h"
#include "typed.h"

/* One function's programs of an access (one, or a pretty-printed one's
 * values). */
struct typed_site {
	char *provider; /* "func" for a function's, a marker's provider ("" for none) */
	char *name; /* the site's name: "f", "f%return", a marker's */
	uint64_t site; /* its link-time address; 0 for a marker's (lib/load_prog.h) */
	struct djp_load_prog *progs;
	unsigned n;
};

struct typed_sites {
	struct typed_site *v;
	unsigned n;
};

struct script_typed {
	struct typed_ref *ref[DJP_LOAD_MAX_PROGS]; /* by index (a pretty-printed one at each of its values) */
	unsigned n;
	/* what was sent (typed_load_sites) */
	struct djp_load_site *sites;
	unsigned nsites;
	/* each ref's programs, by ref (resolve) */
	struct {
		struct typed_ref *tr;
		struct typed_sites s;
	} *progs;
	unsigned nprogs;
};

static struct script_typed *typed_of(struct script *sc)
{
	if (!sc->typed && !(sc->typed = calloc(1, sizeof(*sc->typed))))
		abort();
	return sc->typed;
}

static struct typed_sites *sites_of(struct script *sc, struct typed_ref *tr)
{
	struct script_typed *t = typed_of(sc);
	for (unsigned i = 0; i < t->nprogs; i++)
		if (t->progs[i].tr == tr)
			return &t->progs[i].s;
	if (!(t->progs = realloc(t->progs, sizeof(*t->progs) * (t->nprogs + 1))))
		abort();
	t->progs[t->nprogs].tr = tr;
	t->progs[t->nprogs].s = (struct typed_sites){ 0 };
	return &t->progs[t->nprogs++].s;
}

static void set_err(struct typed_ref *tr, const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
	if (tr->err)
		return; /* the first said */
	if (!(tr->err = malloc(n)))
		abort();
	snprintf(tr->err, n, fmt, a, b);
	tr->ok = false;
}

/* Two functions print an access alike: the same texts and kinds. */
static bool same_layout(const struct djp_pretty *a, const struct djp_pretty *b)
{
	if (a->n != b->n || strcmp(a->tail, b->tail))
		return false;
	for (unsigned i = 0; i < a->n; i++)
		if (a->v[i].kind != b->v[i].kind || strcmp(a->v[i].text, b->v[i].text))
			return false;
	return true;
}

/* The layout pr has among tr's (0 the first, tmpl); pr is tr's or freed. */
static unsigned layout_of(struct typed_ref *tr, struct djp_pretty *pr)
{
	if (!tr->has_tmpl) {
		tr->tmpl = *pr;
		tr->has_tmpl = true;
		return 0;
	}
	if (same_layout(&tr->tmpl, pr)) {
		djp_pretty_free(pr);
		return 0;
	}
	for (unsigned k = 0; k < tr->nlayouts; k++)
		if (same_layout(&tr->layouts[k], pr)) {
			djp_pretty_free(pr);
			return k + 1;
		}
	if (!(tr->layouts = realloc(tr->layouts, sizeof(*tr->layouts) * (tr->nlayouts + 1))))
		abort();
	tr->layouts[tr->nlayouts++] = *pr;
	return tr->nlayouts;
}

/* Site `name` prints tr as layout: kept, or false when another site of
 * that name prints it otherwise (static functions of one name whose
 * types differ: an event says its site's name only). */
static bool site_layout(struct typed_ref *tr, const char *name, unsigned layout)
{
	for (unsigned i = 0; i < tr->nsite_layouts; i++)
		if (!strcmp(tr->site_layouts[i].name, name))
			return tr->site_layouts[i].layout == layout;
	if (!(tr->site_layouts = realloc(tr->site_layouts, sizeof(*tr->site_layouts) * (tr->nsite_layouts + 1))) ||
	    !(tr->site_layouts[tr->nsite_layouts].name = strdup(name)))
		abort();
	tr->site_layouts[tr->nsite_layouts++].layout = layout;
	return true;
}

/* Append b's pieces to a, b's first text after `prefix`; b is emptied. */
static int pretty_join(struct djp_pretty *a, struct djp_pretty *b, const char *prefix, unsigned group)
{
	size_t n;
	char *t;

	if (!a->tail && !(a->tail = strdup("")))
		return -ENOMEM;
	/* the text before b's first value: a's tail, the prefix, b's own */
	n = strlen(a->tail) + strlen(prefix) + strlen(b->n ? b->v[0].text : b->tail) + 1;
	if (!(t = malloc(n)))
		return -ENOMEM;
	snprintf(t, n, "%s%s%s", a->tail, prefix, b->n ? b->v[0].text : b->tail);
	for (unsigned i = 0; i < b->n; i++)
		b->v[i].group = (uint16_t)group;
	if (b->n) {
		/* what ends a's last group, then what is b's own before its
		 * first value but its opening: the rest of a's tail (a value
		 * with nothing to load, "k=?"), the prefix */
		b->v[0].close_len = (uint16_t)a->tail_close;
		b->v[0].prefix_len = (uint16_t)(strlen(a->tail) - a->tail_close + strlen(prefix));
		if (!(a->v = realloc(a->v, sizeof(*a->v) * (a->n + b->n))))
			return -ENOMEM;
		free(b->v[0].text);
		b->v[0].text = t;
		memcpy(a->v + a->n, b->v, sizeof(*b->v) * b->n);
		a->n += b->n;
		free(a->tail);
		a->tail = b->tail;
		a->tail_close = strlen(b->tail);
		free(b->v);
	} else {
		free(a->tail);
		a->tail = t;
		free(b->tail);
	}
	memset(b, 0, sizeof(*b));
	return 0;
}

/* $$parms$, $$vars$ and $$locals$ (at an entry: the parameters, the same,
 * and nothing; at a statement, tr->acc.pc, the locals in scope there as
 * well): "a=... b=..." of each, pretty-printed; "b=?" for one that cannot
 * be read. */
static int all_pretty(struct djp_params_file *pf, uint64_t addr, const struct typed_ref *tr, struct djp_pretty *out,
		      char *err, size_t errsz)
{
	struct djp_param_set ps;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!(out->tail = strdup("")))
		return -ENOMEM;
	if (tr->all == 'l' && !tr->acc.pc)
		return 0;
	/* a function of the object without DWARF of its own (_init, code
	 * from an assembler file) has none to print: "", as $$parms is */
	if ((ret = tr->acc.pc ? djp_params_get_vars(pf, addr, tr->acc.pc, &ps, err, errsz)
			      : djp_params_get(pf, addr, addr, &ps, err, errsz)))
		return ret == -ENODATA || ret == -ENOENT ? 0 : ret;
	for (unsigned i = 0, k = 0; i < ps.n && !ret; i++) {
		struct djp_typed_access a = { .var = ps.v[i].name, .pc = tr->acc.pc };
		struct djp_pretty one;
		char prefix[300];
		bool seen = false;
		for (unsigned j = 0; j < i; j++) /* the first of a name, as the agent's */
			seen |= !strcmp(ps.v[j].name, ps.v[i].name);
		if (seen || (tr->all == 'p' && ps.v[i].is_local) || (tr->all == 'l' && !ps.v[i].is_local))
			continue;
		snprintf(prefix, sizeof(prefix), "%s%s=", k++ ? " " : "", ps.v[i].name);
		/* a structure passed by value has no location of its own but
		 * where its bytes are (ps.v[i].agg) */
		if ((ps.v[i].loc.kind == DJP_LOC_NONE && ps.v[i].agg.how == ARCH_AGG_NONE) ||
		    djp_typed_pretty(pf, addr, &a, tr->pretty, &one, err, errsz)) {
			memset(&one, 0, sizeof(one));
			if (!(one.tail = strdup("?")))
				ret = -ENOMEM;
		}
		if (!ret)
			ret = pretty_join(out, &one, prefix, k);
	}
	djp_params_free(&ps);
	if (ret)
		djp_pretty_free(out);
	return ret ? snprintf(err, errsz, "out of memory"), ret : 0;
}

struct compile_ctx {
	struct script *sc;
	struct typed_ref *tr;
	const struct probe_point *pp;
	const char *path;
	unsigned nfuncs;
	const char *site; /* a statement's site name ("f+0x12"); NULL: the function's */
	uint64_t site_addr; /* a statement's link-time address (else the function's) */
	const char *provider; /* a marker's sites: their provider; NULL: "func" */
	bool at_entry; /* a return site's programs read at the call's entry */
};

/* Does program p start from a register a C call keeps for its caller
 * (%rbx, %rbp, %r12-%r15)?  A jump's lean view stores those only when
 * the site's own arguments read them, so such a program is read from an
 * int3's view, which holds every register (as register("rbx") is). */
static bool reads_callee_saved(const struct djp_load_prog *p)
{
	const struct djp_argloc *b = &p->base;
	unsigned regs = 0;

	if (b->kind == DJP_LOC_REG || b->kind == DJP_LOC_MEM) {
		if (b->reg >= 0 && b->reg < DJP_REG_COUNT)
			regs |= 1u << b->reg;
		if (b->kind == DJP_LOC_MEM && b->index >= 0 && b->index < DJP_REG_COUNT)
			regs |= 1u << b->index;
	}
	return regs & ARCH_CALLEE_SAVED;
}

static int compile_one(void *ctx, const struct djp_func *f, const struct djp_func_source *fs,
		       struct djp_params_file *pf)
{
	struct compile_ctx *c = ctx;
	struct typed_sites *ts;
	struct djp_typed_result res;
	struct djp_pretty pr;
	struct djp_load_prog *progs;
	unsigned n = 1, layout = 0;
	char err[1024], name[600], where[300];
	(void)fs;

	c->nfuncs++;
	snprintf(where, sizeof(where), "%s %s", c->provider ? "marker" : "function", f->name);
	/* an address (an argument register, a marker's argument) cast to a
	 * type of another object's needs no DWARF of this one */
	if (!pf && !(c->tr->acc.has_base_loc && c->tr->acc.cast_path && !c->tr->pretty)) {
		if (c->tr->acc.has_base_loc && !c->tr->acc.cast_path)
			set_err(c->tr, "%s has no debug information: give @cast the path of an object whose DWARF "
				       "has the type (%s)", c->path, where);
		else
			set_err(c->tr, "%s has no debug information (%s)", c->path, where);
		return 0;
	}
	if (c->tr->pretty) {
		int e = c->tr->all && c->tr->all != 'r'
				? all_pretty(pf, f->addr, c->tr, &pr, err, sizeof(err))
				: djp_typed_pretty(pf, f->addr, &c->tr->acc, c->tr->pretty, &pr, err, sizeof(err));
		if (!e && c->tr->all == 'r') { /* $$return$: "return=..." */
			struct djp_pretty one = pr;
			memset(&pr, 0, sizeof(pr));
			e = pretty_join(&pr, &one, "return=", 0);
			if (e)
				snprintf(err, sizeof(err), "out of memory");
		}
		if (e) {
			set_err(c->tr, c->provider ? "%s, at %s" : "%s, in %s", err, where);
			return 0;
		}
		n = pr.n;
		if (!(progs = malloc(sizeof(*progs) * (n ? n : 1))))
			abort();
		for (unsigned i = 0; i < n; i++)
			progs[i] = pr.v[i].prog;
		layout = layout_of(c->tr, &pr);
	} else {
		if (djp_typed_compile(pf, f->addr, &c->tr->acc, &res, err, sizeof(err))) {
			set_err(c->tr, c->provider ? "%s, at %s" : "%s, in %s", err, where);
			return 0;
		}
		if (!(progs = malloc(sizeof(*progs))))
			abort();
		progs[0] = res.prog;
	}
	if (c->site)
		snprintf(name, sizeof(name), "%s", c->site);
	else
		snprintf(name, sizeof(name), "%s%s", f->name, c->pp->ret ? "%return" : "");
	if (c->tr->pretty && !site_layout(c->tr, name, layout)) {
		free(progs);
		set_err(c->tr, "its type differs between two functions named %s%s", name, "");
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		progs[i].at_entry = c->at_entry;
		c->sc->regs_callee |= reads_callee_saved(&progs[i]);
	}
	ts = sites_of(c->sc, c->tr);
	if (!(ts->v = realloc(ts->v, sizeof(*ts->v) * (ts->n + 1))) || !(ts->v[ts->n].name = strdup(name)) ||
	    !(ts->v[ts->n].provider = strdup(c->provider ? c->provider : "func")))
		abort();
	ts->v[ts->n].progs = progs;
	ts->v[ts->n].site = c->provider ? 0 : c->site ? c->site_addr : f->addr;
	ts->v[ts->n++].n = n;
	return 0;
}

/* A statement point's sites: tr at each address of its line, where the
 * variable is as the DWARF says there. */
static void resolve_line(struct compile_ctx *c, struct djp_source *src)
{
	struct djp_func_table *t = NULL;
	uint64_t addrs[64];
	char err[512], site[600];
	char *path = func_point_object(c->pp, src ? src->target_pid : 0);
	int n;

	if (!path) {
		set_err(c->tr, "cannot find the object of %s: %s", c->pp->text, strerror(errno));
		return;
	}
	c->path = path;
	n = djp_lines_resolve(path, c->pp->glob + 5, addrs, 64, err, sizeof(err));
	if (n > 0 && djp_funcs_read(path, &t, err, sizeof(err)) != 0)
		n = -1;
	if (n < 0)
		set_err(c->tr, "%s%s", err, "");
	for (int i = 0; i < n && !c->tr->err; i++) {
		const struct djp_func *f = djp_funcs_at(t, addrs[i]);
		struct djp_params_file *pf = NULL;
		if (!f)
			continue;
		if (addrs[i] == f->addr)
			snprintf(site, sizeof(site), "%s", f->name);
		else
			snprintf(site, sizeof(site), "%s+%#llx", f->name, (unsigned long long)(addrs[i] - f->addr));
		c->site = site;
		c->site_addr = addrs[i];
		c->tr->acc.pc = addrs[i] == f->addr ? 0 : addrs[i];
		if (djp_params_open(path, &pf, err, sizeof(err)))
			pf = NULL;
		compile_one(c, f, NULL, pf);
		if (pf)
			djp_params_close(pf);
	}
	if (!c->nfuncs && !c->pp->optional && !c->tr->err)
		set_err(c->tr, "%s has no code in %s", c->pp->text, path);
	djp_funcs_free(t);
	free(path);
}

/*
 * At a marker, @cast($argN, "T"[, "PATH"])->... (or $NAME, a field of the
 * marker's format): the address is the site's argument N wherever each
 * site of that name places it (DJP_LOC_ARG: the agent reads it from the
 * site's own record, as the event's argument), typed from PATH's DWARF,
 * else the marker's object's.  A marker's argument has no C type of its
 * own: without @cast it is an error that says so.  The markers are those
 * the point matches when the probes are resolved (a library loaded later
 * gets none of them).
 */
static void resolve_marker(struct compile_ctx *c, struct djp_source *src)
{
	struct typed_ref *tr = c->tr;
	const char *var = tr->acc.var;
	char prov[256], done[64][300];
	unsigned ndone = 0;

	if (!tr->acc.cast_type && !tr->acc.global_name) {
		set_err(tr, "$%s has no C type at a marker: @cast it (@cast($%s, \"struct T\"[, \"PATH\"])->...)", var,
			var);
		return;
	}
	if (tr->base_call || tr->all) {
		set_err(tr, "not supported yet: %s at a marker%s", tr->text, "");
		return;
	}
	for (unsigned i = 0; src && i < src->ndescs && !tr->err; i++) {
		const struct djp_ev_desc *d = &src->descs[i];
		struct djp_params_file *pf = NULL;
		struct djp_func f = { .name = d->name };
		char err[512], key[300];
		int arg = -1;
		bool seen = false;

		if (d->life || !pp_matches(c->pp, d))
			continue;
		snprintf(prov, sizeof(prov), "%.*s", (int)d->provider_len, d->provider ? d->provider : "");
		snprintf(key, sizeof(key), "%s:%s", prov, d->name);
		for (unsigned k = 0; k < ndone && !seen; k++)
			seen = !strcmp(done[k], key);
		if (seen || ndone == 64)
			continue;
		snprintf(done[ndone++], sizeof(done[0]), "%s", key);
		if (tr->acc.global_name) /* a global of the marker's object */
			arg = 0;
		else if (!strncmp(var, "arg", 3) && var[3] >= '1' && var[3] <= '9' && strtol(var + 3, NULL, 10) <= (long)d->nargs)
			arg = (int)strtol(var + 3, NULL, 10) - 1;
		for (unsigned k = 0; arg < 0 && k < d->fmt.nfields && k < d->nargs; k++)
			if (!strcmp(d->fmt.field[k].name, var))
				arg = (int)k;
		if (arg < 0) {
			set_err(tr, "marker %s has no argument $%s", d->label ? d->label : d->name, var);
			break;
		}
		tr->acc.has_base_loc = !tr->acc.global_name;
		tr->acc.base_loc = (struct djp_argloc){ .kind = DJP_LOC_ARG, .size = 8, .reg = DJP_REG_NONE,
							.index = DJP_REG_NONE, .scale = 1, .disp = arg };
		if (!tr->acc.cast_path && d->object && djp_params_open(d->object, &pf, err, sizeof(err)))
			pf = NULL;
		c->path = d->object ? d->object : "the marker's object";
		c->site = d->name;
		c->provider = prov;
		compile_one(c, &f, NULL, pf);
		if (pf)
			djp_params_close(pf);
	}
	if (!ndone && !c->pp->optional && !tr->err)
		set_err(tr, "%s matches no marker%s", c->pp->text, "");
}

/* Compile tr at every function of its probe's points. */
static void resolve_ref(struct script *sc, struct djp_source *src, struct typed_ref *tr)
{
	bool ret_var = !strcmp(tr->acc.var, "return");
	unsigned points = 0;

	tr->resolved = true;
	tr->ok = true;

	if (tr->base_call) {
		char err[256];
		int reg = dwarfless_address_reg(tr->base_call, err, sizeof(err));

		if (reg < 0) {
			set_err(tr, "%s%s", err, "");
			return;
		}
		tr->acc.has_base_loc = true;
		tr->acc.base_loc = (struct djp_argloc){ .kind = DJP_LOC_REG, .size = 8, .reg = (int8_t)reg,
							.index = DJP_REG_NONE, .scale = 1 };
	}
	for (const struct probe_point *pp = tr->probe->points; pp && !tr->err; pp = pp->next) {
		struct compile_ctx c = { .sc = sc, .tr = tr, .pp = pp };
		char spec[600], err[512];
		char *path;
		int n;
		if (pp->kernel) {
			set_err(tr, "not supported yet: a typed access at kernel points%s%s", "", "");
			break;
		}
		if (pp->kind == PP_MARK && pp->point && !strncmp(pp->glob, "line:", 5) && !ret_var) {
			resolve_line(&c, src);
			points++;
			continue;
		}
		if (pp->kind == PP_MARK && !pp->point) {
			resolve_marker(&c, src);
			points++;
			continue;
		}
		if (pp->kind != PP_MARK || !pp->point || strncmp(pp->glob, "func:", 5)) {
			set_err(tr, "not supported yet: a typed access at this point (only at markers, function entries, "
				    "returns and statements)%s%s", "", "");
			break;
		}
		if (ret_var && !pp->ret) {
			set_err(tr, "$return is only at a .return point%s%s", "", "");
			break;
		}
		/* a parameter's access at a .return: read at the call's
		 * entry, as stap reads it (kernel/retprobes.c, "Values read
		 * at the entry") */
		tr->acc.at_return = pp->ret && ret_var;
		c.at_entry = pp->ret && !ret_var && !tr->acc.global_name;
		if (!(path = func_point_object(pp, src ? src->target_pid : 0))) {
			set_err(tr, "cannot find the object of %s: %s", pp->text, strerror(errno));
			break;
		}
		c.path = path;
		func_point_spec(pp, spec, sizeof(spec));
		n = func_points_each(path, spec, compile_one, &c, err, sizeof(err));
		if (n < 0)
			set_err(tr, "%s%s", err, "");
		else if (!c.nfuncs && !pp->optional)
			set_err(tr, "%s matches no function in %s", pp->text, path);
		free(path);
		points++;
	}
	if (!points && !tr->err)
		set_err(tr, "a typed access%s%s outside a function probe", "", "");
}

void typed_set_global(struct djp_typed_access *a, const char *spec)
{
	const char *at = strchr(spec, '@');
	char *name = strdup(spec);

	if (!name)
		abort();
	if (at)
		name[at - spec] = 0;
	a->global_name = name;
	a->global_file = at ? at + 1 : NULL;
}

/* ---- Script values ------------------------------------------------------ */

static bool names_var(const struct node *n, const char *name)
{
	return n && n->kind == N_VAR && n->str && !strcmp(n->str, name);
}

/* How many times n writes the variable name (assignments of any kind,
 * ++ and --, delete, a foreach's key or value, a catch's message), the
 * last plain assignment in *assign. */
static int writes_of(const struct node *n, const char *name, const struct node **assign)
{
	int w = 0;

	if (!n)
		return 0;
	if ((n->kind == N_ASSIGN || n->kind == N_INCDEC || n->kind == S_DELETE) && names_var(n->a, name)) {
		w++;
		if (n->kind == N_ASSIGN && n->op == 0)
			*assign = n;
	}
	if (n->kind == S_FOREACH) {
		for (int i = 0; i < n->fe_nkeys && i < n->nargs; i++)
			w += names_var(n->args[i], name) * 2;
		w += names_var(n->d, name) * 2;
	}
	if (n->kind == S_TRY && n->str && !strcmp(n->str, name))
		w += 2;
	w += writes_of(n->a, name, assign) + writes_of(n->b, name, assign) + writes_of(n->c, name, assign) +
	     writes_of(n->d, name, assign) + writes_of(n->fe_limit, name, assign) + writes_of(n->fe_slice, name, assign);
	for (int i = 0; i < n->nargs; i++)
		w += writes_of(n->args[i], name, assign);
	return w;
}

static bool contains(const struct node *n, const struct node *x)
{
	if (!n)
		return false;
	if (n == x)
		return true;
	if (contains(n->a, x) || contains(n->b, x) || contains(n->c, x) || contains(n->d, x) ||
	    contains(n->fe_limit, x) || contains(n->fe_slice, x))
		return true;
	for (int i = 0; i < n->nargs; i++)
		if (contains(n->args[i], x))
			return true;
	return false;
}

/*
 * @cast(p, "T")->m where p is a local of the probe that holds a context
 * variable: `p = $req; ... @cast(p, "struct request")->id`, and p->m
 * (stap types such a local as its context variable).  When p is
 * written once in the whole body, by a statement of the body's own list
 * (no branch or loop around it) before the one that reads it, p is that
 * context variable wherever the cast reads it, and the cast is compiled
 * as @cast($req, ...): read at the hit, as every typed access.  A value
 * the script computes any other way (arithmetic, a global, an array) was
 * gone from the target's memory, or changed, by the time the script runs
 * (it runs after the hit, in the tool), and its cast is refused.
 */
static void cast_of_local(struct script *sc, struct probe *p, struct node *n)
{
	struct typed_ref *tr = n->tr;
	const struct node *v = tr->base_value, *assign = NULL, *rhs;
	const struct node *body = p->body;
	int k = -1, use = -1;

	if (!names_var(v, v->str ? v->str : ""))
		goto refuse;
	for (struct sym *g = sc->globals; g; g = g->next)
		if (!strcmp(g->name, v->str))
			goto refuse;
	if (!body || body->kind != S_BLOCK || writes_of(body, v->str, &assign) != 1 || !assign)
		goto refuse;
	rhs = assign->b;
	if (rhs && rhs->kind == N_TYPED && !tr->acc.cast_type) {
		/* p = $n->next; p->i32: the access goes on from there */
		const struct typed_ref *r = rhs->tr;
		if (r->base_value || r->pretty || r->all || r->acc.addr_of || r->acc.at_return ||
		    r->acc.nsteps + tr->acc.nsteps > DJP_TYPED_MAX_STEPS)
			goto refuse;
	} else if (rhs && rhs->kind == N_CALL && rhs->str && !strcmp(rhs->str, "@var") && rhs->nargs == 1 &&
		   rhs->args[0]->kind == N_STR) {
		/* p = @var("g@file.c"); p->m: the global's access */
	} else if (rhs && rhs->kind == N_CALL && tr->acc.cast_type) { /* p = pointer_arg(1) and its kin */
		char err[256];
		if (dwarfless_address_reg(rhs, err, sizeof(err)) < 0)
			goto refuse;
	} else if (!rhs || rhs->kind != N_CTX || rhs->a || (rhs->str[0] && rhs->str[strlen(rhs->str) - 1] == '$')) {
		goto refuse;
	}
	for (int i = 0; i < body->nargs; i++) {
		if (body->args[i]->kind == S_EXPR && body->args[i]->a == assign)
			k = i;
		if (use < 0 && contains(body->args[i], n))
			use = i;
	}
	if (k < 0 || use <= k)
		goto refuse;
	if (rhs->kind == N_TYPED) { /* its access, then ours */
		struct djp_typed_access a = rhs->tr->acc;
		for (unsigned i = 0; i < tr->acc.nsteps; i++)
			a.step[a.nsteps++] = tr->acc.step[i];
		a.addr_of = tr->acc.addr_of;
		tr->acc = a;
		tr->base_call = rhs->tr->base_call;
		tr->base_value = NULL;
		n->a = NULL;
		return;
	}
	if (rhs->kind == N_CALL && !strcmp(rhs->str, "@var")) {
		tr->acc.var = "@var";
		typed_set_global(&tr->acc, rhs->args[0]->str);
		tr->base_value = NULL;
		n->a = NULL;
		return;
	}
	/* the cast of the context variable (or argument register) itself */
	tr->acc.var = rhs->str;
	if (rhs->kind == N_CALL)
		tr->base_call = (struct node *)rhs;
	tr->base_value = NULL;
	n->a = NULL;
	return;
refuse:
	if (tr->acc.cast_type)
		set_err(tr, "not supported yet: @cast of a value the script computes (only of a context variable, an "
			    "argument register, or a local the probe sets to one once, before)%s%s", "", "");
	else
		set_err(tr, "not supported yet: '->' on a value the script computes (only on a local the probe sets "
			    "once, before, to a context variable: p = $var; p->member)%s%s", "", "");
	tr->resolved = true;
}

static void walk(struct script *sc, struct djp_source *src, struct probe *p, struct node *n)
{
	if (!n)
		return;
	if (n->kind == N_TYPED && n->tr && !n->tr->resolved) {
		n->tr->probe = p;
		if (n->tr->base_value)
			cast_of_local(sc, p, n);
		if (!n->tr->resolved)
			resolve_ref(sc, src, n->tr);
	}
	walk(sc, src, p, n->a);
	walk(sc, src, p, n->b);
	walk(sc, src, p, n->c);
	walk(sc, src, p, n->d);
	walk(sc, src, p, n->fe_limit);
	walk(sc, src, p, n->fe_slice);
	for (int i = 0; i < n->nargs; i++)
		walk(sc, src, p, n->args[i]);
}

int typed_resolve(struct script *sc, struct djp_source *src)
{
	for (struct probe *p = sc->probes; p; p = p->next) {
		walk(sc, src, p, p->cond);
		walk(sc, src, p, p->body);
	}
	return 0;
}

bool typed_check(struct script *sc, struct node *n)
{
	struct typed_ref *tr = n->tr;
	struct script_typed *t;

	if (tr->idx >= 0)
		return true;
	if (!tr->resolved || !tr->ok) {
		diag(sc, n->line, n->col, "semantic error", "%s: %s", tr->text,
		     tr->err ? tr->err : "not supported yet: a typed access outside a probe body");
		return false;
	}
	t = typed_of(sc);
	tr->npieces = tr->pretty ? tr->tmpl.n : 1;
	for (unsigned k = 0; k < tr->nlayouts; k++) /* room for the largest */
		if (tr->layouts[k].n > tr->npieces)
			tr->npieces = tr->layouts[k].n;
	if (t->n + tr->npieces > DJP_LOAD_MAX_PROGS) {
		diag(sc, n->line, n->col, "semantic error", "%s: more than %d values read in one script", tr->text,
		     DJP_LOAD_MAX_PROGS);
		return false;
	}
	tr->idx = (int)t->n;
	for (unsigned i = 0; i < tr->npieces; i++)
		t->ref[t->n++] = tr;
	return true;
}

/* The site named name at link-time address site in t's list, made with
 * every program loading nothing. */
static struct djp_load_prog *site_progs(struct script_typed *t, const char *provider, const char *name,
					uint64_t site)
{
	static const struct djp_load_prog none = {
		.base = { .kind = DJP_LOC_IMM, .size = 8, .reg = DJP_REG_NONE, .index = DJP_REG_NONE, .scale = 1 },
	};
	struct djp_load_prog *v;

	for (unsigned i = 0; i < t->nsites; i++)
		if (!strcmp(t->sites[i].name, name) && !strcmp(t->sites[i].provider, provider) && t->sites[i].site == site)
			return (struct djp_load_prog *)t->sites[i].prog;
	if (!(t->sites = realloc(t->sites, sizeof(*t->sites) * (t->nsites + 1))) ||
	    !(v = malloc(sizeof(*v) * DJP_LOAD_MAX_PROGS)))
		abort();
	for (unsigned i = 0; i < DJP_LOAD_MAX_PROGS; i++)
		v[i] = none;
	t->sites[t->nsites++] = (struct djp_load_site){ strdup(provider), strdup(name), site, t->n, v };
	return v;
}

void typed_load_sites(struct script *sc, struct djp_source *src)
{
	struct script_typed *t = sc->typed;

	if (!t || !t->n)
		return;
	for (unsigned i = 0; i < t->n; i++) {
		struct typed_ref *tr = t->ref[i];
		struct typed_sites *ts;
		if (i != (unsigned)tr->idx)
			continue; /* a pretty-printed one's later values */
		ts = sites_of(sc, tr);
		for (unsigned k = 0; k < ts->n; k++) {
			struct djp_load_prog *p = site_progs(t, ts->v[k].provider, ts->v[k].name, ts->v[k].site);
			for (unsigned j = 0; j < ts->v[k].n && i + j < DJP_LOAD_MAX_PROGS; j++)
				p[i + j] = ts->v[k].progs[j];
			if (!tr->pretty)
				p[i].str_bound = (uint16_t)tr->str_bound;
		}
	}
	src->load_sites = t->sites;
	src->nload_sites = t->nsites;
}

int64_t typed_value(struct run *r, const struct node *n)
{
	const struct djp_ev *ev = r->ev;
	int i = n->tr->idx;

	if (!ev || !ev->loads || i < 0 || (unsigned)i >= ev->nloads)
		rt_error(r, n, "%s was not read at this hit", n->tr->text);
	if (ev->loads_faulted >> i & 1)
		rt_error(r, n, "user memory copy fault at 0x%llx", (unsigned long long)ev->loads[i]);
	return (int64_t)ev->loads[i];
}

bool typed_string(struct run *r, const struct node *n, const char **text, uint64_t *addr)
{
	const struct djp_ev *ev = r->ev;
	int i = n->tr->idx;
	uint64_t flags;
	uint32_t len;

	*text = NULL;
	*addr = (uint64_t)typed_value(r, n); /* the chain's own faults first */
	if (!n->tr->str_bound || !ev->loads_ev || !(ev->loads_strs >> i & 1))
		return false;
	*text = djp_event_load_str(ev->loads_ev, *addr, &len, &flags, addr);
	if (*text && (flags & (DJP_STR_FAULT | DJP_STR_NULL)))
		*text = NULL;
	return true;
}

/* One value of a pretty-printed access, appended to b. */
static void pretty_value(const struct djp_ev *ev, const struct djp_pretty_piece *pc, uint64_t v, bool is_str,
			 struct strbuf *b)
{
	char tmp[64];

	switch (pc->kind) {
	case 's': {
		const char *t = NULL;
		uint64_t flags = 0, ptr = v;
		uint32_t len;
		if (is_str)
			t = djp_event_load_str(ev->loads_ev, v, &len, &flags, &ptr);
		if (t && !(flags & (DJP_STR_FAULT | DJP_STR_NULL))) {
			sb_putc(b, '"');
			print_escaped(b, t);
			sb_putc(b, '"');
			return;
		}
		snprintf(tmp, sizeof(tmp), "0x%llx", (unsigned long long)ptr);
		break;
	}
	case 'x':
		snprintf(tmp, sizeof(tmp), "0x%llx", (unsigned long long)v);
		break;
	case 'e':
		for (unsigned i = 0; i < pc->nenum; i++)
			if ((uint64_t)pc->enum_val[i] == v) {
				sb_put(b, pc->enum_name[i], strlen(pc->enum_name[i]));
				return;
			}
		__attribute__((fallthrough)); /* a value without a name */
	case 'd':
		snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
		break;
	default:
		snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
		break;
	}
	sb_put(b, tmp, strlen(tmp));
}

/* How tr is laid out at the event's site: the first layout, unless its
 * functions differ, then its site's (by the descriptor's name, looked up
 * once per descriptor). */
static const struct djp_pretty *layout_at(struct typed_ref *tr, const struct djp_ev *ev)
{
	const struct djp_ev_desc *d = ev->desc;
	unsigned k = 0;

	if (!tr->nlayouts || !d)
		return &tr->tmpl;
	if (d->id < tr->ndesc_layout && tr->desc_layout[d->id]) {
		k = tr->desc_layout[d->id] - 1;
	} else {
		for (unsigned i = 0; i < tr->nsite_layouts; i++)
			if (!strcmp(tr->site_layouts[i].name, d->name)) {
				k = tr->site_layouts[i].layout;
				break;
			}
		if (d->id >= tr->ndesc_layout) {
			if (!(tr->desc_layout = realloc(tr->desc_layout, sizeof(*tr->desc_layout) * (d->id + 1))))
				abort();
			memset(tr->desc_layout + tr->ndesc_layout, 0,
			       sizeof(*tr->desc_layout) * (d->id + 1 - tr->ndesc_layout));
			tr->ndesc_layout = d->id + 1;
		}
		tr->desc_layout[d->id] = k + 1;
	}
	return k ? &tr->layouts[k - 1] : &tr->tmpl;
}

const char *typed_pretty_text(struct run *r, const struct node *n)
{
	const struct djp_ev *ev = r->ev;
	struct typed_ref *tr = n->tr; /* its layouts' run-time lookup */
	struct strbuf b = { 0 };
	unsigned i0 = (unsigned)tr->idx;
	const struct djp_pretty *lay;
	const char *out;
	bool err = false;

	if (tr->npieces && (!ev || !ev->loads || tr->idx < 0 || i0 + tr->npieces > ev->nloads))
		rt_error(r, n, "%s was not read at this hit", tr->text);
	lay = layout_at(tr, ev);
	/* a value one of whose loads faulted prints as "ERROR", as stap's
	 * pretty printing (a try around each) does: the whole $var$, or
	 * that parameter of $$parms$ */
	for (unsigned i = 0; i < lay->n; i++) {
		const struct djp_pretty_piece *pc = &lay->v[i];
		size_t skip = 0;
		if (!i || pc->group != lay->v[i - 1].group) { /* a group's first */
			if (!err)
				sb_put(&b, pc->text, pc->close_len);
			sb_put(&b, pc->text + pc->close_len, pc->prefix_len);
			skip = (size_t)pc->close_len + pc->prefix_len;
			err = false;
			for (unsigned j = i; j < lay->n && lay->v[j].group == pc->group; j++)
				err |= ev->loads_faulted >> (i0 + j) & 1;
			if (err)
				sb_put(&b, "ERROR", 5);
		}
		if (err)
			continue;
		sb_put(&b, pc->text + skip, strlen(pc->text + skip));
		pretty_value(ev, pc, ev->loads[i0 + i], ev->loads_strs >> (i0 + i) & 1, &b);
	}
	/* the last group's end (not after its ERROR), and what follows it */
	sb_put(&b, lay->tail + (err ? lay->tail_close : 0), strlen(lay->tail + (err ? lay->tail_close : 0)));
	sb_putc(&b, 0);
	out = arena_strn(r, b.p, b.len > MAXSTRINGLEN ? MAXSTRINGLEN - 1 : b.len - 1);
	free(b.p);
	return out;
}
