/*
 * A program built as a user of the packages builds one: its only djprobe
 * file is <djprobe/marker.h>, found through `pkg-config --cflags djprobe`
 * in a root the packages were unpacked into (selftests/deb/unpacked.sh).
 *
 *   marked N     hits deb_tick N times (i = 0..N-1), then deb_done once
 */
#include <djprobe/marker.h>
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) void tick(long i)
{
	MARK(deb_tick, "i=%ld", i);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	long n = argc == 2 ? atol(argv[1]) : 0;

	if (n <= 0) {
		fprintf(stderr, "usage: marked N (N > 0 hits)\n");
		return 2;
	}
	for (long i = 0; i < n; i++)
		tick(i);
	MARK(deb_done, "n=%ld", n);
	return 0;
}
