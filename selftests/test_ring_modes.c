/* Ring buffers: discard mode counts every drop exactly and never blocks;
 * overwrite mode keeps the newest events and its snapshots are consistent
 * while the producer runs. */
#include <pthread.h>

#include "test_ring_util.h"

static void fill_and_count(unsigned nargs, unsigned expect_fit)
{
	struct djp_region *r = small_region(2, 4096, 4, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	struct djp_slot_stats st;
	uint64_t a[4] = { 0 }, ok = 0, dropped = 0, t0;
	unsigned slot;

	CHECK(c);
	t0 = djp_clock_monotonic_ns();
	for (uint64_t i = 0; i < 1000; i++) {
		a[0] = i;
		int rc = djp_ring_record(r, 1, a, nargs, 0, 0);
		CHECK(rc == 0 || rc == -ENOBUFS);
		ok += rc == 0;
		dropped += rc == -ENOBUFS;
	}
	CHECK(djp_clock_monotonic_ns() - t0 < 1000000000ull); /* never waits (no one drains) */
	CHECK_EQ(ok, expect_fit);
	CHECK_EQ(dropped, 1000 - expect_fit);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), expect_fit);
	for (size_t i = 0; i < got.n; i++)
		CHECK_EQ(got.ev[i]->args[0], i); /* the oldest kept, in order */
	slot = got.slot[0];
	CHECK_EQ(djp_consumer_slot_stats(c, slot, &st), 0);
	CHECK_EQ(st.lost_full, 1000 - expect_fit);
	CHECK_EQ(st.produced, expect_fit);
	/* Room again once read; and again it fills to exactly one ring. */
	for (uint64_t i = 0; i < 1000; i++) {
		a[0] = 5000 + i;
		ok += djp_ring_record(r, 1, a, nargs, 0, 0) == 0;
	}
	CHECK_EQ(ok, 2 * expect_fit);
	collected_free(&got);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), expect_fit);
	CHECK_EQ(got.ev[0]->args[0], 5000);
	CHECK_EQ(djp_consumer_slot_stats(c, slot, &st), 0);
	CHECK_EQ(st.lost_full, 2 * (1000 - expect_fit));
	CHECK_EQ(st.delivered + st.lost_full, 2000);
	collected_free(&got);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

TEST(ring_discard_full_counts_lost_exactly)
{
	/* 4 sub-buffers of 1024 bytes: 32-byte events fill them exactly ... */
	fill_and_count(2, 4 * 32);
	/* ... 40-byte ones leave 24 bytes of padding in each (25 a piece) */
	fill_and_count(3, 4 * 25);
}

TEST(ring_overwrite_keeps_newest)
{
	struct djp_region *r = small_region(2, 16384, 4, DJP_RING_OVERWRITE);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	struct djp_slot_stats st;
	uint64_t a[2];

	CHECK(c);
	for (uint64_t i = 0; i < 10000; i++) {
		a[0] = i;
		a[1] = payload_sum(i, 0);
		CHECK_EQ(djp_ring_record(r, 1, a, 2, 0, 0), 0);
	}
	CHECK(djp_consumer_drain(c, &collect_ops, &got) > 0);
	/* 4096-byte sub-buffers hold 128 events; 10000 = 78 * 128 + 16, so
	 * the snapshot holds three full sub-buffers and the 16 newest. */
	CHECK_EQ(got.n, 3 * 128 + 16);
	for (size_t i = 0; i < got.n; i++) {
		CHECK_EQ(got.ev[i]->args[0], 10000 - got.n + i);
		CHECK_EQ(got.ev[i]->args[1], payload_sum(got.ev[i]->args[0], 0));
	}
	CHECK_EQ(djp_consumer_slot_stats(c, got.slot[0], &st), 0);
	CHECK_EQ(st.produced, 10000);
	CHECK_EQ(st.delivered, got.n);
	CHECK_EQ(st.overwritten, 10000 - got.n);
	CHECK_EQ(st.lost_full, 0);
	/* A second snapshot delivers only what is new. */
	collected_free(&got);
	a[0] = 10000;
	a[1] = payload_sum(10000, 0);
	CHECK_EQ(djp_ring_record(r, 1, a, 2, 0, 0), 0);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 1);
	CHECK_EQ(got.ev[0]->args[0], 10000);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 0);
	collected_free(&got);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

struct producer {
	struct djp_region *r;
	volatile int stop;
	uint64_t produced;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	uint64_t a[4];
	while (!p->stop) {
		uint64_t i = p->produced;
		a[0] = i;
		a[1] = i * 3;
		a[2] = ~i;
		a[3] = payload_sum(i, a[1] ^ a[2]);
		/* vary the size so that padding and wrap points move */
		if (djp_ring_record(p->r, (uint32_t)(i & 7), a, 2 + (unsigned)(i % 3) * 1, 0, 0) != 0)
			abort();
		p->produced++;
	}
	return NULL;
}

struct checker {
	uint64_t next;	    /* lowest sequence number still acceptable */
	uint64_t delivered, bad, snapshots;
	int64_t prev;	    /* previous event in this snapshot, -1 at its start */
	uint64_t gaps_inside;
	struct djp_slot_stats final;
	int done;
};

static void slot_done(void *arg, const struct djp_slot_stats *st)
{
	struct checker *k = arg;
	k->final = *st;
	k->done++;
}

static int check_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct checker *k = arg;
	uint64_t i = ev->args[0];
	unsigned nargs = 2 + (unsigned)(i % 3);

	if (ev->nargs != nargs || ev->size != 16 + 8 * nargs || ev->marker_id != (i & 7) || ev->args[1] != i * 3 ||
	    (nargs > 2 && ev->args[2] != ~i) || (nargs > 3 && ev->args[3] != payload_sum(i, i * 3 ^ ~i)))
		k->bad++;
	if (i < k->next)
		k->bad++;
	if (k->prev >= 0 && i != (uint64_t)k->prev + 1)
		k->gaps_inside++;
	k->prev = (int64_t)i;
	k->next = i + 1;
	k->delivered++;
	return 0;
}

TEST(ring_overwrite_snapshot_consistent_while_producing)
{
	struct producer p = { .r = small_region(2, 16384, 4, DJP_RING_OVERWRITE) };
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(p.r));
	struct djp_drain_ops ops = { .event = check_event, .slot_done = slot_done };
	struct checker k = { 0 };
	struct djp_slot_stats st;
	pthread_t th;
	uint64_t t0;

	CHECK(c);
	CHECK_EQ(pthread_create(&th, NULL, produce, &p), 0);
	t0 = djp_clock_monotonic_ns();
	while (djp_clock_monotonic_ns() - t0 < 500000000ull) {
		k.prev = -1;
		CHECK(djp_consumer_drain(c, &ops, &k) >= 0);
		CHECK_EQ(k.gaps_inside, 0); /* a snapshot is one contiguous run */
		k.snapshots++;
	}
	p.stop = 1;
	CHECK_EQ(pthread_join(th, NULL), 0);
	ring_reap_joined(p.r);
	k.prev = -1;
	/* what came after the last snapshot (nothing, when the producer did
	 * not run between it and the stop: the count below says all came) */
	CHECK(djp_consumer_drain(c, &ops, &k) >= 0);
	CHECK_EQ(k.bad, 0);
	CHECK_EQ(k.gaps_inside, 0);
	CHECK_EQ(k.next, p.produced); /* the newest event is there */
	/* the producer thread has exited: its slot was read and recycled */
	CHECK_EQ(k.done, 1);
	st = k.final;
	CHECK_EQ(st.state, DJP_SLOT_RETIRED);
	CHECK_EQ(st.produced, p.produced);
	CHECK_EQ(st.delivered, k.delivered);
	CHECK_EQ(st.delivered + st.overwritten, p.produced);
	CHECK_EQ(st.corrupt, 0);
	CHECK(k.snapshots > 10);
	printf("# %llu produced, %llu delivered in %llu snapshots\n", (unsigned long long)p.produced,
	       (unsigned long long)k.delivered, (unsigned long long)k.snapshots);
	djp_consumer_close(c);
	djp_region_destroy(p.r);
}
