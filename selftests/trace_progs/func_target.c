/*
 * The instruction-probe tests' target: plain C with no marker and nothing
 * of djprobe, as any program is.  `func_target N` calls ft_work N times,
 * ft_other N/2 times, entry_pushes and getpid() N times, then prints the
 * sum.  With `-w` it first waits for a line on stdin (so that a tool can
 * attach to it with -x), and after the work for another line, or the end
 * of its input, before exiting.  With `-p` it prints a line at each call
 * of ft_work, to the output a tool tracing it may share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile long ft_sink;

__attribute__((noinline)) long ft_work(long i)
{
	long r = i * 7 + 3;
	ft_sink += r;
	return r;
}

__attribute__((noinline)) long ft_other(long i)
{
	ft_sink -= i;
	return i;
}

/* long entry_pushes(long i): i + 1, after three pushes of 2, 1 and 1 bytes,
 * so that instructions begin at offsets 2 and 3, inside the 5 bytes of
 * a jump over its entry (where SystemTap and perf probe put a probe
 * after a prologue).  Written in assembly for those exact bytes. */
long entry_pushes(long i);
__asm__(".pushsection .text\n"
	".globl entry_pushes\n"
	".type entry_pushes,@function\n"
	"entry_pushes:\n"
	"	.cfi_startproc\n"
	"	push %r12\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	push %rbp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	lea 1(%rdi),%rax\n"
	"	pop %rbp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop %r12\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size entry_pushes,.-entry_pushes\n"
	".popsection\n");

int main(int argc, char **argv)
{
	char line[64];
	int wait = 0, tick = 0, a = 1;
	for (; a < argc && argv[a][0] == '-'; a++) {
		wait |= !strcmp(argv[a], "-w");
		tick |= !strcmp(argv[a], "-p");
	}
	long n = a < argc ? atol(argv[a]) : 10, sum = 0;

	if (wait) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	for (long i = 0; i < n; i++) {
		sum += ft_work(i) + getpid() * 0 + entry_pushes(i) - (i + 1);
		if (tick) /* a line of its own at each call, one write each */
			printf("tick %ld\n", i), fflush(stdout);
		if (i % 2)
			sum += ft_other(i);
	}
	printf("sum %ld\n", sum);
	fflush(stdout);
	if (wait) /* until told, or stdin ends */
		(void)!fgets(line, sizeof(line), stdin);
	return 0;
}
