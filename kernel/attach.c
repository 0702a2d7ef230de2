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
 * one batch (kernel/site_lists.c, kernel/arm.c): all of its sites change,
 * or none does.  An instruction probe's sites are its points resolved
 * (kernel/points.c); a return probe's handlers go on their return sites
 * (kernel/retprobes.c).
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
#include "kernel/lock.h"
#include "kernel/probes.h"
#include "lib/marker_match.h"

struct djp_probe *djp_probes;

int djp_probe_attach(const struct djp_probe *p, size_t *matched)
{
	DJP_LOCK_HELD();
	struct site_vec sv = { 0 };
	size_t closing = 0;
	int err = 0;
	if (p->point) {
		/* an instruction probe makes its sites first; a return
		 * probe's handlers go on their return sites */
		err = djp_point_resolve(p, &sv, matched);
		if (!err)
			err = djp_point_is_return(p->point) ? djp_ret_attach(&sv, p) : djp_change_probe(&sv, p, -1);
		free(sv.v);
		return err;
	}
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
