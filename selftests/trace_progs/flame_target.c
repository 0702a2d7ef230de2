/*
 * The flame graphs' target (test_flame.c): known call chains to a marker,
 * so that the folded stacks a script prints can be checked count by count.
 *
 *   flame_target A B C D
 *
 *     A times  main -> fl_a -> fl_leaf     (fl_a's first call of fl_leaf)
 *     B times  main -> fl_b -> fl_leaf
 *     C times  main -> fl_b -> fl_c -> fl_leaf
 *     D times  main -> fl_a -> fl_leaf     (fl_a's second call: another
 *                                           return address, the same chain)
 *
 * fl_leaf holds the marker fl_mark.  Nothing of djprobe is linked: the
 * agent comes by LD_PRELOAD.
 */
#include <stdlib.h>

#include "djprobe/marker.h"

#define NOIPA __attribute__((noipa))

volatile long fl_sink;

NOIPA void fl_leaf(long i)
{
	MARK(fl_mark, "i=%ld", i);
	fl_sink += i;
}

/* no tail calls: each caller keeps its frame */
NOIPA void fl_a(long i, int second)
{
	if (second)
		fl_leaf(i + 1000);
	else
		fl_leaf(i);
	__asm__ volatile("" ::: "memory");
}

NOIPA void fl_c(long i)
{
	fl_leaf(i);
	__asm__ volatile("" ::: "memory");
}

NOIPA void fl_b(long i, int deeper)
{
	if (deeper)
		fl_c(i);
	else
		fl_leaf(i);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	long n[4] = { 0 };

	if (argc != 5)
		return 2;
	for (int i = 0; i < 4; i++)
		n[i] = atol(argv[i + 1]);
	for (long i = 0; i < n[0]; i++)
		fl_a(i, 0);
	for (long i = 0; i < n[1]; i++)
		fl_b(i, 0);
	for (long i = 0; i < n[2]; i++)
		fl_b(i, 1);
	for (long i = 0; i < n[3]; i++)
		fl_a(i, 1);
	return 0;
}
