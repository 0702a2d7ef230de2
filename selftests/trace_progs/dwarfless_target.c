/*
 * The dwarfless tests' target: functions whose arguments a script reads by
 * the ABI (int_arg(n), register("rdi"), returnval()), built without debug
 * information.  It prints each call's arguments and each return value as
 * it makes them, one line each, so that its own output is the oracle: a
 * script prints the same line from what it read at the probe.
 *
 *   dwarfless_target N    N rounds of calls, then "done"
 *
 * Nothing of djprobe but one marker (header-only): a plain program,
 * probed at its functions' entries and returns, and at the marker.
 */
#include <stdio.h>
#include <stdlib.h>

#include "djprobe/marker.h"

#define NOINLINE __attribute__((noinline, noipa))

static volatile long sink;

/* six arguments in registers, of the widths int_arg() and its kin cut */
NOINLINE void dl_six(int a, unsigned b, long c, const char *p, short s, long long f)
{
	sink += a + b + c + (long)p + s + f;
}

/* eight: the last two on the stack, above the return address */
NOINLINE void dl_eight(long a1, long a2, long a3, long a4, long a5, long a6, long a7, int a8)
{
	sink += a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8;
}

/* registers read by their 32-, 16- and 8-bit names */
NOINLINE void dl_regs(int a, int b, int c, long d)
{
	sink += a + b + c + d;
}

NOINLINE long dl_ret(long x)
{
	return x * 3 - 1000;
}

/* callee-saved registers the probed function receives: dl_with_callee(b,
 * c) calls it with %rbx = b and %r12 = c, set by hand so that no compiler
 * choice can move them */
NOINLINE void dl_callee(void)
{
	sink++;
}
void dl_with_callee(long b, long c);
__asm__(".text\n"
	".globl dl_with_callee\n"
	".type dl_with_callee, @function\n"
	"dl_with_callee:\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	push %r13\n" /* %rsp 16-aligned at the call */
	"	mov %rdi, %rbx\n"
	"	mov %rsi, %r12\n"
	"	call dl_callee\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	ret\n"
	".size dl_with_callee, .-dl_with_callee\n");

/* a marker first thing in a function: its arguments still where the
 * caller put them, %rdi and %rsi */
NOINLINE void dl_marked(long a, long b)
{
	MARK(dl_mark, "a=%ld b=%ld", a, b);
	sink += a - b;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3;
	static const char text[] = "text";

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long i = 0; i < n; i++) {
		int a = (int)(-5 - i);
		unsigned b = 0xfffffff0u + (unsigned)i;
		long c = -1234567890123L - i;
		short s = (short)(-300 - i);
		long long f = 0x123456789abcLL * (i + 1);
		long r;

		dl_six(a, b, c, text + i % 4, s, f);
		printf("six %d %u %ld %#lx %d %lld\n", a, b, c, (unsigned long)(text + i % 4), s, f);
		dl_eight(i, 2, 3, 4, 5, 6, -700000000000L - i, (int)(-8 - i));
		printf("eight %ld %ld %d\n", i, -700000000000L - i, (int)(-8 - i));
		dl_regs((int)(-7 - i), (int)(0x12345 + i), (int)(0x181 + i), -99 - i);
		printf("regs %d %d %d %ld\n", (int)(-7 - i), (0x12345 + (int)i) & 0xffff,
		       (int)(signed char)(0x181 + i), -99 - i);
		r = dl_ret(i + 40);
		printf("ret %ld\n", r);
		dl_marked(-31 - i, 0x7777 + i);
		printf("mark %ld %ld\n", -31 - i, 0x7777 + i);
		dl_with_callee(0x1111 + i, -0x2222 - i);
		printf("callee %ld %ld\n", 0x1111 + i, -0x2222 - i);
	}
	printf("done\n");
	return 0;
}
