/*
 * Structures passed and returned by value, where the calling convention
 * puts them: a small one in one register (struct pt), one over two
 * registers (struct two), one with a double (its int in a register, the
 * double in a vector register: struct mix), one in memory on the stack
 * (struct big), one holding pointers (struct hasp), one returned in
 * registers and one in the caller's space; and nullp(), called with a
 * NULL structure pointer, a double and a good pointer, for pretty
 * printing's ERROR and "?".  The program is its own
 * oracle: each function prints, on stdout, what the test's script prints
 * of the same members (test_script_typed.c).  Built -O2 and -O0.
 *
 *   byval_target N    N rounds of every call
 */
#include <stdio.h>
#include <stdlib.h>

struct pt {
	int x, y;
};
struct two {
	long a;
	short b;
	unsigned char c;
};
struct mix {
	int n;
	double d;
};
struct big {
	long a, b, c;
	int d;
};
struct hasp {
	const char *name;
	struct pt *p;
};

#define PROBED __attribute__((noinline, noipa))

PROBED int byval(struct pt p, int k)
{
	printf("byval %d %d %d\n", p.x, p.y, k);
	return p.x + k;
}

PROBED long two(int z, struct two t)
{
	printf("two %d %ld %d %d\n", z, t.a, t.b, t.c);
	return t.a;
}

PROBED int mix(struct mix m)
{
	printf("mix %d\n", m.n);
	return m.n + (int)m.d;
}

PROBED long big(int z, struct big b, int after)
{
	printf("big %d %ld %ld %d %d\n", z, b.a, b.c, b.d, after);
	return b.a;
}

PROBED int hasp(struct hasp h)
{
	printf("hasp %s %d\n", h.name, h.p->y);
	return 0;
}

PROBED struct pt retpt(int v)
{
	struct pt p = { v, -v };
	printf("retpt %d %d\n", p.x, p.y);
	return p;
}

PROBED struct big retbig(int v)
{
	struct big b = { v, 2 * v, 3 * v, -v };
	printf("retbig %ld %d\n", b.c, b.d);
	return b;
}

PROBED int nullp(struct pt *p, double d, struct pt *q, int k)
{
	printf("nullp %d %d\n", p ? p->x : -1, q->x + k + (int)d);
	return k;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	long sum = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int r = 0; r < n; r++) {
		struct pt p = { 3 + r, -4 - r };
		struct two t = { 1000 + r, (short)(-7 - r), (unsigned char)(200 + r) };
		struct mix m = { 42 + r, 1.5 };
		struct big bg = { 10 + r, 20, 30 + r, -40 - r };
		struct hasp h = { r & 1 ? "odd" : "even", &p };
		sum += byval(p, 9 + r) + two(5, t) + mix(m) + big(6, bg, 77 - r) + hasp(h);
		sum += retpt(5 + r).y + retbig(7 + r).d;
		sum += nullp(NULL, 2.5, &p, 7 + r);
	}
	printf("done %ld\n", sum);
	return 0;
}
