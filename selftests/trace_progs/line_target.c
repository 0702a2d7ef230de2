/*
 * The line probes' target, built at -O0 with debug information: plain C,
 * nothing of djprobe.  `line_target N` runs lt_loop(N), whose body line
 * GCC at -O0 gives two consecutive rows in the line table (the
 * multiplication, then the addition), and prints "sum S".
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long lt_loop(long n)
{
	long acc = 0;
	for (long i = 0; i < n; i++) { /* tag: loop-header */
		acc += i * 3; /* tag: loop-body */
	}
	return acc;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;

	printf("sum %ld\n", lt_loop(n));
	return 0;
}
