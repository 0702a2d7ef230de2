/*
 * hitloop: one marker hit N times in a row, and the time a hit took.
 *
 *   hitloop N        prints "hits N ns/hit X.XX"
 *
 * examples/demo.sh runs it bare, under `djp trace` and under bpftrace on
 * the same marker (bpftrace reaches it through its USDT note): the
 * difference from the bare run is what one hit costs each tool.  Like
 * reqserver it links nothing of djprobe.
 */
#include <djprobe/marker.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* noinline: one site, whatever the loop becomes */
static __attribute__((noinline)) void hit(long i)
{
	MARK(demo_hit, "i=%ld", i);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	long n = argc == 2 ? atol(argv[1]) : 0;

	if (n <= 0) {
		fprintf(stderr, "usage: hitloop N (N > 0 hits)\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		hit(i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	printf("hits %ld ns/hit %.2f\n", n, ns / n);
	return 0;
}
