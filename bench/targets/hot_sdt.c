/*
 * hot's twin with a plain SDT probe instead of a marker: a 1-byte nop and
 * a note, as <sys/sdt.h> writes them (the probes of PostgreSQL, python,
 * libstdc++), and nothing of djprobe.  Calls it N times with two integer
 * arguments and prints the ns per call.  With `plain`, calls hot_plain
 * instead: the same work with no probe site at all, for a probe at a
 * function's entry.  With `trap`, calls hot_trap: a probe no jump can
 * reach (its nop right after a call, three bytes before the function's
 * end), which the tool arms with the kernel's uprobe (bench/uprobe_hits.c).
 *   usage: hot_sdt N [plain|trap]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "selftests/sdt_note_asm.h" /* (the trap probe's note) */

volatile long hot_sink;

/* the probe, then work (a probe is inside a function, not its whole) */
__attribute__((noinline, aligned(64))) void hot_sdt(int a, long b)
{
	__asm__ __volatile__("990: nop\n"
			     ".pushsection .note.stapsdt,\"?\",@note\n"
			     ".balign 4\n"
			     ".4byte 992f-991f, 994f-993f, 3\n"
			     "991: .asciz \"stapsdt\"\n"
			     "992: .balign 4\n"
			     "993: .8byte 990b\n"
			     ".8byte _.stapsdt.base\n"
			     ".8byte 0\n"
			     ".asciz \"hotsdt\"\n"
			     ".asciz \"bench_sdt\"\n"
			     ".asciz \"-4@%0 8@%1\"\n"
			     "994: .balign 4\n"
			     ".popsection\n"
			     ".ifndef _.stapsdt.base\n"
			     ".pushsection .stapsdt.base,\"aG\",@progbits,.stapsdt.base,comdat\n"
			     ".weak _.stapsdt.base\n"
			     ".hidden _.stapsdt.base\n"
			     "_.stapsdt.base: .space 1\n"
			     ".size _.stapsdt.base, 1\n"
			     ".popsection\n"
			     ".endif\n" ::"r"(a),
			     "r"(b));
	hot_sink += b;
}

__attribute__((noinline, aligned(64))) void hot_plain(int a, long b)
{
	__asm__ __volatile__("" ::"r"(a), "r"(b));
	hot_sink += b;
}

/* hotsdt:bench_trap, args a (%edi, which the helper keeps) and b (%rbx) */
void hot_trap(int a, long b);
__asm__(".pushsection .text\n"
	"hot_trap_helper:\n"
	"	ret\n"
	".globl hot_trap\n"
	".type hot_trap,@function\n"
	".balign 64\n"
	"hot_trap:\n"
	"	push %rbx\n"
	"	mov %rsi,%rbx\n"
	"	call hot_trap_helper\n"
	"990:	nop\n"
	"	pop %rbx\n"
	"	ret\n"
	".size hot_trap, .-hot_trap\n"
	".popsection\n"
	SDT_NOTE_ASM("hotsdt", "bench_trap", "0", "-4@%edi 8@%rbx"));

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	void (*fn)(int, long) = argc > 2 && !strcmp(argv[2], "plain") ? hot_plain
				: argc > 2 && !strcmp(argv[2], "trap") ? hot_trap
								       : hot_sdt;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		fn((int)i, i);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("ns/call %.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
