/*
 * Children of fork that come and go while the parent records
 * (test_script_kids.c): a script must see every event once.
 *
 *   fork_mark_target N
 *
 * A thread hits fm_busy (i=0, 1, ...) every 50 microseconds from start to
 * end, so that the parent always has events waiting to be read; main
 * meanwhile forks N children one after the other, each of which hits
 * fm_child (i=its number) and exits, and reaps each.  Then main stops the
 * thread and prints "busy M", M the hits of fm_busy.  Nothing of djprobe
 * is linked: the agent comes by LD_PRELOAD.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/marker.h"

static int stop;
static long busy_hits;

static void *busy(void *arg)
{
	struct timespec pace = { 0, 50000 };

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		MARK(fm_busy, "i=%ld", busy_hits);
		busy_hits++;
		nanosleep(&pace, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc == 2 ? atol(argv[1]) : -1;
	pthread_t t;

	if (n < 0 || pthread_create(&t, NULL, busy, NULL))
		return 2;
	for (long i = 0; i < n; i++) {
		pid_t c = fork();
		int st;

		if (c == 0) {
			MARK(fm_child, "i=%ld", i);
			_exit(0);
		}
		if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	if (pthread_join(t, NULL))
		return 1;
	printf("busy %ld\n", busy_hits);
	fflush(stdout);
	return 0;
}
