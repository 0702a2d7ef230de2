/* Ring buffers, single thread: every field round-trips; slots are claimed,
 * retired and recycled; recursion is a counted loss. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_ring_util.h"

TEST(ring_roundtrip_every_field)
{
	struct djp_region *r = small_region(4, 65536, 4, DJP_RING_DISCARD);
	uint64_t a3[3] = { 1, UINT64_MAX, 0x123456789abcdef0ull }, a16[16];
	uint64_t before, after;
	struct collected got = { 0 };
	struct djp_slot_stats st;
	struct djp_consumer *c;

	for (int i = 0; i < 16; i++)
		a16[i] = (uint64_t)i * 0x0101010101010101ull;
	before = djp_clock_raw();
	CHECK_EQ(djp_ring_record(r, 42, a3, 3, 0, 0), 0);
	CHECK_EQ(djp_ring_record(r, 7, NULL, 0, 0, 0), 0);
	CHECK_EQ(djp_ring_record(r, 0xfffffffe, a16, 16, 0, 0), 0);
	CHECK_EQ(djp_ring_record(r, 9, a16, 17, 0, 0), -EINVAL);
	after = djp_clock_raw();

	c = djp_consumer_open(djp_region_fd(r));
	CHECK(c);
	CHECK_EQ(djp_consumer_nslots(c), 4);
	CHECK_EQ(djp_consumer_mode(c), DJP_RING_DISCARD);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 3);
	CHECK_EQ(got.n, 3);
	CHECK_EQ(got.ev[0]->marker_id, 42);
	CHECK_EQ(got.ev[0]->size, 16 + 3 * 8);
	CHECK_EQ(got.ev[0]->nargs, 3);
	CHECK_EQ(got.ev[0]->flags, 0);
	for (int i = 0; i < 3; i++)
		CHECK(got.ev[0]->args[i] == a3[i]);
	CHECK_EQ(got.ev[1]->marker_id, 7);
	CHECK_EQ(got.ev[1]->size, 16);
	CHECK_EQ(got.ev[1]->nargs, 0);
	CHECK(got.ev[2]->marker_id == 0xfffffffe);
	CHECK_EQ(got.ev[2]->size, 16 + 16 * 8);
	CHECK_EQ(got.ev[2]->nargs, 16);
	for (int i = 0; i < 16; i++)
		CHECK(got.ev[2]->args[i] == a16[i]);
	for (size_t i = 0; i < got.n; i++) {
		CHECK(got.ev[i]->timestamp >= before && got.ev[i]->timestamp <= after);
		CHECK(i == 0 || got.ev[i]->timestamp >= got.ev[i - 1]->timestamp);
		CHECK_EQ(got.tid[i], test_gettid());
		CHECK_EQ(got.slot[i], got.slot[0]);
	}
	/* the timestamp converts to CLOCK_MONOTONIC ns of about now */
	{
		uint64_t ns = djp_clock_to_ns(djp_consumer_clock(c), got.ev[0]->timestamp);
		uint64_t now = djp_clock_monotonic_ns();
		CHECK(ns <= now + 1000000 && ns + 1000000000ull > now); /* TSC calibration: 1 ms of slack */
	}
	CHECK_EQ(djp_consumer_slot_stats(c, got.slot[0], &st), 0);
	CHECK_EQ(st.tid, test_gettid());
	CHECK_EQ(st.state, DJP_SLOT_ACTIVE);
	CHECK_EQ(st.produced, 3);
	CHECK_EQ(st.delivered, 3);
	CHECK_EQ(st.lost_full, 1); /* the 17-argument one */
	CHECK_EQ(st.lost_nested, 0);
	CHECK_EQ(st.corrupt, 0);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 0);
	CHECK_EQ(djp_consumer_slot_stats(c, 4, &st), -EINVAL);
	collected_free(&got);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

TEST(ring_bad_options_refused)
{
	struct djp_ring_opts o = { .sz = sizeof(o), .ring_size = 3000 };
	CHECK(!djp_region_create(&o) && errno == EINVAL);
	o = (struct djp_ring_opts){ .sz = sizeof(o), .ring_size = 4096, .nsubbufs = 8 }; /* 512-byte sub-buffers */
	CHECK(!djp_region_create(&o) && errno == EINVAL);
	o = (struct djp_ring_opts){ .sz = sizeof(o), .ring_size = 4096, .nsubbufs = 1, .mode = DJP_RING_OVERWRITE };
	CHECK(!djp_region_create(&o) && errno == EINVAL);
	o = (struct djp_ring_opts){ .sz = sizeof(o), .mode = 5 };
	CHECK(!djp_region_create(&o) && errno == EINVAL);
	o = (struct djp_ring_opts){ .sz = 4 };
	CHECK(!djp_region_create(&o) && errno == EINVAL);
}

TEST(ring_default_geometry)
{
	struct djp_region *r = djp_region_create(NULL);
	CHECK(r);
	CHECK_EQ(r->nslots, 256);
	CHECK_EQ(r->ring_size, 1 << 20);
	CHECK_EQ(r->mode, DJP_RING_DISCARD);
	CHECK_EQ(r->str_bound, DJP_RING_STR_BOUND);
	djp_region_destroy(r);
}

static void *record_five_and_exit(void *arg)
{
	struct djp_region *r = arg;
	for (uint64_t i = 0; i < 5; i++)
		if (djp_ring_record(r, 1, &i, 1, 0, 0))
			return (void *)1;
	return (void *)(uintptr_t)test_gettid();
}

struct done_log {
	int n;
	struct djp_slot_stats st[8];
};

static void log_done(void *arg, const struct djp_slot_stats *st)
{
	struct done_log *d = arg;
	if (d->n < 8)
		d->st[d->n++] = *st;
}

static int count_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	return 0;
}

TEST(ring_thread_exit_retires_and_consumer_recycles)
{
	struct djp_region *r = small_region(2, 8192, 2, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct djp_drain_ops ops = { .event = count_event, .slot_done = log_done };
	struct done_log d = { 0 };
	struct djp_slot_stats st;
	pthread_t th;
	void *ret;

	CHECK(c);
	for (int round = 0; round < 5; round++) {
		CHECK_EQ(pthread_create(&th, NULL, record_five_and_exit, r), 0);
		CHECK_EQ(pthread_join(th, &ret), 0);
		CHECK((uintptr_t)ret > 1);
		/* exited: its slot is EXITING, read as an active one */
		CHECK_EQ(ring_slots_in(r, DJP_SLOT_EXITING), 1);
		CHECK_EQ(djp_consumer_drain(c, &ops, &d), 5);
		CHECK_EQ(d.n, round);
		/* gone: retired, then read to the end and recycled */
		ring_reap_joined(r);
		CHECK_EQ(djp_consumer_drain(c, &ops, &d), 0);
		CHECK_EQ(d.n, round + 1);
		CHECK_EQ(d.st[round].tid, (uint32_t)(uintptr_t)ret);
		CHECK_EQ(d.st[round].state, DJP_SLOT_RETIRED);
		CHECK_EQ(d.st[round].produced, 5);
		CHECK_EQ(d.st[round].delivered, 5);
		CHECK_EQ(djp_consumer_slot_stats(c, d.st[round].slot, &st), 0);
		CHECK_EQ(st.state, DJP_SLOT_FREE);
		CHECK_EQ(st.produced, 0);
	}
	djp_consumer_close(c);
	djp_region_destroy(r);
}

/* A thread that records on its way out: in the destructor of a key made
 * after the ring's, which glibc runs after the ring's in each of its
 * rounds, the last one included. */
static pthread_key_t late_key;
static struct djp_region *late_region;

static void late_dtor(void *v)
{
	uint64_t round = (uint64_t)(uintptr_t)v;

	djp_ring_record(late_region, 2, &round, 1, 0, 0);
	if (round < PTHREAD_DESTRUCTOR_ITERATIONS)
		pthread_setspecific(late_key, (void *)(uintptr_t)(round + 1));
}

static void *record_then_on_the_way_out(void *arg)
{
	uint64_t x = 0;

	djp_ring_record(arg, 1, &x, 1, 0, 0);
	pthread_setspecific(late_key, (void *)1);
	return NULL;
}

struct exit_log {
	struct collected got;
	struct done_log d;
};

static int exit_log_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	return collect_event(&((struct exit_log *)arg)->got, ev, tid, slot);
}

static void exit_log_done(void *arg, const struct djp_slot_stats *st)
{
	log_done(&((struct exit_log *)arg)->d, st);
}

TEST(ring_records_during_thread_exit_stay_in_the_threads_slot)
{
	enum { THREADS = 40, PER = 1 + PTHREAD_DESTRUCTOR_ITERATIONS };
	struct djp_region *r = late_region = small_region(4, 8192, 2, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct djp_drain_ops ops = { .event = exit_log_event, .slot_done = exit_log_done };
	struct exit_log x = { 0 };
	struct collected *got = &x.got;
	struct done_log *d = &x.d;
	pthread_t th;

	CHECK(c);
	CHECK_EQ(pthread_key_create(&late_key, late_dtor), 0);
	for (int i = 0; i < THREADS; i++) {
		CHECK_EQ(pthread_create(&th, NULL, record_then_on_the_way_out, r), 0);
		CHECK_EQ(pthread_join(th, NULL), 0);
		ring_reap_joined(r);
		d->n = 0;
		CHECK_EQ(djp_consumer_drain(c, &ops, &x), PER);
		/* every event of the thread, in one slot, recycled once */
		CHECK_EQ(got->n, PER);
		for (size_t k = 0; k < got->n; k++) {
			CHECK_EQ(got->slot[k], got->slot[0]);
			CHECK_EQ(got->tid[k], got->tid[0]);
			CHECK_EQ(got->ev[k]->args[0], k);
		}
		CHECK_EQ(d->n, 1);
		CHECK_EQ(d->st[0].produced, PER);
		CHECK_EQ(d->st[0].delivered, PER);
		CHECK_EQ(ring_slots_in(r, DJP_SLOT_FREE), 4);
		collected_free(got);
	}
	CHECK_EQ(djp_consumer_lost_noslot(c), 0);
	pthread_key_delete(late_key);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

/* A thread whose only record comes in glibc's last round of key
 * destructors, after the ring's: its slot is never marked EXITING. */
static pthread_key_t last_key;
static struct djp_region *last_region;

static void last_dtor(void *v)
{
	uint64_t round = (uint64_t)(uintptr_t)v;

	if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
		pthread_setspecific(last_key, (void *)(uintptr_t)(round + 1));
		return;
	}
	uint64_t a[2] = { round, (uint64_t)test_gettid() };
	djp_ring_record(last_region, 3, a, 2, 0, 0);
}

static void *record_only_in_the_last_round(void *arg)
{
	(void)arg;
	pthread_setspecific(last_key, (void *)1);
	return (void *)(uintptr_t)test_gettid();
}

/* Until the kernel has let go of tid (a join returns a moment before). */
static void wait_tid_gone(uint32_t tid)
{
	for (long tries = 0; syscall(SYS_tgkill, (long)getpid(), (long)tid, 0L) == 0; tries++) {
		if (tries > 1000000)
			djp_test_fail(__FILE__, __LINE__, "thread %u never went", tid);
		sched_yield();
	}
}

/* The slots of threads gone are taken over, ring and unread events
 * included, by a thread that finds none free ("Slots handed on"): every
 * event arrives with the tid of the thread that recorded it, and each
 * thread's counts come once.  Without the owner record the third thread's
 * event came under the first's tid; without the takeover it was lost. */
TEST(ring_slots_of_threads_gone_are_taken_back_when_none_is_free)
{
	struct djp_region *r = last_region = small_region(2, 8192, 2, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct djp_drain_ops ops = { .event = exit_log_event, .slot_done = exit_log_done };
	struct exit_log x = { 0 };
	uint32_t tids[4];
	pthread_t th;
	void *ret;

	CHECK(c);
	CHECK_EQ(pthread_key_create(&last_key, last_dtor), 0);
	/* two threads take the two slots and leave them ACTIVE, unread */
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(pthread_create(&th, NULL, record_only_in_the_last_round, NULL), 0);
		CHECK_EQ(pthread_join(th, &ret), 0);
		wait_tid_gone(tids[i] = (uint32_t)(uintptr_t)ret);
	}
	CHECK_EQ(ring_slots_in(r, DJP_SLOT_ACTIVE), 2);
	/* the third finds none free: the two are retired and it takes one
	 * over, the first thread's event still in it */
	CHECK_EQ(pthread_create(&th, NULL, record_only_in_the_last_round, NULL), 0);
	CHECK_EQ(pthread_join(th, &ret), 0);
	wait_tid_gone(tids[2] = (uint32_t)(uintptr_t)ret);
	CHECK_EQ(djp_consumer_lost_noslot(c), 0);
	CHECK_EQ(ring_slots_in(r, DJP_SLOT_RETIRED), 1);
	CHECK_EQ(ring_slots_in(r, DJP_SLOT_ACTIVE), 1);
	CHECK_EQ(djp_consumer_drain(c, &ops, &x), 3);
	for (size_t i = 0; i < x.got.n; i++) {
		CHECK_EQ(x.got.ev[i]->nargs, 2);
		CHECK_EQ(x.got.tid[i], (uint32_t)x.got.ev[i]->args[1]);
	}
	/* the taken slot's first owner, by its record, and the other slot */
	CHECK_EQ(x.d.n, 2);
	for (int i = 0; i < 2; i++) {
		CHECK(x.d.st[i].tid == tids[0] || x.d.st[i].tid == tids[1]);
		CHECK_EQ(x.d.st[i].produced, 1);
		CHECK_EQ(x.d.st[i].delivered, 1);
		CHECK_EQ(x.d.st[i].state, DJP_SLOT_RETIRED);
	}
	CHECK(x.d.st[0].tid != x.d.st[1].tid);
	CHECK_EQ(ring_slots_in(r, DJP_SLOT_FREE), 1);
	/* the next has the free one; the taker's slot counts its own event */
	CHECK_EQ(pthread_create(&th, NULL, record_only_in_the_last_round, NULL), 0);
	CHECK_EQ(pthread_join(th, &ret), 0);
	wait_tid_gone(tids[3] = (uint32_t)(uintptr_t)ret);
	CHECK_EQ(djp_consumer_drain(c, &ops, &x), 1);
	CHECK_EQ(x.got.tid[3], tids[3]);
	CHECK_EQ(djp_consumer_lost_noslot(c), 0);
	for (unsigned i = 0; i < 2; i++) {
		struct djp_slot_stats st;
		CHECK_EQ(djp_consumer_slot_stats(c, i, &st), 0);
		CHECK_EQ(st.produced, 1);
		CHECK_EQ(st.delivered, 1);
		CHECK(st.tid == tids[2] || st.tid == tids[3]);
	}
	collected_free(&x.got);
	pthread_key_delete(last_key);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

/* A taker whose ring has no room for the owner record does not take it:
 * the event is lost for want of a slot, and the old owner's events stay
 * its own. */
TEST(ring_full_slot_of_a_thread_gone_is_not_taken)
{
	struct djp_region *r = last_region = small_region(1, 8192, 2, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	uint64_t a[2] = { 0, 0 };
	pthread_t th;
	void *ret;
	long n = 0;

	CHECK(c);
	CHECK_EQ(pthread_key_create(&last_key, last_dtor), 0);
	/* fill the one slot, then let its thread go */
	while (djp_ring_record(r, 1, a, 2, 0, 0) == 0)
		n++;
	djp_ring_thread_retire();
	CHECK_EQ(pthread_create(&th, NULL, record_only_in_the_last_round, NULL), 0);
	CHECK_EQ(pthread_join(th, &ret), 0);
	CHECK_EQ(djp_consumer_lost_noslot(c), 1);
	CHECK_EQ(ring_slots_in(r, DJP_SLOT_RETIRED), 1);
	CHECK_EQ(djp_consumer_drain(c, &(struct djp_drain_ops){ .event = collect_event }, &got), n);
	for (size_t i = 0; i < got.n; i++)
		CHECK_EQ(got.tid[i], test_gettid());
	collected_free(&got);
	pthread_key_delete(last_key);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

static void *record_one(void *arg)
{
	uint64_t x = 1;
	return (void *)(intptr_t)djp_ring_record(arg, 1, &x, 1, 0, 0);
}

TEST(ring_no_free_slot_is_counted)
{
	struct djp_region *r = small_region(1, 8192, 2, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	pthread_t th;
	void *ret;
	uint64_t x = 1;

	CHECK(c);
	CHECK_EQ(djp_ring_record(r, 1, &x, 1, 0, 0), 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(pthread_create(&th, NULL, record_one, r), 0);
		CHECK_EQ(pthread_join(th, &ret), 0);
		CHECK_EQ((intptr_t)ret, -ENOSPC);
	}
	CHECK_EQ(djp_consumer_lost_noslot(c), 3);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

TEST(ring_alternating_regions_keep_their_slots)
{
	struct djp_region *a = small_region(4, 8192, 2, DJP_RING_DISCARD);
	struct djp_region *b = small_region(4, 8192, 2, DJP_RING_OVERWRITE);
	struct djp_consumer *ca = djp_consumer_open(djp_region_fd(a)), *cb = djp_consumer_open(djp_region_fd(b));
	struct collected ga = { 0 }, gb = { 0 };

	CHECK(ca && cb);
	for (uint64_t i = 0; i < 20; i++) {
		CHECK_EQ(djp_ring_record(a, 1, &i, 1, 0, 0), 0);
		CHECK_EQ(djp_ring_record(b, 2, &i, 1, 0, 0), 0);
	}
	CHECK_EQ(djp_consumer_drain(ca, &collect_ops, &ga), 20);
	CHECK_EQ(djp_consumer_drain(cb, &collect_ops, &gb), 20);
	for (size_t i = 0; i < 20; i++) {
		CHECK_EQ(ga.ev[i]->args[0], i);
		CHECK_EQ(gb.ev[i]->args[0], i);
		CHECK_EQ(ga.slot[i], ga.slot[0]); /* one slot each, not one per switch */
		CHECK_EQ(gb.slot[i], gb.slot[0]);
	}
	collected_free(&ga);
	collected_free(&gb);
	djp_consumer_close(ca);
	djp_consumer_close(cb);
	djp_region_destroy(a);
	djp_region_destroy(b);
}

TEST(ring_fork_child_takes_its_own_slot)
{
	struct djp_region *r = small_region(4, 8192, 2, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct collected got = { 0 };
	uint64_t x = 1;
	int st;
	pid_t pid;

	CHECK(c);
	CHECK_EQ(djp_ring_record(r, 1, &x, 1, 0, 0), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		x = 2;
		_exit(djp_ring_record(r, 2, &x, 1, 0, 0) ? 1 : 0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &got), 2);
	CHECK(got.slot[0] != got.slot[1]);
	CHECK(got.tid[0] != got.tid[1]);
	collected_free(&got);
	djp_consumer_close(c);
	djp_region_destroy(r);
}

/* ---- recursion ---- */

static struct djp_region *sig_region;
static volatile uint64_t sig_attempts, sig_ok, sig_nested;

static void record_from_signal(int sig)
{
	uint64_t a[2] = { 2, sig_attempts };
	int rc = djp_ring_record(sig_region, 2, a, 2, 0, 0);
	sig_attempts++;
	sig_ok += rc == 0;
	sig_nested += rc == -EAGAIN;
}

TEST(ring_nested_record_is_counted_not_corrupting)
{
	struct djp_region *r = small_region(2, 1 << 20, 4, DJP_RING_OVERWRITE);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	struct sigaction sa = { .sa_handler = record_from_signal };
	struct djp_slot_stats st;
	uint64_t main_ok = 0, main_attempts = 0, delivered = 0, t0;
	long n;

	CHECK(c);
	/* Deterministic: a record while one is in progress is refused. */
	CHECK_EQ(djp_ring_record(r, 1, &main_ok, 1, 0, 0), 0);
	djp_ring_tls.nesting = 1;
	CHECK_EQ(djp_ring_record(r, 1, &main_ok, 1, 0, 0), -EAGAIN);
	djp_ring_tls.nesting = 0;
	CHECK_EQ(djp_consumer_drain(c, &collect_ops, &(struct collected){ 0 }), 1);
	CHECK_EQ(djp_consumer_slot_stats(c, 1u - (djp_ring_tls.slot == (void *)(r->base + DJP_REGION_HDR_SIZE)), &st), 0);
	CHECK_EQ(st.tid, test_gettid());
	CHECK_EQ(st.lost_nested, 1);

	/* Statistical: a timer signal records while the thread records. */
	sig_region = r;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);
	CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
	t0 = djp_clock_monotonic_ns();
	while (djp_clock_monotonic_ns() - t0 < 300000000ull) {
		for (int i = 0; i < 1000; i++) {
			uint64_t a[2] = { 1, main_attempts++ };
			main_ok += djp_ring_record(r, 1, a, 2, 0, 0) == 0;
		}
		n = djp_consumer_drain(c, &(struct djp_drain_ops){ .event = count_event }, NULL);
		CHECK(n >= 0);
		delivered += (uint64_t)n;
	}
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_IGN);
	CHECK(sig_attempts > 0);
	CHECK_EQ(main_ok, main_attempts);
	CHECK_EQ(sig_ok + sig_nested, sig_attempts);
	delivered += (uint64_t)djp_consumer_drain(c, &(struct djp_drain_ops){ .event = count_event }, NULL);
	for (unsigned i = 0; i < 2; i++) {
		CHECK_EQ(djp_consumer_slot_stats(c, i, &st), 0);
		if (st.tid != test_gettid())
			continue;
		CHECK_EQ(st.lost_nested, 1 + sig_nested);
		CHECK_EQ(st.produced, 1 + main_ok + sig_ok);
		/* This thread drains after each 1000 records (a few more from the
		 * timer), far less than the 1 MiB ring: none was overwritten,
		 * and every one is delivered, snapshot after snapshot. */
		CHECK_EQ(st.overwritten, 0);
		CHECK_EQ(st.delivered, st.produced);
		CHECK_EQ(st.corrupt, 0);
	}
	CHECK_EQ(delivered, main_ok + sig_ok);
	djp_consumer_close(c);
	djp_region_destroy(r);
}
