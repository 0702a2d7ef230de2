/*
 * Markers hit while threads exit (test_trace_thread_exit.c): every event
 * a thread records on its way out must arrive once, or be counted lost.
 *
 *   thread_exit_target ROUNDS THREADS
 *
 * Each round main starts THREADS threads at once (more than the
 * machine's cores) and joins them.  Thread i (numbered across rounds)
 * hits tx_body (i=i), then ends, by i % 2: 0 returns from its start
 * routine, 1 calls pthread_exit from a function it called.  On its way
 * out, in glibc's order, it hits
 *
 *   tx_tls    a destructor registered as a C++ thread_local's is
 *             (__cxa_thread_atexit_impl), which runs before any key's;
 *   tx_key    the destructor of a key made by main, after every key of
 *             the library's (so it runs after the library's destructors
 *             in each round);
 *   tx_round  the destructor of another key made by main, which sets its
 *             own value again each time, so that glibc runs it in every
 *             round (PTHREAD_DESTRUCTOR_ITERATIONS): r=1, 2, 3, 4, the
 *             last after glibc's last round of the library's ones.
 *
 * So each thread passes 1 + 1 + 1 + PTHREAD_DESTRUCTOR_ITERATIONS markers,
 * every one of them exactly once.  main then prints "done N" with N the
 * threads started, and returns.  Nothing of djprobe is linked: the agent
 * comes by LD_PRELOAD.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "djprobe/marker.h"

/* glibc's registration of a thread_local's destructor (what g++ emits a
 * call to), so that a C program has one. */
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);
extern void *__dso_handle;

static pthread_key_t key_once, key_rounds;

static void tls_dtor(void *arg)
{
	MARK(tx_tls, "i=%ld", (long)(size_t)arg);
}

static void key_dtor(void *arg)
{
	MARK(tx_key, "i=%ld", (long)(size_t)arg - 1);
}

/* Value: 1 + i + round * 2^20 (never NULL); set again until the last round. */
static void round_dtor(void *arg)
{
	long v = (long)(size_t)arg - 1, i = v & ((1L << 20) - 1), round = (v >> 20) + 1;

	MARK(tx_round, "i=%ld r=%ld", i, round);
	if (round < PTHREAD_DESTRUCTOR_ITERATIONS)
		pthread_setspecific(key_rounds, (void *)(size_t)(1 + i + (round << 20)));
}

__attribute__((noinline)) static void exit_from_below(void)
{
	pthread_exit(NULL);
}

static void *worker(void *arg)
{
	long i = (long)(size_t)arg;

	MARK(tx_body, "i=%ld", i);
	if (__cxa_thread_atexit_impl(tls_dtor, arg, &__dso_handle) || pthread_setspecific(key_once, (void *)(1 + i)) ||
	    pthread_setspecific(key_rounds, (void *)(1 + i)))
		abort();
	if (i % 2)
		exit_from_below();
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc == 3 ? atol(argv[1]) : -1, n = argc == 3 ? atol(argv[2]) : -1, started = 0;
	pthread_t *t;

	if (rounds < 0 || n < 0 || n * rounds >= 1L << 20 || !(t = calloc((size_t)n + 1, sizeof(*t))))
		return 2;
	if (pthread_key_create(&key_once, key_dtor) || pthread_key_create(&key_rounds, round_dtor))
		return 1;
	for (long r = 0; r < rounds; r++) {
		for (long j = 0; j < n; j++)
			if (pthread_create(&t[j], NULL, worker, (void *)(size_t)(started + j)))
				return 1;
		for (long j = 0; j < n; j++)
			if (pthread_join(t[j], NULL))
				return 1;
		started += n;
	}
	printf("done %ld\n", started);
	fflush(stdout);
	free(t);
	return 0;
}
