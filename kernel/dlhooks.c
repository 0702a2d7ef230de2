/*
 * Objects that come and go: dlopen and dlclose, interposed.
 *
 * dlopen: after the loader has mapped and relocated the object, refresh the
 * registry and give every connected probe the matching sites it does not
 * have yet (one batch per probe).  dlclose: before the loader may unmap the
 * object, disarm every site of it (text restored, lists emptied, a grace
 * period passed); after it returns, refresh and re-attach, which re-arms
 * the object if it is in fact still loaded (its reference count was above
 * one) and drops it from the registry if it is gone.
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
			for (size_t i = 0; i < o->nsites; i++) {
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

DJP_API int dlclose(void *handle)
{
	static int (*real)(void *);
	struct link_map *lm = NULL;
	int r;
	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	if (!djp_engine_ready() || djp_in_handler() || dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
		return real(handle);
	djp_engine_lock_take();
	for (struct djp_object *o = djp_objects; o; o = o->next) {
		size_t n = 0;
		struct djp_site **v;
		const struct djp_handler_list **lists;
		if (o->bias != lm->l_addr || strcmp(o->path, lm->l_name))
			continue;
		v = calloc(o->nsites ? o->nsites : 1, sizeof(*v));
		lists = calloc(o->nsites ? o->nsites : 1, sizeof(*lists));
		for (size_t i = 0; v && lists && i < o->nsites; i++)
			if (atomic_load(&o->sites[i].handlers))
				v[n++] = &o->sites[i];
		if (n && djp_sites_apply(v, n, lists) == 0)
			for (size_t i = 0; i < n; i++)
				v[i]->nprobes = 0;
		free(v);
		free(lists);
	}
	djp_engine_lock_release();
	r = real(handle);
	djp_engine_lock_take();
	reattach_all();
	djp_engine_lock_release();
	return r;
}
