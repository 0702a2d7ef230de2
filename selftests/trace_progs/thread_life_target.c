/*
 * The thread lifetime probes' target (test_script_threads.c): threads
 * whose number and ends the test knows.
 *
 *   thread_life_target N
 *
 * main starts N threads, BATCH at a time (more than the machine's cores),
 * and joins each batch.  Thread i hits the marker tl_work (i=i) once, then
 * ends by kind, i % 3: 0 returns from its start routine, 1 calls
 * pthread_exit from a function it called, 2 blocks in pause() until main
 * cancels it (main waits for it to say it is there, so the marker came
 * first).  Then one more thread (i=N) forks a child, which hits tl_work
 * (i=-1) and exits, and the thread returns once the child is reaped.  Last, one
 * more (i=N+1) hits tl_work and blocks, and main prints "pid PID" and
 * returns while it runs.  Nothing of djprobe is linked: the agent comes by
 * LD_PRELOAD.
 *
 *   thread_life_target -
 *
 * For an agent injected later (djp -x): reads lines from stdin; each, a
 * number K, starts K threads that hit tl_work (i=0..K-1) and return, joins
 * them and prints "done K"; at end of file returns 0.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "djprobe/marker.h"

#define BATCH 6

static sem_t there;

__attribute__((noinline)) static void exit_from_below(void)
{
	pthread_exit(NULL);
}

static void *worker(void *arg)
{
	long i = (long)(size_t)arg;

	MARK(tl_work, "i=%ld", i);
	if (i % 3 == 1)
		exit_from_below();
	if (i % 3 == 2) {
		sem_post(&there);
		for (;;)
			pause(); /* a cancellation point */
	}
	return NULL;
}

static void *forker(void *arg)
{
	long i = (long)(size_t)arg;
	pid_t child;
	int st;

	MARK(tl_work, "i=%ld", i);
	child = fork();
	if (child == 0) {
		MARK(tl_work, "i=%ld", -1L);
		exit(0);
	}
	if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		abort();
	return NULL;
}

static void *straggler(void *arg)
{
	MARK(tl_work, "i=%ld", (long)(size_t)arg);
	sem_post(&there);
	for (;;)
		pause();
	return NULL;
}

/* thread_life_target -: batches of threads on command. */
static int on_command(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		long k = atol(line);
		pthread_t t[64];
		if (k < 0 || k > 64)
			return 2;
		for (long j = 0; j < k; j++)
			if (pthread_create(&t[j], NULL, worker, (void *)(size_t)(3 * j))) /* returns */
				return 1;
		for (long j = 0; j < k; j++)
			if (pthread_join(t[j], NULL))
				return 1;
		printf("done %ld\n", k);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc == 2 ? atol(argv[1]) : -1;
	pthread_t t[BATCH];

	if (argc == 2 && argv[1][0] == '-' && !argv[1][1])
		return on_command();

	if (n < 0 || sem_init(&there, 0, 0))
		return 2;
	for (long first = 0; first < n; first += BATCH) {
		long k = n - first < BATCH ? n - first : BATCH;
		for (long j = 0; j < k; j++)
			if (pthread_create(&t[j], NULL, worker, (void *)(size_t)(first + j)))
				return 1;
		for (long j = 0; j < k; j++) {
			if ((first + j) % 3 == 2) {
				sem_wait(&there);
				pthread_cancel(t[j]);
			}
		}
		for (long j = 0; j < k; j++)
			if (pthread_join(t[j], NULL))
				return 1;
	}
	if (pthread_create(&t[0], NULL, forker, (void *)(size_t)n) || pthread_join(t[0], NULL))
		return 1;
	if (pthread_create(&t[0], NULL, straggler, (void *)(size_t)(n + 1)))
		return 1;
	sem_wait(&there);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	return 0;
}
