/*
 * A target for the typed-access benchmark (bench/typed_access.c): calls a
 * function whose parameter points to a list of three nodes N times and
 * prints the ns per call (its CPU time: the machine's other load does not
 * count); no marker, a function point's.
 *   usage: hot_typed N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct bnode {
	long a;
	struct bnode *next;
};

volatile long sink;

__attribute__((noinline, aligned(64))) long hot_node(struct bnode *n)
{
	sink += n->a;
	return n->a + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct bnode c = { 3, NULL }, b = { 2, &c }, a = { 1, &b };
	struct timespec t0, t1;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (long i = 0; i < n; i++)
		sink += hot_node(&a);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	printf("ns/call %.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
