/* Helpers shared by the ring selftests: collect drained events. */
#ifndef DJP_TEST_RING_UTIL_H
#define DJP_TEST_RING_UTIL_H

#include <sched.h>
#include <sys/syscall.h>

#include "harness.h"
#include "lib/ring.h"

struct collected {
	size_t n, cap;
	struct djp_event **ev;
	uint32_t *tid;
	unsigned *slot;
};

static inline int collect_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct collected *c = arg;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->ev = realloc(c->ev, c->cap * sizeof(*c->ev));
		c->tid = realloc(c->tid, c->cap * sizeof(*c->tid));
		c->slot = realloc(c->slot, c->cap * sizeof(*c->slot));
		if (!c->ev || !c->tid || !c->slot)
			abort();
	}
	c->ev[c->n] = malloc(ev->size);
	memcpy(c->ev[c->n], ev, ev->size);
	c->tid[c->n] = tid;
	c->slot[c->n] = slot;
	c->n++;
	return 0;
}

static inline void collected_free(struct collected *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->ev[i]);
	free(c->ev);
	free(c->tid);
	free(c->slot);
	memset(c, 0, sizeof(*c));
}

static const struct djp_drain_ops collect_ops = { .event = collect_event };

static inline struct djp_region *small_region(unsigned nslots, size_t ring_size, unsigned nsubbufs, unsigned mode)
{
	struct djp_ring_opts o = { .sz = sizeof(o), .nslots = nslots, .ring_size = ring_size,
				   .nsubbufs = nsubbufs, .mode = mode };
	struct djp_region *r = djp_region_create(&o);
	if (!r)
		djp_test_fail(__FILE__, __LINE__, "djp_region_create: %s", strerror(errno));
	return r;
}

static inline uint32_t test_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Slots of r in state `state`. */
static inline unsigned ring_slots_in(const struct djp_region *r, uint32_t state)
{
	unsigned n = 0;
	for (unsigned i = 0; i < r->nslots; i++) {
		const struct djp_slot_hdr *s =
			(const struct djp_slot_hdr *)(r->base + DJP_REGION_HDR_SIZE + (uint64_t)i * r->slot_stride);
		n += (uint32_t)__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) == state;
	}
	return n;
}

/* After joining the threads that recorded into r: retire the slots they
 * left EXITING (djp_ring_reap_exited), which can be done once the kernel
 * has let go of their tids, a moment after a join returns (the join
 * wakes as the thread leaves its memory, before its tid is released). */
static inline void ring_reap_joined(const struct djp_region *r)
{
	for (long tries = 0; ring_slots_in(r, DJP_SLOT_EXITING); tries++) {
		if (tries > 1000000)
			djp_test_fail(__FILE__, __LINE__, "%u slots of exited threads never retired",
				      ring_slots_in(r, DJP_SLOT_EXITING));
		djp_ring_reap_exited();
		sched_yield();
	}
}

/* A payload checksum: detects a torn or mixed event. */
static inline uint64_t payload_sum(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 32);
}

#endif
