/*
 * The two ends of a thread's life as the engine sees it.
 *
 * A thread's first hit may come in a signal handler that interrupted malloc
 * in that very thread.  What the first hit sets up for the thread (its RCU
 * reader) must then neither allocate nor wait for a lock that malloc may
 * hold, or the program hangs in its own signal handler.
 *
 * Each worker thread allocates and frees blocks too big for glibc's
 * per-thread cache, so that it holds its arena's lock much of the time,
 * while the test thread signals it; the handler runs the marker, and that
 * is the worker's first hit.  When a first hit registered a destructor
 * through glibc's thread_local list (which callocs), the jump variant
 * hung in every run, somewhere among its 300 workers.
 *
 * A thread's last hits may come in pthread key destructors, after the
 * engine's has given the thread's reader slot back: such a hit must not
 * use the released slot (the thread registers again, and the engine's
 * destructor, run again by glibc's next round, gives that slot back too),
 * djp_disconnect must wait for its handler as for any other, and no slot
 * may stay with a thread that is gone.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"
#include "kernel/rcu.h"
#include "lib/clock.h"

#define WORKERS 300

static atomic_long hits;
static atomic_int handled, stop;

__attribute__((noinline)) static void signal_site(int i)
{
	MARK(signal_site, "i=%d", i);
	__asm__ volatile("" ::: "memory");
}

static void count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&hits, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	signal_site(1);
	atomic_store(&handled, 1);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!atomic_load(&stop)) {
		void *p = malloc(2048 + (rand_r(&seed) & 8191));
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	return NULL;
}

static void first_hit_in_signal_handler(unsigned flags)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	int id = djp_connect("signal_site", count, NULL, flags);

	CHECK(id >= 0);
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	for (int i = 0; i < WORKERS; i++) {
		pthread_t th;
		uint64_t deadline;
		atomic_store(&handled, 0);
		atomic_store(&stop, 0);
		CHECK_EQ(pthread_create(&th, NULL, worker, (void *)(uintptr_t)(i + 1)), 0);
		/* let it get into its allocation loop */
		for (volatile int spin = 0; spin < 20000; spin++)
			;
		CHECK_EQ(pthread_kill(th, SIGUSR1), 0);
		deadline = djp_clock_monotonic_ns() + 5000000000ull;
		while (!atomic_load(&handled)) {
			if (djp_clock_monotonic_ns() > deadline)
				djp_test_fail(__FILE__, __LINE__, "worker %d hangs in its first hit, in a signal handler", i);
			sched_yield();
		}
		atomic_store(&stop, 1);
		CHECK_EQ(pthread_join(th, NULL), 0);
	}
	CHECK_EQ(atomic_load(&hits), WORKERS);
	CHECK_EQ(djp_disconnect(id), 0);
}

/* From the late destructor (argument 2): stays 100 ms in the handler. */
static atomic_int slow_inside;
static void slow_count(const struct djp_hit *hit, void *data)
{
	const struct timespec nap = { 0, 100 * 1000 * 1000 };
	(void)data;
	if (djp_hit_arg(hit, 0) != 2)
		return;
	atomic_store(&slow_inside, 1);
	nanosleep(&nap, NULL);
	atomic_store(&slow_inside, 0);
}

static pthread_key_t late_key;
static atomic_int late_released_first, late_released_again;
#define SECOND_PASS 0x100

/* The test's key is younger than the engine's, so glibc runs this after
 * the engine's destructor, which has given the reader back.  It sets its
 * key again, so that it runs once more in glibc's next round, after the
 * engine's has run again (for the slot the first pass's hit took), and
 * hits the marker both times. */
static void late_destructor(void *v)
{
	uintptr_t tag = (uintptr_t)v;
	if (!(tag & SECOND_PASS)) {
		if (djp_rcu_reader == &djp_rcu_unregistered)
			atomic_fetch_add(&late_released_first, 1);
		pthread_setspecific(late_key, (void *)(tag | SECOND_PASS));
		signal_site(1);
		return;
	}
	if (djp_rcu_reader == &djp_rcu_unregistered)
		atomic_fetch_add(&late_released_again, 1);
	signal_site((int)(tag & ~(uintptr_t)SECOND_PASS));
}

static void *exiting_worker(void *arg)
{
	signal_site(0);
	pthread_setspecific(late_key, arg);
	return NULL;
}

static void hit_after_unregistration(unsigned flags)
{
	enum { THREADS = 64, ROUNDS = 4 };
	int id = djp_connect("signal_site", count, NULL, flags);
	unsigned owned_before = djp_rcu_readers_owned();
	CHECK(id >= 0);
	CHECK_EQ(pthread_key_create(&late_key, late_destructor), 0);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t th[THREADS];
		for (int i = 0; i < THREADS; i++)
			CHECK_EQ(pthread_create(&th[i], NULL, exiting_worker, (void *)1), 0);
		/* meanwhile, grace periods: another probe comes and goes */
		int other = djp_connect("signal_site", count, NULL, flags);
		CHECK(other >= 0);
		for (int i = 0; i < THREADS; i++)
			CHECK_EQ(pthread_join(th[i], NULL), 0);
		CHECK_EQ(djp_disconnect(other), 0);
	}
	CHECK_EQ(djp_disconnect(id), 0);
	/* each thread hit three times; the other probe saw a part of them */
	CHECK(atomic_load(&hits) >= 3 * THREADS * ROUNDS);
	/* djp_disconnect waits for a handler run from there, as for any */
	id = djp_connect("signal_site", slow_count, NULL, flags);
	CHECK(id >= 0);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, exiting_worker, (void *)2), 0);
	while (!atomic_load(&slow_inside))
		sched_yield();
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK_EQ(atomic_load(&slow_inside), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	/* the case this is about did happen, in both rounds */
	CHECK_EQ(atomic_load(&late_released_first), THREADS * ROUNDS + 1);
	CHECK_EQ(atomic_load(&late_released_again), THREADS * ROUNDS + 1);
	/* and every slot those threads took is free again (the last hit's
	 * by the engine's destructor in glibc's third round) */
	CHECK(djp_rcu_readers_owned() <= owned_before + 1); /* + this thread's */
}

/* A thread that ends by the exit system call runs no destructor and gives
 * no slot back: the slots of such threads are taken back when the slots
 * run out, not left to grow without end. */
static void *exit_without_destructors(void *arg)
{
	(void)arg;
	signal_site(0);
	syscall(SYS_exit, 0);
	return NULL;
}

TEST(reader_slots_of_dead_threads_are_taken_back)
{
	enum { THREADS = 600 };
	int id = djp_connect("signal_site", count, NULL, DJP_GPR_ONLY);
	unsigned most = 0;
	CHECK(id >= 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_t th;
		unsigned owned;
		CHECK_EQ(pthread_create(&th, NULL, exit_without_destructors, NULL), 0);
		CHECK_EQ(pthread_join(th, NULL), 0); /* the kernel clears the tid */
		owned = djp_rcu_readers_owned();
		most = owned > most ? owned : most;
	}
	CHECK_EQ(djp_disconnect(id), 0);
	/* without taking back, one slot per thread: 600 and more */
	if (most >= THREADS / 2)
		djp_test_fail(__FILE__, __LINE__, "%u reader slots owned after %d dead threads", most, THREADS);
}

TEST(hit_after_thread_unregistered_jump)
{
	hit_after_unregistration(DJP_GPR_ONLY);
}

TEST(hit_after_thread_unregistered_int3)
{
	hit_after_unregistration(DJP_FORCE_INT3);
}

TEST(first_hit_in_signal_handler_jump)
{
	first_hit_in_signal_handler(DJP_GPR_ONLY);
}

TEST(first_hit_in_signal_handler_int3)
{
	first_hit_in_signal_handler(DJP_FORCE_INT3);
}
