/*
 * A drain in time order (order.c): the records a drain copies out of the
 * rings, kept in one arena and sorted by timestamp before they are handed
 * out.  The process sources (tools/djp/session/session.c, a process's
 * threads) and the kernel source (kernel.c, the CPUs) both use it.
 */
#ifndef DJP_SOURCE_ORDER_H
#define DJP_SOURCE_ORDER_H

#include <stddef.h>
#include <stdint.h>

struct djp_order_ent {
	uint64_t ts;  /* the sort key */
	uint64_t seq; /* the order of push: breaks ties */
	size_t off;   /* the record's place in the arena */
	uint32_t tag; /* the caller's (a process's thread id) */
};

struct djp_order {
	uint8_t *arena;
	size_t len, cap; /* bytes of the arena used, held */
	struct djp_order_ent *v;
	size_t n, capv;
};

/* Empty it for the next drain (the memory kept). */
void djp_order_reset(struct djp_order *o);
/* Room for a record of size bytes at time ts, 8-byte aligned, to fill
 * before the next push; NULL (nothing pushed) when there is no memory. */
void *djp_order_push(struct djp_order *o, uint64_t ts, uint32_t tag, size_t size);
/* Sort the records by ts, those of equal ts in the order they came. */
void djp_order_sort(struct djp_order *o);
void djp_order_free(struct djp_order *o);

/* The i-th record, once sorted. */
static inline void *djp_order_at(const struct djp_order *o, size_t i)
{
	return o->arena + o->v[i].off;
}

#endif
