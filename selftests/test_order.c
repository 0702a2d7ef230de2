/*
 * A drain's time order (tools/djp/source/order.c), which the process
 * sources and the kernel source hand their events out in: records sorted
 * by timestamp, those of one timestamp in the order they were pushed (a
 * ring's own order, which a sort that does not promise stability could
 * swap), each record's bytes intact after the arena has grown and moved,
 * and a reset drain starting empty.  The tool's source is compiled in
 * here: the selftests do not link the tool.
 */
#include "harness.h"
#include "tools/djp/source/order.c"

struct rec {
	uint64_t ts;
	uint32_t ring, seq; /* the ring it came from and its place there */
	char pad[40];	    /* records of several sizes */
};

/* Two drains of 4 rings of 20000 events each (more than the arena's first
 * MiB): ring r's k-th event at time k / 3 * 4 + r % 2, so that rings 0 and
 * 2 (and 1 and 3) share every timestamp, and each ring three events a
 * timestamp. */
TEST(order_sorts_by_time_and_keeps_pushes_of_one_time_in_order)
{
	struct djp_order o = { 0 };
	const uint32_t nrings = 4, per = 20000;

	for (int drain = 0; drain < 2; drain++) {
		djp_order_reset(&o);
		CHECK_EQ(o.n, 0);
		for (uint32_t r = 0; r < nrings; r++)
			for (uint32_t k = 0; k < per; k++) {
				size_t size = sizeof(struct rec) - (k % 5) * 8;
				struct rec *x = djp_order_push(&o, k / 3 * 4 + r % 2, r, size);
				CHECK(x != NULL);
				CHECK_EQ((uintptr_t)x % 8, 0);
				x->ts = k / 3 * 4 + r % 2;
				x->ring = r;
				x->seq = k;
			}
		CHECK_EQ(o.n, (size_t)nrings * per);
		CHECK(o.cap > (1u << 20)); /* it grew */
		djp_order_sort(&o);
		for (size_t i = 0; i < o.n; i++) {
			const struct rec *x = djp_order_at(&o, i);
			CHECK_EQ(x->ts, o.v[i].ts);
			CHECK_EQ(x->ring, o.v[i].tag);
			if (i == 0)
				continue;
			const struct rec *y = djp_order_at(&o, i - 1);
			CHECK(y->ts <= x->ts);
			/* one time: pushed first, first out (ring 0 before 2,
			 * and a ring's own order) */
			if (y->ts == x->ts && (y->ring > x->ring || (y->ring == x->ring && y->seq >= x->seq)))
				djp_test_fail(__FILE__, __LINE__, "at %zu: ring %u #%u before ring %u #%u, both at %llu", i,
					      y->ring, y->seq, x->ring, x->seq, (unsigned long long)x->ts);
		}
	}
	djp_order_free(&o);
	CHECK(o.arena == NULL && o.v == NULL);
}
