/*
 * Giving sites new handler lists: the piece every attach and detach path
 * ends in (kernel/attach.c, the points, the return probes, the retake).
 * A vector of sites is collected first; each site then gets a new list,
 * its current one with a probe's handler added or a probe's gone, sealed
 * (kernel/dispatch.c picks what the trampolines call), and the whole
 * vector goes to the batch code as one batch (kernel/arm.c): all of its
 * sites change, or none does.  An SDT nop about to be armed for the first
 * time is widened for a jump before the batch decides its state
 * (kernel/sdt_widen.c).  Lock held.
 */
#include <errno.h>
#include <stdlib.h>

#include "kernel/arming.h"
#include "kernel/hit.h"
#include "kernel/lock.h"
#include "kernel/probes.h"

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
