/*
 * A drain in time order.
 *
 * A drain reads one ring after another: a thread's events, then the next
 * thread's (or CPU's).  Each ring is in time order by itself, but the
 * drain as a whole is not, and a consumer wants the events of every ring
 * interleaved as they happened.  So a drain copies each record into one
 * growing arena (the ring's slot is reused as soon as the drain has moved
 * past it) and notes its timestamp and place in an index; at the end of
 * the drain the index, not the records, is sorted.  Two events with the
 * same timestamp keep the order the drain met them in (a ring's own order
 * for one thread), which qsort alone would not promise.  The memory is
 * kept from one drain to the next.
 */
#include <stdlib.h>
#include <string.h>

#include "order.h"
#include "tools/djp/grow.h"

void djp_order_reset(struct djp_order *o)
{
	o->len = 0;
	o->n = 0;
}

void *djp_order_push(struct djp_order *o, uint64_t ts, uint32_t tag, size_t size)
{
	size_t need = (size + 7u) & ~(size_t)7u;
	void *rec;

	if (!djp_grow((void **)&o->arena, &o->cap, o->len + need, 1 << 20, 1) ||
	    !djp_grow((void **)&o->v, &o->capv, o->n + 1, 4096, sizeof(*o->v)))
		return NULL;
	rec = o->arena + o->len;
	o->v[o->n] = (struct djp_order_ent){ .ts = ts, .seq = o->n, .off = o->len, .tag = tag };
	o->n++;
	o->len += need;
	return rec;
}

static int by_time(const void *a, const void *b)
{
	const struct djp_order_ent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void djp_order_sort(struct djp_order *o)
{
	if (o->n > 1)
		qsort(o->v, o->n, sizeof(*o->v), by_time);
}

void djp_order_free(struct djp_order *o)
{
	free(o->arena);
	free(o->v);
	memset(o, 0, sizeof(*o));
}
