/*
 * Draining a ring from another core, between timed batches, as the tool
 * does from wherever it runs: a producer whose ring lines another core has
 * read pays to take them back when it writes there again, and a recorder
 * measured with its consumer on the same core would not show that.  The
 * caller pins itself to CPU 0; a thread pinned to CPU 1 runs `drain` each
 * time drain_remote_now() asks, while the caller waits.
 */
#ifndef DJP_BENCH_DRAIN_REMOTE_H
#define DJP_BENCH_DRAIN_REMOTE_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

static void bench_pin(int cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	CPU_ZERO(&set);
	CPU_SET(cpu % (n > 0 ? n : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static pthread_barrier_t drain_go, drain_done;
static void (*drain_fn)(void);
static atomic_int drain_quit;

static void *drain_thread(void *arg)
{
	(void)arg;
	bench_pin(1);
	for (;;) {
		pthread_barrier_wait(&drain_go);
		if (atomic_load(&drain_quit))
			return NULL;
		drain_fn();
		pthread_barrier_wait(&drain_done);
	}
}

static __attribute__((unused)) void drain_remote_start(void (*fn)(void))
{
	pthread_t th;
	drain_fn = fn;
	pthread_barrier_init(&drain_go, NULL, 2);
	pthread_barrier_init(&drain_done, NULL, 2);
	pthread_create(&th, NULL, drain_thread, NULL);
	pthread_detach(th);
	bench_pin(0);
}

static __attribute__((unused)) void drain_remote_now(void)
{
	pthread_barrier_wait(&drain_go);
	pthread_barrier_wait(&drain_done);
}

#endif
