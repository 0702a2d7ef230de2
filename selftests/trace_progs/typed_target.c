/*
 * The typed values' target: functions whose parameters and return values
 * are of each kind a number prints as (signed, unsigned, a pointer), and
 * one SDT probe with a signed 4-byte and an unsigned 8-byte argument, as
 * <sys/sdt.h> writes it (no format).  Nothing of djprobe.
 *
 *   typed_target N
 *
 * calls each function N times, i from 0, fires the probe N times with
 * -(i + 7) and ~0 - i, and prints "done".
 */
#include <stdio.h>
#include <stdlib.h>

volatile long tt_sink;

/* signed: -3i - 1 */
__attribute__((noinline)) long tt_neg(long i)
{
	tt_sink += i;
	return -3 * i - 1;
}

/* a 4-byte int in %eax, negative */
__attribute__((noinline)) int tt_int(int x)
{
	tt_sink += x;
	return x - 100;
}

/* unsigned, over 2^31 */
__attribute__((noinline)) unsigned tt_uns(unsigned u)
{
	tt_sink += u;
	return u + 0xffff0000u;
}

/* a pointer in, a pointer out */
__attribute__((noinline)) const char *tt_ptr(const char *p)
{
	tt_sink += *p;
	return p + 1;
}

/* STAP_PROBE2(typed, vals, a, b) written out, "-4@ 8@" */
#define SDT_PROBE2(provider, name, a, b)                                                     \
	__asm__ __volatile__("990: nop\n"                                                    \
			     ".pushsection .note.stapsdt,\"?\",@note\n"                      \
			     ".balign 4\n"                                                   \
			     ".4byte 992f-991f, 994f-993f, 3\n"                              \
			     "991: .asciz \"stapsdt\"\n"                                     \
			     "992: .balign 4\n"                                              \
			     "993: .8byte 990b\n"                                            \
			     ".8byte _.stapsdt.base\n"                                       \
			     ".8byte 0\n"                                                    \
			     ".asciz \"" #provider "\"\n"                                    \
			     ".asciz \"" #name "\"\n"                                        \
			     ".asciz \"-4@%0 8@%1\"\n"                                       \
			     "994: .balign 4\n"                                              \
			     ".popsection\n"                                                 \
			     ".ifndef _.stapsdt.base\n"                                      \
			     ".pushsection .stapsdt.base,\"aG\",@progbits,.stapsdt.base,comdat\n" \
			     ".weak _.stapsdt.base\n"                                        \
			     ".hidden _.stapsdt.base\n"                                      \
			     "_.stapsdt.base: .space 1\n"                                    \
			     ".size _.stapsdt.base, 1\n"                                     \
			     ".popsection\n"                                                 \
			     ".endif\n" ::"r"(a),                                            \
			     "r"(b))

int main(int argc, char **argv)
{
	static const char text[] = "typed values";
	long n = argc > 1 ? atol(argv[1]) : 1;

	for (long i = 0; i < n; i++) {
		int neg = -(int)(i + 7);
		unsigned long big = ~0ul - (unsigned long)i;
		tt_sink += tt_neg(i) + tt_int((int)i) + tt_uns((unsigned)i);
		tt_sink += *tt_ptr(text + i);
		SDT_PROBE2(typed, vals, neg, big);
	}
	printf("done\n");
	return 0;
}
