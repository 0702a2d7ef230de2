/*
 * A target for the injection tests that gives the injector little room:
 * --threads N threads spin in their own code (no system call ever), and
 * with --block-signals every thread blocks every signal it can.  It has
 * one marker, bt_spin, that each spinning thread fires on every turn once
 * `go` is set, and prints "ready PID".  The main thread waits in read on
 * stdin for "count", then answers "count N" (the turns taken since); at
 * end of input it exits 0.
 */
#include <djprobe/marker.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_long turns;
static atomic_int stop;

__attribute__((noinline)) static void spin_once(long i)
{
	MARK(bt_spin, "i=%ld", i);
}

static void *spinner(void *arg)
{
	(void)arg;
	for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		spin_once(i);
		atomic_fetch_add_explicit(&turns, 1, memory_order_relaxed);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = 2, block = 0;
	pthread_t th[64];
	char line[64];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--block-signals"))
			block = 1;
	}
	if (nthreads > 64)
		nthreads = 64;
	if (block) {
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL); /* inherited by the threads */
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, spinner, NULL);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin))
		if (!strncmp(line, "count", 5))
			printf("count %ld\n", atomic_load(&turns));
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	return 0;
}
