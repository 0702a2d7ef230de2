/*
 * Probes and sites: the one attach path and the one detach path.
 *
 * A probe is a pattern and a handler; the sites it holds are the sites
 * whose marker matches the pattern, in every object loaded.  That set
 * changes four ways, and each goes through one function here:
 *
 *   connect     djp_probe_attach: the new probe's sites
 *   dlopen      djp_probes_attach_all: each probe's sites in new objects
 *   disconnect  djp_probe_detach: every site that carries the probe
 *   dlclose     djp_objects_detach: every site of the objects going
 *
 * Attaching gives a probe exactly the matching sites that do not carry it
 * yet, so it serves connect and dlopen alike and is idempotent.  Each is
 * one batch (kernel/arm.c): all of its sites change, or none does.
 * Objects a dlclose may be unmapping (`closing`, kernel/dlhooks.c) are out
 * of every attach; the matches left out are counted, so that a connect
 * that matches only there still succeeds (that dlclose attaches it when it
 * is done, if the object stays).  A site's handler list is the only record
 * of the probes it carries.  Called with the engine lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/lock.h"
#include "kernel/probes.h"
#include "lib/marker_match.h"

struct djp_probe *djp_probes;

struct djp_handler_list *djp_list_make(const struct djp_handler_list *l, const struct djp_probe *add, int remove_id,
				       const struct djp_site *s)
{
	unsigned n = l ? l->n : 0, k = 0;
	struct djp_handler_list *nl = malloc(sizeof(*nl) + (n + 1) * sizeof(nl->h[0]));
	if (!nl)
		return NULL;
	for (unsigned i = 0; i < n; i++)
		if (l->h[i].probe_id != remove_id)
			nl->h[k++] = l->h[i];
	if (add)
		nl->h[k++] = (struct djp_handler){ add->fn, add->data, add->flags, add->id, add->plan };
	nl->n = k;
	if (!k) {
		free(nl);
		return NULL;
	}
	djp_list_seal(nl, s);
	return nl;
}

int djp_site_vec_push(struct site_vec *sv, struct djp_site *s)
{
	if (sv->n == sv->cap) {
		void *nv = realloc(sv->v, (sv->cap = sv->cap ? 2 * sv->cap : 16) * sizeof(*sv->v));
		if (!nv)
			return -ENOMEM;
		sv->v = nv;
	}
	sv->v[sv->n++] = s;
	return 0;
}

bool djp_site_carries(const struct djp_site *s, int id)
{
	const struct djp_handler_list *l = atomic_load(&s->handlers);
	for (unsigned k = 0; l && k < l->n; k++)
		if (l->h[k].probe_id == id)
			return true;
	return false;
}

/* Give each site its list with `add` added or `remove_id` gone. */
int djp_change_probe(struct site_vec *sv, const struct djp_probe *add, int remove_id)
{
	DJP_LOCK_HELD();
	const struct djp_handler_list **lists;
	int err = 0;
	if (!sv->n)
		return 0;
	if (!(lists = calloc(sv->n, sizeof(*lists))))
		return -ENOMEM;
	for (size_t i = 0; i < sv->n && !err; i++) {
		const struct djp_handler_list *cur = atomic_load(&sv->v[i]->handlers);
		lists[i] = djp_list_make(cur, add, remove_id, sv->v[i]);
		/* NULL is the empty list, or out of memory */
		if (!lists[i] && (add || (cur && (cur->n > 1 || !djp_site_carries(sv->v[i], remove_id)))))
			err = -ENOMEM;
	}
	/* an SDT probe's nop, armed for the first time: a jump over it and
	 * what follows, where that may be (before the batch decides) */
	for (size_t i = 0; i < sv->n && !err; i++)
		if (lists[i] && sv->v[i]->state == SITE_IDLE && sv->v[i]->m->from_sdt && sv->v[i]->len == 1 &&
		    !sv->v[i]->widen_tried)
			djp_sdt_widen(sv->v[i]);
	if (!err)
		err = djp_sites_apply(sv->v, sv->n, lists); /* owns the lists from here */
	else
		for (size_t i = 0; i < sv->n; i++)
			free((void *)lists[i]);
	free(lists);
	return err;
}

int djp_probe_attach(const struct djp_probe *p, size_t *matched)
{
	DJP_LOCK_HELD();
	struct site_vec sv = { 0 };
	size_t closing = 0;
	int err = 0;
	if (p->point)
		return djp_point_attach(p, matched);
	for (struct djp_object *o = djp_objects; o && !err; o = o->next)
		for (size_t i = 0; i < o->nsites && !err && !o->parent; i++) {
			struct djp_site *s = &o->sites[i];
			if (!djp_marker_match(p->pattern, s->m->provider, s->m->name))
				continue;
			if (o->closing)
				closing++;
			else if (!djp_site_carries(s, p->id))
				err = djp_site_vec_push(&sv, s);
		}
	if (!err)
		err = djp_change_probe(&sv, p, -1);
	if (matched)
		*matched = sv.n + closing;
	free(sv.v);
	return err;
}

int djp_probes_attach_all(void)
{
	DJP_LOCK_HELD();
	int first = 0;
	for (struct djp_probe *p = djp_probes; p; p = p->next) {
		int err = djp_probe_attach(p, NULL);
		first = first ? first : err;
	}
	return first;
}

int djp_probe_detach(int id)
{
	DJP_LOCK_HELD();
	struct site_vec sv = { 0 };
	int err = 0;
	for (struct djp_object *o = djp_objects; o && !err; o = o->next)
		for (size_t i = 0; i < o->nsites && !err; i++)
			if (djp_site_carries(&o->sites[i], id))
				err = djp_site_vec_push(&sv, &o->sites[i]);
	if (!err)
		err = djp_change_probe(&sv, NULL, id);
	free(sv.v);
	return err;
}

int djp_objects_detach(struct djp_object *const *objs, size_t nobjs)
{
	DJP_LOCK_HELD();
	struct site_vec sv = { 0 };
	const struct djp_handler_list **empty;
	int err = 0;
	for (size_t k = 0; k < nobjs && !err; k++)
		for (size_t i = 0; i < objs[k]->nsites && !err; i++)
			if (atomic_load(&objs[k]->sites[i].handlers))
				err = djp_site_vec_push(&sv, &objs[k]->sites[i]);
	if (!err && sv.n) {
		if (!(empty = calloc(sv.n, sizeof(*empty))))
			err = -ENOMEM;
		else
			err = djp_sites_apply(sv.v, sv.n, empty);
		free(empty);
	}
	free(sv.v);
	return err;
}

/* The engine's own probes get ids below -1 (-1 means none to
 * djp_list_make), out of the way of the caller's. */
static int next_internal_id = -2;

int djp__internal_probe(struct djp_point *pt, djp_handler_fn fn, unsigned flags, int *id)
{
	DJP_LOCK_HELD();
	struct djp_probe *p = calloc(1, sizeof(*p));
	int err;
	if (!p || !(p->pattern = strdup(""))) {
		free(p);
		djp_point_free(pt);
		return -ENOMEM;
	}
	p->point = pt;
	p->id = next_internal_id;
	p->fn = fn;
	p->flags = flags;
	if ((err = djp_probe_attach(p, NULL))) {
		djp_point_free(p->point);
		free(p->pattern);
		free(p);
		return err;
	}
	next_internal_id--;
	p->next = djp_probes;
	djp_probes = p;
	*id = p->id;
	return 0;
}

int djp__internal_probe_drop(int id)
{
	DJP_LOCK_HELD();
	int err;
	for (struct djp_probe **pp = &djp_probes; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct djp_probe *p = *pp;
			if ((err = djp_probe_detach(id)))
				return err;
			*pp = p->next;
			free(p->pattern);
			djp_point_free(p->point);
			free(p);
			return 0;
		}
	return -ENOENT;
}
