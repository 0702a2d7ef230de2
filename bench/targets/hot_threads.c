/*
 * A target for the in-target aggregation benchmark: T threads each call a
 * function holding one marker N times, as fast as they can, and it prints
 * the mean ns per call of a thread (its CPU time: the machine's other load
 * does not count), the hits per second of all of them together (wall
 * time), and the hits.  Built without libdjprobe (the tool preloads it).
 * With `func`, the function called is hot_plain instead, which has no
 * marker: a function point's target.
 *   usage: hot_threads T N [func]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "djprobe/marker.h"

#define MAX_THREADS 64

static long n;
static int plain;
volatile long hot_sink;

__attribute__((noinline, aligned(64))) void hot_site(int a, long b)
{
	MARK(bench_hot, "a=%d b=%ld", a, b);
}

__attribute__((noinline, aligned(64))) void hot_plain(int a, long b)
{
	hot_sink = a + b;
}

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *run(void *arg)
{
	double t0 = now(CLOCK_THREAD_CPUTIME_ID);
	if (plain)
		for (long i = 0; i < n; i++)
			hot_plain((int)i, i);
	else
		for (long i = 0; i < n; i++)
			hot_site((int)i, i);
	*(double *)arg = (now(CLOCK_THREAD_CPUTIME_ID) - t0) / n;
	return NULL;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 2;
	pthread_t th[MAX_THREADS];
	double per[MAX_THREADS], sum = 0, t0;

	n = argc > 2 ? atol(argv[2]) : 1000000;
	plain = argc > 3 && !strcmp(argv[3], "func");
	if (t < 1 || t > MAX_THREADS)
		t = 2;
	t0 = now(CLOCK_MONOTONIC);
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, run, &per[i]);
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		sum += per[i];
	}
	printf("ns/call %.3f\nrate %.0f\nhits %ld\n", sum / t, (double)t * n / ((now(CLOCK_MONOTONIC) - t0) / 1e9), (long)t * n);
	return 0;
}
