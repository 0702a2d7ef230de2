/*
 * Two static functions of one name, show(), in two files, each with a
 * structure of its own: `x` 16 bytes into one and first in the other.
 * This file is both: built once with SAMENAME_B (the second file's show
 * and call_b) and once without (the first's, call_a and main), and the
 * two objects linked (selftests/trace.mk).  The program is its own
 * oracle: each show() prints "x N" of its node, as a script printing
 * $p->x at `function("show")` must (test_script_typed.c): a script whose
 * programs were those of the other show() would read the other layout.
 *
 *   samename_target N    calls call_a(100 + i) and call_b(200 + i), i < N
 */
#include <stdio.h>
#include <stdlib.h>

#ifdef SAMENAME_B
struct node_b {
	long x;
	long pad;
};

static __attribute__((noinline, noipa)) long show(struct node_b *p)
{
	printf("x %ld\n", p->x); /* line 24, a statement the test names */
	return p->x;
}

long call_b(long v)
{
	struct node_b n = { v, -2 };
	return show(&n);
}
#else
struct node_a {
	long pad;
	int tag;
	long x;
};

static __attribute__((noinline, noipa)) long show(struct node_a *p)
{
	printf("x %ld\n", p->x); /* line 42, likewise */
	return p->x + p->tag;
}

long call_a(long v)
{
	struct node_a n = { -1, 7, v };
	return show(&n);
}

long call_b(long v);

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	long sum = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < n; i++)
		sum += call_a(100 + i) + call_b(200 + i);
	printf("done %ld\n", sum);
	return 0;
}
#endif
