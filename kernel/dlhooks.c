/*
 * Objects that come and go: dlopen and dlclose, interposed.
 *
 * dlopen: after the loader has mapped and relocated the object, refresh the
 * registry and give every connected probe the matching sites it does not
 * have yet (one batch per probe).
 *
 * dlclose: the loader unmaps the object named and every dependency whose
 * count drops to zero with it, which from outside the loader is any object
 * loaded after startup.  So before calling it, mark each of those objects
 * `closing` and disarm their sites (text restored, lists emptied, a grace
 * period passed).  From then until the loader returns, no batch touches
 * them: connect and dlopen in other threads leave them out (a probe that
 * matches only there still connects).  Afterwards unmark them, refresh and
 * re-attach, which re-arms what is in fact still loaded (its count was
 * above one) and drops from the registry what is gone.  The marks are
 * counts: dlcloses may overlap, and a destructor may call dlclose.
 */
#include <dlfcn.h>
#include <fnmatch.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/engine.h"

/* Give every probe the sites it matches but does not carry.  Lock held. */
static void reattach_all(void)
{
	djp_objects_refresh();
	for (struct djp_probe *p = djp_probes; p; p = p->next) {
		size_t n = 0, cap = 0;
		struct djp_site **v = NULL;
		const struct djp_handler_list **lists;
		for (struct djp_object *o = djp_objects; o; o = o->next)
			for (size_t i = 0; !o->closing && i < o->nsites; i++) {
				struct djp_site *s = &o->sites[i];
				const struct djp_handler_list *l = atomic_load(&s->handlers);
				int has = 0;
				for (unsigned k = 0; l && k < l->n; k++)
					has |= l->h[k].probe_id == p->id;
				if (has || fnmatch(p->pattern, s->m->name, 0))
					continue;
				if (n == cap) {
					void *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
					if (!nv)
						break;
					v = nv;
				}
				v[n++] = s;
			}
		if (!n) {
			free(v);
			continue;
		}
		lists = calloc(n, sizeof(*lists));
		for (size_t i = 0; lists && i < n; i++)
			if (!(lists[i] = djp_list_make(atomic_load(&v[i]->handlers), p, -1, v[i]))) {
				/* ENOMEM: a NULL list would disarm the site's others */
				while (i--)
					free((void *)lists[i]);
				free(lists);
				lists = NULL;
			}
		if (lists && djp_sites_apply(v, n, lists) == 0)
			for (size_t i = 0; i < n; i++)
				v[i]->nprobes++;
		free(lists);
		free(v);
	}
}

DJP_API void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	void *h;
	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	h = real(file, mode);
	if (h && djp_engine_ready() && !djp_in_handler()) {
		djp_engine_lock_take();
		if (djp_probes)
			reattach_all();
		djp_engine_lock_release();
	}
	return h;
}

/* May the loader unmap `o` when it closes the object at `lm`? */
static bool may_go(const struct djp_object *o, const struct link_map *lm)
{
	return !o->permanent || (o->bias == lm->l_addr && !strcmp(o->path, lm->l_name));
}

DJP_API int dlclose(void *handle)
{
	static int (*real)(void *);
	struct link_map *lm = NULL;
	struct djp_object **closing = NULL;
	struct djp_site **v = NULL;
	size_t nclosing = 0, n = 0, cap = 0;
	int r;
	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	if (!djp_engine_ready() || djp_in_handler() || dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
		return real(handle);
	djp_engine_lock_take();
	djp_objects_refresh();
	for (struct djp_object *o = djp_objects; o; o = o->next)
		nclosing += may_go(o, lm);
	closing = calloc(nclosing ? nclosing : 1, sizeof(*closing));
	nclosing = 0;
	for (struct djp_object *o = djp_objects; closing && o; o = o->next) {
		if (!may_go(o, lm))
			continue;
		o->closing++;
		closing[nclosing++] = o;
		for (size_t i = 0; i < o->nsites; i++) {
			if (!atomic_load(&o->sites[i].handlers))
				continue;
			if (n == cap) {
				void *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
				if (!nv)
					break;
				v = nv;
			}
			v[n++] = &o->sites[i];
		}
	}
	if (n) {
		const struct djp_handler_list **lists = calloc(n, sizeof(*lists));
		if (lists && djp_sites_apply(v, n, lists) == 0)
			for (size_t i = 0; i < n; i++)
				v[i]->nprobes = 0;
		free(lists);
	}
	free(v);
	djp_engine_lock_release();
	r = real(handle);
	djp_engine_lock_take();
	for (size_t i = 0; i < nclosing; i++)
		closing[i]->closing--;
	free(closing);
	reattach_all();
	djp_engine_lock_release();
	return r;
}
