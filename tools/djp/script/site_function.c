/*
 * probefunc() and ppfunc(): the function around the marker that fired.
 *
 * The agent names each site by its run-time address and its object; the
 * function is in the object's file: its symbol table, the separate debug
 * file, or, for a static function of a stripped program, the start of the
 * function from the call-frame information (lib/markers_elf.c does all of
 * that for `djp list`).  So the first time a script asks about a site, its
 * object's markers are read with that lookup (once per object), the
 * object's load bias in the process is taken from /proc/PID/maps (the
 * mapping of its file offset 0), and the marker whose link-time site plus
 * the bias is the run-time address gives the name.  A descriptor read from
 * a file (process("PATH") of a program not yet running) has the link-time
 * site already.  Answers are kept per descriptor: a script that calls
 * probefunc() on every hit reads nothing after the first.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "lib/escape.h"
#include "lib/markers.h"
#include "site_function.h"

struct object_info {
	char *path;
	struct djp_marker_list *list; /* NULL: unreadable */
	int32_t pid;		      /* the bias is this process's */
	bool have_bias;
	uint64_t bias;
};

struct site_functions {
	struct object_info *obj;
	size_t nobj;
	char **by_id; /* per descriptor id: the answer, or NULL not asked yet */
	size_t nids;
};

struct site_functions *site_functions_new(void)
{
	struct site_functions *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	return c;
}

void site_functions_free(struct site_functions *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nobj; i++) {
		free(c->obj[i].path);
		djp_marker_list_free(c->obj[i].list);
	}
	for (size_t i = 0; i < c->nids; i++)
		free(c->by_id[i]);
	free(c->obj);
	free(c->by_id);
	free(c);
}

static struct object_info *object(struct site_functions *c, const char *path)
{
	struct object_info *o;
	char err[256];

	for (size_t i = 0; i < c->nobj; i++)
		if (!strcmp(c->obj[i].path, path))
			return &c->obj[i];
	o = realloc(c->obj, sizeof(*o) * (c->nobj + 1));
	if (!o)
		abort();
	c->obj = o;
	o = &c->obj[c->nobj++];
	*o = (struct object_info){ .path = strdup(path) };
	if (!o->path)
		abort();
	if (djp_markers_read_file(path, 0, &o->list, err, sizeof(err)) < 0)
		o->list = NULL;
	return o;
}

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return !strcmp(a, b) || (realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb));
}

/* The object's load bias in pid, from the mapping of its file. */
static bool find_bias(struct object_info *o, int32_t pid)
{
	char maps[64], line[PATH_MAX + 128];
	FILE *f;

	if (o->have_bias && o->pid == pid)
		return true;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "re")))
		return false;
	o->have_bias = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char *path = strchr(line, '/');
		if (!path || sscanf(line, "%llx-%llx %*s %llx", &start, &end, &off) != 3)
			continue;
		path[strcspn(path, "\n")] = 0;
		if (!same_file(path, o->path))
			continue;
		if (djp_marker_list_bias(o->list, start, off, &o->bias) == 0) {
			o->have_bias = true;
			o->pid = pid;
			break;
		}
	}
	fclose(f);
	return o->have_bias;
}

/* Without the maps (the process is gone: events outlive it), the bias
 * from the site itself: a load bias is a multiple of the page size, so the
 * marker of that name whose site has the run-time address's page offset. */
static bool bias_by_name(struct object_info *o, int32_t pid, const struct djp_ev_desc *d)
{
	for (size_t i = 0; i < o->list->count; i++) {
		const struct djp_marker_info *m = &o->list->v[i];
		if (strcmp(m->name, d->name) || ((d->site - m->site) & 4095))
			continue;
		if (d->provider_len && (!m->provider || strlen(m->provider) != d->provider_len ||
					memcmp(m->provider, d->provider, d->provider_len)))
			continue;
		o->bias = d->site - m->site;
		o->have_bias = true;
		o->pid = pid;
		return true;
	}
	return false;
}

static const char *lookup(struct site_functions *c, int32_t pid, const struct djp_ev_desc *d)
{
	struct object_info *o;
	uint64_t site = d->site;

	if (!d->object || !d->site || !(o = object(c, d->object)) || !o->list)
		return "";
	if (d->site_runtime) {
		if (!o->list->is_dyn)
			o->bias = 0, o->have_bias = true, o->pid = pid;
		else if (!find_bias(o, pid) && !bias_by_name(o, pid, d))
			return "";
		site -= o->bias;
	}
	for (size_t i = 0; i < o->list->count; i++)
		if (o->list->v[i].site == site)
			return o->list->v[i].function ? o->list->v[i].function : "";
	return "";
}

const char *site_function(struct site_functions *c, int32_t pid, const struct djp_ev_desc *d)
{
	if (d->id >= c->nids) {
		size_t n = d->id + 64;
		char **v = realloc(c->by_id, sizeof(*v) * n);
		if (!v)
			abort();
		memset(v + c->nids, 0, sizeof(*v) * (n - c->nids));
		c->by_id = v;
		c->nids = n;
	}
	if (!c->by_id[d->id]) {
		/* a symbol name from the target's file: escaped, as pp() */
		const char *fn = lookup(c, pid, d);
		size_t n = 4 * strlen(fn) + 1;
		if (!(c->by_id[d->id] = malloc(n)))
			abort();
		djp_escape_c(c->by_id[d->id], n, fn, false);
	}
	return c->by_id[d->id];
}
