/*
 * Slots handed on under churn (lib/ring.c, "Slots handed on"): threads
 * that start, record and end faster than a consumer drains, with fewer
 * slots than threads alive at once, more threads than cores, while the
 * consumer reads and recycles concurrently with the takers.  Every event
 * recorded (the record said 0) is delivered exactly once, under the tid of
 * the thread that recorded it, and the per-thread counts the consumer
 * reports (slot_done, and the live slots' at the end) add up to the events
 * recorded: none counted twice across an owner record, none dropped.
 */
#include <pthread.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "test_ring_util.h"

#define SPAWNERS 4
#define PER_SPAWNER 80
#define THREADS (SPAWNERS * PER_SPAWNER)
#define EVENTS 5

static struct djp_region *churn_region;
static atomic_long churn_recorded, churn_failed;

struct churn_seen {
	unsigned char seen[THREADS][EVENTS];
	long delivered, twice, wrong_tid, bad;
	uint64_t produced; /* from the slots' counts */
};

static void *churn_thread(void *arg)
{
	uint64_t a[3] = { test_gettid(), (uint64_t)(uintptr_t)arg, 0 };

	for (a[2] = 0; a[2] < EVENTS; a[2]++) {
		if (djp_ring_record(churn_region, 7, a, 3, 0, 0) == 0)
			atomic_fetch_add(&churn_recorded, 1);
		else
			atomic_fetch_add(&churn_failed, 1);
	}
	return NULL;
}

static void *spawner(void *arg)
{
	unsigned base = (unsigned)(uintptr_t)arg * PER_SPAWNER;

	for (unsigned i = 0; i < PER_SPAWNER; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, churn_thread, (void *)(uintptr_t)(base + i)) == 0)
			pthread_join(th, NULL);
	}
	return NULL;
}

static int churn_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct churn_seen *s = arg;

	(void)slot;
	if (ev->marker_id != 7 || ev->nargs != 3 || ev->args[1] >= THREADS || ev->args[2] >= EVENTS) {
		s->bad++;
		return 0;
	}
	if (ev->args[0] != tid)
		s->wrong_tid++;
	if (s->seen[ev->args[1]][ev->args[2]]++)
		s->twice++;
	s->delivered++;
	return 0;
}

static void churn_done(void *arg, const struct djp_slot_stats *st)
{
	((struct churn_seen *)arg)->produced += st->produced;
}

TEST_TIMEOUT(ring_slots_handed_on_under_churn_lose_and_misattribute_nothing, 120)
{
	struct djp_ring_opts o = { .sz = sizeof(o), .nslots = 4, .ring_size = 65536, .nsubbufs = 2 };
	struct djp_drain_ops ops = { .event = churn_event, .slot_done = churn_done };
	static struct churn_seen s;
	struct djp_consumer *c;
	pthread_t sp[SPAWNERS];
	bool joined[SPAWNERS] = { false };
	unsigned round = 0;

	CHECK((churn_region = djp_region_create(&o)) != NULL);
	CHECK((c = djp_consumer_open(djp_region_fd(churn_region))) != NULL);
	for (uintptr_t i = 0; i < SPAWNERS; i++)
		CHECK_EQ(pthread_create(&sp[i], NULL, spawner, (void *)i), 0);
	/* a consumer that falls behind now and then, as a tool on a busy
	 * machine does */
	for (bool running = true; running; round++) {
		running = false;
		for (unsigned i = 0; i < SPAWNERS; i++)
			if (!joined[i] && !(joined[i] = pthread_tryjoin_np(sp[i], NULL) == 0))
				running = true;
		CHECK(djp_consumer_drain(c, &ops, &s) >= 0);
		if (round % 8 == 0)
			usleep(2000);
	}
	for (int i = 0; i < 100 && (djp_ring_reap_exited(), djp_consumer_drain(c, &ops, &s) > 0 || i < 3); i++)
		usleep(1000);
	for (unsigned i = 0; i < djp_consumer_slots_used(c); i++) {
		struct djp_slot_stats st;
		CHECK_EQ(djp_consumer_slot_stats(c, i, &st), 0);
		if (st.state != DJP_SLOT_FREE)
			s.produced += st.produced;
	}
	printf("# %ld events recorded, %ld lost for want of a slot or room, %u drains\n",
	       (long)churn_recorded, (long)churn_failed, round);
	CHECK_EQ(churn_recorded + churn_failed, THREADS * EVENTS);
	CHECK_EQ(s.bad, 0);
	CHECK_EQ(s.twice, 0);
	CHECK_EQ(s.wrong_tid, 0);
	CHECK_EQ(s.delivered, churn_recorded);
	CHECK_EQ(s.produced, (uint64_t)churn_recorded);
	CHECK(churn_recorded > 0);
	djp_consumer_close(c);
	djp_region_destroy(churn_region);
}
