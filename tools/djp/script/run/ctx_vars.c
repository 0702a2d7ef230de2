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
 * value, each "name=0x.." separated by spaces as stap prints them.
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

static const uint8_t *field_kinds(const struct djp_ev_desc *d)
{
	struct djp_param_set ps;
	bool have;
	uint8_t *k;

	if (d->id >= nkinds) {
		size_t n = d->id + 64;
		if (!(kinds = realloc(kinds, n * sizeof(*kinds))))
			abort();
		memset(kinds + nkinds, 0, (n - nkinds) * sizeof(*kinds));
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
	djp_format_render(buf, sz, &f, n, args, strs);
}
