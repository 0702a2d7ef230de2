/*
 * A target for the injection benchmark: 50 threads waiting (on a condition
 * variable, as a server's idle workers do) and one that fires bench_tick
 * every 100 us.  Built without libdjprobe: `djp trace -x` has to load the
 * agent into it.  Prints "ready PID" and runs until killed.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/marker.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static void *idle(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&never, &lock);
	return NULL;
}

__attribute__((noinline)) static void tick(long i)
{
	MARK(bench_tick, "i=%ld", i);
}

int main(void)
{
	pthread_t th;
	for (int i = 0; i < 50; i++)
		pthread_create(&th, NULL, idle, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (long i = 0;; i++) {
		tick(i);
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
}
