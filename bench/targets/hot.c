/*
 * A target for the script benchmarks: calls a function holding one marker
 * with two integer arguments N times and prints the ns per call.  Built
 * without libdjprobe (the tool preloads it), so that the same binary runs
 * plain, under `djp -c`, and under `bpftrace -c`.
 *   usage: hot N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "djprobe/marker.h"

__attribute__((noinline, aligned(64))) void hot_site(int a, long b)
{
	MARK(bench_hot, "a=%d b=%ld", a, b);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		hot_site((int)i, i);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("ns/call %.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
