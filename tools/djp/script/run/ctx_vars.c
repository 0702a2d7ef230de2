/*
 * SystemTap's $$parms, $$vars, $$locals and $$return, from a hit's named
 * arguments.
 *
 * A marker's arguments are all parameters: $$parms and $$vars are its
 * whole format rendered, $$locals is empty.  A function point's site
 * carries, as "name=%ld" fields of its format (%lu, %p: as the C type
 * says), the function's parameters and, inside the function, the
 * variables in scope there
 * (kernel/points.c), and a return site the entry's parameters and
 * "return".  Which fields are parameters is not in the event: the tool
 * asks the object's DWARF for the function's formal parameters, once a
 * site (lib/func_params.c), and a field of that name is one.  So $$parms
 * is those, $$locals the others, $$vars both, and $$return the return
 * value, each "name=0x.." separated by spaces as stap prints them.  A
 * parameter the site does not carry is there too, in the DWARF's order,
 * as stap writes it: "name={...}" for a structure, union or class (stap
 * prints no aggregate in $$parms, only in $$parms$), "name=?" for one it
 * cannot read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx_vars.h"
#include "lib/func_params.h"
#include "lib/func_symbols.h"

enum { F_PARM = 1, F_LOCAL = 2, F_RETURN = 4 };

/* Field kinds per site, by desc id; 0: not looked at yet. */
static uint8_t (*kinds)[DJP_FMT_MAX_FIELDS];
static size_t nkinds;

/* A function site's parameters in the DWARF's order, by desc id: each the
 * field that carries it, or a placeholder (PH_AGG "{...}", PH_NONE "?")
 * with its name.  n 0: a marker's, or not a function with DWARF. */
#define PARMS_MAX 16
enum { PH_FIELD, PH_AGG, PH_NONE };
struct parm_order {
	unsigned n;
	struct {
		uint8_t how, field;
		char *name;
	} v[PARMS_MAX];
};
static struct parm_order *orders;

static bool is_func_site(const struct djp_ev_desc *d)
{
	return d->provider_len == 4 && !memcmp(d->provider, "func", 4);
}

struct find {
	const char *name;
	uint64_t addr;
	bool found;
};

static int found(void *ctx, const struct djp_func *f)
{
	struct find *fd = ctx;
	fd->addr = f->addr;
	fd->found = true;
	return 1;
}

/* The last object asked about, its symbols and its DWARF, kept for the
 * tool's life: a glob's sites are mostly of one object, and each would
 * otherwise read the whole file again. */
static struct {
	char *object;
	struct djp_func_table *t;
	struct djp_params_file *pf;
} last;

static bool object_open(const char *object)
{
	char err[256];

	if (last.object && !strcmp(last.object, object))
		return last.t != NULL;
	free(last.object);
	if (last.t)
		djp_funcs_free(last.t);
	if (last.pf)
		djp_params_close(last.pf);
	memset(&last, 0, sizeof(last));
	if (!(last.object = strdup(object)))
		abort();
	if (djp_funcs_read(object, &last.t, err, sizeof(err)))
		last.t = NULL;
	else if (djp_params_open(object, &last.pf, err, sizeof(err)))
		last.pf = NULL;
	return last.t != NULL;
}

/* The formal parameters of the function named in d's site name
 * ("NAME", "NAME+0x12", "NAME%return"), from its object's DWARF. */
static bool func_params(const struct djp_ev_desc *d, struct djp_param_set *ps)
{
	char name[512], err[256];
	struct find fd = { name, 0, false };

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(d->name, "+%"), d->name);
	if (!d->object || !object_open(d->object) || !last.pf)
		return false;
	djp_funcs_match(last.t, name, found, &fd);
	return fd.found && !djp_params_get(last.pf, fd.addr, fd.addr, ps, err, sizeof(err));
}

/* ps's order for site d whose fields are of kinds k. */
static void parm_order(const struct djp_ev_desc *d, const uint8_t *k, const struct djp_param_set *ps,
		       struct parm_order *o)
{
	for (unsigned j = 0; j < ps->n && o->n < PARMS_MAX; j++) {
		unsigned i = 0;
		while (i < d->fmt.nfields && !((k[i] & F_PARM) && !strcmp(d->fmt.field[i].name, ps->v[j].name)))
			i++;
		if (!(o->v[o->n].name = strdup(ps->v[j].name)))
			abort();
		o->v[o->n].field = (uint8_t)i;
		o->v[o->n++].how = i < d->fmt.nfields		 ? PH_FIELD
				   : ps->v[j].agg.how != ARCH_AGG_NONE ? PH_AGG
								       : PH_NONE;
	}
}

static const uint8_t *field_kinds(const struct djp_ev_desc *d)
{
	struct djp_param_set ps;
	bool have;
	uint8_t *k;

	if (d->id >= nkinds) {
		size_t n = d->id + 64;
		if (!(kinds = realloc(kinds, n * sizeof(*kinds))) || !(orders = realloc(orders, n * sizeof(*orders))))
			abort();
		memset(kinds + nkinds, 0, (n - nkinds) * sizeof(*kinds));
		memset(orders + nkinds, 0, (n - nkinds) * sizeof(*orders));
		nkinds = n;
	}
	k = kinds[d->id];
	if (k[0])
		return k;
	have = is_func_site(d) && func_params(d, &ps);
	for (unsigned i = 0; i < DJP_FMT_MAX_FIELDS; i++) {
		const char *fname = i < d->fmt.nfields ? d->fmt.field[i].name : "";
		bool parm = !is_func_site(d);
		if (is_func_site(d) && !strcmp(fname, "return") && strstr(d->name, "%return")) {
			k[i] = F_RETURN;
			continue;
		}
		for (unsigned j = 0; have && j < ps.n && !parm; j++)
			parm = !strcmp(ps.v[j].name, fname);
		k[i] = parm ? F_PARM : F_LOCAL;
	}
	if (have)
		parm_order(d, k, &ps, &orders[d->id]);
	if (have)
		djp_params_free(&ps);
	return k;
}

void ctx_vars_render(char *buf, size_t sz, const struct djp_ev_desc *d, const char *which, const struct djp_ev *ev)
{
	const uint8_t *k = field_kinds(d);
	uint8_t want = !strcmp(which, "parms")	 ? F_PARM
		       : !strcmp(which, "locals") ? F_LOCAL
		       : !strcmp(which, "return") ? F_RETURN
						  : F_PARM | F_LOCAL;
	struct djp_fmt f = { 0 };
	int64_t args[DJP_FMT_MAX_FIELDS];
	const char *strs[DJP_FMT_MAX_FIELDS];
	unsigned n = 0;
	const struct parm_order *o = &orders[d->id];
	size_t len = 0;

	if ((want & F_PARM) && o->n) { /* every parameter, in order; $$vars's locals below */
		buf[0] = 0;
		for (unsigned j = 0; j < o->n && len + 1 < sz; j++) {
			unsigned i = o->v[j].field;
			if (j)
				buf[len++] = ' ', buf[len] = 0;
			if (o->v[j].how == PH_FIELD && i < ev->nargs) {
				struct djp_fmt one = { .nfields = 1 };
				one.field[0] = d->fmt.field[i];
				if (one.field[0].conv != 's') /* hex, as below */
					one.field[0].conv = 'x';
				djp_format_render(buf + len, sz - len, &one, 1, &ev->args[i], &ev->strs[i]);
			} else {
				snprintf(buf + len, sz - len, "%s=%s", o->v[j].name, o->v[j].how == PH_AGG ? "{...}" : "?");
			}
			len += strlen(buf + len);
		}
		if (want == F_PARM || len + 2 >= sz)
			return;
		want = F_LOCAL;
	}
	for (unsigned i = 0; i < ev->nargs && i < DJP_FMT_MAX_FIELDS; i++) {
		/* an argument beyond the format's fields is a marker's */
		if (!(k[i] & want))
			continue;
		if (i < d->fmt.nfields) {
			f.field[f.nfields] = d->fmt.field[i];
			/* stap prints a function's $$vars in hex, whatever
			 * their type (its format, for djp trace, is typed) */
			if (is_func_site(d) && f.field[f.nfields].conv != 's')
				f.field[f.nfields].conv = 'x';
			f.nfields++;
		}
		args[n] = ev->args[i];
		strs[n++] = ev->strs[i];
	}
	if (len && n) /* after the parameters */
		buf[len++] = ' ';
	if (!len || n)
		djp_format_render(buf + len, sz - len, &f, n, args, strs);
}
