/*
 * A target for bench/trace_many: a process that forks, as a pre-fork
 * server does.  Built without libdjprobe (the tool preloads it).
 *
 *   forker many N K RATE   fork N children, each hitting the marker K times
 *                          at RATE a second (paced by the millisecond), and
 *                          wait for them
 *   forker cost N          hit the marker N times and print "parent ns/call
 *                          X", then fork a child that does the same and
 *                          prints "child ns/call Y"
 *   forker storm N K       fork N short-lived children, ten at a time, each
 *                          hitting the marker K times and exiting; "children
 *                          M" on stdout after every tenth of them
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/marker.h"

__attribute__((noinline, aligned(64))) void many_site(int a, long b)
{
	MARK(bench_many, "a=%d b=%ld", a, b);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void paced(long k, long rate)
{
	double t0 = now_ns();
	long done = 0;
	while (done < k) {
		long due = (long)((now_ns() - t0) * rate / 1e9) + 1;
		if (due > k)
			due = k;
		if (due <= done) {
			usleep(1000);
			continue;
		}
		for (; done < due; done++)
			many_site((int)done, done);
	}
}

static void timed(const char *who, long n)
{
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		many_site((int)i, i);
	printf("%s ns/call %.3f\n", who, (now_ns() - t0) / (double)n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "many")) {
		long n = atol(argv[2]), k = atol(argv[3]), rate = atol(argv[4]);
		for (long i = 0; i < n; i++)
			if (fork() == 0) {
				paced(k, rate);
				_exit(0);
			}
		while (wait(NULL) > 0)
			;
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "cost")) {
		long n = atol(argv[2]);
		timed("parent", n);
		if (fork() == 0) {
			timed("child", n);
			_exit(0);
		}
		wait(NULL);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "storm")) {
		long n = atol(argv[2]), k = atol(argv[3]), done = 0;
		while (done < n) {
			long wave = n - done < 10 ? n - done : 10;
			for (long i = 0; i < wave; i++)
				if (fork() == 0) {
					for (long j = 0; j < k; j++)
						many_site((int)j, j);
					_exit(0);
				}
			while (wait(NULL) > 0)
				;
			done += wave;
			if (n >= 10 && done % (n / 10) == 0) {
				printf("children %ld\n", done);
				fflush(stdout);
				/* a pause in which the tool lets the exited
				 * children go, for the bench's count of its
				 * descriptors (bench/fork_storm.c) */
				usleep(300 * 1000);
			}
		}
		return 0;
	}
	fprintf(stderr, "usage: forker many N K RATE | forker cost N | forker storm N K\n");
	return 2;
}
