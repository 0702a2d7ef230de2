/*
 * The typed values' target: functions whose parameters and return values
 * are of each kind a number prints as (signed, unsigned, a pointer), and
 * SDT probes as <sys/sdt.h> writes them (no format): one with a signed
 * 4-byte and an unsigned 8-byte argument, one with a long string.  Built
 * again with TYPED_MARKER (typed_target_mark): a djprobe marker with the
 * same string as a %s instead of the SDT probes (a program with .markers
 * is read by them alone).
 *
 *   typed_target N
 *
 * calls each function N times, i from 0, fires typed:vals N times with
 * -(i + 7) and ~0 - i, and typed:text with a string of 700 letters
 * (abc...zabc...) and its length, as does the marker typed_text, then
 * prints "done".
 */
#include <djprobe/marker.h>
#include <stdio.h>
#include <stdlib.h>

#include "selftests/sdt_note_asm.h"

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

/* STAP_PROBE2(typed, vals, a, b) written out, with the argument
 * locations `args` ("-4@%0 8@%1") */
#define SDT_PROBE2(provider, name, args, a, b)                                                        \
	__asm__ __volatile__("990: nop\n" SDT_NOTE_ASM(#provider, #name, "0", args) SDT_BASE_ASM ::"r"(a), "r"(b))

int main(int argc, char **argv)
{
	static const char text[] = "typed values";
	static char long_text[701];
	long n = argc > 1 ? atol(argv[1]) : 1;

	for (size_t i = 0; i < sizeof(long_text) - 1; i++)
		long_text[i] = (char)('a' + i % 26);

	for (long i = 0; i < n; i++) {
		int neg = -(int)(i + 7);
		unsigned long big = ~0ul - (unsigned long)i;
		tt_sink += tt_neg(i) + tt_int((int)i) + tt_uns((unsigned)i);
		tt_sink += *tt_ptr(text + i);
#ifdef TYPED_MARKER
		MARK(typed_text, "s=%s len=%d", long_text, (int)sizeof(long_text) - 1);
		(void)neg, (void)big;
#else
		SDT_PROBE2(typed, vals, "-4@%0 8@%1", neg, big);
		SDT_PROBE2(typed, text, "8@%0 8@%1", long_text, sizeof(long_text) - 1);
#endif
	}
	printf("done\n");
	return 0;
}
